"""The conditions of a training plan, solved with ``sr.crossover`` from its layer rows (one
whole layer of the model, or the book's MLP block), never typed in.

Each role's collectives are compared with the compute of the pass they run in (roles on
different axes overlap each other, so each must hide under compute on its own); bandwidth
terms only (latency floors left out, as in the book). With one axis per role and a torus
that wraps they reduce to the book's forms (ch. 5; ch. 12 for GPUs):

- ``dp``, ``fsdp``: tokens per chip B/N > C/W (alpha/M_X over M_X axes; C/W_GPU in an
  NVLink node, C/W_node beyond it, with the mesh's (d-1)/d ring factors); over DCN axes,
  tokens per slice > C/W_dcn; a mixture of experts needs E/k times more (book ch. 12:
  B/X > (E/k) C/W; its layer rows are the MoE MLP);
- ``tp``: Y < M_Y F W / C (the mesh's W held at this plan's axes; for a mixture of experts
  k F, the tokens being gathered once for their k experts);
- ``ep``: the experts' width F above which EP's two AllToAlls hide under the expert
  compute: on one wrapped TPU axis of Z_e chips F > Z_e alpha min(k, Z_e)/(4k) (not in
  the book); on GPUs beyond a node F > 8 alpha (Z_e - 8) min(k, Z_e)/(k Z_e) with
  alpha = C/W_node, where the book's ch. 12 form is alpha (Z_e - 8) min(8/Z_e, 1/k):
  the same for Z_e >= 8k (its "F > 8 alpha" is the Z_e >> 8 limit), 8k/Z_e times it for
  k > Z_e/8, where the book sends a token across the network once per node and the
  AllToAll once per chip; with TP (each TP rank sends every copy) Y times these;
- ``x_opt`` (fsdp + tp): X_opt = sqrt((B/F)(M_X/M_Y) N), where the FSDP and TP times meet;
- ``fsdp+tp``: at X_opt, B/N > alpha^2/(M_X M_Y F) (4 alpha^2/(M_X M_Y F) when the X- and
  Y-traffic do not overlap, ``overlap_axes=False``: the book's earlier revision);
- ``bubble`` (pp): GPipe's idle fraction (Z - 1)/(N_mb + Z - 1) (not in the book).

The layer they are solved from is the conventions' ``condition_layer``: the book's MLP
block under "book" (the forms above), one whole layer of the model by default (attention
and the norms add compute per weight byte, so its thresholds are a little lower).

>>> import symroof as sr
>>> plan = sr.train_plan("llama-3.1-70b", sr.mesh("tpu-v5p", "4x4x4"), "fsdp",
...                      batch_tokens=2**20, seq=4096, conventions="book")
>>> c = plan.conditions["fsdp"]
>>> c.threshold                     # alpha / 3 = (C / W_ici) / 3 = 2550 / 3: all three axes
850
>>> print(c)
fsdp: B/N > 850 (plan: 16384): holds
>>> sr.latex(c)
'B/N > 850'
>>> whole = sr.train_plan("llama-3.1-70b", sr.mesh("tpu-v5p", "4x4x4"), "fsdp",
...                       batch_tokens=2**20, seq=4096)
>>> print(whole.conditions["fsdp"])
fsdp: B/N > 849.5 (plan: 16384): holds
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import sympy as sp

from ..analysis import crossover
from ..cost import as_exact
from ..symbols import B as _B
from .layout import ROLES, SYM, a2a_link, role_links
from .rows import condition_rows, template_make

__all__ = ["Condition", "derive"]

_REL = {">": ">", "<": "<", "=": "="}
_SOURCES = {
    "dp": "book ch. 5 'Data Parallelism': B/X > C/W_ici (alpha/M_X over M_X axes); ch. 12: "
          "C/W_GPU inside a node, C/W_node beyond it; MoE: (E/k) C/W",
    "dcn": "book ch. 5 'Scaling Between Pods': tokens per slice > C/W_dcn",
    "fsdp": "book ch. 5 'Fully-Sharded Data Parallelism': B/X > C/W_ici, alpha/M_X over "
            "M_X axes; MoE (ch. 12): (E/k) C/W",
    "ep": "book ch. 12 'Expert Parallelism': F > alpha (Z - 8)/k for k >= Z/8, F > 8 alpha "
          "for Z >> 8k (alpha = C/W_node); on a TPU torus (not in the book) the AllToAll of "
          "ch. 3 against the expert compute",
    "tp": "book ch. 5 'Tensor Parallelism': Y < M_Y F W_ici / C; ch. 12: Y < F W / C",
    "x_opt": "book ch. 5 'Mixed FSDP and Tensor Parallelism': X_opt = sqrt((B/F)(M_X/M_Y) N)",
    "fsdp+tp": "book ch. 5 'Mixed FSDP and Tensor Parallelism': B/N > alpha^2/(M_X M_Y F) "
               "(earlier revision, X and Y comms added: 4 alpha^2/(M_X M_Y F))",
    "bubble": "GPipe's bubble (Huang et al. 2019); not in the book",
}


@dataclass(frozen=True)
class Condition:
    """``lhs relation threshold``: a solved threshold, the plan's value of ``lhs`` and
    whether it holds. ``lhs`` is plain text; ``sr.latex`` prints the whole inequality."""

    name: str
    lhs: str
    relation: str
    threshold: sp.Expr
    value: Any
    source: str

    @property
    def holds(self) -> bool | None:
        """Whether the plan meets it (None for an optimum, or while symbolic)."""
        if self.relation == "=" or self.value is None:
            return None
        diff = sp.sympify(self.value - self.threshold)
        if not diff.is_number:
            return None
        return bool(diff > 0) if self.relation == ">" else bool(diff < 0)

    def chips_for(self, batch: Any) -> sp.Expr:
        """The chips at which ``batch`` tokens meet this per-chip batch condition exactly,
        N = batch / threshold (exact, symbolic where either is): more chips than this and
        the plan's strategy turns communication-bound (the book's "16e6 / (2550 / 3) =
        18,823 chips", ch. 5). Only for a ``B/N`` condition. The threshold is the one of
        this plan's mesh axes; where it moves with the chip count (a GPU's DP over few
        nodes, alpha (X - 1)/X), plan again at the answer.

        >>> import symroof as sr
        >>> plan = sr.train_plan("llama-3.1-70b", sr.mesh("tpu-v5p", "4x4x4"), "fsdp",
        ...                      batch_tokens=2**20, seq=4096, conventions="book")
        >>> n = plan.conditions["fsdp"].chips_for(16 * 10**6)
        >>> n, int(n)
        (320000/17, 18823)
        """
        if self.lhs != "B/N":
            raise ValueError(f"chips_for(): the {self.name} condition bounds {self.lhs}, not "
                             "the batch per chip (B/N); it has no chip count to solve for")
        tokens = as_exact(batch, "batch")
        if tokens.is_number and not tokens > 0:
            raise ValueError(f"chips_for(): batch must be a positive number of tokens, got "
                             f"{batch!r}")
        return tokens / self.threshold

    def _latex(self, printer: Any) -> str:
        lhs = {"B/N": r"B/N", "Y": "Y", "X_opt": r"X_\text{opt}", "bubble": r"\text{bubble}",
               "B/slices": r"B/N_\text{slices}", "F": "F"}.get(self.lhs, self.lhs)
        return f"{lhs} {self.relation} {printer._print(self.threshold)}"

    def _repr_latex_(self) -> str:
        return "$\\displaystyle " + sp.latex(self) + "$"

    def __str__(self) -> str:
        def num(x: Any) -> str:
            x = sp.sympify(x)
            if x.is_Integer:
                return str(x)
            return f"{float(x):.4g}" if x.is_number else str(x)

        text = f"{self.name}: {self.lhs} {self.relation} {num(self.threshold)}"
        if self.value is not None:
            text += f" (plan: {num(self.value)})"
        if self.holds is not None:
            text += ": holds" if self.holds else ": does not hold"
        return text


def _times(plan: Any, subs: dict, model: Any = None) -> dict[str, dict[str, sp.Expr]]:
    """Per pass, {"compute": t_math, role: collective seconds} of the layer template (of
    ``model``, default the plan's), with the mesh's k per role, no latency, and ``subs``
    applied."""
    n = {r: SYM[f"n_{r}"] for r in ROLES}
    z = tuple(int(plan.zero >= level) for level in (1, 2, 3))
    rows = condition_rows(model or plan.model, _B, plan.seq, n, z, template_make)
    links = role_links(plan.mesh, plan.axes)  # the roles' and JOINT's (dp and ep together)
    values = {SYM[f"k_{r}"]: links[r][0] for r in links}
    values[SYM["a_ep"]] = a2a_link(plan.mesh, plan.axes["ep"])
    values.update({SYM[f"lat_{r}"]: 0 for r in links})
    values.update({SYM[f"lar_{r}"]: 0 for r in links})
    values.update(subs)
    C = plan.mesh.chip.peak(plan.dtype)
    out: dict[str, dict[str, sp.Expr]] = {}
    for key, cost in rows.items():
        p, role = key.split("/")[:2]
        role = role.split("+")[0]  # dp+ep's gradient AllReduce: a data-parallel reduction
        term = cost.flops / C if role == "compute" else cost.net_time
        out.setdefault(p, {})
        out[p][role] = out[p].get(role, 0) + sp.sympify(term).subs(values)
    return out


def _solve(times: dict, role: str, var: sp.Symbol, pick: Any) -> sp.Expr | None:
    """The root in ``var`` of compute = the role's collectives, strictest over passes."""
    roots = [crossover(t["compute"], t[role], var) for t in times.values()
             if t.get(role, 0) != 0]
    return pick(*roots) if roots else None


def derive(plan: Any) -> dict[str, Condition]:
    """Every condition of ``plan``'s strategy (module docstring)."""
    deg = plan.degrees
    N = plan.n_chips
    fixed = {SYM[f"n_{r}"]: deg[r] for r in ROLES}
    per_chip = plan.batch_tokens / N
    out: dict[str, Condition] = {}
    times = _times(plan, fixed)
    for role in ("dp", "fsdp"):
        if not plan.axes[role]:
            continue
        root = _solve(times, role, _B, sp.Max)
        if root is None:
            continue
        if all(plan.mesh[a].kind == "dcn" for a in plan.axes[role]):
            out["dcn"] = Condition(f"{role} over DCN", "B/slices", ">", root / deg[role],
                                   plan.batch_tokens / deg[role], _SOURCES["dcn"])
        else:
            out[role] = Condition(role, "B/N", ">", root / N, per_chip, _SOURCES[role])
    if plan.axes["tp"]:
        y = SYM["n_tp"]
        # at the plan's batch: a whole layer's rows are affine in B, and where a term does
        # not scale with it (a small model's) the root in Y would keep B
        free_y = {s: v for s, v in fixed.items() if s != y} | {_B: plan.batch_tokens}
        root = _solve(_times(plan, free_y), "tp", y, sp.Min)
        if root is not None:
            out["tp"] = Condition("tp", "Y", "<", root, deg["tp"], _SOURCES["tp"])
    if plan.axes["ep"]:
        out["ep"] = _ep(plan, fixed)
    if plan.axes["fsdp"] and plan.axes["tp"] and plan.zero == 3:
        out.update(_fsdp_tp(plan, fixed, N, per_chip))
    if plan.axes["pp"]:
        out["bubble"] = Condition("pp bubble", "bubble", "=", plan.bubble, None,
                                  _SOURCES["bubble"])
    return out


def _ep(plan: Any, fixed: dict) -> Condition:
    """The experts' width F where EP's AllToAlls take as long as the expert compute (the
    forward pass binds: the backward has twice the FLOPs and the same two AllToAlls)."""
    f = sp.Dummy("F_expert", positive=True)  # local: the width solved for, not in the root
    moe = plan.model.moe
    wide = plan.model.replace(moe=dataclasses.replace(moe, F=f))
    at = {**fixed, _B: plan.batch_tokens}  # the plan's batch (a whole layer's rows are affine)
    roots = []
    for t in _times(plan, at, wide).values():
        if t.get("ep", 0) != 0:
            try:
                roots.append(crossover(t["compute"], t["ep"], f))
            except ValueError:  # no positive root: this pass hides them at any width
                pass
    return Condition("ep", "F", ">", sp.Max(0, *roots), moe.F, _SOURCES["ep"])


def _fsdp_tp(plan: Any, fixed: dict, N: Any, per_chip: Any) -> dict[str, Condition]:
    """X_opt (FSDP and TP comms equal, FSDP x TP chips held fixed) and, there, the
    smallest tokens per chip that keeps the forward pass compute-bound."""
    x, y = SYM["n_fsdp"], SYM["n_tp"]
    pair = plan.degrees["fsdp"] * plan.degrees["tp"]
    subs = {s: v for s, v in fixed.items() if s not in (x, y)}
    subs[y] = pair / x
    fwd = _times(plan, subs)["forward"]
    x_opt = crossover(fwd["fsdp"], fwd["tp"], x)
    at = {k: sp.sympify(v).subs(x, x_opt) for k, v in fwd.items()}
    comms = sp.Max(at["fsdp"], at["tp"]) if plan.overlap_axes else at["fsdp"] + at["tp"]
    b_star = crossover(at["compute"], comms, _B)
    return {
        "x_opt": Condition("fsdp degree at the optimum", "X_opt", "=",
                           x_opt.subs(_B, plan.batch_tokens), plan.degrees["fsdp"],
                           _SOURCES["x_opt"]),
        "fsdp+tp": Condition("fsdp+tp at X_opt", "B/N", ">", sp.simplify(b_star / N),
                             per_chip, _SOURCES["fsdp+tp"]),
    }
