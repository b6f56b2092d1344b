"""The two sub-architectures a :class:`~symroof.models.Transformer` can carry: a
mixture-of-experts MLP (:class:`MoE`) and multi-head latent attention (:class:`MLA`).

Each is a frozen record of dimensions (numbers or symbols) and switches; the rows they
produce are in :mod:`symroof.models.moe_rows` and :mod:`symroof.models.attention_rows`, the
conventions in docs/accounting.md ("Mixture of experts", "Multi-head latent attention").

>>> MoE(E=8, k=2, F=14336).active_experts          # Mixtral-8x7B: 2 of 8 per token
2
>>> MLA(kv_rank=512, d_nope=128, d_rope=64, d_v=128, q_rank=1536).cache_per_token
576
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

import sympy as sp

from ..cost import as_dimension, as_exact

__all__ = ["MoE", "MLA", "ROUTERS"]

#: router scoring functions: softmax over the E logits (Mixtral, Qwen2-MoE) or a sigmoid
#: per expert (DeepSeek-V3)
ROUTERS = ("softmax", "sigmoid")


def _flag(record: Any, name: str) -> None:
    if not isinstance(getattr(record, name), bool):
        raise ValueError(f"{name} must be True or False, got {getattr(record, name)!r}")


def _subs(record: Any, dims: tuple[str, ...], values: dict) -> Any:
    return replace(record, **{d: sp.sympify(getattr(record, d)).subs(values) for d in dims
                              if getattr(record, d) is not None})


@dataclass(frozen=True)
class MoE:
    """E routed experts (SwiGLU MLPs of width F), each token routed to k of them, plus an
    optional always-on shared expert of width ``shared_F``.

    ``router``: how the E logits of x @ W_router [D, E] become scores (``ROUTERS``);
    ``router_bias``: a per-expert bias added to the scores for the choice only (DeepSeek-V3's
    e_score_correction_bias, a parameter); ``groups``/``topk_groups``: experts in groups, the
    k chosen among the ``topk_groups`` groups whose two best scores sum highest (DeepSeek-V3:
    8 and 4); ``norm_topk``: the k weights are renormalised to sum to 1; ``scale``: the
    weights are multiplied by it (DeepSeek-V3's routed_scaling_factor 2.5);
    ``shared_gate``: sigmoid(x . w_gate) scales the shared expert (Qwen2-MoE);
    ``dense_layers``: the first layers keep a dense MLP of width ``Transformer.F``
    (DeepSeek-V3: 3).

    >>> MoE(E=60, k=4, F=1408, shared_F=5632, shared_gate=True).params_per_layer(2048)
    553773056
    """

    E: Any
    k: Any
    F: Any
    shared_F: Any = 0
    shared_gate: bool = False
    router: str = "softmax"
    router_bias: bool = False
    norm_topk: bool = False
    scale: Any = 1
    groups: int = 1
    topk_groups: int = 1
    dense_layers: int = 0

    def __post_init__(self) -> None:
        for dim in ("E", "k", "F"):
            object.__setattr__(self, dim, as_dimension(getattr(self, dim), f"MoE {dim}"))
        if self.shared_F != 0:
            object.__setattr__(self, "shared_F", as_dimension(self.shared_F, "MoE shared_F"))
        object.__setattr__(self, "shared_F", sp.sympify(self.shared_F))
        for name in ("shared_gate", "router_bias", "norm_topk"):
            _flag(self, name)
        if self.router not in ROUTERS:
            raise ValueError(f"MoE router must be one of {', '.join(ROUTERS)}, got "
                             f"{self.router!r}")
        scale = as_exact(self.scale, "MoE scale")
        if scale.is_positive is False:
            raise ValueError(f"MoE scale must be positive, got {self.scale!r}")
        object.__setattr__(self, "scale", scale)
        for name in ("groups", "topk_groups", "dense_layers"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"MoE {name} must be a non-negative integer, got {value!r}")
        if self.groups < 1 or not 1 <= self.topk_groups <= self.groups:
            raise ValueError(f"MoE needs 1 <= topk_groups ({self.topk_groups}) <= groups "
                             f"({self.groups})")
        if self.E.is_number and self.k.is_number and self.k > self.E:
            raise ValueError(f"MoE k ({self.k}) must not exceed E ({self.E})")
        if self.E.is_number and self.groups > 1 and (self.E % self.groups
                                                     or self.E // self.groups < 2):
            raise ValueError(f"MoE E ({self.E}) must split into {self.groups} groups of at "
                             "least 2 experts")
        if self.shared_gate and self.shared_F == 0:
            raise ValueError("MoE shared_gate needs a shared expert (shared_F > 0)")

    @property
    def active_experts(self) -> sp.Expr:
        """Routed experts a token runs: k."""
        return self.k

    def expert_params(self, D: Any) -> sp.Expr:
        """One routed expert's gate, up and down matrices: 3.D.F."""
        return 3 * D * self.F

    def shared_params(self, D: Any) -> sp.Expr:
        """The shared expert (3.D.shared_F) and its gate vector (D)."""
        return 3 * D * self.shared_F + (D if self.shared_gate else 0)

    def router_params(self, D: Any) -> sp.Expr:
        """W_router (D.E) and the routing bias (E)."""
        return D * self.E + (self.E if self.router_bias else 0)

    def params_per_layer(self, D: Any) -> sp.Expr:
        """Every routed expert, the shared one, and the router of one MoE layer."""
        return self.E * self.expert_params(D) + self.shared_params(D) + self.router_params(D)

    def subs(self, values: dict) -> MoE:
        return _subs(self, ("E", "k", "F", "shared_F"), values)


@dataclass(frozen=True)
class MLA:
    """Multi-head latent attention (DeepSeek-V2/V3): keys and values come from a latent
    c_kv of width ``kv_rank`` (cached, with one decoupled RoPE key of width ``d_rope``
    shared by the heads); each head's query and key have ``d_nope + d_rope`` dims, its value
    ``d_v``; queries go through a latent of width ``q_rank`` (None: a direct projection).

    ``absorb=True`` (DeepSeek-V3's reference inference, attn_impl="absorb"): the cache
    holds c_kv and the RoPE key; W_UK is absorbed into the query and W_UV into the output,
    so scores and attention x V run in the latent space. ``absorb=False`` ("naive"):
    kv_b_proj expands the new tokens' latent into per-head keys and values, which are
    cached like multi-head attention's.

    >>> mla = MLA(kv_rank=512, d_nope=128, d_rope=64, d_v=128, q_rank=1536)
    >>> mla.params_per_layer(D=7168, H=128)
    187107328
    """

    kv_rank: Any
    d_nope: Any
    d_rope: Any
    d_v: Any
    q_rank: Any = None
    absorb: bool = True

    def __post_init__(self) -> None:
        for dim in ("kv_rank", "d_nope", "d_rope", "d_v"):
            object.__setattr__(self, dim, as_dimension(getattr(self, dim), f"MLA {dim}"))
        if self.q_rank is not None:
            object.__setattr__(self, "q_rank", as_dimension(self.q_rank, "MLA q_rank"))
        _flag(self, "absorb")

    @property
    def d_qk(self) -> sp.Expr:
        """A head's query/key width: d_nope + d_rope."""
        return self.d_nope + self.d_rope

    @property
    def cache_per_token(self) -> sp.Expr:
        """Cached elements per token and layer: kv_rank + d_rope absorbed; H-independent."""
        return self.kv_rank + self.d_rope

    def params_per_layer(self, D: Any, H: Any) -> sp.Expr:
        """q (through the q latent and its norm, or direct), kv_a (latent and RoPE key),
        the latent's norm, kv_b (keys and values of every head), o."""
        q = (D * self.q_rank + self.q_rank + self.q_rank * H * self.d_qk
             if self.q_rank is not None else D * H * self.d_qk)
        kv = D * (self.kv_rank + self.d_rope) + self.kv_rank
        return q + kv + self.kv_rank * H * (self.d_nope + self.d_v) + H * self.d_v * D

    def matmul_params(self, D: Any, H: Any) -> sp.Expr:
        """The same without the two norms' weights."""
        norms = self.kv_rank + (self.q_rank if self.q_rank is not None else 0)
        return self.params_per_layer(D, H) - norms

    def subs(self, values: dict) -> MLA:
        return _subs(self, ("kv_rank", "d_nope", "d_rope", "d_v", "q_rank"), values)


def spec_fields(record: Any) -> dict[str, Any]:
    """The record's fields as a dict (for messages and the numeric twin's config)."""
    return {f.name: getattr(record, f.name) for f in fields(record)}
