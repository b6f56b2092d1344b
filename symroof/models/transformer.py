"""A decoder-only transformer as symbolic costs: parameters, per-op costs of a forward step,
and the whole-model summaries of lecture 1. Llama by default; its fields describe the other
families (MoE, MLA, sliding windows, GPT-2, GPT-NeoX, Gemma, Phi-3).

Every op of one forward step is a row of an ordered ``dict[str, Cost]`` with a path key
(``"attn/q_proj"``, ``"mlp/down"``); per-layer rows hold all L layers. The conventions,
op by op, are in docs/accounting.md; the NumPy model in :mod:`symroof.numeric` counts the
same rows independently and :func:`symroof.check` compares the two exactly.

>>> from symroof.symbols import B, S
>>> m = Transformer()                   # every dimension a symbol
>>> m.flops_per_token(S)
2*D*V + 4*H*L*S*d_h + 2*L*(3*D*F + 2*D*G*d_h + 2*D*H*d_h)
>>> sorted(m.ops(B, 1, S - 1))[:3]
['attn/av', 'attn/k_proj', 'attn/kv_write']
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

import sympy as sp

from ..conventions import current, using
from ..cost import Cost, as_dimension, as_exact
from ..symbols import D, F, G, H, L, V, d_h
from ..workload import as_step
from .attention_rows import CORE_MODES
from .blocks import POSITIONS, Attention, Blocks, DenseMLP, Head, Norm, from_fields
from .sizes import Sizes
from .spec import MLA, MoE

__all__ = ["Transformer", "OP_GROUPS", "group", "ATTENTION_MODES", "CORE_MODES"]

#: attention cores a training step and a report take (a forward step also takes "flash")
ATTENTION_MODES = ("naive", "fused")
_FLAGS = ("tied", "qkv_bias", "gated", "fused_qkv", "fused_gate_up", "o_bias", "mlp_bias",
          "parallel_residual", "post_norms", "embed_scale", "qk_norm")
#: the Llama family's values of the family fields (``Transformer.features``)
_FAMILY_DEFAULTS = {"norm": "rms", "act": "silu", "gated": True, "fused_qkv": False,
                    "fused_gate_up": False, "o_bias": False, "mlp_bias": False,
                    "positions": "rope", "rotary_dim": None, "parallel_residual": False,
                    "post_norms": False, "embed_scale": False, "attn_softcap": None,
                    "final_softcap": None, "qk_norm": False}

#: Op groups: group name -> the row keys it merges (docs/accounting.md).
OP_GROUPS: dict[str, list[str]] = {
    "embedding": ["embed", "pos_embed"],
    "norms": ["attn_norm", "mlp_norm", "final_norm", "attn/q_a_norm", "attn/kv_a_norm",
              "attn/post_norm", "mlp/post_norm", "attn/q_norm", "attn/k_norm"],
    "attention projections": ["attn/q_proj", "attn/k_proj", "attn/v_proj", "attn/o_proj",
                              "attn/qkv_proj", "attn/q_a_proj", "attn/q_b_proj",
                              "attn/kv_a_proj", "attn/kv_b_proj", "attn/q_absorb",
                              "attn/o_absorb"],
    "attention core": ["attn/scores", "attn/softmax", "attn/av", "attn/core"],
    "KV write": ["attn/kv_write"],
    "MLP": ["mlp/gate", "mlp/up", "mlp/down", "mlp/gate_up", "moe/gate", "moe/up",
            "moe/down", "moe/shared/gate", "moe/shared/up", "moe/shared/down"],
    "MoE routing": ["moe/router", "moe/route", "moe/combine", "moe/shared/scale"],
    "elementwise": ["attn/rope", "mlp/swiglu", "attn/residual", "mlp/residual", "mlp/geglu",
                    "mlp/gelu", "mlp/silu", "moe/swiglu", "moe/geglu", "moe/shared/swiglu",
                    "moe/shared/geglu", "logit_softcap"],
    "lm_head": ["lm_head"],
}

_ROW_KEYS = {k for keys in OP_GROUPS.values() for k in keys}


def group(rows: dict[str, Cost], groups: dict[str, list[str]] | None = None) -> dict[str, Cost]:
    """Merge rows into groups (sums of their rows; groups with no rows are left out)."""
    groups = OP_GROUPS if groups is None else groups
    known = {k for keys in groups.values() for k in keys}
    unknown = set(rows) - known
    if unknown:
        raise ValueError(f"rows {sorted(unknown)} belong to no group")
    return {name: sum(rows[k] for k in keys if k in rows)
            for name, keys in groups.items() if any(k in rows for k in keys)}


@dataclass(frozen=True)
class Transformer(Sizes):
    """A decoder-only transformer: Llama by default (RMSNorm, RoPE, GQA attention, SwiGLU
    MLP, no biases), and by its fields the other families people run.

    Dimensions default to the table's symbols; byte widths default to 2 (bf16).
    ``window`` is a sliding-window length, used by the layers ``window_pattern`` marks
    (repeated over the layers; Mistral: every layer, Gemma-2: ``(True, False)``).
    ``max_position`` is the longest context the release supports (``None``: not known); a
    report past it warns; learned positions (GPT-2) have that many rows. ``notes`` say what
    reading a config assumed or could not honour. The family fields:

    - ``norm``: "rms" or "layer" (LayerNorm with a bias); ``post_norms``: Gemma-2's norms
      on the attention and MLP outputs;
    - ``act``: "silu", "gelu_tanh" or "gelu"; ``gated``: act(x W_gate) * x W_up (SwiGLU,
      GeGLU) or act(x W_up); ``fused_gate_up``, ``fused_qkv``: one matmul for both, or all
      three (Phi-3, GPT-2, GPT-NeoX); ``qkv_bias``, ``o_bias``, ``mlp_bias``: biases;
    - ``positions``: "rope" (on the first ``rotary_dim`` dims of a head, default d_h) or
      "learned" (GPT-2); ``parallel_residual``: GPT-NeoX's x + attn(ln1 x) + mlp(ln2 x);
    - ``qk_norm``: Qwen3's RMSNorm of width d_h on every query and key head, after the
      projections and before RoPE;
    - ``embed_scale``: Gemma's sqrt(D) on the embedding; ``attn_softcap``,
      ``final_softcap``: Gemma-2's cap * tanh(x / cap) on scores and logits;
    - ``moe``: a :class:`~symroof.models.MoE` MLP; ``mla``: :class:`~symroof.models.MLA`
      attention; ``attn_block``: the KV block of the flash attention core.

    The fields spell the model; :attr:`blocks` is what it is made of (one block per part,
    each owning its parameters, rows, twin fields and operand arrays), and
    :meth:`from_blocks` goes back.

    >>> m = Transformer(D=4096, F=14336, L=32, H=32, G=8, d_h=128, V=128256)
    >>> m.params
    8030261248
    """

    D: Any = D
    F: Any = F
    L: Any = L
    H: Any = H
    G: Any = G
    d_h: Any = d_h
    V: Any = V
    tied: bool = False
    qkv_bias: bool = False
    window: Any = None
    w_bytes: Any = 2
    act_bytes: Any = 2
    kv_bytes: Any = 2
    name: str = "custom"
    source: str = ""
    max_position: Any = None
    notes: tuple[str, ...] = ()
    norm: str = "rms"
    act: str = "silu"
    gated: bool = True
    fused_qkv: bool = False
    fused_gate_up: bool = False
    o_bias: bool = False
    mlp_bias: bool = False
    positions: str = "rope"
    rotary_dim: Any = None
    parallel_residual: bool = False
    post_norms: bool = False
    embed_scale: bool = False
    attn_softcap: Any = None
    final_softcap: Any = None
    qk_norm: bool = False
    window_pattern: tuple[bool, ...] = (True,)
    attn_block: Any = 128
    moe: MoE | None = None
    mla: MLA | None = None

    def __post_init__(self) -> None:
        for dim in ("D", "F", "L", "H", "G", "d_h", "V", "attn_block"):
            object.__setattr__(self, dim, as_dimension(getattr(self, dim), dim))
        for flag in _FLAGS:
            if not isinstance(getattr(self, flag), bool):
                raise ValueError(f"{flag} must be True or False, got {getattr(self, flag)!r}")
        Norm(self.norm)  # the blocks refuse their own bad switches, in their own words
        DenseMLP(act=self.act)
        if self.positions not in POSITIONS:
            raise ValueError(f"positions must be one of {', '.join(POSITIONS)}, got "
                             f"{self.positions!r}")
        for length in ("window", "max_position", "rotary_dim"):
            if getattr(self, length) is not None:
                object.__setattr__(self, length, as_dimension(getattr(self, length), length))
        Head(softcap=self.final_softcap)
        pattern = self.window_pattern
        if (not isinstance(pattern, tuple) or not pattern
                or not all(isinstance(p, bool) for p in pattern)):
            raise ValueError(f"window_pattern must be a non-empty tuple of True/False, got "
                             f"{pattern!r}")
        notes = (self.notes,) if isinstance(self.notes, str) else tuple(self.notes)
        object.__setattr__(self, "notes", notes)
        for width in ("w_bytes", "act_bytes", "kv_bytes"):
            value = as_exact(getattr(self, width), width)
            if value.is_positive is not True:
                raise ValueError(f"{width} must be a positive number of bytes, got "
                                 f"{getattr(self, width)!r}")
            object.__setattr__(self, width, value)
        self._check_shapes()
        for name in ("attn_softcap", "final_softcap"):  # exact, as every figure: 50.0 -> 50
            if getattr(self, name) is not None:
                object.__setattr__(self, name, as_exact(getattr(self, name), name))

    def _check_shapes(self) -> None:
        from_fields(Attention, self)  # heads, MLA and its conflicts: the block's own checks
        if self.rotary_dim is not None and (self.rotary_dim - self.d_h).is_positive:
            raise ValueError(f"rotary_dim ({self.rotary_dim}) must not exceed d_h ({self.d_h})")
        if self.positions == "learned" and self.max_position is None:
            raise ValueError("learned positions need max_position (the table's rows)")
        if self.moe is not None and not isinstance(self.moe, MoE):
            raise ValueError(f"moe must be a MoE record or None, got {self.moe!r}")
        if self.moe is not None and self.L.is_number and self.moe.dense_layers > self.L:
            raise ValueError(f"moe.dense_layers ({self.moe.dense_layers}) exceeds L ({self.L})")

    @classmethod
    def from_blocks(cls, blocks: Blocks, **release: Any) -> Transformer:
        """The model made of ``blocks`` (:class:`~symroof.models.blocks.Blocks`);
        ``release``: name, source, max_position, notes.

        >>> m = Transformer(D=64, F=172, L=2, H=8, G=2, d_h=8, V=256, qk_norm=True)
        >>> Transformer.from_blocks(m.blocks) == m
        True
        """
        return cls(**blocks.fields() | release)

    def _context(self, S: sp.Expr) -> sp.Expr:
        """The context of a step (kept for callers: a sliding window is modelled, not
        refused; see :func:`symroof.models.attention_rows.context`)."""
        return S

    def replace(self, **changes: Any) -> Transformer:
        """A copy with changed fields (``m.replace(w_bytes=1)`` for int8 weights)."""
        return replace(self, **changes)

    def subs(self, mapping: dict | None = None, **kwargs: Any) -> Transformer:
        """Substitute numbers for symbolic dimensions: ``Transformer().subs(D=64, ...)``."""
        from ..cost import _check_substitution

        values = _check_substitution({**(mapping or {}), **kwargs})
        dims = {k: sp.sympify(getattr(self, k)).subs(values)
                for k in ("D", "F", "L", "H", "G", "d_h", "V")}
        specs = {k: getattr(self, k).subs(values) for k in ("moe", "mla")
                 if getattr(self, k) is not None}
        return replace(self, **dims, **specs)

    @property
    def features(self) -> tuple[str, ...]:
        """What this model has beyond the Llama family's rows (empty for Llama, Mistral,
        Qwen2).

        >>> Transformer(norm="layer", gated=False, act="gelu").features
        ('norm=layer', 'act=gelu', 'gated=False')
        """
        out = [f"{k}={getattr(self, k)}" for k, default in _FAMILY_DEFAULTS.items()
               if getattr(self, k) != default]
        return tuple(out + [k for k in ("moe", "mla") if getattr(self, k) is not None])

    @cached_property
    def blocks(self) -> Blocks:
        """The blocks this model is made of (:mod:`symroof.models.blocks`): its rows,
        parameters, operand arrays and the twin's fields are theirs.

        >>> Transformer(G=1).blocks.attention.G, Transformer(norm="layer").blocks.head.norm
        (1, Norm(kind='layer'))
        """
        return Blocks.of(self)

    # -- one forward step, op by op -----------------------------------------------------
    def ops(self, batch: Any, new_tokens: Any = None, cached: Any = 0, last_only: bool = False,
            attention: str = "naive", tokens_per_expert: Any = None,
            conventions: Any = None) -> dict[str, Cost]:
        """Costs of every op of one forward step over ``batch`` sequences, each adding
        ``new_tokens`` to ``cached`` ones (S = cached + new_tokens), as ``dict[str, Cost]``;
        ``batch`` may be a :class:`~symroof.Step` that says all three.

        ``attention``: "naive", "fused" or "flash" (attention_rows.core);
        ``tokens_per_expert``: the MoE routing, "balanced" (default), "worst" or counts
        (moe_rows.loads); ``conventions``: a profile name or
        :class:`~symroof.conventions.Conventions` (default: the one in force, "symroof").

        >>> from symroof.symbols import B, T
        >>> rows = Transformer().ops(B, T, 0)
        >>> rows["mlp/down"].flops
        2*B*D*F*L*T
        >>> Transformer().ops(B, T, 0, conventions="llm-viewer")["attn_norm"].flops
        7*B*D*L*T
        >>> import symroof as sr
        >>> Transformer().ops(sr.Step(B, T)) == rows
        True
        """
        with using(conventions) as cv:
            m = self._counted()
            rows = m._ops(batch, new_tokens, cached, last_only, attention, tokens_per_expert)
            omit = cv.omit
            unknown = [k for k in omit if k not in _ROW_KEYS]
            if unknown:
                raise ValueError(f"convention omit names unknown row(s) {', '.join(unknown)}; "
                                 f"rows are {', '.join(sorted(_ROW_KEYS))}")
            rows = {k: c_ for k, c_ in rows.items() if k not in omit}
            if cv.activation_traffic == "none":
                rows = {k: Cost(flops=c_.flops, useful_flops=c_.useful_flops,
                                weight_bytes=c_.weight_bytes, kv_bytes=c_.kv_bytes,
                                kv_store_bytes=c_.kv_store_bytes)
                        for k, c_ in rows.items()}
            return rows

    def _counted(self) -> Transformer:
        """The model the conventions in force count: this one, or with ``head_dim="D/H"``
        its d_h replaced by D/H (the one place that field is read: the per-op rows and the
        whole-model cost both count this model)."""
        return self if current().head_dim == "config" else self._head_dim_from_width()

    def _head_dim_from_width(self) -> Transformer:
        """This model with d_h = D/H (convention ``head_dim="D/H"``)."""
        d = self.D / self.H
        if d.is_number and not d.is_integer:
            raise ValueError(f"convention head_dim='D/H' needs H ({self.H}) to divide D "
                             f"({self.D})")
        return replace(self, d_h=d)

    def _ops(self, batch: Any, new_tokens: Any, cached: Any, last_only: bool, attention: str,
             tokens_per_expert: Any) -> dict[str, Cost]:
        if attention not in CORE_MODES:
            raise ValueError(f"attention must be one of {', '.join(CORE_MODES)}, got "
                             f"{attention!r}")
        B, T, c = as_step(batch, new_tokens, cached)
        return self.blocks.rows(B, T, c, last_only, attention, tokens_per_expert)
