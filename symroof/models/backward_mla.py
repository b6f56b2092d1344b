"""Backward rows and kept activations of multi-head latent attention in training, the
naive (non-absorbed) form: per-head keys and values expanded by kv_b_proj, every head its
own key (G = H), one RoPE key shared by the heads (docs/accounting.md, "Training MoE and
MLA"; the NumPy twin: :mod:`symroof.numeric.train_mla`).

n = B*S tokens; d_qk = d_nope + d_rope. Per layer (the caller multiplies by L):

- the core's four gradient matmuls at d_v (``av/dp``, ``av/dv``) and d_qk (``scores/dq``,
  ``scores/dk``), and the softmax backward, as the GQA core's with G = H;
- ``attn/k_rope_sum``: the shared RoPE key's gradient summed over the H heads,
  (H - 1)*n*d_rope FLOPs; ``attn/rope``: the inverse rotation of q's and k's RoPE parts;
- dX and dW of kv_b_proj, kv_a_proj, q_b_proj, q_a_proj (or q_proj), the backward of
  kv_a_norm and q_a_norm; ``attn/qkv_sum`` adds the q and kv sides' gradients (2).

>>> from symroof.models import model
>>> rows = mla_backward(model("deepseek-v3"), 1, 4, 1)
>>> rows["attn/k_rope_sum"].flops == 127 * 4 * 64
True
"""

from __future__ import annotations

from typing import Any

from .. import ops as op
from ..cost import Cost
from . import attention_rows as ar
from . import backward as bw

__all__ = ["mla_backward", "mla_sizes"]


def mla_backward(m: Any, B: Any, S: Any, gb: Any) -> dict[str, Cost]:
    """One MLA layer's backward rows (module docstring), keys without ``bwd/``.

    >>> from symroof.models import model
    >>> rows = mla_backward(model("deepseek-v3"), 1, 1, 1)
    >>> rows["attn/kv_b_proj/dw"].weight_bytes     # 512 x 128 (128 + 128) at 1 byte
    16777216
    """
    a, D, H, ab, wb = m.mla, m.D, m.H, m.act_bytes, m.w_bytes
    n, pairs = B * S, ar.pairs(S, 0, None)[1]

    def proj(name: str, d_in: Any, d_out: Any) -> dict[str, Cost]:
        return {f"attn/{name}/dx": bw.linear_dx(n, d_in, d_out, x_bytes=ab, w_bytes=wb),
                f"attn/{name}/dw": bw.linear_dw(n, d_in, d_out, x_bytes=ab, grad_bytes=gb)}

    def norm(d: Any) -> Cost:
        return bw.rmsnorm_backward(n, d, x_bytes=ab, w_bytes=wb, grad_bytes=gb)

    av = bw.attention_matmul_backward(B, S, S, H, H, a.d_v, pairs=pairs, x_bytes=ab)
    qk = bw.attention_matmul_backward(B, S, S, H, H, a.d_qk, pairs=pairs, x_bytes=ab)
    rows = {"attn/o_proj/dx": bw.linear_dx(n, H * a.d_v, D, x_bytes=ab, w_bytes=wb),
            "attn/o_proj/dw": bw.linear_dw(n, H * a.d_v, D, x_bytes=ab, grad_bytes=gb,
                                           bias=m.o_bias),
            "attn/av/dp": av, "attn/av/dv": av,
            "attn/softmax": bw.softmax_backward(B * H * S, S, useful_elements=B * H * pairs,
                                                x_bytes=ab),
            "attn/scores/dq": qk, "attn/scores/dk": qk,
            "attn/k_rope_sum": bw.grad_sum(n * a.d_rope, H, x_bytes=ab),
            "attn/rope": op.rope(n * (H + 1) * a.d_rope, table=S * a.d_rope, x_bytes=ab)}
    rows |= proj("kv_b_proj", a.kv_rank, H * (a.d_nope + a.d_v))
    rows["attn/kv_a_norm"] = norm(a.kv_rank)
    rows |= proj("kv_a_proj", D, a.kv_rank + a.d_rope)
    if a.q_rank is not None:
        rows |= proj("q_b_proj", a.q_rank, H * a.d_qk)
        rows["attn/q_a_norm"] = norm(a.q_rank)
        rows |= proj("q_a_proj", D, a.q_rank)
    else:
        rows |= proj("q_proj", D, H * a.d_qk)
    return rows | {"attn/qkv_sum": bw.grad_sum(n * D, 2, x_bytes=ab), "attn_norm": norm(D),
                   "attn/residual": bw.grad_sum(n * D, 2, x_bytes=ab)}


def mla_sizes(m: Any, B: Any, S: Any) -> dict[str, Any]:
    """Elements per layer of each tensor an MLA layer may keep, by the layer graph's names
    (:func:`~symroof.models.training_graph.layer_graph`): the q latent and its norm (cq0,
    cq), the q projection's output q0 (q_nope is read), kv_a_proj's ckv_pe and its norm
    ckv, RoPE's q part q_pe and the one shared key k_pe, kv_b_proj's keys and values kv,
    the S x S scores and softmax output, the core's output o.

    >>> from symroof.models import model
    >>> sizes = mla_sizes(model("deepseek-v3"), 1, 1)
    >>> sizes["q_pe"] + sizes["k_pe"]             # (128 + 1) heads x 64
    8256
    """
    a, H, n = m.mla, m.H, B * S
    rows = {"q0": n * H * a.d_qk, "ckv_pe": n * (a.kv_rank + a.d_rope), "ckv": n * a.kv_rank,
            "q_pe": n * H * a.d_rope, "k_pe": n * a.d_rope, "kv": n * H * (a.d_nope + a.d_v),
            "s": B * H * S**2, "p": B * H * S**2, "o": n * H * a.d_v}
    if a.q_rank is not None:
        rows |= {"cq0": n * a.q_rank, "cq": n * a.q_rank}
    return rows
