"""Problem sets: every template's solution for seed 0 against the book's printed answer,
every seed's problems well-posed with their solutions holding, the sheets, the teacher's API.

The book's answers are pinned from "How to Scale Your Model" (jax-ml/scaling-book) at commit
0819a7d: roofline.md (ch. 1), tpus.md (ch. 2), sharding.md (ch. 3), transformers.md (ch. 4),
training.md (ch. 5), applied-inference.md (ch. 8); gpus.md (ch. 12) at 1a55377.
"""

import os
import re
import shutil

import pytest
import sympy as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from student_scan import student_defects

import symroof as sr
from symroof.problems import CHAPTERS, TEMPLATES, Problem, Template, problem_set
from symroof.problems.sheets import build_problems, sheet_latex
from symroof.symbols import B, D, F

HAS_PDFLATEX = shutil.which("pdflatex") is not None
needs_pdflatex = pytest.mark.skipif(not HAS_PDFLATEX and not os.environ.get("CI"),
                                    reason="pdflatex is not on the PATH (CI installs it)")


def answers(chapter: str, name: str) -> dict:
    (p,) = [p for p in problem_set(chapter) if p.template.name == name]
    return {label: value for label, (value, _) in p.answers.items()}


def test_rooflines_book_answers():
    # ch. 1 question 1: "3.94e14 / 8.1e11 = 486, so the rule is B > 486 / 2 = 243"
    assert int(answers("rooflines", "int8-matmul")["B^*"]) == 243
    # ch. 1 problem 5: "1e15 / 3.35e12 = 298"; the sheet's exact half, 989.5e12, gives 295.4
    b = answers("rooflines", "gpu-critical-batch")["B^*"]
    assert round(float(b), 1) == 295.4 and int(sp.Rational(10**15, 335 * 10**10)) == 298


def test_tpus_book_answers():
    # ch. 2 question 1: 400e9 bytes on 32 chips "takes around 10ms" (at 1.23e12 B/s: 10.2)
    t = answers("tpus", "decode-latency")[r"T_\text{load}"]
    assert t == sp.Rational(400 * 10**9, 32 * 12 * 10**11) and round(float(t) * 1e3) == 10
    # ch. 2 question 4: "B > 271" from the rounded (6.7e7 + 2e4 B)/8.1e11 = 1.3e8 B/3.94e14;
    # the exact sizes, 2 * 4096 * 16384 OPs a row, give 263
    b = answers("tpus", "matmul-latency")["B^*"]
    b_ = sp.Symbol("b", positive=True)  # a real root: B itself is an integer symbol
    book = sp.solve(sp.Eq((67 * 10**6 + 2 * 10**4 * b_) / (81 * 10**10),
                          13 * 10**7 * b_ / (394 * 10**12)), b_)[0]
    assert round(float(b)) == 263 and round(float(book)) == 271  # 270.97


def test_sharding_book_answers():
    # ch. 3 question 1: "the ratio ... is Y * Z = 16"
    assert answers("sharding", "replication")[r"\text{total} / \text{copy}"] == 16
    # ch. 3 question 2: "2 * 1024 * 4096 / (9e10 * 4) = 23 us" and "46us"
    a = answers("sharding", "allgather")
    assert round(float(a[r"T_\text{AG}^X"]) * 1e6, 1) == 23.3
    assert round(float(a[r"T_\text{AG}^{XY}"]) * 1e6, 1) == 46.6
    # ch. 3 question 3: "we can do the full gather in only 2 hops, so roughly 2us"
    assert answers("sharding", "latency-bound")[r"T_\text{AG}"] == sp.Rational(2, 10**6)


def test_transformers_book_answers():
    # ch. 4 question 1: "16e9 ... 16B parameters" from 4e3 and 16e3 for D and F; the exact
    # count (two norms a layer included) is 17.4e9; "512kB / token" is 2 * 64 * 4096 bytes
    a = answers("transformers", "parameters")
    rounded = 64 * (3 * 4000 * 16000 + 4 * 4000 * 4000 + 4000) + 2 * 4000 * 32000
    assert round(float(a["P"]) / 1e9, 1) == 17.4 and int(rounded / 1e9) == 16
    assert a[r"\text{KV}_\text{tok}"] == 512 * 1024
    # ch. 4 question 2: 2BDF * Z in all, 2BDF / (XY) on each chip, X, Y, Z = 4, 8, 4
    a = answers("transformers", "sharded-flops")
    assert a[r"\text{FLOPs}"] == 2 * B * D * F * 4
    assert a[r"\text{FLOPs}_\text{chip}"] == 2 * B * D * F / (4 * 8)


def test_training_book_answers():
    # ch. 5 question 1: "8.5e9 + 4.2e9 + 0.39e9 = 13.1e9" (rounded terms; 13.0e9 exactly)
    assert round(float(answers("training", "parameters")["P"]) / 1e9, 1) == 13.0
    # ch. 5 question 2: "(2 + 4 + 4) * 13e9 ~ 130GB", more than a v5p's 96 GB
    a = answers("training", "adam-memory")
    assert round(float(a[r"M_\text{state}"]) / 1e9) == 130 and a[r"N_\text{min}"] == 2


def test_inference_book_answers():
    # ch. 8: "2 * 8 * 128 * 80 = 160kB"; "41.9e9 + 70e9 = 112GB"; "112e9 / 16e9 = 7 TPUs ...
    # TPU v5e 4x2"; exactly 113.5 GB, 7.1 chips' worth: 8, the same 4x2
    a = answers("inference", "kv-memory")
    assert a[r"\text{KV}_\text{tok}"] == 2 * 8 * 128 * 80
    assert round(float(a["M"]) / 1e9, 1) == 113.5 and a[r"N_\text{min}"] == 4 * 2
    # ch. 8: bf16 "240", int8 weights "B > 120", int8 weights and FLOPs "about B > 240"
    a = answers("inference", "critical-batches")
    assert [int(a[rf"B^*_\text{{{k}}}"]) for k in ("bf16", "w8", "int8")] == [240, 120, 240]


def test_gpus_book_answers():
    # ch. 12: C / W_GPU = 990e12 / 450e9 = 2200 in a node, C / W_node = 990e12 / 400e9 = 2475
    a = answers("gpus", "dp-tokens")
    assert (a[r"(B/X)^*_\text{node}"], a[r"(B/X)^*_\text{pod}"]) == (2200, 2475)
    # ch. 12: TP in a node up to F / 2200, 13 for LLaMA-3-70B's F = 28672
    assert round(float(answers("gpus", "tp-width")["Y^*"]), 1) == 13.0


def test_every_template_is_pinned_by_a_book_test():
    assert len(TEMPLATES) == 15 and CHAPTERS == (
        "rooflines", "tpus", "sharding", "transformers", "training", "inference", "gpus")
    assert all(sum(t.chapter == c for t in TEMPLATES) >= 2 for c in CHAPTERS)


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda t: f"{t.chapter}/{t.name}")
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(min_value=1, max_value=10**6))
def test_every_seed_gives_a_well_posed_problem(template, seed):
    p = Problem(template, seed)
    p.check()  # the statement fills, every claim holds, every answer is finite and positive
    assert p.params == Problem(template, seed).params  # a seed always draws the same
    for value, unit in p.answers.values():  # the answers print readable, with their units
        shown = sr.latex(value, unit=unit)
        assert not re.search(r"\\frac\{\d{4,}\}", shown), shown
    # and its solution sheet reads cleanly: short numbers with units, no code names
    assert not student_defects(sheet_latex([p], "Course", solutions=True))


def test_teacher_templates():
    def solve(p, d):
        chip = sr.chip(p["chip"])
        t = d.step("the weights read once", r"T", sp.Integer(p["P"]) * 2 / chip.hbm_bw)
        d.claim("a positive time", t > 0)
        return {"T": (t, "s")}

    mine = Template("mine", "read-weights", "Reading the weights",
                    "How long does a {chip} take to read {P} bf16 parameters?", solve,
                    {"chip": "h100", "P": 8 * 10**9},
                    draw=lambda rng: {"chip": rng.choice(["b200", "tpu-v5p"])})
    (p,) = problem_set("mine", 0, templates=[mine])
    assert p.statement == "How long does an H100 take to read 8e9 bf16 parameters?"
    assert p.answers["T"][0] == sp.Rational(16 * 10**9, 335 * 10**10)  # 4.78 ms
    tex = sheet_latex(problem_set("mine", 7, templates=[mine]), "Mine", solutions=True)
    assert r"\textbf{Answer.} $T = " in tex and "(variant 7)" in tex
    with pytest.raises(ValueError, match="placeholders chip have no value"):
        Template("mine", "x", "X", "a {chip}", solve, {})
    with pytest.raises(ValueError, match="--chapter 'nope'"):
        problem_set("nope")


@needs_pdflatex
@pytest.mark.parametrize("seed", [0, 2027])
def test_sheets_compile_and_read_cleanly(tmp_path, seed):
    sheets = build_problems(tmp_path, problem_set("sharding", seed), title="Sharding")
    assert sheets.problems_pdf.stat().st_size > 0 and sheets.solutions_pdf.stat().st_size > 0
    tex = sheets.solutions_tex.read_text(encoding="utf-8")
    assert not re.search(r"\\frac\{\d+\}\{\d+\}", tex.replace(r"\frac{1}", ""))
    assert not re.search(r"\bseed \d{3}\b|(?i:errat)|\b[0-9a-f]{7}\b", tex)
    assert ("In the book" in tex) == (seed == 0)


def test_cli_writes_both_sheets(cli, tmp_path):
    r = cli(["problems", "--chapter", "sharding", "--seed", "2027", "--out", str(tmp_path),
             "--no-pdf"])
    assert r.returncode == 0, r.stderr
    assert "3 problem(s), seed 2027" in r.stdout
    assert (tmp_path / "sharding-2027.tex").is_file()
    assert (tmp_path / "sharding-2027-solutions.tex").is_file()
    bad = cli(["problems", "--seed", "x"])
    assert bad.returncode == 2 and "--seed 'x': a whole number" in bad.stderr
