"""A model as a composition of blocks, and a family as a preset of blocks.

:class:`Blocks` is what a :class:`~symroof.models.Transformer` is made of: the stream, the
embedding, the positions, L layers of (residual pattern, attention, MLP: dense on the first
layers and a mixture of experts on the rest when there is one) and the head. Its forward
rows, parameters, operand arrays, weight matmuls and twin specs are those of its blocks,
composed here and nowhere else (what a pipeline stage of them runs and holds:
:mod:`~symroof.models.blocks.stages`). A :class:`Family` is the blocks' switches without a
release's sizes.

>>> from symroof.models import model
>>> b = model("qwen3-8b").blocks
>>> b.attention.qk_norm, b.params()["attention"] == 36 * (2 * 4096 * 32 * 128
...                                                       + 2 * 4096 * 8 * 128 + 2 * 128)
(True, True)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sympy as sp

from ...cost import Cost
from ...numeric.config import Config
from ...symbols import B as _B
from ...symbols import S as _S
from ...symbols import T as _T
from .attention import Attention
from .backprop import LayerGraph, Widths
from .base import Array, Stream, Uses, fields_of, from_fields, plain
from .embedding import Embedding, Head, Learned, Rope
from .mlp import DenseMLP, Experts
from .norm import Norm
from .residual import Residual
from .stages import Stages

__all__ = ["Blocks", "Family"]


@dataclass(frozen=True)
class Blocks(Stages):
    """The blocks of one model: L layers, each attention and an MLP (``experts`` on the
    layers past ``experts.moe.dense_layers``), between the embedding and the head.

    >>> from symroof.models import Transformer
    >>> from symroof.symbols import B, T
    >>> b = Blocks.of(Transformer())
    >>> b.rows(B, T, 0, False, "naive", None)["mlp/down"].flops
    2*B*D*F*L*T
    """

    L: Any
    stream: Stream
    embedding: Embedding
    positions: Rope | Learned
    residual: Residual
    attention: Attention
    mlp: DenseMLP
    experts: Experts | None
    head: Head

    def __post_init__(self) -> None:
        if self.residual.norm != self.head.norm:
            raise ValueError(f"one norm kind for the whole model: the layers' is "
                             f"{self.residual.norm.kind!r}, the head's {self.head.norm.kind!r}")

    @classmethod
    def of(cls, m: Any) -> Blocks:
        """The blocks a :class:`~symroof.models.Transformer`'s fields describe."""
        norm = Norm(m.norm)
        positions = Learned if m.positions == "learned" else Rope
        return cls(L=m.L, stream=Stream(m.D, m.w_bytes, m.act_bytes, m.kv_bytes),
                   embedding=from_fields(Embedding, m), positions=from_fields(positions, m),
                   residual=from_fields(Residual, m, norm=norm),
                   attention=from_fields(Attention, m), mlp=from_fields(DenseMLP, m),
                   experts=None if m.moe is None else from_fields(Experts, m),
                   head=from_fields(Head, m, norm=norm))

    def fields(self) -> dict[str, Any]:
        """The :class:`~symroof.models.Transformer` fields these blocks stand for (the
        inverse of :meth:`of`; the release's name, source, context and widths aside).

        >>> from symroof.models import model
        >>> model("gpt2").blocks.fields()["positions"], model("gpt2").blocks.fields()["norm"]
        ('learned', 'layer')
        """
        s = self.stream
        out = {"D": s.D, "L": self.L, "w_bytes": s.wb, "act_bytes": s.ab, "kv_bytes": s.kvb}
        for block in (self.embedding, self.positions, self.residual, self.attention,
                      self.mlp, self.head, *((self.experts,) if self.experts else ())):
            out |= fields_of(block)
        return out

    @property
    def moe_layers(self) -> sp.Expr:
        """Layers whose MLP is the mixture of experts."""
        return sp.Integer(0) if self.experts is None else \
            self.L - self.experts.moe.dense_layers

    @property
    def dense_layers(self) -> sp.Expr:
        """Layers with the dense MLP."""
        return self.L - self.moe_layers

    def rows(self, B: Any, T: Any, c: Any, last_only: bool, mode: str,
             tokens_per_expert: Any) -> dict[str, Cost]:
        """One forward step's rows over B sequences of T new tokens after c cached ones;
        per-layer rows hold all their layers."""
        s, L, n = self.stream, self.L, B * T
        att, res = self.attention, self.residual
        rows = self.embedding.rows(n, s) | self.positions.rows(n, T, s)
        before = res.before_attention(n, s) | att.rows(n, T, self.positions, s)
        rows |= {k: L * c_ for k, c_ in before.items()}
        rows |= att.core_rows(mode, L, B, T, c, s)
        after = att.rows_after(n, s) | res.after_attention(n, s)
        rows |= {k: L * c_ for k, c_ in after.items()}
        if self.dense_layers != 0:
            rows |= {k: self.dense_layers * c_ for k, c_ in self.mlp.rows(n, s).items()}
        if self.experts is not None:
            rows |= self.experts.rows(n, self.moe_layers, tokens_per_expert, s)
        rows |= {k: L * c_ for k, c_ in res.after_mlp(n, s).items()}
        return rows | self.head.rows(B if last_only else n, self.embedding.V, s)

    def params(self) -> dict[str, sp.Expr]:
        """Parameters by part (embedding, positions, attention, mlp, experts, shared_experts,
        router, norms, lm_head): each block's, times the layers it is in.

        >>> from symroof.models import model
        >>> model("gpt2").blocks.params()["positions"]          # 1024 rows of 768
        786432
        """
        s, L = self.stream, self.L
        out = dict(self.embedding.params(s)) | self.positions.params(s)
        out |= {k: L * v for k, v in self.attention.params(s).items()}
        if self.dense_layers != 0:
            out |= {k: self.dense_layers * v for k, v in self.mlp.params(s).items()}
        if self.experts is not None:
            out |= {k: self.moe_layers * v for k, v in self.experts.params(s).items()}
        head = self.head.params(self.embedding.V, self.embedding.tied, s)
        out["norms"] = (self.residual.norms * L + 1) * self.residual.norm.params(s.D)
        return out | {"lm_head": sp.sympify(head["lm_head"])}

    def matmul_params(self) -> sp.Expr:
        """What a token multiplies by: every layer's matrices and the lm_head."""
        s, lm_head = self.stream, self.embedding.V * self.stream.D
        attention, mlp = self.attention.matmul_params(s), self.mlp.matmul_params(s)
        if self.experts is None:
            return self.L * (attention + mlp) + lm_head
        return (self.L * attention + self.dense_layers * mlp
                + self.moe_layers * self.experts.matmul_params(s) + lm_head)

    def matmuls(self) -> tuple[str, ...]:
        """The forward rows that multiply by a weight matrix (6ND counts them: forward, dX
        and dW), each block's in the order they run: attention, the dense MLP (when there
        are dense layers), the experts, the lm_head.

        >>> from symroof.models import model
        >>> model("phi-3-mini").blocks.matmuls()
        ('attn/qkv_proj', 'attn/o_proj', 'mlp/gate_up', 'mlp/down', 'lm_head')
        """
        mlp = self.mlp.matmuls() if self.dense_layers != 0 else ()
        experts = self.experts.matmuls() if self.experts is not None else ()
        return (*self.attention.matmuls(), *mlp, *experts, *self.head.matmuls())

    def outside(self) -> tuple[str, ...]:
        """The forward rows outside the layers (each once a step: the embedding's, the
        positions', the head's; :meth:`uses` marks them ``once``).

        >>> from symroof.models import model
        >>> model("gpt2").blocks.outside()
        ('embed', 'pos_embed', 'final_norm', 'lm_head')
        """
        first, last = self.ends()
        return first + last

    def arrays(self) -> dict[str, Array]:
        """Every operand by path (``embed/W_embed``, ``attn/W_q``, ``mlp/W_down``,
        ``moe/W_up_e``, ``norms/attn_norm``, ``head/W_lm``): what a layout partitions.

        >>> from symroof.models import model
        >>> print(model("llama-3.1-8b").blocks.arrays()["attn/K"])
        [B, S, G, d_h] kv
        """
        out = {f"embed/{k}": a for k, a in self.embedding.arrays().items()}
        out |= {f"embed/{k}": a for k, a in self.positions.arrays().items()}
        out |= {f"norms/{k}": a for k, a in self.residual.arrays().items()}
        out |= {f"attn/{k}": a for k, a in self.attention.arrays().items()}
        if self.dense_layers != 0:
            out |= {f"mlp/{k}": a for k, a in self.mlp.arrays().items()}
        if self.experts is not None:
            out |= {f"moe/{k}": a for k, a in self.experts.arrays().items()}
        return out | {f"head/{k}": a for k, a in self.head.arrays(self.embedding.tied).items()}

    def dims(self) -> dict[str, Any]:
        """The size of every dimension name its arrays use (the step's B, T, S aside; a
        name like ``H+2*G`` is an expression in these).

        >>> from symroof.models import model
        >>> model("gpt2").blocks.dims()["P"]
        1024
        """
        a, s = self.attention, self.stream
        out = {"D": s.D, "F": self.mlp.F, "H": a.H, "G": a.G, "d_h": a.d_h,
               "V": self.embedding.V,  # d_rot: the dims of a head RoPE rotates
               "d_rot": self.positions.rotated(a.d_h) if a.latent is None else a.latent.d_rope}
        if isinstance(self.positions, Learned):
            out["P"] = self.positions.max_position
        if a.latent is not None:
            m = a.latent
            out |= {"kv_rank": m.kv_rank, "d_nope": m.d_nope, "d_rope": m.d_rope,
                    "d_v": m.d_v, "d_qk": m.d_qk}
            out |= {} if m.q_rank is None else {"q_rank": m.q_rank}
        if self.experts is not None:
            out |= {"E": self.experts.moe.E, "F_e": self.experts.moe.F,
                    "F_s": self.experts.moe.shared_F, "k": self.experts.moe.k}
        return out

    def shape(self, path: str) -> tuple[Any, ...]:
        """The sizes of the array at ``path``, one per dimension (a name is a size of
        :meth:`dims`, a step symbol B, T or S, or a sum of products of them and integers).

        >>> from symroof.models import model
        >>> b = model("phi-3-mini").blocks
        >>> b.shape("attn/W_qkv"), b.shape("attn/K")
        ((3072, 96, 96), (B, S, 32, 96))
        """
        sizes = self.dims() | {"B": _B, "T": _T, "S": _S}

        def size(name: str) -> Any:
            total = 0
            for term in name.split("+"):
                product = 1
                for factor in term.split("*"):
                    if factor.isdigit():
                        product *= int(factor)
                    elif factor in sizes:
                        product *= sizes[factor]
                    else:
                        raise ValueError(f"array {path}: dimension {factor!r} is not one of "
                                         f"{', '.join(sizes)}")
                total += product
            return sp.sympify(total)

        return tuple(size(d) for d in self.arrays()[path].dims)

    def repeats(self, path: str) -> sp.Expr:
        """How many copies of the array at ``path`` the model holds: one per layer it is in
        (the dense MLP's: the dense layers; the experts': the MoE layers).

        >>> from symroof.models import model
        >>> b = model("deepseek-v3").blocks
        >>> b.repeats("mlp/W_down"), b.repeats("moe/W_down_e"), b.repeats("head/W_lm")
        (3, 58, 1)
        """
        part = path.split("/")[0]
        return {"embed": sp.Integer(1), "head": sp.Integer(1), "mlp": self.dense_layers,
                "moe": self.moe_layers}.get(part, sp.sympify(self.L))

    def uses(self, last_only: bool = False) -> dict[str, Uses]:
        """Per forward row, the arrays it reads and writes (by :meth:`arrays` path), each
        block's, with the layers the row holds (``repeats``) and ``once`` for the rows
        outside the layers: what a layout's partitions of the arrays are read through (and
        what each row moves of each, ``Uses.part``). ``last_only``: the head runs on each sequence's
        last position (as ``ops(..., last_only=True)``).

        >>> from symroof.models import model
        >>> u = model("llama-3.1-8b").blocks.uses()["attn/o_proj"]
        >>> u.reads, u.writes, u.weight, u.repeats
        (('attn/O',), 'norms/y', 'attn/W_o', 32)
        """
        def layers(uses: dict[str, Uses], n: Any) -> dict[str, Uses]:
            return {k: u._replace(repeats=n) for k, u in uses.items()}

        rotated = self.positions.rotated(self.attention.d_h)
        out = {k: u._replace(once=True) for k, u in
               (self.embedding.uses() | self.positions.uses()
                | self.head.uses(self.embedding.tied, last_only)).items()}
        out |= layers(self.residual.uses() | self.attention.uses(rotated), self.L)
        if self.dense_layers != 0:
            out |= layers(self.mlp.uses(), self.dense_layers)
        if self.experts is not None:
            out |= layers(self.experts.uses(), self.moe_layers)
        return out

    def twin(self, name: str = "custom") -> Config:
        """The NumPy twin's :class:`~symroof.numeric.Config`: D, L and each block's twin spec
        (:mod:`symroof.numeric.spec`, plain numbers; the twin reads these records, never a
        formula); a symbol where the twin needs a number is refused, naming it.

        >>> from symroof.models import model
        >>> cfg = model("gemma-2-9b").blocks.twin()
        >>> cfg.post_norms, cfg.final_softcap, cfg.window_pattern
        (True, 30, (True, False))
        """
        D, L = plain(self.stream.D, "D"), plain(self.L, "L")
        parts = (self.embedding, self.positions, self.residual, self.residual.norm,
                 self.attention, self.mlp, self.head)
        return Config.of(D, L, *(p.twin() for p in parts), name=name,
                         moe=None if self.experts is None else self.experts.twin())

    # -- training: the backward rows and the layer graphs, each block's composed ---------
    def backward_rows(self, B: Any, S: Any, mode: str, tokens_per_expert: Any, gb: Any,
                      recompute: dict[str, Cost] | None = None) -> dict[str, Cost]:
        """A training step's backward rows over B sequences of S tokens, in the order they
        run, keys ``bwd/...``: the head's (the loss to the final norm), ``recompute`` (the
        forward rows a remat policy reruns, keys as given: they run before the layers'
        backward), the layers' (per-layer rows hold all their layers, as :meth:`rows`), the
        positions' and the embedding's; gradients written at ``gb`` bytes per element.

        >>> from symroof.models import Transformer
        >>> from symroof.symbols import B, S
        >>> rows = Blocks.of(Transformer()).backward_rows(B, S, "naive", None, 2)
        >>> list(rows)[:2], list(rows)[-3:]
        (['bwd/loss', 'bwd/lm_head/dx'], ['bwd/attn_norm', 'bwd/attn/residual', 'bwd/embed'])
        """
        w = Widths(B * S, self.stream, gb)
        head = self.head.backward(self.embedding.V, w)
        ends = self.positions.backward(B, S, w) | self.embedding.backward(w)
        return {f"bwd/{k}": c for k, c in head.items()} | (recompute or {}) | {
            f"bwd/{k}": c for k, c in (self.layers_backward(B, S, mode, tokens_per_expert, w)
                                       | ends).items()}

    def layers_backward(self, B: Any, S: Any, mode: str, tokens_per_expert: Any, w: Widths
                        ) -> dict[str, Cost]:
        """The backward rows of all L layers, block by block (keys without ``bwd/``): the
        residual's post norm, the dense MLP's (its layers), the MLP norm and residual sum
        (all L), the experts' (the MoE layers), then the attention block's: o_proj, the
        core (windowed and global layers), its projections, the norm and residual sum."""
        L, res, att = self.L, self.residual, self.attention

        def each(rows: dict[str, Cost], layers: Any = L) -> dict[str, Cost]:
            return {k: layers * c for k, c in rows.items()} if layers != 0 else {}

        rows = each(res.backward_mlp_out(w)) | each(self.mlp.backward(w), self.dense_layers)
        rows |= each(res.backward_mlp_in(w))
        if self.experts is not None:
            rows |= self.experts.backward(w, self.moe_layers, tokens_per_expert)
        rows |= each(res.backward_attention_out(w) | att.backward_out(w))
        rows |= att.backward_core(mode, L, B, S, self.stream)
        return rows | each(att.backward_in(w, S, self.positions) | res.backward_attention_in(w))

    def layer_graph(self, mode: str = "naive", moe: bool | None = None) -> LayerGraph:
        """One layer's forward as data (:class:`~symroof.models.blocks.LayerGraph`), its
        blocks' pieces in order: the attention norm, the attention block, the post norm and
        residual add, the MLP norm, the MLP (the experts' with ``moe``; default: the MoE
        layers' when there are experts), the post norm and residual add.

        >>> from symroof.models import model
        >>> g = model("gemma-2-9b").blocks.layer_graph()
        >>> g.writer["yn"], g.reads[-3:]
        ('attn/post_norm', ('u', 'a', 'y2'))
        """
        res = self.residual
        moe = self.experts is not None if moe is None else moe
        mlp = self.experts.graph() if moe else self.mlp.graph()
        return LayerGraph.of(res.graph_attention_in()
                             | self.attention.graph(mode, self.positions)
                             | res.graph_attention_out() | res.graph_mlp_in() | mlp
                             | res.graph_mlp_out())

    def layer_graphs(self, mode: str = "naive") -> tuple[tuple[Any, LayerGraph], ...]:
        """Each kind of layer: (how many layers, its graph); one kind but for experts after
        dense first layers (DeepSeek's).

        >>> from symroof.models import model
        >>> [(n, "moe/router" in g.ops) for n, g in model("deepseek-v3").blocks.layer_graphs()]
        [(3, False), (58, True)]
        """
        if self.experts is None:
            return ((self.L, self.layer_graph(mode)),)
        kinds = ((self.dense_layers, False), (self.moe_layers, True))
        return tuple((n, self.layer_graph(mode, moe)) for n, moe in kinds if n != 0)

    def tensors(self, B: Any, S: Any, mode: str) -> dict[str, Any]:
        """Elements per layer of every tensor a layer may keep, by the graphs' names: the
        residual stream's, the attention block's, the MLP's and the experts'.

        >>> from symroof.models import model
        >>> model("llama-3.1-8b").blocks.tensors(1, 2, "naive")["p"]    # 32 heads x 2 x 2
        128
        """
        n, D = B * S, self.stream.D
        out = self.residual.tensors(n, D) | self.attention.tensors(B, S, mode)
        out |= self.mlp.tensors(n)
        return out | ({} if self.experts is None else self.experts.tensors(n, D))


@dataclass(frozen=True)
class Family:
    """A family: its blocks with the switches set and the sizes left to each release; its
    ``fields`` are what a preset or a Hugging Face config of the family adds to its sizes.

    >>> f = Family("qwen3", (Attention(qk_norm=True),), model_types=("qwen3",))
    >>> f.fields()
    {'qk_norm': True}
    """

    name: str
    blocks: tuple[Any, ...] = ()
    model_types: tuple[str, ...] = ()

    def fields(self) -> dict[str, Any]:
        """The Transformer fields its blocks set (those that differ from the defaults)."""
        out: dict[str, Any] = {}
        for block in self.blocks:
            out |= fields_of(block, changed=True)
        return out
