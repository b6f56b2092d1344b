"""Training the NumPy decoder: forward with a remat policy, loss, counted backward.

One step over tokens (B, T) with next-token targets (B, T); causal, no KV cache (K and V
are activations). Row keys: ``fwd/<op>``, ``fwd/loss``, ``bwd/...``, ``recompute/<op>``
(docs/accounting.md, "Training"). A layer's forward is a table of ops (inputs -> outputs);
the forward keeps the tensors its remat policy names, and each layer's backward first
reruns the ops that produce what the backward reads and was not kept:

- ``none``: keep everything the backward reads;
- ``selective``: all but the softmax output (rerun scores and softmax);
- ``matmul_outputs``: the layer input and the outputs of the weight matmuls;
- ``full``: the layer input only, and rerun the whole layer.

The backward reads only from what was kept or recomputed, so a policy that forgets a
tensor fails; with a counter, every kept tensor is recorded in ``counter.saved`` under the
key of the op that wrote it (``layer_input`` for a layer's input).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from . import backward as bk
from . import layers
from .config import Config
from .counter import Counter
from .model import _check_tokens
from .params import check_params
from .primitives import PLAIN
from .train_moe import blocks

__all__ = ["REMAT", "BACKWARD_READS", "loss_and_grads"]


def _heads(x: np.ndarray, n: int) -> np.ndarray:
    return x.reshape(*x.shape[:2], n, -1)  # (B, T, n, d_h)


def _scores(ops, c, q, k):
    B, T, H, d_h = q.shape
    ops.read(q, "act")
    ops.read(k, "act")
    q = q.reshape(B, T, c.G, H // c.G, d_h)  # (B, T, G, H/G, d_h)
    s = ops.einsum("btgrd,bsgd->bgrts", q, k, valid=c.keep, valid_dims="ts")
    ops.write(s, "act")  # (B, G, H/G, T, S)
    return s


def _av(ops, c, p, v):
    B, G, r, T, S = p.shape
    ops.read(p, "act")
    ops.read(v, "act")
    o = ops.einsum("bgrts,bsgd->btgrd", p, _heads(v, G), valid=c.keep, valid_dims="ts")
    o = o.reshape(B, T, -1)  # (B, T, H*d_h)
    ops.write(o, "act")
    return o


#: op key -> (inputs, outputs, fn(ops, context, *inputs)): one layer's forward, in order.
_LAYER = {
    "attn_norm": ("x", "h1", lambda ops, c, x: layers.rmsnorm(ops, x, c.p["attn_norm"], c.eps)),
    "attn/q_proj": ("h1", "q0", lambda ops, c, h: layers.linear(ops, h, c.p["wq"], c.p.get("bq"))),
    "attn/k_proj": ("h1", "k0", lambda ops, c, h: layers.linear(ops, h, c.p["wk"], c.p.get("bk"))),
    "attn/v_proj": ("h1", "v", lambda ops, c, h: layers.linear(ops, h, c.p["wv"], c.p.get("bv"))),
    "attn/rope": ("q0 k0", "q k", lambda ops, c, q, k: layers.rope(
        ops, _heads(q, c.H), _heads(k, c.G), c.cos, c.sin)),
    "attn/scores": ("q k", "s", _scores),
    "attn/softmax": ("s", "p", lambda ops, c, s: layers.softmax(ops, s, c.keep, c.d_h)),
    "attn/av": ("p v", "o", _av),
    "attn/o_proj": ("o", "y", lambda ops, c, o: layers.linear(ops, o, c.p["wo"])),
    "attn/residual": ("x y", "x1", lambda ops, c, x, y: layers.residual(ops, x, y)),
    "mlp_norm": ("x1", "h2", lambda ops, c, x: layers.rmsnorm(ops, x, c.p["mlp_norm"], c.eps)),
    "mlp/gate": ("h2", "g", lambda ops, c, h: layers.linear(ops, h, c.p["w_gate"])),
    "mlp/up": ("h2", "u", lambda ops, c, h: layers.linear(ops, h, c.p["w_up"])),
    "mlp/swiglu": ("g u", "a", lambda ops, c, g, u: layers.swiglu(ops, g, u)),
    "mlp/down": ("a", "y2", lambda ops, c, a: layers.linear(ops, a, c.p["w_down"])),
    "mlp/residual": ("x1 y2", "x2", lambda ops, c, x, y: layers.residual(ops, x, y)),
}
#: tensor -> the key it is recorded under when kept (the op that wrote it).
_WRITER = {"x": "layer_input"} | {out: key for key, (_, outs, _) in _LAYER.items()
                                  for out in outs.split()}
#: the tensors a layer's backward reads (``_layer_backward``; a test holds it to this).
BACKWARD_READS = ("x", "h1", "q", "k", "v", "p", "o", "x1", "h2", "g", "u", "a")
#: remat policy -> the tensors the forward keeps per layer.
REMAT = {
    "none": BACKWARD_READS,
    "selective": tuple(t for t in BACKWARD_READS if t != "p"),
    "matmul_outputs": ("x", "q0", "k0", "v", "y", "g", "u"),
    "full": ("x",),
}


def _kept(remat: Any) -> tuple[str, ...]:
    """The tensors a policy keeps per layer; a tuple names them by the keys they are
    recorded under (``"layer_input"``, ``"mlp/gate"``, ...)."""
    if isinstance(remat, (tuple, list)):
        by_key: dict[str, list[str]] = {}  # a key -> every tensor its op wrote (rope: q, k)
        for t, key in _WRITER.items():
            by_key.setdefault(key, []).append(t)
        unknown = [k for k in remat if k not in by_key]
        if unknown or "layer_input" not in remat:
            raise ValueError(f"remat={tuple(remat)!r}: keep 'layer_input' and tensors of "
                             f"{list(by_key)}; unknown: {unknown}")
        return tuple(dict.fromkeys(t for k in remat for t in by_key[k]))
    if remat not in REMAT:
        raise ValueError(f"unknown remat policy {remat!r}; known: {list(REMAT)} or a tuple of "
                         "kept tensors")
    return REMAT[remat]


def _rerun_plan(remat: Any) -> list[str]:
    """The layer ops to rerun before the backward: all of them for ``full``, else those
    that produce a tensor the backward reads and the policy did not keep (transitively)."""
    if isinstance(remat, str) and remat == "full":
        return list(_LAYER)
    return plan_reruns(_LAYER, BACKWARD_READS, _kept(remat))


def plan_reruns(table: dict, reads: tuple[str, ...], kept: tuple[str, ...]) -> list[str]:
    """The ops of a layer ``table`` to rerun so that every tensor in ``reads`` exists
    again, each rebuilt from the ``kept`` ones (transitively), in forward order."""
    have = set(kept)
    want, plan = set(reads) - have, []
    for key in reversed(table):
        inputs, outputs, _ = table[key]
        if want & set(outputs.split()):
            plan.append(key)
            want |= set(inputs.split()) - have
    return plan[::-1]


#: the Llama layer's training interface; MoE and MLA layers bring their own
#: (numeric.train_moe): forward table, kept tensors, what they record, reruns, backward.
_LLAMA_BLOCK = SimpleNamespace(
    table=_LAYER, kept=lambda remat: _kept(remat),
    record=lambda keep, t, names: [keep(_WRITER[name], t[name]) for name in names],
    plan=lambda remat: _rerun_plan(remat),
    backward=lambda scope, c, t, dx, grads: _layer_backward(scope, c, t, dx, grads))


def _run(scope, prefix: str, c, t: dict, keys) -> None:
    for key in keys:
        inputs, outputs, fn = c.block.table[key]
        with scope(prefix + key) as ops:
            out = fn(ops, c, *(t[name] for name in inputs.split()))
        t.update(zip(outputs.split(), out if isinstance(out, tuple) else (out,)))


def _layer_backward(scope, c, t, dx2, grads):
    """Gradients of one layer from the tensors in ``t``; returns d(layer input)."""
    return _attention_backward(scope, c, t, _mlp_backward(scope, c, t, dx2, grads), grads)


def _mlp_backward(scope, c, t, dx2, grads):
    """The MLP block's backward, down to d(x1) (the residual stream after attention)."""
    p = c.p
    with scope("bwd/mlp/down/dx") as ops:
        da = bk.linear_dx(ops, dx2, p["w_down"])
    with scope("bwd/mlp/down/dw") as ops:
        grads["w_down"] = bk.linear_dw(ops, t["a"], dx2)
    with scope("bwd/mlp/swiglu") as ops:
        dg, du = bk.swiglu_backward(ops, t["g"], t["u"], da)
    dh = []
    for name, d in (("up", du), ("gate", dg)):
        with scope(f"bwd/mlp/{name}/dx") as ops:
            dh.append(bk.linear_dx(ops, d, p[f"w_{name}"]))
        with scope(f"bwd/mlp/{name}/dw") as ops:
            grads[f"w_{name}"] = bk.linear_dw(ops, t["h2"], d)
    with scope("bwd/mlp/gate_up_sum") as ops:
        dh2 = bk.grad_sum(ops, *dh)
    with scope("bwd/mlp_norm") as ops:
        dx1_norm, grads["mlp_norm"] = bk.rmsnorm_backward(ops, t["x1"], p["mlp_norm"], dh2, c.eps)
    with scope("bwd/mlp/residual") as ops:
        return bk.grad_sum(ops, dx2, dx1_norm)


def _attention_backward(scope, c, t, dx1, grads):
    """The attention block's backward, down to d(layer input)."""
    p, keep, G, H = c.p, c.keep, c.G, c.H
    bias = "bq" in p
    with scope("bwd/attn/o_proj/dx") as ops:
        do = bk.linear_dx(ops, dx1, p["wo"])
    with scope("bwd/attn/o_proj/dw") as ops:
        grads["wo"] = bk.linear_dw(ops, t["o"], dx1)
    B, T = do.shape[:2]
    do = do.reshape(B, T, G, H // G, c.d_h)  # (B, T, G, H/G, d_h)
    q, k, v = t["q"].reshape(do.shape), t["k"], _heads(t["v"], G)  # k, v: (B, S, G, d_h)
    with scope("bwd/attn/av/dp") as ops:
        dp = bk.attention_grad(ops, "btgrd,bsgd->bgrts", do, v, keep)  # (B, G, H/G, T, S)
    with scope("bwd/attn/av/dv") as ops:
        dv = bk.attention_grad(ops, "bgrts,btgrd->bsgd", t["p"], do, keep)  # (B, S, G, d_h)
    with scope("bwd/attn/softmax") as ops:
        ds = bk.softmax_backward(ops, t["p"], dp, keep, c.d_h)
    with scope("bwd/attn/scores/dq") as ops:
        dq = bk.attention_grad(ops, "bgrts,bsgd->btgrd", ds, k, keep)  # (B, T, G, H/G, d_h)
    with scope("bwd/attn/scores/dk") as ops:
        dk = bk.attention_grad(ops, "bgrts,btgrd->bsgd", ds, q, keep)  # (B, S, G, d_h)
    with scope("bwd/attn/rope") as ops:
        dq, dk = bk.rope_backward(ops, dq.reshape(B, T, H, c.d_h), dk, c.cos, c.sin)
    dh = []
    for name, d in (("v", dv), ("k", dk), ("q", dq)):
        d = d.reshape(B, T, -1)  # (B, T, n*d_h)
        with scope(f"bwd/attn/{name}_proj/dx") as ops:
            dh.append(bk.linear_dx(ops, d, p[f"w{name}"]))
        with scope(f"bwd/attn/{name}_proj/dw") as ops:
            out = bk.linear_dw(ops, t["h1"], d, bias)
        if bias:
            grads[f"w{name}"], grads[f"b{name}"] = out
        else:
            grads[f"w{name}"] = out
    with scope("bwd/attn/qkv_sum") as ops:
        dh1 = bk.grad_sum(ops, *dh)
    with scope("bwd/attn_norm") as ops:
        dx_norm, grads["attn_norm"] = bk.rmsnorm_backward(ops, t["x"], p["attn_norm"], dh1, c.eps)
    with scope("bwd/attn/residual") as ops:
        return bk.grad_sum(ops, dx1, dx_norm)


#: the Llama layer's parts that MoE and MLA blocks share (numeric.train_moe.blocks)
LLAMA_PARTS = SimpleNamespace(layer=_LAYER, scores=_scores, av=_av, plan=plan_reruns,
                              mlp_backward=_mlp_backward,
                              attention_backward=_attention_backward)


def loss_and_grads(params: dict[str, Any], cfg: Config, tokens: Any, targets: Any,
                   remat: str = "none", counter: Counter | None = None,
                   trace: list | None = None) -> tuple[float, dict[str, Any]]:
    """Mean next-token cross-entropy of ``tokens`` (B, T) against ``targets`` (B, T) and its
    gradient for every parameter (a dict shaped like ``params``), under a remat policy.
    ``trace``: a list that gets, per MoE layer, the tokens each expert was routed (forward).

    >>> from symroof.numeric import TINY, init_params
    >>> loss, grads = loss_and_grads(init_params(TINY), TINY, [[1, 2, 3]], [[2, 3, 4]])
    >>> grads["layers"][1]["w_gate"].shape, round(loss, 3) > 0
    ((64, 172), True)
    """
    if cfg.moe is None and cfg.mla is None:  # (theirs: train_moe.blocks checks remat)
        _kept(remat)  # a policy name, or a tuple of kept tensors: fails naming it
    check_params(params, cfg)
    untrained = [f for f in cfg.features if f not in ("moe", "mla")]  # train_moe's
    if untrained:
        raise ValueError(f"the training step runs MoE, MLA and the Llama family only; "
                         f"{cfg.name}'s config sets {', '.join(untrained)}")
    tokens = _check_tokens(tokens, cfg)
    if cfg.window is not None and tokens.shape[1] > cfg.window:
        raise ValueError(f"the training step attends to the whole sequence; {tokens.shape[1]} "
                         f"tokens exceed the sliding window of {cfg.window}")
    try:
        targets = _check_tokens(targets, cfg)
    except ValueError as err:
        raise ValueError(str(err).replace("tokens", "targets", 1)) from None
    if targets.shape != tokens.shape:
        raise ValueError(f"targets must have the tokens' shape {tokens.shape}, "
                         f"got {targets.shape}")
    T = tokens.shape[1]
    scope = (lambda key: PLAIN) if counter is None else counter.op
    keep = (lambda key, x: None) if counter is None else counter.keep
    cos, sin = layers.rope_tables(cfg.rotary, cfg.rope_theta, 0, T, params["embed"].dtype)
    mask = np.tril(np.ones((T, T), dtype=bool))  # (T, S): token i sees 0..i
    ctx = [SimpleNamespace(p=p, eps=cfg.eps, H=cfg.H, G=cfg.G, d_h=cfg.d_h, cos=cos, sin=sin,
                           keep=mask, block=_LLAMA_BLOCK, trace=trace)
           for p in params["layers"]]
    if cfg.moe is not None or cfg.mla is not None:  # their own tables and backward
        ctx = blocks(cfg, ctx, remat, LLAMA_PARTS)
    f = _forward(scope, keep, params, cfg, ctx, tokens, targets, remat)
    grads = _backward(scope, params, cfg, ctx, f, tokens, targets, remat)
    grads["layers"] = [{k: g[k] for k in p} for p, g in zip(params["layers"], grads["layers"])]
    return f.loss, {k: grads[k] for k in params}


def _forward(scope, keep, params, cfg: Config, ctx, tokens, targets, remat: str):
    """Embedding, layers (keeping what ``remat`` names), final norm, lm_head, loss."""
    with scope("fwd/embed") as ops:
        x = params["embed"][tokens]  # (B, T, D): a gather, 0 FLOPs
        ops.read(x, "weight")
        ops.write(x, "act")
    kept = []
    for c in ctx:
        t, names = {"x": x}, c.block.kept(remat)
        _run(scope, "fwd/", c, t, c.block.table)
        kept.append({name: t[name] for name in names})
        c.block.record(keep, t, names)
        x = t["x2"]
    W = params["embed"].T if cfg.tied else params["lm_head"]  # (D, V)
    with scope("fwd/final_norm") as ops:
        hf = layers.rmsnorm(ops, x, params["final_norm"], cfg.eps)  # (B, T, D)
    with scope("fwd/lm_head") as ops:
        logits = layers.linear(ops, hf, W)  # (B, T, V)
    with scope("fwd/loss") as ops:
        loss, lse = bk.cross_entropy(ops, logits, targets)  # lse: (B*T, 1)
    for key, arr in (("final_input", x), ("final_norm", hf), ("lm_head", logits), ("loss", lse)):
        keep(key, arr)
    return SimpleNamespace(x=x, hf=hf, W=W, logits=logits, lse=lse, loss=loss, kept=kept)


def _backward(scope, params, cfg: Config, ctx, f, tokens, targets, remat: str):
    """Loss, lm_head and final norm backward, each layer's (after its recomputation), and
    the embedding's scatter-add."""
    grads: dict[str, Any] = {"layers": [{} for _ in ctx]}
    with scope("bwd/loss") as ops:
        dz = bk.cross_entropy_backward(ops, f.logits, f.lse, targets)  # (B, T, V)
    with scope("bwd/lm_head/dx") as ops:
        dhf = bk.linear_dx(ops, dz, f.W)
    with scope("bwd/lm_head/dw") as ops:
        dW = bk.linear_dw(ops, f.hf, dz)  # (D, V)
    grads["embed" if cfg.tied else "lm_head"] = dW.T if cfg.tied else dW
    with scope("bwd/final_norm") as ops:
        dx, grads["final_norm"] = bk.rmsnorm_backward(ops, f.x, params["final_norm"], dhf,
                                                      cfg.eps)
    for c, t, g in reversed(list(zip(ctx, f.kept, grads["layers"]))):
        _run(scope, "recompute/", c, t, c.block.plan(remat))
        dx = c.block.backward(scope, c, t, dx, g)
    if not cfg.tied:
        grads["embed"] = np.zeros_like(params["embed"])  # (V, D)
    with scope("bwd/embed") as ops:
        bk.embedding_backward(ops, grads["embed"], tokens, dx, accumulate=cfg.tied)
    return grads
