"""Vectorised evaluation: any symbolic quantity over NumPy arrays of its free symbols.

:func:`evaluate` takes an expression, a ``Cost``, a ``TimeBound``, a ``StepTime`` or a
``dict`` of them (a per-op table), gathers every expression inside it, compiles them once
into one NumPy function of the free symbols (the NumPy backend of :mod:`symroof.compiler`,
common subexpressions shared) and calls it on the given values, broadcast together.
Compiled functions are cached on the expressions and the argument order, so a second
call with new values compiles nothing. Values are evaluated in float64 (no integer
overflow; exact integers beyond 2**53 round). The decode grid over (batch, context) is
:func:`symroof.models.sweep.sweep_step_time`.

>>> import numpy as np
>>> import symroof as sr
>>> from symroof.symbols import B, D, F
>>> mm = sr.matmul(B, D, F)
>>> evaluate(mm.flops, B=np.array([1, 2]), D=4, F=8)
array([ 64., 128.])
>>> out = evaluate(mm, B=np.arange(1, 4)[:, None], D=np.array([4, 8]), F=8)
>>> out["intensity"].shape
(3, 2)
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np
import sympy as sp

from .analysis import TimeBound
from .compiler import vectorised
from .cost import FIELDS, Cost
from .timerule import Ops, combine

__all__ = ["evaluate", "free_symbols", "cache_info", "NUMPY"]

_TIME_FIELDS = ("t_math", "t_mem", "t_net", "t_host")
#: the time rule's NumPy backend (:mod:`symroof.timerule`): elementwise over configurations
NUMPY = Ops(np.maximum, np.add, np.greater, np.where)
_Builder = Callable[[Iterator[Any]], Any]


# -- flattening: every quantity is a list of expressions and a function that rebuilds it ----
def _flatten(obj: Any, out: list[sp.Expr]) -> _Builder:
    """Append the expressions of ``obj`` to ``out``; return how to rebuild its result."""
    if isinstance(obj, Cost):
        for name in FIELDS:
            out.append(getattr(obj, name))
        return _build_cost
    if isinstance(obj, TimeBound):
        out.extend(getattr(obj, name) for name in _TIME_FIELDS)
        return _build_time
    if hasattr(obj, "whole") and hasattr(obj, "groups"):  # a StepTime (models/ sits above)
        whole = _flatten(obj.whole, out)
        groups = _flatten(obj.groups, out)
        return functools.partial(_build_step, whole, groups)
    if isinstance(obj, Mapping):
        parts = [(key, _flatten(value, out)) for key, value in obj.items()]
        return lambda it: {key: build(it) for key, build in parts}
    try:
        expr = sp.sympify(obj, strict=True)
    except (sp.SympifyError, TypeError):
        expr = None
    if not isinstance(expr, sp.Expr):
        raise TypeError(f"evaluate() takes an expression, Cost, TimeBound, StepTime or a dict "
                        f"of them, got {type(obj).__name__}: {obj!r}")
    out.append(expr)
    return next


def _build_cost(it: Iterator[Any]) -> dict[str, Any]:
    row = {name: next(it) for name in FIELDS}
    row["bytes"] = row["weight_bytes"] + row["act_bytes"] + row["kv_bytes"]
    with np.errstate(divide="ignore", invalid="ignore"):  # 0 bytes: inf (or nan), as SymPy's oo
        row["intensity"] = np.true_divide(row["flops"], row["bytes"])
    return row


def _build_time(it: Iterator[Any]) -> dict[str, Any]:
    row = {name: next(it) for name in _TIME_FIELDS}
    terms = [row["t_math"], row["t_mem"]] + [row[k] for k in ("t_net", "t_host")
                                              if not _is_zero(row[k])]
    row["lower"], row["upper"], _ = combine(terms, NUMPY, index=False)
    return row


def _build_step(whole: _Builder, groups: _Builder, it: Iterator[Any]) -> dict[str, Any]:
    w, g = whole(it), groups(it)
    per_op = functools.reduce(np.add, [row["lower"] for row in g.values()])
    return {"whole": w, "groups": g, "per_op_sum": per_op, "ratio": per_op / w["lower"]}


def _is_zero(x: Any) -> bool:
    return np.ndim(x) == 0 and x == 0


# -- compiling, cached (symroof.compiler) --------------------------------------------------
def cache_info() -> Any:
    """Hits, misses and size of the cache of compiled functions (``functools`` named tuple).

    >>> from symroof.symbols import N
    >>> before = cache_info().misses
    >>> _ = evaluate(2 * N + 1, N=3); _ = evaluate(2 * N + 1, N=4)
    >>> cache_info().misses - before       # compiled once, reused for the second call
    1
    """
    return vectorised.cache_info()


def free_symbols(obj: Any) -> list[sp.Symbol]:
    """The free symbols of a quantity, sorted by name (the order of the compiled arguments).

    >>> import symroof as sr
    >>> from symroof.symbols import B, D, F
    >>> free_symbols(sr.matmul(B, D, F))
    [B, D, F]
    """
    exprs: list[sp.Expr] = []
    _flatten(obj, exprs)
    return _sorted_symbols(exprs)


def _sorted_symbols(exprs: list[sp.Expr]) -> list[sp.Symbol]:
    found = set().union(*(e.free_symbols for e in exprs)) if exprs else set()
    return sorted(found, key=lambda s: (s.name, sp.srepr(s)))


# -- values --------------------------------------------------------------------------------
def _bind(symbols: list[sp.Symbol], values: Mapping[Any, Any]) -> list[np.ndarray]:
    """The value array of each symbol, in order; unknown or missing names fail loudly."""
    known = ", ".join(s.name for s in symbols) or "none (the quantity is a number)"
    by_name = {s.name: s for s in symbols}
    bound: dict[sp.Symbol, np.ndarray] = {}
    for key, value in values.items():
        if isinstance(key, str):
            sym = by_name.get(key)
        elif isinstance(key, sp.Symbol):
            sym = key if key in symbols else None
        else:
            raise ValueError(f"value keys must be symbols or their names, got {key!r}")
        if sym is None:
            name = key if isinstance(key, str) else key.name
            hint = (" (a symbol of that name exists with other assumptions: use the one "
                    "from symroof.symbols)" if name in by_name else "")
            raise ValueError(f"unknown symbol {name!r}{hint}; free symbols: {known}")
        if sym in bound:
            raise ValueError(f"symbol {sym.name!r} is given twice")
        try:
            bound[sym] = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"value of {sym.name} must be a number or a numeric array, got "
                             f"{value!r}") from None
        # Every symbol symroof declares is positive (dimensions, peaks, bandwidths): a value
        # <= 0 would give a number the formulas never meant.
        if sym.is_positive and not np.all(bound[sym] > 0):
            bad = bound[sym][~(bound[sym] > 0)].ravel()[0]
            raise ValueError(f"{sym.name} must be positive, got {bad:g}")
    missing = [s.name for s in symbols if s not in bound]
    if missing:
        raise ValueError(f"missing values for {', '.join(missing)}; free symbols: {known}")
    return [bound[s] for s in symbols]


def evaluate(obj: Any, values: Mapping[Any, Any] | None = None, /, **kwargs: Any) -> Any:
    """Evaluate ``obj`` at the given values of its free symbols, broadcast together.

    ``obj``: a SymPy expression (returns an array), a ``Cost`` (a dict of its fields plus
    ``bytes`` and ``intensity``), a ``TimeBound`` (``t_math``, ``t_mem``, ``t_net``,
    ``lower``, ``upper``), a ``StepTime`` (``whole``, ``groups``, ``per_op_sum``, ``ratio``)
    or a ``dict`` of any of these (a per-op table). Values map symbols or their names to
    scalars or arrays; every result has the broadcast shape (a float64 scalar if all values
    are scalars).

    >>> import symroof as sr
    >>> from symroof.symbols import B, D, F
    >>> t = evaluate(sr.time(sr.matmul(B, D, F), sr.chip("h100")), B=[1, 512], D=8192, F=8192)
    >>> [round(float(x) * 1e6, 1) for x in t["lower"]]
    [40.1, 69.5]
    >>> evaluate(B * D, B=2)
    Traceback (most recent call last):
    ...
    ValueError: missing values for D; free symbols: B, D
    >>> evaluate(B * D, B=2, D=3, X=1)
    Traceback (most recent call last):
    ...
    ValueError: unknown symbol 'X'; free symbols: B, D
    """
    values = {**(values or {}), **kwargs}
    exprs: list[sp.Expr] = []
    build = _flatten(obj, exprs)
    symbols = _sorted_symbols(exprs)
    arrays = _bind(symbols, values)
    try:
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
    except ValueError:
        shapes = ", ".join(f"{s.name}: {a.shape}" for s, a in zip(symbols, arrays, strict=True))
        raise ValueError(f"values do not broadcast together ({shapes})") from None
    fn = vectorised(tuple(exprs), tuple(symbols))
    with np.errstate(divide="ignore", invalid="ignore"):
        return _finish(build(iter(fn(*arrays))), shape)


def _finish(tree: Any, shape: tuple[int, ...]) -> Any:
    """Every leaf as a float64 array of ``shape`` (a float64 scalar when shape is ())."""
    if isinstance(tree, dict):
        return {key: _finish(value, shape) for key, value in tree.items()}
    arr = np.asarray(tree, dtype=np.float64)
    if not shape:
        return arr[()]
    if arr.shape == shape:
        return arr
    if arr.ndim == 0:  # a constant leaf (no network term: 0): filled, zeros left to calloc
        return np.zeros(shape) if arr == 0 else np.full(shape, arr)
    return np.array(np.broadcast_to(arr, shape))
