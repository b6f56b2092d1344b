"""LaTeX through SymPy's printer, and readable numbers.

Objects of symroof carry ``_latex(printer)`` methods, so ``sympy.latex`` prints them and
so does :func:`latex`, which also accepts plain numbers and ``(lhs, rhs)`` equations.

Readable numbers are one rule for every surface a person reads (terminal, Markdown, LaTeX,
notebooks): the symbols are kept, a number that is not short (an integer of 7 or more
digits, a fraction with a numerator or denominator of 4 or more digits, a float) prints at
``digits`` significant figures in scientific notation, or with an SI prefix and a unit when
one is given. Short numbers (``2``, ``1/2``, ``4096``) stay exact, and ``exact=True`` gives
SymPy's exact form. :func:`readable` is the rule as a value that prints in each surface.

>>> import symroof as sr
>>> from symroof.symbols import B, D, F
>>> sr.latex(sr.matmul(B, D, F).intensity)
'\\\\frac{B D F}{B D + B F + D F}'
"""

from __future__ import annotations

import decimal
from typing import Any

import sympy as sp
from sympy.printing.latex import LatexPrinter
from sympy.printing.precedence import PRECEDENCE
from sympy.printing.str import StrPrinter

from .symbols import as_exact

__all__ = ["latex", "readable", "Readable", "number", "document", "fmt_si", "fmt_num"]


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


#: the units that take SI prefixes (an intensity, FLOP/B, does not: 0.500 FLOP/B)
PREFIXED = ("s", "B", "FLOP", "B/s", "FLOP/s", "OP/s", "W", "Hz")
#: SI prefixes by power of ten (engineering notation: the mantissa in [1, 1000)).
_PREFIX = {15: "P", 12: "T", 9: "G", 6: "M", 3: "k", 0: "", -3: "m", -6: "µ", -9: "n",
           -12: "p", -15: "f"}


def _round(n: int) -> bool:
    """An integer of at most 4 significant digits (chip figures: 197 * 10**12)."""
    return len(str(abs(n)).rstrip("0")) <= 4


def _short(x: sp.Rational) -> bool:
    """An exact number a reader takes in at a glance in a formula: an integer under 10^6 or
    round (it prints as ``1.97 \\times 10^{14}``), a fraction of two integers under 1000,
    or one of chip figures (both round, one of them 10^6 or more: ``1/(1.97e14)``)."""
    if x.is_Integer:
        return abs(int(x)) < 10**6 or _round(int(x))
    if not x.is_Rational:
        return False
    if abs(x.p) < 1000 and x.q < 1000:
        return True
    return _round(x.p) and _round(x.q) and max(abs(x.p), x.q) >= 10**6


def _mantissa(x: sp.Expr, digits: int) -> tuple[str, int]:
    """``x`` as (mantissa in [1, 10) at ``digits`` significant figures, power of ten),
    rounded half up from the exact value (999.5 at 3 figures is 1.00e3)."""
    value = decimal.Decimal(str(sp.N(x, 30)))
    exponent = value.adjusted()
    step = decimal.Decimal(1).scaleb(exponent - digits + 1)
    rounded = value.quantize(step, rounding=decimal.ROUND_HALF_UP)
    exponent = rounded.adjusted()
    mantissa = rounded.scaleb(-exponent)
    return f"{mantissa:.{digits - 1}f}", exponent


def _sci_text(n: sp.Integer) -> str:
    """A round integer in the terminal: ``197000000000000`` as ``1.97e14``."""
    digits = str(abs(int(n))).rstrip("0")
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{'-' if n < 0 else ''}{mantissa}e{len(str(abs(int(n)))) - 1}"


def number(x: Any, unit: str = "", digits: int = 3, *, tex: bool = True,
           si: bool = True) -> str:
    """One number as a person reads it: ``digits`` significant figures, with an SI prefix
    and ``unit`` when one is given (``si=False``: scientific notation and the base unit),
    scientific notation past 10^4 or below 10^-3, a short exact number as it is (an integer,
    or a fraction of small numbers over a power of two: 1/2, 7/8; 48/5 reads 9.60).

    >>> number(sp.Rational(128, 241455078125), "s"), number(2.5e-10, "s", si=False)
    ('530\\\\,\\\\mathrm{ps}', '2.50 \\\\times 10^{-10}\\\\,\\\\mathrm{s}')
    >>> number(sp.Rational(9850, 41)), number(29315072), number(sp.Rational(1, 2))
    ('240', '2.93 \\\\times 10^{7}', '\\\\frac{1}{2}')
    >>> number(sp.Rational(128, 241455078125), "s", tex=False), number(3.35e12, "B/s", tex=False)
    ('530 ps', '3.35 TB/s')
    """
    exact = sp.nsimplify(x) if isinstance(x, float) else sp.sympify(x)
    if not (exact.is_number and exact.is_real):
        raise ValueError(f"number() takes a real number, got {x!r:.60}")
    value = float(exact)
    if value == 0 or not unit and (exact.is_Integer and _short(exact) or exact.is_Rational
                                   and abs(exact.p) < 100 and exact.q < 100
                                   and exact.q & (exact.q - 1) == 0):  # 1/2, 7/8, not 48/5
        text = _ReadablePrinter().doprint(exact) if tex else _sci_text(exact) if abs(
            value) >= 10**6 else sp.sstr(exact)
        return text + (_unit(unit, "", tex) if unit else "")
    mantissa, exponent = _mantissa(exact, digits)
    power = 3 * (exponent // 3)
    if unit and si and power in _PREFIX and unit in PREFIXED:  # 530 ps, 3.35 TB/s
        scaled = float(mantissa) * 10 ** (exponent - power)
        places = max(0, digits - 1 - exponent + power)
        return f"{scaled:.{places}f}" + _unit(unit, _PREFIX[power], tex)
    if -3 <= exponent < 4:  # plain decimal: 240, 0.0135, 8760, 0.500 FLOP/B
        text = f"{float(mantissa) * 10**exponent:.{max(0, digits - 1 - exponent)}f}"
    elif tex:
        text = rf"{mantissa} \times 10^{{{exponent}}}"
    else:
        text = f"{mantissa}e{exponent}"
    return text + (_unit(unit, "", tex) if unit else "")


def _unit(unit: str, prefix: str, tex: bool) -> str:
    if not tex:  # ASCII in the terminal, as fmt_si writes it: 80 us
        return f" {prefix.replace('µ', 'u')}{unit}"
    if prefix == "µ":
        return rf"\,\mu\mathrm{{{unit}}}"
    return rf"\,\mathrm{{{prefix}{unit}}}"


class _Numbers:
    """The readable-number rule for a SymPy printer (LaTeX or text): numbers that are not
    short print through :func:`number`; a product keeps its symbols after its coefficient;
    with a unit, every top-level term (of a sum, a max or a min) carries it."""

    digits, unit, si, tex, times = 3, "", True, True, r" \cdot "

    def _num(self, x: Any, unit: str = "") -> str:
        return number(x, unit, self.digits, tex=self.tex, si=self.si)

    def _print_Integer(self, expr: sp.Integer) -> str:
        if not _short(expr):
            return self._num(expr)
        if abs(int(expr)) >= 10**6:  # round: exact, in scientific form
            return _ReadablePrinter._print_Integer(self, expr) if self.tex else _sci_text(expr)
        return getattr(super(), "_print_Integer", super()._print_Rational)(expr)

    def _print_Rational(self, expr: sp.Rational) -> str:
        if not _short(expr):
            return self._num(expr)
        if self.tex:
            return _ReadablePrinter._print_Rational(self, expr)
        p, q = (self._print_Integer(sp.Integer(n)) for n in (expr.p, expr.q))
        return f"{p}/{q}"

    def _print_Float(self, expr: sp.Float) -> str:
        return self._num(expr)

    def _print_Mul(self, expr: sp.Mul) -> str:
        coeff, rest = expr.as_coeff_Mul()
        if coeff.is_Rational and _short(coeff) or rest == 1:
            return super()._print_Mul(expr)
        rest = self.parenthesize(rest, PRECEDENCE["Mul"], strict=True)
        return self._num(coeff) + self.times + rest

    def quantity(self, expr: Any, unit: str) -> str:
        """``expr`` with ``unit`` on each top-level term (the hook a value's ``_latex``
        calls for its times and sizes: ``TimeBound`` prints its times in seconds)."""
        before, self.unit = self.unit, unit
        try:
            return self.top(expr)
        finally:
            self.unit = before

    def top(self, expr: sp.Expr) -> str:
        """``expr`` with the unit on each top-level term."""
        expr = sp.sympify(expr)
        if isinstance(expr, sp.Tuple):
            inner = ", ".join(self.top(a) for a in expr)
            return rf"\left( {inner}\right)" if self.tex else f"({inner})"
        if isinstance(expr, sp.Expr) and expr.is_number and expr.is_real:
            return self._num(expr, self.unit)  # 512 sqrt(10) reads as 1.62e3
        if not self.unit or not isinstance(expr, sp.Expr) or any(
                not s.is_integer for s in expr.free_symbols):  # C, W, b_w carry the unit
            return self.doprint(expr)
        if isinstance(expr, (sp.Max, sp.Min)):
            name = type(expr).__name__.lower()
            args = ", ".join(self.top(a) for a in expr.args)
            return rf"\{name}\left({args}\right)" if self.tex else f"{name}({args})"
        if expr.is_Add:
            terms = [self.top(t) for t in self._as_ordered_terms(expr)]
            return " + ".join(terms).replace("+ -", "- ")
        coeff, rest = expr.as_coeff_Mul()
        if rest != 1 and coeff.is_Rational and abs(coeff.p) < 1000 and coeff.q < 1000:
            # 2 B D F / (B D + ...): a ratio of counts, its unit implied
            return self.doprint(expr)
        shown = self._num(coeff, self.unit)
        return shown if rest == 1 else shown + self.times + self.parenthesize(
            rest, PRECEDENCE["Mul"], strict=True)


class _NumbersLatex(_Numbers, LatexPrinter):
    pass


class _NumbersText(_Numbers, StrPrinter):
    tex, times = False, "*"


def _printer(tex: bool, unit: str, digits: int, si: bool, settings: dict) -> _Numbers:
    if not 1 <= digits <= 15:
        raise ValueError(f"digits={digits!r}: significant figures run from 1 to 15")
    printer = (_NumbersLatex if tex else _NumbersText)(settings)
    printer.unit, printer.digits, printer.si = unit, digits, si
    return printer


class Readable:
    """An expression with readable numbers, as a value: ``str()`` for the terminal,
    ``.latex`` for LaTeX, ``_repr_latex_`` and ``_repr_markdown_`` for notebooks, all from
    the one rule of :func:`number`.

    >>> from symroof.symbols import B, S
    >>> r = readable(128 * B * S / 241455078125, "s")
    >>> print(r)
    530 ps*B*S
    >>> print(r.latex)
    530\\,\\mathrm{ps} \\cdot B S
    >>> print(readable(128 * B * S / 241455078125, "s", si=False).latex)
    5.30 \\times 10^{-10}\\,\\mathrm{s} \\cdot B S
    """

    def __init__(self, expr: Any, unit: str = "", digits: int = 3, si: bool = True) -> None:
        self.expr, self.unit, self.digits, self.si = sp.sympify(expr), unit, digits, si
        self.latex = _printer(True, unit, digits, si, {}).top(self.expr)

    def __str__(self) -> str:
        return _printer(False, self.unit, self.digits, self.si, {}).top(self.expr)

    def __repr__(self) -> str:
        return f"Readable({self})"

    def _repr_latex_(self) -> str:
        return f"${self.latex}$"

    def _repr_markdown_(self) -> str:
        return f"${self.latex}$"


def readable(expr: Any, unit: str = "", digits: int = 3, *, si: bool = True) -> Readable:
    """``expr`` with its symbols kept and its numbers readable (see :class:`Readable`).

    >>> from symroof.symbols import S
    >>> print(readable(1024 * S / 241455078125 + sp.Rational(29315072, 241455078125), "s"))
    4.24 ns*S + 121 us
    """
    return Readable(expr, unit, digits, si)


def latex(obj: Any, *, exact: bool = False, unit: str = "", digits: int = 3, si: bool = True,
          readable: bool = False, **settings: Any) -> str:
    """LaTeX for an expression, equation, Cost or TimeBound (math mode, without delimiters;
    a ``(lhs, rhs)`` pair prints as an equation, and a side given as a string is LaTeX
    already), or the ``to_latex()`` block of a derivation, roofline table, step time or check
    report.

    >>> from symroof.symbols import N
    >>> latex((N, 2 * N - 1))
    'N = 2 N - 1'
    >>> print(latex((r"B^*", N / 2)))
    B^* = \\frac{N}{2}

    Numbers print readable (:func:`number`: ``digits`` significant figures, ``unit`` on
    each term with an SI prefix, unless ``si=False``); ``exact=True`` keeps SymPy's exact
    rationals, and ``readable=True`` keeps them too but writes round integers of 7 or more
    digits in scientific form (the teacher's notes do):

    >>> from symroof.symbols import B, S
    >>> t = 128 * B * S / 241455078125
    >>> print(latex(t, unit="s"))
    530\\,\\mathrm{ps} \\cdot B S
    >>> print(latex(t))
    5.30 \\times 10^{-10} \\cdot B S
    >>> print(latex(t, exact=True))
    \\frac{128 B S}{241455078125}
    >>> print(latex(N / 197000000000000, readable=True))
    \\frac{N}{1.97 \\times 10^{14}}
    """
    if isinstance(obj, tuple) and len(obj) == 2:
        return " = ".join(side if isinstance(side, str) else latex(
            side, exact=exact, unit=unit, digits=digits, si=si, readable=readable, **settings)
            for side in obj)
    if isinstance(obj, (int, float)) and not isinstance(obj, bool):
        obj = as_exact(obj)
    elif hasattr(obj, "to_latex"):  # Derivation, RooflineTable, CheckReport, StepTime
        return obj.to_latex()
    if isinstance(obj, sp.Basic) or hasattr(obj, "_latex"):
        if readable:
            return _ReadablePrinter(settings).doprint(obj)
        if exact:
            return sp.latex(obj, **settings)
        printer = _printer(True, unit, digits, si, settings)
        return printer.top(obj) if isinstance(obj, sp.Basic) else printer.doprint(obj)
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
            r"\usepackage{float}", r"\usepackage[margin=2cm]{geometry}", r"\begin{document}"]
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
