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

from .cost import as_exact

__all__ = ["latex", "document", "fmt_si"]


def latex(obj: Any, **settings: Any) -> str:
    """LaTeX for an expression, equation, Cost or TimeBound (math mode, without delimiters;
    a ``(lhs, rhs)`` pair prints as an equation, and a side given as a string is LaTeX
    already), or the ``to_latex()`` block of a derivation, roofline table, step time or check
    report.

    >>> from symroof.symbols import N
    >>> latex((N, 2 * N - 1))
    'N = 2 N - 1'
    >>> print(latex((r"B^*", N / 2)))
    B^* = \\frac{N}{2}
    """
    if isinstance(obj, tuple) and len(obj) == 2:
        return " = ".join(side if isinstance(side, str) else latex(side, **settings)
                          for side in obj)
    if isinstance(obj, (int, float)) and not isinstance(obj, bool):
        obj = as_exact(obj)
    elif hasattr(obj, "to_latex"):  # Derivation, RooflineTable, CheckReport, StepTime
        return obj.to_latex()
    if isinstance(obj, sp.Basic) or hasattr(obj, "_latex"):
        return sp.latex(obj, **settings)
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
