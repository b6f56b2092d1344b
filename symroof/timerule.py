"""The time rule, written once: every time bound in symroof is a view of :func:`combine`.

A cost on a chip has up to four terms, each a quantity over a rate (:func:`terms`):
t_math = counted FLOPs / C, t_mem = memory bytes / W, t_net = a collective's own seconds
(or network bytes / W_net), t_host = host bytes / W_pcie. Of those terms,

- **lower** = their max (perfect overlap),
- **upper** = their sum (no overlap at all),
- **bound** = the name of the largest (the first of equals, in :data:`TERMS` order).

:func:`combine` applies that rule to a list of terms through a backend (:class:`Ops`):
``EXACT`` (Python ints, Fractions, SymPy numbers and floats: ``max``, ``+``, ``>``),
``SYMPY`` (symbolic terms: ``Max``), ``SOURCE`` (Python source text) and, in
:mod:`symroof.evaluate`, ``NUMPY`` (arrays of configurations: sweeps, serving curves, the
strategy search); :func:`source` follows the rule down each answer of its comparisons and
prints it as one conditional expression, which the compiled per-configuration tables run
(:mod:`symroof.models.compiled`). ``sr.time`` and ``TimeBound``, ``RooflineTable``
(numbers, totals and JSON), ``sr.evaluate``, ``sweep_step_time`` and ``strategy_search``
read it from here.

>>> combine([3, 5])                      # (lower, upper, index of the largest)
(5, 8, 1)
>>> combine(["m", "t"], SOURCE)[0]
'(t if t > m else m)'
>>> print(source(["m", "t"], lambda lower, upper, i: f"({lower}, {upper}, {TERMS[i]!r})"))
((t, m + t, 'memory') if t > m else (m, m + t, 'compute'))
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import sympy as sp

from .symbols import B as _B
from .symbols import C as _C

__all__ = ["TERMS", "Ops", "EXACT", "SYMPY", "SOURCE", "source", "combine", "terms",
           "present"]

#: the terms' names, in the order that breaks ties
TERMS = ("compute", "memory", "network", "host")


class Ops(NamedTuple):
    """A backend of the rule: the max of two terms, their sum, ``a > b``, and ``where(c, a,
    b)`` (a if c else b)."""

    max: Callable[[Any, Any], Any]
    add: Callable[[Any, Any], Any]
    gt: Callable[[Any, Any], Any]
    where: Callable[[Any, Any, Any], Any]


def _pick(c: Any, a: Any, b: Any) -> Any:
    return a if c else b


EXACT = Ops(max, operator.add, operator.gt, _pick)

#: the assumptions of the symbol table's symbols: a dimension's, and a chip figure's
_POSITIVE_INTEGER, _POSITIVE = _B.assumptions0, _C.assumptions0


def _samples(symbols: Sequence[sp.Symbol]) -> list[dict[sp.Symbol, sp.Rational]]:
    """Points of the symbols' domain: every symbol at 1, every one large (2^40), then each
    in turn large and, where it is no integer, small (2^-40); none at all where a symbol's
    assumptions are not those of symbols.py (positive, or a positive integer): its domain
    is not known here."""
    if any(s.assumptions0 not in (_POSITIVE, _POSITIVE_INTEGER) for s in symbols):
        return []
    one = dict.fromkeys(symbols, sp.Integer(1))
    points = [one, dict.fromkeys(symbols, sp.Integer(2**40))]
    for s in symbols:
        points.append({**one, s: sp.Integer(2**40)})
        if not s.is_integer:
            points.append({**one, s: sp.Rational(1, 2**40)})
    return points


def _unordered(a: sp.Expr, b: sp.Expr) -> bool:
    """Whether two points of the symbols' domain order ``a`` and ``b`` both ways: then no
    assumption orders them, and ``sp.Max`` keeps both (False: not shown, ask SymPy)."""
    signs = set()
    for point in _samples(sorted((a - b).free_symbols, key=str)):
        d = (a - b).xreplace(point)
        if not (d.is_Rational or d.is_Float) or d.is_finite is not True:
            return False
        signs.add(1 if d > 0 else -1 if d < 0 else 0)
        if {1, -1} <= signs:
            return True
    return False


def _sign(d: sp.Expr) -> int:
    """1 (or -1) where every term of ``d``, expanded, is a positive (negative) number times
    powers of positive symbols, so that ``d`` is positive (negative) wherever the symbols
    are; 0 where that does not show."""
    signs = set()
    for term in sp.Add.make_args(sp.expand(d)):
        c, rest = term.as_coeff_Mul()
        if not (c.is_Rational and c != 0) or (rest != 1 and not all(
                base.is_Symbol and base.is_positive and p.is_Rational
                for base, p in rest.as_powers_dict().items())):
            return 0
        signs.add(1 if c > 0 else -1)
    return signs.pop() if len(signs) == 1 else 0


def _max(a: Any, b: Any) -> sp.Expr:
    """``sp.Max(a, b)`` without SymPy's search for an order where the order is known or
    cannot exist. The arguments (a Max's own flattened, numbers included) lose each one
    that another exceeds wherever the symbols are (the difference expands to positive
    terms, :func:`_sign`); the rest must be pairwise unordered (two points of the domain
    order each pair both ways, :func:`_unordered`), and are kept unevaluated, as SymPy
    keeps them. Anything else (a Min, a pair neither shown ordered nor unordered) goes to
    ``sp.Max``. The value is always SymPy's; so is the expression, except where SymPy cannot
    see an order that expanding shows (it keeps both terms; this keeps the larger).

    >>> from symroof.symbols import B, C, W
    >>> _max(2 * B / C, 3 * B / W) == sp.Max(2 * B / C, 3 * B / W)
    True
    >>> _max(2 * B / C, 3 * B / C + 1 / W)             # ordered: the larger alone
    3*B/C + 1/W
    >>> _max(sp.Max(2 * B / C, 3 * B / W), 0)          # a zero term (no network) drops
    Max(2*B/C, 3*B/W)
    """
    a, b = sp.sympify(a), sp.sympify(b)
    if a.is_Rational and b.is_Rational:
        return max(a, b)
    args = list(dict.fromkeys([*(a.args if isinstance(a, sp.Max) else (a,)),
                               *(b.args if isinstance(b, sp.Max) else (b,))]))
    if any(not isinstance(x, sp.Expr) or isinstance(x, (sp.Min, sp.Max)) for x in args):
        return sp.Max(a, b)
    keep = [x for x in args if not any(y is not x and _sign(y - x) > 0 for y in args)]
    if len(keep) == 1:
        return keep[0]
    if all(not x.is_number for x in keep) and all(
            _unordered(x, y) for i, x in enumerate(keep) for y in keep[i + 1:]):
        return sp.Max(*keep, evaluate=False)
    return sp.Max(a, b)


#: symbolic terms: Max and Add; which term is largest is left undecided (None)
SYMPY = Ops(_max, operator.add, lambda a, b: None, lambda c, a, b: None)


def _where_source(c: str, a: Any, b: Any) -> str:
    return c if (a, b) == (1, 0) else f"({a} if {c} else {b})"  # a bool indexes as 1 or 0


class _Ask(Exception):
    """A comparison the path being followed has not decided yet."""


def _path(values: Sequence[str], path: tuple[bool, ...]) -> tuple[list[str], Any]:
    """The rule over term names along ``path`` (the outcomes of its comparisons, in the
    order it asks them): the comparisons asked, and (lower, upper, index) there, or None
    where the path ends before the rule does."""
    asked: dict[str, bool] = {}

    def gt(a: Any, b: Any) -> bool:
        text = f"{a} > {b}"
        if text not in asked:
            if len(asked) == len(path):
                asked[text] = False  # named, not decided
                raise _Ask
            asked[text] = path[len(asked)]
        return asked[text]

    ops = Ops(lambda a, b: b if gt(b, a) else a, lambda a, b: f"{a} + {b}", gt, _pick)
    try:
        result = combine(values, ops)
    except _Ask:
        result = None
    return list(asked), result


def source(values: Sequence[str], leaf: Callable[[Any, Any, Any], str],
           path: tuple[bool, ...] = ()) -> str:
    """The rule over term names (Python source) as one conditional expression: each
    comparison asked once, ``leaf(lower, upper, index)`` printed where the answers lead.

    >>> print(source(["m", "t"], lambda lo, up, i: f"({lo}, {up}, {i})"))
    ((t, m + t, 1) if t > m else (m, m + t, 0))
    """
    asked, result = _path(values, path)
    if result is None:  # the next comparison decides: one branch for each answer
        yes, no = source(values, leaf, path + (True,)), source(values, leaf, path + (False,))
        return f"({yes} if {asked[len(path)]} else {no})"
    return leaf(*result)


#: Python source text over the terms' names (every comparison written where it is used)
SOURCE = Ops(lambda a, b: f"({b} if {b} > {a} else {a})", lambda a, b: f"{a} + {b}",
             lambda a, b: f"{a} > {b}", _where_source)


def combine(values: Sequence[Any], ops: Ops = EXACT, index: bool = True
            ) -> tuple[Any, Any, Any]:
    """(lower, upper, index of the largest term) of ``values`` through backend ``ops``: the
    one time rule (module docstring). ``index=False`` skips the index (None).

    >>> from fractions import Fraction
    >>> combine([Fraction(1, 3), Fraction(1, 3), 0])   # ties go to the first term
    (Fraction(1, 3), Fraction(2, 3), 0)
    """
    lower = upper = values[0]
    which: Any = 0 if index else None
    for i, t in enumerate(values[1:], 1):
        if index:
            which = ops.where(ops.gt(t, lower), i, which)
        lower = ops.max(lower, t)
        upper = ops.add(upper, t)
    return lower, upper, which


def present(values: dict[str, Any]) -> dict[str, Any]:
    """The terms that can matter: compute and memory always, the others where not zero (a
    zero term changes no lower, upper or bound).

    >>> list(present({"compute": 1, "memory": 2, "network": 0, "host": 0}))
    ['compute', 'memory']
    """
    return {k: v for k, v in values.items() if k in TERMS[:2] or not _zero(v)}


def _zero(x: Any) -> bool:
    return isinstance(x, (int, float, sp.Basic)) and x == 0


def terms(flops: Any, nbytes: Any, net_time: Any, net_bytes: Any, host_bytes: Any,
          rates: tuple[Any, Any, Any, Any]) -> dict[str, Any]:
    """The four terms: quantities over ``rates`` = (C, W, W_net, W_pcie), divided as the
    inputs divide (exact for SymPy numbers and Fractions; Python ints give floats); a
    collective's own seconds (``net_time``) stand for its bytes over the link.

    >>> from fractions import Fraction
    >>> terms(Fraction(10), Fraction(3), 0, 6, 0, (5, 2, 3, None))
    {'compute': Fraction(2, 1), 'memory': Fraction(3, 2), 'network': 2.0, 'host': 0}
    >>> terms(10, 4, 0, 6, 0, (5, 2, 3, None))["compute"]     # ints: a float
    2.0
    """
    C, W, link, pcie = rates
    if net_time != 0:
        t_net = net_time
    else:
        t_net = net_bytes / link if net_bytes != 0 else 0
    t_host = host_bytes / pcie if host_bytes != 0 else 0
    return {"compute": flops / C, "memory": nbytes / W, "network": t_net, "host": t_host}
