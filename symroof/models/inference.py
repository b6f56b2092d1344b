"""Whole-model questions about inference: crossovers and step times.

- :func:`ctx_star`: the context where a decoded token's attention FLOPs equal its matmul
  FLOPs, ctx* = 2 P_mm / (4 L H d_h), solved, not typed in.
- :func:`kv_crossover`: the context where reading the KV cache of a batch costs as many
  bytes as reading the weights.
- :func:`step_time`: one forward step on a chip as one whole-model roofline
  (``per_op=False``) or as the sum of per-group rooflines (``per_op=True``, each group an
  unfused kernel that does not overlap the others).

>>> import symroof as sr
>>> round(float(sr.ctx_star(sr.model("llama-3.1-8b"))))
28628
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sympy as sp

from ..analysis import TimeBound, crossover, time
from ..conventions import SYMROOF, Conventions, as_conventions, using
from ..cost import Cost
from ..hardware import as_chip
from ..symbols import B as _B
from ..symbols import S as _S
from ..workload import as_step
from .transformer import Transformer, group

__all__ = ["ctx_star", "kv_crossover", "step_time", "StepTime", "op_times"]


def ctx_star(model: Transformer) -> sp.Expr:
    """Context S where decode attention FLOPs per token (4 L H d_h S) equal matmul FLOPs per
    token (2 P_mm).

    >>> import symroof as sr
    >>> sr.ctx_star(sr.Transformer())
    (3*D*F*L + 2*D*G*L*d_h + 2*D*H*L*d_h + D*V)/(2*H*L*d_h)
    """
    return crossover(model.attn_flops_per_token(_S), 2 * model.matmul_params, _S)


def kv_crossover(model: Transformer, batch: Any = _B) -> sp.Expr:
    """Context S where a batch's KV-cache read in a decode step (B S 2 L G d_h kv_bytes, as
    :meth:`Transformer.whole` reads it: a sliding window caps the S of its layers) equals the
    weight read of the same step (P_mm w_bytes; a MoE's balanced step reads min(E, B k)
    experts, as the whole-model cost does); ``ValueError`` where the cache never gets there.
    Both sides are the one whole-model cost's (head width and KV traffic as it counts them).

    >>> import symroof as sr
    >>> round(float(kv_crossover(sr.model("llama-3.1-8b"), batch=1)))
    114512
    >>> kv_crossover(sr.model("mixtral-8x7b"), batch=64)   # all 8 experts read, not k = 2
    22207/2
    """
    step = model.whole(batch, 1, _S - 1)
    return crossover(step.kv_bytes, step.weight_bytes, _S)


def op_times(rows: dict[str, Cost], chip: Any, dtype: str = "bf16",
             useful: bool = True) -> dict[str, TimeBound]:
    """A roofline time bound for each row (or group) of a breakdown."""
    return {name: time(cost, chip, dtype, useful=useful) for name, cost in rows.items()}


@dataclass(frozen=True, repr=False)
class StepTime:
    """Both views of one step: the whole-model bound and the per-group sum.

    ``print`` shows a summary, one line per group:

    >>> import symroof as sr
    >>> print(step_time(sr.model("llama-3.1-8b"), "h100", 64, 1, 2047))
    step: per-op sum 9.84 ms, 1.02x the whole-model bound 9.61 ms (memory-bound)
      embedding              memory    313 ns
      norms                  memory   20.5 us
      attention projections  memory    834 us
      attention core         memory   5.14 ms
      KV write               memory   5.01 us
      MLP                    memory   3.43 ms
      elementwise            memory   95.2 us
      lm_head                memory    319 us
    conventions: symroof
    """

    whole: TimeBound
    groups: dict[str, TimeBound]
    conventions: Conventions = SYMROOF

    def _headline(self) -> str:
        from ..render import fmt_si

        if not self.whole.lower.is_number:
            free = sorted(map(str, self.whole.lower.free_symbols))
            return (f"step (symbolic in {', '.join(free)}): {len(self.groups)} groups; whole-"
                    f"model bound max({self.whole.t_math}, {self.whole.t_mem}); "
                    f"{self.conventions}")
        return (f"step: per-op sum {fmt_si(self.per_op_sum, 's')}, {float(self.ratio):.2f}x "
                f"the whole-model bound {fmt_si(self.whole.lower, 's')} "
                f"({self.whole.bound}-bound)")

    def __str__(self) -> str:
        from ..render import fmt_si

        if not self.whole.lower.is_number:
            return self._headline()
        width = max(map(len, self.groups), default=0)
        return "\n".join([self._headline()] + [
            f"  {n:<{width}}  {t.bound:<7} {fmt_si(t.lower, 's'):>8}"
            for n, t in self.groups.items()] + [str(self.conventions)])

    def __repr__(self) -> str:
        return f"<StepTime {self._headline()}>"

    @property
    def per_op_sum(self) -> sp.Expr:
        """Sum over groups of max(t_math, t_mem): unfused kernels, one after another."""
        return sum(t.lower for t in self.groups.values())

    def to_latex(self) -> str:
        """A booktabs table: each group's bound and time, the per-op sum and the whole."""
        from ..derivation import tex_escape
        from ..render import fmt_si

        rows = [rf"{tex_escape(n)} & {t.bound} & {fmt_si(t.lower, 's')} \\"
                for n, t in self.groups.items()]
        return "\n".join([r"\begin{tabular}{llr}", r"\toprule", r"group & bound & time \\",
                          r"\midrule", *rows, r"\midrule",
                          rf"per-op sum & & {fmt_si(self.per_op_sum, 's')} \\",
                          rf"whole-model bound & {self.whole.bound} & "
                          rf"{fmt_si(self.whole.lower, 's')} \\", r"\bottomrule",
                          r"\end{tabular}"])

    def _repr_markdown_(self) -> str:
        from ..render import fmt_si

        if not self.whole.lower.is_number:
            return "$" + sp.latex(self.whole) + "$"
        rows = [f"| {n} | {t.bound} | {fmt_si(t.lower, 's')} |" for n, t in self.groups.items()]
        return "\n".join(["| group | bound | time |", "|---|---|---:|", *rows, "",
                          f"- per-op sum {fmt_si(self.per_op_sum, 's')}; whole-model bound "
                          f"{fmt_si(self.whole.lower, 's')} ({float(self.ratio):.2f}x)"])

    @property
    def ratio(self) -> sp.Expr:
        """Per-op sum over the whole-model lower bound (>= 1)."""
        return self.per_op_sum / self.whole.lower


def step_time(model: Transformer, chip: Any, batch: Any, new_tokens: Any = None,
              cached: Any = 0, *, dtype: str = "bf16", attention: str = "fused",
              last_only: bool | None = None, conventions: Any = None) -> StepTime:
    """Time of one forward step (``batch`` a :class:`~symroof.Step`, or batch, new_tokens
    and cached): whole-model roofline and per-group rooflines, one lm_head rule for both.

    The per-group view counts useful FLOPs (a kernel skips masked blocks) and, by default,
    the fused attention core (scores stay on chip) with unfused norms and elementwise ops.
    ``conventions`` (a profile name or record; default "symroof") builds both views;
    ``last_only`` defaults to its ``lm_head_positions``.

    >>> import symroof as sr
    >>> st = step_time(sr.model("llama-3.1-8b"), sr.chip("h100"), sr.Step(1, context=2048))
    >>> round(float(st.ratio), 2)
    1.0
    """
    chip, step = as_chip(chip), as_step(batch, new_tokens, cached)
    cv = as_conventions(conventions)
    last_only = cv.last_only if last_only is None else last_only
    rows = model.ops(step, last_only=last_only, attention=attention, conventions=cv)
    useful = cv.counted == "useful_flops"
    groups = op_times(group(rows), chip, dtype, useful=useful)
    with using(cv):
        whole = model.whole(step, last_only=last_only)
    return StepTime(whole=time(whole, chip, dtype, useful=True), groups=groups, conventions=cv)
