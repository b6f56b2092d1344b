"""The book's sharding notation as data (ch. 3, "Partitioning Notation").

``A[I_X, J_Y]`` is an array A whose dimension I is split over mesh axis X and J over Y; an
axis not named replicates it. ``A[I_XY, J]`` splits I over X and Y as one flattened axis
(X major). A mesh axis may shard at most one dimension of an array. Axis names of one letter
are written run together (``D_XY``); longer names go in braces (``D_{data,model}``).
``C[I, K]{U_X}`` is unreduced over X: each device along X holds a partial sum of the whole
shard (what a contraction over a dimension split over X leaves).

>>> spec = parse_array("W[D_Y, F]")
>>> spec.name, spec.dims, spec.axes
('W', ('D', 'F'), (('Y',), ()))
>>> str(spec)
'W[D_Y, F]'
>>> parse_matmul("X[B_X, D_Y] @ W[D_Y, F] -> [B_X, F]")[2]
ArraySpec(name='', dims=('B', 'F'), axes=(('X',), ()), unreduced=())
>>> parse_array("[B_X, F]{U_Y}").unreduced
('Y',)
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["ArraySpec", "parse_array", "parse_matmul", "ShardedArray", "shard_array",
           "subscript"]

_ARRAY = re.compile(r"^\s*([A-Za-z]\w*)?\s*\[(.*)\]\s*"
                    r"(?:\{U_(?:\{([\w\s,]+)\}|([A-Za-z]+))\})?\s*$")  # {U_X}: partial sums
_DIM = re.compile(r"^([A-Za-z][A-Za-z0-9]*?)(?:_(?:\{([\w\s,]+)\}|([A-Za-z]+)))?$")


@dataclass(frozen=True)
class ArraySpec:
    """An array's name, its dimension names and, per dimension, the mesh axes that split it
    (a tuple of names, major first; empty = whole); ``unreduced``: the mesh axes over which
    each device holds a partial sum (the book's ``{U_X}``)."""

    name: str
    dims: tuple[str, ...]
    axes: tuple[tuple[str, ...], ...]
    unreduced: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        used = [a for group in self.axes for a in group]
        twice = sorted({a for a in used if used.count(a) > 1})
        if twice:
            raise ValueError(f"{self}: mesh axis {twice[0]!r} shards more than one dimension "
                             "(a mesh axis may shard at most one dimension of an array)")
        if both := sorted(set(used) & set(self.unreduced)):
            raise ValueError(f"{self}: mesh axis {both[0]!r} both splits a dimension and holds "
                             "partial sums")
        if len(set(self.unreduced)) != len(self.unreduced):
            raise ValueError(f"{self}: a mesh axis is named twice in {{U_...}}")
        if len(set(self.dims)) != len(self.dims):
            raise ValueError(f"{self}: a dimension name appears twice")

    def axes_of(self, dim: str) -> tuple[str, ...]:
        return self.axes[self.dims.index(dim)]

    @property
    def mesh_axes(self) -> tuple[str, ...]:
        """Every mesh axis that shards this array."""
        return tuple(a for group in self.axes for a in group)

    def with_axes(self, dim: str, axes: tuple[str, ...]) -> ArraySpec:
        i = self.dims.index(dim)
        return ArraySpec(self.name, self.dims, self.axes[:i] + (tuple(axes),) + self.axes[i + 1:],
                         self.unreduced)

    def with_unreduced(self, axes: tuple[str, ...]) -> ArraySpec:
        """The same array with partial sums over ``axes`` (``()``: fully reduced)."""
        return ArraySpec(self.name, self.dims, self.axes, tuple(axes))

    def __str__(self) -> str:
        def one(dim: str, axes: tuple[str, ...]) -> str:
            return dim + subscript(axes)
        partial = f"{{U{subscript(self.unreduced)}}}" if self.unreduced else ""
        return (f"{self.name}[{', '.join(one(d, a) for d, a in zip(self.dims, self.axes))}]"
                + partial)


def subscript(axes: tuple[str, ...]) -> str:
    """The book's subscript for mesh axes: ``_XY`` for one-letter names, ``_{data,model}``
    otherwise, ``""`` for none.

    >>> subscript(("X", "Y")), subscript(("data",)), subscript(())
    ('_XY', '_{data}', '')
    """
    if not axes:
        return ""
    if all(len(a) == 1 for a in axes):
        return f"_{''.join(axes)}"
    return f"_{{{','.join(axes)}}}"


def parse_array(text: str) -> ArraySpec:
    """Parse ``"W[D_X, F]"`` (the name is optional: ``"[B_X, F]"``).

    >>> parse_array("A[I_{data,model}, J]").axes
    (('data', 'model'), ())
    >>> parse_array("A[I_X J]")
    Traceback (most recent call last):
    ...
    ValueError: cannot read dimension 'I_X J' in 'A[I_X J]': write NAME or NAME_AXES, ...
    """
    if not isinstance(text, str):
        raise TypeError(f"a sharded array is written as a string such as 'W[D_X, F]', got "
                        f"{text!r}")
    m = _ARRAY.match(text)
    if not m:
        raise ValueError(f"cannot read array {text!r}: write NAME[DIM_AXES, ...], e.g. "
                         "'W[D_X, F]'")
    name, body = m.group(1) or "", m.group(2)
    dims, axes = [], []
    for part in (p.strip() for p in body.split(",")) if "{" not in body else _split(body):
        d = _DIM.match(part)
        if not d:
            raise ValueError(f"cannot read dimension {part!r} in {text!r}: write NAME or "
                             "NAME_AXES, e.g. D_X or D_{data}")
        dims.append(d.group(1))
        if d.group(2):
            axes.append(tuple(a.strip() for a in d.group(2).split(",") if a.strip()))
        else:
            axes.append(tuple(d.group(3) or ""))
    if m.group(3):
        unreduced = tuple(a.strip() for a in m.group(3).split(",") if a.strip())
    else:
        unreduced = tuple(m.group(4) or "")
    return ArraySpec(name, tuple(dims), tuple(axes), unreduced)


def _split(body: str) -> list[str]:
    """Split on commas outside braces."""
    parts, depth, cur = [], 0, ""
    for ch in body:
        depth += ch == "{"
        depth -= ch == "}"
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return parts + [cur.strip()]


def parse_matmul(text: str) -> tuple[ArraySpec, ArraySpec, ArraySpec]:
    """Parse ``"A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]"``: two 2-D operands that share their
    contracting dimension (last of A, first of B) and the output ``[I, K]``."""
    if not isinstance(text, str) or "@" not in text or "->" not in text:
        raise ValueError(f"cannot read matmul {text!r}: write 'A[I_X, J] @ B[J, K] -> [I_X, K]'")
    left, out = text.split("->", 1)
    if left.count("@") != 1:
        raise ValueError(f"cannot read matmul {text!r}: exactly one '@' between two arrays")
    a, b = (parse_array(s) for s in left.split("@"))
    c = parse_array(out)
    for spec in (a, b, c):
        if len(spec.dims) != 2:
            raise ValueError(f"{spec} in {text!r}: shard_matmul takes 2-D arrays")
    if a.dims[1] != b.dims[0]:
        raise ValueError(f"{text!r}: the contracting dimensions differ ({a.dims[1]} in {a}, "
                         f"{b.dims[0]} in {b})")
    if (c.dims[0], c.dims[1]) != (a.dims[0], b.dims[1]):
        raise ValueError(f"{text!r}: the output must be [{a.dims[0]}, {b.dims[1]}], got "
                         f"[{', '.join(c.dims)}]")
    if a.dims[0] == b.dims[1]:
        raise ValueError(f"{text!r}: the two free dimensions need different names")
    return a, b, c


# -- a sharded array on a mesh: per-device shape, bytes, replication ---------------------------
_TYPED = re.compile(r"^\s*([A-Za-z][A-Za-z0-9]*)\s*\[([\d\s,]*)\]\s*$")


@dataclass(frozen=True)
class ShardedArray:
    """An array of ``dtype`` and ``shape`` laid out as ``spec`` over a mesh: what each device
    holds (``device_shape``, ``device_bytes``), how many devices hold the same shard
    (``replicas``: the product of the mesh axes the spec leaves out) and the bytes summed
    over the mesh (``total_bytes`` = devices x device bytes)."""

    dtype: str
    shape: tuple[int, ...]
    spec: ArraySpec
    mesh: Any

    @property
    def device_shape(self) -> tuple[int, ...]:
        return tuple(n // self.mesh.size(ax) if ax else n
                     for n, ax in zip(self.shape, self.spec.axes))

    @property
    def width(self) -> Any:
        from ..hardware.chip import STORAGE_BYTES
        return STORAGE_BYTES[self.dtype]

    @property
    def device_bytes(self) -> Any:
        return math.prod(self.device_shape) * self.width

    @property
    def replicas(self) -> int:
        used = set(self.spec.mesh_axes)
        return math.prod(a.size for a in self.mesh.axes if a.name not in used)

    @property
    def total_bytes(self) -> Any:
        return self.mesh.n_chips * self.device_bytes

    def __str__(self) -> str:
        def typed(shape: tuple[int, ...]) -> str:
            return f"{self.dtype}[{', '.join(map(str, shape))}]"
        mesh = ", ".join(f"{a.name}={a.size}" for a in self.mesh.axes)
        copies = "" if self.replicas == 1 else f", {self.replicas} copies of each shard"
        return (f"{typed(self.shape)} as {self.spec} over {mesh}: {typed(self.device_shape)} "
                f"a device, {binary_bytes(self.device_bytes)}{copies}; "
                f"{binary_bytes(self.total_bytes)} over the mesh's {self.mesh.n_chips} devices")


def binary_bytes(n: Any) -> str:
    """Bytes in binary units, as the book writes array sizes (``1 MiB``, ``1.5 GiB``).

    >>> binary_bytes(2**20), binary_bytes(3 * 2**29), binary_bytes(1000)
    ('1 MiB', '1.5 GiB', '1000 B')
    """
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.4g} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def shard_array(array: str, spec: str, mesh: Any) -> ShardedArray:
    """The array ``array`` ("fp32[1024, 4096]") laid out as ``spec`` ("I_XY, J", the book's
    notation, one dimension per size) over ``mesh``.

    >>> import symroof as sr
    >>> a = sr.shard_array("fp32[1024, 4096]", "I_XY, J", sr.mesh(sr.symbolic_chip(),
    ...                                                           {"X": 8, "Y": 2}))
    >>> a.device_shape, a.device_bytes, a.replicas
    ((64, 4096), 1048576, 1)
    >>> print(a)    # doctest: +NORMALIZE_WHITESPACE
    fp32[1024, 4096] as A[I_XY, J] over X=8, Y=2: fp32[64, 4096] a device, 1 MiB;
    16 MiB over the mesh's 16 devices
    """
    from ..hardware.chip import STORAGE_BYTES
    from ..hardware.mesh import Mesh

    m = _TYPED.match(array) if isinstance(array, str) else None
    if not m or not m.group(2).strip():
        raise ValueError(f"cannot read array {array!r}: write DTYPE[SIZES], e.g. "
                         "'fp32[1024, 4096]'")
    dtype = m.group(1).lower()
    if dtype not in STORAGE_BYTES:
        raise ValueError(f"array {array!r}: unknown dtype {m.group(1)!r}; known: "
                         f"{', '.join(STORAGE_BYTES)}")
    sizes = [n.strip() for n in m.group(2).split(",")]
    if not all(n.isdigit() and int(n) > 0 for n in sizes):
        raise ValueError(f"cannot read array {array!r}: each size must be a positive "
                         "integer, e.g. 'fp32[1024, 4096]'")
    shape = tuple(int(n) for n in sizes)
    if not isinstance(mesh, Mesh):
        raise TypeError(f"shard_array() takes a Mesh (sr.mesh(chip, '4x4')), got {mesh!r}")
    text = spec if isinstance(spec, str) and "[" in spec else f"A[{spec}]"
    parsed = parse_array(text)
    if len(parsed.dims) != len(shape):
        raise ValueError(f"spec {spec!r} names {len(parsed.dims)} dimensions, the array "
                         f"{array!r} has {len(shape)}")
    for dim, n, axes in zip(parsed.dims, shape, parsed.axes):
        ways = mesh.size(axes) if axes else 1
        if n % ways:
            raise ValueError(f"dimension {dim} = {n} of {array!r} does not split evenly "
                             f"{ways} ways over {''.join(axes)}")
    return ShardedArray(dtype, shape, parsed, mesh)
