"""Training a mixture-of-experts layer in the NumPy decoder: forward with real routing and
counted backward (numeric.train_layer composes the block into a layer's table).

Forward (the rows of :func:`symroof.numeric.mlp.moe`, counted the same way): the router's
logits, the routing (top-k of the scores on the drawn data), each expert's gate, up,
SwiGLU and down on the tokens routed to it, the shared expert on every token, the
weighted combination. Backward, in reverse (docs/accounting.md, "Training MoE and MLA"):

- ``bwd/moe/combine``: dY_j = dy * w_j (the k outputs of a token) and dw_j = dy . Y_j;
  the shared expert's gradient is dy itself;
- ``bwd/moe/shared/scale`` (Qwen2-MoE's sigmoid gate on the shared expert: its input's
  and its weight's gradient in one row, the gate recomputed);
- ``bwd/moe/shared/...`` and ``bwd/moe/{down,swiglu,up,gate}/...``: each expert's
  backward on its own tokens (an expert no token visited gets a zero gradient, uncounted);
- ``bwd/moe/route``: the scores recomputed from the kept logits, back through the scale,
  the renormalisation and the softmax (or sigmoid) into d(logits); the top-k choice, the
  groups and the routing bias pass no gradient (the bias's gradient is zero);
- ``bwd/moe/router/dx``, ``/dw``; ``bwd/moe/dx_sum`` adds the router's, the shared
  expert's and every routed expert's contribution to d(h) (scatter-adds by token).

Routing indices are integers that move no counted bytes (as in the forward). This module
never imports a formula: every figure comes from the arrays each op touches.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from . import backward as bk
from . import layers
from .config import Config, MoESpec
from .mlp import _route

__all__ = ["moe_ops", "moe_backward", "MOE_READS", "SHARED_READS", "UNCOUNTED"]

#: the tensors an MoE block's backward reads (``x1`` from the attention block before it)
MOE_READS = ("x1", "h2", "logits", "idx", "w", "eg", "eu", "ea", "Y")
#: the shared expert's tensors it reads (and ``ys``, its output, under a gate)
SHARED_READS = ("sg", "su", "sa")
#: tensors kept without counted bytes (integer indices)
UNCOUNTED = ("idx",)


def _experts(idx: np.ndarray, E: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per expert: (rows, slots) of the (token, choice) pairs routed to it."""
    return [np.nonzero(idx == e) for e in range(E)]


def _each(ops, c, idx, fn) -> list:
    """fn(ops, p_e, rows, slots) for every expert some token visits (None for the rest)."""
    return [fn(ops, c.p["experts"][e], rows, slots) if rows.size else None
            for e, (rows, slots) in enumerate(_experts(idx, c.moe.E))]


def _n(h: np.ndarray) -> np.ndarray:
    return h.reshape(-1, h.shape[-1])  # (n, D)


def _down(ops, c, ea, idx):
    Y = np.zeros((idx.shape[0], c.moe.k, c.D))  # (n, k, D): each token's k outputs
    outs = [layers.linear(ops, a, c.p["experts"][e]["w_down"]) if a is not None else None
            for e, a in enumerate(ea)]
    for (rows, slots), y in zip(_experts(idx, c.moe.E), outs):
        if y is not None:
            Y[rows, slots] = y
    return Y


def _combine(ops, c, Y, w, *shared):
    for part in (Y, w, *shared):
        ops.read(part, "act")
    y = ops.sum(ops.mul(Y, w[..., None]), axis=1)[:, 0]  # (n, D): k mul, k - 1 add
    if shared:
        y = ops.add(y, shared[0])
    ops.write(y, "act")
    return y.reshape(-1, c.keep.shape[0], c.D)  # (B, T, D)


def _shared_scale(ops, c, h, ys):
    x, wg = _n(h), c.p["w_shared_gate"]
    ops.read(x, "act")
    ops.read(wg, "weight")
    ops.read(ys, "act")
    z = ops.matmul(x, wg)  # (n, 1): stays on chip
    ys = ops.mul(ys, ops.recip(ops.add(ops.exp(ops.neg(z)), 1.0)))
    ops.write(ys, "act")
    return ys


def shared_scale_backward(ops, x: np.ndarray, wg: np.ndarray, ys: np.ndarray,
                          dy: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Of y = ys * sigmoid(x . wg): the gate recomputed (2D + 4 per token), dys = dy * gate
    (D), d(gate) = dy . ys (2D - 1), dz = d(gate) gate (1 - gate) (3), dx = dz wg^T (2D),
    dwg = x^T dz (2D per token); reads x, wg, ys, dy; writes dys, dx, dwg.

    >>> from symroof.numeric.primitives import PLAIN
    >>> dys, dx, dwg = shared_scale_backward(PLAIN, np.zeros((1, 2)), np.ones((2, 1)),
    ...                                      np.ones((1, 2)), np.ones((1, 2)))
    >>> dys.tolist(), dx.tolist()            # gate 1/2; d(gate) 2, times 1/4
    ([[0.5, 0.5]], [[0.5, 0.5]])
    """
    for a, kind in ((x, "act"), (wg, "weight"), (ys, "act"), (dy, "act")):
        ops.read(a, kind)
    gate = ops.recip(ops.add(ops.exp(ops.neg(ops.matmul(x, wg))), 1.0))  # (n, 1)
    dys = ops.mul(dy, gate)
    dgate = ops.sum(ops.mul(dy, ys))  # (n, 1)
    dz = ops.mul(dgate, ops.mul(gate, ops.sub(1.0, gate)))
    dx, dwg = ops.matmul(dz, wg.T), ops.matmul(x.T, dz)  # (n, D), (D, 1)
    ops.write(dys, "act")
    ops.write(dx, "act")
    ops.write(dwg, "grad")
    return dys, dx, dwg


def moe_ops(cfg: Config) -> dict:
    """The MoE block's own forward ops (inputs, outputs, fn), from the router to the
    combination; the layer's table (numeric.train_layer) adds the MLP norm and the
    residual it shares with the dense MLP block.

    >>> from symroof.numeric import TINY, MoESpec
    >>> list(moe_ops(TINY.replace(moe=MoESpec(E=4, k=2, F=8))))[:3]
    ['moe/router', 'moe/route', 'moe/gate']
    """
    shared = cfg.moe.shared_F > 0
    table = {
        "moe/router": ("h2", "logits", lambda ops, c, h: layers.linear(ops, _n(h),
                                                                        c.p["w_router"])),
        "moe/route": ("logits", "idx w", lambda ops, c, z: _route(ops, c.moe, z,
                                                                  c.p.get("router_bias"))),
        "moe/gate": ("h2 idx", "eg", lambda ops, c, h, idx: _each(
            ops, c, idx, lambda o, p, rows, _: layers.linear(o, _n(h)[rows], p["w_gate"]))),
        "moe/up": ("h2 idx", "eu", lambda ops, c, h, idx: _each(
            ops, c, idx, lambda o, p, rows, _: layers.linear(o, _n(h)[rows], p["w_up"]))),
        "moe/swiglu": ("eg eu", "ea", lambda ops, c, eg, eu: [
            None if g is None else layers.activation(ops, "silu", g, u) for g, u in zip(eg, eu)]),
        "moe/down": ("ea idx", "Y", _down),
    }
    if shared:
        table |= {
            "moe/shared/gate": ("h2", "sg", lambda ops, c, h: layers.linear(
                ops, _n(h), c.p["shared"]["w_gate"])),
            "moe/shared/up": ("h2", "su", lambda ops, c, h: layers.linear(
                ops, _n(h), c.p["shared"]["w_up"])),
            "moe/shared/swiglu": ("sg su", "sa", lambda ops, c, g, u: layers.activation(
                ops, "silu", g, u)),
            "moe/shared/down": ("sa", "ys", lambda ops, c, a: layers.linear(
                ops, a, c.p["shared"]["w_down"])),
        }
    if cfg.moe.shared_gate:  # Qwen2-MoE: sigmoid(x . w) scales the shared expert
        table["moe/shared/scale"] = ("h2 ys", "ysg", _shared_scale)
    out = "ysg" if cfg.moe.shared_gate else "ys"
    table["moe/combine"] = (f"Y w {out}" if shared else "Y w", "y2", _combine)
    return table


def _gated_backward(scope, prefix: str, p: dict, h, g, u, a, dy) -> tuple:
    """One gated expert's backward on its tokens: (dh, its gradients)."""
    grads = {}
    with scope(f"{prefix}/down/dx") as ops:
        da = bk.linear_dx(ops, dy, p["w_down"])
    with scope(f"{prefix}/down/dw") as ops:
        grads["w_down"] = bk.linear_dw(ops, a, dy)
    with scope(f"{prefix}/swiglu") as ops:
        dg, du = bk.swiglu_backward(ops, g, u, da)
    dh = []
    for name, d in (("up", du), ("gate", dg)):
        with scope(f"{prefix}/{name}/dx") as ops:
            dh.append(bk.linear_dx(ops, d, p[f"w_{name}"]))
        with scope(f"{prefix}/{name}/dw") as ops:
            grads[f"w_{name}"] = bk.linear_dw(ops, h, d)
    with scope(f"{prefix}/gate_up_sum") as ops:
        return bk.grad_sum(ops, *dh), grads


def combine_backward(ops, dy: np.ndarray, Y: np.ndarray, w: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Of y = sum_j w_j Y_j: dY_j = dy w_j (n k D), dw_j = dy . Y_j (n k (2D - 1)); reads
    dy, Y, w; writes dY and dw.

    >>> from symroof.numeric import Counter
    >>> c = Counter()
    >>> with c.op("combine") as ops:   # n = 3 tokens, k = 2, D = 4
    ...     dY, dw = combine_backward(ops, np.ones((3, 4)), np.ones((3, 2, 4)), np.ones((3, 2)))
    >>> dw.tolist()[0], c.rows["combine"]["flops"]
    ([4.0, 4.0], 66)
    """
    for x in (dy, Y, w):
        ops.read(x, "act")
    dY = ops.mul(dy[:, None, :], w[..., None])  # (n, k, D)
    dw = ops.sum(ops.mul(Y, dy[:, None, :]), axis=-1)[..., 0]  # (n, k)
    ops.write(dY, "act")
    ops.write(dw, "act")
    return dY, dw


def route_backward(ops, spec: MoESpec, logits: np.ndarray, idx: np.ndarray,
                   dw: np.ndarray) -> np.ndarray:
    """d(logits) from d(weights) (n, k): the scores recomputed (softmax 5E - 2, sigmoid 4E),
    the scale (k), the renormalisation (6k - 2), softmax 4E - 1 or sigmoid 3E per token;
    reads the logits and dw, writes d(logits).

    >>> from symroof.numeric.primitives import PLAIN
    >>> dz = route_backward(PLAIN, MoESpec(E=2, k=1, F=1), np.zeros((1, 2)), np.array([[0]]),
    ...                     np.ones((1, 1)))
    >>> dz.tolist()                          # softmax of two equal logits: p (1 - p) = 1/4
    [[0.25, -0.25]]
    """
    ops.read(logits, "act")
    ops.read(dw, "act")
    if spec.router == "softmax":
        e = ops.exp(ops.sub(logits, ops.max(logits)))  # E - 1, E, E
        s = ops.div(e, ops.sum(e))  # E - 1, E
    else:
        s = ops.recip(ops.add(ops.exp(ops.neg(logits)), 1.0))  # 4E
    d = dw
    if spec.scale != 1:
        d = ops.mul(d, spec.scale)  # k
    if spec.norm_topk:
        w0 = np.take_along_axis(s, idx, axis=-1)  # (n, k): gather
        total = ops.sum(w0)  # k - 1
        w1 = ops.div(w0, total)  # k
        d = ops.div(ops.sub(d, ops.sum(ops.mul(d, w1))), total)  # k, k - 1, k, k
    ds = np.zeros_like(s)
    np.put_along_axis(ds, idx, d, axis=-1)  # (n, E): scatter, selection
    if spec.router == "softmax":
        dz = ops.mul(s, ops.sub(ds, ops.sum(ops.mul(ds, s))))  # E, E - 1, E, E
    else:
        dz = ops.mul(ds, ops.mul(s, ops.sub(1.0, s)))  # 3E
    ops.write(dz, "act")
    return dz


def moe_backward(scope, c: SimpleNamespace, t: dict, dx2: np.ndarray,
                 grads: dict) -> np.ndarray:
    """The MoE block's backward, down to d(x1) (the residual stream after attention);
    fills ``grads`` with the layer's MLP gradients (numeric.train_layer.layer_backward
    runs it)."""
    p, E = c.p, c.moe.E
    dy, h = _n(dx2), _n(t["h2"])
    with scope("bwd/moe/combine") as ops:
        dY, dw = combine_backward(ops, dy, t["Y"], t["w"])
    parts = []
    if c.moe.shared_gate:
        with scope("bwd/moe/shared/scale") as ops:
            dys, dxg, grads["w_shared_gate"] = shared_scale_backward(
                ops, h, p["w_shared_gate"], t["ys"], dy)
        parts.append(dxg)
    if c.moe.shared_F:
        dhs, grads["shared"] = _gated_backward(scope, "bwd/moe/shared", p["shared"], h,
                                               t["sg"], t["su"], t["sa"],
                                               dys if c.moe.shared_gate else dy)
        parts.insert(0, dhs)
    grads["experts"] = [{k: np.zeros_like(v) for k, v in pe.items()} for pe in p["experts"]]
    routed = []
    for e, (rows, slots) in enumerate(_experts(t["idx"], E)):
        if rows.size:
            dh_e, grads["experts"][e] = _gated_backward(
                scope, "bwd/moe", p["experts"][e], h[rows], t["eg"][e], t["eu"][e],
                t["ea"][e], dY[rows, slots])
            routed.append((rows, dh_e))
    with scope("bwd/moe/route") as ops:
        dz = route_backward(ops, c.moe, t["logits"], t["idx"], dw)
    if "router_bias" in p:
        grads["router_bias"] = np.zeros_like(p["router_bias"])  # the choice only: no gradient
    with scope("bwd/moe/router/dx") as ops:
        dh = bk.linear_dx(ops, dz, p["w_router"])
    with scope("bwd/moe/router/dw") as ops:
        grads["w_router"] = bk.linear_dw(ops, h, dz)
    with scope("bwd/moe/dx_sum") as ops:
        for part in (dh, *parts, *(d for _, d in routed)):
            ops.read(part, "act")
        for part in parts:
            dh = ops.add(dh, part)
        for rows, d in routed:
            ops.scatter_add(dh, rows, d)  # one add per element
        ops.write(dh, "act")
    dh2 = dh.reshape(dx2.shape)
    with scope("bwd/mlp_norm") as ops:
        dx1_norm, grads["mlp_norm"] = bk.rmsnorm_backward(ops, t["x1"], p["mlp_norm"], dh2, c.eps)
    with scope("bwd/mlp/residual") as ops:
        return bk.grad_sum(ops, dx2, dx1_norm)
