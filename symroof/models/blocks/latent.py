"""Multi-head latent attention in training, the naive (non-absorbed) form: per-head keys and
values expanded by kv_b_proj, every head its own key (G = H), one RoPE key shared by the
heads (docs/accounting.md, "Training MoE and MLA"; the NumPy twin:
:mod:`symroof.numeric.train_mla`). The attention block with a ``latent`` record reads its
backward rows before the core, its piece of the layer graph and its tensors' sizes here;
its o_proj and core rows are the block's own, as for GQA.

n = B*S tokens; d_qk = d_nope + d_rope. Per layer, backwards, after the core:

- ``attn/k_rope_sum``: the shared RoPE key's gradient summed over the H heads,
  (H - 1)*n*d_rope FLOPs; ``attn/rope``: the inverse rotation of q's and k's RoPE parts;
- dX and dW of kv_b_proj, kv_a_proj, q_b_proj, q_a_proj (or q_proj), the backward of
  kv_a_norm and q_a_norm; ``attn/qkv_sum`` adds the q and kv sides' gradients (2).

>>> from symroof.models import model
>>> from symroof.models.blocks import Widths
>>> b = model("deepseek-v3").blocks
>>> rows = backward_in(b.attention, Widths(4, b.stream, 1), 4)
>>> rows["attn/k_rope_sum"].flops == 127 * 4 * 64
True
"""

from __future__ import annotations

from typing import Any

from ...cost import Cost
from .. import rows as rw
from .backprop import Graph, Widths

__all__ = ["backward_in", "graph", "tensors"]


def backward_in(a: Any, w: Widths, S: Any) -> dict[str, Cost]:
    """One layer's rows of latent attention block ``a`` from the core's gradients back to
    h1's (module docstring).

    >>> from symroof.models import model
    >>> from symroof.models.blocks import Widths
    >>> b = model("deepseek-v3").blocks
    >>> backward_in(b.attention, Widths(1, b.stream, 1), 1)["attn/kv_b_proj/dw"].weight_bytes
    16777216
    """
    m, D, H, n = a.latent, w.s.D, a.H, w.n

    def proj(name: str, d_in: Any, d_out: Any) -> dict[str, Cost]:
        return {f"attn/{name}/dx": w.dx(d_in, d_out), f"attn/{name}/dw": w.dw(d_in, d_out)}

    rows = {"attn/k_rope_sum": w.sum(H, m.d_rope),
            "attn/rope": rw.rope(n, H + 1, m.d_rope, S, ab=w.s.ab)}
    rows |= proj("kv_b_proj", m.kv_rank, H * (m.d_nope + m.d_v))
    rows["attn/kv_a_norm"] = w.norm("rms", n, m.kv_rank)
    rows |= proj("kv_a_proj", D, m.kv_rank + m.d_rope)
    if m.q_rank is not None:
        rows |= proj("q_b_proj", m.q_rank, H * m.d_qk)
        rows["attn/q_a_norm"] = w.norm("rms", n, m.q_rank)
        rows |= proj("q_a_proj", D, m.q_rank)
    else:
        rows |= proj("q_proj", D, H * m.d_qk)
    return rows | {"attn/qkv_sum": w.sum(2)}


def graph(a: Any) -> Graph:
    """Its ops from h1 to o_proj's y: the q latent and its norm (cq0, cq), the q projection
    q0, kv_a_proj's latent and RoPE key (ckv_pe) and its norm (ckv), RoPE's q_pe and the
    one shared k_pe, kv_b_proj's keys and values (kv), the core (s, p, o).

    >>> from symroof.models import model
    >>> graph(model("deepseek-v3").blocks.attention).ops["attn/rope"]
    (('q0', 'ckv_pe'), ('q_pe', 'k_pe'))
    """
    ops: dict = {}
    if a.latent.q_rank is not None:
        ops |= {"attn/q_a_proj": (("h1",), ("cq0",)), "attn/q_a_norm": (("cq0",), ("cq",)),
                "attn/q_b_proj": (("cq",), ("q0",))}
    else:
        ops["attn/q_proj"] = (("h1",), ("q0",))
    ops |= {"attn/kv_a_proj": (("h1",), ("ckv_pe",)), "attn/kv_a_norm": (("ckv_pe",), ("ckv",)),
            "attn/rope": (("q0", "ckv_pe"), ("q_pe", "k_pe")),
            "attn/kv_b_proj": (("ckv",), ("kv",)),
            "attn/scores": (("q0", "q_pe", "kv", "k_pe"), ("s",)),
            "attn/softmax": (("s",), ("p",)), "attn/av": (("p", "kv"), ("o",)),
            "attn/o_proj": (("o",), ("y",))}
    reads = ("h1", "cq0", "cq", "q0", "ckv_pe", "ckv", "q_pe", "k_pe", "kv", "p", "o")
    return Graph(ops, reads, ("cq0", "q0", "ckv_pe", "kv", "y"))


def tensors(a: Any, B: Any, S: Any) -> dict[str, Any]:
    """Elements per layer of each tensor a latent attention layer may keep, by the graph's
    names (:func:`graph`): cq0 and cq, q0, ckv_pe and ckv, q_pe, k_pe, kv, the S x S scores
    and softmax output, the core's output o.

    >>> from symroof.models import model
    >>> sizes = tensors(model("deepseek-v3").blocks.attention, 1, 1)
    >>> sizes["q_pe"] + sizes["k_pe"]             # (128 + 1) heads x 64
    8256
    """
    m, H, n = a.latent, a.H, B * S
    rows = {"q0": n * H * m.d_qk, "ckv_pe": n * (m.kv_rank + m.d_rope), "ckv": n * m.kv_rank,
            "q_pe": n * H * m.d_rope, "k_pe": n * m.d_rope, "kv": n * H * (m.d_nope + m.d_v),
            "s": B * H * S**2, "p": B * H * S**2, "o": n * H * m.d_v}
    if m.q_rank is not None:
        rows |= {"cq0": n * m.q_rank, "cq": n * m.q_rank}
    return rows
