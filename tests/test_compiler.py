"""The one compiler's two backends (``symroof.compiler``), and ``Transformer.whole`` with
numbers run through the exact one: the same exact values as the SymPy derivation."""

import re
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

import symroof as sr
from symroof.compiler import exact, vectorised
from symroof.models.compiled_whole import whole_numbers
from symroof.symbols import B, S, T


def test_exact_backend_stays_exact():
    f = exact((B * T / 3, sp.Min(S, 4096) * B, sp.Rational(1, 2) * S), (B, T, S))
    out = f(2, 5, 10**30)
    assert out == (Fraction(10, 3), 8192, 5 * 10**29)
    assert type(out[1]) is int and type(out[2]) is int  # whole numbers as ints, not Fractions
    assert f(3, 1, 7) == (1, 21, Fraction(7, 2))


def test_exact_backend_refuses_other_symbols():
    with pytest.raises(ValueError, match="not a function of B, T"):
        exact((B * sr.symbols.D,), (B, T))


def test_numpy_backend_is_elementwise():
    g = vectorised((sp.Max(B, 3 * T), B * T / 2), (B, T))
    top, half = g(np.array([1.0, 8.0]), np.array([2.0, 2.0]))
    assert top.tolist() == [6.0, 8.0] and half.tolist() == [1.0, 8.0]


# families whose whole cost branches differently: dense GQA, MoE (Min(E, n k) experts read),
# MLA, a sliding window on every layer, a window on every other layer, learned positions
FAMILIES = ["llama-3.1-8b", "mixtral-8x7b", "deepseek-v3", "mistral-7b", "gemma-2-9b", "gpt2"]
STEPS = [(1, 1, 0), (8, 1, 4095), (3, 512, 0), (2, 7, 9000), (64, 1, 131071)]


@pytest.mark.parametrize("name", FAMILIES)
def test_compiled_whole_equals_the_derivation(name):
    m = sr.model(name)
    for last_only in (False, True):
        for b, t, c in STEPS:
            fast = m.whole(b, t, c, last_only=last_only)
            slow = m._whole(b, t, c, last_only)  # the SymPy derivation, with numbers
            for field in ("flops", "useful_flops", "weight_bytes", "act_bytes", "kv_bytes",
                          "net_bytes", "net_time", "host_bytes"):
                value = getattr(fast, field)
                assert isinstance(value, sp.Integer), (name, field, value)
                assert value == getattr(slow, field), (name, b, t, c, last_only, field)


def test_compiled_whole_follows_the_conventions():
    m = sr.model("llama-3.1-8b")
    book = m.whole(2, 64, 0, conventions="book")
    with sr.conventions.using("book"):
        slow = m._whole(2, 64, 0, False)
    assert book.flops == slow.flops != m.whole(2, 64, 0).flops


def test_whole_with_symbols_or_bad_numbers_takes_the_derivation():
    m = sr.model("llama-3.1-8b")
    assert whole_numbers(m, B, 1, 0, False, None) is None
    assert m.whole(B, 1, S - 1).kv_bytes.free_symbols == {B, S}
    assert whole_numbers(sr.models.Transformer(), 2, 1, 0, False, None) is None  # symbols
    with pytest.raises(ValueError, match="batch"):
        m.whole(0, 1, 0)
    # a time of the compiled whole is the exact time of the derivation's
    chip = sr.chip("h100")
    fast, slow = sr.time(m.whole(8, 1, 2047), chip), sr.time(m._whole(8, 1, 2047, False), chip)
    assert (fast.t_math, fast.t_mem, fast.lower, fast.upper, fast.bound) == \
        (slow.t_math, slow.t_mem, slow.lower, slow.upper, slow.bound)


@pytest.mark.parametrize("cost", [
    sr.Cost(flops=3 * 10**15, weight_bytes=7, kv_bytes=10**9),
    sr.Cost(flops=10, useful_flops=5, act_bytes=sp.Rational(9, 7), net_bytes=4 * 10**9),
    sr.Cost(flops=10**12, net_time=sp.Rational(1, 1000), net_bytes=10**20),
    sr.Cost(weight_bytes=10**9, host_bytes=64 * 10**9),
    sr.Cost(),
])
def test_time_on_ints_is_the_rule_on_sympy_numbers(cost):
    """sr.time decides numbers on Python ints; the rule on SymPy's numbers agrees."""
    from symroof.hardware.internals import roof
    from symroof.timerule import combine, terms

    chip = sr.chip("tpu-v6e")  # a host link on record
    t = sr.time(cost, chip)
    C, W = roof(chip, "hbm", "bf16")
    ref = terms(cost.flops, cost.bytes, cost.net_time, cost.net_bytes, cost.host_bytes,
                (C, W, chip.link_bw, roof(chip, "pcie", "bf16")[1]))
    values = [ref["compute"], ref["memory"], ref["network"]] + \
        ([ref["host"]] if cost.host_bytes != 0 else [])
    lower, upper, which = combine([sp.sympify(v) for v in values])
    assert (t.t_math, t.t_mem, t.t_net, t.t_host) == tuple(sp.sympify(ref[k]) for k in
                                                           ("compute", "memory", "network",
                                                            "host"))
    assert (t.lower, t.upper, t.bound) == (lower, upper, list(t._terms())[which])


def test_one_compiler():
    """Expressions are compiled in symroof/compiler.py only: no other module lambdifies or
    runs generated source."""
    root = Path(sr.__file__).parent
    found = [str(p.relative_to(root)) for p in root.rglob("*.py")
             if p.name != "compiler.py" and re.search(r"\blambdify\(|\bexec\(", p.read_text())]
    assert found == []


@pytest.mark.parametrize("name", ["llama-3.1-8b", "gemma-2-9b", "deepseek-v3"])
def test_compiled_totals_are_the_rows_summed(name):
    """A compiled table's totals (summed in the generated code) are the rows' numbers
    summed and timed by row_values, value for value and type for type."""
    for conventions in ("symroof", "book"):
        for b, t, c in [(8, 1, 2047), (3, 512, 0), (2, 7, 999)]:
            try:
                table = sr.roofline_table(sr.model(name), "h100", batch=b, new_tokens=t,
                                          cached=c, conventions=conventions)
            except ValueError:  # a convention the family does not take
                continue
            fast = table._total
            del vars(table)["_total"], vars(table)["_totals"]  # now summed the slow way
            slow = table._total
            assert fast == slow and list(map(type, fast)) == list(map(type, slow))


def test_vectorised_grid_values_are_the_exact_ones():
    """The NumPy backend nests a polynomial in the grid's two symbols (Horner form): its
    values are still the exact ones, to float64 rounding, and a constant field fills the
    grid (zeros for a term that is absent)."""
    from symroof.evaluate import evaluate

    model, chip = sr.model("llama-3.1-8b"), sr.chip("h100")
    t = sr.step_time(model, chip, B, 1, S - 1).whole  # polynomials in B and S
    b, s = np.array([1.0, 7.0, 512.0])[:, None], np.array([1.0, 2048.0, 131072.0])[None, :]
    got = evaluate(t, B=b, S=s)
    for i, bi in enumerate((1, 7, 512)):
        for j, sj in enumerate((1, 2048, 131072)):
            exact_t = t.subs({B: bi, S: sj})
            for name in ("t_math", "t_mem", "lower", "upper"):
                want = float(getattr(exact_t, name))
                assert got[name][i, j] == pytest.approx(want, rel=1e-15), (name, bi, sj)
    assert got["t_net"].shape == (3, 3) and not got["t_net"].any()
    got["t_net"][0, 0] = 1.0  # a grid of its own, not a read-only broadcast
    f = vectorised((3 * B * S + 5 * B, B + S), (B, S))
    assert f(np.array([[2.0]]), np.array([[3.0]]))[0].tolist() == [[28.0]]
