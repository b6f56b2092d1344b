"""One compiler of symbolic quantities, two backends: exact Python source, and NumPy.

Both take expressions and the symbols they are functions of, and return one function of
those symbols that computes every expression at once (common subexpressions shared,
``sympy.cse``), cached on the expressions and the argument order:

- :func:`exact`: straight-line Python source, run with ``exec``. A polynomial is cleared of
  its denominators and divided once at the end (an int where the division is exact, else a
  ``Fraction``); a field that is no polynomial (a sliding window's ``Min``, a block count's
  ``floor``) is printed with exact Fractions and ``min``/``max``. Integers in, exact numbers
  out: the value is the SymPy value, as a Python int or Fraction. The per-op tables
  (:mod:`symroof.models.compiled`) print their rows with the same pieces
  (:func:`fields_source`) and add the time rule; ``Transformer.whole`` runs its fields
  through :func:`exact` when called with numbers.
- :func:`vectorised`: ``sympy.lambdify`` on NumPy, elementwise ``Max``/``Min``; float64 over
  arrays of configurations (:func:`symroof.evaluate`). NumPy is imported when this backend is
  first used, so ``import symroof`` and the command line do not load it.

>>> from symroof.symbols import B, T
>>> f = exact((B * T * 3 / 2, B + T), (B, T))
>>> f(3, 1), f(2, 1)
((Fraction(9, 2), 4), (3, 3))
>>> import numpy as np
>>> g = vectorised((B * T * 3 / 2,), (B, T))
>>> g(np.array([3, 2]), 1)[0].tolist()
[4.5, 3.0]
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import sympy as sp
from sympy.printing.pycode import PythonCodePrinter

__all__ = ["exact", "exact_source", "vectorised", "fields_source", "int_poly", "wrap", "load",
           "NAMESPACE"]


def _quotient(p: int, d: int) -> Any:
    """p / d exactly: an int where d divides p, else a Fraction."""
    return p // d if p % d == 0 else Fraction(p, d)


def _normal(x: Any) -> Any:
    """A Fraction that is a whole number as an int."""
    return x.numerator if type(x) is Fraction and x.denominator == 1 else x


def _sympy(x: Any) -> sp.Expr:
    """An int or Fraction as SymPy's Integer or Rational."""
    return sp.Integer(x) if type(x) is int else sp.Rational(x.numerator, x.denominator)


#: the names the exact backend's source reads
NAMESPACE: dict[str, Any] = {"_F": Fraction, "_quotient": _quotient, "_normal": _normal,
                             "math": math, "_I": sp.Integer, "_ZERO": sp.Integer(0),
                             "_sympy": _sympy}


class _ExactPrinter(PythonCodePrinter):
    """Python source that stays exact: a Rational is a Fraction, Min/Max are min/max, floor
    and ceiling are math's (exact on ints and Fractions)."""

    def _print_Rational(self, expr: sp.Rational) -> str:
        return f"_F({expr.p}, {expr.q})"

    def _print_Half(self, expr: sp.Rational) -> str:
        return "_F(1, 2)"


def int_poly(expr: sp.Expr, symbols: Sequence[sp.Symbol], where: str) -> tuple[sp.Expr, int]:
    """``expr`` as (integer-coefficient polynomial, positive integer denominator), or, where
    it is no polynomial (a sliding window's Min and Max, a block count's floor), as itself
    with denominator 0: printed exactly, normalised at run time.

    >>> from symroof.symbols import B, T
    >>> int_poly(B * T / 2 + B, (B, T), "x")
    (B*T + 2*B, 2)
    """
    expr = sp.sympify(expr)
    if not expr.free_symbols <= set(symbols):
        names = ", ".join(s.name for s in symbols)
        raise ValueError(f"{where} = {expr} is not a function of {names} with numbers")
    if not expr.is_polynomial(*symbols):
        if any(p.exp.is_negative for p in expr.atoms(sp.Pow)):
            raise ValueError(f"{where} = {expr} divides by a size: not compiled")
        return expr, 0
    num, den = sp.fraction(sp.together(sp.expand(expr)))
    return sp.expand(num), int(den)


def wrap(src: str, den: int) -> str:
    """The source of a field from its polynomial's source and denominator (see
    :func:`int_poly`): as is, exactly divided, or normalised.

    >>> wrap("x0 + 1", 1), wrap("x0 + 1", 4), wrap("min(x0, 3)", 0)
    ('x0 + 1', '_quotient(x0 + 1, 4)', '_normal(min(x0, 3))')
    """
    return src if den == 1 else f"_normal({src})" if den == 0 else f"_quotient({src}, {den})"


def fields_source(exprs: Sequence[Any], symbols: Sequence[sp.Symbol],
                  names: Sequence[str] | None = None) -> tuple[list[str], list[str], list[int]]:
    """The exact backend's pieces: the shared subterms' lines (indented, ``x0 = ...``), each
    expression's cleared polynomial as source, and its denominator (:func:`int_poly`).

    >>> from symroof.symbols import B
    >>> fields_source([B**2 + B, (B**2 + B) / 2], (B,))
    (['    x0 = B**2 + B'], ['x0', 'x0'], [1, 2])
    """
    names = names or [f"expression {k}" for k in range(len(exprs))]
    polys, dens = [], []
    for expr, name in zip(exprs, names, strict=True):
        poly, den = int_poly(expr, symbols, name)
        polys.append(poly)
        dens.append(den)
    shared, reduced = sp.cse(polys, symbols=sp.numbered_symbols("x"))
    printer = _ExactPrinter({"fully_qualified_modules": True})
    lines = [f"    {sym} = {printer.doprint(expr)}" for sym, expr in shared]
    return lines, [printer.doprint(e) for e in reduced], dens


@functools.lru_cache(maxsize=256)
def exact(exprs: tuple[Any, ...], symbols: tuple[sp.Symbol, ...], sympy: bool = False
          ) -> Callable[..., tuple]:
    """One Python function ``f(*symbols) -> tuple`` of every expression, exact on ints (the
    exact backend; see the module); ``sympy=True`` returns each value as SymPy's Integer or
    Rational, made in the compiled code. Cached on its arguments.

    >>> from symroof.symbols import S
    >>> exact((sp.Min(S, 4096) * 3,), (S,))(8192)
    (12288,)
    >>> exact((S / 2, S * 0), (S,), sympy=True)(3)
    (3/2, 0)
    """
    return load(exact_source(exprs, symbols, sympy), "_compiled", "<symroof compiled>")


def exact_source(exprs: Sequence[Any], symbols: Sequence[sp.Symbol], sympy: bool = False
                 ) -> str:
    """The source of :func:`exact`'s function, ``_compiled`` (to keep, or to read).

    >>> from symroof.symbols import B
    >>> print(exact_source([B * 2], [B]))
    def _compiled(B):
        return (2*B,)
    """
    lines, srcs, dens = fields_source(exprs, symbols)
    values = [wrap(src, den) for src, den in zip(srcs, dens, strict=True)]
    if sympy:  # ints as Integers where the polynomial has integer coefficients
        values = ["_ZERO" if v == "0" else f"_I({v})" if den == 1 else f"_sympy({v})"
                  for v, den in zip(values, dens, strict=True)]
    body = ", ".join(values)
    args = ", ".join(s.name for s in symbols)
    return "\n".join([f"def _compiled({args}):", *lines, f"    return ({body},)"])


def load(source: str, name: str | tuple[str, ...], where: str,
         names: dict[str, Any] | None = None) -> Any:
    """The function ``name`` that the exact backend's ``source`` defines (a tuple of names:
    a tuple of functions), run with :data:`NAMESPACE` and ``names``; ``where`` names it in
    tracebacks.

    >>> load("def f(x): return _quotient(x, 2)", "f", "<example>")(3)
    Fraction(3, 2)
    """
    namespace = {**NAMESPACE, **(names or {})}
    exec(compile(source, where, "exec"), namespace)  # the one place compiled source runs
    return tuple(namespace[n] for n in name) if isinstance(name, tuple) else namespace[name]


@functools.lru_cache(maxsize=256)
def vectorised(exprs: tuple[Any, ...], symbols: tuple[sp.Symbol, ...]) -> Callable[..., list]:
    """One NumPy function ``f(*symbols) -> list`` of every expression, elementwise over
    arrays in float64 (the NumPy backend). Cached on its arguments.

    >>> import numpy as np
    >>> from symroof.symbols import B
    >>> vectorised((sp.Max(B, 2),), (B,))(np.array([1.0, 3.0]))[0].tolist()
    [2.0, 3.0]
    """
    import numpy as np  # here, not at the top: importing symroof does not load NumPy

    # elementwise, never amax; NumPy as the module itself, not "numpy": lambdify's
    # "from numpy import *" for the name costs about 0.1 s a process, the same functions
    modules = [{"Max": np.maximum, "Min": np.minimum, _MAX.__name__: _elementwise(np.maximum),
                _MIN.__name__: _elementwise(np.minimum)}, np]
    exprs = tuple(_plain(_nested(sp.sympify(e), symbols)) for e in exprs)
    return sp.lambdify(symbols, list(exprs), modules=modules, cse=len(exprs) > 1)


#: Max and Min as plain functions for the NumPy backend: cse rebuilds every expression it
#: shares a subterm of, and a rebuilt Max searches again for an order of its arguments
#: (most of a sweep's compile time); these are printed as the same elementwise reduction
_MAX, _MIN = sp.Function("_elementwise_max"), sp.Function("_elementwise_min")


def _elementwise(ufunc: Any) -> Callable[..., Any]:
    return lambda *args: functools.reduce(ufunc, args)


def _plain(expr: sp.Expr) -> sp.Expr:
    """``expr`` with each Max and Min as :data:`_MAX` and :data:`_MIN` (the same arguments,
    nothing evaluated again)."""
    if not expr.args or not expr.has(sp.Max, sp.Min):
        return expr
    args = tuple(_plain(a) for a in expr.args)
    if isinstance(expr, (sp.Max, sp.Min)):
        return (_MAX if isinstance(expr, sp.Max) else _MIN)(*args)
    return expr if args == expr.args else expr.func(*args)


def _nested(expr: sp.Expr, symbols: Sequence[sp.Symbol]) -> sp.Expr:
    """A polynomial in one or two symbols in Horner form over ``symbols`` (in their order),
    anything else as is.

    Over a grid (``B[:, None]``, ``S[None, :]``) the nested form does the small products
    first and touches the full grid once per level: ``B*(c*S + d)`` is one pass over the
    grid where ``c*B*S + d*B`` (or a shared ``x0 = B*S``, as cse would find it) is three.
    The sweeps' grids have two axes; expressions in more symbols (the strategy search's
    template) are left to cse as they are.

    >>> from symroof.symbols import B, S
    >>> _nested(3 * B * S + 5 * B, (B, S))
    B*(3*S + 5)
    """
    if expr.is_number or len(expr.free_symbols) > 2 or not expr.is_polynomial(*symbols):
        return expr
    return sp.horner(expr, *symbols)
