"""Per-op roofline tables: FLOPs, bytes by kind, intensity, bound and time of each op.

A table is built from a breakdown (``dict[str, Cost]`` with numbers substituted) and a
chip; its totals are sums of the rows. It prints as text, Markdown, LaTeX (booktabs) and
JSON, and renders in notebooks.

>>> import symroof as sr
>>> t = roofline_table(sr.model("llama-3.1-8b"), sr.chip("h100"), batch=1, new_tokens=1,
...                    cached=2047)
>>> t.bottleneck().split(":")[0]
'memory-bound'
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import sympy as sp

from ..analysis import TimeBound, time
from ..cost import Cost
from ..derivation import tex_escape
from ..hardware import as_chip
from ..render import fmt_si
from .transformer import Transformer, group

__all__ = ["RooflineTable", "roofline_table", "fmt_si"]

COLUMNS = ("op", "FLOPs", "weight B", "KV B", "act B", "intensity", "bound", "time")


@dataclass(frozen=True)
class RooflineTable:
    """Rows of Costs on one chip, each with its own roofline (unfused, no overlap)."""

    rows: dict[str, Cost]
    chip: Any
    dtype: str = "bf16"
    useful: bool = True
    title: str = ""
    whole: Cost | None = None
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "chip", as_chip(self.chip))
        if not self.chip.critical_intensity(self.dtype).is_number:
            raise ValueError(f"a roofline table needs a chip with numbers; {self.chip.name} has "
                             f"ridge {self.chip.critical_intensity(self.dtype)} (use a preset "
                             "or Chip.replace(...) with figures)")
        for name, cost in self.rows.items():
            if cost.free_symbols:
                raise ValueError(f"row {name!r} is still symbolic in "
                                 f"{sorted(map(str, cost.free_symbols))}: substitute numbers")

    @property
    def times(self) -> dict[str, TimeBound]:
        return {n: time(c, self.chip, self.dtype, useful=self.useful) for n, c in self.rows.items()}

    @property
    def total(self) -> Cost:
        return sum(self.rows.values(), Cost())

    @property
    def per_op_sum(self) -> sp.Expr:
        """Sum of the rows' lower bounds: kernels one after another."""
        return sum(t.lower for t in self.times.values())

    @property
    def bounds(self) -> tuple[sp.Expr, sp.Expr]:
        """(lower, upper) time of the totals: perfect overlap vs none."""
        t = time(self.total, self.chip, self.dtype, useful=self.useful)
        return t.lower, t.upper

    def bottleneck(self) -> str:
        """One sentence: what bounds the step and which row costs most."""
        times = self.times
        worst = max(times, key=lambda k: float(times[k].lower))
        share = float(times[worst].lower / self.per_op_sum)
        t_total = time(self.total, self.chip, self.dtype, useful=self.useful)
        return (f"{t_total.bound}-bound: '{worst}' takes {share:.0%} of the per-op time "
                f"({fmt_si(times[worst].lower, 's')} of {fmt_si(self.per_op_sum, 's')}), "
                f"{times[worst].bound}-bound at intensity "
                f"{float(_intensity(self.rows[worst], self.useful)):.3g} against the "
                f"ridge {float(self.chip.critical_intensity(self.dtype)):.3g} FLOP/B")

    # -- cells -------------------------------------------------------------------------
    def _cells(self, name: str, cost: Cost, t: TimeBound) -> list[str]:
        flops = cost.useful_flops if self.useful else cost.flops
        return [name, fmt_si(flops), fmt_si(cost.weight_bytes), fmt_si(cost.kv_bytes),
                fmt_si(cost.act_bytes), f"{float(_intensity(cost, self.useful)):.3g}",
                t.bound, fmt_si(t.lower, "s")]

    def _body(self) -> tuple[list[list[str]], list[str]]:
        times = self.times
        body = [self._cells(n, c, times[n]) for n, c in self.rows.items()]
        total = self._cells("total", self.total, time(self.total, self.chip, self.dtype,
                                                        useful=self.useful))
        total[-1] = fmt_si(self.per_op_sum, "s") + " (sum)"
        return body, total

    def _summary(self) -> list[str]:
        lo, hi = self.bounds
        lines = [f"per-op sum {fmt_si(self.per_op_sum, 's')}; totals as one roofline: "
                 f"{fmt_si(lo, 's')} (max, full overlap) .. {fmt_si(hi, 's')} (sum, no overlap)"]
        if self.whole is not None:
            w = time(self.whole, self.chip, self.dtype, useful=True).lower
            lines.append(f"whole-model bound (weights + KV only) {fmt_si(w, 's')}; per-op sum "
                         f"is {float(self.per_op_sum / w):.2f}x of it")
        lines.append(self.bottleneck())
        return lines + list(self.notes)

    def to_text(self) -> str:
        body, total = self._body()
        cells = [list(COLUMNS), *body, total]
        widths = [max(len(r[i]) for r in cells) for i in range(len(COLUMNS))]
        fmt = lambda r: "  ".join(c.ljust(w) if i == 0 else c.rjust(w)  # noqa: E731
                                  for i, (c, w) in enumerate(zip(r, widths)))
        rule = "-" * len(fmt(cells[0]))
        head = [self.title] if self.title else []
        ridge = float(self.chip.critical_intensity(self.dtype))
        head.append(f"{self.chip.name}, {self.dtype}: ridge {ridge:.3g} FLOP/B")
        lines = head + [fmt(cells[0]), rule] + [fmt(r) for r in body] + [rule, fmt(total)]
        return "\n".join(lines + [""] + self._summary())

    __str__ = to_text

    def to_markdown(self) -> str:
        body, total = self._body()
        lines = [f"**{self.title}**", ""] if self.title else []
        lines += ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
        lines += ["| " + " | ".join(r) + " |" for r in body]
        lines.append("| " + " | ".join(f"**{c}**" for c in total) + " |")
        return "\n".join(lines + [""] + [f"- {s}" for s in self._summary()])

    _repr_markdown_ = to_markdown

    def to_latex(self) -> str:
        body, total = self._body()
        esc = lambda r: " & ".join(tex_escape(c) for c in r) + r" \\"  # noqa: E731
        lines = [r"\begin{table}[ht]", r"\centering", r"\small",
                 r"\begin{tabular}{l" + "r" * (len(COLUMNS) - 1) + "}", r"\toprule",
                 esc(COLUMNS), r"\midrule", *map(esc, body), r"\midrule", esc(total),
                 r"\bottomrule", r"\end{tabular}"]
        if self.title:
            lines.append(rf"\caption{{{tex_escape(self.title)}}}")
        # the summary stays inside the float, under its own table
        lines += [r"\par\smallskip\footnotesize\raggedright"]
        lines += [rf"{tex_escape(s)}\par" for s in self._summary()]
        lines.append(r"\end{table}")
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        """Stable JSON-ready form: numbers as numbers, exact values as strings."""
        times = self.times

        def row(cost: Cost, t: TimeBound) -> dict[str, Any]:
            return {"flops": int(cost.flops), "useful_flops": int(cost.useful_flops),
                    "weight_bytes": int(cost.weight_bytes), "kv_bytes": int(cost.kv_bytes),
                    "act_bytes": int(cost.act_bytes),
                    "intensity": float(_intensity(cost, self.useful)),
                    "intensity_exact": str(_intensity(cost, self.useful)),
                    "bound": t.bound, "t_math_s": float(t.t_math), "t_mem_s": float(t.t_mem),
                    "t_lower_s": float(t.lower), "t_upper_s": float(t.upper)}

        lo, hi = self.bounds
        out = {"title": self.title, "chip": self.chip.name, "dtype": self.dtype,
               "flops": "useful" if self.useful else "executed",
               "ridge": float(self.chip.critical_intensity(self.dtype)),
               "rows": {n: row(c, times[n]) for n, c in self.rows.items()},
               "total": row(self.total, time(self.total, self.chip, self.dtype,
                                             useful=self.useful)),
               "per_op_sum_s": float(self.per_op_sum), "lower_s": float(lo),
               "upper_s": float(hi), "bottleneck": self.bottleneck(), "notes": list(self.notes)}
        if self.whole is not None:
            out["whole_model_lower_s"] = float(time(self.whole, self.chip, self.dtype,
                                                    useful=True).lower)
        return out

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), indent=2)


def _intensity(cost: Cost, useful: bool) -> sp.Expr:
    return cost.useful_intensity if useful else cost.intensity


def roofline_table(model: Transformer, chip: Any, *, batch: int, new_tokens: int,
                   cached: int = 0, dtype: str = "bf16", groups: bool = False,
                   attention: str = "fused", last_only: bool = True,
                   title: str = "") -> RooflineTable:
    """The per-op roofline table of one forward step of ``model`` on ``chip``.

    Default assumptions (stated in the table's notes): useful FLOPs; a fused attention core
    (scores stay on chip) with unfused norms and elementwise ops; lm_head on the last
    position only.
    """
    rows = model.ops(batch, new_tokens, cached, last_only=last_only, attention=attention)
    rows = group(rows) if groups else rows
    notes = (f"attention core: {attention}"
             + (" (FlashAttention-style: scores stay on chip, masked blocks skipped)"
                if attention == "fused" else " (score matrix written to and read from memory)")
             + "; norms and elementwise ops unfused; useful FLOPs; lm_head on "
             + ("the last position" if last_only else "every position"),)
    return RooflineTable(rows=rows, chip=chip, dtype=dtype, useful=True, title=title,
                         whole=model.whole(batch, new_tokens, cached), notes=notes)
