"""Counted NumPy primitives: each computes with NumPy and tallies what it really touched.

Counting conventions (docs/accounting.md), applied here and nowhere else:

- A contraction costs 2 FLOPs per multiply-accumulate: ``matmul`` counts
  ``2 * out.size * K``, ``einsum`` counts ``2 * prod(every distinct dimension)``.
- Every other arithmetic primitive costs 1 FLOP per *output* element (add, sub, mul, div,
  neg, exp, log, sqrt, recip, tanh, erf, maximum); ``scatter_add`` costs 1 per added
  element. A reduction over n elements (sum, max) costs n - 1 per output element.
  Selection (``where``, slicing, gather, copy, top-k) costs 0.
- Useful FLOPs equal executed FLOPs unless a primitive gets a boolean ``valid`` mask: then
  only valid entries count (n_valid - 1 per row for a reduction; for ``einsum`` the mask
  labels some of its letters via ``valid_dims`` and a point of the iteration space is
  useful when its projection onto those letters is valid).
- Bytes: an op scope adds ``array.size * width`` for every operand it declares read or
  written, split by kind (``"weight"``, ``"kv"``, ``"act"``).

All figures are Python ints, taken from the arrays each primitive really receives and
returns. ``PLAIN`` is the same interface with no bookkeeping, used when no counter is given.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np


def _mask(valid: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The mask right-aligned to ``shape`` (padded with 1s); each dim is 1 or matches."""
    v = np.asarray(valid)
    if v.dtype != np.bool_:
        raise TypeError(f"valid must be a boolean mask, got dtype {v.dtype}")
    padded = (1,) * (len(shape) - v.ndim) + v.shape
    if v.ndim > len(shape) or any(m not in (1, n) for m, n in zip(padded, shape, strict=True)):
        raise ValueError(f"valid of shape {v.shape} does not broadcast to {shape}")
    return v.reshape(padded)


def _count_valid(valid: np.ndarray, shape: tuple[int, ...]) -> int:
    """Number of True entries of ``valid`` broadcast to ``shape`` (without materialising it)."""
    v = _mask(valid, shape)
    repeat = math.prod(n for m, n in zip(v.shape, shape, strict=True) if m == 1)
    return int(np.count_nonzero(v)) * repeat


def _count_valid_rows(valid: np.ndarray, shape: tuple[int, ...], axis: int) -> int:
    """Sum over rows along ``axis`` of max(n_valid - 1, 0): a reduction's useful FLOPs."""
    v = _mask(valid, shape)
    axis %= len(shape)
    n = shape[axis]
    per_row = v.sum(axis=axis) if v.shape[axis] == n else v.take(0, axis=axis) * n
    repeat = math.prod(s for i, (m, s) in enumerate(zip(v.shape, shape, strict=True))
                       if i != axis and m == 1)
    return int(np.maximum(per_row - 1, 0).sum()) * repeat


def _einsum_dims(spec: str, operands: tuple[np.ndarray, ...]) -> dict[str, int]:
    """Letter -> size for an explicit einsum ``spec`` ("btd,dn->btn")."""
    if "->" not in spec or "." in spec:
        raise ValueError(f"einsum spec must be explicit ('ij,jk->ik'), got {spec!r}")
    inputs, output = spec.replace(" ", "").split("->")
    subs = inputs.split(",")
    if len(subs) != len(operands):
        raise ValueError(f"einsum spec {spec!r} names {len(subs)} operands, got {len(operands)}")
    dims: dict[str, int] = {}
    for letters, x in zip(subs, operands, strict=True):
        for letter, n in zip(letters, np.shape(x), strict=True):
            dims[letter] = max(dims.get(letter, 1), int(n))
    if not set(dims) - set(output):
        raise ValueError(f"einsum spec {spec!r} contracts nothing; use mul for a product")
    return dims


_erf_scalar = np.frompyfunc(math.erf, 1, 1)


def _erf(a) -> np.ndarray:
    """The error function elementwise (NumPy has none; ``math.erf`` per element)."""
    a = np.asarray(a)
    return _erf_scalar(a).astype(a.dtype if a.dtype.kind == "f" else np.float64)


class _PlainOp:
    """The primitives without bookkeeping: each method is one NumPy call."""

    def __enter__(self) -> _PlainOp:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def read(self, x: np.ndarray, kind: str) -> None:
        """Declare ``x`` read from memory (no-op here)."""

    def write(self, x: np.ndarray, kind: str) -> None:
        """Declare ``x`` written to memory (no-op here)."""

    def matmul(self, a, b):
        return np.matmul(a, b)

    def einsum(self, spec, a, b, valid=None, valid_dims=None):
        return np.einsum(spec, a, b, optimize=True)

    def add(self, a, b, valid=None):
        return np.add(a, b)

    def sub(self, a, b, valid=None):
        return np.subtract(a, b)

    def mul(self, a, b, valid=None):
        return np.multiply(a, b)

    def div(self, a, b, valid=None):
        return np.divide(a, b)

    def neg(self, a, valid=None):
        return np.negative(a)

    def exp(self, a, valid=None):
        return np.exp(a)

    def sqrt(self, a, valid=None):
        return np.sqrt(a)

    def recip(self, a, valid=None):
        return np.reciprocal(a)

    def log(self, a, valid=None):
        return np.log(a)

    def tanh(self, a, valid=None):
        return np.tanh(a)

    def erf(self, a, valid=None):
        return _erf(a)

    def maximum(self, a, b, valid=None):
        return np.maximum(a, b)

    def scatter_add(self, target, index, values):
        """``target[index[i]] += values[i]`` in place (rows may repeat)."""
        np.add.at(target, index, values)

    def sum(self, a, axis=-1, valid=None):
        return np.sum(a, axis=axis, keepdims=True)

    def max(self, a, axis=-1, valid=None):
        return np.max(a, axis=axis, keepdims=True)

    def where(self, cond, a, b):
        return np.where(cond, a, b)


PLAIN = _PlainOp()


class _CountedOp(_PlainOp):
    """The primitives of one op scope: compute with NumPy, then tally into the op's row.

    ``sized(x, kind)`` is the counter's rule for bytes: the row field of ``kind`` and
    ``x.size * width(kind)`` (the counter owns the widths; this class only adds them up)."""

    def __init__(self, row: dict[str, int],
                 sized: Callable[[np.ndarray, str], tuple[str, int]],
                 stored: dict[str, int] | None = None):
        self._row = row
        self._sized = sized
        self._stored = stored  # the activation and KV bytes written, apart

    def read(self, x: np.ndarray, kind: str) -> None:
        """Add ``x.size * width(kind)`` bytes of the given kind."""
        field, n_bytes = self._sized(x, kind)
        self._row[field] += n_bytes

    def write(self, x: np.ndarray, kind: str) -> None:
        """Count a write like a read (the unfused rule: once, its real size), and an
        activation or KV write among the bytes stored too."""
        field, n_bytes = self._sized(x, kind)
        self._row[field] += n_bytes
        if self._stored is not None and field in ("act_bytes", "kv_bytes"):
            self._stored[field[:-5] + "store_bytes"] += n_bytes

    def _tally(self, flops: int, useful: int) -> None:
        self._row["flops"] += flops
        self._row["useful_flops"] += useful

    def _ew(self, out, valid):
        n = int(np.size(out))
        self._tally(n, n if valid is None else _count_valid(valid, np.shape(out)))
        return out

    def _reduce(self, out, a, axis, valid):
        n = (np.shape(a)[axis] - 1) * int(np.size(out))
        self._tally(n, n if valid is None else _count_valid_rows(valid, np.shape(a), axis))
        return out

    def matmul(self, a, b):
        out = np.matmul(a, b)
        n = 2 * int(np.size(out)) * np.shape(a)[-1]
        self._tally(n, n)
        return out

    def einsum(self, spec, a, b, valid=None, valid_dims=None):
        dims = _einsum_dims(spec, (a, b))
        out = np.einsum(spec, a, b, optimize=True)
        n = 2 * math.prod(dims.values())
        if valid is None:
            self._tally(n, n)
            return out
        if valid_dims is None or not set(valid_dims) <= set(dims):
            raise ValueError(f"valid_dims must name letters of {spec!r}, got {valid_dims!r}")
        rest = math.prod(s for letter, s in dims.items() if letter not in valid_dims)
        shape = tuple(dims[letter] for letter in valid_dims)
        self._tally(n, 2 * rest * _count_valid(valid, shape))
        return out

    def add(self, a, b, valid=None):
        return self._ew(np.add(a, b), valid)

    def sub(self, a, b, valid=None):
        return self._ew(np.subtract(a, b), valid)

    def mul(self, a, b, valid=None):
        return self._ew(np.multiply(a, b), valid)

    def div(self, a, b, valid=None):
        return self._ew(np.divide(a, b), valid)

    def neg(self, a, valid=None):
        return self._ew(np.negative(a), valid)

    def exp(self, a, valid=None):
        return self._ew(np.exp(a), valid)

    def sqrt(self, a, valid=None):
        return self._ew(np.sqrt(a), valid)

    def recip(self, a, valid=None):
        return self._ew(np.reciprocal(a), valid)

    def log(self, a, valid=None):
        return self._ew(np.log(a), valid)

    def tanh(self, a, valid=None):
        return self._ew(np.tanh(a), valid)

    def erf(self, a, valid=None):
        return self._ew(_erf(a), valid)

    def maximum(self, a, b, valid=None):
        return self._ew(np.maximum(a, b), valid)

    def scatter_add(self, target, index, values):
        """One add per element of ``values`` (each lands on a row of ``target``)."""
        np.add.at(target, index, values)
        n = int(np.size(values))
        self._tally(n, n)

    def sum(self, a, axis=-1, valid=None):
        return self._reduce(np.sum(a, axis=axis, keepdims=True), a, axis, valid)

    def max(self, a, axis=-1, valid=None):
        return self._reduce(np.max(a, axis=axis, keepdims=True), a, axis, valid)
