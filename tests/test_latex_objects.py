"""sr.latex() of every kind of object symroof makes compiles inside one amsmath document."""

import os
import shutil
import subprocess

import pytest

import symroof as sr
from symroof.derivation import Derivation
from symroof.render import document
from symroof.symbols import B, D, F, N

needs_pdflatex = pytest.mark.skipif(shutil.which("pdflatex") is None and not os.environ.get("CI"),
                                    reason="pdflatex is not on the PATH (CI installs it)")


def objects():
    h100, m = sr.chip("h100"), sr.model("llama-3.1-8b")
    d = Derivation("Matmul intensity_test & 50%", source="the book, ch. 1")
    d.step("bf16 X[B,D] @ W[D,F]", r"\text{AI}", sr.matmul(B, D, F).intensity, because="B << D")
    d.claim("B ~ 240 on v5e", True)
    return {
        "expression": sr.dot(N, exact=True).intensity,
        "equation": (sr.symbols.S, sr.ctx_star(sr.Transformer())),
        "cost": sr.matmul(B, D, F, w_bytes=1),
        "time bound": sr.time(sr.matmul(B, D, F), sr.symbolic_chip()),
        "derivation": d,
        "table": sr.roofline_table(m, h100, batch=8, new_tokens=1, cached=127, groups=True),
        "step time": sr.step_time(m, h100, 8, 1, 127),
        "check report": sr.check(sr.model("tiny"), 1, 3, 2),
    }


def test_latex_refuses_objects_without_a_form():
    with pytest.raises(TypeError, match="no LaTeX form for Chip"):
        sr.latex(sr.chip("h100"))


@needs_pdflatex
def test_every_latex_form_compiles(tmp_path):
    parts = []
    for name, obj in objects().items():
        body = sr.latex(obj)
        inline = not body.lstrip().startswith(("\\begin{tabular}", "\\begin{table}",
                                               "\\subsection"))
        parts.append(f"\\paragraph{{{name}}}\n" + (f"\\[ {body} \\]" if inline else body))
    (tmp_path / "all.tex").write_text(document("\n\n".join(parts)))
    run = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "all.tex"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-2000:]
