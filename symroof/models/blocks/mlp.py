"""The MLP blocks: a dense MLP (gated, act(x W_gate) * x W_up, or not; a fused gate_up;
biases) and the mixture of experts (a :class:`~symroof.models.MoE` record: routed experts,
a shared one, the routing).

>>> from symroof.symbols import D, F
>>> s = Stream(D, 2, 2, 2)
>>> DenseMLP().params(s), DenseMLP(gated=False, act="gelu", bias=True).params(s)
({'mlp': 3*D*F}, {'mlp': 2*D*F + D + F})
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sympy as sp

from ...cost import Cost
from ...symbols import F as _F
from .. import rows as rw
from ..moe_rows import moe_rows
from ..spec import MoE, spec_fields
from .base import Array, Stream

__all__ = ["DenseMLP", "Experts"]


@dataclass(frozen=True)
class DenseMLP:
    """A dense MLP of width F: ``act`` ("silu", "gelu_tanh", "gelu"), ``gated`` (SwiGLU,
    GeGLU) or not, ``fused``: one [D, 2F] matmul for gate and up (Phi-3), ``bias``.

    >>> list(DenseMLP(fused=True).rows(1, Stream(8, 2, 2, 2)))
    ['mlp/gate_up', 'mlp/swiglu', 'mlp/down']
    """

    FIELDS = {"F": "F", "act": "act", "gated": "gated", "fused": "fused_gate_up",
              "bias": "mlp_bias"}

    F: Any = _F
    act: str = "silu"
    gated: bool = True
    fused: bool = False
    bias: bool = False

    def __post_init__(self) -> None:
        if self.act not in rw.ACTIVATIONS:
            raise ValueError(f"act must be one of {tuple(rw.ACTIVATIONS)}, got {self.act!r}")

    def matmul_params(self, s: Stream) -> sp.Expr:
        """The matrices a token multiplies by: 3.D.F (ungated 2.D.F)."""
        return (3 if self.gated else 2) * s.D * self.F

    def params(self, s: Stream) -> dict[str, sp.Expr]:
        """One layer's parameters: the matrices and, with ``bias``, 2F + D (ungated F + D)."""
        bias = ((2 * self.F if self.gated else self.F) + s.D) if self.bias else 0
        return {"mlp": self.matmul_params(s) + bias}

    def rows(self, n: Any, s: Stream) -> dict[str, Cost]:
        """One layer's rows (:func:`symroof.models.rows.mlp_rows`)."""
        return rw.mlp_rows(self, n, s)

    def arrays(self) -> dict[str, Array]:
        """Its weights and its hidden activation.

        >>> list(DenseMLP(fused=True).arrays())
        ['W_gate_up', 'W_down', 'h']
        """
        out = {"W_up": Array(("D", "F"))} if not self.gated else \
            {"W_gate_up": Array(("D", "2*F"))} if self.fused else \
            {"W_gate": Array(("D", "F")), "W_up": Array(("D", "F"))}
        out["W_down"] = Array(("F", "D"))
        if self.bias:
            out |= {"b_up": Array(("2*F" if self.gated else "F",)), "b_down": Array(("D",))}
        return out | {"h": Array(("B", "T", "F"), "act")}

    def twin(self) -> dict[str, Any]:
        """The twin's ``F``, ``act``, ``gated``, ``fused_gate_up``, ``mlp_bias``."""
        return {"F": self.F, "act": self.act, "gated": self.gated,
                "fused_gate_up": self.fused, "mlp_bias": self.bias}


@dataclass(frozen=True)
class Experts:
    """The mixture of experts of the MoE layers: the record ``moe`` (E experts of width F,
    top-k, a shared expert, the routing switches) and the experts' activation (gated).

    >>> from symroof.models import MoE
    >>> Experts(MoE(E=8, k=2, F=14336)).matmul_params(Stream(4096, 2, 2, 2))  # Mixtral
    352354304
    """

    FIELDS = {"moe": "moe", "act": "act"}

    moe: MoE
    act: str = "silu"

    def matmul_params(self, s: Stream) -> sp.Expr:
        """What a token multiplies by in one MoE layer: the router, k routed experts, the
        shared expert and its gate vector."""
        m = self.moe
        return (m.k * m.expert_params(s.D) + s.D * m.E + 3 * s.D * m.shared_F
                + (s.D if m.shared_gate else 0))

    def params(self, s: Stream) -> dict[str, sp.Expr]:
        """One MoE layer's parameters by part: ``experts``, ``shared_experts``, ``router``.

        >>> from symroof.models import MoE
        >>> Experts(MoE(E=8, k=2, F=14336)).params(Stream(4096, 2, 2, 2))["experts"]
        1409286144
        """
        m = self.moe
        out = {"experts": m.E * m.expert_params(s.D)}
        if m.shared_F != 0:
            out["shared_experts"] = m.shared_params(s.D)
        return out | {"router": m.router_params(s.D)}

    def skipped_params(self, s: Stream) -> sp.Expr:
        """Parameters of the routed experts a token does not run (E - k of them)."""
        return (self.moe.E - self.moe.k) * self.moe.expert_params(s.D)

    def rows(self, n: Any, layers: Any, tokens_per_expert: Any, s: Stream
             ) -> dict[str, Cost]:
        """The rows of ``layers`` MoE layers (:func:`symroof.models.moe_rows.moe_rows`)."""
        return moe_rows(self, n, layers, tokens_per_expert, s)

    def arrays(self) -> dict[str, Array]:
        """The experts' stacked weights (E the dimension expert parallelism splits), the
        router, the shared expert (the routed tokens' activations depend on the routing:
        not declared)."""
        out = {"W_router": Array(("D", "E")), "W_gate_e": Array(("E", "D", "F_e")),
               "W_up_e": Array(("E", "D", "F_e")), "W_down_e": Array(("E", "F_e", "D"))}
        if self.moe.router_bias:
            out["b_router"] = Array(("E",))
        if self.moe.shared_F != 0:
            out |= {"W_gate_s": Array(("D", "F_s")), "W_up_s": Array(("D", "F_s")),
                    "W_down_s": Array(("F_s", "D"))}
        if self.moe.shared_gate:
            out["w_shared_gate"] = Array(("D",))
        return out

    def twin(self) -> dict[str, Any]:
        """The record's fields (the twin's ``MoESpec`` has the same names)."""
        return spec_fields(self.moe)
