"""Read the collectives that XLA's SPMD partitioner inserted, from partitioned HLO text.

Pure text: no JAX here, so this module (and its examples) runs without JAX.

Device ids. With `use_global_device_ids=true` and one replica, the ids in `replica_groups` are
XLA's *logical* ids, i.e. positions in the device assignment of the compiled program; JAX lays
that assignment out as `mesh.devices.flat`, so id p is the mesh position p in row-major order.
That is the default map from ids to mesh coordinates; pass `device_coords` to use another.

Replica groups come in four spellings, all turned into explicit groups of ids before the mesh
axes are derived from them:

- explicit  `{{0,1},{2,3}}` (and `{}`: one group of every device);
- iota      `[4,2]<=[8]`, `[2,4]<=[4,2]T(1,0)`: reshape, transpose, reshape of 0..n-1;
- mesh      `mesh['axis_0'=1,'axis_1'=4] {'axis_1'}`, optionally with
            `, device_ids=([4,2]T(1,0))` and sub-axes `'axis_1':(1)2` (XLA's own mesh, not ours);
- collective-permute's `source_target_pairs={{0,1},{1,0}}` (groups are then the pairs).

A group that is not a product of whole axes of *our* mesh gets `axes=None` and a `note`.
Counting: one logical collective is counted once. `*-start` is counted and `*-done` skipped;
`async-start` is skipped because the collective it wraps is counted in its own computation.
A collective inside a loop body is counted once, not once per iteration.

>>> line = ("%all-reduce.1 = f32[64,256]{1,0} all-reduce(f32[64,256]{1,0} %dot), channel_id=1, "
...         "replica_groups=[2,4]<=[4,2]T(1,0), use_global_device_ids=true, to_apply=%add")
>>> [c] = parse_collectives(line, {"X": 4, "Y": 2})
>>> c.kind, c.axes, c.groups, c.elements_in, c.elements_out, c.dtype
('all-reduce', ('X',), ((0, 2, 4, 6), (1, 3, 5, 7)), 16384, 16384, 'f32')
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

KINDS = ("all-gather", "reduce-scatter", "all-reduce", "all-to-all", "collective-permute")
_STARTS = {f"{k}-start": k for k in KINDS}  # async halves; the matching `-done` is not counted

Shape = tuple[int, ...]
_INSTR = re.compile(r"\s*(?:ROOT\s+)?%?(?P<name>[\w.\-]+)\s*=\s*")
_ARRAY = re.compile(r"(?P<dtype>[a-z]\w*)\[(?P<dims>[^\]]*)\]")
_OPCODE = re.compile(r"\s*(?P<op>[a-z][\w\-]*)\(")
_IOTA = re.compile(r"\[(?P<shape>[\d,]+)\]<=\[(?P<dims>[\d,]+)\](?:T\((?P<perm>[\d,]+)\))?")
_DEVICE_IOTA = re.compile(r"\[(?P<dims>[\d,]+)\](?:T\((?P<perm>[\d,]+)\))?$")
_AXIS_REF = re.compile(r"'(?P<name>[^']*)'(?::\((?P<pre>\d+)\)(?P<size>\d+))?")


@dataclass(frozen=True)
class HloCollective:
    """One collective of partitioned HLO; shapes and element counts are per device.

    >>> HloCollective("all-gather", ("X",), ((0, 1),), ((4, 8),), ((8, 8),), "bf16").elements_out
    64
    """

    kind: str
    axes: tuple[str, ...] | None  # mesh axes the groups span, in mesh order; None if not whole axes
    groups: tuple[tuple[int, ...], ...]
    operand_shapes: tuple[Shape, ...]
    result_shapes: tuple[Shape, ...]  # all-to-all may have one piece per peer
    dtype: str  # HLO element type of the result (the CPU backend may have upcast bf16 to f32)
    name: str = ""  # the HLO instruction's name, e.g. "all-reduce.1"
    spelling: str = ""  # replica_groups / source_target_pairs exactly as printed
    note: str = ""

    @property
    def elements_in(self) -> int:
        return sum(math.prod(s) for s in self.operand_shapes)

    @property
    def elements_out(self) -> int:
        return sum(math.prod(s) for s in self.result_shapes)


def parse_collectives(
    hlo_text: str,
    mesh_shape: Mapping[str, int],
    device_coords: Mapping[int, tuple[int, ...]] | None = None,
) -> list[HloCollective]:
    """Every collective in `hlo_text`, in text order, its groups mapped onto `mesh_shape`.

    `hlo_text` is one instruction per line, as `compiled.as_text()` prints it. Operands printed
    without a shape are looked up by name in the same text.

    >>> text = '''
    ... %p = bf16[16,128]{1,0} parameter(0)
    ... %ag = (bf16[16,128], bf16[64,128]) all-gather-start(%p), replica_groups={{0,1,2,3}}
    ... %agd = bf16[64,128]{1,0} all-gather-done(%ag)'''
    >>> [(c.kind, c.axes, c.operand_shapes, c.result_shapes)
    ...  for c in parse_collectives(text, {"X": 4})]
    [('all-gather', ('X',), ((16, 128),), ((64, 128),))]
    """
    names, sizes = list(mesh_shape), [int(s) for s in mesh_shape.values()]
    n = math.prod(sizes)
    coords = device_coords or {d: _unravel(d, sizes) for d in range(n)}
    lines = hlo_text.splitlines()
    shapes = {m["name"]: _shape_or_none(ln, m.end()) for ln in lines if (m := _INSTR.match(ln))}
    found = []
    for line in lines:
        m = _INSTR.match(line)
        if not m:
            continue
        shape, i = _parse_shape(line, m.end())
        op = _OPCODE.match(line, i)
        if not op or (kind := _STARTS.get(op["op"], op["op"])) not in KINDS:
            continue
        close = _balanced(line, op.end() - 1)
        operands = [_operand_shape(o, shapes, line) for o in _split_top(line[op.end() : close - 1])]
        results = _leaves(shape)
        if op["op"] != kind and kind in ("all-gather", "collective-permute") and len(results) > 1:
            results = _leaves(shape[1])  # (operands, results[, contexts]): keep the results
        spelling, groups = _groups(line[close:], n, line)
        if kind == "collective-permute":
            axes, note = _moves(groups, names, coords)
        else:
            axes, note = _axes_of(groups, names, sizes, coords, ordered=kind != "all-reduce")
        ins = tuple(s for o in operands for _, s in _leaves(o))
        outs = tuple(s for _, s in results)
        found.append(
            HloCollective(kind, axes, groups, ins, outs, results[0][0], m["name"], spelling, note)
        )
    return found


def _unravel(d: int, sizes: list[int]) -> tuple[int, ...]:
    out = []
    for s in reversed(sizes):
        d, r = divmod(d, s)
        out.append(r)
    return tuple(reversed(out))


def _iota(dims: list[int], perm: list[int] | None) -> list[int]:
    """0..n-1 reshaped to `dims`, transposed by `perm`, flattened (XLA's iota tile assignment)."""
    perm = perm or list(range(len(dims)))
    strides = [math.prod(dims[j + 1 :]) for j in range(len(dims))]
    ranges = [range(dims[p]) for p in perm]
    return [sum(i * strides[p] for i, p in zip(ix, perm)) for ix in itertools.product(*ranges)]


def _ints(text: str) -> list[int]:
    return [int(t) for t in text.split(",") if t]


def _balanced(s: str, i: int) -> int:
    """Index just past the bracket that closes the one at s[i]."""
    depth = 0
    for j in range(i, len(s)):
        depth += (s[j] in "([{") - (s[j] in ")]}")
        if depth == 0:
            return j + 1
    raise ValueError(f"unbalanced brackets in HLO line: {s.strip()!r}")


def _split_top(s: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for j, ch in enumerate(s):
        depth += (ch in "([{") - (ch in ")]}")
        if ch == "," and depth == 0:
            parts.append(s[start:j])
            start = j + 1
    return [p.strip() for p in [*parts, s[start:]] if p.strip()]


def _parse_shape(s: str, i: int):
    """(shape, end): an array shape is (dtype, dims); a tuple shape is a tuple of shapes."""
    if s.startswith("(", i):
        items, i = [], i + 1
        while not s.startswith(")", (i := _skip(s, i))):
            item, j = _parse_shape(s, i)
            if j == i:
                raise ValueError(f"cannot read the tuple shape in HLO line: {s.strip()!r}")
            items.append(item)
            i = j
        return tuple(items), i + 1
    m = _ARRAY.match(s, i)
    if not m:
        return ("?", ()), i  # not a shape we read (e.g. a computation header): ignored
    dims = tuple(int(d.strip().lstrip("<=")) for d in m["dims"].split(",") if d.strip())
    i = m.end()
    return (m["dtype"], dims), _balanced(s, i) if s.startswith("{", i) else i  # skip a layout


def _skip(s: str, i: int) -> int:
    """Past separators and the `/*index=5*/` comments XLA prints inside long tuple shapes."""
    while m := re.match(r"[\s,]+|/\*.*?\*/", s[i:]):
        i += m.end()
    return i


def _leaves(shape) -> list[tuple[str, Shape]]:
    if shape and isinstance(shape[0], str):
        return [shape]
    return [leaf for item in shape for leaf in _leaves(item)]


def _shape_or_none(line: str, i: int):
    try:  # only operands of collectives need a shape; a line we cannot read is not one
        return _parse_shape(line, i)[0]
    except (ValueError, IndexError):
        return None


def _operand_shape(operand: str, shapes: dict, line: str):
    operand = re.sub(r"/\*.*?\*/", "", operand).strip()  # a long list's /*index=5*/ comments
    if _ARRAY.match(operand) or operand.startswith("("):
        return _parse_shape(operand, 0)[0]  # printed with its shape
    name = operand.split()[-1].lstrip("%")
    if shapes.get(name) is None:
        raise ValueError(f"operand {operand!r} is not defined in the HLO text: {line.strip()!r}")
    return shapes[name]


def _groups(attrs: str, n: int, line: str) -> tuple[str, tuple[tuple[int, ...], ...]]:
    """(spelling, explicit groups) of the replica_groups or source_target_pairs attribute."""
    m = re.search(r"\b(replica_groups|source_target_pairs)=", attrs)
    if not m:
        return "", (tuple(range(n)),)  # no attribute: every device in one group
    i = m.end()
    if attrs.startswith("{", i):
        text = attrs[i : _balanced(attrs, i)]
        groups = tuple(tuple(_ints(g)) for g in re.findall(r"\{([\d,\s]*)\}", text[1:-1]))
        return text, groups or (tuple(range(n)),)
    if iota := _IOTA.match(attrs, i):
        ids = _iota(_ints(iota["dims"]), iota["perm"] and _ints(iota["perm"]))
        size = _ints(iota["shape"])[-1]  # [groups, size]
        return iota[0], tuple(tuple(ids[k : k + size]) for k in range(0, len(ids), size))
    if attrs.startswith("mesh[", i):
        return _mesh_groups(attrs, i)
    raise ValueError(f"unknown replica-group spelling in HLO line: {line.strip()!r}")


def _mesh_groups(attrs: str, i: int) -> tuple[str, tuple[tuple[int, ...], ...]]:
    """Groups of `mesh['a'=2,'b'=4][, device_ids=(...)] {'b'}` (XLA's MeshAxesReplicaGroupList)."""
    end = _balanced(attrs, i + 4)
    axes = [(a, int(s)) for a, s in re.findall(r"'([^']*)'=(\d+)", attrs[i + 5 : end - 1])]
    sizes = [s for _, s in axes]
    ids = list(range(math.prod(sizes)))
    if (d := re.match(r",\s*device_ids=", attrs[end:])) is not None:
        start = end + d.end()
        end = _balanced(attrs, start)
        inner = attrs[start + 1 : end - 1].strip()
        if dev := _DEVICE_IOTA.match(inner):
            ids = _iota(_ints(dev["dims"]), dev["perm"] and _ints(dev["perm"]))
        else:
            ids = _ints(re.sub(r"[\s{}\[\]]", "", inner))
    brace = attrs.index("{", end)
    close = _balanced(attrs, brace)
    refs = [(r["name"], r["pre"], r["size"]) for r in _AXIS_REF.finditer(attrs[brace:close])]
    index = {a: k for k, (a, _) in enumerate(axes)}
    if unknown := {r[0] for r in refs} - set(index):
        raise ValueError(f"replica groups name axes {unknown} missing from {attrs[i:close]!r}")

    def digit(pos: tuple[int, ...], ref) -> tuple[int, int]:
        """(value, weight) of the grouped digit of a (sub-)axis at mesh position `pos`."""
        k, size = index[ref[0]], sizes[index[ref[0]]]
        if ref[1] is None:
            return pos[k], 1
        rest = size // (int(ref[1]) * int(ref[2]))  # minor part of the axis below the sub-axis
        return (pos[k] // rest) % int(ref[2]), rest

    groups: dict[tuple, list[tuple[tuple, int]]] = {}
    for p, dev in enumerate(ids):
        pos = _unravel(p, sizes)
        key, rank = list(pos), []
        for ref in refs:
            value, weight = digit(pos, ref)
            key[index[ref[0]]] -= value * weight  # what is left of the axis identifies the group
            rank.append(value)
        groups.setdefault(tuple(key), []).append((tuple(rank), dev))
    return attrs[i:close], tuple(
        tuple(dev for _, dev in sorted(g)) for _, g in sorted(groups.items())
    )


def _axes_of(groups, names, sizes, coords, ordered: bool) -> tuple[tuple[str, ...] | None, str]:
    """The mesh axes every group spans, if each group is exactly a product of whole axes."""
    spans, note = set(), ""
    try:
        for g in groups:
            pts = [coords[d] for d in g]
            varying = tuple(k for k in range(len(names)) if len({p[k] for p in pts}) > 1)
            if len(set(pts)) != len(g) or len(g) != math.prod(sizes[k] for k in varying):
                return (
                    None,
                    f"group {g} is not a product of whole mesh axes of {dict(zip(names, sizes))}",
                )
            spans.add(varying)
            sub = [tuple(p[k] for k in varying) for p in pts]
            if ordered and sub != sorted(sub):
                note = "devices within a group are not in mesh (row-major) order"
    except KeyError as e:
        return None, f"device id {e.args[0]} is not in the mesh {dict(zip(names, sizes))}"
    if len(spans) != 1 or sorted(d for g in groups for d in g) != sorted(coords):
        return None, f"groups {groups} do not tile the mesh {dict(zip(names, sizes))} evenly"
    return tuple(names[k] for k in spans.pop()), note


def _moves(pairs, names, coords) -> tuple[tuple[str, ...] | None, str]:
    """Mesh axes along which some (source, target) pair of a collective-permute moves."""
    try:
        moved = {k for s, t in pairs for k in range(len(names)) if coords[s][k] != coords[t][k]}
    except KeyError as e:
        return None, f"device id {e.args[0]} is not in the mesh"
    return tuple(names[k] for k in sorted(moved)), "collective-permute: groups are (source, target)"
