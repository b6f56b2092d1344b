"""The MLP blocks: a dense MLP (gated, act(x W_gate) * x W_up, or not; a fused gate_up;
biases) and the mixture of experts (a :class:`~symroof.models.MoE` record: routed experts,
a shared one, the routing).

>>> from symroof.symbols import D, F
>>> s = Stream(D, 2, 2, 2)
>>> DenseMLP().params(s), DenseMLP(gated=False, act="gelu", bias=True).params(s)
({'mlp': 3*D*F}, {'mlp': 2*D*F + D + F})
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import sympy as sp

from ...cost import Cost
from ...numeric.spec import MLPSpec, MoESpec
from ...symbols import F as _F
from .. import backward_dense as bd
from .. import rows as rw
from ..moe_rows import loads, moe_rows
from ..spec import MoE, spec_fields
from .backprop import Graph, Widths
from .base import Array, Stream, Uses, plain

__all__ = ["DenseMLP", "Experts", "route_backward_flops"]


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

    def matmuls(self, part: str = "mlp") -> tuple[str, ...]:
        """Its rows that multiply by a weight matrix (keys under ``part``).

        >>> DenseMLP().matmuls(), DenseMLP(gated=False).matmuls("moe/shared")
        (('mlp/gate', 'mlp/up', 'mlp/down'), ('moe/shared/up', 'moe/shared/down'))
        """
        first = ("up",) if not self.gated else ("gate_up",) if self.fused else ("gate", "up")
        return tuple(f"{part}/{k}" for k in (*first, "down"))

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

    def twin(self) -> MLPSpec:
        """The NumPy twin's spec of it.

        >>> DenseMLP(F=172, fused=True).twin()
        MLPSpec(F=172, act='silu', gated=True, fused_gate_up=True, mlp_bias=False)
        """
        return MLPSpec(F=plain(self.F, "F"), act=self.act, gated=self.gated,
                       fused_gate_up=self.fused, mlp_bias=self.bias)

    # -- training -----------------------------------------------------------------------
    def backward(self, w: Widths, part: str = "mlp") -> dict[str, Cost]:
        """One layer's backward rows from down to the input's gradient: down's dX and dW,
        the activation, up's and gate's (or the fused gate_up's) and the sum of their two
        dX (the norm before it and the residual are the layer's, :class:`Residual`).
        ``part``: the key prefix (an MoE's shared expert is ``moe/shared``).

        >>> from symroof.symbols import B, D, F
        >>> w = Widths(B, Stream(D, 2, 2, 2), 2)
        >>> list(DenseMLP(gated=False, act="gelu").backward(w))
        ['mlp/down/dx', 'mlp/down/dw', 'mlp/gelu', 'mlp/up/dx', 'mlp/up/dw']
        >>> DenseMLP().backward(w)["mlp/swiglu"].flops              # SwiGLU's 12
        12*B*F
        """
        D, F, b = w.s.D, self.F, self.bias
        rows = {"down/dx": w.dx(F, D), "down/dw": w.dw(F, D, b),
                rw.act_key(self.act, self.gated): bd.activation_backward(
                    self.act, gated=self.gated, n=w.n * F, x_bytes=w.s.ab)}
        if not self.gated:
            rows |= {"up/dx": w.dx(D, F), "up/dw": w.dw(D, F, b)}
        elif self.fused:
            rows |= {"gate_up/dx": w.dx(D, 2 * F), "gate_up/dw": w.dw(D, 2 * F, b)}
        else:
            rows |= {"up/dx": w.dx(D, F), "up/dw": w.dw(D, F, b), "gate/dx": w.dx(D, F),
                     "gate/dw": w.dw(D, F, b), "gate_up_sum": w.sum(2)}
        return {f"{part}/{key}": cost for key, cost in rows.items()}

    def graph(self) -> Graph:
        """Its ops from the norm's output h2 to the down projection's y2 (gate g, up u,
        activation a); its backward reads h2, g, u, a; its matmuls write g and u.

        >>> DenseMLP(fused=True).graph().ops["mlp/gate_up"]
        (('h2',), ('g', 'u'))
        """
        ops: dict = {}
        if not self.gated:
            ops["mlp/up"] = (("h2",), ("u",))
        elif self.fused:
            ops["mlp/gate_up"] = (("h2",), ("g", "u"))
        else:
            ops |= {"mlp/gate": (("h2",), ("g",)), "mlp/up": (("h2",), ("u",))}
        ops[f"mlp/{rw.act_key(self.act, self.gated)}"] = (("g", "u") if self.gated
                                                           else ("u",), ("a",))
        ops["mlp/down"] = (("a",), ("y2",))
        g = ("g",) if self.gated else ()
        return Graph(ops, ("h2", *g, "u", "a"), (*g, "u"))

    def tensors(self, n: Any) -> dict[str, Any]:
        """Elements per layer of g, u and a: n*F each."""
        return dict.fromkeys("gua", n * self.F)

    def uses(self) -> dict[str, Uses]:
        """Per row, its arrays: gate and up read the norm's output ``norms/h`` into ``u``
        (each its half, when not fused), the activation ``u`` into ``h``, down ``h`` into the
        block's output ``norms/y``.

        >>> u = DenseMLP(fused=True).uses()["mlp/gate_up"]
        >>> u.reads, u.writes, u.weight
        (('norms/h',), 'mlp/u', 'mlp/W_gate_up')
        >>> DenseMLP().uses()["mlp/gate"].share("mlp/u")
        1/2
        """
        ups = ("up",) if not self.gated else ("gate_up",) if self.fused else ("gate", "up")
        half = (("mlp/u", sp.Rational(1, 2)),) if len(ups) == 2 else ()
        out = {f"mlp/{n}": Uses(("norms/h",), "mlp/u", f"mlp/W_{n}", part=half) for n in ups}
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
        return m.k * m.expert_params(s.D) + s.D * m.E + m.shared_params(s.D)

    def matmuls(self) -> tuple[str, ...]:
        """Its rows that multiply by a weight matrix: the router, the routed experts', the
        shared expert's (its gate vector is part of ``moe/shared/scale``, an elementwise
        row).

        >>> from symroof.models import MoE
        >>> Experts(MoE(E=8, k=2, F=14336)).matmuls()
        ('moe/router', 'moe/gate', 'moe/up', 'moe/down')
        """
        shared = self.expert(self.moe.shared_F).matmuls("moe/shared") \
            if self.moe.shared_F != 0 else ()
        return ("moe/router", *self.expert(self.moe.F).matmuls("moe"), *shared)

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
        out |= {"r": Array(("B", "T", "E"), "act"), "w": Array(("B", "T", "k"), "act"),
                "m": Array(("B", "T", "k", "2*F_e"), "act"),
                "a": Array(("B", "T", "k", "F_e"), "act"),
                "Y": Array(("B", "T", "k", "D"), "act")}  # the k experts' outputs
        if self.moe.shared_F != 0:
            out |= {"m_s": Array(("B", "T", "2*F_s"), "act"),
                    "a_s": Array(("B", "T", "F_s"), "act"),
                    "y_s": Array(("B", "T", "D"), "act")}  # the shared expert's output
        return out

    def twin(self) -> MoESpec:
        """The NumPy twin's spec of it: the record's fields, same names, plain numbers."""
        return MoESpec(**{k: plain(v, f"MoE {k}") for k, v in spec_fields(self.moe).items()})

    # -- training -----------------------------------------------------------------------
    def expert(self, F: Any) -> DenseMLP:
        """One expert as a dense MLP of width F (gated, its activation)."""
        return DenseMLP(F, self.act)

    def backward(self, w: Widths, layers: Any, tokens_per_expert: Any) -> dict[str, Cost]:
        """The backward rows of ``layers`` MoE layers (summed), in the order they run
        (docs/accounting.md, "Training MoE and MLA"):

        - ``moe/combine``: dY = dy*w (n*k*D) and dw = dy . Y (n*k*(2D - 1)); reads dy, Y,
          w, writes dY, dw;
        - ``moe/shared/scale`` (Qwen2-MoE's gate y = ys*sigmoid(x . w)): per token the
          gate recomputed (2D + 4), dys = dy*gate (D), d(gate) = dy . ys (2D - 1), dz (3),
          dx = dz w (2D), dw = x^T dz (2D): 9D + 6; reads x, w, ys, dy, writes dys, dx, dw;
        - ``moe/shared/...``: the shared expert's dense backward on every token;
        - ``moe/down/dx`` ... ``moe/gate_up_sum``: each expert's on its own tokens (the
          routing's loads, :func:`~symroof.models.moe_rows.loads`): FLOPs follow the
          assignments, weight (and gradient) bytes the experts that got a token;
        - ``moe/route``: :func:`route_backward_flops` per token; reads the logits and dw,
          writes d(logits); the top-k choice and the routing bias pass no gradient;
        - ``moe/router/dx``, ``moe/router/dw``; ``moe/dx_sum`` adds k + 1 (+ 1 shared,
          + 1 its gate) contributions to d(h) per token.

        >>> from symroof.models import model
        >>> b = model("mixtral-8x7b").blocks        # 2 tokens, both to experts 0 and 1
        >>> rows = b.experts.backward(Widths(2, b.stream, 2), 1, [[2, 2, 0, 0, 0, 0, 0, 0]])
        >>> rows["moe/up/dw"].weight_bytes == 2 * 4096 * 14336 * 2      # 2 experts read
        True
        """
        moe, D, ab, wb, gb = self.moe, w.s.D, w.s.ab, w.s.wb, w.gb
        n, E, k, shared = w.n, moe.E, moe.k, moe.shared_F != 0
        count = int(layers) if sp.sympify(layers).is_Integer else None
        if count is None and tokens_per_expert not in (None, "balanced", "worst"):
            raise ValueError("per-layer tokens_per_expert needs a number of layers")
        experts: dict[str, Cost] = {}
        for assigned, read, _ in loads(n, E, k, count or 1, tokens_per_expert):
            for key, c in self.expert(moe.F).backward(w._replace(n=assigned), "moe").items():
                experts[key] = experts.get(key, Cost()) + replace(  # the experts read
                    c, weight_bytes=read * c.weight_bytes)
        rows = {"moe/combine": Cost(flops=n * k * (3 * D - 1),
                                    act_bytes=(n * D + 2 * n * k * D + 2 * n * k) * ab)}
        if moe.shared_gate:  # y = ys * sigmoid(x . w)
            rows["moe/shared/scale"] = Cost(flops=n * (9 * D + 6), weight_bytes=D * (wb + gb),
                                            act_bytes=5 * n * D * ab)
        if shared:
            rows |= self.expert(moe.shared_F).backward(w, "moe/shared")
        rows = {key: layers * cost for key, cost in rows.items()}
        rows |= {key: (1 if count else layers) * cost for key, cost in experts.items()}
        parts = k + 1 + (1 if shared else 0) + (1 if moe.shared_gate else 0)
        tail = {"moe/route": Cost(flops=n * route_backward_flops(moe),
                                  act_bytes=n * (2 * E + k) * ab),
                "moe/router/dx": w.dx(D, E), "moe/router/dw": w.dw(D, E),
                "moe/dx_sum": w.sum(parts)}
        return rows | {key: layers * cost for key, cost in tail.items()}

    def graph(self) -> Graph:
        """Its ops from h2 to the combination y2: router, routing (indices, weights), each
        expert on its tokens (eg, eu, ea; outputs Y), the shared expert (sg, su, sa, ys)
        and its sigmoid gate (ysg: Qwen2-MoE).

        >>> from symroof.models import model
        >>> model("mixtral-8x7b").blocks.experts.graph().ops["moe/combine"]
        (('Y', 'w'), ('y2',))
        """
        moe, shared = self.moe, self.moe.shared_F != 0
        ops: dict = {"moe/router": (("h2",), ("logits",)),
                     "moe/route": (("logits",), ("idx", "w")),
                     "moe/gate": (("h2", "idx"), ("eg",)), "moe/up": (("h2", "idx"), ("eu",)),
                     "moe/swiglu": (("eg", "eu"), ("ea",)), "moe/down": (("ea", "idx"), ("Y",))}
        sh: tuple[str, ...] = ()
        if shared:
            ops |= {"moe/shared/gate": (("h2",), ("sg",)), "moe/shared/up": (("h2",), ("su",)),
                    "moe/shared/swiglu": (("sg", "su"), ("sa",)),
                    "moe/shared/down": (("sa",), ("ys",))}
            sh = ("sg", "su", "sa", *(("ys",) if moe.shared_gate else ()))
        if moe.shared_gate:
            ops["moe/shared/scale"] = (("h2", "ys"), ("ysg",))
        out = ("ysg",) if moe.shared_gate else ("ys",) if shared else ()
        ops["moe/combine"] = (("Y", "w", *out), ("y2",))
        reads = ("h2", "logits", "idx", "w", "eg", "eu", "ea", "Y", *sh)
        return Graph(ops, reads, ("logits", "eg", "eu", "Y", *(("sg", "su") if shared else ())))

    def tensors(self, n: Any, D: Any) -> dict[str, Any]:
        """Elements per layer of its tensors: a = n*k assignments (the routing's indices
        are not counted)."""
        moe, a = self.moe, n * self.moe.k
        return {"logits": n * moe.E, "idx": 0, "w": a, "Y": a * D, "ys": n * D,
                "ysg": n * D} | dict.fromkeys(("eg", "eu", "ea"), a * moe.F) | \
            dict.fromkeys(("sg", "su", "sa"), n * moe.shared_F)

    def uses(self) -> dict[str, Uses]:
        """Per row, its arrays: the router reads the norm's output ``norms/h`` into the
        logits ``r``, the routing reads them into each token's k weights ``w``; the routed
        experts (gate and up each reading h once per copy, k times, and writing half of
        ``m``) into their k outputs ``Y``, the
        shared one as a dense MLP into ``y_s`` (scaled in place by its gate); the combine
        reads ``Y``, ``w`` and ``y_s`` into the block's output ``norms/y``.

        >>> from symroof.models import MoE
        >>> u = Experts(MoE(E=8, k=2, F=14336)).uses()
        >>> u["moe/down"].reads, u["moe/down"].writes, u["moe/combine"].reads
        (('moe/a',), 'moe/Y', ('moe/Y', 'moe/w'))
        """
        moe, act = self.moe, rw.act_key(self.act, True)
        h, y, half = "norms/h", "norms/y", sp.Rational(1, 2)
        routed = ((h, moe.k), ("moe/m", half))  # each token's k copies of h in, half of m out
        out = {"moe/router": Uses((h,), "moe/r", "moe/W_router"),
               "moe/route": Uses(("moe/r",), "moe/w",
                                 weight="moe/b_router" if moe.router_bias else None),
               "moe/gate": Uses((h,), "moe/m", "moe/W_gate_e", part=routed),
               "moe/up": Uses((h,), "moe/m", "moe/W_up_e", part=routed),
               f"moe/{act}": Uses(("moe/m",), "moe/a"),
               "moe/down": Uses(("moe/a",), "moe/Y", "moe/W_down_e"),
               "moe/combine": Uses(("moe/Y", "moe/w", *(("moe/y_s",) if moe.shared_F else ())),
                                   y)}
        if moe.shared_F != 0:
            out |= {"moe/shared/gate": Uses((h,), "moe/m_s", "moe/W_gate_s",
                                            part=(("moe/m_s", half),)),
                    "moe/shared/up": Uses((h,), "moe/m_s", "moe/W_up_s",
                                          part=(("moe/m_s", half),)),
                    f"moe/shared/{act}": Uses(("moe/m_s",), "moe/a_s"),
                    "moe/shared/down": Uses(("moe/a_s",), "moe/y_s", "moe/W_down_s")}
        if moe.shared_gate:
            out["moe/shared/scale"] = Uses((h, "moe/y_s"), "moe/y_s",
                                           weight="moe/w_shared_gate")
        return out


def route_backward_flops(moe: MoE) -> sp.Expr:
    """FLOPs per token of d(logits) from the k weights' gradient: the scores recomputed
    (softmax 5E - 2, sigmoid 4E), the scale (k), the renormalisation (6k - 2: the sum
    k - 1, the k weights k, their product with the gradient k, its sum k - 1, subtract k,
    divide k), then softmax's backward s*(ds - sum(ds*s)) (4E - 1) or sigmoid's
    ds*s*(1 - s) (3E).

    >>> route_backward_flops(MoE(E=8, k=2, F=14336, norm_topk=True))    # 9*8 - 3 + 6*2 - 2
    79
    """
    E, k = moe.E, moe.k
    flops = 9 * E - 3 if moe.router == "softmax" else 7 * E
    flops += k if moe.scale != 1 else 0
    return flops + (6 * k - 2 if moe.norm_topk else 0)
