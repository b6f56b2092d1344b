"""Model configuration of the NumPy decoder: the blocks' twin specs side by side.

Notation (docs/accounting.md): D model width, F MLP width, L layers, H query heads, G KV heads
(H % G == 0; query head h reads KV head h // (H // G)), d_h head dim (not assumed D / H),
V vocabulary. :class:`Config` lists no switch of its own: its fields are D, L, the fields of
each block's twin spec (:data:`~symroof.numeric.spec.PARTS`: embedding, positions, residual
pattern, norm, attention, MLP, head; ``moe`` the mixture of experts' record) and the run's
numerics (``rope_theta``, ``eps``, ``name``), which no count depends on. ``symroof.check``
builds one from a model's blocks (:meth:`Config.of` over the records each block's
``twin()`` returns, plain numbers); a test builds one from flat fields.
"""

from __future__ import annotations

import dataclasses
from dataclasses import fields
from typing import Any

from .spec import PARTS, MLASpec, MoESpec, part_fields, positive_int

__all__ = ["Config", "MoESpec", "MLASpec", "TINY"]

#: the run's numerics: not a block's switch (no count depends on them)
_RUN = (("rope_theta", float, 10000.0), ("eps", float, 1e-5), ("name", str, "custom"))


class _Config:
    """What a Config does with its fields (the fields themselves: :class:`Config`)."""

    def __post_init__(self) -> None:
        for name in ("D", "L"):
            object.__setattr__(self, name, positive_int(getattr(self, name), name))
        for part in self.parts():  # each part checks (and normalises) its own fields
            for name in part_fields(type(part)):
                object.__setattr__(self, name, getattr(part, name))
        if self.moe is not None and not isinstance(self.moe, MoESpec):
            raise ValueError(f"moe must be a MoESpec or None, got {self.moe!r}")
        if self.mla is None and self.positions == "rope" and self.rotary % 2:
            raise ValueError(f"d_h must be even (RoPE rotates pairs), got {self.rotary}")
        if self.mla is None and self.rotary > self.d_h:
            raise ValueError(f"rotary_dim ({self.rotary}) must not exceed d_h ({self.d_h})")
        for name in ("rope_theta", "eps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise ValueError(f"{name} must be a positive number, got {value!r}")
        if not isinstance(self.name, str):
            raise ValueError(f"name must be a string, got {self.name!r}")
        if self.moe is not None and self.moe.dense_layers > self.L:
            raise ValueError(f"MoE dense_layers ({self.moe.dense_layers}) exceeds L ({self.L})")

    @classmethod
    def of(cls, D: int, L: int, *parts: Any, moe: MoESpec | None = None, **run: Any) -> Config:
        """The config of D, L and one twin spec per part (:data:`~symroof.numeric.spec.PARTS`,
        in any order; a part left out takes its record's defaults where it has them).

        >>> from symroof.numeric.spec import AttentionSpec, EmbeddingSpec, MLPSpec
        >>> cfg = Config.of(64, 2, EmbeddingSpec(256), AttentionSpec(8, 2, 8), MLPSpec(172))
        >>> cfg == TINY.replace(name="custom")
        True
        """
        flat = {name: getattr(p, name) for p in parts for name in part_fields(type(p))}
        return cls(D=D, L=L, moe=moe, **flat, **run)

    def parts(self) -> tuple[Any, ...]:
        """Its twin specs, one per part (each record built, and so checked, again).

        >>> [type(p).__name__ for p in TINY.parts()][:3]
        ['EmbeddingSpec', 'PositionsSpec', 'ResidualSpec']
        """
        return tuple(part(**{name: getattr(self, name) for name in part_fields(part)})
                     for part in PARTS)

    @property
    def rotary(self) -> int:
        """Dims of a head that RoPE rotates (MLA: d_rope)."""
        if self.mla is not None:
            return self.mla.d_rope
        return self.d_h if self.rotary_dim is None else self.rotary_dim

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


def _field(f: dataclasses.Field) -> tuple[str, Any, dataclasses.Field]:
    """A part's field as a Config field (a fresh Field: one dataclass owns each)."""
    if f.default is dataclasses.MISSING:
        return f.name, f.type, dataclasses.field()
    return f.name, f.type, dataclasses.field(default=f.default)


Config = dataclasses.make_dataclass(
    "Config",
    [("D", int), ("L", int), *(_field(f) for part in PARTS for f in fields(part)),
     ("moe", "MoESpec | None", dataclasses.field(default=None)),
     *((n, t, dataclasses.field(default=d)) for n, t, d in _RUN)],
    bases=(_Config,), frozen=True, kw_only=True,
    namespace={"__module__": __name__, "__doc__": """Shape of a decoder: D, L and the
    fields of the blocks' twin specs (module docstring); every dimension a positive integer.

    >>> cfg = Config(D=64, F=172, L=2, H=8, G=2, d_h=8, V=256)
    >>> cfg.H // cfg.G  # query heads per KV head
    4
    >>> Config(D=64, F=172, L=2, H=-2, G=2, d_h=8, V=256)
    Traceback (most recent call last):
    ...
    ValueError: H must be a positive integer, got -2
    """})

TINY = Config(D=64, F=172, L=2, H=8, G=2, d_h=8, V=256, name="tiny")
