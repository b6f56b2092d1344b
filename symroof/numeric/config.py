"""Model configuration of the NumPy decoder: a Llama-style shape and the family switches.

Notation (docs/accounting.md): D model width, F MLP width, L layers, H query heads, G KV heads
(H % G == 0; query head h reads KV head h // (H // G)), d_h head dim (not assumed D / H),
V vocabulary. The switches mirror :class:`symroof.Transformer`'s fields (norm, activation,
fused projections, biases, positions, residual form, sliding windows, softcaps, a mixture
of experts, latent attention); this module is written for the NumPy side only.
``symroof.check`` fills a Config from the model's blocks (each block's twin fields, as plain
numbers; ``MoESpec`` takes the ``MoE`` record's fields by name).
"""

from __future__ import annotations

import numbers
import operator
from dataclasses import dataclass, fields
from typing import Any

__all__ = ["Config", "MoESpec", "MLASpec", "TINY"]

_DIMS = ("D", "F", "L", "H", "G", "d_h", "V")
_CHOICES = {"norm": ("rms", "layer"), "act": ("silu", "gelu_tanh", "gelu"),
            "positions": ("rope", "learned")}
#: the Llama family's values of the switches (``Config.features``: the others)
_LLAMA = {"norm": "rms", "act": "silu", "gated": True, "fused_qkv": False,
          "fused_gate_up": False, "o_bias": False, "mlp_bias": False, "positions": "rope",
          "rotary_dim": None, "parallel_residual": False, "post_norms": False,
          "embed_scale": False, "attn_softcap": None, "final_softcap": None, "moe": None,
          "mla": None, "qk_norm": False}
_BOOLS = ("tied", "qkv_bias", "gated", "fused_qkv", "fused_gate_up", "o_bias", "mlp_bias",
          "parallel_residual", "post_norms", "embed_scale", "qk_norm")


def _positive_int(value: Any, name: str, zero: bool = False) -> int:
    if (isinstance(value, bool) or not isinstance(value, numbers.Integral)
            or value < (0 if zero else 1)):
        raise ValueError(f"{name} must be a {'non-negative' if zero else 'positive'} integer, "
                         f"got {value!r}")
    return operator.index(value)


@dataclass(frozen=True)
class MoESpec:
    """A mixture-of-experts MLP: E experts of width F, top-k, an optional shared expert of
    width ``shared_F``; the routing switches of :class:`symroof.models.MoE`."""

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
            _positive_int(getattr(self, name), f"MoE {name}")
        for name in ("shared_F", "dense_layers"):
            _positive_int(getattr(self, name), f"MoE {name}", zero=True)
        if self.router not in ("softmax", "sigmoid"):
            raise ValueError(f"MoE router must be softmax or sigmoid, got {self.router!r}")
        if self.k > self.E or self.E % self.groups or self.topk_groups > self.groups:
            raise ValueError(f"MoE needs k <= E, groups dividing E, topk_groups <= groups; "
                             f"got {self}")


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
            _positive_int(getattr(self, name), f"MLA {name}")
        if self.q_rank is not None:
            _positive_int(self.q_rank, "MLA q_rank")
        if self.d_rope % 2:
            raise ValueError(f"MLA d_rope must be even (RoPE rotates pairs), got {self.d_rope}")


@dataclass(frozen=True)
class Config:
    """Shape of a decoder; every dimension a positive integer.

    >>> cfg = Config(D=64, F=172, L=2, H=8, G=2, d_h=8, V=256)
    >>> cfg.H // cfg.G  # query heads per KV head
    4
    >>> Config(D=64, F=172, L=2, H=-2, G=2, d_h=8, V=256)
    Traceback (most recent call last):
    ...
    ValueError: H must be a positive integer, got -2
    """

    D: int
    F: int
    L: int
    H: int
    G: int
    d_h: int
    V: int
    tied: bool = False
    qkv_bias: bool = False
    rope_theta: float = 10000.0
    eps: float = 1e-5
    name: str = "custom"
    norm: str = "rms"
    act: str = "silu"
    gated: bool = True
    fused_qkv: bool = False
    fused_gate_up: bool = False
    o_bias: bool = False
    mlp_bias: bool = False
    positions: str = "rope"
    rotary_dim: int | None = None
    max_position: int | None = None
    parallel_residual: bool = False
    post_norms: bool = False
    embed_scale: bool = False
    attn_softcap: float | None = None
    final_softcap: float | None = None
    window: int | None = None
    window_pattern: tuple[bool, ...] = (True,)
    attn_block: int = 128
    qk_norm: bool = False  # an RMSNorm of width d_h on every query and key head (Qwen3)
    moe: MoESpec | None = None
    mla: MLASpec | None = None

    def __post_init__(self) -> None:
        for name in _DIMS:
            object.__setattr__(self, name, _positive_int(getattr(self, name), name))
        if self.H % self.G:
            raise ValueError(f"H ({self.H}) must be divisible by G ({self.G}): "
                             f"each KV head serves H/G query heads")
        for name in ("rotary_dim", "max_position", "window"):
            if getattr(self, name) is not None:
                _positive_int(getattr(self, name), name)
        _positive_int(self.attn_block, "attn_block")
        if self.mla is None and self.positions == "rope" and self.rotary % 2:
            raise ValueError(f"d_h must be even (RoPE rotates pairs), got {self.rotary}")
        if self.mla is None and self.rotary > self.d_h:
            raise ValueError(f"rotary_dim ({self.rotary}) must not exceed d_h ({self.d_h})")
        if self.positions == "learned" and self.max_position is None:
            raise ValueError("learned positions need max_position")
        for name in _BOOLS:
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be a bool, got {getattr(self, name)!r}")
        for name, known in _CHOICES.items():
            if getattr(self, name) not in known:
                raise ValueError(f"{name} must be one of {known}, got {getattr(self, name)!r}")
        for name in ("rope_theta", "eps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise ValueError(f"{name} must be a positive number, got {value!r}")
        if not isinstance(self.name, str):
            raise ValueError(f"name must be a string, got {self.name!r}")
        if not self.window_pattern or not all(isinstance(w, bool) for w in self.window_pattern):
            raise ValueError(f"window_pattern must be a non-empty tuple of bools, got "
                             f"{self.window_pattern!r}")
        if self.moe is not None and self.moe.dense_layers > self.L:
            raise ValueError(f"MoE dense_layers ({self.moe.dense_layers}) exceeds L ({self.L})")

    @property
    def rotary(self) -> int:
        """Dims of a head that RoPE rotates (MLA: d_rope)."""
        if self.mla is not None:
            return self.mla.d_rope
        return self.d_h if self.rotary_dim is None else self.rotary_dim

    @property
    def features(self) -> tuple[str, ...]:
        """The switches set to other than the Llama family's values.

        >>> TINY.features, TINY.replace(norm="layer").features
        ((), ('norm',))
        """
        return tuple(k for k, v in _LLAMA.items() if getattr(self, k) != v)

    def layer_window(self, l: int) -> int | None:
        """Layer l's sliding window (None: global attention)."""
        p = self.window_pattern
        return self.window if self.window is not None and p[l % len(p)] else None

    def is_moe(self, l: int) -> bool:
        """Whether layer l's MLP is the mixture of experts."""
        return self.moe is not None and l >= self.moe.dense_layers

    @property
    def cache_dims(self) -> tuple[tuple[int, int], tuple[int, int] | None]:
        """Per cached position: (heads, width) of K and of V (None: V is part of K, MLA's
        absorbed latent [c_kv, k_rope])."""
        a = self.mla
        if a is None:
            return (self.G, self.d_h), (self.G, self.d_h)
        if a.absorb:
            return (1, a.kv_rank + a.d_rope), None
        return (self.H, a.d_nope + a.d_rope), (self.H, a.d_v)

    def replace(self, **changes: Any) -> Config:
        """A copy with some fields changed (validated again).

        >>> TINY.replace(G=8).G
        8
        """
        unknown = set(changes) - {f.name for f in fields(self)}
        if unknown:
            raise ValueError(f"unknown Config fields {sorted(unknown)}")
        return Config(**{**{f.name: getattr(self, f.name) for f in fields(self)}, **changes})


TINY = Config(D=64, F=172, L=2, H=8, G=2, d_h=8, V=256, name="tiny")
