"""The one time rule: lower = max of the terms, upper = their sum, bound = the largest; every
view (TimeBound, the compiled table, the NumPy evaluator, the strategy search) reads it from
symroof.timerule, and the source of the library holds no second copy."""

import itertools
import re
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

import symroof as sr
from symroof.evaluate import NUMPY, evaluate
from symroof.symbols import B, S
from symroof.timerule import EXACT, SOURCE, SYMPY, combine, source

H100_C, H100_W = 989 * 10**12, 335 * 10**10  # NVIDIA H100 SXM sheet: dense bf16, HBM3 B/s


def test_the_rule_on_every_backend():
    # 1 s of math and 2 s of memory on an H100 (the sheet's figures): 2 s .. 3 s, memory
    cost = sr.Cost(flops=H100_C, weight_bytes=2 * H100_W)
    t = sr.time(cost, sr.chip("h100"))
    assert (t.t_math, t.t_mem, t.lower, t.upper, t.bound) == (1, 2, 2, 3, "memory")
    assert combine([1, 2, 0], EXACT) == (2, 3, 1)
    assert combine([Fraction(1, 3), Fraction(1, 3)]) == (Fraction(1, 3), Fraction(2, 3), 0)
    lo, up, at = combine([np.array([1.0, 3.0]), np.array([2.0, 2.0])], NUMPY)
    assert lo.tolist() == [2.0, 3.0] and up.tolist() == [3.0, 5.0] and at.tolist() == [1, 0]
    x, y = sp.symbols("x y", positive=True)
    assert combine([x, y], SYMPY)[:2] == (sp.Max(x, y), x + y)
    lo, up, at = (eval(src, {"m": 1.0, "t": 2.0}) for src in combine(["m", "t"], SOURCE))
    assert (lo, up, at) == (2.0, 3.0, 1)


def test_the_compiled_tables_decision_tree_is_the_rule():
    # the tables' source asks each comparison once; on every ordering of three terms (ties
    # included) it answers as the rule does on numbers
    tree = source(["a", "b", "c"], lambda lo, up, i: f"({lo}, {up}, {i})")
    for v in itertools.product(range(3), repeat=3):
        assert eval(tree, dict(zip("abc", v))) == combine(list(v)), v


def test_every_view_agrees_exactly():
    model, chip = sr.model("llama-3.1-8b"), sr.chip("h100")
    table = sr.roofline_table(model, chip, batch=8, new_tokens=1, cached=2047)
    d = table.as_dict()
    for name, tb in table.times.items():
        v = table.numbers[name]
        assert (v.lower, v.bound) == (float(tb.lower), tb.bound)
        assert d["rows"][name]["t_upper_s"] == float(tb.t_math) + float(tb.t_mem)
    whole = sr.time(model.whole(B, 1, 2047), chip)
    got = evaluate(whole, B=np.array([8.0, 512.0]))
    for i, b in enumerate((8, 512)):  # float64 arithmetic: within an ulp or two
        exact = whole.subs(B, b)
        assert got["lower"][i] == pytest.approx(float(exact.lower), rel=1e-15)
        assert got["upper"][i] == pytest.approx(float(exact.upper), rel=1e-15)


def test_grep_finds_one_time_rule():
    # the rule's forms written outside symroof/timerule.py: a max or sum over a bound's
    # terms, a stacked max/argmax of passes, an inline compute-or-memory choice
    pattern = re.compile(r"(Max|Add)\(\*self\._terms|\.max\(0\)\s*\+|argmax\(0\)|"
                         r"'compute' if m\d|m\{i\} >= t\{i\}|reduce\(np\.maximum|"
                         r"t_math \+ t\.t_mem")
    root = Path(sr.__file__).parent
    hits = [f"{p.relative_to(root)}:{i}" for p in root.rglob("*.py")
            for i, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert hits == []


def _max_cases() -> list:
    from symroof.symbols import C, D, F, W, W_net
    mm = sr.matmul(B, D, F)
    t_math, t_mem, t_net = mm.flops / C, mm.bytes / W, 2 * B * F / W_net
    s = sp.Symbol("s")  # no assumptions: its domain is not known, SymPy decides
    return [
        (t_math, t_mem),                        # unordered: kept as two terms
        (sp.Max(t_math, t_mem), t_net),         # three terms, flattened
        (t_math, 3 * t_math),                   # ordered: the larger alone
        (sp.Integer(0), t_mem),                 # a zero term
        (sp.Rational(1, 3), sp.Integer(2)),     # numbers
        (sp.Rational(1, 10**6), B / 10**9),     # a latency floor against a symbolic size
        (t_math, t_math + t_net),               # ordered by a positive summand
        (t_math, sp.Min(t_mem, t_net)),         # a Min of its own
        (s, t_mem),
        (t_mem, t_mem),
        # numbers for the chip (an H100's norms, decode): memory-bound at every batch
        (sp.Rational(106509, 98900000000000) * B, (208 * B + 104) / sp.Integer(654296875)),
        (B * S, B - 1),                         # ordered, but not term by term
        (B * S - B, 2 * B),                     # unordered, with a negative term
        (sp.Max(t_math, t_mem), sp.Integer(0)),  # a step's zero network term
        (sp.Max(t_math, t_mem), t_mem + t_net),  # exceeds one of the two, not the other
        (sp.Max(t_math, t_mem), 2 * t_math + t_mem),  # exceeds both
    ]


@pytest.mark.parametrize("a, b", _max_cases())
def test_symbolic_max_is_sympys_max(a, b):
    # the rule's symbolic max skips SymPy's search for an order only where none exists: the
    # same expression, args and all, as SymPy's own Max builds (sp.Max is the oracle)
    got, want = SYMPY.max(a, b), sp.Max(a, b)
    assert got == want and type(got) is type(want) and got.args == want.args
