"""Readable numbers: one rule (symroof.render.number) for the terminal, Markdown, LaTeX and
notebooks. Golden strings; the expected values are worked by hand in the comments."""

import pytest
import sympy as sp

import symroof as sr
from symroof.render import number
from symroof.symbols import B, S

# 128 / 241455078125 s = 5.30e-10 s: the H100 (989e12 FLOP/s) running 2 * 64 FLOPs per B S
T_BS = 128 * B * S / 241455078125


@pytest.mark.parametrize(("value", "unit", "kw", "tex", "text"), [
    (sp.Rational(128, 241455078125), "s", {}, r"530\,\mathrm{ps}", "530 ps"),
    (sp.Rational(128, 241455078125), "s", {"si": False},
     r"5.30 \times 10^{-10}\,\mathrm{s}", "5.30e-10 s"),
    (sp.Rational(128, 241455078125), "s", {"digits": 2}, r"530\,\mathrm{ps}", "530 ps"),
    (sp.Rational(128, 241455078125), "s", {"digits": 5}, r"530.12\,\mathrm{ps}", "530.12 ps"),
    (sp.Integer(3350) * 10**9, "B/s", {}, r"3.35\,\mathrm{TB/s}", "3.35 TB/s"),  # H100 HBM
    (sp.Rational(80, 10**6), "s", {}, r"80.0\,\mu\mathrm{s}", "80.0 us"),
    (sp.Rational(9995, 10), "s", {}, r"1.00\,\mathrm{ks}", "1.00 ks"),  # 999.5 rounds up
    (sp.Rational(9850, 41), "", {}, "240", "240"),  # the v5e ridge, 240.24
    (sp.Rational(131072, 5625), "", {}, "23.3", "23.3"),  # 23.30...
    (sp.Integer(29315072), "", {}, r"2.93 \times 10^{7}", "2.93e7"),
    (sp.Rational(-1, 7000), "", {}, r"-1.43 \times 10^{-4}", "-1.43e-4"),
    (sp.Rational(1, 2), "", {}, r"\frac{1}{2}", "1/2"),  # short: exact
    (sp.Integer(4096), "", {}, "4096", "4096"),
    (sp.Integer(0), "s", {}, r"0\,\mathrm{s}", "0 s"),
])
def test_one_number_in_latex_and_text(value, unit, kw, tex, text):
    assert number(value, unit, **kw) == tex
    assert number(value, unit, tex=False, **kw) == text


def test_expressions_keep_their_symbols():
    assert sr.latex(T_BS, unit="s") == r"530\,\mathrm{ps} \cdot B S"
    assert sr.latex(T_BS, unit="s", si=False) == r"5.30 \times 10^{-10}\,\mathrm{s} \cdot B S"
    assert sr.latex(T_BS) == r"5.30 \times 10^{-10} \cdot B S"
    assert sr.latex(T_BS, exact=True) == r"\frac{128 B S}{241455078125}"
    # every term of a sum, and every argument of a max, carries the unit
    t = 1024 * S / 241455078125 + sp.Rational(29315072, 241455078125)
    assert sr.latex(t, unit="s") == r"4.24\,\mathrm{ns} \cdot S + 121\,\mu\mathrm{s}"
    assert sr.latex(sp.Max(t, 2 * B / 10**9), unit="s").startswith(r"\max\left(")
    assert str(sr.readable(t, "s")) == "4.24 ns*S + 121 us"
    # short coefficients stay exact: no unit, no decimals in a formula
    assert sr.latex(S / 2 + 3 * B) == r"3 B + \frac{S}{2}"


def test_the_same_rule_on_every_surface():
    r = sr.readable(T_BS, "s")
    assert (str(r), r.latex) == ("530 ps*B*S", r"530\,\mathrm{ps} \cdot B S")
    assert r._repr_latex_() == r._repr_markdown_() == "$" + sr.latex(T_BS, unit="s") + "$"


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="digits=0"):
        sr.latex(T_BS, digits=0)
    with pytest.raises(ValueError, match="real number"):
        number(B)


def test_chip_figures_stay_exact_in_formulas():
    from symroof.symbols import N
    # round figures (at most 4 significant digits) print exactly, in scientific form
    assert sr.latex(N / 197000000000000) == r"\frac{N}{1.97 \times 10^{14}}"
    assert sr.latex(10**12 / sr.symbolic_chip().peak()) == r"\frac{10^{12}}{C}"
    assert number(10**12) == "10^{12}" and number(10**12, tex=False) == "1e12"
    # but a value is a decimal: 1/989 s (10^12 FLOPs at the H100's 989e12 FLOP/s)
    assert number(sp.Rational(1, 989)) == "0.00101"
    assert number(sp.Rational(1, 989), "s") == r"1.01\,\mathrm{ms}"
    # units ride on numbers and counts, not on formulas whose symbols carry them
    assert sr.latex(2 * B / sr.symbolic_chip().peak(), unit="s") == r"\frac{2 B}{C}"
    assert sr.latex(sp.Rational(1, 2) * B, unit="FLOP/B") == r"\frac{B}{2}"
    assert number(sp.Rational(1, 2), "FLOP/B") == r"0.500\,\mathrm{FLOP/B}"
