"""The ends of the model: the token embedding, the positions (RoPE or a learned table)
and the head (final norm, lm_head, an optional logit softcap).

>>> from symroof.symbols import B, D, V
>>> s = Stream(D, 2, 2, 2)
>>> Embedding(V, scale=True).rows(B, s)["embed"].flops     # Gemma's sqrt(D) per element
B*D
>>> list(Head(Norm(), softcap=30).rows(B, V, s))
['final_norm', 'lm_head', 'logit_softcap']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sympy as sp

from ...cost import Cost, as_dimension
from ...numeric.spec import EmbeddingSpec, HeadSpec, PositionsSpec
from ...symbols import T as _T
from ...symbols import V as _V
from .. import backward as bw
from .. import backward_dense as bd
from .. import rows as rw
from .backprop import Widths
from .base import Array, Stream, Uses, cap, plain
from .norm import Norm

__all__ = ["Embedding", "Rope", "Learned", "Head", "POSITIONS"]

#: the kinds of positions a model can have
POSITIONS = ("rope", "learned")


@dataclass(frozen=True)
class Embedding:
    """The token embedding W_embed[V, D]: a gather of one row per token; ``scale``:
    Gemma's sqrt(D) on the result; ``tied``: the lm_head reads the same matrix.

    >>> from symroof.symbols import D
    >>> Embedding(V=50257).params(Stream(D, 2, 2, 2))
    {'embedding': 50257*D}
    """

    FIELDS = {"V": "V", "scale": "embed_scale", "tied": "tied"}

    V: Any = _V
    scale: bool = False
    tied: bool = False

    def params(self, s: Stream) -> dict[str, Any]:
        """V.D, under the key ``embedding``."""
        return {"embedding": self.V * s.D}

    def rows(self, n: Any, s: Stream) -> dict[str, Cost]:
        """The ``embed`` row of n tokens (:func:`symroof.models.rows.embed`)."""
        return {"embed": rw.embed(n, s.D, ab=s.ab, wb=s.wb, scaled=self.scale)}

    def arrays(self) -> dict[str, Array]:
        """W_embed[V, D] and the stream it starts, x[B, T, D]."""
        return {"W_embed": Array(("V", "D")), "x": Array(("B", "T", "D"), "act")}

    def twin(self) -> EmbeddingSpec:
        """The NumPy twin's spec of it."""
        return EmbeddingSpec(V=plain(self.V, "V"), tied=self.tied, embed_scale=self.scale)

    def backward(self, w: Widths) -> dict[str, Cost]:
        """``embed``: the scatter-add of the n gradient rows into W_embed's gradient (tied:
        added to the lm_head's; scaled: times sqrt(D) first,
        :func:`~symroof.models.backward.embedding_backward`).

        >>> from symroof.symbols import B, D
        >>> Embedding(scale=True).backward(Widths(B, Stream(D, 2, 2, 2), 2))["embed"].flops
        2*B*D
        """
        return {"embed": bw.embedding_backward(w.n, w.s.D, self.V, x_bytes=w.s.ab,
                                               grad_bytes=w.gb, accumulate=self.tied,
                                               scaled=self.scale)}

    def uses(self) -> dict[str, Uses]:
        """Its row's arrays: the gather from W_embed starts the stream ``x``."""
        return {"embed": Uses(writes="embed/x", weight="embed/W_embed")}


@dataclass(frozen=True)
class Rope:
    """Rotary positions on the first ``rotary_dim`` dims of every query and key head
    (None: all of the head, d_h); no parameters (cos and sin are constant tables).

    >>> from symroof.symbols import B, D, H, G, d_h
    >>> Rope().rope_row(B, H + G, d_h, 1, Stream(D, 2, 2, 2))["attn/rope"].flops
    3*B*d_h*(G + H)
    """

    FIELDS = {"kind": "positions", "rotary_dim": "rotary_dim"}
    kind = "rope"  # the Transformer's ``positions``

    rotary_dim: Any = None

    def __post_init__(self) -> None:
        if self.rotary_dim is not None:
            object.__setattr__(self, "rotary_dim", as_dimension(self.rotary_dim, "rotary_dim"))

    def rotated(self, d_h: Any) -> Any:
        """Dims of a head it rotates.

        >>> from symroof.symbols import d_h
        >>> Rope().rotated(d_h), Rope(16).rotated(64)
        (d_h, 16)
        """
        return d_h if self.rotary_dim is None else self.rotary_dim

    def params(self, s: Stream) -> dict[str, Any]:
        """None: the cos and sin tables are constants."""
        return {}

    def rows(self, n: Any, T: Any, s: Stream) -> dict[str, Cost]:
        """None of its own: RoPE's row is the attention's (``attn/rope``, :meth:`rope_row`)."""
        return {}

    def rope_row(self, n: Any, heads: Any, r: Any, T: Any, s: Stream) -> dict[str, Cost]:
        """``attn/rope`` over ``heads`` head vectors per token, r dims each."""
        return {"attn/rope": rw.rope(n, heads, r, T, ab=s.ab)}

    def arrays(self) -> dict[str, Array]:
        """None (the tables are built per step, not stored)."""
        return {}

    def twin(self) -> PositionsSpec:
        """The NumPy twin's spec of it: RoPE on ``rotary_dim`` dims of a head."""
        return PositionsSpec("rope", rotary_dim=plain(self.rotary_dim, "rotary_dim"))

    def backward(self, B: Any, S: Any, w: Widths) -> dict[str, Cost]:
        """None of its own: the inverse rotation is the attention's ``attn/rope``."""
        return {}

    def uses(self) -> dict[str, Uses]:
        """None of its own (``attn/rope`` is the attention's)."""
        return {}


@dataclass(frozen=True)
class Learned:
    """GPT-2's learned positions: a table W_pos[P, D] of ``max_position`` rows, added to
    the token vectors.

    >>> Learned(1024).params(Stream(768, 2, 2, 2))
    {'positions': 786432}
    """

    FIELDS = {"kind": "positions", "max_position": "max_position"}
    kind = "learned"  # the Transformer's ``positions``

    max_position: Any = None

    def rotated(self, d_h: Any) -> Any:
        """Dims of a head RoPE rotates: none."""
        return 0

    def params(self, s: Stream) -> dict[str, Any]:
        """P.D, under the key ``positions``."""
        return {"positions": self.max_position * s.D}

    def rows(self, n: Any, T: Any, s: Stream) -> dict[str, Cost]:
        """The ``pos_embed`` row (:func:`symroof.models.rows.pos_embed`)."""
        return {"pos_embed": rw.pos_embed(n, T, s.D, ab=s.ab, wb=s.wb)}

    def rope_row(self, n: Any, heads: Any, r: Any, T: Any, s: Stream) -> dict[str, Cost]:
        """No rotation: learned positions are added to the embedding instead."""
        return {}

    def arrays(self) -> dict[str, Array]:
        """The table W_pos[P, D]."""
        return {"W_pos": Array(("P", "D"))}

    def twin(self) -> PositionsSpec:
        """The NumPy twin's spec of it: a table of ``max_position`` rows."""
        return PositionsSpec("learned", max_position=plain(self.max_position, "max_position"))

    def backward(self, B: Any, S: Any, w: Widths) -> dict[str, Cost]:
        """``pos_embed``: the table's gradient, summed over the B sequences of S positions
        (:func:`~symroof.models.backward_dense.pos_embed_backward`)."""
        return {"pos_embed": bd.pos_embed_backward(B, S, w.s.D, x_bytes=w.s.ab,
                                                   grad_bytes=w.gb)}

    def uses(self) -> dict[str, Uses]:
        """Its row's arrays: the table's rows added to the stream ``x`` (read and written)."""
        return {"pos_embed": Uses(("embed/x",), "embed/x", weight="embed/W_pos")}


@dataclass(frozen=True)
class Head:
    """The end of the model: the final norm, the lm_head x @ W[D, V] (the embedding's
    matrix when tied), and Gemma-2's ``softcap`` * tanh(logits / softcap).

    >>> from symroof.symbols import V
    >>> Head().params(V, True, Stream(4096, 2, 2, 2))
    {'norms': 4096, 'lm_head': 0}
    """

    FIELDS = {"norm": "norm", "softcap": "final_softcap"}

    norm: Norm = Norm()
    softcap: Any = None

    def __post_init__(self) -> None:
        cap(self.softcap, "final_softcap")

    def params(self, V: Any, tied: bool, s: Stream) -> dict[str, Any]:
        """The final norm (key ``norms``) and W_lm[D, V] (0 when tied)."""
        return {"norms": self.norm.params(s.D), "lm_head": sp.Integer(0) if tied else V * s.D}

    def matmuls(self) -> tuple[str, ...]:
        """Its row that multiplies by a weight matrix: the lm_head (the embedding's matrix
        when tied; the embedding itself gathers rows, no matmul)."""
        return ("lm_head",)

    def rows(self, n_out: Any, V: Any, s: Stream) -> dict[str, Cost]:
        """``final_norm``, ``lm_head`` (:func:`symroof.models.rows.lm_head`) and
        ``logit_softcap`` over the n_out positions whose logits are computed."""
        rows = {"final_norm": self.norm.row(n_out, s.D, s),
                "lm_head": rw.lm_head(n_out, s.D, V, ab=s.ab, wb=s.wb)}
        if self.softcap is not None:
            rows["logit_softcap"] = rw.softcap(n_out * V, ab=s.ab)
        return rows

    def arrays(self, tied: bool) -> dict[str, Array]:
        """The final norm's weights, W_lm[D, V] unless tied, the logits[B, T, V]."""
        out = self.norm.arrays("final_norm", "D")
        out |= {} if tied else {"W_lm": Array(("D", "V"))}
        return out | {"logits": Array(("B", "T", "V"), "act")}

    def twin(self) -> HeadSpec:
        """The NumPy twin's spec of it (its norm's is the norm's own)."""
        return HeadSpec(final_softcap=plain(self.softcap, "final_softcap"))

    def backward(self, V: Any, w: Widths) -> dict[str, Cost]:
        """The loss's gradient over the n positions' V logits, (``logit_softcap``),
        ``lm_head/dx``, ``lm_head/dw`` and ``final_norm``, in the order they run.

        >>> from symroof.symbols import B, D, V
        >>> list(Head(softcap=30).backward(V, Widths(B, Stream(D, 2, 2, 2), 2)))
        ['loss', 'logit_softcap', 'lm_head/dx', 'lm_head/dw', 'final_norm']
        """
        rows = {"loss": bw.cross_entropy_backward(w.n, V, x_bytes=w.s.ab)}
        if self.softcap is not None:
            rows["logit_softcap"] = bd.softcap_backward(w.n * V, x_bytes=w.s.ab)
        per = rw.lm_head_flops  # the lm_head's own count of a multiply-add, as its forward's
        return rows | {"lm_head/dx": w.dx(w.s.D, V, per), "lm_head/dw": w.dw(w.s.D, V, count=per),
                       "final_norm": self.norm.backward(w.n, w.s.D, w)}

    def tensors(self, n: Any, D: Any, V: Any) -> dict[str, Any]:
        """Elements of what its backward reads, kept under every remat policy, by the op
        that wrote them: the final norm's input and output (n*D each), the logits the loss
        reads (the capped ones under a softcap, n*V) and the loss's logsumexp per token.

        >>> from symroof.symbols import B, D, V
        >>> Head(softcap=30).tensors(B, D, V)
        {'final_input': B*D, 'final_norm': B*D, 'logit_softcap': B*V, 'loss': B}
        """
        logits = "lm_head" if self.softcap is None else "logit_softcap"
        return {"final_input": n * D, "final_norm": n * D, logits: n * V, "loss": n}

    def uses(self, tied: bool, last_only: bool = False) -> dict[str, Uses]:
        """Per row, its arrays: the final norm reads the stream into ``norms/h``, the
        lm_head multiplies it by W_lm (the embedding's matrix when ``tied``) into the logits;
        ``last_only``: they run on each sequence's last position (1/T of each array).

        >>> Head().uses(True)["lm_head"].weight
        'embed/W_embed'
        >>> Head().uses(False, last_only=True)["lm_head"].part
        (('norms/h', 1/T), ('head/logits', 1/T))
        """
        x, h, logits = "embed/x", "norms/h", "head/logits"
        last = (lambda *paths: tuple((p, 1 / _T) for p in paths)) if last_only else \
            (lambda *paths: ())
        out = {"final_norm": Uses((x,), h, "head/final_norm", sums="D", part=last(x, h)),
               "lm_head": Uses((h,), logits, "embed/W_embed" if tied else "head/W_lm",
                               part=last(h, logits))}
        if self.softcap is not None:
            out["logit_softcap"] = Uses((logits,), logits, part=last(logits))
        return out
