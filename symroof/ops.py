"""The op catalogue: one small function per op, each returning a :class:`~symroof.Cost`.

Conventions (stated once, here and in docs/accounting.md):

- A contraction costs 2 FLOPs per multiply-accumulate (``[M,K]@[K,N]`` is ``2MKN``).
  ``exact=True`` counts each reduction of n products as n multiplies and n - 1 adds.
- Any other arithmetic primitive costs 1 FLOP per output element; a reduction over n
  elements costs n - 1.
- Unfused bytes: every op reads each operand once and writes its output once (the output's
  bytes are also its ``act_store_bytes``). Per-operand byte widths are parameters (2 = bf16,
  1 = int8).

>>> from symroof.symbols import B, D, F
>>> matmul(B, D, F).intensity
B*D*F/(B*D + B*F + D*F)
"""

from __future__ import annotations

import re
from typing import Any

import sympy as sp

from .cost import Cost, as_dimension, as_exact

__all__ = [
    "dot", "matvec", "matmul", "batched_matmul", "elementwise", "add",
    "rmsnorm", "softmax", "swiglu", "rope", "einsum_flops", "einsum",
]


def _width(value: Any, name: str) -> sp.Expr:
    width = as_exact(value, name)
    if width.is_positive is False or width == 0:
        raise ValueError(f"{name} must be a positive number of bytes per element, got {value!r}")
    return width


def _macs(n_products: sp.Expr, length: sp.Expr, exact: bool) -> sp.Expr:
    """FLOPs of ``n_products`` reductions of ``length`` products each."""
    return n_products * (2 * length - 1) if exact else 2 * n_products * length


def dot(n: Any, *, exact: bool = False, x_bytes: Any = 2, out_bytes: Any = 2) -> Cost:
    """Dot product x . y of two length-n vectors: loads 2n elements, writes one.

    FLOPs = 2n (or n multiplies + n - 1 adds with ``exact=True``, as the book counts it).

    >>> from symroof.symbols import N
    >>> dot(N, exact=True).intensity
    (2*N - 1)/(4*N + 2)
    """
    n = as_dimension(n, "n")
    xb, ob = _width(x_bytes, "x_bytes"), _width(out_bytes, "out_bytes")
    return Cost(flops=_macs(1, n, exact), act_bytes=2 * n * xb + ob, act_store_bytes=ob)


def matmul(b: Any, d: Any, f: Any, *, x_bytes: Any = 2, w_bytes: Any = 2,
           out_bytes: Any = 2, exact: bool = False) -> Cost:
    """X[b,d] @ W[d,f] -> Z[b,f]: FLOPs = 2bdf; reads bd + df elements, writes bf.

    >>> from symroof.symbols import B, D, F
    >>> mm = matmul(B, D, F, w_bytes=1)     # int8 weights, bf16 activations
    >>> mm.weight_bytes, mm.act_bytes
    (D*F, 2*B*D + 2*B*F)
    """
    b, d, f = as_dimension(b, "b"), as_dimension(d, "d"), as_dimension(f, "f")
    xb, wb, ob = (_width(x_bytes, "x_bytes"), _width(w_bytes, "w_bytes"),
                  _width(out_bytes, "out_bytes"))
    return Cost(flops=_macs(b * f, d, exact), weight_bytes=d * f * wb,
                act_bytes=b * d * xb + b * f * ob, act_store_bytes=b * f * ob)


def matvec(d: Any, f: Any, **widths: Any) -> Cost:
    """x[d] @ W[d,f] -> y[f]: a matmul with a batch of one (intensity tends to 1 in bf16).

    >>> from symroof.symbols import D, F
    >>> matvec(D, F).flops
    2*D*F
    """
    return matmul(1, d, f, **widths)


def batched_matmul(b: Any, d: Any, f: Any, *, x_bytes: Any = 2, w_bytes: Any = 2,
                   out_bytes: Any = 2, exact: bool = False) -> Cost:
    """X[b,d] . W[b,d,f] -> Z[b,f]: one matrix per example (the book's problem 4).

    Same 2bdf FLOPs as a matmul, but bdf weight elements: intensity tends to a constant.

    >>> from symroof.symbols import B, D, F
    >>> batched_matmul(B, D, F).weight_bytes
    2*B*D*F
    """
    b, d, f = as_dimension(b, "b"), as_dimension(d, "d"), as_dimension(f, "f")
    xb, wb, ob = (_width(x_bytes, "x_bytes"), _width(w_bytes, "w_bytes"),
                  _width(out_bytes, "out_bytes"))
    return Cost(flops=_macs(b * f, d, exact), weight_bytes=b * d * f * wb,
                act_bytes=b * d * xb + b * f * ob, act_store_bytes=b * f * ob)


def elementwise(n: Any, *, flops_per_element: Any = 1, inputs: int = 1, x_bytes: Any = 2,
                out_bytes: Any = 2) -> Cost:
    """An elementwise op over n output elements reading ``inputs`` operands of n elements.

    >>> from symroof.symbols import N
    >>> elementwise(N, inputs=2).intensity
    1/6
    """
    n = as_dimension(n, "n")
    if not isinstance(inputs, int) or inputs < 0:
        raise ValueError(f"inputs must be a non-negative integer, got {inputs!r}")
    written = n * _width(out_bytes, "out_bytes")
    return Cost(flops=as_exact(flops_per_element, "flops_per_element") * n,
                act_bytes=inputs * n * _width(x_bytes, "x_bytes") + written,
                act_store_bytes=written)


def add(n: Any, *, x_bytes: Any = 2) -> Cost:
    """Residual add y = a + b over n elements: n FLOPs, reads 2n, writes n.

    >>> from symroof.symbols import N
    >>> add(N).act_bytes
    6*N
    """
    return elementwise(n, inputs=2, x_bytes=x_bytes, out_bytes=x_bytes)


def rmsnorm(rows: Any, d: Any, *, x_bytes: Any = 2, w_bytes: Any = 2) -> Cost:
    """RMSNorm of ``rows`` vectors of width d: y = x / sqrt(mean(x^2) + eps) * w.

    Per row: square (d), sum (d-1), /d (1), +eps (1), sqrt (1), x / rms (d), weight (d):
    4d + 2 FLOPs. Reads x and the weight, writes y.

    >>> from symroof.symbols import B, D
    >>> rmsnorm(B, D).flops
    B*(4*D + 2)
    """
    rows, d = as_dimension(rows, "rows"), as_dimension(d, "d")
    xb = _width(x_bytes, "x_bytes")
    return Cost(flops=rows * (4 * d + 2), weight_bytes=d * _width(w_bytes, "w_bytes"),
                act_bytes=2 * rows * d * xb, act_store_bytes=rows * d * xb)


def softmax(rows: Any, n: Any, *, useful_elements: Any = None, x_bytes: Any = 2) -> Cost:
    """Scaled softmax of ``rows`` rows of n scores (mask by selection, 0 FLOPs).

    Per row: scale (n), max (n-1), subtract (n), exp (n), sum (n-1), divide (n): 6n - 2.
    ``useful_elements`` (the unmasked entries, if fewer) gives useful FLOPs 6u - 2 per row.

    >>> from symroof.symbols import B, S
    >>> softmax(B, S).flops
    B*(6*S - 2)
    """
    rows, n = as_dimension(rows, "rows"), as_dimension(n, "n")
    u = rows * n if useful_elements is None else as_exact(useful_elements, "useful_elements")
    xb = _width(x_bytes, "x_bytes")
    return Cost(flops=rows * (6 * n - 2), useful_flops=6 * u - 2 * rows,
                act_bytes=2 * rows * n * xb, act_store_bytes=rows * n * xb)


def swiglu(n: Any, *, x_bytes: Any = 2) -> Cost:
    """SwiGLU h = silu(g) * u over n elements; silu(g) = g / (1 + exp(-g)).

    Negate, exp, add 1, divide, multiply: 5 FLOPs per element; reads g and u, writes h.

    >>> from symroof.symbols import B, F
    >>> swiglu(B*F).act_bytes
    6*B*F
    """
    return elementwise(n, flops_per_element=5, inputs=2, x_bytes=x_bytes, out_bytes=x_bytes)


def rope(n: Any, *, table: Any = 0, x_bytes: Any = 2) -> Cost:
    """Rotary embedding of n elements (pairs rotated: out1 = x1 c - x2 s, out2 = x2 c + x1 s).

    3 FLOPs per element; reads and writes the n elements, plus ``table`` elements of the
    cos and sin tables.

    >>> from symroof.symbols import B, T, H, d_h
    >>> rope(B*T*H*d_h).flops
    3*B*H*T*d_h
    """
    n = as_dimension(n, "n")
    xb = _width(x_bytes, "x_bytes")
    return Cost(flops=3 * n, act_bytes=2 * n * xb + as_exact(table, "table") * xb,
                act_store_bytes=n * xb)


_SPEC = re.compile(r"^\s*([a-zA-Z]+(?:\s*,\s*[a-zA-Z]+)*)\s*->\s*([a-zA-Z]*)\s*$")


def _parse_einsum(spec: str, shapes: tuple) -> tuple[list[str], str, dict[str, sp.Expr]]:
    match = _SPEC.match(spec) if isinstance(spec, str) else None
    if match is None:
        raise ValueError(f"einsum spec must look like 'bd,df->bf', got {spec!r}")
    inputs = [term.strip() for term in match.group(1).split(",")]
    output = match.group(2)
    if len(inputs) != len(shapes):
        raise ValueError(f"einsum spec {spec!r} has {len(inputs)} operands but "
                         f"{len(shapes)} shapes were given")
    sizes: dict[str, sp.Expr] = {}
    for term, shape in zip(inputs, shapes):
        if len(term) != len(shape):
            raise ValueError(f"einsum operand {term!r} of {spec!r} has {len(term)} letters "
                             f"but shape {tuple(shape)!r} has {len(shape)} dimensions")
        for letter, size in zip(term, shape):
            size = as_dimension(size, f"dimension {letter!r}")
            if letter in sizes and sp.simplify(sizes[letter] - size) != 0:
                raise ValueError(f"einsum letter {letter!r} of {spec!r} has two sizes: "
                                 f"{sizes[letter]} and {size}")
            sizes[letter] = size
    if len(set(output)) != len(output):
        raise ValueError(f"einsum output {output!r} of {spec!r} repeats a letter")
    for letter in output:
        if letter not in sizes:
            raise ValueError(f"einsum output letter {letter!r} of {spec!r} is in no input")
    return inputs, output, sizes


def einsum_flops(spec: str, *shapes: Any) -> sp.Expr:
    """FLOPs of an einsum by the book's rule: 2 x the product of every dimension (each
    letter once) when something is contracted; the plain product when nothing is.

    >>> from symroof.symbols import B, D, F
    >>> einsum_flops("bd,df->bf", (B, D), (D, F))
    2*B*D*F
    >>> einsum_flops("bd,bd->bd", (B, D), (B, D))
    B*D
    """
    inputs, output, sizes = _parse_einsum(spec, shapes)
    product = sp.Mul(*sizes.values())
    contracted = set(sizes) - set(output)
    return 2 * product if contracted and len(inputs) > 1 else product


def einsum(spec: str, *shapes: Any, x_bytes: Any = 2, out_bytes: Any = 2) -> Cost:
    """Cost of an einsum whose operands are all activations: FLOPs by
    :func:`einsum_flops`, each operand read once, the output written once.

    >>> from symroof.symbols import B, D, F
    >>> einsum("bd,df->bf", (B, D), (D, F)).bytes
    2*B*D + 2*B*F + 2*D*F
    """
    inputs, output, sizes = _parse_einsum(spec, shapes)
    xb, ob = _width(x_bytes, "x_bytes"), _width(out_bytes, "out_bytes")
    read = sum(sp.Mul(*(sizes[c] for c in term)) for term in inputs)
    written = sp.Mul(*(sizes[c] for c in output))
    return Cost(flops=einsum_flops(spec, *shapes), act_bytes=read * xb + written * ob,
                act_store_bytes=written * ob)
