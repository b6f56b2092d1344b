"""Training multi-head latent attention in the NumPy decoder: the naive (non-absorbed)
form, forward and counted backward.

Forward (the rows of :func:`symroof.numeric.mla.mla` with ``absorb=False``, no cache):
h -> q latent (q_a_proj, q_a_norm) -> q_b_proj, or one q_proj: per head [q_nope, q_rope];
h -> kv_a_proj: [c_kv (kv_rank), k_rope (d_rope)]; kv_a_norm on c_kv; RoPE on q_rope and
the one shared k_rope; kv_b_proj expands c_kv into per-head [k_nope, v]; the naive core on
q = [q_nope, q_rope] and k = [k_nope, k_rope] (every head its own key, G = H). Backward,
in reverse (docs/accounting.md, "Training MoE and MLA"): o_proj, the core's four matmuls
and softmax, ``bwd/attn/k_rope_sum`` (the shared RoPE key's gradient summed over the H
heads), RoPE, kv_b_proj, kv_a_norm, kv_a_proj, q_b_proj, q_a_norm, q_a_proj, then
``bwd/attn/qkv_sum`` adds the q and kv sides' gradients of h.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from . import backward as bk
from . import layers
from .config import Config

__all__ = ["mla_ops", "mla_backward", "qk", "values", "MLA_READS"]

#: the tensors an MLA block's backward reads (without a q latent: no cq0, cq)
MLA_READS = ("x", "h1", "cq0", "cq", "q0", "ckv_pe", "ckv", "q_pe", "k_pe", "kv", "p", "o")


def _heads(x: np.ndarray, n: int) -> np.ndarray:
    return x.reshape(*x.shape[:2], n, -1)  # (B, T, n, width)


def _lin(w: str):
    return lambda ops, c, x: layers.linear(ops, x, c.p[w])


def _rope(ops, c, q0, ckv_pe):
    a, (B, T, _) = c.mla, q0.shape
    q_pe = _heads(q0, c.H)[..., a.d_nope:]  # (B, T, H, d_rope)
    k_pe = ckv_pe[..., a.kv_rank:].reshape(B, T, 1, a.d_rope)  # one key for every head
    return layers.rope(ops, q_pe, k_pe, c.cos, c.sin)


def _qk(c, q0, q_pe, kv, k_pe):
    """q (B, T, H, d_qk) and k (B, S, H, d_qk): selections of what the ops wrote."""
    a, H = c.mla, c.H
    q = np.concatenate([_heads(q0, H)[..., :a.d_nope], q_pe], axis=-1)
    k_nope = _heads(kv, H)[..., :a.d_nope]  # (B, S, H, d_nope)
    k = np.concatenate([k_nope, np.broadcast_to(k_pe, (*k_nope.shape[:3], a.d_rope))], axis=-1)
    return q, k


def qk(c, q0, q_pe, kv, k_pe):
    """The core's q (B, T, H, d_qk) and k (B, S, H, d_qk): selections of what the ops
    wrote (``attn/scores`` reads them; numeric.train_layer)."""
    return _qk(c, q0, q_pe, kv, k_pe)


def values(c, kv):
    """The per-head values (B, S, H, d_v) of kv_b_proj's output: a selection."""
    return _heads(kv, c.H)[..., c.mla.d_nope:]


def mla_ops(cfg: Config) -> dict:
    """The MLA block's own forward ops, naive form (inputs, outputs, fn): the q side, kv_a,
    its norm, RoPE and kv_b; the layer's table (numeric.train_layer) adds the norm, the
    core (G = H), o_proj and the residual it shares with the GQA block.

    >>> from symroof.numeric import TINY, MLASpec
    >>> list(mla_ops(TINY.replace(mla=MLASpec(kv_rank=16, d_nope=8, d_rope=4, d_v=8))))
    ['attn/q_proj', 'attn/kv_a_proj', 'attn/kv_a_norm', 'attn/rope', 'attn/kv_b_proj']
    """
    a, table = cfg.mla, {}
    if a.q_rank is not None:
        table |= {"attn/q_a_proj": ("h1", "cq0", _lin("wq_a")),
                  "attn/q_a_norm": ("cq0", "cq", lambda ops, c, x: layers.rmsnorm(
                      ops, x, c.p["q_a_norm"], c.eps)),
                  "attn/q_b_proj": ("cq", "q0", _lin("wq_b"))}
    else:
        table["attn/q_proj"] = ("h1", "q0", _lin("wq"))
    return table | {
        "attn/kv_a_proj": ("h1", "ckv_pe", _lin("wkv_a")),
        "attn/kv_a_norm": ("ckv_pe", "ckv", lambda ops, c, x: layers.rmsnorm(
            ops, x[..., :c.mla.kv_rank], c.p["kv_a_norm"], c.eps)),
        "attn/rope": ("q0 ckv_pe", "q_pe k_pe", _rope),
        "attn/kv_b_proj": ("ckv", "kv", _lin("wkv_b")),
    }


def _latent(scope, name: str, p: dict, x, d, grads: dict, norm: tuple | None = None):
    """A projection's dX and dW rows (and the norm before it): returns d(its input)."""
    with scope(f"bwd/attn/{name}/dx") as ops:
        dx = bk.linear_dx(ops, d, p[f"w{name.removesuffix('_proj')}"])
    with scope(f"bwd/attn/{name}/dw") as ops:
        grads[f"w{name.removesuffix('_proj')}"] = bk.linear_dw(ops, x, d)
    if norm is None:
        return dx
    key, x_in, eps = norm
    with scope(f"bwd/attn/{key}") as ops:
        dx, grads[key] = bk.rmsnorm_backward(ops, x_in, p[key], dx, eps)
    return dx


def mla_backward(scope, c: SimpleNamespace, t: dict, dx1: np.ndarray,
                 grads: dict) -> np.ndarray:
    """The MLA block's backward, down to d(layer input); fills ``grads`` with the layer's
    attention gradients (numeric.train_layer.layer_backward runs it)."""
    p, a, H, keep = c.p, c.mla, c.H, c.keep
    with scope("bwd/attn/o_proj/dx") as ops:
        do = bk.linear_dx(ops, dx1, p["wo"])
    with scope("bwd/attn/o_proj/dw") as ops:
        grads["wo"] = bk.linear_dw(ops, t["o"], dx1)
    B, T = do.shape[:2]
    do = do.reshape(B, T, H, 1, a.d_v)  # (B, T, G = H, 1, d_v)
    q, k = _qk(c, t["q0"], t["q_pe"], t["kv"], t["k_pe"])  # (B, T, H, d_qk) each
    q, v = q.reshape(B, T, H, 1, -1), _heads(t["kv"], H)[..., a.d_nope:]
    with scope("bwd/attn/av/dp") as ops:
        dp = bk.attention_grad(ops, "btgrd,bsgd->bgrts", do, v, keep)  # (B, H, 1, T, S)
    with scope("bwd/attn/av/dv") as ops:
        dv = bk.attention_grad(ops, "bgrts,btgrd->bsgd", t["p"], do, keep)  # (B, S, H, d_v)
    with scope("bwd/attn/softmax") as ops:
        ds = bk.softmax_backward(ops, t["p"], dp, keep, c.d_h)
    with scope("bwd/attn/scores/dq") as ops:
        dq = bk.attention_grad(ops, "bgrts,bsgd->btgrd", ds, k, keep).reshape(B, T, H, -1)
    with scope("bwd/attn/scores/dk") as ops:
        dk = bk.attention_grad(ops, "bgrts,btgrd->bsgd", ds, q, keep)  # (B, S, H, d_qk)
    with scope("bwd/attn/k_rope_sum") as ops:  # the shared key's gradient: sum over heads
        ops.read(dk[..., a.d_nope:], "act")
        dk_pe = ops.sum(dk[..., a.d_nope:], axis=2)  # (B, S, 1, d_rope)
        ops.write(dk_pe, "act")
    with scope("bwd/attn/rope") as ops:
        dq_pe, dk_pe = bk.rope_backward(ops, dq[..., a.d_nope:], dk_pe, c.cos, c.sin)
    dq = np.concatenate([dq[..., :a.d_nope], dq_pe], axis=-1).reshape(B, T, -1)
    dkv = np.concatenate([dk[..., :a.d_nope], dv], axis=-1).reshape(B, T, -1)
    dckv = _latent(scope, "kv_b_proj", p, t["ckv"], dkv, grads,
                   ("kv_a_norm", t["ckv_pe"][..., :a.kv_rank], c.eps))
    dckv_pe = np.concatenate([dckv, dk_pe.reshape(B, T, a.d_rope)], axis=-1)
    dh = [_latent(scope, "kv_a_proj", p, t["h1"], dckv_pe, grads)]
    if a.q_rank is not None:
        dcq = _latent(scope, "q_b_proj", p, t["cq"], dq, grads,
                      ("q_a_norm", t["cq0"], c.eps))
        dh.append(_latent(scope, "q_a_proj", p, t["h1"], dcq, grads))
    else:
        dh.append(_latent(scope, "q_proj", p, t["h1"], dq, grads))
    with scope("bwd/attn/qkv_sum") as ops:
        dh1 = bk.grad_sum(ops, *dh)
    with scope("bwd/attn_norm") as ops:
        dx_norm, grads["attn_norm"] = bk.rmsnorm_backward(ops, t["x"], p["attn_norm"], dh1, c.eps)
    with scope("bwd/attn/residual") as ops:
        return bk.grad_sum(ops, dx1, dx_norm)
