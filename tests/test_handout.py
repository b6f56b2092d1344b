"""The students' edition of the notes (``symroof notes --audience students``): no internal
references, short claims, readable numbers with units; and the options a lecturer sets.

The scans below read the LaTeX with their own patterns, not the ones the handout filters
with. Where pdflatex is missing the compile test skips, except under CI (``CI`` set), where
it fails, as the teacher's notes tests do.
"""

import os
import re
import shutil

import pytest
from student_scan import student_defects

from symroof.surfaces.handout import for_students, short_claim, unit_of
from symroof.surfaces.notes import build_notes, find_scripts

HAS_PDFLATEX = shutil.which("pdflatex") is not None
needs_pdflatex = pytest.mark.skipif(not HAS_PDFLATEX and not os.environ.get("CI"),
                                    reason="pdflatex is not on the PATH (CI installs it)")

#: what a student must never meet: the seed lectures, errata, commits, revisions, files
INTERNAL = {"seed": r"\bseed\b", "erratum": r"(?i)errat", "revision": r"\brevision",
            "commit hash": r"\b(?=\w*\d)(?=\w*[a-f])[0-9a-f]{7}\b", "file": r"\.(?:py|md)\b",
            "course code": r"CS349", "commit": r"\bcommit",
            "another section": r"\bderivations? \d"}


@pytest.fixture(scope="module")
def handout(derivations, cached_run_script, tmp_path_factory):
    if not find_scripts():
        pytest.skip("no derivation scripts in this tree yet")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("symroof.surfaces.notes.run_script", cached_run_script)
        notes = build_notes(tmp_path_factory.mktemp("handout"), pdf=False,
                            audience="students", title="Scaling, week 3",
                            author="A. Lecturer", date="Spring 2027")
    return notes, notes.tex.read_text(encoding="utf-8")


def test_prose_loses_its_internal_references():
    text = ("The ridge is 240 (seed 000). The revision at 04d8de5 says 241. It holds "
            "for $B > 240$. Erratum: the book writes 241.")
    assert for_students(text) == "The ridge is 240. It holds for $B > 240$."
    # maths is never cut, even when it holds a full stop or a bracket
    assert for_students("Take $f(x) = 1. (a)$ as given (the seed's).") == \
        "Take $f(x) = 1. (a)$ as given."
    assert short_claim("about 298 with 1e15 (298.5, as printed)") == "about 298 with 1e15"
    assert (unit_of(r"T_\text{math}"), unit_of(r"t_\text{MLP}"), unit_of("T(1)")) == \
        ("s", "s", "s")
    assert (unit_of(r"T / \text{days}"), unit_of(r"T^*_\text{prefill}"), unit_of("B^*")) == \
        ("", "", "")
    # a step about an internal reference goes whole; a title that empties keeps its head
    from symroof.derivation import Derivation
    from symroof.surfaces.handout import derivation_latex
    d = Derivation("Adam: the book's 10 bytes")
    d.step("lecture 1: the seed's count", "N", 2)
    d.step("the count", "K", 3)
    assert derivation_latex(d).splitlines() == [
        r"\subsection*{Adam}", r"\begin{align*}", r"\intertext{the count}", "K &= 3",
        r"\end{align*}"]


def test_handout_has_no_internal_reference(handout):
    _, tex = handout
    body = tex[tex.index(r"\begin{document}"):]
    found = {name: re.findall(r".{0,40}" + pattern + r".{0,40}", body)[:3]
             for name, pattern in INTERNAL.items() if re.search(pattern, body)}
    assert not found, found
    # the lecturer's title page, and no teacher's apparatus
    assert r"\title{Scaling, week 3}" in tex and r"\author{A. Lecturer}" in tex
    assert r"\date{Spring 2027}" in tex and r"\emph{Source:" not in tex
    assert r"\item[\checkmark]" not in tex  # no decimal beside an exact value either:
    assert not [row for row in _rows(tex) if r"\approx" in row[1]]


def _align_bodies(tex: str) -> str:
    return "\n".join(re.findall(r"\\begin\{align\*\}(.*?)\\end\{align\*\}", tex, re.S))


def _value(side: str) -> str:
    """A row's value without the note printed beside it (a qquad and a parenthesis)."""
    return side.split(r" \qquad \text{(")[0].split("&&")[0].strip()


def _rows(tex: str) -> list[tuple[str, str]]:
    """(left side, last value) of every row of every align* block."""
    rows = []
    blocks = re.findall(r"\\begin\{align\*\}(.*?)\\end\{align\*\}", tex, re.S)
    for row in (r for block in blocks for r in re.split(r" \\\\\n", block)):
        row = re.sub(r"\\intertext\{.*\}\n", "", row).strip()
        if "&=" in row:
            parts = row.split("&=")
            rows.append((parts[0].strip(), _value(parts[-1])))
    return rows


NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?: \\times 10\^\{-?\d+\})?")


def test_every_figure_of_the_handout_keeps_a_caption(handout):
    """A caption whose every sentence cites something internal comes out empty: none does."""
    _, tex = handout
    assert tex.count(r"\includegraphics") >= 5 and r"\caption{}" not in tex


def test_handout_numbers_are_short_and_carry_units(handout):
    _, tex = handout
    fractions = [(a, b) for a, b in re.findall(r"\\frac\{(\d+)\}\{(\d+)\}", tex)
                 if len(a) + len(b) > 6]
    assert not fractions, fractions
    times = 0
    for lhs, value in _rows(tex):
        m = NUMBER.fullmatch(value.split(r"\,")[0])
        if m is None:
            continue
        mantissa = m.group().split(" ")[0].lstrip("-")
        if "." in mantissa:  # a decimal: 3 significant figures
            assert len(mantissa.replace(".", "").lstrip("0")) <= 3, (lhs, value)
        if re.match(r"[Tt](_|\()", lhs) and "/" not in lhs:  # a time: its unit is shown
            times += 1
            assert re.search(r"\\mathrm\{[a-z]?s\}", value), (lhs, value)
    assert times >= 3  # the scan saw the notes' times
    # a value the statement gives in a unit, "attention core (ms)", is shown in that unit
    stated = []
    blocks = re.findall(r"\\begin\{align\*\}(.*?)\\end\{align\*\}", tex, re.S)
    for row in (r for block in blocks for r in re.split(r" \\\\\n", block)):
        said = re.search(r"\\intertext\{.*\((ms|s)\)\}\n", row)
        if said and "&=" in row:
            stated.append((said.group(1), _value(row.split("&=")[-1])))
    assert len(stated) >= 5 and all(v.endswith(rf"\mathrm{{{u}}}") for u, v in stated), stated


@needs_pdflatex
def test_handout_compiles(derivations, cached_run_script, tmp_path):
    # chapter 1 keeps the test short; the whole handout's LaTeX is scanned above
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("symroof.surfaces.notes.run_script", cached_run_script)
        notes = build_notes(tmp_path, pdf=True, audience="students", chapters=[1])
    assert notes.pdf is not None and notes.pdf.stat().st_size > 0, notes.pdf_note


def test_chapters_select_scripts(cli, tmp_path, derivations, cached_run_script, monkeypatch):
    monkeypatch.setattr("symroof.surfaces.notes.run_script", cached_run_script)
    r = cli(["notes", "--out", str(tmp_path), "--no-pdf", "--audience", "students",
             "--chapters", "1"])
    assert r.returncode == 0, r.stderr
    tex = (tmp_path / "notes.tex").read_text(encoding="utf-8")
    assert tex.count(r"\section{") == 1 and r"\section{Rooflines" in tex
    assert r"\date{\today}" in tex and r"\author{}" in tex
    bad = cli(["notes", "--out", str(tmp_path), "--no-pdf", "--chapters", "99"])
    assert bad.returncode == 2 and "--chapters 99: no chapter 99; the chapters are 1 (rooflines)" \
        in bad.stderr
    assert "--chapters 'one'" in cli(["notes", "--chapters", "one"]).stderr


def _training_report(derivations):
    return derivations["runs"]["05_training.py"].ok()["checks"]["none"]


def test_the_training_table_is_summed_by_pass_and_block(derivations):
    """The students' training table sums the same rows the teacher's lists: every group,
    each pass and the whole step add up exactly to the rows (the prefixes read here with
    the test's own rule), and no op's row is printed."""
    from symroof.models.check import QUANTITIES
    from symroof.surfaces.handout import grouped_rows
    from symroof.surfaces.notes import latex_item

    report = _training_report(derivations)
    rows, groups = report.counted, grouped_rows(report)
    assert len(rows) > 60 and sum(g["ops"] for g in groups.values()) == len(rows)
    for q in QUANTITIES:
        assert sum(g[q] for g in groups.values()) == sum(r[q] for r in rows.values())
        for prefix, name in (("fwd/", "forward"), ("bwd/", "backward"), ("saved/", "kept"),
                             ("optimizer/", "optimizer")):
            assert sum(g[q] for k, g in groups.items() if k.startswith(name + "/")) == \
                sum(r[q] for k, r in rows.items() if k.startswith(prefix)), (q, name)
    mlp = [k for k in rows if re.match(r"bwd/mlp[/_]", k)]  # the MLP's backward, norm too
    assert groups["backward/MLP"]["flops"] == sum(rows[k]["flops"] for k in mlp)
    assert groups["backward/MLP"]["ops"] == len(mlp) == 10
    students, teacher = latex_item(report, audience="students"), latex_item(report)
    assert "bwd/" not in students and "teacher's edition lists all" in students
    assert all(op.replace("_", r"\_") in teacher for op in rows)  # the teacher keeps them
    # the step's total row shows the sum of every pass's FLOPs, kept tensors aside
    step_flops = sum(r["flops"] for k, r in rows.items() if not k.startswith("saved/"))
    total = next(line for line in students.splitlines() if line.startswith("step & total"))
    mantissa = float(re.search(r"\$([\d.]+)\\,\\mathrm\{MFLOP\}\$", total).group(1))
    assert abs(mantissa * 1e6 - step_flops) <= 0.005 * step_flops, (total, step_flops)


#: a code-style name as LaTeX prints it in text: words joined by escaped underscores
SNAKE = re.compile(r"[A-Za-z]+(?:\\_[A-Za-z0-9]+)+")


def _conventions_section(tex: str) -> str:
    start = tex.index(r"\section{Conventions")
    end = tex.find(r"\section{", start + 1)
    return tex[start:end if end > 0 else None]


def test_the_conventions_section_says_its_fields_in_words(handout, derivations,
                                                          cached_run_script):
    """No code-style name (``attention\\_pairs``, ``lm\\_head``) in the students' conventions
    section: each field is its label; the teacher's edition keeps the code names."""
    from symroof.conventions import FIELDS, LABELS
    from symroof.surfaces.notes import notes_latex

    assert set(LABELS) == set(FIELDS)  # every field has its words, and no other name does
    assert not [label for label in LABELS.values() if "_" in label]
    students = _conventions_section(handout[1])
    assert not SNAKE.findall(students), SNAKE.findall(students)
    # the labels the section's statements name (LLM-Viewer's and llm-analysis's fields)
    assert all(LABELS[f] in students for f in ("lm_head_flops_per_mac", "attention_pairs",
                                               "softmax_flops", "fused_core"))
    # the per-op sums its statements give "in milliseconds" carry the unit
    sums = re.findall(r"t_\\text\{(?:decode|prefill)\} &= (.*?) \\\\\n", students)
    assert len(sums) == 2 and all(v.endswith(r"\end{matrix}\right]\,\mathrm{ms}") for v in sums)
    # nor in any caption of the handout (a check table's "lm_head on the last position")
    assert not [c for c in re.findall(r"\\caption\{.*\}", handout[1]) if SNAKE.search(c)]
    teacher, _ = notes_latex([cached_run_script(p, derivations["figures"])
                              for p in find_scripts() if p.name.startswith("07_")])
    assert {"attention\\_pairs", "lm\\_head\\_flops\\_per\\_mac"} <= \
        set(SNAKE.findall(_conventions_section(teacher)))


# -- one scan of everything a student reads: the handout and two seeds' problem sheets ------
def test_what_students_read_is_clean(handout):
    """The scan finds each defect it looks for in a planted document, then none in the
    handout or in the problem and solution sheets of two seeds (every chapter)."""
    from symroof.problems import problem_set
    from symroof.problems.sheets import sheet_latex

    planted = "\n".join([
        r"\begin{document}", r"a time of $\frac{128}{241455078125}$ at step\_time, see",
        r"attn/q\_proj (seed 003, commit 0819a7d, roofline.py) and \texttt{x};",
        "llama-3.1-8b on a tpu-v5e", r"\begin{align*}", r"\intertext{the time}",
        r"T_\text{math} &= 0.00101 \\", r"\intertext{the shares (\%)}",
        r"\text{share} &= \left( 12.34, 5\right) \\", r"C / W &= 240", r"\end{align*}",
        r"\noindent\textbf{Answer.} $M = 7.2$\par", r"\subsection*{}"])
    found = student_defects(planted)
    for defect in ("fraction 128/241455078125", "snake_case: 'step\\\\_time'", "row key",
                   "seed", "commit hash", "file", "typewriter", "model identifier",
                   "chip identifier", r"no unit: T_\text{math} = 0.00101",
                   r"more than 3 figures: \text{share}", r"no unit: \text{share}",
                   "no unit: C / W", "no unit: M = 7.2", "a heading with no words"):
        assert any(f.startswith(defect) for f in found), (defect, found)
    documents = {"handout": handout[1]}
    for seed in (2027, 31):
        problems = problem_set("all", seed)
        for solutions in (False, True):
            documents[f"seed {seed}, solutions={solutions}"] = sheet_latex(
                problems, "Course", solutions=solutions)
    defects = {name: student_defects(tex) for name, tex in documents.items()}
    assert not any(defects.values()), defects


def test_every_row_key_has_words():
    """Every part of every preset's row keys, inference and training (each remat policy),
    has its words: no row reaches a student as a code name."""
    import symroof as sr
    from symroof.models.presets import MODELS
    from symroof.models.training import train_ops
    from symroof.surfaces.handout import PASSES, ROW_WORDS, row_words

    keys = {k for n in MODELS for k in sr.model(n).ops(1, 1, 7)}
    keys |= {k for n in MODELS for remat in ("none", "selective", "full")
             for k in train_ops(sr.model(n), 2, 8, remat)}
    missing = {p for k in keys for p in k.split("/") if p not in ROW_WORDS and p not in PASSES}
    assert len(keys) > 150 and not missing, missing
    assert not [k for k in keys if "_" in row_words(k)]
    # the words as a student reads them (MLA's, a training row's, a shared expert's)
    assert row_words("attn/kv_a_proj") == "attention: KV down-projection"
    assert row_words("bwd/attn/q_proj/dx") == "backward, attention: Q projection, input gradient"
    assert row_words("recompute/moe/shared/up") == "recompute, MoE shared expert: up projection"


def test_a_quantity_over_its_unit_reads_as_the_quantity_with_its_unit():
    """``T / \\mu\\text{s} = 23.3`` is ``T = 23.3 µs`` in the handout (a single number with
    its SI prefix, a row of them with the unit written once); a formula keeps its left side."""
    import sympy as sp

    from symroof.derivation import Derivation
    from symroof.surfaces.handout import derivation_latex
    from symroof.symbols import C

    d = Derivation("Units")
    d.step("a gather", r"T_\text{AG} / \mu\text{s}", sp.Float(23.3, 3))
    d.step("a pod", r"M_\text{pod} / \text{TB}", 860)
    d.step("a prefill", r"T / \text{s}", sp.Rational(917, 1000))
    d.step("levels", r"W / (\text{GB/s})", sp.ImmutableMatrix([[514, 413]]))
    d.step("a run", r"T / \text{days}", sp.Float(44.7, 3))
    d.step("a formula", r"T / \text{s}", 10**12 / C)
    d.step("latency-bound below (bytes)", "V^*_8", 360000)  # a unit the statement states
    d.step("the A100's units", r"C^\text{A100}", 312 * 10**12)  # a peak, read off its letter
    rows = [r.split(r" \\")[0] for r in derivation_latex(d).splitlines() if "&=" in r]
    assert rows == [r"T_\text{AG} &= 23.3\,\mu\mathrm{s}", r"M_\text{pod} &= 860\,\mathrm{TB}",
                    r"T &= 917\,\mathrm{ms}",
                    r"W &= \left[\begin{matrix}514 & 413\end{matrix}\right]\,\mathrm{GB/s}",
                    r"T &= 44.7\,\mathrm{days}", r"T / \text{s} &= \frac{10^{12}}{C}",
                    r"V^*_8 &= 360\,\mathrm{kB}", r"C^\text{A100} &= 312\,\mathrm{TFLOP/s}"]


def test_a_roofline_table_names_its_rows_in_words_for_students():
    """Each row of an op-by-op roofline table, the bottleneck it names and the notes under it
    in words for the students; the teacher's edition keeps the row keys."""
    import symroof as sr
    from symroof.surfaces.notes import latex_item

    table = sr.roofline_table(sr.model("llama-3.1-8b"), sr.chip("h100"), sr.Step(1, context=64))
    students, teacher = latex_item(table, audience="students"), latex_item(table)
    assert "\nattention: Q projection & " in students and "\nLM head & " in students
    assert "LM head on the last position" in students or "LM head on every position" in students
    assert not re.findall(r".{30}(?:\\_|attn/|mlp/).{30}", students)
    assert "\nattn/q\\_proj & " in teacher and "lm\\_head on" in teacher
