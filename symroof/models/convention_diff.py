"""Why two conventions give two numbers: one step's rows under both, row by row, with each
difference put down to the convention fields that make it.

The attribution switches the fields that differ from the first record to the second one at
a time, in the order of :data:`symroof.conventions.FIELDS`, and books the change each
switch makes to each row's counts against that field. The switches telescope: their sum is
the whole difference, and what is left after the last one (the second record's rows minus
those of the first with every differing field switched) is what the fields do not explain
(nothing, between two records of symroof's: the rows read only the fields). Counts are
exact integers; the symbolic difference of a row is the same subtraction on the rows of
(B, T, S).

>>> import symroof as sr
>>> d = compare_conventions(sr.model("llama-3.1-8b"), sr.chip("h100"), 1, 1, 2047,
...                         "symroof", "llm-viewer")
>>> d.explained, d.rows["mlp_norm"].by_field["norm_flops"].flops  # L (7D - (4D + 2))
(True, 393152)
>>> d.formula("attn/residual", "act_bytes")       # one read fewer: L B D act_bytes
-262144*B
>>> d.formula("attn/core", "flops")               # softmax 5 an element, not 6n - 2 a row
1024*B*(2 - S)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sympy as sp

from ..conventions import Conventions, profile
from ..cost import Cost
from ..hardware import as_chip
from ..render import fmt_si
from ..symbols import B, S, T
from ..workload import as_step

__all__ = ["compare_conventions", "ConventionsDiff", "RowDiff", "QUANTITIES"]

#: the counts compared, as a Cost holds them (the bytes written among the act and KV bytes too)
QUANTITIES = ("flops", "useful_flops", "weight_bytes", "act_bytes", "kv_bytes", "act_store_bytes",
              "kv_store_bytes")


@dataclass(frozen=True)
class RowDiff:
    """One row under both records (a row one of them leaves out is a zero Cost), the change
    each differing field makes to it, and what no field explains (``left``)."""

    a: Cost
    b: Cost
    by_field: dict[str, Cost]
    left: Cost

    @property
    def same(self) -> bool:
        return all(getattr(self.a, q) == getattr(self.b, q) for q in QUANTITIES)

    def fields(self) -> list[str]:
        """The fields that change this row, in switching order.

        >>> import symroof as sr
        >>> d = sr.compare_conventions(sr.model("tiny"), "h100", sr.Step(2, 4), "llm-viewer")
        >>> d.rows["attn/residual"].fields()
        ['residual_reads']
        """
        return [f for f, c in self.by_field.items()
                if any(getattr(c, q) != 0 for q in QUANTITIES)]


@dataclass(frozen=True)
class ConventionsDiff:
    """``compare_conventions``'s answer: per row a :class:`RowDiff`; ``fields`` the fields
    that differ (switching order); ``explained`` whether they account for every count."""

    a: Conventions
    b: Conventions
    step: tuple
    fields: tuple[str, ...]
    rows: dict[str, RowDiff]
    chip: Any
    dtype: str
    symbolic: tuple  # (model, attention) for formula()

    @property
    def explained(self) -> bool:
        return all(getattr(r.left, q) == 0 for r in self.rows.values() for q in QUANTITIES)

    def formula(self, row: str, quantity: str = "flops") -> sp.Expr:
        """The difference b - a of one row's ``quantity`` as a formula in B, T, S (a decode
        step: T = 1), the model's dimensions as numbers."""
        if quantity not in QUANTITIES:
            raise ValueError(f"quantity must be one of {', '.join(QUANTITIES)}, got "
                             f"{quantity!r}")
        if row not in self.rows:
            raise ValueError(f"no row {row!r}; rows are {', '.join(self.rows)}")
        model, attention = self.symbolic
        T_ = T if self.step[1] != 1 else sp.Integer(1)
        costs = [_rows(model, B, T_, S - T_, attention, cv).get(row, Cost())
                 for cv in (self.a, self.b)]
        return sp.factor_terms(sp.expand(getattr(costs[1], quantity)
                                         - getattr(costs[0], quantity)))

    def time(self, record: Conventions) -> float:
        """The per-op sum of lower bounds (s) of the step's rows under ``record`` (a or b)."""
        from ..analysis import time

        rows = {n: (r.a if record is self.a else r.b) for n, r in self.rows.items()}
        return float(sum(time(c, self.chip, self.dtype, conventions=record).lower
                         for c in rows.values()))

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: both records, the fields, per row both counts and each field's part.

        >>> import symroof as sr
        >>> d = sr.compare_conventions(sr.model("tiny"), "h100", sr.Step(1, 4), "book")
        >>> d.as_dict()["rows"]["attn/core"]["fields"]
        ['attention_pairs']
        """
        def counts(c: Cost) -> dict[str, int]:
            return {q: int(getattr(c, q)) for q in QUANTITIES}

        return {"a": self.a.as_dict(), "b": self.b.as_dict(), "fields": list(self.fields),
                "explained": self.explained,
                "per_op_sum_s": {"a": self.time(self.a), "b": self.time(self.b)},
                "rows": {n: {"a": counts(r.a), "b": counts(r.b), "fields": r.fields(),
                             "by_field": {f: counts(c) for f, c in r.by_field.items()
                                          if f in r.fields()},
                             "left": counts(r.left)} for n, r in self.rows.items()}}

    def __str__(self) -> str:
        head = (f"{self.a.label} vs {self.b.label}: {len(self.fields)} field(s) differ; "
                + ("they explain every difference" if self.explained else
                   "some difference is left unexplained"))
        lines = [head, f"per-op sum {fmt_si(self.time(self.a), 's')} vs "
                 f"{fmt_si(self.time(self.b), 's')} on {self.chip.name}"]
        width = max(map(len, self.rows), default=0)
        for name, r in self.rows.items():
            if r.same:
                continue
            parts = [f"{q} {fmt_si(getattr(r.a, q))} -> {fmt_si(getattr(r.b, q))}"
                     for q in QUANTITIES if getattr(r.a, q) != getattr(r.b, q)
                     and not (q == "useful_flops" and r.a.flops == r.a.useful_flops
                              and r.b.flops == r.b.useful_flops)]
            lines.append(f"  {name:<{width}}  {'; '.join(parts)}  [{', '.join(r.fields())}]")
        return "\n".join(lines)


def _minus(x: Cost, y: Cost) -> Cost:
    """x - y, field by field (a difference of counts, which may be negative)."""
    return Cost(**{q: getattr(x, q) - getattr(y, q) for q in QUANTITIES})


def _rows(model: Any, batch: Any, new: Any, cached: Any, attention: str,
          cv: Conventions) -> dict[str, Cost]:
    return model.ops(batch, new, cached, last_only=cv.last_only, attention=attention,
                     conventions=cv)


def compare_conventions(model: Any, chip: Any, *step_and_profiles: Any, dtype: str = "bf16",
                        attention: str = "fused") -> ConventionsDiff:
    """One forward step of ``model`` under two conventions, row by row: both counts, the
    fields that make each difference, and what they leave unexplained.

    ``step_and_profiles``: the step (a :class:`~symroof.Step`, or batch, new_tokens and
    cached) then the two conventions (profile names or records; default "symroof" against
    "llm-viewer", one given: "symroof" against it).

    >>> import symroof as sr
    >>> d = compare_conventions(sr.model("tiny"), "h100", sr.Step(1, 8), "symroof", "book")
    >>> d.fields
    ('attention_pairs', 'ring_factor', 'gpu_level', 'optimizer_bytes', 'condition_layer')
    >>> d.rows["attn/core"].fields()
    ['attention_pairs']
    """
    items = list(step_and_profiles)
    named = []
    while items and isinstance(items[-1], (str, Conventions)) and len(named) < 2:
        named.insert(0, items.pop())
    a, b = (["symroof", "llm-viewer"], ["symroof", *named], named)[len(named)]
    step = as_step(*items) if items else None
    if step is None:
        raise ValueError("compare_conventions() needs a step: sr.Step(batch, context=...) or "
                         "batch, new_tokens, cached")
    batch, new_tokens, cached = step
    a, b = profile(a), profile(b)
    chip = as_chip(chip)
    fields = tuple(a.differences(b))
    path = [a]
    for f in fields:
        path.append(path[-1].replace(**{f: getattr(b, f)}))
    steps = [_rows(model, batch, new_tokens, cached, attention, cv) for cv in path]
    final = _rows(model, batch, new_tokens, cached, attention, b)
    names = list(dict.fromkeys([*steps[0], *final]))
    zero = Cost()
    rows = {}
    for n in names:
        by_field = {f: _minus(steps[i + 1].get(n, zero), steps[i].get(n, zero))
                    for i, f in enumerate(fields)}
        rows[n] = RowDiff(a=steps[0].get(n, zero), b=final.get(n, zero), by_field=by_field,
                          left=_minus(final.get(n, zero), steps[-1].get(n, zero)))
    return ConventionsDiff(a=a, b=b, step=(batch, new_tokens, cached), fields=fields,
                           rows=rows, chip=chip, dtype=dtype, symbolic=(model, attention))

