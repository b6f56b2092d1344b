"""One layer of a training step as data: the forward ops of a model's layer (the tensors
each reads and writes), which op writes each tensor, the tensors its backward reads and
the outputs of its weight matmuls. Each block owns its piece (``graph``:
:class:`~symroof.models.blocks.Graph`) and :meth:`Blocks.layer_graphs
<symroof.models.blocks.Blocks.layer_graphs>` composes them; a model with dense first
layers and MoE ones has two kinds of layer. :mod:`symroof.models.training_memory` derives
from it what each remat policy keeps and reruns; the NumPy twin holds its own table of the
same ops (``numeric/train_layer.py``). This module keeps the public names and says what
training covers (:func:`trainable`).

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
from typing import Any

from .blocks import LayerGraph
from .transformer import Transformer

__all__ = ["LayerGraph", "layer_graph", "layer_graphs", "trainable", "BLOCK_POLICIES"]

#: the remat policies MoE and MLA layers train under (kept-tensor tuples name the dense
#: layers' tensors: :data:`~symroof.models.training_memory.TENSORS`)
BLOCK_POLICIES = ("none", "selective", "matmul_outputs", "full")


def layer_graph(model: Transformer, attention: str = "naive", moe: bool | None = None
                ) -> LayerGraph:
    """The :class:`LayerGraph` of one layer of ``model`` (naive or fused attention core; an
    MoE layer, or with ``moe=False`` a dense one: default, the model's MoE layers), its
    blocks' (:meth:`~symroof.models.blocks.Blocks.layer_graph`).

    >>> g = layer_graph(Transformer())
    >>> g.ops["attn/av"], g.writer["q"], g.reads[:4]
    ((('p', 'v'), ('o',)), 'attn/rope', ('x', 'h1', 'q', 'k'))
    """
    return model.blocks.layer_graph(attention, moe)


def layer_graphs(model: Transformer, attention: str = "naive"
                 ) -> tuple[tuple[Any, LayerGraph], ...]:
    """Each kind of layer of ``model``: (how many layers, its :class:`LayerGraph`); one
    kind but for an MoE model with dense first layers (DeepSeek's).

    >>> from symroof.models import model
    >>> [(n, "moe/router" in g.ops) for n, g in layer_graphs(model("deepseek-v3"))]
    [(3, False), (58, True)]
    """
    return model.blocks.layer_graphs(attention)


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
