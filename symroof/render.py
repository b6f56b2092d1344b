"""LaTeX through SymPy's printer.

Objects of symroof carry ``_latex(printer)`` methods, so ``sympy.latex`` prints them and
so does :func:`latex`, which also accepts plain numbers and ``(lhs, rhs)`` equations.

>>> import symroof as sr
>>> from symroof.symbols import B, D, F
>>> sr.latex(sr.matmul(B, D, F).intensity)
'\\\\frac{B D F}{B D + B F + D F}'
"""

from __future__ import annotations

from typing import Any

import sympy as sp
from sympy.printing.latex import LatexPrinter

from .cost import as_exact

__all__ = ["latex", "document", "fmt_si", "fmt_num"]


class _ReadablePrinter(LatexPrinter):
    """SymPy's LaTeX printer, but a round integer of 7 or more digits (at most 4 significant
    ones, as chip figures are) prints as ``1.97 \\times 10^{14}``: still exact, and readable."""

    def _print_Integer(self, expr: sp.Integer) -> str:
        n = int(expr)
        digits = str(abs(n)).rstrip("0")
        exponent = len(str(abs(n))) - 1
        if abs(n) < 10**6 or len(digits) > 4:
            return str(n)
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        sign = "-" if n < 0 else ""
        if mantissa == "1":
            return rf"{sign}10^{{{exponent}}}"
        return rf"{sign}{mantissa} \times 10^{{{exponent}}}"

    def _print_Rational(self, expr: sp.Rational) -> str:
        if expr.q == 1 or self._settings["fold_short_frac"]:
            return super()._print_Rational(expr)
        sign = "- " if expr.p < 0 else ""
        num, den = (self._print_Integer(sp.Integer(n)) for n in (abs(expr.p), expr.q))
        return rf"{sign}\frac{{{num}}}{{{den}}}"


def latex(obj: Any, *, readable: bool = False, **settings: Any) -> str:
    """LaTeX for an expression, equation, Cost or TimeBound (math mode, without delimiters;
    a ``(lhs, rhs)`` pair prints as an equation, and a side given as a string is LaTeX
    already), or the ``to_latex()`` block of a derivation, roofline table, step time or check
    report.

    >>> from symroof.symbols import N
    >>> latex((N, 2 * N - 1))
    'N = 2 N - 1'
    >>> print(latex((r"B^*", N / 2)))
    B^* = \\frac{N}{2}

    ``readable=True`` writes round integers of 7 or more digits in scientific form (the
    notes do; the exact value is unchanged):

    >>> print(latex(N / 197000000000000, readable=True))
    \\frac{N}{1.97 \\times 10^{14}}
    """
    if isinstance(obj, tuple) and len(obj) == 2:
        return " = ".join(side if isinstance(side, str)
                          else latex(side, readable=readable, **settings) for side in obj)
    if isinstance(obj, (int, float)) and not isinstance(obj, bool):
        obj = as_exact(obj)
    elif hasattr(obj, "to_latex"):  # Derivation, RooflineTable, CheckReport, StepTime
        return obj.to_latex()
    if isinstance(obj, sp.Basic) or hasattr(obj, "_latex"):
        return _ReadablePrinter(settings).doprint(obj) if readable else sp.latex(obj, **settings)
    raise TypeError(f"latex() has no LaTeX form for {type(obj).__name__} {obj!r:.60}; it "
                    "takes expressions, (lhs, rhs) pairs, Costs, time bounds, derivations, "
                    "roofline tables, step times and check reports")


def document(body: str, *, title: str | None = None) -> str:
    """A complete amsmath/booktabs article around ``body`` (used to compile-check LaTeX).

    >>> document(r"\\[ x \\]").splitlines()[0]
    '\\\\documentclass{article}'
    """
    head = [r"\documentclass{article}", r"\usepackage{amsmath,amssymb}",
            r"\usepackage{booktabs}", r"\usepackage{graphicx}",
            r"\usepackage[margin=2cm]{geometry}", r"\begin{document}"]
    if title:
        head.append(rf"\section*{{{title}}}")
    return "\n".join(head + [body, r"\end{document}", ""])


def fmt_si(x: Any, unit: str = "") -> str:
    """Human-readable number with an SI prefix: ``fmt_si(1.5e12, "B")`` is ``'1.5 TB'``.

    >>> fmt_si(3.2e-3, "s"), fmt_si(0), fmt_si(8030261248)
    ('3.2 ms', '0', '8.03 G')
    """
    x = float(x)
    if x == 0:
        return "0" + (f" {unit}" if unit else "")
    prefixes = (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3), ("", 1.0),
                ("m", 1e-3), ("u", 1e-6), ("n", 1e-9))
    prefix, scale = next((p for p in prefixes if abs(x) >= p[1]), prefixes[-1])
    text = f"{x / scale:.3g}"
    return f"{text} {prefix}{unit}".rstrip()


def fmt_num(x: Any, digits: int = 3) -> str:
    """A number for a table cell or a sentence: ``digits`` significant digits, thousands
    separated by commas from 1,000 up, never ``1.25e+03``; scientific only past 10^15 and
    below 10^-3.

    >>> fmt_num(1250.4), fmt_num(62.74), fmt_num(0.1666), fmt_num(0), fmt_num(2.5e17)
    ('1,250', '62.7', '0.167', '0', '2.5e+17')
    >>> fmt_num(float("nan"))
    '-'

    """
    x = float(x)
    if x != x:  # no value (0/0: a collective row has no memory bytes and no FLOPs)
        return "-"
    if x in (float("inf"), float("-inf")):
        return str(x)
    if x == 0 or 1e-3 <= abs(x) < 1000:
        return f"{x:.{digits}g}"
    if 1000 <= abs(x) < 1e15:
        return f"{x:,.0f}"
    return f"{x:.{digits}g}"
