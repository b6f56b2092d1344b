"""What a REPL user meets first: printed summaries, LaTeX with a label, chips and symbols
passed where names are expected, and exact roots in a form that reads as positive."""

import sympy as sp

import symroof as sr
from symroof.symbols import B, C, D, F, M, S, W, W_net


def test_step_time_prints_a_summary():
    st = sr.step_time(sr.model("llama-3.1-8b"), "h100", 64, 1, 2047)
    lines = str(st).splitlines()
    assert lines[0] == ("step: per-op sum 9.84 ms, 1.02x the whole-model bound 9.61 ms "
                        "(memory-bound)")
    assert len(lines) == 2 + len(st.groups) and "attention core" in lines[4]
    assert lines[-1] == "conventions: symroof"
    assert repr(st) == f"<StepTime {lines[0]}>"
    symbolic = sr.step_time(sr.model("llama-3.1-8b"), "h100", B, 1, S - 1)
    assert str(symbolic).startswith("step (symbolic in B, S): 8 groups")
    assert len(repr(symbolic)) < 300


def test_latex_takes_a_latex_string_on_either_side():
    assert sr.latex((r"B^*", sr.critical_batch(sr.symbolic_chip()))) == r"B^* = \frac{C}{W}"
    assert sr.latex((B, r"\text{crit}")) == r"B = \text{crit}"
    assert sr.latex((D, 2 * B)) == "D = 2 B"


def test_chip_passes_a_chip_through():
    h100 = sr.chip("h100")
    assert sr.chip(h100) is h100 and sr.chip(sr.symbolic_chip()).name == "symbolic"


def test_the_symbolic_chip_is_made_of_the_tables_symbols():
    chip = sr.symbolic_chip()
    assert (chip.peak(), chip.hbm_bw, chip.link_bw, chip.hbm_bytes) == (C, W, W_net, M)
    assert sr.critical_batch(chip) == C / W
    assert all(s.is_positive and s.is_integer is None for s in (C, W, W_net, M))


def test_exact_roots_read_as_positive():
    root = sr.crossover(sr.matmul(B, D, F).intensity, C / W, B)  # B* for given D, F
    num, den = sp.fraction(root)
    assert not num.could_extract_minus_sign() and str(root) == "C*D*F/(-C*D - C*F + D*F*W)"
    assert sp.simplify(root - C * D * F / (D * F * W - C * D - C * F)) == 0
    assert sr.crossover(2 * B, D, B) == D / 2  # already positive: untouched
