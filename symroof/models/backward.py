"""Backward ops and the optimizer step: one small function each, returning a ``Cost``.

Conventions (docs/accounting.md, "Backward"), on top of the forward ones (2 FLOPs per
multiply-accumulate, 1 per other arithmetic result, n - 1 per reduction of n; unfused bytes):

- A weight matmul Y = X W has two gradient matmuls, each as many FLOPs as the forward:
  dX = dY W^T reads dY and W, writes dX; dW = X^T dY reads X and dY, writes dW.
- Parameter-shaped arrays (weights, their gradients, Adam's moments, master copies) are
  weight bytes, each at its own width; activations and their gradients are activation
  bytes. A training step has no KV cache.
- Where a tensor feeds several ops, each op's backward writes its own contribution and a
  ``grad_sum`` row adds them (the residual stream: 2; q/k/v's input: 3; gate/up's: 2).
- Elementwise backwards recompute from the saved inputs what they need (the RMS of a row,
  sigmoid of the gate), as the NumPy model does.
- The gradient matmuls count ``flops_per_mac`` FLOPs per multiply-add (the conventions in
  force; the lm_head's its ``lm_head_flops_per_mac``), as their forward does. The
  elementwise backwards keep symroof's exact counts under every profile: no peer's
  profile defines a backward count per element (docs/accounting.md, "Conventions"); but
  ``transcendentals="apart"`` takes the exp, tanh, erf and sqrt they evaluate out of their
  FLOPs, as it does the forward's (:func:`symroof.models.rows.transcendental`, its one
  reader).
- A training step's rows leave ``act_store_bytes`` and ``kv_store_bytes`` at 0 by design:
  their activation bytes are one total, not split into loads and stores (a forward step's
  rows are split; there is no KV cache here).

>>> from symroof.symbols import B, D, F
>>> linear_dx(B, D, F).flops == linear_dw(B, D, F).flops == 2*B*D*F
True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sympy as sp

from ..cost import Cost, as_dimension, as_exact
from .rows import mac_flops, transcendental

__all__ = ["linear_dx", "linear_dw", "grad_sum", "rmsnorm_backward", "swiglu_backward",
           "softmax_backward", "attention_matmul_backward", "flash_attention_backward",
           "embedding_backward", "cross_entropy", "cross_entropy_backward", "adam",
           "ADAM_FLOPS"]

#: Adam's FLOPs per parameter: m (3), v (4), two bias corrections (2), sqrt + eps +
#: divide (3), p - lr * update (2).
ADAM_FLOPS = 14


def _w(value: Any, name: str) -> sp.Expr:
    width = as_exact(value, name)
    if width.is_positive is not True:
        raise ValueError(f"{name} must be a positive number of bytes per element, got {value!r}")
    return width


def linear_dx(n: Any, d_in: Any, d_out: Any, *, x_bytes: Any = 2, w_bytes: Any = 2,
              count: Callable[[Any], Any] = mac_flops) -> Cost:
    """dX[n, d_in] = dY[n, d_out] W^T: 2*n*d_in*d_out FLOPs (``count``: the FLOPs of a number
    of multiply-adds, by default under ``flops_per_mac``); reads dY and W, writes dX.

    >>> from symroof.symbols import B, D, F
    >>> linear_dx(B, F, D)
    Cost(flops=2*B*D*F, weight_bytes=2*D*F, act_bytes=2*B*D + 2*B*F)
    """
    n, d_in, d_out = (as_dimension(v, k) for v, k in ((n, "n"), (d_in, "d_in"), (d_out, "d_out")))
    return Cost(flops=count(n * d_in * d_out),
                weight_bytes=d_in * d_out * _w(w_bytes, "w_bytes"),
                act_bytes=n * d_out * _w(x_bytes, "x_bytes") + n * d_in * _w(x_bytes, "x_bytes"))


def linear_dw(n: Any, d_in: Any, d_out: Any, *, x_bytes: Any = 2, grad_bytes: Any = 2,
              bias: bool = False, count: Callable[[Any], Any] = mac_flops) -> Cost:
    """dW[d_in, d_out] = X^T dY: 2*n*d_in*d_out FLOPs; reads X and dY, writes dW. With a
    bias, db = the sum of dY's n rows: (n - 1)*d_out more FLOPs, d_out more written.

    >>> from symroof.symbols import B, D, H, d_h
    >>> linear_dw(B, D, H*d_h, bias=True).flops
    2*B*D*H*d_h + H*d_h*(B - 1)
    """
    n, d_in, d_out = (as_dimension(v, k) for v, k in ((n, "n"), (d_in, "d_in"), (d_out, "d_out")))
    out = d_in * d_out + (d_out if bias else 0)
    return Cost(flops=count(n * d_in * d_out) + ((n - 1) * d_out if bias else 0),
                weight_bytes=out * _w(grad_bytes, "grad_bytes"),
                act_bytes=n * (d_in + d_out) * _w(x_bytes, "x_bytes"))


def grad_sum(n: Any, k: int = 2, *, x_bytes: Any = 2) -> Cost:
    """Sum of k gradient contributions of n elements: (k - 1)*n FLOPs, reads k*n, writes n.

    >>> from symroof.symbols import B, D
    >>> grad_sum(B*D, 3)
    Cost(flops=2*B*D, act_bytes=8*B*D)
    """
    n = as_dimension(n, "n")
    return Cost(flops=(k - 1) * n, act_bytes=(k + 1) * n * _w(x_bytes, "x_bytes"))


def rmsnorm_backward(rows: Any, d: Any, *, x_bytes: Any = 2, w_bytes: Any = 2,
                     grad_bytes: Any = 2) -> Cost:
    """Backward of y = x / r * w, r = sqrt(mean(x^2) + eps): dx = (g - xhat*mean(g*xhat)) / r
    with g = dy*w, and dw = sum over rows of dy*xhat.

    Per row: recompute r (2d + 2, one sqrt), xhat (d), g (d), mean(g*xhat) (2d), the rest
    (3d): 9d + 2; dw: rows*d products and (rows - 1)*d adds. Reads x, dy and w; writes dx
    and dw.

    >>> from symroof.symbols import B, D
    >>> rmsnorm_backward(B, D).flops
    B*(9*D + 2) + D*(2*B - 1)
    """
    rows, d = as_dimension(rows, "rows"), as_dimension(d, "d")
    return Cost(flops=rows * (9 * d + 2) + (2 * rows - 1) * d - transcendental(rows),
                weight_bytes=d * (_w(w_bytes, "w_bytes") + _w(grad_bytes, "grad_bytes")),
                act_bytes=3 * rows * d * _w(x_bytes, "x_bytes"))


def swiglu_backward(n: Any, *, x_bytes: Any = 2) -> Cost:
    """Backward of a = silu(g)*u: du = da*silu(g), dg = da*u*sig(g)*(1 + g*(1 - sig(g))).

    Per element: sig (neg, exp, add, recip: 4), silu (1), du (1), the derivative (4), dg (2):
    12 FLOPs. Reads g, u, da; writes dg, du.

    >>> from symroof.symbols import B, F
    >>> swiglu_backward(B*F)
    Cost(flops=12*B*F, act_bytes=10*B*F)
    """
    n = as_dimension(n, "n")
    return Cost(flops=12 * n - transcendental(n), act_bytes=5 * n * _w(x_bytes, "x_bytes"))


def softmax_backward(rows: Any, n: Any, *, useful_elements: Any = None,
                     x_bytes: Any = 2, softcap: bool = False) -> Cost:
    """dz = scale * p * (dp - sum(dp*p)) per row of n: 5n - 1 FLOPs (useful: 5u - 1 per row
    of u unmasked entries). Reads p and dp, writes dz. With a softcap on the scores
    (Gemma-2) it also reads the raw scores s and multiplies by 1 - tanh(scale*s/cap)^2:
    6 more per element (scale, divide, tanh, square, subtract, multiply).

    >>> from symroof.symbols import B, S
    >>> softmax_backward(B, S).flops, softmax_backward(B, S, softcap=True).flops
    (B*(5*S - 1), B*(11*S - 1))
    """
    rows, n = as_dimension(rows, "rows"), as_dimension(n, "n")
    u = rows * n if useful_elements is None else as_exact(useful_elements, "useful_elements")
    per = 11 if softcap else 5
    tanh = transcendental(rows * n) if softcap else 0  # the softcap's tanh, recomputed
    useful_tanh = transcendental(u) if softcap else 0
    return Cost(flops=rows * (per * n - 1) - tanh, useful_flops=per * u - rows - useful_tanh,
                act_bytes=(4 if softcap else 3) * rows * n * _w(x_bytes, "x_bytes"))


def attention_matmul_backward(B: Any, T: Any, S: Any, H: Any, G: Any, d_h: Any, *,
                              pairs: Any = None, x_bytes: Any = 2) -> Cost:
    """One gradient matmul of the naive attention core (dp = do V^T, dV = p^T do,
    dq = ds K, dK = ds^T q; each the size of the forward QK^T): 2*B*H*T*S*d_h FLOPs, useful
    2*B*H*pairs*d_h. Each reads or writes one T x S matrix per head, one [B, T, H, d_h] and
    one [B, S, G, d_h] tensor.

    >>> from symroof.symbols import B, S, H, G, d_h
    >>> attention_matmul_backward(B, S, S, H, G, d_h).act_bytes
    2*B*G*S*d_h + 2*B*H*S**2 + 2*B*H*S*d_h
    """
    B, T, S, H, G, d_h = (as_dimension(v, k) for v, k in
                          ((B, "B"), (T, "T"), (S, "S"), (H, "H"), (G, "G"), (d_h, "d_h")))
    pairs = T * S if pairs is None else as_exact(pairs, "pairs")
    return Cost(flops=mac_flops(B * H * T * S * d_h), useful_flops=mac_flops(B * H * pairs * d_h),
                act_bytes=(B * H * T * S + B * T * H * d_h + B * S * G * d_h)
                * _w(x_bytes, "x_bytes"))


def flash_attention_backward(B: Any, T: Any, S: Any, H: Any, G: Any, d_h: Any, *,
                             pairs: Any = None, x_bytes: Any = 2, softcap: bool = False) -> Cost:
    """FlashAttention-2's backward: per allowed (query, key) pair and head it recomputes
    s = q.k (2d_h) and p = exp(scale*s - lse) (3), then dp = do.v (2d_h), ds = p*(dp - delta)
    *scale (3), dq, dk, dv (2d_h each): 10*d_h + 6; per query row and head
    delta = sum(do*o): 2*d_h - 1. Masked blocks are skipped (executed = useful). Reads q, K,
    V, o, do and the logsumexp; writes dq, dK, dV. A softcap (Gemma-2) adds 6 per pair: the
    capped score's divide, tanh, multiply, and the derivative's square, subtract, multiply.

    >>> from symroof.symbols import B, S, H, G, d_h
    >>> flash_attention_backward(B, S, S, H, G, d_h, pairs=S**2).flops
    B*H*S**2*(10*d_h + 6) + B*H*S*(2*d_h - 1)
    """
    B, T, S, H, G, d_h = (as_dimension(v, k) for v, k in
                          ((B, "B"), (T, "T"), (S, "S"), (H, "H"), (G, "G"), (d_h, "d_h")))
    pairs = T * S if pairs is None else as_exact(pairs, "pairs")
    per_pair = mac_flops(5 * d_h) + 6 + (6 if softcap else 0)  # five matmuls of d_h
    exps = transcendental(B * H * pairs * (2 if softcap else 1))  # exp (and tanh) a pair
    return Cost(flops=B * H * pairs * per_pair + B * T * H * (2 * d_h - 1) - exps,
                act_bytes=(4 * B * T * H * d_h + 4 * B * S * G * d_h + B * T * H)
                * _w(x_bytes, "x_bytes"))


def embedding_backward(n: Any, d: Any, v: Any, *, x_bytes: Any = 2, grad_bytes: Any = 2,
                       accumulate: bool = False, scaled: bool = False) -> Cost:
    """Scatter-add of n gradient rows of width d into the [v, d] embedding gradient: n*d
    FLOPs; reads the n rows, writes the gradient (``accumulate``: a tied embedding adds into
    the lm_head's gradient, which it also reads). ``scaled`` (Gemma's sqrt(D) on the
    embedding): the rows are multiplied by it first, n*d more.

    >>> from symroof.symbols import B, S, D, V
    >>> embedding_backward(B*S, D, V, accumulate=True)
    Cost(flops=B*D*S, weight_bytes=4*D*V, act_bytes=2*B*D*S)
    """
    n, d, v = as_dimension(n, "n"), as_dimension(d, "d"), as_dimension(v, "v")
    return Cost(flops=(2 if scaled else 1) * n * d, weight_bytes=(2 if accumulate else 1) * v
                * d * _w(grad_bytes, "grad_bytes"), act_bytes=n * d * _w(x_bytes, "x_bytes"))


def cross_entropy(rows: Any, v: Any, *, x_bytes: Any = 2) -> Cost:
    """Mean softmax cross-entropy of ``rows`` rows of v logits: per row max (v - 1),
    subtract (v), exp (v), sum (v - 1), log, add the max, subtract the target's logit (3):
    4v + 1; the mean: rows - 1 adds and a divide. Reads the logits; writes the logsumexp per
    row (the backward reads it) and the loss.

    >>> from symroof.symbols import B, S, V
    >>> cross_entropy(B*S, V).flops
    B*S*(4*V + 1) + B*S
    """
    rows, v = as_dimension(rows, "rows"), as_dimension(v, "v")
    return Cost(flops=rows * (4 * v + 1) + rows - transcendental(rows * (v + 1)),  # exp, log
                act_bytes=(rows * v + rows + 1) * _w(x_bytes, "x_bytes"))


def cross_entropy_backward(rows: Any, v: Any, *, x_bytes: Any = 2) -> Cost:
    """d(loss)/d(logits) = (softmax - onehot(target)) / rows: per row subtract the
    logsumexp (v), exp (v), subtract 1 at the target (1), scale by 1/rows (v): 3v + 1.
    Reads the logits and the logsumexp, writes the gradient.

    >>> from symroof.symbols import B, S, V
    >>> cross_entropy_backward(B*S, V).flops
    B*S*(3*V + 1)
    """
    rows, v = as_dimension(rows, "rows"), as_dimension(v, "v")
    return Cost(flops=rows * (3 * v + 1) - transcendental(rows * v),  # an exp a logit
                act_bytes=(2 * rows * v + rows) * _w(x_bytes, "x_bytes"))


def adam(params: Any, *, w_bytes: Any = 2, grad_bytes: Any = 2, moment_bytes: Any = 4,
         master_bytes: Any = 0) -> Cost:
    """One Adam update of P parameters: ``ADAM_FLOPS`` = 14 FLOPs each (the step's scalar
    bias corrections are not counted). Reads the parameters, gradients and both moments,
    writes the parameters and both moments. With a master copy (``master_bytes`` > 0) it
    reads and writes the master instead and writes the parameters cast from it.

    >>> from symroof.symbols import N
    >>> adam(N).weight_bytes                    # 2 + 2 + 4 + 4 read, 2 + 4 + 4 written
    22*N
    >>> adam(N, master_bytes=4).weight_bytes    # 4 + 2 + 4 + 4 read, 4 + 4 + 4 + 2 written
    28*N
    """
    P = as_dimension(params, "params")
    wb, gb, mb = _w(w_bytes, "w_bytes"), _w(grad_bytes, "grad_bytes"), _w(moment_bytes,
                                                                          "moment_bytes")
    master = as_exact(master_bytes, "master_bytes")
    if master.is_negative:
        raise ValueError(f"master_bytes must be 0 or a positive width, got {master_bytes!r}")
    per = gb + 4 * mb + (2 * master + wb if master != 0 else 2 * wb)
    return Cost(flops=ADAM_FLOPS * P, weight_bytes=P * per)
