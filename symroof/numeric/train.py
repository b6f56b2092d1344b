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
from . import backward_dense as bd
from . import layers
from . import train_layer as tl
from . import train_moe as tmoe
from .attention import step
from .config import Config
from .counter import Counter
from .model import _check_tokens, _embed
from .params import check_params
from .primitives import PLAIN

__all__ = ["REMAT", "backward_reads", "loss_and_grads"]


#: remat policy -> what it keeps per layer (docs/accounting.md, "Remat policies").
REMAT = {
    "none": "every tensor the backward reads",
    "selective": "all but the S x S scores and softmax output",
    "matmul_outputs": "the layer input and the outputs of the weight matmuls",
    "full": "the layer input",
}


#: the remat policies MoE and MLA layers train under (tuples name the dense layers' tensors)
_BLOCK_POLICIES = ("none", "selective", "matmul_outputs", "full")


def backward_reads(cfg: Config, moe: bool | None = None) -> tuple[str, ...]:
    """The tensors one layer's backward reads for ``cfg`` (a test holds the backward to it);
    an MoE layer's, or with ``moe=False`` a dense one's (default: the config's MoE layers).

    >>> from symroof.numeric import TINY
    >>> backward_reads(TINY)
    ('x', 'h1', 'q', 'k', 'v', 'p', 'o', 'x1', 'h2', 'g', 'u', 'a')
    """
    return tl.backward_reads(cfg, moe)


def _kept(cfg: Config, remat: Any, moe: bool | None = None) -> tuple[str, ...]:
    """The tensors a policy keeps per layer; a tuple names them by the keys they are
    recorded under (``"layer_input"``, ``"mlp/gate"``, ...)."""
    if (cfg.moe is not None or cfg.mla is not None) and (
            not isinstance(remat, str) or remat not in _BLOCK_POLICIES):
        raise ValueError(f"remat={remat!r}: MoE and MLA layers train under "
                         f"{', '.join(_BLOCK_POLICIES)} (kept-tensor tuples name the dense "
                         "layers' tensors)")
    by_key: dict[str, list[str]] = {}
    for t, key in tl.writers(tl.layer_ops(cfg, moe)).items():
        by_key.setdefault(key, []).append(t)
    if isinstance(remat, (tuple, list)):
        known = [k for k in by_key if k != "mlp/residual"]
        unknown = [k for k in remat if k not in known]
        if unknown or "layer_input" not in remat:
            raise ValueError(f"remat={','.join(map(str, remat))}: keep layer_input and "
                             f"tensors of {', '.join(known)}; unknown: "
                             f"{', '.join(map(str, unknown)) or 'none'}")
        return tuple(t for k in dict.fromkeys(remat) for t in by_key[k])
    if remat not in REMAT:
        raise ValueError(f"unknown remat policy {remat!r}; known: {', '.join(REMAT)}, or a "
                         "tuple of kept tensors")
    return tl.policy_keeps(cfg, remat, moe)


def _rerun_plan(cfg: Config, remat: Any, moe: bool) -> list[str]:
    """The layer ops to rerun before the backward: all of them for ``full``, else those
    that produce a tensor the backward reads and the policy did not keep (transitively)."""
    table = tl.layer_ops(cfg, moe)
    if isinstance(remat, str) and remat == "full":
        return list(table)
    have = set(_kept(cfg, remat, moe))
    want, plan = set(tl.backward_reads(cfg, moe)) - have, []
    for key in reversed(table):
        inputs, outputs, _ = table[key]
        if want & set(outputs.split()):
            plan.append(key)
            want |= set(inputs.split()) - have
    return plan[::-1]


def _run(scope, prefix: str, c, t: dict, keys) -> None:
    for key in keys:
        inputs, outputs, fn = c.table[key]
        with scope(prefix + key) as ops:
            out = fn(ops, c, *(t[name] for name in inputs.split()))
        t.update(zip(outputs.split(), out if isinstance(out, tuple) else (out,)))


def _unsupported(cfg: Config) -> None:
    """The training step runs every family; what it does not run yet is named."""
    if cfg.moe is not None and cfg.act != "silu":
        raise ValueError(f"the training step runs SwiGLU experts; {cfg.name} has "
                         f"act={cfg.act!r}")


def _context(cfg: Config, l: int, p: dict, T: int, cos: Any, sin: Any) -> SimpleNamespace:
    """Layer l's parameters, sizes, mask (keep (T, S): causal, in the window), its kind
    (MoE or dense MLP) and its forward table; MLA's core has every head its own key
    (G = H) and scores scaled by 1/sqrt(d_qk)."""
    moe = cfg.is_moe(l)
    table = tl.layer_ops(cfg, moe)
    c = SimpleNamespace(p=p, cfg=cfg, eps=cfg.eps, H=cfg.H, G=cfg.G, d_h=cfg.d_h, D=cfg.D,
                        cos=cos, sin=sin, keep=step(cfg, l, 0, T).keep, table=table,
                        scores_inputs=table["attn/scores"][0].split(), moe=cfg.moe,
                        moe_layer=moe, mla=cfg.mla)
    if cfg.mla is not None:
        c.G, c.d_h = cfg.H, cfg.mla.d_nope + cfg.mla.d_rope
    return c


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
    _unsupported(cfg)
    _kept(cfg, remat)  # a policy name, or a tuple of kept tensors: fails naming it
    check_params(params, cfg)
    tokens = _check_tokens(tokens, cfg)
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
    ctx = [_context(cfg, l, p, T, cos, sin) for l, p in enumerate(params["layers"])]
    f = _forward(scope, keep, params, cfg, ctx, tokens, targets, remat, trace)
    grads = _backward(scope, params, cfg, ctx, f, tokens, targets, remat)
    grads["layers"] = [{k: g[k] for k in p} for p, g in zip(params["layers"], grads["layers"])]
    return f.loss, {k: grads[k] for k in params}


def _record(keep, writer: dict[str, str], t: dict, names: tuple[str, ...]) -> None:
    """Count every kept tensor under its writer's key (an expert's list: each array; the
    routing's integer indices move no counted bytes)."""
    for name in names:
        if name in tmoe.UNCOUNTED:
            continue
        value = t[name]
        for arr in value if isinstance(value, list) else [value]:
            if arr is not None:
                keep(writer[name], arr)


def _forward(scope, keep, params, cfg: Config, ctx, tokens, targets, remat: str, trace):
    """Embedding, layers (keeping what ``remat`` names; ``trace`` gets each MoE layer's
    tokens per expert), final norm, lm_head (and its softcap), loss."""
    x = _embed(lambda key: scope("fwd/" + key), params, cfg, tokens, 0)  # (B, T, D)
    kept = []
    for c in ctx:
        t, names = {"x": x}, _kept(cfg, remat, c.moe_layer)
        _run(scope, "fwd/", c, t, c.table)
        kept.append({name: t[name] for name in names})
        _record(keep, tl.writers(c.table), t, names)
        if c.moe_layer and trace is not None:
            trace.append(np.bincount(t["idx"].ravel(), minlength=cfg.moe.E))
        x = t["x2"]
    W = params["embed"].T if cfg.tied else params["lm_head"]  # (D, V)
    with scope("fwd/final_norm") as ops:
        hf = layers.norm(ops, params, "final_norm", x, cfg.eps)  # (B, T, D)
    with scope("fwd/lm_head") as ops:
        logits = layers.linear(ops, hf, W)  # (B, T, V)
    logits_key = "lm_head"
    if cfg.final_softcap is not None:
        logits_key = "logit_softcap"
        with scope("fwd/logit_softcap") as ops:
            ops.read(logits, "act")
            logits = layers.softcap(ops, logits, cfg.final_softcap)
            ops.write(logits, "act")
    with scope("fwd/loss") as ops:
        loss, lse = bk.cross_entropy(ops, logits, targets)  # lse: (B*T, 1)
    for key, arr in (("final_input", x), ("final_norm", hf), (logits_key, logits),
                     ("loss", lse)):
        keep(key, arr)
    return SimpleNamespace(x=x, hf=hf, W=W, logits=logits, lse=lse, loss=loss, kept=kept)


def _backward(scope, params, cfg: Config, ctx, f, tokens, targets, remat: str):
    """Loss, softcap, lm_head and final norm backward, each layer's (after its
    recomputation), the learned positions' and the embedding's scatter-add."""
    grads: dict[str, Any] = {"layers": [{} for _ in ctx]}
    with scope("bwd/loss") as ops:
        dz = bk.cross_entropy_backward(ops, f.logits, f.lse, targets)  # (B, T, V)
    if cfg.final_softcap is not None:
        with scope("bwd/logit_softcap") as ops:
            dz = bd.softcap_backward(ops, f.logits, dz, cfg.final_softcap)
    with scope("bwd/lm_head/dx") as ops:
        dhf = bk.linear_dx(ops, dz, f.W)
    with scope("bwd/lm_head/dw") as ops:
        dW = bk.linear_dw(ops, f.hf, dz)  # (D, V)
    grads["embed" if cfg.tied else "lm_head"] = dW.T if cfg.tied else dW
    with scope("bwd/final_norm") as ops:
        dx, final = bd.norm_backward(ops, params, "final_norm", f.x, dhf, cfg.eps)
    grads |= final
    for c, t, g in reversed(list(zip(ctx, f.kept, grads["layers"]))):
        _run(scope, "recompute/", c, t, _rerun_plan(cfg, remat, c.moe_layer))
        dx = tl.layer_backward(scope, c, t, dx, g)
    if cfg.positions == "learned":
        with scope("bwd/pos_embed") as ops:
            grads["pos_embed"] = bd.pos_embed_backward(ops, dx, cfg.max_position)
    if not cfg.tied:
        grads["embed"] = np.zeros_like(params["embed"])  # (V, D)
    with scope("bwd/embed") as ops:
        bk.embedding_backward(ops, grads["embed"], tokens, dx, accumulate=cfg.tied,
                              scale=float(np.sqrt(cfg.D)) if cfg.embed_scale else None)
    return grads
