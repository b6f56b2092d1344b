"""The MLP of one layer in the NumPy decoder: a dense MLP (gated or not, gate and up fused
or not, biases or not) or a mixture of experts that routes real tokens and runs each
expert on the tokens routed to it only.

Routing (counted under ``moe/route``): softmax over the E logits (5E - 2 per token: max,
subtract, exp, sum, divide) or a sigmoid per expert (4E: negate, exp, add 1, reciprocal);
the routing bias added to the scores used for the choice (E); with groups, each group
scored by the sum of its two best scores (1 add per group) and the k experts chosen in the
``topk_groups`` best groups; top-k itself is selection (0 FLOPs); the k weights are the
chosen scores, renormalised (k - 1 + k) and scaled (k) where the model says so.
"""

from __future__ import annotations

import numpy as np

from . import layers
from .config import Config

__all__ = ["dense", "moe", "act_key"]


def act_key(act: str, gated: bool) -> str:
    """The activation row: swiglu, geglu (gated), silu or gelu."""
    if gated:
        return "swiglu" if act == "silu" else "geglu"
    return "silu" if act == "silu" else "gelu"


def dense(scope, p: dict, cfg: Config, h: np.ndarray, prefix: str = "mlp",
          gated: bool | None = None, fused: bool | None = None) -> np.ndarray:
    """act(h W_gate) * h W_up -> W_down (gated), or act(h W_up) -> W_down.

    >>> from symroof.numeric import TINY, Counter, init_params
    >>> cfg, c = TINY.replace(gated=False, act="gelu"), Counter()
    >>> y = dense(c.op, init_params(cfg)["layers"][0], cfg, np.ones((1, 1, 64)))
    >>> list(c.rows), c.rows["mlp/gelu"]["flops"]          # 5 per element of F
    (['mlp/up', 'mlp/gelu', 'mlp/down'], 860)
    """
    gated = cfg.gated if gated is None else gated
    fused = cfg.fused_gate_up if fused is None else fused
    key = act_key(cfg.act, gated)
    if not gated:
        with scope(f"{prefix}/up") as ops:
            u = layers.linear(ops, h, p["w_up"], p.get("b_up"))  # (.., F)
        g, u = u, None
    elif fused:
        with scope(f"{prefix}/gate_up") as ops:
            gu = layers.linear(ops, h, p["w_gate_up"], p.get("b_gate_up"))  # (.., 2F)
        g, u = np.split(gu, 2, axis=-1)  # selection
    else:
        with scope(f"{prefix}/gate") as ops:
            g = layers.linear(ops, h, p["w_gate"], p.get("b_gate"))  # (.., F)
        with scope(f"{prefix}/up") as ops:
            u = layers.linear(ops, h, p["w_up"], p.get("b_up"))  # (.., F)
    with scope(f"{prefix}/{key}") as ops:
        a = layers.activation(ops, cfg.act, g, u)
    with scope(f"{prefix}/down") as ops:
        return layers.linear(ops, a, p["w_down"], p.get("b_down"))  # (.., D)


def _choose(scores: np.ndarray, spec, ops) -> np.ndarray:
    """Indices (n, k) of the chosen experts, best first (stable on ties)."""
    n, E = scores.shape
    if spec.groups > 1:
        g = scores.reshape(n, spec.groups, E // spec.groups)  # (n, groups, E/groups)
        top2 = -np.sort(-g, axis=-1)[..., :2]  # selection
        group_score = ops.add(top2[..., 0], top2[..., 1])  # (n, groups): 1 add each
        best = np.argsort(-group_score, axis=-1, kind="stable")[:, :spec.topk_groups]
        allowed = np.zeros((n, spec.groups), dtype=bool)
        np.put_along_axis(allowed, best, True, axis=-1)
        scores = np.where(np.repeat(allowed, E // spec.groups, axis=-1), scores, -np.inf)
    return np.argsort(-scores, axis=-1, kind="stable")[:, :spec.k]


def _route(ops, spec, logits: np.ndarray, bias: np.ndarray | None):
    """(indices (n, k), weights (n, k)) from the router logits (n, E)."""
    ops.read(logits, "act")
    if spec.router == "softmax":
        e = ops.exp(ops.sub(logits, ops.max(logits)))
        scores = ops.div(e, ops.sum(e))
    else:
        scores = ops.recip(ops.add(ops.exp(ops.neg(logits)), 1.0))
    choice = scores
    if bias is not None:
        ops.read(bias, "weight")
        choice = ops.add(scores, bias)
    idx = _choose(choice, spec, ops)
    w = np.take_along_axis(scores, idx, axis=-1)  # (n, k): gather
    if spec.norm_topk:
        w = ops.div(w, ops.sum(w))
    if spec.scale != 1:
        w = ops.mul(w, spec.scale)
    ops.write(w, "act")
    return idx, w


def moe(scope, p: dict, cfg: Config, h: np.ndarray, trace: list | None = None) -> np.ndarray:
    """Route each token of h (B, T, D) to k experts, run every expert on its own tokens,
    combine with the routing weights (+ the shared expert). Appends the tokens each expert
    got (E counts) to ``trace``.

    >>> from symroof.numeric import TINY, MoESpec, init_params
    >>> from symroof.numeric.primitives import PLAIN
    >>> cfg, trace = TINY.replace(moe=MoESpec(E=4, k=2, F=8)), []
    >>> h = np.random.default_rng(0).standard_normal((1, 3, 64))
    >>> _ = moe(lambda key: PLAIN, init_params(cfg)["layers"][0], cfg, h, trace)
    >>> int(trace[0].sum())                                  # 3 tokens x 2 experts
    6
    """
    spec, (B, T, D) = cfg.moe, h.shape
    x = h.reshape(B * T, D)  # (n, D)
    with scope("moe/router") as ops:
        logits = layers.linear(ops, x, p["w_router"])  # (n, E)
    with scope("moe/route") as ops:
        idx, w = _route(ops, spec, logits, p.get("router_bias"))
    if trace is not None:
        trace.append(np.bincount(idx.ravel(), minlength=spec.E))
    Y = np.zeros((B * T, spec.k, D), dtype=h.dtype)  # (n, k, D): each token's k outputs
    for e in range(spec.E):
        rows, slots = np.nonzero(idx == e)
        if rows.size:  # an expert no token visits is not run
            Y[rows, slots] = dense(scope, p["experts"][e], cfg, x[rows], "moe", True, False)
    parts = [Y, w]
    if spec.shared_F:
        ys = dense(scope, p["shared"], cfg, x, "moe/shared", True, False)  # (n, D)
        if spec.shared_gate:
            with scope("moe/shared/scale") as ops:
                ops.read(x, "act")
                ops.read(p["w_shared_gate"], "weight")
                ops.read(ys, "act")
                z = ops.matmul(x, p["w_shared_gate"])  # (n, 1): stays on chip
                gate = ops.recip(ops.add(ops.exp(ops.neg(z)), 1.0))
                ys = ops.mul(ys, gate)
                ops.write(ys, "act")
        parts.append(ys)
    with scope("moe/combine") as ops:
        for part in parts:
            ops.read(part, "act")
        y = ops.sum(ops.mul(Y, w[..., None]), axis=1)[:, 0]  # (n, D): k mul, k - 1 add
        if spec.shared_F:
            y = ops.add(y, parts[-1])
        ops.write(y, "act")
    return y.reshape(B, T, D)
