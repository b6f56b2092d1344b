"""A model from blocks: each block a small frozen record that owns its parameters, its
forward rows, its backward rows and its piece of a training layer's graph, the NumPy twin's
fields for it and its operand arrays; a model is their composition (:class:`Blocks`), a
family a preset of them (:class:`Family`).

>>> from symroof.models.blocks import Attention, Norm
>>> Attention(G=1).heads().k_elems                    # MQA: one KV head
d_h
"""

from .attention import Attention
from .backprop import Graph, LayerGraph, Widths
from .base import KINDS, Array, Stream, fields_of, from_fields
from .compose import Blocks, Family
from .embedding import POSITIONS, Embedding, Head, Learned, Rope
from .mlp import DenseMLP, Experts, route_backward_flops
from .norm import Norm
from .residual import Residual

__all__ = ["Attention", "Array", "Blocks", "DenseMLP", "Embedding", "Experts", "Family",
           "Head", "KINDS", "Learned", "Norm", "POSITIONS", "Residual", "Rope", "Stream",
           "fields_of", "from_fields", "Graph", "LayerGraph", "Widths", "route_backward_flops"]
