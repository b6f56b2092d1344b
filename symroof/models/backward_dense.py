"""Backward ops of the dense families' blocks (GPT-2, GPT-NeoX, Gemma, Gemma-2, Phi-3,
Qwen3): LayerNorm, the activations gated or not, softcapping, learned positions. One small
function each, returning a ``Cost``; the conventions are :mod:`symroof.models.backward`'s.

FLOPs per element, as the NumPy twin executes them (docs/accounting.md, "Backward"):

- an activation's derivative: silu' = sig*(1 + g*(1 - sig)) 8 (sig: neg, exp, add, recip;
  then sub, mul, add, mul); gelu' (erf) = cdf + g*pdf 10 (cdf: mul, erf, add, mul; pdf:
  mul, mul, exp, mul; then mul, add); gelu_tanh' 16 (g^2, g^3, 0.044715 g^3, add, times c,
  tanh, 0.5*(1 + t): 8; 1 - t^2: 2; 1 + 3*0.044715*g^2: 2; three multiplies and the add: 4);
  a gated one also needs act(g) (one more multiply on the shared part).

>>> from symroof.symbols import B, F
>>> activation_backward("silu", gated=True, n=B*F)      # SwiGLU's 12
Cost(flops=12*B*F, act_bytes=10*B*F)
"""

from __future__ import annotations

from typing import Any

from ..cost import Cost, as_dimension
from .backward import _w, rmsnorm_backward
from .rows import transcendental

__all__ = ["ACT_GRAD_FLOPS", "ACT_GRAD_TRANSCENDENTALS", "layernorm_backward", "norm_backward",
           "activation_backward", "softcap_backward", "pos_embed_backward"]

#: activation -> FLOPs per element of its derivative (the value act(g) costs 1 more).
ACT_GRAD_FLOPS = {"silu": 8, "gelu": 10, "gelu_tanh": 16}
#: activation -> exp, tanh or erf evaluations among them (silu': the sigmoid's exp; gelu':
#: the cdf's erf and the pdf's exp; gelu_tanh': one tanh), left out under "apart"
ACT_GRAD_TRANSCENDENTALS = {"silu": 1, "gelu": 2, "gelu_tanh": 1}


def layernorm_backward(rows: Any, d: Any, *, x_bytes: Any = 2, w_bytes: Any = 2,
                       grad_bytes: Any = 2) -> Cost:
    """Backward of y = xhat*w + b, xhat = (x - mean)/std: with g = dy*w,
    dx = (g - mean(g) - xhat*mean(g*xhat))/std; dw = sum of dy*xhat, db = sum of dy.

    Per row: recompute the mean (d), centre (d), variance (2d), std (2: + eps, sqrt), xhat
    (d); g (d), mean(g) (d), mean(g*xhat) (2d), dx (4d): 13d + 2; dw: rows*d products and
    (rows - 1)*d adds; db: (rows - 1)*d adds. Reads x, dy and w; writes dx, dw and db.

    >>> from symroof.symbols import B, D
    >>> layernorm_backward(B, D).flops
    B*(13*D + 2) + D*(3*B - 2)
    """
    rows, d = as_dimension(rows, "rows"), as_dimension(d, "d")
    return Cost(flops=rows * (13 * d + 2) + (3 * rows - 2) * d - transcendental(rows),
                weight_bytes=d * (_w(w_bytes, "w_bytes") + 2 * _w(grad_bytes, "grad_bytes")),
                act_bytes=3 * rows * d * _w(x_bytes, "x_bytes"))


def norm_backward(kind: str, rows: Any, d: Any, *, x_bytes: Any = 2, w_bytes: Any = 2,
                  grad_bytes: Any = 2) -> Cost:
    """The backward of a norm of ``kind`` "rms" or "layer" (:func:`layernorm_backward`).

    >>> from symroof.symbols import B, D
    >>> norm_backward("rms", B, D).flops
    B*(9*D + 2) + D*(2*B - 1)
    """
    fn = rmsnorm_backward if kind == "rms" else layernorm_backward
    return fn(rows, d, x_bytes=x_bytes, w_bytes=w_bytes, grad_bytes=grad_bytes)


def activation_backward(act: str, *, gated: bool, n: Any, x_bytes: Any = 2) -> Cost:
    """Backward of a = act(g)*u (gated: du = da*act(g), dg = da*u*act'(g); reads g, u, da,
    writes dg, du) or a = act(u) (du = da*act'(u); reads u, da, writes du), over n elements:
    ``ACT_GRAD_FLOPS[act]`` + 4 per element gated, + 1 ungated.

    >>> from symroof.symbols import B, F
    >>> activation_backward("gelu", gated=False, n=B*F)
    Cost(flops=11*B*F, act_bytes=6*B*F)
    """
    n = as_dimension(n, "n")
    per = ACT_GRAD_FLOPS[act] + (1 + 3 if gated else 1)
    return Cost(flops=per * n - transcendental(ACT_GRAD_TRANSCENDENTALS[act] * n),
                act_bytes=(5 if gated else 3) * n * _w(x_bytes, "x_bytes"))


def softcap_backward(n: Any, *, x_bytes: Any = 2) -> Cost:
    """Backward of z = cap*tanh(x/cap) from the capped values: t = z/cap, dx = dz*(1 - t^2):
    4 FLOPs per element; reads z and dz, writes dx (Gemma-2's final logits).

    >>> from symroof.symbols import B, V
    >>> softcap_backward(B*V)
    Cost(flops=4*B*V, act_bytes=6*B*V)
    """
    n = as_dimension(n, "n")
    return Cost(flops=4 * n, act_bytes=3 * n * _w(x_bytes, "x_bytes"))


def pos_embed_backward(B: Any, T: Any, D: Any, *, x_bytes: Any = 2,
                       grad_bytes: Any = 2) -> Cost:
    """Gradient of GPT-2's learned positions: the sum over the B sequences of dx per position,
    (B - 1)*T*D adds; reads dx, writes the T rows of the gradient (the rows no position of
    the step used stay zero).

    >>> from symroof.symbols import B, S, D
    >>> pos_embed_backward(B, S, D)
    Cost(flops=D*S*(B - 1), weight_bytes=2*D*S, act_bytes=2*B*D*S)
    """
    B, T, D = as_dimension(B, "B"), as_dimension(T, "T"), as_dimension(D, "D")
    return Cost(flops=(B - 1) * T * D, weight_bytes=T * D * _w(grad_bytes, "grad_bytes"),
                act_bytes=B * T * D * _w(x_bytes, "x_bytes"))
