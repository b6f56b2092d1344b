"""One decoder layer of the NumPy training step as data: its forward ops (inputs ->
outputs, in order) for the config's family switches, the tensors its backward reads, what
each remat policy keeps, and the hand-written backward of the attention and MLP blocks.
A layer is an attention block (GQA, or MLA: numeric.train_mla) and an MLP block (dense,
or MoE: numeric.train_moe); a model with dense first layers has two kinds of layer.

Tensors: x (the layer input), h1 (attention norm), q0 k0 v (projections), qn kn (Qwen3's
per-head norms), q k (after RoPE), s p (scores, softmax), o (attention output), y (o_proj),
yn (Gemma-2's post norm), x1 (residual), h2 (MLP norm), g u (gate, up), a (activation),
y2 (down), y2n (post norm), x2 (the layer output). Where an op is absent its input flows on.
MLA and MoE tensors: those of :mod:`symroof.models.training_graph`'s docstring.
"""

from __future__ import annotations

import numpy as np

from . import backward as bk
from . import backward_dense as bd
from . import layers
from . import train_mla as tmla
from . import train_moe as tmoe
from .mlp import act_key

#: the weight matmuls' outputs, by block (``matmul_outputs`` keeps those a layer has)
_MATMULS = ("q0", "k0", "v", "cq0", "ckv_pe", "kv", "y", "g", "u", "logits", "eg", "eu", "Y",
            "sg", "su")


def _heads(x: np.ndarray, n: int) -> np.ndarray:
    return x.reshape(*x.shape[:2], n, -1)  # (B, T, n, d_h)


def _scores(ops, c, q, k):
    B, T = q.shape[:2]
    ops.read(q, "act")
    ops.read(k, "act")
    q = q.reshape(B, T, c.G, c.H // c.G, c.d_h)  # (B, T, G, H/G, d_h)
    s = ops.einsum("btgrd,bsgd->bgrts", q, _heads(k, c.G), valid=c.keep, valid_dims="ts")
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


def _linear(w: str, b: str):
    return lambda ops, c, x: layers.linear(ops, x, c.p[w], c.p.get(b))


def _norm(name: str):
    return lambda ops, c, x: layers.norm(ops, c.p, name, x, c.eps)


def _qkv(ops, c, h):
    qkv = layers.linear(ops, h, c.p["wqkv"], c.p.get("bqkv"))  # (B, T, (H + 2G) d_h)
    return tuple(np.split(qkv, [c.H * c.d_h, (c.H + c.G) * c.d_h], axis=-1))  # selection


def _attention_ops(cfg) -> dict:
    """The attention block's forward ops: key -> (inputs, outputs, fn(ops, c, *inputs))."""
    ops = {"attn_norm": ("x", "h1", _norm("attn_norm"))}
    if cfg.fused_qkv:
        ops["attn/qkv_proj"] = ("h1", "q0 k0 v", _qkv)
    else:
        ops |= {"attn/q_proj": ("h1", "q0", _linear("wq", "bq")),
                "attn/k_proj": ("h1", "k0", _linear("wk", "bk")),
                "attn/v_proj": ("h1", "v", _linear("wv", "bv"))}
    q, k = "q0", "k0"
    if cfg.qk_norm:
        ops["attn/q_norm"] = ("q0", "qn", lambda o, c, x: layers.rmsnorm(
            o, _heads(x, c.H), c.p["q_norm"], c.eps))
        ops["attn/k_norm"] = ("k0", "kn", lambda o, c, x: layers.rmsnorm(
            o, _heads(x, c.G), c.p["k_norm"], c.eps))
        q, k = "qn", "kn"
    if cfg.positions == "rope":
        ops["attn/rope"] = (f"{q} {k}", "q k", lambda o, c, q, k: layers.rope(
            o, _heads(q, c.H), _heads(k, c.G), c.cos, c.sin))
        q, k = "q", "k"
    ops |= {"attn/scores": (f"{q} {k}", "s", _scores),
            "attn/softmax": ("s", "p", lambda o, c, s: layers.softmax(o, s, c.keep, c.d_h,
                                                                     cap=c.cfg.attn_softcap)),
            "attn/av": ("p v", "o", _av),
            "attn/o_proj": ("o", "y", _linear("wo", "bo"))}
    y = "y"
    if cfg.post_norms:
        ops["attn/post_norm"] = ("y", "yn", _norm("attn_post_norm"))
        y = "yn"
    ops["attn/residual"] = (f"x {y}", "x1", lambda o, c, x, y: layers.residual(o, x, y))
    return ops


def _mlp_ops(cfg) -> dict:
    """The MLP block's forward ops, from its norm to the residual add."""
    ops = {"mlp_norm": ("x" if cfg.parallel_residual else "x1", "h2", _norm("mlp_norm"))}
    if not cfg.gated:
        ops["mlp/up"] = ("h2", "u", _linear("w_up", "b_up"))
    elif cfg.fused_gate_up:
        ops["mlp/gate_up"] = ("h2", "g u", lambda o, c, h: tuple(np.split(
            layers.linear(o, h, c.p["w_gate_up"], c.p.get("b_gate_up")), 2, axis=-1)))
    else:
        ops |= {"mlp/gate": ("h2", "g", _linear("w_gate", "b_gate")),
                "mlp/up": ("h2", "u", _linear("w_up", "b_up"))}
    key = f"mlp/{act_key(cfg.act, cfg.gated)}"
    if cfg.gated:
        ops[key] = ("g u", "a", lambda o, c, g, u: layers.activation(o, c.cfg.act, g, u))
    else:
        ops[key] = ("u", "a", lambda o, c, u: layers.activation(o, c.cfg.act, u))
    ops["mlp/down"] = ("a", "y2", _linear("w_down", "b_down"))
    y = "y2"
    if cfg.post_norms:
        ops["mlp/post_norm"] = ("y2", "y2n", _norm("mlp_post_norm"))
        y = "y2n"
    ops["mlp/residual"] = (f"x1 {y}", "x2", lambda o, c, x, y: layers.residual(o, x, y))
    return ops


def _mla_ops(cfg) -> dict:
    """The MLA block's forward ops: its own (numeric.train_mla) between the norm and the
    core, the core's two matmuls with G = H on its selections, o_proj, the residual."""
    gqa = _attention_ops(cfg)
    return {"attn_norm": gqa["attn_norm"]} | tmla.mla_ops(cfg) | {
        "attn/scores": ("q0 q_pe kv k_pe", "s", lambda o, c, *t: _scores(o, c, *tmla.qk(c, *t))),
        "attn/softmax": gqa["attn/softmax"],
        "attn/av": ("p kv", "o", lambda o, c, p, kv: _av(o, c, p, tmla.values(c, kv))),
        "attn/o_proj": gqa["attn/o_proj"], "attn/residual": gqa["attn/residual"]}


def _moe_ops(cfg) -> dict:
    """The MoE block's forward ops: the MLP norm, its own (numeric.train_moe), the residual."""
    dense = _mlp_ops(cfg)
    return {"mlp_norm": dense["mlp_norm"]} | tmoe.moe_ops(cfg) | {
        "mlp/residual": dense["mlp/residual"]}


def layer_ops(cfg, moe: bool | None = None) -> dict:
    """One layer's forward ops in order: key -> (inputs, outputs, fn); an MoE layer, or
    with ``moe=False`` a dense one (default: the config's MoE layers)."""
    moe = cfg.moe is not None if moe is None else moe
    return (_mla_ops(cfg) if cfg.mla is not None else _attention_ops(cfg)) | \
        (_moe_ops(cfg) if moe else _mlp_ops(cfg))


def writers(table: dict) -> dict[str, str]:
    """tensor -> the key it is recorded under when kept (the op of ``table`` that wrote it)."""
    return {"x": "layer_input"} | {out: key for key, (_, outs, _) in table.items()
                                   for out in outs.split()}


def backward_reads(cfg, moe: bool | None = None) -> tuple[str, ...]:
    """The tensors one layer's backward reads (``layer_backward``)."""
    moe = cfg.moe is not None if moe is None else moe
    table = layer_ops(cfg, moe)
    if cfg.mla is not None:
        reads = list(tmla.MLA_READS)
    else:
        q, k = table["attn/scores"][0].split()
        reads = ["x", "h1", *(("q0", "k0") if cfg.qk_norm else ()), q, k, "v", "p",
                 *(("s",) if cfg.attn_softcap is not None else ()), "o",
                 *(("y",) if cfg.post_norms else ())]
    if moe:
        reads += [*tmoe.MOE_READS, *(tmoe.SHARED_READS if cfg.moe.shared_F else ()),
                  *(("ys",) if cfg.moe.shared_gate else ())]
    else:
        reads += [table["mlp_norm"][0], "h2", *(("g",) if cfg.gated else ()), "u", "a",
                  *(("y2",) if cfg.post_norms else ())]
    writer = writers(table)
    return tuple(t for t in dict.fromkeys(reads) if t in writer)  # (no q latent: no cq0, cq)


def policy_keeps(cfg, remat: str, moe: bool | None = None) -> tuple[str, ...]:
    """The tensors a named policy keeps per layer."""
    reads = backward_reads(cfg, moe)
    if remat == "none":
        return reads
    if remat == "selective":
        return tuple(t for t in reads if t not in ("s", "p"))
    if remat == "matmul_outputs":
        outs = {"x", *_MATMULS} | ({"y2"} if cfg.post_norms else set())
        return tuple(t for t in writers(layer_ops(cfg, moe)) if t in outs)
    return ("x",)


def layer_backward(scope, c, t, dx2, grads):
    """Gradients of one layer from the tensors in ``t``; returns d(layer input): the MLP
    block's (dense or MoE), then the attention block's (GQA or MLA)."""
    if c.moe_layer:
        dx1, dn_mlp = tmoe.moe_backward(scope, c, t, dx2, grads), None
    else:
        dx1, dn_mlp = mlp_backward(scope, c, t, dx2, grads)
    if c.cfg.mla is not None:
        return tmla.mla_backward(scope, c, t, dx1, grads)
    return attention_backward(scope, c, t, dx1, dn_mlp, grads)


def _project_back(scope, key: str, p: dict, w: str, b: str, x, dy, grads):
    """dX and dW (and db where the layer has the bias) of one weight matmul."""
    with scope(f"bwd/{key}/dx") as ops:
        dx = bk.linear_dx(ops, dy, p[w])
    with scope(f"bwd/{key}/dw") as ops:
        out = bk.linear_dw(ops, x, dy, b in p)
    if b in p:
        grads[w], grads[b] = out
    else:
        grads[w] = out
    return dx


def _norm_back(scope, key: str, c, name: str, x, dy, grads):
    with scope(f"bwd/{key}") as ops:
        dx, dp = bd.norm_backward(ops, c.p, name, x, dy, c.eps)
    grads.update(dp)
    return dx


def mlp_backward(scope, c, t, dx2, grads):
    """The MLP block's backward: (d(x1) through the residual, d(MLP norm input)); with a
    parallel residual the second goes to the layer input and the first is dx2 itself."""
    cfg, p = c.cfg, c.p
    dy = dx2
    if cfg.post_norms:
        dy = _norm_back(scope, "mlp/post_norm", c, "mlp_post_norm", t["y2"], dy, grads)
    da = _project_back(scope, "mlp/down", p, "w_down", "b_down", t["a"], dy, grads)
    with scope(f"bwd/mlp/{act_key(cfg.act, cfg.gated)}") as ops:
        dg, du = bd.activation_backward(ops, cfg.act, t["g"] if cfg.gated else t["u"],
                                        t["u"] if cfg.gated else None, da)
    if not cfg.gated:
        dh2 = _project_back(scope, "mlp/up", p, "w_up", "b_up", t["h2"], dg, grads)
    elif cfg.fused_gate_up:
        dgu = np.concatenate([dg, du], axis=-1)  # (B, T, 2F): selection
        dh2 = _project_back(scope, "mlp/gate_up", p, "w_gate_up", "b_gate_up", t["h2"], dgu,
                            grads)
    else:
        dh = [_project_back(scope, f"mlp/{n}", p, f"w_{n}", f"b_{n}", t["h2"], d, grads)
              for n, d in (("up", du), ("gate", dg))]
        with scope("bwd/mlp/gate_up_sum") as ops:
            dh2 = bk.grad_sum(ops, *dh)
    x_in = t["x"] if cfg.parallel_residual else t["x1"]
    dn = _norm_back(scope, "mlp_norm", c, "mlp_norm", x_in, dh2, grads)
    if cfg.parallel_residual:
        return dx2, dn
    with scope("bwd/mlp/residual") as ops:
        return bk.grad_sum(ops, dx2, dn), None


def _core_backward(scope, c, t, do):
    """The naive core's backward: (dq, dk, dv) from d(o) (B, T, H*d_h)."""
    B, T = do.shape[:2]
    G, H, keep = c.G, c.H, c.keep
    do = do.reshape(B, T, G, H // G, c.d_h)  # (B, T, G, H/G, d_h)
    q_in, k_in = c.scores_inputs
    q, k, v = t[q_in].reshape(do.shape), _heads(t[k_in], G), _heads(t["v"], G)
    with scope("bwd/attn/av/dp") as ops:
        dp = bk.attention_grad(ops, "btgrd,bsgd->bgrts", do, v, keep)  # (B, G, H/G, T, S)
    with scope("bwd/attn/av/dv") as ops:
        dv = bk.attention_grad(ops, "bgrts,btgrd->bsgd", t["p"], do, keep)  # (B, S, G, d_h)
    with scope("bwd/attn/softmax") as ops:
        capped = c.cfg.attn_softcap is not None  # the cap's slope needs the raw scores
        ds = bk.softmax_backward(ops, t["p"], dp, keep, c.d_h, t["s"] if capped else None,
                                 c.cfg.attn_softcap)
    with scope("bwd/attn/scores/dq") as ops:
        dq = bk.attention_grad(ops, "bgrts,bsgd->btgrd", ds, k, keep)  # (B, T, G, H/G, d_h)
    with scope("bwd/attn/scores/dk") as ops:
        dk = bk.attention_grad(ops, "bgrts,btgrd->bsgd", ds, q, keep)  # (B, S, G, d_h)
    return dq.reshape(B, T, H, c.d_h), dk, dv


def attention_backward(scope, c, t, dx1, dn_mlp, grads):
    """The attention block's backward, down to d(layer input) (the residual stream's sum
    takes the MLP norm's gradient too under a parallel residual)."""
    cfg, p = c.cfg, c.p
    dy = dx1
    if cfg.post_norms:
        dy = _norm_back(scope, "attn/post_norm", c, "attn_post_norm", t["y"], dy, grads)
    do = _project_back(scope, "attn/o_proj", p, "wo", "bo", t["o"], dy, grads)
    dq, dk, dv = _core_backward(scope, c, t, do)
    B, T = do.shape[:2]
    if cfg.positions == "rope":
        with scope("bwd/attn/rope") as ops:
            dq, dk = bk.rope_backward(ops, dq, dk, c.cos, c.sin)
    if cfg.qk_norm:
        with scope("bwd/attn/q_norm") as ops:
            dq, grads["q_norm"] = bk.rmsnorm_backward(ops, _heads(t["q0"], c.H), p["q_norm"],
                                                      dq, c.eps)
        with scope("bwd/attn/k_norm") as ops:
            dk, grads["k_norm"] = bk.rmsnorm_backward(ops, _heads(t["k0"], c.G), p["k_norm"],
                                                      dk, c.eps)
    flat = [d.reshape(B, T, -1) for d in (dq, dk, dv)]  # (B, T, n*d_h) each
    if cfg.fused_qkv:
        dqkv = np.concatenate(flat, axis=-1)  # (B, T, (H + 2G) d_h): selection
        dh1 = _project_back(scope, "attn/qkv_proj", p, "wqkv", "bqkv", t["h1"], dqkv, grads)
    else:
        dh = [_project_back(scope, f"attn/{n}_proj", p, f"w{n}", f"b{n}", t["h1"], d, grads)
              for n, d in zip("vkq", flat[::-1])]
        with scope("bwd/attn/qkv_sum") as ops:
            dh1 = bk.grad_sum(ops, *dh)
    dn = _norm_back(scope, "attn_norm", c, "attn_norm", t["x"], dh1, grads)
    with scope("bwd/attn/residual") as ops:
        return bk.grad_sum(ops, dx1, dn, *(() if dn_mlp is None else (dn_mlp,)))
