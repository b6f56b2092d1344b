"""Per-op tables compiled once, then evaluated per configuration at plain-Python speed.

The symbolic rows of one forward step, ``Transformer.ops(B, T, S - T)`` (grouped or not),
and its whole-model cost are built once per (model, chip, dtype, attention, lm_head rows,
groups). Every field is a polynomial in B, T and S with the model's numbers in it; it is
cleared of denominators (a field that is no polynomial, such as a sliding window's
``Min``, is printed with exact Fractions instead), the fields share their subterms
(``sympy.cse``), and the lot is written out as one straight-line Python function of
(B, T, S) (the exact backend of :mod:`symroof.compiler`). Counts stay exact Python
integers; each term is an integer true division, which Python rounds correctly, so
t_math and t_mem equal ``float()`` of the exact SymPy values.
The time rule (:mod:`symroof.timerule`) is printed into the source as a decision tree
(``timerule.source``: each comparison asked once, the row's values chosen by it): lower,
the max of the rounded terms, is the rounded max; upper, their sum, is within an ulp of
the exact sum.
Prefill is S = T (nothing cached). :func:`row_values` gives the same ``OpValues`` of any
``Cost`` with numbers, the slow way.

Building the rows and writing the source takes a few tenths of a second, more than a command
line's whole answer, so the source is also kept on disk (:func:`symroof.cache.kept`), keyed
by the model's fields, the chip's peak and bandwidth, the options and symroof's own code.

>>> import symroof as sr
>>> table = compiled_table(sr.model("tiny"), sr.chip("h100"))
>>> rows, whole = table(2, 1, 8)              # B = 2, T = 1, S = 8 (7 cached)
>>> q = rows["attn/q_proj"]
>>> q.flops, q.weight_bytes, q.bound           # 2 L B T D H d_h; L D H d_h w_bytes
(32768, 16384, 'memory')
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any, NamedTuple

import sympy as sp

from ..cache import kept
from ..compiler import fields_source, load, wrap
from ..conventions import SYMROOF, Conventions, using
from ..cost import FIELDS, Cost
from ..hardware import Chip
from ..symbols import B, S, T
from ..timerule import TERMS, combine, present, source, terms
from .transformer import Transformer, group

__all__ = ["OpValues", "CompiledTable", "compiled_table", "row_values", "exact_number",
           "exact_terms", "rates", "JSON_ROW", "json_rows", "intensity_pair"]

_FIELDS = ("flops", "useful_flops", "weight_bytes", "act_bytes", "kv_bytes", "act_store_bytes",
           "kv_store_bytes")


class OpValues(NamedTuple):
    """One row of a numeric table: exact counts, float seconds (useful FLOPs over the peak
    unless the table counts executed ones), the lower and upper bounds and what bounds it
    (the time rule, :mod:`symroof.timerule`, on the rounded terms); last, the parts of the
    activation and KV bytes the row writes (``Cost.act_store_bytes``, ``kv_store_bytes``)."""

    flops: Any
    useful_flops: Any
    weight_bytes: Any
    act_bytes: Any
    kv_bytes: Any
    net_bytes: Any
    t_math: float
    t_mem: float
    t_net: float
    lower: float
    upper: float
    bound: str
    act_store_bytes: Any = 0
    kv_store_bytes: Any = 0

    @property
    def bytes(self) -> Any:
        """Memory bytes: weights + activations + KV cache."""
        return self.weight_bytes + self.act_bytes + self.kv_bytes

    @property
    def act_load_bytes(self) -> Any:
        """Activation bytes read (``act_bytes`` less those written)."""
        return self.act_bytes - self.act_store_bytes

    @property
    def kv_load_bytes(self) -> Any:
        """KV cache bytes read (``kv_bytes`` less those written)."""
        return self.kv_bytes - self.kv_store_bytes


def exact_number(x: Any) -> Any:
    """A SymPy number as an exact Python one: int, Fraction (float only if irrational)."""
    x = sp.sympify(x)
    if x.is_Integer:
        return int(x)
    if x.is_Rational:
        return Fraction(int(x.p), int(x.q))
    return float(x)


_RATES: dict[tuple, tuple] = {}  # (id(chip), dtype) -> (chip, rates)


def rates(chip: Any, dtype: str) -> tuple[Any, Any, Any, None]:
    """(C, W, W_net, -) of ``chip`` at ``dtype`` as exact Python numbers (no host link: a
    table's rows carry no host bytes)."""
    hit = _RATES.get((id(chip), dtype))
    if hit is None or hit[0] is not chip:
        if len(_RATES) >= 64:
            _RATES.clear()
        hit = _RATES[id(chip), dtype] = (chip, (
            exact_number(chip.peak(dtype)), exact_number(chip.hbm_bw),
            exact_number(chip.link_bw), None))
    return hit[1]


def exact_terms(f: Any, chip: Any, dtype: str, useful: bool, net_time: Any = None,
                exact: bool = True) -> dict[str, Any]:
    """The time rule's terms of one row's numbers (``f``: its fields, or its ``OpValues``
    with the row's collective seconds as ``net_time``): exact, or with ``exact=False`` as
    Python divides them (an int over an int is a correctly rounded float)."""
    if isinstance(f, dict):
        f, net_time = OpValues(*(f[n] for n in FIELDS[:6]), 0, 0, 0, 0, 0, ""), f["net_time"]
    counted = f.useful_flops if useful else f.flops
    nbytes, net_bytes = f.bytes, f.net_bytes
    if exact:
        counted, nbytes, net_bytes = Fraction(counted), Fraction(nbytes), Fraction(net_bytes)
    return terms(counted, nbytes, net_time or 0, net_bytes, 0, rates(chip, dtype))


def row_values(cost: Cost | dict[str, Any], chip: Any, dtype: str, useful: bool) -> OpValues:
    """The numbers of one row (a Cost, or its fields as exact numbers): exact counts and
    float times, each term rounded once, then the time rule on them."""
    f = cost if isinstance(cost, dict) else {n: exact_number(getattr(cost, n)) for n in FIELDS}
    t = present({k: float(v) for k, v in exact_terms(f, chip, dtype, useful,
                                                      exact=False).items()})
    lower, upper, which = combine(list(t.values()))
    return OpValues(f["flops"], f["useful_flops"], f["weight_bytes"], f["act_bytes"],
                    f["kv_bytes"], f["net_bytes"], t["compute"], t["memory"],
                    t.get("network", 0.0), lower, upper, list(t)[which],
                    f.get("act_store_bytes", 0), f.get("kv_store_bytes", 0))


class CompiledTable(NamedTuple):
    """``fn(B, T, S) -> (rows, whole)``: ``{name: OpValues}`` in ``names`` order, and the
    whole's ``OpValues``; ``total(tuple of the rows' OpValues)``: the totals' (summed
    counts, their roofline); ``json(the same tuple)``: the rows' JSON (:data:`JSON_ROW`),
    the totals' JSON and ``OpValues``, and the rows' lower bounds in order."""

    names: tuple[str, ...]
    fn: Callable[[int, int, int], tuple[dict[str, OpValues], OpValues]]
    source: str
    total: Callable[[tuple[OpValues, ...]], OpValues]
    json: Callable[[tuple[OpValues, ...]], tuple[dict, dict, OpValues, list[float]]]

    def __call__(self, batch: int, new_tokens: int, context: int) -> Any:
        return self.fn(batch, new_tokens, context)


def _over(var: str, value: sp.Expr) -> str:
    """Source for ``var / value`` (an exact positive number), rounded once."""
    if value.is_Integer:
        return f"{var} / {int(value)}"
    p, q = sp.fraction(value)
    return f"{var} * {int(q)} / {int(p)}"


def _row_source(i: str, fields: list[str], dens: list[int], peak: sp.Expr,
                hbm_bw: sp.Expr, counted: str = "u") -> list[str]:
    """Lines that compute row ``i``'s OpValues ``r{i}`` from its field expressions: the
    terms, then the time rule printed by its source backend."""
    vals = [wrap(src, den) for src, den in zip(fields, dens)]
    to = "float" if any(d != 1 for d in dens) else ""
    head = f"f{i}, u{i}, w{i}, a{i}, k{i}, 0, m{i}, t{i}, 0.0"
    rule = source([f"m{i}", f"t{i}"],
                  lambda lo, up, k: f"({head}, {lo}, {up}, {TERMS[k]!r}, s{i}, q{i})")
    return [f"    f{i}, u{i}, w{i}, a{i}, k{i}, s{i}, q{i} = " + ", ".join(vals),
            f"    m{i} = {to}({_over(f'{counted}{i}', peak)}); "
            f"t{i} = {to}({_over(f'(w{i} + a{i} + k{i})', hbm_bw)})",
            f"    r{i} = _new(_V, {rule})"]


#: a row's JSON form (``RooflineTable.as_dict``), in print order: key -> its value, as source
#: over the row's values as the generated source names them, ``{k}`` the row's suffix
#: (counts f, u, w, a, k; the bytes written s (activations) and q (KV cache); terms m, t;
#: bounds lo, up; bound b; intensity i and its exact text x). The one place a row's JSON
#: is made: the compiled tables and the tables built from rows both print it.
JSON_ROW = (("flops", "f{k}"), ("useful_flops", "u{k}"), ("weight_bytes", "w{k}"),
            ("kv_bytes", "k{k}"), ("act_bytes", "a{k}"), ("act_load_bytes", "a{k} - s{k}"),
            ("act_store_bytes", "s{k}"), ("kv_load_bytes", "k{k} - q{k}"),
            ("kv_store_bytes", "q{k}"), ("intensity", "i{k}"), ("intensity_exact", "x{k}"),
            ("bound", "b{k}"), ("t_math_s", "m{k}"), ("t_mem_s", "t{k}"),
            ("t_lower_s", "lo{k}"), ("t_upper_s", "up{k}"))


def intensity_pair(counted: Any, nbytes: Any) -> tuple[float, str]:
    """(float, exact text) of counted FLOPs over bytes: inf or nan where there are no bytes.

    >>> intensity_pair(6, 4), intensity_pair(Fraction(3, 2), 3), intensity_pair(0, 0)
    ((1.5, '3/2'), (0.5, '1/2'), (nan, 'nan'))
    """
    if nbytes == 0:
        return (math.inf, "oo") if counted != 0 else (math.nan, "nan")
    if type(counted) is int and type(nbytes) is int:
        g = math.gcd(counted, nbytes)
        p, q = counted // g, nbytes // g
        return counted / nbytes, str(p) if q == 1 else f"{p}/{q}"
    x = Fraction(counted) / nbytes
    return float(x), str(x)


def _json_lines(k: str, row: str, counted: str, pad: str = "    ", ints: bool = False
                ) -> list[str]:
    """Lines that make row ``k``'s JSON dict ``j{k}`` (:data:`JSON_ROW`) from its OpValues
    ``row``; ``counted`` is the source of the FLOPs its intensity counts; ``ints``: its
    counts are known to be ints (a compiled row with no denominator)."""
    n = f"n{k}"
    test = f"{n}" if ints else f"type(c{k}) is int and type({n}) is int and {n}"
    lines = [f"{pad}f{k}, u{k}, w{k}, a{k}, k{k}, _, m{k}, t{k}, _, lo{k}, up{k}, b{k}, s{k}, "
             f"q{k} = {row}",
             f"{pad}c{k} = {counted}; {n} = w{k} + a{k} + k{k}",
             f"{pad}if {test}:  # ints: the common case",
             f"{pad}    g = _gcd(c{k}, {n}); i{k} = c{k} / {n}",
             f"{pad}    x{k} = str(c{k} // g) if g == {n} else f'{{c{k} // g}}/{{{n} // g}}'",
             f"{pad}else:",
             f"{pad}    i{k}, x{k} = _pair(c{k}, {n})",
             f"{pad}    f{k}, u{k}, w{k}, a{k}, k{k} = int(f{k}), int(u{k}), int(w{k}), "
             f"int(a{k}), int(k{k})"]
    if not ints:  # exact counts print as integers, as the others
        lines += [f"{pad}if type(s{k}) is not int or type(q{k}) is not int:",
                  f"{pad}    s{k}, q{k} = int(s{k}), int(q{k})"]
    return lines + [f"{pad}j{k} = {{" + ", ".join(f"{key!r}: {value.format(k=k)}"
                                                  for key, value in JSON_ROW) + "}"]


#: the names the JSON source reads
_JSON_NAMES = {"_gcd": math.gcd, "_pair": intensity_pair}

#: ``json_rows(items, useful) -> {name: row's JSON}`` of (name, OpValues) pairs: a table
#: built from rows prints its rows with it (a compiled table runs the same lines unrolled)
json_rows = load("\n".join(["def json_rows(items, useful):", "    out = {}",
                             "    for name, row in items:",
                             *_json_lines("", "row", "u if useful else f", " " * 8),
                             "        out[name] = j", "    return out"]),
                 "json_rows", "<symroof table rows as JSON>", _JSON_NAMES)


@functools.lru_cache(maxsize=64)
def _fields_source(model: Transformer, attention: str, last_only: bool, groups: bool,
                   conventions: Conventions) -> tuple[tuple[str, ...], list[str],
                                                      list[list[str]], list[list[int]]]:
    """What a compiled table prints that no chip changes (cached per model, so the chips of
    one model share it): the row names, the shared subterms' lines, and each cost's field
    sources and denominators."""
    rows = model.ops(B, T, S - T, last_only=last_only, attention=attention,
                     conventions=conventions)
    rows = group(rows) if groups else rows
    with using(conventions):
        whole = model.whole(B, T, S - T, last_only=last_only)
    costs = [*rows.values(), whole]
    names = [*rows, "whole"]
    exprs, where = [], []
    for name, cost in zip(names, costs):
        if cost.net_bytes != 0 or cost.net_time != 0:
            raise ValueError(f"row {name!r} sends bytes over the network: not compiled")
        exprs += [getattr(cost, field) for field in _FIELDS]
        where += [f"{name}.{field}" for field in _FIELDS]
    lines, srcs, dens = fields_source(exprs, (B, T, S), where)
    n = len(_FIELDS)
    fields = [srcs[n * k:n * k + n] for k in range(len(costs))]
    return tuple(names), lines, fields, [dens[n * k:n * k + n] for k in range(len(costs))]


@functools.lru_cache(maxsize=64)
def compiled_table(model: Transformer, chip: Chip, dtype: str = "bf16",
                   attention: str = "fused", last_only: bool = True,
                   groups: bool = False, conventions: Conventions = SYMROOF) -> CompiledTable:
    """Compile the per-op table of ``model`` on ``chip`` (numbers in both) for any (B, T, S).

    Cached: the second call with the same arguments returns the same function, and the
    generated source is kept on disk between processes (:mod:`symroof.cache`). Useful FLOPs
    set ``t_math`` (as in :func:`symroof.roofline_table`) unless the ``conventions`` count
    executed ones; ``flops`` keeps executed ones.
    """
    peak, hbm_bw = chip.peak(dtype), chip.hbm_bw
    if not (peak.is_number and hbm_bw.is_number):
        raise ValueError(f"compiled tables need a chip with numbers; {chip.name} has peak "
                         f"{peak} and HBM bandwidth {hbm_bw}")
    names, source = kept("table", (model, str(peak), str(hbm_bw), dtype, attention, last_only,
                                   groups, conventions),
                         lambda: _source(model, peak, hbm_bw, attention, last_only, groups,
                                         conventions))
    fn, total, json = load(source, ("_table", "_total", "_json"),
                           f"<symroof table: {model.name} on {chip.name}>",
                           {"_V": OpValues, "_new": tuple.__new__, **_JSON_NAMES})
    return CompiledTable(tuple(names), fn, source, total, json)


def _source(model: Transformer, peak: sp.Expr, hbm_bw: sp.Expr, attention: str,
            last_only: bool, groups: bool, conventions: Conventions
            ) -> tuple[list[str], str]:
    """The row names and the Python source of the table's function (see the module)."""
    names, shared, fields, dens = _fields_source(model, attention, last_only, groups,
                                                 conventions)
    counted = "u" if conventions.counted == "useful_flops" else "f"
    lines = ["def _table(B, T, S):", *shared]
    last = len(names) - 1
    for k in range(len(names)):
        lines += _row_source(str(k), fields[k], dens[k], peak, hbm_bw,
                             counted if k < last else "u")
    # the totals: each count summed over the rows (exact), then its terms and the rule
    rows = ", ".join(f"{name!r}: r{k}" for k, name in enumerate(names[:-1]))
    lines.append(f"    return {{{rows}}}, r{last}")  # a dict display: no dict(zip()) per call
    # the totals, asked for apart (JSON, text): each count summed over the rows, exactly,
    # then its terms and the rule
    lines += ["def _total(rows):"]
    lines += [f"    (f{k}, u{k}, w{k}, a{k}, k{k}), (s{k}, q{k}) = rows[{k}][:5], rows[{k}][12:]"
              for k in range(last)]
    sums = [" + ".join(f"{v}{k}" for k in range(last)) for v in "fuwaksq"]
    exact = all(d == 1 for k in range(last) for d in dens[k])
    lines += _row_source("z", sums, [1 if exact else 0] * len(_FIELDS), peak, hbm_bw, counted)
    lines.append("    return rz")
    # the JSON form (as_dict): every row's dict, the totals' (and their values), the lower
    # bounds in order; the rows unrolled, each made by the lines json_rows loops over
    lines += ["def _json(rows):"]
    for k in range(last):
        lines += _json_lines(str(k), f"rows[{k}]", f"{counted}{k}",
                             ints=all(d == 1 for d in dens[k]))
    lines += ["    rz = _total(rows)", *_json_lines("z", "rz", f"{counted}z", ints=exact)]
    lines.append(f"    return {{{', '.join(f'{n!r}: j{k}' for k, n in enumerate(names[:-1]))}}}, "
                 f"jz, rz, [{', '.join(f'lo{k}' for k in range(last))}]")
    return list(names[:-1]), "\n".join(lines)
