"""Per-op roofline tables: FLOPs, bytes by kind, intensity, bound and time of each op.

A table is built from a breakdown (``dict[str, Cost]`` with numbers substituted) and a
chip; its totals are sums of the rows. It prints as text, Markdown, LaTeX (booktabs) and
JSON, and renders in notebooks. :func:`roofline_table` evaluates a compiled table
(:mod:`symroof.models.compiled`: the symbolic rows built once per model, chip, dtype and
attention), so one configuration costs microseconds; the exact ``Cost`` rows and SymPy time
bounds are built only when asked for (``rows``, ``times``, ``total``, ``whole``).

>>> import symroof as sr
>>> t = roofline_table(sr.model("llama-3.1-8b"), sr.chip("h100"), sr.Step(1, context=2048))
>>> t.bottleneck().split(":")[0]
'memory-bound'
>>> t.numbers["mlp/down"].bound, t.rows["mlp/down"].weight_bytes   # floats now, exact on demand
('memory', 3758096384)
"""

from __future__ import annotations

import functools
import json
import math
from fractions import Fraction
from functools import cached_property
from typing import Any

import sympy as sp

from ..analysis import TimeBound, time
from ..conventions import Conventions, as_conventions, using
from ..cost import FIELDS, Cost
from ..hardware import as_chip
from ..render import fmt_num, fmt_si
from ..timerule import combine, present
from ..workload import Step
from . import table_render as _render
from .compiled import OpValues, compiled_table, exact_terms, intensity_pair, json_rows
from .compiled import exact_number as _exact
from .compiled import row_values as _values
from .sanity import step_warnings
from .transformer import ATTENTION_MODES, Transformer, group

__all__ = ["RooflineTable", "roofline_table", "OpValues", "fmt_si"]


class RooflineTable:
    """Rows of Costs on one chip, each with its own roofline (unfused, no overlap).

    ``numbers`` holds each row's :class:`OpValues` (exact counts, float seconds); ``rows``
    the exact ``Cost`` of each row and ``times`` its SymPy ``TimeBound``. Immutable.
    """

    def __init__(self, rows: dict[str, Cost], chip: Any, dtype: str = "bf16",
                 useful: bool = True, title: str = "", whole: Cost | None = None,
                 notes: tuple[str, ...] = (), conventions: Any = None) -> None:
        chip = as_chip(chip)
        conventions = as_conventions(conventions)
        if not chip.critical_intensity(dtype).is_number:
            raise ValueError(f"a roofline table needs a chip with numbers; {chip.name} has "
                             f"ridge {chip.critical_intensity(dtype)} (use a preset "
                             "or Chip.replace(...) with figures)")
        for name, cost in rows.items():
            if cost.free_symbols:
                raise ValueError(f"row {name!r} is still symbolic in "
                                 f"{sorted(map(str, cost.free_symbols))}: substitute numbers")
        vars(self).update(
            numbers={n: _values(c, chip, dtype, useful) for n, c in rows.items()}, chip=chip,
            dtype=dtype, useful=useful, title=title, notes=tuple(notes), rows=rows, whole=whole,
            conventions=conventions,
            _net={n: _exact(c.net_time) for n, c in rows.items() if c.net_time != 0},
            _whole_values=None if whole is None else _values(whole, chip, dtype, True),
            _whole_net=0 if whole is None else _exact(whole.net_time))

    @classmethod
    def _from_numbers(cls, numbers: dict[str, OpValues], whole: OpValues, chip: Any, dtype: str,
                      title: str, notes: tuple[str, ...], step: tuple,
                      conventions: Conventions, useful: bool) -> RooflineTable:
        """A table from compiled numbers; ``step`` rebuilds its exact rows on demand."""
        table = cls.__new__(cls)
        vars(table).update(numbers=numbers, chip=chip, dtype=dtype, useful=useful, title=title,
                           notes=notes, _step=step, _net={}, _whole_values=whole, _whole_net=0,
                           conventions=conventions)
        return table

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"RooflineTable is immutable (tried to set {name!r})")

    def __repr__(self) -> str:
        return (f"<RooflineTable {self.title!r}: {len(self.numbers)} rows on "
                f"{self.chip.name}, {self.dtype}>")

    def __eq__(self, other: object) -> bool:
        """Equal numbers (exact counts, the same floats) on the same chip, titled alike."""
        if not isinstance(other, RooflineTable):
            return NotImplemented
        fields = ("numbers", "chip", "dtype", "useful", "title", "notes", "_whole_values",
                  "conventions")
        return all(getattr(self, f) == getattr(other, f) for f in fields)

    __hash__ = None  # type: ignore[assignment]  # rows are dicts: tables are not hashable

    # -- exact values, built on demand -------------------------------------------------
    @cached_property
    def rows(self) -> dict[str, Cost]:
        """The exact ``Cost`` of each row (a compiled table builds them when first asked)."""
        model, batch, new, cached, attention, last_only, groups = self._step
        rows = model.ops(batch, new, cached, last_only=last_only, attention=attention,
                         conventions=self.conventions)
        return group(rows) if groups else rows

    @cached_property
    def whole(self) -> Cost | None:
        """The whole-model cost of the step (weights + KV only, the rows' lm_head rule), if
        the table has one."""
        model, batch, new, cached, _, last_only, _ = self._step
        with using(self.conventions):
            return model.whole(batch, new, cached, last_only=last_only)

    @cached_property
    def warnings(self) -> tuple[str, ...]:
        """What makes the step implausible (:func:`symroof.models.sanity.step_warnings`):
        printed in every form, ``warnings`` in JSON; none for a table built from rows."""
        if "_step" not in vars(self):
            return ()
        model, batch, new, cached = self._step[:4]
        whole = self._whole_values
        # the whole row's KV bytes are the cache's at this context where no window makes a
        # prefill read fewer keys than a decode step (attention_rows.context)
        kv = whole.kv_bytes if whole is not None and (model.window is None or new == 1) \
            else None
        return tuple(step_warnings(model, self.chip, batch, cached + new, kv=kv))

    @property
    def times(self) -> dict[str, TimeBound]:
        return {n: time(c, self.chip, self.dtype, useful=self.useful) for n, c in self.rows.items()}

    @property
    def total(self) -> Cost:
        return sum(self.rows.values(), Cost())

    @cached_property
    def _total(self) -> OpValues:
        """The totals' numbers: summed counts, their roofline (network as time() sums it)."""
        compiled = vars(self).get("_totals")
        if compiled is not None:
            return compiled(tuple(self.numbers.values()))
        columns = list(zip(*self.numbers.values()))  # one column per OpValues field
        sums = {n: sum(col) for n, col in zip(FIELDS[:6], columns)}
        stored = {n: sum(col) for n, col in zip(FIELDS[8:], columns[12:])}  # the writes
        return _values({**sums, **stored, "net_time": sum(self._net.values())}, self.chip,
                       self.dtype, self.useful)

    def _exact_times(self, v: OpValues, net_time: Any = 0,
                     useful: bool | None = None) -> tuple[Any, Any, Any]:
        """(lower, upper, index of the largest term) of a row's numbers, exact: the time
        rule (:mod:`symroof.timerule`)."""
        t = exact_terms(v, self.chip, self.dtype, self.useful if useful is None else useful,
                        net_time)
        return combine(list(present(t).values()))

    @cached_property
    def _per_op_sum(self) -> Any:
        return sum(self._exact_times(v, self._net.get(n, 0))[0]
                   for n, v in self.numbers.items())

    @property
    def per_op_sum(self) -> sp.Expr:
        """Sum of the rows' lower bounds: kernels one after another."""
        return sp.sympify(self._per_op_sum)

    @cached_property
    def _bounds(self) -> tuple[Any, Any]:
        return self._exact_times(self._total, sum(self._net.values()))[:2]

    @property
    def bounds(self) -> tuple[sp.Expr, sp.Expr]:
        """(lower, upper) time of the totals: perfect overlap vs none."""
        return sp.sympify(self._bounds[0]), sp.sympify(self._bounds[1])

    def _intensity(self, v: OpValues) -> Any:
        counted = v.useful_flops if self.useful else v.flops
        if v.bytes == 0:
            return math.inf if counted != 0 else math.nan
        return Fraction(counted) / v.bytes

    def _intensity_pair(self, v: OpValues) -> tuple[float, str]:
        """(float, exact text) of a row's intensity (:func:`compiled.intensity_pair`)."""
        return intensity_pair(v.useful_flops if self.useful else v.flops, v.bytes)

    @cached_property
    def _lowers(self) -> tuple[list[float], float]:
        """The rows' lower bounds in order, and their sum (float, correctly rounded)."""
        lowers = [v.lower for v in self.numbers.values()]
        return lowers, math.fsum(lowers)

    def _per_op_float(self) -> float:
        return self._lowers[1]

    def bottleneck(self) -> str:
        """One sentence: what bounds the step and which row costs most."""
        numbers = self.numbers
        lowers, total = self._lowers
        worst = list(numbers)[lowers.index(max(lowers))]  # the first of equals, as max()
        share = numbers[worst].lower / total if total else math.nan
        ridge = _ridge(self.chip, self.dtype)[1]
        return (f"{self._total.bound}-bound: '{worst}' takes {share:.0%} of the per-op time "
                f"({fmt_si(numbers[worst].lower, 's')} of {fmt_si(total, 's')}), "
                f"{numbers[worst].bound}-bound at intensity "
                f"{fmt_num(self._intensity_pair(numbers[worst])[0])} against the "
                f"ridge {ridge} FLOP/B")

    # -- printing (symroof.models.table_render) -----------------------------------------
    def _body(self) -> tuple[list[list[str]], list[str]]:
        return _render.body(self)

    def _summary(self) -> list[str]:
        return _render.summary(self)

    def to_text(self) -> str:
        return _render.text(self)

    __str__ = to_text

    def to_markdown(self) -> str:
        return _render.markdown(self)

    _repr_markdown_ = to_markdown

    def to_latex(self) -> str:
        return _render.latex(self)

    def as_dict(self) -> dict[str, Any]:
        """Stable JSON-ready form: numbers as numbers, exact values as strings."""
        numbers = self.numbers
        compiled = vars(self).get("_json")
        if compiled is not None:  # the compiled table prints its rows and totals itself
            rows, total_row, total, lowers = compiled(tuple(numbers.values()))
            vars(self).setdefault("_total", total)
            vars(self).setdefault("_lowers", (lowers, math.fsum(lowers)))
        else:
            rows = json_rows(numbers.items(), self.useful)
            total = self._total
            total_row = json_rows([("", total)], self.useful)[""]
        out = {"title": self.title, "conventions": _conventions_dict(self.conventions),
               "chip": self.chip.name, "dtype": self.dtype,
               "flops": "useful" if self.useful else "executed",
               "ridge": _ridge(self.chip, self.dtype)[0], "rows": rows, "total": total_row,
               "per_op_sum_s": self._per_op_float(), "lower_s": total.lower,
               "upper_s": total.upper, "bottleneck": self.bottleneck(),
               "notes": list(self.notes), "warnings": list(self.warnings)}
        if self._whole_values is not None:
            out["whole_model_lower_s"] = self._whole_values.lower
        return out

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), indent=2)


_RIDGES: dict[tuple, tuple] = {}  # (id(chip), dtype) -> (chip, ridge as float and text)


def _ridge(chip: Any, dtype: str) -> tuple[float, str]:
    """The chip's ridge at ``dtype``: as a float and as a table prints it (found by the
    chip's identity: hashing a chip costs more than the lookup)."""
    hit = _RIDGES.get((id(chip), dtype))
    if hit is None or hit[0] is not chip:
        if len(_RIDGES) >= 64:
            _RIDGES.clear()
        ridge = chip.critical_intensity(dtype)
        hit = _RIDGES[id(chip), dtype] = (chip, (float(ridge), fmt_num(ridge)))
    return hit[1]


_RECORDS: dict[int, tuple] = {}  # id(conventions) -> (it, as_dict(), its keys with lists)


def _conventions_dict(conventions: Conventions) -> dict[str, Any]:
    """The conventions' JSON form (built once per record, a fresh copy each call: its
    values are strings, numbers and lists of them; the lists copied too)."""
    hit = _RECORDS.get(id(conventions))
    if hit is None or hit[0] is not conventions:
        if len(_RECORDS) >= 64:
            _RECORDS.clear()
        record = conventions.as_dict()
        hit = _RECORDS[id(conventions)] = (conventions, record, tuple(
            k for k, v in record.items() if type(v) is list))
    out = dict(hit[1])
    for k in hit[2]:
        out[k] = list(out[k])
    return out


@functools.cache
def _notes(attention: str, last_only: bool, flops: str) -> tuple[str, ...]:
    return (f"attention core: {attention}"
            + (" (FlashAttention-style: scores stay on chip, masked blocks skipped)"
               if attention == "fused" else " (score matrix written to and read from memory)")
            + f"; norms and elementwise ops unfused; {flops} FLOPs; lm_head on "
            + ("the last position" if last_only else "every position"),)


_BY_ID: dict[tuple, tuple] = {}  # (id(model), id(chip), ...) -> (model, chip, compiled)


def _compiled(model: Any, chip: Any, key: tuple) -> Any:
    """The compiled table for ``key``, found by identity first (hashing a model costs more
    than evaluating it); None where the model or chip is not all numbers."""
    ids = (id(model), id(chip), *key[:-1], id(key[-1]))  # the conventions by identity too
    hit = _BY_ID.get(ids)
    if hit is not None and hit[0] is model and hit[1] is chip and hit[3] is key[-1]:
        return hit[2]
    numeric = isinstance(model, Transformer) and all(
        getattr(model, k).is_number for k in ("D", "F", "L", "H", "G", "d_h", "V", "w_bytes",
                                              "act_bytes", "kv_bytes")) \
        and chip.critical_intensity(key[0]).is_number
    try:  # rows that are not polynomials in B, T, S (none today) take the exact path
        compiled = compiled_table(model, chip, *key) if numeric else None
    except ValueError:
        compiled = None
    if len(_BY_ID) >= 256:
        _BY_ID.clear()
    _BY_ID[ids] = (model, chip, compiled, key[-1])  # keeps the ids alive
    return compiled


def roofline_table(model: Transformer, chip: Any, step: Step | None = None, *,
                   batch: int | None = None, new_tokens: int | None = None, cached: int = 0,
                   dtype: str = "bf16", groups: bool = False, attention: str = "fused",
                   last_only: bool | None = None, title: str = "",
                   conventions: Any = None) -> RooflineTable:
    """The per-op roofline table of one forward step of ``model`` on ``chip``: ``step`` a
    :class:`~symroof.Step` (or ``batch=``, ``new_tokens=``, ``cached=``).

    Default assumptions (stated in the table's notes): useful FLOPs; a fused attention core
    (scores stay on chip) with unfused norms and elementwise ops; lm_head on the last
    position only (``last_only``; default: the conventions' ``lm_head_positions``).
    ``conventions``: a profile name or record (default "symroof"), printed with the table.
    Integer sizes on a model and chip with numbers evaluate the compiled table; anything
    else builds the exact rows first.

    >>> import symroof as sr
    >>> t = roofline_table(sr.model("llama-3.1-8b"), "h100", batch=64, new_tokens=1,
    ...                    cached=2047)
    >>> t.numbers["attn/core"].bound, t.numbers["attn/core"].kv_bytes   # 64 x 2048 x 2 L G d_h x 2
    ('memory', 17179869184)
    >>> t = roofline_table(sr.model("llama-3.1-8b"), sr.chip("h100"), batch=1, new_tokens=1,
    ...                    cached=2047, conventions="llm-viewer")
    >>> t.numbers["attn_norm"].flops == 32 * 7 * 4096, t.as_dict()["conventions"]["name"]
    (True, 'llm-viewer')
    """
    chip = as_chip(chip)
    cv = as_conventions(conventions)
    if step is not None:
        if batch is not None or new_tokens is not None or cached != 0:
            raise ValueError("give a Step or batch=, new_tokens=, cached=, not both")
        batch, new_tokens, cached = (int(x) if x.is_Integer else x for x in step)
    elif batch is None or new_tokens is None:
        raise ValueError("roofline_table() needs a Step (sr.Step(batch, context=...)) or "
                         "batch= and new_tokens=")
    if attention not in ATTENTION_MODES:
        raise ValueError(f"attention must be one of {ATTENTION_MODES}, got {attention!r}")
    if last_only is None:
        last_only = cv.last_only
    useful = cv.counted == "useful_flops"
    notes = _notes(attention, last_only, "useful" if useful else "executed")
    plain = (type(batch) is int and batch >= 1 and type(new_tokens) is int and new_tokens >= 1
             and type(cached) is int and cached >= 0)
    fn = _compiled(model, chip, (dtype, attention, last_only, groups, cv)) if plain else None
    key = (model, batch, new_tokens, cached, attention, last_only, groups)
    if fn is None:
        rows = model.ops(batch, new_tokens, cached, last_only=last_only, attention=attention,
                         conventions=cv)
        with using(cv):
            whole = model.whole(batch, new_tokens, cached, last_only=last_only)
        table = RooflineTable(rows=group(rows) if groups else rows, chip=chip, dtype=dtype,
                              useful=useful, title=title, whole=whole, notes=notes,
                              conventions=cv)
        vars(table)["_step"] = key  # for the warnings
        return table
    if model.window is not None:
        model._context(sp.Integer(cached + new_tokens))  # past a sliding window: refused
    rows, whole = fn.fn(batch, new_tokens, cached + new_tokens)
    table = RooflineTable._from_numbers(rows, whole, chip, dtype, title, notes, key, cv, useful)
    vars(table)["_totals"] = fn.total  # the totals summed by compiled code, when asked
    vars(table)["_json"] = fn.json  # and the JSON form printed by it
    return table
