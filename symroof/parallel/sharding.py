"""The book's sharding notation as data (ch. 3, "Partitioning Notation").

``A[I_X, J_Y]`` is an array A whose dimension I is split over mesh axis X and J over Y; an
axis not named replicates it. ``A[I_XY, J]`` splits I over X and Y as one flattened axis
(X major). A mesh axis may shard at most one dimension of an array. Axis names of one letter
are written run together (``D_XY``); longer names go in braces (``D_{data,model}``).

>>> spec = parse_array("W[D_Y, F]")
>>> spec.name, spec.dims, spec.axes
('W', ('D', 'F'), (('Y',), ()))
>>> str(spec)
'W[D_Y, F]'
>>> parse_matmul("X[B_X, D_Y] @ W[D_Y, F] -> [B_X, F]")[2]
ArraySpec(name='', dims=('B', 'F'), axes=(('X',), ()))
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["ArraySpec", "parse_array", "parse_matmul"]

_ARRAY = re.compile(r"^\s*([A-Za-z]\w*)?\s*\[(.*)\]\s*$")
_DIM = re.compile(r"^([A-Za-z][A-Za-z0-9]*?)(?:_(?:\{([\w\s,]+)\}|([A-Za-z]+)))?$")


@dataclass(frozen=True)
class ArraySpec:
    """An array's name, its dimension names and, per dimension, the mesh axes that split it
    (a tuple of names, major first; empty = whole)."""

    name: str
    dims: tuple[str, ...]
    axes: tuple[tuple[str, ...], ...]

    def __post_init__(self) -> None:
        used = [a for group in self.axes for a in group]
        twice = sorted({a for a in used if used.count(a) > 1})
        if twice:
            raise ValueError(f"{self}: mesh axis {twice[0]!r} shards more than one dimension "
                             "(a mesh axis may shard at most one dimension of an array)")
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
        return ArraySpec(self.name, self.dims, self.axes[:i] + (tuple(axes),) + self.axes[i + 1:])

    def __str__(self) -> str:
        def one(dim: str, axes: tuple[str, ...]) -> str:
            if not axes:
                return dim
            if all(len(a) == 1 for a in axes):
                return f"{dim}_{''.join(axes)}"
            return f"{dim}_{{{','.join(axes)}}}"
        return f"{self.name}[{', '.join(one(d, a) for d, a in zip(self.dims, self.axes))}]"


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
    return ArraySpec(name, tuple(dims), tuple(axes))


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
