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
from .base import Array, Stream, Uses

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
        """Its weights, its gate and up's output ``u`` and its hidden activation ``h``.

        >>> list(DenseMLP(fused=True).arrays())
        ['W_gate_up', 'W_down', 'u', 'h']
        """
        out = {"W_up": Array(("D", "F"))} if not self.gated else \
            {"W_gate_up": Array(("D", "2*F"))} if self.fused else \
            {"W_gate": Array(("D", "F")), "W_up": Array(("D", "F"))}
        out["W_down"] = Array(("F", "D"))
        if self.bias:
            out |= {"b_up": Array(("2*F" if self.gated else "F",)), "b_down": Array(("D",))}
        return out | {"u": Array(("B", "T", "2*F" if self.gated else "F"), "act"),
                      "h": Array(("B", "T", "F"), "act")}

    def twin(self) -> dict[str, Any]:
        """The twin's ``F``, ``act``, ``gated``, ``fused_gate_up``, ``mlp_bias``."""
        return {"F": self.F, "act": self.act, "gated": self.gated,
                "fused_gate_up": self.fused, "mlp_bias": self.bias}

    def uses(self) -> dict[str, Uses]:
        """Per row, its arrays: gate and up read the norm's output ``norms/h`` into ``u``,
        the activation ``u`` into ``h``, down ``h`` into the block's output ``norms/y``.

        >>> u = DenseMLP(fused=True).uses()["mlp/gate_up"]
        >>> u.reads, u.writes, u.weight
        (('norms/h',), 'mlp/u', 'mlp/W_gate_up')
        """
        ups = ("up",) if not self.gated else ("gate_up",) if self.fused else ("gate", "up")
        out = {f"mlp/{n}": Uses(("norms/h",), "mlp/u", f"mlp/W_{n}") for n in ups}
        return out | {f"mlp/{rw.act_key(self.act, self.gated)}": Uses(("mlp/u",), "mlp/h"),
                      "mlp/down": Uses(("mlp/h",), "norms/y", "mlp/W_down")}


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
        router, the shared expert; the router's logits ``r``, the k routed copies' gate and
        up ``m`` and activation ``a`` (which expert holds a copy depends on the routing),
        the shared expert's ``m_s`` and ``a_s``."""
        out = {"W_router": Array(("D", "E")), "W_gate_e": Array(("E", "D", "F_e")),
               "W_up_e": Array(("E", "D", "F_e")), "W_down_e": Array(("E", "F_e", "D"))}
        if self.moe.router_bias:
            out["b_router"] = Array(("E",))
        if self.moe.shared_F != 0:
            out |= {"W_gate_s": Array(("D", "F_s")), "W_up_s": Array(("D", "F_s")),
                    "W_down_s": Array(("F_s", "D"))}
        if self.moe.shared_gate:
            out["w_shared_gate"] = Array(("D",))
        out |= {"r": Array(("B", "T", "E"), "act"), "m": Array(("B", "T", "k", "2*F_e"), "act"),
                "a": Array(("B", "T", "k", "F_e"), "act")}
        if self.moe.shared_F != 0:
            out |= {"m_s": Array(("B", "T", "2*F_s"), "act"),
                    "a_s": Array(("B", "T", "F_s"), "act")}
        return out

    def twin(self) -> dict[str, Any]:
        """The record's fields (the twin's ``MoESpec`` has the same names)."""
        return spec_fields(self.moe)

    def uses(self) -> dict[str, Uses]:
        """Per row, its arrays: the router reads the norm's output ``norms/h`` into the
        logits ``r``, the routing reads them; the routed experts (and the shared one) as a
        dense MLP into the block's output ``norms/y``; the combine's inputs (each token's
        copies, as the routing sent them) are not declared.

        >>> from symroof.models import MoE
        >>> Experts(MoE(E=8, k=2, F=14336)).uses()["moe/down"].reads
        ('moe/a',)
        """
        moe, act = self.moe, rw.act_key(self.act, True)
        h, y = "norms/h", "norms/y"
        out = {"moe/router": Uses((h,), "moe/r", "moe/W_router"),
               "moe/route": Uses(("moe/r",), weight="moe/b_router" if moe.router_bias else None),
               "moe/gate": Uses((h,), "moe/m", "moe/W_gate_e"),
               "moe/up": Uses((h,), "moe/m", "moe/W_up_e"),
               f"moe/{act}": Uses(("moe/m",), "moe/a"),
               "moe/down": Uses(("moe/a",), y, "moe/W_down_e"), "moe/combine": Uses()}
        if moe.shared_F != 0:
            out |= {"moe/shared/gate": Uses((h,), "moe/m_s", "moe/W_gate_s"),
                    "moe/shared/up": Uses((h,), "moe/m_s", "moe/W_up_s"),
                    f"moe/shared/{act}": Uses(("moe/m_s",), "moe/a_s"),
                    "moe/shared/down": Uses(("moe/a_s",), y, "moe/W_down_s")}
        if moe.shared_gate:
            out["moe/shared/scale"] = Uses((h,), weight="moe/w_shared_gate")
        return out
