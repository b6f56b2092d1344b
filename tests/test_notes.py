"""The lecture notes: the shipped derivations compile to a PDF with pdflatex, every kind of
published object renders, and broken scripts fail naming themselves.

A document that does not compile fails the suite. Where pdflatex is missing the compile tests
skip, except under CI (``CI`` set), where they fail: CI installs texlive-latex-base and
texlive-latex-recommended.
"""

import os
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from symroof.surfaces.notes import (
    LatexError,
    build_notes,
    compile_pdf,
    find_scripts,
    latex_item,
    notes_latex,
    run_script,
)

HAS_PDFLATEX = shutil.which("pdflatex") is not None
needs_pdflatex = pytest.mark.skipif(not HAS_PDFLATEX and not os.environ.get("CI"),
                                    reason="pdflatex is not on the PATH (CI installs it)")

DEMO = '''
"""Demo: every kind of item.

Claim: 2 × 3 ≈ 6 — and 50% of d_h & more; an emoji 🙂 has no glyph.
"""
import os
from pathlib import Path

import symroof as sr
from symroof.derivation import Derivation
from symroof.symbols import B, D, F

OUT = Path(os.environ.get("SYMROOF_OUT", "out"))
d = Derivation("Matmul", source="test")
d.step("intensity", r"\\text{AI}", sr.matmul(B, D, F).intensity)
d.claim("B << D gives B", sr.leading(sr.matmul(B, D, F).intensity, small=B) == B)
fig = OUT / "01_demo_share.png"
import symroof.plots
symroof.plots.attention_share_plot(["tiny"], contexts=[8, 64], path=fig)
from symroof.models.table import roofline_table
table = roofline_table(sr.model("tiny"), sr.chip("h100"), batch=2, new_tokens=1, cached=3,
                       title="tiny decode")
NOTES = [d, table, sr.check(sr.model("tiny"), batch=1, new_tokens=2), fig,
         (fig, "the same figure, captioned"), "A closing paragraph: 100% done."]
'''


def _write(folder: Path, name: str, source: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("demo")
    _write(tmp / "scripts", "01_demo.py", DEMO)
    # pdf=True either way: without pdflatex the notes say so instead of compiling
    return build_notes(tmp / "out", scripts=tmp / "scripts", pdf=True), tmp


@pytest.fixture(scope="module")
def shipped(derivations, cached_run_script):
    """build_notes on the shipped scripts, each run once for the session (conftest.py); the
    PDF where pdflatex is on the PATH."""
    if not find_scripts():
        pytest.skip("no derivation scripts in this tree yet")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("symroof.surfaces.notes.run_script", cached_run_script)
        return build_notes(derivations["out"], pdf=HAS_PDFLATEX)


@needs_pdflatex
def test_shipped_notes_compile(derivations, shipped):
    scripts = find_scripts()
    tmp_path = derivations["out"]  # where the session's runs put their figures
    notes = shipped
    assert notes.pdf is not None and notes.pdf.read_bytes().startswith(b"%PDF")
    tex = notes.tex.read_text(encoding="utf-8")
    assert tex.count(r"\section{") == len(scripts) == len(notes.sections)
    for figure in notes.figures:  # every figure is included, by a path inside the output
        assert figure.is_file() and figure.parent == tmp_path / "figures"
        assert f"{{figures/{figure.name}}}" in tex
    for package in ("amsmath", "booktabs", "graphicx"):
        assert package in tex
    pages = re.search(r"Output written on notes\.pdf \((\d+) page",
                      notes.tex.with_suffix(".log").read_text(errors="replace"))
    assert pages and int(pages.group(1)) > len(scripts)


def test_every_item_kind_renders(demo):
    notes, tmp = demo
    tex = notes.tex.read_text(encoding="utf-8")
    assert notes.sections == ["Demo: every kind of item"]
    assert r"\section{Demo: every kind of item}" in tex
    assert r"Claim: 2 × 3 ≈ 6 --- and 50\% of d\_h \& more" in tex  # declared, escaped
    assert r"\DeclareUnicodeCharacter{2248}{\ensuremath{\approx}}" in tex
    assert notes.replaced == ["🙂"] and "an emoji ? has no glyph" in tex
    order = [tex.index(s) for s in (r"\subsection*{Matmul}",
                                    r"\caption{tiny decode; conventions: symroof}",
                                    "Counted (NumPy) against symbolic", r"\caption{demo share}",
                                    r"\caption{the same figure, captioned}",
                                    "A closing paragraph: 100\\% done.")]
    assert order == sorted(order), "items appear in the order of NOTES"
    assert r"\includegraphics[width=0.85\linewidth]{figures/01_demo_share.png}" in tex
    assert r"\begin{table}[H]" in tex and r"\begin{figure}[H]" in tex
    assert r"\begin{table}[ht]" not in tex, "floats stay where the script put them"
    assert notes.figures == [tmp / "out" / "figures" / "01_demo_share.png"] * 2
    if HAS_PDFLATEX:
        assert notes.pdf == tmp / "out" / "notes.pdf" and notes.pdf.is_file()
    else:
        assert notes.pdf is None and "pdflatex" in notes.pdf_note


def test_scripts_run_with_symroof_out_and_restore_it(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMROOF_OUT", "elsewhere")
    script = _write(tmp_path, "01_env.py", '''
        """Env."""
        import os
        NOTES = [os.environ["SYMROOF_OUT"]]
        ''')
    title, intro, items = run_script(script, tmp_path / "figs")
    assert (title, intro, items) == ("Env", "", [str(tmp_path / "figs")])
    assert os.environ["SYMROOF_OUT"] == "elsewhere"


def test_find_scripts_sorted_and_filtered(tmp_path):
    for name in ("02_b.py", "01_a.py", "helper.py", "1_x.py", "03_c.txt"):
        _write(tmp_path, name, "NOTES = []\n")
    assert [p.name for p in find_scripts(tmp_path)] == ["01_a.py", "02_b.py"]
    assert all(p.name[:2].isdigit() for p in find_scripts())  # the shipped ones


@pytest.mark.parametrize("source, error, message", [
    ("x = 1\n", ValueError, "01_bad.py defines no NOTES list"),
    ("assert 1 == 2, 'the claim'\n", ValueError,
     "derivation 01_bad.py failed: AssertionError: the claim"),
    ("NOTES = [3.14]\n", TypeError, "cannot publish a float"),
    ("from pathlib import Path\nNOTES = [Path('plot.svg')]\n", ValueError, "not '.svg'"),
    ("from pathlib import Path\nNOTES = [Path('missing.png')]\n", ValueError,
     "'missing.png' does not exist"),
])
def test_broken_scripts_fail_naming_the_problem(tmp_path, source, error, message):
    _write(tmp_path / "s", "01_bad.py", source)
    with pytest.raises(error, match=re.escape(message)):
        build_notes(tmp_path / "out", scripts=tmp_path / "s", pdf=False)


def test_no_scripts(tmp_path):
    with pytest.raises(ValueError, match="no derivation scripts"):
        build_notes(tmp_path / "out", scripts=tmp_path, pdf=False)
    with pytest.raises(FileNotFoundError, match="derivations folder not found"):
        build_notes(tmp_path / "out", scripts=tmp_path / "nope", pdf=False)


@needs_pdflatex
def test_a_latex_error_names_the_line(tmp_path):
    tex, _ = notes_latex([("Broken", "", [])])
    path = tmp_path / "notes.tex"
    path.write_text(tex.replace(r"\end{document}", "\\undefinedmacro\n\\end{document}"))
    with pytest.raises(LatexError, match=r"notes\.tex:\d+: Undefined control sequence"):
        compile_pdf(path)


def test_latex_item_paragraph_and_figure_paths(tmp_path):
    assert latex_item("50% & d_h") == r"50\% \& d\_h"
    png = tmp_path / "sub" / "f.png"
    png.parent.mkdir()
    png.write_bytes(b"\x89PNG")
    assert "{sub/f.png}" in latex_item(png, base=tmp_path)
    assert f"{{{png.resolve().as_posix()}}}" in latex_item(png)  # outside any base: absolute


# -- the notes read as typeset prose ---------------------------------------------------------
# ASCII maths a reader must not meet in the prose of the notes (maths is typeset), as it reads
# once the escaping is undone; and exact fractions too long to read without their decimal.
# A Greek letter is maths ($\alpha$), a root is \sqrt, a multiplier or a product is \times:
# "1.5x", "8xH100" and "2 x 8192" are flagged, mesh shapes ("4x4", "16x20x28") are names.
GREEK = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "kappa",
         "lambda", "mu", "nu", "xi", "pi", "rho", "sigma", "tau", "phi", "chi", "psi", "omega")
ASCII_MATH = {"->": r"->", "<<": r"<<", "oo": r"\boo\b", "^T": r"\^T\b", "^2": r"\^\d",
              "_math": r"_math\b", "1.25e+03": r"\d\.?\d*e[+-]\d",
              "alpha": r"\b(?:" + "|".join(GREEK) + r")\b", "sqrt(": r"\bsqrt\(",
              "1.5x": r"(?<![\w.])\d+(?:\.\d+)?x(?![a-z\d]|\.\w)", "2 x 3": r"\d x \d"}
LONG_FRACTION = 12  # digits, numerator and denominator together


def _argument(tex: str, start: int) -> tuple[str, int]:
    """The brace-balanced argument opening at ``tex[start] == "{"``, and the index after it."""
    depth = 0
    for i in range(start, len(tex)):
        depth += {"{": 1, "}": -1}.get(tex[i], 0) if tex[i - 1] != "\\" else 0
        if depth == 0:
            return tex[start + 1:i], i + 1
    raise ValueError(f"unbalanced braces after {tex[start:start + 60]!r}")


def _texts(block: str, *commands: str) -> list[str]:
    """The arguments of every ``\\command{...}`` in ``block``."""
    out = []
    for m in re.finditer("|".join(re.escape("\\" + c) + r"\{" for c in commands), block):
        out.append(_argument(block, m.end() - 1)[0])
    return out


def prose(tex: str) -> str:
    """The text a reader reads as prose: displays reduced to their \\intertext and \\text
    parts, inline maths and \\texttt code dropped, text-mode escapes undone."""
    body = tex[tex.index(r"\begin{document}"):]
    body = re.sub(r"\\begin\{align\*\}(.*?)\\end\{align\*\}",
                  lambda m: "\n".join(_texts(m.group(1), "intertext", "text")), body,
                  flags=re.S)
    body = re.sub(r"\\includegraphics(\[[^]]*\])?\{[^}]*\}", "", body)
    while (code := body.find(r"\texttt{")) >= 0:  # code is code, not maths
        body = body[:code] + " CODE " + body[_argument(body, code + 7)[1]:]
    for escaped, plain in ((r"\ensuremath{<}", "<"), (r"\ensuremath{>}", ">"), (r"\_", "_"),
                           (r"\textasciicircum{}", "^"), (r"\$", "USD")):
        body = body.replace(escaped, plain)
    return re.sub(r"(?<!\\)\$.*?(?<!\\)\$", " MATH ", body, flags=re.S)


def ascii_maths(text: str) -> list[str]:
    """Each ASCII-maths pattern found in ``text``, with the words around it."""
    return [f"{name}: ...{text[max(0, m.start() - 50):m.end() + 30]}..."
            for name, pattern in ASCII_MATH.items() for m in re.finditer(pattern, text)]


def bare_fractions(tex: str) -> list[str]:
    """Exact fractions of more than LONG_FRACTION digits with no decimal beside them: an
    ``\\approx`` later in the same row of the display (or a decimal after a text one)."""
    found = []
    for m in re.finditer(r"\\frac\{(\d+)\}\{(\d+)\}", tex):
        if len(m[1]) + len(m[2]) > LONG_FRACTION:
            row = re.split(r"\\\\|\\end\{|&&|\$", tex[m.end():], maxsplit=1)[0]
            if r"\approx" not in row:
                found.append(tex[max(0, m.start() - 60):m.end() + 20])
    for m in re.finditer(r"(?<![\d.])(\d+)/(\d+)(?![\d.])", prose(tex)):
        if len(m[1]) + len(m[2]) > LONG_FRACTION and not re.match(r"\s*(\(|≈|~)", tex[m.end():]):
            found.append(m.group())
    return found


@pytest.mark.parametrize("text, found", [
    (r"\intertext{AI(dot) -\ensuremath{>} 1/2 as N -\ensuremath{>} oo}", ["->", "->", "oo"]),
    (r"prefill QK\textasciicircum{}T + PV, T\_math, 1.25e+03", ["^T", "_math", "1.25e+03"]),
    (r"\intertext{$\lim_{N \to \infty}$ and $QK^\top$} x &= \frac{1}{2} && \text{$B \ll D$}",
     []),
    (r"X < D/(2 alpha), beta = W/W\_ici; X\_opt = sqrt(2 B N / F), alphabet, Beta",
     ["alpha", "alpha", "sqrt("]),
    (r"1.5x on an axis of 4, 2x. An 8xH100 node, 6 x 16, v5e 4x4, 16x20x28, 0x1f, x7",
     ["1.5x", "1.5x", "1.5x", "2 x 3"]),
    (r"\intertext{$X < D/(2\alpha)$, $\sqrt{B}$, $1.5\times$ on a 4x4} B_{2\times} &= 3", []),
])
def test_the_prose_scanner(text, found):
    assert [f.split(":")[0] for f in ascii_maths(prose(r"\begin{document}" + text))] == found


def test_the_fraction_scanner():
    assert bare_fractions(r"\begin{document}$x = \frac{3191787744140625}{315795177472}$")
    assert not bare_fractions(r"\begin{document}\begin{align*}" "\n"
                              r"x &= \frac{3191787744140625}{315795177472} \approx 10107.1"
                              "\n" r"\end{align*}")


def test_shipped_notes_typeset_their_maths(shipped):
    """The notes' prose carries no ASCII maths (->, <<, oo, ^T, _math, 1.25e+03, Greek letters
    by name, sqrt(, 1.5x, 2 x 3) and no exact fraction of more than 12 digits without its
    decimal beside it; where pdftotext is installed the PDF's text is read as well."""
    tex = shipped.tex.read_text(encoding="utf-8")
    assert not ascii_maths(prose(tex)), "\n".join(ascii_maths(prose(tex)))
    assert not bare_fractions(tex), bare_fractions(tex)
    if shipped.pdf is not None and shutil.which("pdftotext"):
        text = subprocess.run(["pdftotext", "-layout", str(shipped.pdf), "-"],
                              capture_output=True, text=True, timeout=120).stdout
        text = text.replace("ˆ", "^")  # \textasciicircum as pdftotext writes it
        found = [f for f in ascii_maths(text) if not f.startswith("_math")]  # _ is lost
        assert not found, "\n".join(found)
