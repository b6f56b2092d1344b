"""Backward rows of a mixture-of-experts layer in training (docs/accounting.md, "Training
MoE and MLA"; the block's graph: :mod:`symroof.models.training_graph`; the NumPy twin:
:mod:`symroof.numeric.train_moe`).

n = B*S tokens, routed to k of E experts each; an MoE layer's routing is its loads
(:func:`symroof.models.moe_rows.loads`: the n*k assignments, the experts that got any
token), "balanced" by default or the twin's counts. Per MoE layer, backwards:

- ``moe/combine``: dY = dy*w (n*k*D) and dw = dy . Y (n*k*(2D - 1)); reads dy, Y, w,
  writes dY, dw;
- ``moe/shared/scale`` (Qwen2-MoE's gate y = ys*sigmoid(x . w)): per token the gate
  recomputed (2D + 4), dys = dy*gate (D), d(gate) = dy . ys (2D - 1), dz (3), dx = dz w
  (2D), dw = x^T dz (2D): 9D + 6; reads x, w, ys, dy, writes dys, dx, dw;
- ``moe/shared/...``: the shared expert's gated backward on every token;
- ``moe/down/dx`` ... ``moe/gate_up_sum``: each expert's on its own tokens: FLOPs follow
  the assignments, weight (and gradient) bytes the experts that got a token;
- ``moe/route``: :func:`route_backward_flops` per token; reads the logits and dw, writes
  d(logits); the top-k choice and the routing bias pass no gradient;
- ``moe/router/dx``, ``moe/router/dw``; ``moe/dx_sum`` adds k + 1 (+ 1 shared, + 1 its
  gate) contributions to d(h) per token.

>>> from symroof.models import model
>>> rows = moe_backward(model("mixtral-8x7b"), 1, 1, None, 2)
>>> rows["moe/down/dw"].flops == rows["moe/down/dx"].flops == 2 * 2 * 4096 * 14336
True
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from ..cost import Cost
from . import backward as bw
from .moe_rows import loads

__all__ = ["route_backward_flops", "moe_backward"]


def route_backward_flops(moe: Any) -> sp.Expr:
    """FLOPs per token of d(logits) from the k weights' gradient: the scores recomputed
    (softmax 5E - 2, sigmoid 4E), the scale (k), the renormalisation (6k - 2: the sum
    k - 1, the k weights k, their product with the gradient k, its sum k - 1, subtract k,
    divide k), then softmax's
    backward s*(ds - sum(ds*s)) (4E - 1) or sigmoid's ds*s*(1 - s) (3E).

    >>> from symroof.models.spec import MoE
    >>> route_backward_flops(MoE(E=8, k=2, F=14336, norm_topk=True))    # 9*8 - 3 + 6*2 - 2
    79
    """
    E, k = moe.E, moe.k
    flops = 9 * E - 3 if moe.router == "softmax" else 7 * E
    flops += k if moe.scale != 1 else 0
    return flops + (6 * k - 2 if moe.norm_topk else 0)


def _gated(n: Any, D: Any, F: Any, ab: Any, wb: Any, gb: Any, read: Any = 1
           ) -> dict[str, Cost]:
    """A gated MLP's backward on n tokens (down, SwiGLU, up, gate, their sum); ``read``
    matrices of each kind (experts with a token) read and their gradients written."""
    def dx(d_in: Any, d_out: Any) -> Cost:
        return Cost(flops=2 * n * d_in * d_out, weight_bytes=read * d_in * d_out * wb,
                    act_bytes=n * (d_in + d_out) * ab)

    def dw(d_in: Any, d_out: Any) -> Cost:
        return Cost(flops=2 * n * d_in * d_out, weight_bytes=read * d_in * d_out * gb,
                    act_bytes=n * (d_in + d_out) * ab)

    return {"down/dx": dx(F, D), "down/dw": dw(F, D),
            "swiglu": bw.swiglu_backward(n * F, x_bytes=ab),
            "up/dx": dx(D, F), "up/dw": dw(D, F), "gate/dx": dx(D, F), "gate/dw": dw(D, F),
            "gate_up_sum": bw.grad_sum(n * D, 2, x_bytes=ab)}


def moe_backward(m: Any, n: Any, L_moe: Any, tokens_per_expert: Any, gb: Any
                 ) -> dict[str, Cost]:
    """Every MoE backward row (module docstring), summed over the L_moe MoE layers; keys
    without ``bwd/``; ``tokens_per_expert`` as :meth:`Transformer.ops` takes it.

    >>> from symroof.models import model
    >>> m = model("mixtral-8x7b")          # 2 tokens, both to experts 0 and 1: 2 read
    >>> moe_backward(m, 2, 1, [[2, 2, 0, 0, 0, 0, 0, 0]], 2)["moe/up/dw"].weight_bytes
    234881024
    """
    moe, D, ab, wb = m.moe, m.D, m.act_bytes, m.w_bytes
    E, k, shared = moe.E, moe.k, moe.shared_F != 0
    layers = int(L_moe) if sp.sympify(L_moe).is_Integer else None
    if layers is None and tokens_per_expert not in (None, "balanced", "worst"):
        raise ValueError("per-layer tokens_per_expert needs a number of layers")
    experts = dict.fromkeys(_gated(1, D, moe.F, ab, wb, gb), Cost())
    for assigned, read, _ in loads(n, E, k, layers or 1, tokens_per_expert):
        for key, cost in _gated(assigned, D, moe.F, ab, wb, gb, read).items():
            experts[key] += cost
    scale = 1 if layers else L_moe
    rows = {"moe/combine": L_moe * Cost(flops=n * k * (3 * D - 1),
                                        act_bytes=(n * D + 2 * n * k * D + 2 * n * k) * ab)}
    if moe.shared_gate:  # y = ys * sigmoid(x . w): shared_scale_flops per token
        rows["moe/shared/scale"] = L_moe * Cost(
            flops=n * (9 * D + 6), weight_bytes=D * (wb + gb), act_bytes=5 * n * D * ab)
    if shared:
        rows |= {f"moe/shared/{key}": L_moe * cost
                 for key, cost in _gated(n, D, moe.shared_F, ab, wb, gb).items()}
    rows |= {f"moe/{key}": scale * cost for key, cost in experts.items()}
    rows["moe/route"] = L_moe * Cost(flops=n * route_backward_flops(moe),
                                     act_bytes=n * (2 * E + k) * ab)
    rows["moe/router/dx"] = L_moe * bw.linear_dx(n, D, E, x_bytes=ab, w_bytes=wb)
    rows["moe/router/dw"] = L_moe * bw.linear_dw(n, D, E, x_bytes=ab, grad_bytes=gb)
    parts = k + 1 + (1 if shared else 0) + (1 if moe.shared_gate else 0)
    rows["moe/dx_sum"] = L_moe * bw.grad_sum(n * D, parts, x_bytes=ab)
    return rows
