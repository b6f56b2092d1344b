"""The blocks' twin specs: one small record per block of the model (embedding, positions,
residual pattern, norm, attention, MLP, mixture of experts, head), its switches and sizes as
plain numbers, each checked where it is declared.

A block of :mod:`symroof.models.blocks` says what it is to the twin by returning its record
(``Attention(...).twin()`` is an :class:`AttentionSpec`); the twin's
:class:`~symroof.numeric.config.Config` has no switches of its own: its fields are these
records' (:data:`PARTS`). The records hold no formula (the twin never imports one), only
what the NumPy code branches on.

>>> AttentionSpec(H=8, G=2, d_h=16).qk_norm, MLPSpec(F=172, act="gelu").gated
(False, True)
>>> AttentionSpec(H=8, G=3, d_h=16)
Traceback (most recent call last):
...
ValueError: H (8) must be divisible by G (3): each KV head serves H/G query heads
"""

from __future__ import annotations

import numbers
import operator
from dataclasses import dataclass, fields
from typing import Any

__all__ = ["EmbeddingSpec", "PositionsSpec", "ResidualSpec", "NormSpec", "AttentionSpec",
           "MLPSpec", "MoESpec", "MLASpec", "HeadSpec", "PARTS", "positive_int"]


def positive_int(value: Any, name: str, zero: bool = False) -> int:
    """``value`` as an int when it is a positive (``zero``: non-negative) integer, else a
    ValueError naming the field.

    >>> positive_int(0, "window")
    Traceback (most recent call last):
    ...
    ValueError: window must be a positive integer, got 0
    """
    if (isinstance(value, bool) or not isinstance(value, numbers.Integral)
            or value < (0 if zero else 1)):
        raise ValueError(f"{name} must be a {'non-negative' if zero else 'positive'} integer, "
                         f"got {value!r}")
    return operator.index(value)


def _optional_int(value: Any, name: str) -> int | None:
    return None if value is None else positive_int(value, name)


def _bools(record: Any, *names: str) -> None:
    for name in names:
        if not isinstance(getattr(record, name), bool):
            raise ValueError(f"{name} must be a bool, got {getattr(record, name)!r}")


def _choice(value: Any, name: str, known: tuple[str, ...]) -> None:
    if value not in known:
        raise ValueError(f"{name} must be one of {', '.join(known)}, got {value!r}")


def _cap(value: Any, name: str) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Real)
                              or not value > 0):
        raise ValueError(f"{name} must be a positive number or None, got {value!r}")


def _set(record: Any, name: str, value: Any) -> None:
    object.__setattr__(record, name, value)


@dataclass(frozen=True)
class EmbeddingSpec:
    """The token embedding: V rows; ``tied`` to the lm_head; ``embed_scale`` (Gemma: x sqrt(D))."""

    V: int
    tied: bool = False
    embed_scale: bool = False

    def __post_init__(self) -> None:
        _set(self, "V", positive_int(self.V, "V"))
        _bools(self, "tied", "embed_scale")


@dataclass(frozen=True)
class PositionsSpec:
    """Positions: ``"rope"`` (on ``rotary_dim`` dims of a head; None: all) or ``"learned"``
    (a table of ``max_position`` rows)."""

    positions: str = "rope"
    rotary_dim: int | None = None
    max_position: int | None = None

    def __post_init__(self) -> None:
        _choice(self.positions, "positions", ("rope", "learned"))
        _set(self, "rotary_dim", _optional_int(self.rotary_dim, "rotary_dim"))
        _set(self, "max_position", _optional_int(self.max_position, "max_position"))
        if self.positions == "learned" and self.max_position is None:
            raise ValueError("learned positions need max_position")


@dataclass(frozen=True)
class ResidualSpec:
    """The residual pattern: attention and MLP side by side (``parallel_residual``), a norm
    after each block too (``post_norms``)."""

    parallel_residual: bool = False
    post_norms: bool = False

    def __post_init__(self) -> None:
        _bools(self, "parallel_residual", "post_norms")


@dataclass(frozen=True)
class NormSpec:
    """The norm of every layer and of the head: ``"rms"`` or ``"layer"``."""

    norm: str = "rms"

    def __post_init__(self) -> None:
        _choice(self.norm, "norm", ("rms", "layer"))


@dataclass(frozen=True)
class MLASpec:
    """Multi-head latent attention (:class:`symroof.models.MLA`)."""

    kv_rank: int
    d_nope: int
    d_rope: int
    d_v: int
    q_rank: int | None = None
    absorb: bool = True

    def __post_init__(self) -> None:
        for name in ("kv_rank", "d_nope", "d_rope", "d_v"):
            _set(self, name, positive_int(getattr(self, name), f"MLA {name}"))
        _set(self, "q_rank", _optional_int(self.q_rank, "MLA q_rank"))
        _bools(self, "absorb")
        if self.d_rope % 2:
            raise ValueError(f"MLA d_rope must be even (RoPE rotates pairs), got {self.d_rope}")


@dataclass(frozen=True)
class AttentionSpec:
    """Attention: H query heads over G KV heads of d_h; biases, a fused qkv, per-head q/k
    norms (Qwen3), a softcap of the scores, a sliding ``window`` on the layers
    ``window_pattern`` marks (repeated), the flash kernel's ``attn_block``; ``mla``: latent
    attention instead."""

    H: int
    G: int
    d_h: int
    qkv_bias: bool = False
    fused_qkv: bool = False
    o_bias: bool = False
    qk_norm: bool = False  # an RMSNorm of width d_h on every query and key head (Qwen3)
    attn_softcap: float | None = None
    window: int | None = None
    window_pattern: tuple[bool, ...] = (True,)
    attn_block: int = 128
    mla: MLASpec | None = None

    def __post_init__(self) -> None:
        for name in ("H", "G", "d_h", "attn_block"):
            _set(self, name, positive_int(getattr(self, name), name))
        if self.H % self.G:
            raise ValueError(f"H ({self.H}) must be divisible by G ({self.G}): "
                             f"each KV head serves H/G query heads")
        _set(self, "window", _optional_int(self.window, "window"))
        _bools(self, "qkv_bias", "fused_qkv", "o_bias", "qk_norm")
        _cap(self.attn_softcap, "attn_softcap")
        if not self.window_pattern or not all(isinstance(w, bool) for w in self.window_pattern):
            raise ValueError(f"window_pattern must be a non-empty tuple of bools, got "
                             f"{self.window_pattern!r}")
        if self.mla is not None and not isinstance(self.mla, MLASpec):
            raise ValueError(f"mla must be an MLASpec or None, got {self.mla!r}")


@dataclass(frozen=True)
class MLPSpec:
    """The dense MLP: width F, ``act`` (silu, gelu_tanh, gelu), gated or not, one fused
    gate_up matmul, biases."""

    F: int
    act: str = "silu"
    gated: bool = True
    fused_gate_up: bool = False
    mlp_bias: bool = False

    def __post_init__(self) -> None:
        _set(self, "F", positive_int(self.F, "F"))
        _choice(self.act, "act", ("silu", "gelu_tanh", "gelu"))
        _bools(self, "gated", "fused_gate_up", "mlp_bias")


@dataclass(frozen=True)
class MoESpec:
    """A mixture-of-experts MLP: E experts of width F, top-k, an optional shared expert of
    width ``shared_F``; the routing switches of :class:`symroof.models.MoE` (same names)."""

    E: int
    k: int
    F: int
    shared_F: int = 0
    shared_gate: bool = False
    router: str = "softmax"
    router_bias: bool = False
    norm_topk: bool = False
    scale: float = 1.0
    groups: int = 1
    topk_groups: int = 1
    dense_layers: int = 0

    def __post_init__(self) -> None:
        for name in ("E", "k", "F", "groups", "topk_groups"):
            _set(self, name, positive_int(getattr(self, name), f"MoE {name}"))
        for name in ("shared_F", "dense_layers"):
            _set(self, name, positive_int(getattr(self, name), f"MoE {name}", zero=True))
        _choice(self.router, "MoE router", ("softmax", "sigmoid"))
        _bools(self, "shared_gate", "router_bias", "norm_topk")
        _cap(self.scale, "MoE scale")
        if self.k > self.E or self.E % self.groups or self.topk_groups > self.groups:
            raise ValueError(f"MoE needs k <= E, groups dividing E, topk_groups <= groups; "
                             f"got {self}")


@dataclass(frozen=True)
class HeadSpec:
    """The head: the lm_head's logits through ``final_softcap`` * tanh(logits / cap)."""

    final_softcap: float | None = None

    def __post_init__(self) -> None:
        _cap(self.final_softcap, "final_softcap")


#: Config's parts, in the order a model runs them (each a block's twin spec; the mixture
#: of experts is the optional part ``moe``)
PARTS = (EmbeddingSpec, PositionsSpec, ResidualSpec, NormSpec, AttentionSpec, MLPSpec,
         HeadSpec)


def part_fields(part: type) -> tuple[str, ...]:
    """The field names of one part (a spec record class).

    >>> part_fields(HeadSpec)
    ('final_softcap',)
    """
    return tuple(f.name for f in fields(part))
