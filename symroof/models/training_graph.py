"""One layer of a training step as data: the forward ops of a model's layer (the tensors
each reads and writes), which op writes each tensor, and the tensors its backward reads.
:mod:`symroof.models.training_memory` derives from it what each remat policy keeps and
reruns; the NumPy twin holds its own table of the same ops (``numeric/train_layer.py``).

Tensor names: x (the layer input), h1 (attention norm), q0 k0 v (projections), qn kn
(Qwen3's q/k norms), q k (after RoPE), s p (scores, softmax), o (attention output), y
(o_proj), yn (post norm), x1 (residual), h2 (MLP norm), g u (gate, up), a (activation),
y2 (down), y2n (post norm), x2 (the layer output); where an op is absent its input flows on.
"""

from __future__ import annotations

from typing import NamedTuple

from .rows import act_key
from .transformer import Transformer

__all__ = ["LayerGraph", "layer_graph"]


class LayerGraph(NamedTuple):
    """One layer's forward as data: ``ops`` op key -> (tensors read, tensors written), in
    forward order; ``writer`` tensor -> the op key it is kept under; ``reads`` the tensors
    the layer's backward reads (docs/accounting.md, "Remat policies")."""

    ops: dict[str, tuple[tuple[str, ...], tuple[str, ...]]]
    writer: dict[str, str]
    reads: tuple[str, ...]


def _attention_ops(m: Transformer, attention: str) -> dict:
    """The attention block's ops (tensor names as the NumPy twin's: x, h1, q0, k0, v, ...)."""
    ops: dict = {"attn_norm": (("x",), ("h1",))}
    if m.fused_qkv:
        ops["attn/qkv_proj"] = (("h1",), ("q0", "k0", "v"))
    else:
        ops |= {f"attn/{t}_proj": (("h1",), (t + "0" if t != "v" else "v",)) for t in "qkv"}
    q, k = "q0", "k0"
    if m.qk_norm:
        ops |= {"attn/q_norm": (("q0",), ("qn",)), "attn/k_norm": (("k0",), ("kn",))}
        q, k = "qn", "kn"
    if m.positions == "rope":
        ops["attn/rope"] = ((q, k), ("q", "k"))
        q, k = "q", "k"
    if attention == "naive":
        ops |= {"attn/scores": ((q, k), ("s",)), "attn/softmax": (("s",), ("p",)),
                "attn/av": (("p", "v"), ("o",))}
    else:  # the fused core writes o and the logsumexp
        ops["attn/core"] = ((q, k, "v"), ("o",))
    ops["attn/o_proj"] = (("o",), ("y",))
    y = "y"
    if m.post_norms:
        ops["attn/post_norm"] = (("y",), ("yn",))
        y = "yn"
    return ops | {"attn/residual": (("x", y), ("x1",))}


def _mlp_ops(m: Transformer) -> dict:
    """The MLP block's ops, from its norm to the residual add (the next layer's input)."""
    ops: dict = {"mlp_norm": (("x" if m.parallel_residual else "x1",), ("h2",))}
    if not m.gated:
        ops["mlp/up"] = (("h2",), ("u",))
    elif m.fused_gate_up:
        ops["mlp/gate_up"] = (("h2",), ("g", "u"))
    else:
        ops |= {"mlp/gate": (("h2",), ("g",)), "mlp/up": (("h2",), ("u",))}
    ops[f"mlp/{act_key(m.act, m.gated)}"] = (("g", "u") if m.gated else ("u",), ("a",))
    ops["mlp/down"] = (("a",), ("y2",))
    y = "y2"
    if m.post_norms:
        ops["mlp/post_norm"] = (("y2",), ("y2n",))
        y = "y2n"
    return ops | {"mlp/residual": (("x1", y), ("x2",))}


def layer_graph(model: Transformer, attention: str = "naive") -> LayerGraph:
    """The :class:`LayerGraph` of one layer of ``model`` (naive or fused attention core).

    >>> g = layer_graph(Transformer())
    >>> g.ops["attn/av"], g.writer["q"], g.reads[:4]
    ((('p', 'v'), ('o',)), 'attn/rope', ('x', 'h1', 'q', 'k'))
    """
    m = model
    ops = _attention_ops(m, attention) | _mlp_ops(m)
    writer = {"x": "layer_input"} | {t: key for key, (_, outs) in ops.items() for t in outs}
    q, k = ops["attn/core" if attention == "fused" else "attn/scores"][0][:2]
    reads = ["x", "h1", *(("q0", "k0") if m.qk_norm else ()), q, k, "v"]
    if attention == "naive":
        reads += ["p", *(("s",) if m.attn_softcap is not None else ())]
    reads += ["o", *(("y",) if m.post_norms else ()), ops["mlp_norm"][0][0], "h2",
              *(("g",) if m.gated else ()), "u", "a", *(("y2",) if m.post_norms else ())]
    return LayerGraph(ops, writer, tuple(dict.fromkeys(reads)))
