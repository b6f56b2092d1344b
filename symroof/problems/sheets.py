"""Problem and solution sheets: LaTeX (and PDF, where pdflatex is on the PATH).

The problem sheet states each problem; the solution sheet states it again, then works it: the
derivation (the symbolic formula, then its value, in the handout's readable numbers with
units) and the answers. For seed 0, the book's own numbers, a solution also says what the
book answers and names its slips.

>>> from symroof.problems import problem_set
>>> tex = sheet_latex(problem_set("sharding"), "Sharding", solutions=False)
>>> tex.count(r"\\subsection*{Problem"), r"\\begin{align*}" in tex
(3, False)
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..prose import tex_text
from ..surfaces.handout import derivation_latex, handout_latex
from ..surfaces.notes import _preamble, compile_pdf
from .template import BOOK_SEED, Problem

__all__ = ["Sheets", "sheet_latex", "answers_latex", "build_problems"]


@dataclass(frozen=True)
class Sheets:
    """What :func:`build_problems` wrote: the two .tex files, their PDFs (``None`` where not
    compiled) and why not."""

    problems_tex: Path
    solutions_tex: Path
    problems_pdf: Path | None
    solutions_pdf: Path | None
    pdf_note: str = ""


def answers_latex(problem: Problem) -> str:
    """The answers of a solved problem, one readable number (with its unit) each.

    >>> from symroof.problems import problem_set
    >>> print(answers_latex(problem_set("rooflines")[0]))
    \\noindent\\textbf{Answer.} $B^* = 243$
    """
    shown = [f"${label} = {handout_latex(value, unit)}$"
             for label, (value, unit) in problem.answers.items()]
    return r"\noindent\textbf{Answer.} " + "; ".join(shown)


def _problem(i: int, p: Problem, solutions: bool) -> list[str]:
    t = p.template
    head = rf"\subsection*{{Problem {i}: {tex_text(t.title)}}}"
    lines = [head, tex_text(p.statement) + (r"\par" if solutions else "")]
    if not solutions:
        return lines + [""]
    worked = derivation_latex(p.solution).split("\n", 1)[1]  # its own title is the head's
    lines += [worked, answers_latex(p) + r"\par"]
    if p.seed == BOOK_SEED and t.book_note:
        source = f" ({t.source})" if t.source else ""
        lines.append(r"\noindent\emph{In the book" + tex_text(source) + ":} "
                     + tex_text(t.book_note.removeprefix("The book: ")) + r"\par")
    return lines + [""]


def sheet_latex(problems: list[Problem], title: str, *, solutions: bool,
                author: str = "", date: str | None = None) -> str:
    """The problem sheet (``solutions=False``) or the solution sheet of ``problems``."""
    if not problems:
        raise ValueError("no problems to write")
    seed = problems[0].seed
    numbers = "the book's numbers" if seed == BOOK_SEED else f"variant {seed}"
    full = f"{title}: {'solutions' if solutions else 'problems'} ({numbers})"
    body = [line for i, p in enumerate(problems, 1) for line in _problem(i, p, solutions)]
    head = _preamble(full, author, date, contents=False)
    return "\n".join([*head, *body, r"\end{document}", ""])


def build_problems(out: str | os.PathLike, problems: list[Problem], *, title: str,
                   pdf: bool = True, author: str = "", date: str | None = None,
                   stem: str = "problems") -> Sheets:
    """Write ``out/STEM.tex`` and ``out/STEM-solutions.tex`` and compile both when ``pdf``
    and pdflatex is on the PATH."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {str(out)!r} exists and is not a folder")
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for solutions, name in ((False, f"{stem}.tex"), (True, f"{stem}-solutions.tex")):
        path = out / name
        path.write_text(sheet_latex(problems, title, solutions=solutions, author=author,
                                    date=date), encoding="utf-8")
        paths.append(path)
    if not pdf:
        return Sheets(*paths, None, None, "PDF not requested")
    if shutil.which("pdflatex") is None:
        return Sheets(*paths, None, None, "pdflatex not on the PATH: compile the .tex yourself")
    return Sheets(*paths, *(compile_pdf(p, runs=1) for p in paths))
