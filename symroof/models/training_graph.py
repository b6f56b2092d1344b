"""One layer of a training step as data: the forward ops of a model's layer (the tensors
each reads and writes), which op writes each tensor, the tensors its backward reads and
the outputs of its weight matmuls. A layer is its attention block (GQA or MLA) and its MLP
block (dense or MoE), each block's graph written once here; a model with dense first
layers and MoE ones has two kinds of layer (:func:`layer_graphs`).
:mod:`symroof.models.training_memory` derives from it what each remat policy keeps and
reruns; the NumPy twin holds its own table of the same ops (``numeric/train_layer.py``).

Tensor names: x (the layer input), h1 (attention norm), q0 k0 v (projections), qn kn
(Qwen3's q/k norms), q k (after RoPE), s p (scores, softmax), o (attention output), y
(o_proj), yn (post norm), x1 (residual), h2 (MLP norm), g u (gate, up), a (activation),
y2 (down), y2n (post norm), x2 (the layer output); where an op is absent its input flows on.
MLA: cq0 cq (q latent, its norm), q0 (q_b_proj or q_proj), ckv_pe (kv_a_proj: the latent
and the RoPE key), ckv (its norm), q_pe k_pe (RoPE), kv (kv_b_proj's keys and values).
MoE: logits (router), idx w (routing: indices, weights), eg eu ea (each expert's gate, up,
SwiGLU), Y (the experts' outputs), sg su sa ys (the shared expert's), ysg (its gated
output), y2 (the combination).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, NamedTuple

from .rows import act_key
from .transformer import Transformer

__all__ = ["LayerGraph", "layer_graph", "layer_graphs", "trainable", "BLOCK_POLICIES"]

#: the remat policies MoE and MLA layers train under (kept-tensor tuples name the dense
#: layers' tensors: :data:`~symroof.models.training_memory.TENSORS`)
BLOCK_POLICIES = ("none", "selective", "matmul_outputs", "full")


class LayerGraph(NamedTuple):
    """One layer's forward as data: ``ops`` op key -> (tensors read, tensors written), in
    forward order; ``writer`` tensor -> the op key it is kept under; ``reads`` the tensors
    the layer's backward reads (docs/accounting.md, "Remat policies"); ``matmuls`` the
    weight matmuls' outputs that ``matmul_outputs`` keeps (with the layer input)."""

    ops: dict[str, tuple[tuple[str, ...], tuple[str, ...]]]
    writer: dict[str, str]
    reads: tuple[str, ...]
    matmuls: tuple[str, ...]


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


def _gqa(m: Transformer, attention: str) -> tuple[dict, tuple, tuple]:
    """The GQA block: its ops, the tensors its backward reads, its matmuls' outputs."""
    ops = _attention_ops(m, attention)
    q, k = ops["attn/core" if attention == "fused" else "attn/scores"][0][:2]
    reads = ["x", "h1", *(("q0", "k0") if m.qk_norm else ()), q, k, "v"]
    if attention == "naive":
        reads += ["p", *(("s",) if m.attn_softcap is not None else ())]
    reads += ["o", *(("y",) if m.post_norms else ())]
    return ops, tuple(reads), ("q0", "k0", "v", "y")


def _mla(m: Transformer) -> tuple[dict, tuple, tuple]:
    """The MLA block in its naive form: every head its own key and value (kv_b_proj), one
    RoPE key shared by the heads."""
    ops: dict = {"attn_norm": (("x",), ("h1",))}
    if m.mla.q_rank is not None:
        ops |= {"attn/q_a_proj": (("h1",), ("cq0",)), "attn/q_a_norm": (("cq0",), ("cq",)),
                "attn/q_b_proj": (("cq",), ("q0",))}
    else:
        ops["attn/q_proj"] = (("h1",), ("q0",))
    ops |= {"attn/kv_a_proj": (("h1",), ("ckv_pe",)), "attn/kv_a_norm": (("ckv_pe",), ("ckv",)),
            "attn/rope": (("q0", "ckv_pe"), ("q_pe", "k_pe")),
            "attn/kv_b_proj": (("ckv",), ("kv",)),
            "attn/scores": (("q0", "q_pe", "kv", "k_pe"), ("s",)),
            "attn/softmax": (("s",), ("p",)), "attn/av": (("p", "kv"), ("o",)),
            "attn/o_proj": (("o",), ("y",)), "attn/residual": (("x", "y"), ("x1",))}
    reads = ("x", "h1", "cq0", "cq", "q0", "ckv_pe", "ckv", "q_pe", "k_pe", "kv", "p", "o")
    return ops, reads, ("cq0", "q0", "ckv_pe", "kv", "y")


def _dense(m: Transformer) -> tuple[dict, tuple, tuple]:
    """The dense MLP block (gated or not, fused or not)."""
    ops = _mlp_ops(m)
    reads = (ops["mlp_norm"][0][0], "h2", *(("g",) if m.gated else ()), "u", "a",
             *(("y2",) if m.post_norms else ()))
    return ops, reads, (*(("g",) if m.gated else ()), "u", *(("y2",) if m.post_norms else ()))


def _moe(m: Transformer) -> tuple[dict, tuple, tuple]:
    """The MoE block: router, routing, each expert on its tokens, the shared expert (its
    sigmoid gate: Qwen2-MoE), the weighted combination."""
    moe, shared = m.moe, m.moe.shared_F != 0
    ops: dict = {"mlp_norm": (("x1",), ("h2",)), "moe/router": (("h2",), ("logits",)),
                 "moe/route": (("logits",), ("idx", "w")),
                 "moe/gate": (("h2", "idx"), ("eg",)), "moe/up": (("h2", "idx"), ("eu",)),
                 "moe/swiglu": (("eg", "eu"), ("ea",)), "moe/down": (("ea", "idx"), ("Y",))}
    sh: tuple[str, ...] = ()
    if shared:
        ops |= {"moe/shared/gate": (("h2",), ("sg",)), "moe/shared/up": (("h2",), ("su",)),
                "moe/shared/swiglu": (("sg", "su"), ("sa",)),
                "moe/shared/down": (("sa",), ("ys",))}
        sh = ("sg", "su", "sa", *(("ys",) if moe.shared_gate else ()))
    if moe.shared_gate:
        ops["moe/shared/scale"] = (("h2", "ys"), ("ysg",))
    out = ("ysg",) if moe.shared_gate else ("ys",) if shared else ()
    ops |= {"moe/combine": (("Y", "w", *out), ("y2",)), "mlp/residual": (("x1", "y2"), ("x2",))}
    reads = ("x1", "h2", "logits", "idx", "w", "eg", "eu", "ea", "Y", *sh)
    return ops, reads, ("logits", "eg", "eu", "Y", *(("sg", "su") if shared else ()))


def layer_graph(model: Transformer, attention: str = "naive", moe: bool | None = None
                ) -> LayerGraph:
    """The :class:`LayerGraph` of one layer of ``model`` (naive or fused attention core; an
    MoE layer, or with ``moe=False`` a dense one: default, the model's MoE layers).

    >>> g = layer_graph(Transformer())
    >>> g.ops["attn/av"], g.writer["q"], g.reads[:4]
    ((('p', 'v'), ('o',)), 'attn/rope', ('x', 'h1', 'q', 'k'))
    """
    m = model
    attn = _mla(m) if m.mla is not None else _gqa(m, attention)
    moe = m.moe is not None if moe is None else moe
    mlp = _moe(m) if moe else _dense(m)
    ops = attn[0] | mlp[0]
    writer = {"x": "layer_input"} | {t: key for key, (_, outs) in ops.items() for t in outs}
    reads = tuple(t for t in dict.fromkeys(attn[1] + mlp[1]) if t in writer)
    matmuls = tuple(t for t in writer if t in attn[2] + mlp[2])
    return LayerGraph(ops, writer, reads, matmuls)


def layer_graphs(model: Transformer, attention: str = "naive"
                 ) -> tuple[tuple[Any, LayerGraph], ...]:
    """Each kind of layer of ``model``: (how many layers, its :class:`LayerGraph`); one
    kind but for an MoE model with dense first layers (DeepSeek's).

    >>> from symroof.models import model
    >>> [(n, "moe/router" in g.ops) for n, g in layer_graphs(model("deepseek-v3"))]
    [(3, False), (58, True)]
    """
    m = model
    if m.moe is None:
        return ((m.L, layer_graph(m, attention)),)
    kinds = ((m.dense_layers, False), (m.moe_layers, True))
    return tuple((n, layer_graph(m, attention, moe)) for n, moe in kinds if n != 0)


def trainable(model: Transformer, remat: Any = "none", attention: str = "naive"
              ) -> Transformer:
    """``model`` as its training step runs it (MLA in the naive form), or one ValueError that
    names what the training rows do not cover yet: MLA with a fused core, MoE experts other
    than SwiGLU, kept-tensor tuples on MoE or MLA layers (the twin refuses the same).

    >>> from symroof.models import model
    >>> trainable(model("deepseek-v3")).mla.absorb
    False
    >>> trainable(model("deepseek-v3"), "full", "fused")
    Traceback (most recent call last):
    ...
    ValueError: deepseek-v3's latent attention trains with attention='naive', not 'fused'
    """
    m = model
    if m.moe is None and m.mla is None:
        return m
    if not isinstance(remat, str) or remat not in BLOCK_POLICIES:
        raise ValueError(f"remat={remat!r}: MoE and MLA layers train under "
                         f"{', '.join(BLOCK_POLICIES)} (kept-tensor tuples name the dense "
                         "layers' tensors)")
    if m.moe is not None and m.act != "silu":
        raise ValueError(f"training rows run SwiGLU experts; {m.name} has act={m.act!r}")
    if m.mla is None:
        return m
    if attention != "naive":
        raise ValueError(f"{m.name}'s latent attention trains with attention='naive', "
                         f"not {attention!r}")
    return m.replace(mla=replace(m.mla, absorb=False))
