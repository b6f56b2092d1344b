"""Sharding as data: a partition per operand, and one mechanism that prices each change of
partition (book ch. 3, "Partitioning Notation" and "Computation With Sharded Arrays"; the
redistribute idea of PyTorch's DTensor, the PartitionSpec of JAX).

A partition is an :class:`~symroof.parallel.sharding.ArraySpec`: per dimension the mesh axes
that split it (several axes split one dimension as one flattened axis, ``D_XY``), and the
axes over which each device holds a partial sum (``{U_X}``, what contracting a split
dimension leaves). :func:`redistribute` turns one partition into another with the fewest
collectives the book's rules allow, in this order:

1. slice locally what the target splits and the source holds whole: free;
2. partial sums: ReduceScatter into the dimensions the target splits over those axes, one
   AllReduce over the rest (partial sums the target keeps stay);
3. an axis that moves from one dimension to another: one AllToAll over the axes that move
   between the same two dimensions;
4. a dimension that loses axes: ONE AllGather over all of them (``D_XY -> D`` is one
   collective over X and Y, at the bandwidth of both).

Each collective is priced by :mod:`symroof.hardware.collectives` with V the bytes one group
holds (after an AllGather, before a reduction; an AllToAll's whole group array). Axes a
step adds to a dimension go minor (``D_X`` sliced over Y is ``D_XY``); two partitions that
differ only in the order of a dimension's axes are taken as the same (a permutation of the
shards is not priced), so a layout names its axes in the order its steps make them.

A :class:`Layout` maps a row key (an ``fnmatch`` pattern; the first that matches wins) to its
:class:`Operands`: the partitions of the activations it reads and writes, its weight and its
KV cache. A model's layout is written per *array* (:func:`array_layout`): the blocks say
which of their arrays each row reads and writes (:meth:`~symroof.models.blocks.Blocks.uses`),
the layout how each array is partitioned (and where one row holds an array otherwise, as
the partial sums a matmul over a split dimension writes), and each row's operands follow.
:func:`shard` divides each row by what its operands split and inserts, before a row,
the collectives that bring the arrays it reads from the partition they were written in to
the one it reads them in.

>>> import symroof as sr
>>> from symroof.symbols import B, D, F
>>> ring = sr.mesh(sr.symbolic_chip(), {"X": 4, "Y": 4})
>>> steps = redistribute("[B, F]{U_X}", "[B, F_X]", ring, {"B": B, "F": F})
>>> list(steps)                               # case 3 with the output split: ReduceScatter
['ReduceScatter_X [B, F]{U_X} -> [B, F_X]']
>>> steps["ReduceScatter_X [B, F]{U_X} -> [B, F_X]"].V       # the unreduced bf16 [B, F]
2*B*F
>>> [*redistribute("W[D_XY, F]", "W[D, F]", ring, {"D": D, "F": F})]   # one collective
['AllGather_XY W[D_XY, F] -> W[D, F]']
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import sympy as sp

from ..cost import Cost, as_exact
from ..hardware.collectives import Collective, collective
from ..hardware.mesh import Mesh
from ..symbols import B as _B
from ..symbols import T as _T
from .sharding import ArraySpec, parse_array, subscript

__all__ = ["redistribute", "moves", "Move", "Operands", "operands", "Layout", "shard",
           "layer_collectives", "shard_layers", "local_elements", "as_partition",
           "array_layout", "ways", "local_act_bytes"]

_BOOK = {"all-gather": "AllGather", "reduce-scatter": "ReduceScatter",
         "all-reduce": "AllReduce", "all-to-all": "AllToAll"}


def as_partition(spec: ArraySpec | str) -> ArraySpec:
    """``spec`` as an ArraySpec (a string is read in the book's notation, ``"x[B_X, D]"``)."""
    return spec if isinstance(spec, ArraySpec) else parse_array(spec)


def local_elements(spec: ArraySpec, sizes: Mapping[str, Any], mesh: Mesh) -> sp.Expr:
    """Elements of one device's shard of ``spec``: each dimension's size over the product
    of the mesh axes that split it.

    >>> import symroof as sr
    >>> local_elements(parse_array("A[I_XY, J]"), {"I": 1024, "J": 4096},
    ...                sr.mesh(sr.symbolic_chip(), {"X": 8, "Y": 2}))
    262144
    """
    n = sp.Integer(1)
    for dim, axes in zip(spec.dims, spec.axes):
        if dim not in sizes:
            raise ValueError(f"{spec}: no size for dimension {dim!r}; sizes given for "
                             f"{', '.join(sorted(sizes)) or 'none'}")
        n *= sp.sympify(sizes[dim]) / (mesh.size(axes) if axes else 1)
    return n


@dataclass(frozen=True)
class Move:
    """One collective of a change of partition: ``before`` -> ``after`` by ``collective``."""

    before: ArraySpec
    after: ArraySpec
    collective: Collective

    def __str__(self) -> str:
        c = self.collective
        return f"{_BOOK[c.kind]}{subscript(c.axes)} {self.before} -> {self.after}"


def _step(kind: str, axes: tuple, before: ArraySpec, after: ArraySpec, V: Any, mesh: Mesh,
          out: list, cache: dict) -> None:
    if not axes or mesh.size(axes) == 1:
        return  # a group of one device sends nothing
    key = (kind, axes, V)
    if key not in cache:
        cache[key] = collective(kind, mesh, V, axes)
    out.append(Move(before, after, cache[key]))


def _same(a: ArraySpec, b: ArraySpec) -> bool:
    """The same partition, axis order inside a dimension aside."""
    return (a.dims == b.dims and all(set(x) == set(y) for x, y in zip(a.axes, b.axes))
            and set(a.unreduced) == set(b.unreduced))


def redistribute(src: ArraySpec | str, dst: ArraySpec | str, mesh: Mesh,
                 sizes: Mapping[str, Any], bytes_per_element: Any = 2) -> dict[str, Collective]:
    """The collectives that turn partition ``src`` into ``dst`` (same dimensions), in order,
    keyed by the step in the book's notation (see the module for the rules).

    >>> import symroof as sr
    >>> m = sr.mesh("tpu-v5e", "4x4")
    >>> for k, c in redistribute("x[B_X, D]", "x[B, D_X]", m, {"B": 64, "D": 128}).items():
    ...     print(k, c.kind, c.V)                 # the axis moves from B to D
    AllToAll_X x[B_X, D] -> x[B, D_X] all-to-all 16384
    >>> redistribute("x[B, D]", "x[B_Y, D_X]", m, {"B": 64, "D": 128})   # slices: free
    {}
    """
    return {str(m): m.collective
            for m in moves(src, dst, mesh, sizes, bytes_per_element)}


def moves(src: ArraySpec | str, dst: ArraySpec | str, mesh: Mesh, sizes: Mapping[str, Any],
          bytes_per_element: Any = 2, *, _cache: dict | None = None) -> list[Move]:
    """:func:`redistribute`'s steps as :class:`Move` records (the partitions between them).

    >>> import symroof as sr
    >>> two = sr.mesh(sr.symbolic_chip(), {"X": 2, "Y": 2})
    >>> [str(m.after) for m in moves("[B, F]{U_XY}", "[B_X, F]", two, {"B": 8, "F": 8})]
    ['[B_X, F]{U_Y}', '[B_X, F]']
    """
    a, b = as_partition(src), as_partition(dst)
    if a.dims != b.dims:
        raise ValueError(f"cannot redistribute {a} to {b}: the dimensions differ")
    for spec in (a, b):
        for x in (*spec.mesh_axes, *spec.unreduced):
            mesh[x]  # noqa: B018  (raises naming the unknown axis)
    if more := sorted(set(b.unreduced) - set(a.unreduced)):
        raise ValueError(f"cannot redistribute {a} to {b}: partial sums over "
                         f"{', '.join(more)} cannot be made by communication")
    w = as_exact(bytes_per_element, "bytes_per_element")
    out: list[Move] = []
    # (kind, axes, V) -> Collective: shared by one walk of one layout only (same mesh, same
    # conventions), so it is private; a caller's own cache could hand back another mesh's
    cache = {} if _cache is None else _cache
    used = set(a.mesh_axes) | set(a.unreduced)
    cur = a
    for d in a.dims:  # 1. free slices: axes the target splits d over and nothing here uses
        free = tuple(x for x in b.axes_of(d) if x not in used)
        cur = cur.with_axes(d, cur.axes_of(d) + free)
    pending = tuple(x for x in cur.unreduced if x not in b.unreduced)
    for d in a.dims:  # 2. partial sums into the splits the target wants
        rs = tuple(x for x in pending if x in b.axes_of(d))
        if rs:
            i = cur.dims.index(d)
            after = ArraySpec(cur.name, cur.dims,
                              cur.axes[:i] + (cur.axes[i] + rs,) + cur.axes[i + 1:],
                              tuple(x for x in cur.unreduced if x not in rs))
            _step("reduce-scatter", rs, cur, after, local_elements(cur, sizes, mesh) * w, mesh,
                  out, cache)
            cur = after
    if ar := tuple(x for x in pending if x in cur.unreduced):
        after = cur.with_unreduced(tuple(x for x in cur.unreduced if x not in ar))
        _step("all-reduce", ar, cur, after, local_elements(cur, sizes, mesh) * w, mesh, out,
              cache)
        cur = after
    for i in a.dims:  # 3. axes that move from dimension i to dimension j
        for j in a.dims:
            move = tuple(x for x in cur.axes_of(i) if x in b.axes_of(j) and i != j)
            if move:
                after = cur.with_axes(i, tuple(x for x in cur.axes_of(i) if x not in move))
                after = after.with_axes(j, after.axes_of(j) + move)
                V = local_elements(cur, sizes, mesh) * mesh.size(move) * w
                _step("all-to-all", move, cur, after, V, mesh, out, cache)
                cur = after
    for d in a.dims:  # 4. one AllGather per dimension, over every axis it loses
        lose = tuple(x for x in cur.axes_of(d) if x not in b.axes_of(d))
        if lose:
            after = cur.with_axes(d, tuple(x for x in cur.axes_of(d) if x not in lose))
            _step("all-gather", lose, cur, after, local_elements(after, sizes, mesh) * w, mesh,
                  out, cache)
            cur = after
    if not _same(cur, b):  # the steps above cover every change; say so if one is missed
        raise ValueError(f"cannot redistribute {a} to {b}: reached {cur}")
    return out


@dataclass(frozen=True)
class Operands:
    """One row's operands as partitions: the activations it ``reads`` and ``writes``, its
    ``weight`` and its ``kv`` cache (None: the row has none), ``sums`` (a dimension of its
    first read it sums over inside, as a norm's mean of squares: where that read splits it,
    the sums are all-reduced), and ``repeats``: how many times the row's collectives happen
    in it (a whole-model row holding L layers: L); ``more``: arrays it writes besides
    ``writes`` (a fused qkv_proj's k and v); ``moved``: each activation array it reads or
    writes (one entry per read or write) with the elements of it the row moves, in the
    step's symbols (``B``, ``T``; empty: all of each partition, sized by :func:`shard`'s
    ``sizes``), what :func:`local_act_bytes` splits by each array's partition."""

    reads: tuple[ArraySpec, ...] = ()
    writes: ArraySpec | None = None
    weight: ArraySpec | None = None
    kv: ArraySpec | None = None
    sums: str | None = None
    repeats: Any = 1
    block: str = ""  # names the row's collectives: comm/<block>_<kind>
    once: bool = False  # a row outside the layers (embedding, head): no layer's collective
    more: tuple[ArraySpec, ...] = ()
    moved: tuple[tuple[ArraySpec, Any], ...] = ()

    @property
    def work_axes(self) -> tuple[str, ...]:
        """The mesh axes that split the row's work: every axis one of its operands is split
        over (an axis that splits none replicates the work)."""
        specs = [*self.reads, self.writes, *self.more, self.weight, self.kv]
        return tuple(dict.fromkeys(x for s in specs if s is not None for x in s.mesh_axes))


def operands(reads: str | Iterable[str] = (), writes: str | None = None,
             weight: str | None = None, kv: str | None = None, *, sums: str | None = None,
             repeats: Any = 1, block: str = "", once: bool = False) -> Operands:
    """Operands in the book's notation.

    >>> operands("h[B, D]", "q[B, H_XY]", weight="W[D, H_XY]", repeats=32).work_axes
    ('X', 'Y')
    """
    reads = (reads,) if isinstance(reads, str) else tuple(reads)
    opt = lambda s: None if s is None else as_partition(s)  # noqa: E731
    return Operands(tuple(as_partition(r) for r in reads), opt(writes), opt(weight), opt(kv),
                    sums, repeats, block, once)


@dataclass(frozen=True)
class Layout:
    """A layout as data: ``rules``, (row-key pattern, Operands) pairs, the first pattern
    that matches a row's key giving its operands.

    >>> lay = Layout("toy", (("mlp/*", operands("h[B, D]", "u[B, F_X]", "W[D, F_X]")),
    ...                      ("*", operands())))
    >>> lay.rule("mlp/up").weight, lay.rule("embed").weight
    (ArraySpec(name='W', dims=('D', 'F'), axes=((), ('X',)), unreduced=()), None)
    """

    name: str
    rules: tuple[tuple[str, Operands], ...]

    def rule(self, key: str) -> Operands:
        """The operands of row ``key``: the first rule whose pattern matches it."""
        return self._match(key)[1]

    def pattern(self, key: str) -> str:
        """The first pattern that matches row ``key``."""
        return self._match(key)[0]

    def _match(self, key: str) -> tuple[str, Operands]:
        exact = self.__dict__.get("_exact")
        if exact is None:  # plain keys only (an array layout's): a dict, built once
            plain = not any(c in p for p, _ in self.rules for c in "*?[")
            exact = {p: (p, ops) for p, ops in reversed(self.rules)} if plain else {}
            object.__setattr__(self, "_exact", exact)
        if key in exact:
            return exact[key]
        for pattern, ops in self.rules:
            if pattern == key or (any(c in pattern for c in "*?[")
                                  and fnmatch.fnmatchcase(key, pattern)):
                return pattern, ops
        raise ValueError(f"layout {self.name!r} has no rule for row {key!r}; its patterns: "
                         f"{', '.join(p for p, _ in self.rules)}")


def array_layout(name: str, uses: Mapping[str, Any], partitions: Mapping[str, ArraySpec],
                 at: Mapping[tuple[str, str], ArraySpec] | None = None,
                 blocks: Mapping[str, str] | None = None,
                 elements: Mapping[str, Any] | None = None) -> Layout:
    """A layout written per array: ``uses`` (row key -> the arrays it reads, writes,
    multiplies by and caches, by path: :meth:`~symroof.models.blocks.Blocks.uses`),
    ``partitions`` (array path -> its partition), ``at`` ((row, array path) -> the partition
    that row holds the array in, where it is not the array's own: a matmul's partial sums,
    queries moved to the cache's split) and ``blocks`` (row -> the block its collectives are
    named after; default ``attn`` for ``attn/`` rows, ``mlp`` for ``mlp/`` and ``moe/``
    rows, else none: named after the row). Arrays given one name in ``partitions`` are one
    array to :func:`shard` (q, k and v reduced together). ``elements`` (array path -> its
    elements in the step's symbols, :meth:`~symroof.models.blocks.Blocks.shape`): what
    each row moves of the arrays it reads and writes (times the row's share of each,
    ``Uses.part``), :attr:`Operands.moved`.

    >>> from symroof.models.blocks.base import Uses
    >>> lay = array_layout("toy", {"up": Uses(("h",), "u", "W_up")},
    ...                    {"h": parse_array("h[B, D]"), "u": parse_array("u[B, F_X]"),
    ...                     "W_up": parse_array("W[D, F_X]")})
    >>> print(lay.rule("up").writes, lay.rule("up").work_axes)
    u[B, F_X] ('X',)
    >>> array_layout("toy", {"up": Uses(("h",), "u")}, {"u": parse_array("u[B, F]")})
    Traceback (most recent call last):
    ...
    ValueError: layout 'toy' partitions no array 'h' (read by row 'up'); it partitions u
    """
    at, blocks = at or {}, blocks or {}

    def part(key: str, path: str | None, role: str) -> ArraySpec | None:
        if path is None:
            return None
        if (key, path) in at:
            return at[key, path]
        if path not in partitions:
            raise ValueError(f"layout {name!r} partitions no array {path!r} ({role} row "
                             f"{key!r}); it partitions {', '.join(partitions)}")
        return partitions[path]

    def block(key: str) -> str:
        head = key.split("/")[0] if "/" in key else ""
        return blocks.get(key, {"attn": "attn", "mlp": "mlp", "moe": "mlp"}.get(head, ""))

    def moved(key: str, u: Any) -> tuple[tuple[ArraySpec, Any], ...]:
        if elements is None:
            return ()
        if missing := [p for p in u.moved() if p not in elements]:
            raise ValueError(f"layout {name!r}: no elements for array {missing[0]!r} "
                             f"(moved by row {key!r})")
        return tuple((part(key, p, "moved by"), elements[p] * u.share(p)) for p in u.moved())

    rules = tuple((key, Operands(tuple(part(key, r, "read by") for r in u.reads),
                                 part(key, u.writes, "written by"),
                                 part(key, u.weight, "the weight of"),
                                 part(key, u.kv, "the cache of"), u.sums, u.repeats,
                                 block(key), u.once,
                                 tuple(part(key, a, "written by") for a in u.also),
                                 moved(key, u)))
                  for key, u in uses.items())
    return Layout(name, rules)


def ways(spec: ArraySpec | None, mesh: Mesh) -> Any:
    """How many ways ``spec`` splits its array over ``mesh`` (1: replicated, or no array).

    >>> import symroof as sr
    >>> ways(as_partition("W[D, F_XY]"), sr.mesh("tpu-v5e", "2x4")), ways(None, None)
    (8, 1)
    """
    return mesh.size(spec.mesh_axes) if spec is not None and spec.mesh_axes else 1


def _walk(keys: Iterable[str], layout: Layout, mesh: Mesh, sizes: Mapping[str, Any],
          act_bytes: Any) -> list[tuple[str, Operands, list[tuple[str, Collective]]]]:
    """Per row, in order: its key, its rule and the collectives before it, each with its
    row name ``comm/<block>_<kind>`` (a different collective of the same block and kind gets
    its array's name added: ``comm/attn_allgather_o``; a norm's sums of squares are named
    after the norm's row: ``comm/attn_norm_allreduce``).

    An array is read in the partition it was last written in; a copy brought to another
    partition serves every later reader of the same ``repeats`` (one layer kind's rows)."""
    written: dict[str, ArraySpec] = {}
    copies: dict[tuple[str, Any], ArraySpec] = {}
    names: dict[str, tuple] = {}  # row name -> (kind, axes, V) of the collective it holds
    cache: dict = {}  # one Collective per (kind, axes, V) in this walk
    out = []
    for key, rule in ((k, layout.rule(k)) for k in keys):
        steps: list[tuple[ArraySpec | None, Collective]] = []
        for r in rule.reads:
            src = copies.get((r.name, rule.repeats), written.get(r.name))
            if src is not None and not _same(src, r):
                steps += [(r, m.collective)
                          for m in moves(src, r, mesh, sizes, act_bytes, _cache=cache)]
            copies[(r.name, rule.repeats)] = r
            written.setdefault(r.name, r)
        if rule.sums and rule.reads and rule.sums in rule.reads[0].dims and \
                (axes := rule.reads[0].axes_of(rule.sums)):
            x = rule.reads[0]
            keep = [i for i, d in enumerate(x.dims) if d != rule.sums]
            part = ArraySpec(x.name, tuple(x.dims[i] for i in keep),
                             tuple(x.axes[i] for i in keep), axes)  # its sums of squares
            sums = moves(part, part.with_unreduced(()), mesh, sizes, act_bytes, _cache=cache)
            steps += [(None, m.collective) for m in sums]  # named after the row itself
        for w in (() if rule.writes is None else (rule.writes,)) + rule.more:
            written[w.name] = w
            copies = {k: v for k, v in copies.items() if k[0] != w.name}
        named = []
        for array, c in steps:
            block = key.replace("/", "_") if array is None or not rule.block else rule.block
            name = f"comm/{block}_{c.kind.replace('-', '')}"
            if names.setdefault(name, (c.kind, c.axes, c.V)) != (c.kind, c.axes, c.V):
                name += f"_{getattr(array, 'name', '') or 'x'}"
                names.setdefault(name, (c.kind, c.axes, c.V))
            named.append((name, c))
        out.append((key, rule, named))
    return out


def layer_collectives(keys: Iterable[str], layout: Layout, mesh: Mesh,
                      sizes: Mapping[str, Any], act_bytes: Any = 2,
                      ) -> dict[str, tuple[int, Collective]]:
    """One layer's collectives under ``layout`` (the rows of ``keys`` walked once, as
    :func:`shard` does, rows marked ``once`` left out): row name -> (times a layer sends it,
    Collective)."""
    return _layer(_walk(keys, layout, mesh, sizes, act_bytes))


def _layer(walk: list) -> dict[str, tuple[int, Collective]]:
    out: dict[str, tuple[int, Collective]] = {}
    for _, rule, steps in walk:
        if rule.once:
            continue
        for name, c in steps:
            out[name] = (out[name][0] + 1 if name in out else 1, c)
    return out


def shard_layers(rows: Mapping[str, Cost], layout: Layout, mesh: Mesh,
                 sizes: Mapping[str, Any] | None = None, *, act_bytes: Any = 2,
                 ) -> tuple[dict[str, Cost], dict[str, tuple[int, Collective]]]:
    """:func:`shard` and :func:`layer_collectives` from one walk of the rows."""
    sizes = dict(sizes or {})
    walk = _walk(rows, layout, mesh, sizes, act_bytes)
    return _per_chip(rows, walk, mesh, sizes, act_bytes), _layer(walk)


def shard(rows: Mapping[str, Cost], layout: Layout, mesh: Mesh,
          sizes: Mapping[str, Any] | None = None, *, act_bytes: Any = 2) -> dict[str, Cost]:
    """Per-chip rows of ``rows`` under ``layout`` on ``mesh``, with the collectives it needs.

    Each row's FLOPs (executed and useful) are divided by the devices its work is split
    over (:attr:`Operands.work_axes`), its activation bytes are each chip's share of the
    arrays it reads and writes (:func:`local_act_bytes`: an array a chip holds whole it moves
    whole), its weight bytes are divided by its weight's split and its KV bytes by its
    cache's. Before a row come the collectives that bring what it reads to its partition
    (:func:`redistribute`, sized by ``sizes``: every dimension's size by name), each
    ``repeats`` times, summed in rows ``comm/<block>_<kind>``.

    >>> import symroof as sr
    >>> m = sr.mesh("tpu-v5e", {"X": 4}, custom=True)
    >>> rows = {"up": Cost(flops=2 * 8 * 16 * 64, weight_bytes=2 * 16 * 64),
    ...         "down": Cost(flops=2 * 8 * 64 * 16, weight_bytes=2 * 64 * 16),
    ...         "add": Cost(flops=8 * 16)}
    >>> lay = Layout("1d", (("up", operands("x[B, D]", "u[B, F_X]", "W[D, F_X]")),
    ...                     ("down", operands("u[B, F_X]", "y[B, D]{U_X}", "W[F_X, D]")),
    ...                     ("add", operands(("x[B, D]", "y[B, D]"), "x[B, D]", block="mlp"))))
    >>> per_chip = shard(rows, lay, m, {"B": 8, "D": 16, "F": 64})
    >>> list(per_chip), per_chip["up"].flops, per_chip["comm/mlp_allreduce"].net_bytes
    (['up', 'down', 'comm/mlp_allreduce', 'add'], 4096, 384)
    """
    sizes = dict(sizes or {})
    walk = _walk(rows, layout, mesh, sizes, act_bytes)
    return _per_chip(rows, walk, mesh, sizes, act_bytes)


def local_act_bytes(rule: Operands, row_bytes: Any, mesh: Mesh, sizes: Mapping[str, Any],
                    width: Any = 2, *, stores: bool = False) -> Any:
    """One chip's activation bytes of a row whose own count (all chips' work) is
    ``row_bytes``: the sum, over the arrays it reads and writes (:attr:`Operands.moved`,
    else each whole partition sized by ``sizes``), of the elements it moves of each over
    the ways the array's partition splits it (:func:`ways`), times ``width`` and the row's
    ``repeats``; a row that declares no arrays is done whole by every chip. Where the
    declarations do not add up to ``row_bytes`` (a convention that counts activation
    traffic otherwise, or none), ``row_bytes`` is split in the same proportion. ``stores``:
    the arrays it writes only (``row_bytes`` its stores, ``Cost.act_store_bytes``).

    >>> import symroof as sr
    >>> from symroof.symbols import B, D, F
    >>> up = operands("h[B, D]", "u[B, F_X]", "W[D, F_X]")   # h read whole, u split 4 ways
    >>> local_act_bytes(up, 2 * (B * D + B * F), sr.mesh(sr.symbolic_chip(), {"X": 4}),
    ...           {"B": B, "D": D, "F": F})
    2*B*D + B*F/2
    """
    if rule.moved:
        whole, local, ratio = _shares(rule, mesh, stores)
        if ratio is not None:  # every array it moves is per token: one share of them all
            return row_bytes * ratio
    else:
        arrays = tuple((s, _elements(s, sizes)) for s in (
            *rule.reads, *(() if rule.writes is None else (rule.writes,)), *rule.more))
        whole, local = _sums(arrays[len(rule.reads):] if stores else arrays, mesh)
    step = {sym: sizes[sym.name] for sym in (_B, _T) if sym.name in sizes}
    whole, local = whole.xreplace(step), local.xreplace(step)
    w = as_exact(width, "act_bytes") * rule.repeats
    if w * whole == row_bytes:  # the declarations account for the row: exact
        return w * local
    return row_bytes if whole == 0 else row_bytes * local / whole


def _sums(arrays: tuple[tuple[ArraySpec, Any], ...], mesh: Mesh) -> tuple[Any, Any]:
    """All the elements of ``arrays`` and one chip's share of them."""
    return (sp.Add(*(e for _, e in arrays)),
            sp.Add(*(e / ways(s, mesh) for s, e in arrays)))


def _shares(rule: Operands, mesh: Mesh, stores: bool) -> tuple[Any, Any, Any]:
    """:func:`_sums` of the arrays ``rule`` moves (``stores``: those it writes) on ``mesh``,
    and their ratio where it is a number (None: it depends on the step), kept on the rule
    (a layout's rules are built once per model and split: a plan's batch only sizes them)."""
    cache = rule.__dict__.get("_shares")
    if cache is None:
        cache = {}
        object.__setattr__(rule, "_shares", cache)
    key = (tuple((a, mesh.size((a,))) for a in mesh.names), stores)
    if key not in cache:
        arrays = rule.moved[len(rule.reads):] if stores else rule.moved  # reads, then writes
        whole, local = _sums(arrays, mesh)
        ratio = sp.Integer(1) if whole == 0 else local / whole
        cache[key] = (whole, local, ratio if ratio.is_number else None)
    return cache[key]


def _elements(spec: ArraySpec, sizes: Mapping[str, Any]) -> Any:
    """Elements of the whole array ``spec`` partitions (its dimensions' ``sizes``)."""
    missing = [d for d in spec.dims if d not in sizes]
    if missing:
        raise ValueError(f"{spec}: no size for dimension {missing[0]!r}; sizes given for "
                         f"{', '.join(sorted(sizes)) or 'none'}")
    return sp.Mul(*(sp.sympify(sizes[d]) for d in spec.dims))


def _per_chip(rows: Mapping[str, Cost], walk: list, mesh: Mesh, sizes: Mapping[str, Any],
              width: Any) -> dict[str, Cost]:
    out: dict[str, Cost] = {}
    for key, rule, steps in walk:
        for name, c in steps:
            out[name] = out.get(name, Cost()) + rule.repeats * c
        c = rows[key]
        work = mesh.size(rule.work_axes) if rule.work_axes else 1
        act = local_act_bytes(rule, c.act_bytes, mesh, sizes, width) if c.act_bytes != 0 else 0
        store = (local_act_bytes(rule, c.act_store_bytes, mesh, sizes, width, stores=True)
                 if c.act_store_bytes != 0 else 0)
        out[key] = Cost(flops=c.flops / work, useful_flops=c.useful_flops / work,
                        weight_bytes=c.weight_bytes / ways(rule.weight, mesh),
                        act_bytes=act, kv_bytes=c.kv_bytes / ways(rule.kv, mesh),
                        net_bytes=c.net_bytes, net_time=c.net_time, host_bytes=c.host_bytes,
                        act_store_bytes=store,  # the writes: each chip's share of them
                        kv_store_bytes=c.kv_store_bytes / ways(rule.kv, mesh))
    return out
