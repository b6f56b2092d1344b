"""Lecture notes: every derivation script, with its tables and figures, as one LaTeX document.

Each script ``derivations/NN_name.py`` (shipped as :mod:`symroof.derivations`) is run with
``runpy`` under ``run_name="symroof.surfaces.notes"`` and ``SYMROOF_OUT`` pointing at the figures
folder; it asserts its claims and leaves a list ``NOTES`` of what to publish, in order:
``Derivation``, ``RooflineTable``, ``CheckReport``, a ``pathlib.Path`` to a PNG figure (or a
``(Path, caption)`` pair), or a plain ``str`` paragraph. Each script becomes a
``\\section`` titled by its docstring's first line. :func:`build_notes` writes ``notes.tex``
and, when ``pdflatex`` is on the PATH, compiles it (twice, for the table of contents).

Prose (the docstring, str paragraphs, captions) goes through
:func:`symroof.prose.tex_text`: ``$...$`` is inline maths, the rest is escaped, quotes
are typographic.

>>> import symroof as sr
>>> print(latex_item(sr.check(sr.model("tiny"), batch=1, new_tokens=2)).splitlines()[-1])
\\noindent all equal: counted $=$ symbolic for every op and quantity\\par
>>> print(latex_item(r'A "quoted" $B \\ll D$, 50%'))
A ``quoted'' $B \\ll D$, 50\\%
"""

from __future__ import annotations

import importlib.resources
import os
import re
import runpy
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..derivation import Derivation
from ..models.check import QUANTITIES, CheckReport
from ..models.table import RooflineTable
from ..prose import tex_escape, tex_text
from .handout import derivation_latex, for_students, grouped_latex, in_words, row_words

__all__ = ["Notes", "LatexError", "AUDIENCES", "find_scripts", "run_script", "load_script",
           "section", "latex_item", "notes_latex", "select_chapters", "build_notes",
           "compile_pdf"]

SCRIPT = re.compile(r"^[0-9][0-9]_.*\.py$")
FIGURE_SUFFIXES = (".png", ".pdf", ".jpg", ".jpeg")
LONG_TABLE = 40  # rows: a check report longer than this is a longtable, not a float
#: Unicode that scripts use in prose, declared for pdflatex (utf8 input, OT1 fonts).
UNICODE = {"≈": r"\approx", "≤": r"\leq", "≥": r"\geq", "≪": r"\ll", "≫": r"\gg",
           "×": r"\times", "·": r"\cdot", "→": r"\to", "←": r"\leftarrow", "⇒": r"\Rightarrow",
           "∞": r"\infty", "±": r"\pm", "−": "-", "≠": r"\neq", "∝": r"\propto", "∼": r"\sim",
           "∈": r"\in", "√": r"\surd", "∑": r"\sum", "′": r"'", "α": r"\alpha", "β": r"\beta",
           "γ": r"\gamma", "δ": r"\delta", "ε": r"\varepsilon", "θ": r"\theta",
           "λ": r"\lambda", "μ": r"\mu", "µ": r"\mu", "π": r"\pi", "σ": r"\sigma",
           "τ": r"\tau", "φ": r"\phi", "ω": r"\omega", "Δ": r"\Delta", "Σ": r"\Sigma",
           "✓": r"\checkmark", "✗": r"\times", "²": r"^2", "³": r"^3", "½": r"\frac12"}
_TEXT_UNICODE = {"–": "--", "—": "---", "…": r"\ldots{}", "‘": "`", "’": "'", "“": "``",
                 "”": "''", "\u00a0": "~"}


class LatexError(RuntimeError):
    """pdflatex failed; the message names the first error and the line of notes.tex."""


@dataclass(frozen=True)
class Notes:
    """What :func:`build_notes` made: the .tex, the PDF (``None`` if not compiled) and why."""

    tex: Path
    pdf: Path | None
    sections: list[str]
    figures: list[Path]
    pdf_note: str = ""
    replaced: list[str] = field(default_factory=list)


def _shipped() -> Path:
    checkout = Path(__file__).resolve().parent.parent.parent / "derivations"
    if (checkout / "__init__.py").is_file():  # a source checkout: its own scripts, even when
        return checkout  # another checkout is the one installed as symroof.derivations
    try:
        return Path(str(importlib.resources.files("symroof.derivations")))
    except ModuleNotFoundError:  # a source checkout that is not installed
        return Path(__file__).resolve().parent.parent / "derivations"


def find_scripts(folder: str | os.PathLike | None = None) -> list[Path]:
    """The derivation scripts (``NN_name.py``) in ``folder`` (default: the shipped ones),
    sorted by name.

    >>> all(p.name[:2].isdigit() for p in find_scripts())
    True
    """
    root = _shipped() if folder is None else Path(folder)
    if not root.is_dir():
        raise FileNotFoundError(f"derivations folder not found: {str(root)!r}")
    return sorted(p for p in root.iterdir() if SCRIPT.match(p.name) and p.is_file())


def run_script(path: str | os.PathLike, figures: str | os.PathLike) -> tuple[str, str, list]:
    """Run one script with ``SYMROOF_OUT=figures``; return (title, introduction, NOTES).

    The title is the docstring's first line (else the file name); the introduction is the
    rest of the docstring. A failing claim raises ``ValueError`` naming the script.
    """
    return section(path, load_script(path, figures))


def load_script(path: str | os.PathLike, figures: str | os.PathLike) -> dict[str, Any]:
    """Run one script as the notes do (``SYMROOF_OUT=figures``, restored afterwards) and
    return its namespace; a failure raises ``ValueError`` naming the script."""
    path, figures = Path(path), Path(figures)
    figures.mkdir(parents=True, exist_ok=True)
    before = os.environ.get("SYMROOF_OUT")
    os.environ["SYMROOF_OUT"] = str(figures)
    try:
        namespace = runpy.run_path(str(path), run_name="symroof.surfaces.notes")
    except Exception as err:
        raise ValueError(f"derivation {path.name} failed: {type(err).__name__}: {err}") from err
    finally:
        if before is None:
            os.environ.pop("SYMROOF_OUT", None)
        else:
            os.environ["SYMROOF_OUT"] = before
        if "matplotlib.pyplot" in sys.modules:
            sys.modules["matplotlib.pyplot"].close("all")
    return namespace


def section(path: str | os.PathLike, namespace: dict[str, Any]) -> tuple[str, str, list]:
    """(title, introduction, NOTES) of a script from the namespace it left."""
    path = Path(path)
    items = namespace.get("NOTES")
    if not isinstance(items, (list, tuple)):
        raise ValueError(f"derivation {path.name} defines no NOTES list (got {items!r})")
    doc = (namespace.get("__doc__") or "").strip()
    fallback = path.stem.split("_", 1)[-1].replace("_", " ").capitalize()
    title, _, intro = doc.partition("\n")
    return (title.strip().rstrip(".") or fallback), intro.strip(), list(items)


_CHECK_LABEL = [(r"\bbatch=(\d+)", r"$B = \1$"), (r"\bnew_tokens=(\d+)", r"$T = \1$ new tokens"),
                (r"\bcached=(\d+)", r"\1 cached"),
                (r"\blast_only=False", "lm_head on every position"),
                (r"\blast_only=True", "lm_head on the last position"),
                (r"\battention=(\w+)", r"\1 attention"), (r"\bseq=(\d+)", r"$S = \1$"),
                (r"\bremat=(\w+)", r"remat \1"), (r"\bgrad_bytes=(\d+)", r"\1-byte gradients"),
                (r"\bmoment_bytes=(\d+)", r"\1-byte Adam moments"),
                (r"\bmaster_bytes=0\b", "no master copy"),
                (r"\bmaster_bytes=(\d+)", r"\1-byte master weights")]


def _check_caption(label: str) -> str:
    """``tiny: batch=1, new_tokens=2, cached=0, last_only=False`` in words and maths.

    >>> print(_check_caption("tiny: batch=8, new_tokens=1, cached=127, last_only=True"))
    tiny: $B = 8$, $T = 1$ new tokens, 127 cached, lm\\_head on the last position
    >>> print(_check_caption("tiny: seq=8, remat=none, grad_bytes=2, moment_bytes=4, "
    ...                      "master_bytes=0"))
    tiny: $S = 8$, remat none, 2-byte gradients, 4-byte Adam moments, no master copy
    """
    for pattern, words in _CHECK_LABEL:
        label = re.sub(pattern, words, label)
    return tex_text(label)


def _check_latex(report: CheckReport, students: bool = False) -> str:
    """The op-by-op table of a check report; the students' names each op and says its
    caption in words (:func:`~symroof.surfaces.handout_words.row_words`, ``in_words``), the
    teacher's prints the row keys."""
    bad = {(m.op, m.quantity): m for m in report.mismatches}
    head = ["op", "FLOPs", "useful FLOPs", "weight B", "KV B", "act B", "verdict"]
    body = []
    for op in report.rows:
        cells = [tex_text(row_words(op)) if students else tex_escape(op)]
        for q in QUANTITIES:
            m = bad.get((op, q))
            cells.append(f"{report.counted.get(op, {}).get(q, '-'):,}" if m is None
                         else rf"${m.counted} \neq {m.symbolic}$")
        cells.append("mismatch" if any(o == op for o, _ in bad) else "equal")
        body.append(" & ".join(cells) + r" \\")
    verdict = ("all equal: counted == symbolic for every op and quantity" if report.ok
               else f"{len(report.mismatches)} mismatch(es)")
    label = _check_caption(report.label)
    caption = r"\caption{Counted (NumPy) against symbolic: " + (
        in_words(label) if students else label) + "}"
    head = [" & ".join(head) + r" \\"]
    if len(body) > LONG_TABLE:  # a long table breaks across pages, its head repeated
        return "\n".join([r"\begingroup\scriptsize", r"\begin{longtable}{lrrrrrl}",
                          caption + r" \\", r"\toprule", *head, r"\midrule", r"\endfirsthead",
                          r"\toprule", *head, r"\midrule", r"\endhead", *body, r"\bottomrule",
                          r"\end{longtable}", r"\endgroup", rf"\noindent {tex_text(verdict)}\par"])
    return "\n".join([r"\begin{table}[htbp]", r"\centering", r"\scriptsize",
                      r"\begin{tabular}{lrrrrrl}", r"\toprule", *head, r"\midrule", *body,
                      r"\bottomrule", r"\end{tabular}", caption, r"\end{table}",
                      rf"\noindent {tex_text(verdict)}\par"])


def _table_in_words(tex: str, names: list[str]) -> str:
    """A roofline table's LaTeX for the students: each row (its first cell, and the
    bottleneck's quoted name) in words, and its notes' code names too (``in_words``)."""
    for name in names:
        said = tex_text(row_words(name))
        tex = tex.replace(f"\n{tex_escape(name)} & ", f"\n{said} & ").replace(
            f"`{tex_escape(name)}'", f"`{said}'")
    return in_words(tex)


def _figure(path: Path, caption: str, base: Any) -> str:
    if path.suffix.lower() not in FIGURE_SUFFIXES:
        raise ValueError(f"figure {str(path)!r}: pdflatex includes {FIGURE_SUFFIXES}, "
                         f"not {path.suffix!r}")
    if not path.is_file():
        raise ValueError(f"figure {str(path)!r} does not exist")
    shown = path.resolve()
    if base is not None and shown.is_relative_to(Path(base).resolve()):
        shown = shown.relative_to(Path(base).resolve())
    return "\n".join([r"\begin{figure}[H]", r"\centering",
                      rf"\includegraphics[width=0.85\linewidth]{{{shown.as_posix()}}}",
                      rf"\caption{{{tex_text(caption)}}}", r"\end{figure}"])


def latex_item(obj: Any, base: str | os.PathLike | None = None,
               audience: str = "teacher") -> str:
    """LaTeX for one published object: a Derivation, RooflineTable, CheckReport, a Path to a
    figure (or a ``(Path, caption)`` pair) or a str paragraph; figure paths are written
    relative to ``base``. For ``audience="students"`` derivations, paragraphs and captions
    are the handout's (:mod:`symroof.surfaces.handout`), and a check report longer than
    ``LONG_TABLE`` rows is summed by pass and block
    (:func:`~symroof.surfaces.handout.grouped_latex`)."""
    students = _audience(audience) == "students"
    if isinstance(obj, Derivation):
        return derivation_latex(obj) if students else obj.to_latex()
    if isinstance(obj, RooflineTable):  # wide tables shrink to the text width
        fit = r"\resizebox{\ifdim\width>\linewidth\linewidth\else\width\fi}{!}{"
        tex = obj.to_latex().replace(r"\begin{tabular}", fit + r"\begin{tabular}", 1).replace(
            r"\end{tabular}", r"\end{tabular}}", 1)
        return _table_in_words(tex, list(obj.numbers)) if students else tex
    if isinstance(obj, CheckReport):  # a handout sums a long report by pass and block
        if not students:
            return _check_latex(obj)
        if len(obj.rows) <= LONG_TABLE:
            return _check_latex(obj, students=True)
        return grouped_latex(obj, "Counted (NumPy) against symbolic, summed by pass and "
                             "block: " + in_words(_check_caption(obj.label)))
    if isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[0], Path):
        return _figure(obj[0], for_students(str(obj[1])) if students else str(obj[1]), base)
    if isinstance(obj, Path):  # caption from the name: 01_rooflines_problem3 -> rooflines problem3
        return _figure(obj, re.sub(r"^[0-9]+_", "", obj.stem).replace("_", " "), base)
    if isinstance(obj, str):
        return tex_text(for_students(obj) if students else obj)
    raise TypeError(f"cannot publish a {type(obj).__name__} in the notes (NOTES holds "
                    "Derivation, RooflineTable, CheckReport, a Path to a figure or a "
                    "(Path, caption) pair, or str)")


AUDIENCES = ("teacher", "students")
#: the title and author each audience gets unless given
DEFAULT_TITLE = {"teacher": "symroof: lecture notes", "students": "Rooflines of ML workloads"}
DEFAULT_AUTHOR = {"teacher": "generated by symroof from its derivation scripts", "students": ""}
CREDIT = ("After the book ``How to Scale Your Model'' (J. Austin et al., 2025), "
          "https://jax-ml.github.io/scaling-book/. Every number is computed, not typed.")


def _audience(audience: str) -> str:
    if audience not in AUDIENCES:
        raise ValueError(f"--audience {audience!r}: choose teacher or students")
    return audience


def _preamble(title: str, author: str = DEFAULT_AUTHOR["teacher"], date: str | None = None,
              front: str = "", contents: bool = True) -> list[str]:
    declare = [rf"\DeclareUnicodeCharacter{{{ord(c):04X}}}{{\ensuremath{{{t}}}}}"
               for c, t in UNICODE.items()]
    return [r"\documentclass[11pt]{article}", r"\usepackage[utf8]{inputenc}",
            r"\usepackage{amsmath,amssymb}", r"\usepackage{booktabs}", r"\usepackage{graphicx}",
            r"\usepackage{float}", r"\usepackage{longtable}",
            r"\usepackage[margin=2.2cm]{geometry}", *declare,
            r"\providecommand{\checkmark}{\ensuremath{\surd}}", r"\emergencystretch=3em",
            r"\allowdisplaybreaks",  # a long derivation breaks across pages
            rf"\title{{{tex_escape(title)}}}", rf"\author{{{tex_escape(author)}}}",
            r"\date{\today}" if date is None else rf"\date{{{tex_escape(date)}}}",
            r"\begin{document}", r"\maketitle", *([front] if front else []),
            *([r"\tableofcontents"] if contents else [])]


def notes_latex(sections: list[tuple[str, str, list]], base: str | os.PathLike | None = None,
                title: str | None = None, *, audience: str = "teacher",
                author: str | None = None, date: str | None = None) -> tuple[str, list[str]]:
    """The whole document for ``[(title, introduction, items), ...]``, and the list of
    characters pdflatex could not typeset (each replaced by ``?``). ``audience`` is
    ``"teacher"`` (everything) or ``"students"`` (the handout); ``date`` defaults to the
    day it is compiled.

    >>> tex, replaced = notes_latex([("Warm-up", "2 × 3 ≈ 6", ["A paragraph."])])
    >>> tex.count(r"\\section{Warm-up}"), replaced
    (1, [])
    """
    students = _audience(audience) == "students"
    prose = for_students if students else (lambda text: text)
    body = []
    for name, intro, items in sections:
        body += [rf"\section{{{tex_text(prose(name))}}}"]
        paragraphs = (prose(p.strip()) for p in intro.split("\n\n"))
        body += [tex_text(p) + "\n" for p in paragraphs if p.strip()]
        body += [latex_item(item, base, audience) + "\n" for item in items]
    # tables and figures stay where the script put them: notes read in order
    text = re.sub(r"\\begin\{(table|figure)\}(\[[a-zA-Z!]*\])?", r"\\begin{\1}[H]",
                  "\n".join(body))
    for char, tex in _TEXT_UNICODE.items():
        text = text.replace(char, tex)
    replaced = sorted({c for c in text if ord(c) > 0xFF and c not in UNICODE})
    text = "".join("?" if c in replaced else c for c in text)
    front = r"\begin{center}\emph{" + tex_text(CREDIT) + r"}\end{center}" if students else ""
    head = _preamble(title or DEFAULT_TITLE[audience],
                     DEFAULT_AUTHOR[audience] if author is None else author, date, front)
    return "\n".join([*head, text, r"\end{document}", ""]), replaced


def compile_pdf(tex: str | os.PathLike, runs: int = 2, timeout: float = 120) -> Path:
    """Run ``pdflatex`` ``runs`` times on ``tex`` (in its folder); return the PDF's path.
    A failure raises :class:`LatexError` with pdflatex's first error and its line."""
    tex = Path(tex).resolve()
    exe = shutil.which("pdflatex")
    if exe is None:
        raise FileNotFoundError("pdflatex is not on the PATH (install texlive-latex-base and "
                                "texlive-latex-recommended)")
    for _ in range(runs):
        run = subprocess.run([exe, "-interaction=nonstopmode", "-halt-on-error",
                              "-file-line-error", tex.name], cwd=tex.parent, capture_output=True,
                             timeout=timeout, text=True, errors="replace")
        if run.returncode != 0:
            lines = run.stdout.splitlines()
            first = next((ln for ln in lines if re.search(r"\.tex:\d+: |^! ", ln)),
                         lines[-1] if lines else "no output")
            raise LatexError(f"pdflatex failed on {tex.name}: {first.strip()} "
                             f"(log: {tex.with_suffix('.log')})")
    return tex.with_suffix(".pdf")


def select_chapters(paths: list[Path], chapters: list[int]) -> list[Path]:
    """The scripts numbered as ``chapters`` (``01_rooflines.py`` is chapter 1), in order; a
    number with no script fails naming the chapters there are.

    >>> [p.name for p in select_chapters(find_scripts(), [4, 1])]
    ['01_rooflines.py', '04_sharding.py']
    """
    known = {int(p.name[:2]): p for p in paths}
    missing = [c for c in chapters if c not in known]
    if missing:
        raise ValueError(f"--chapters {','.join(map(str, chapters))}: no chapter "
                         f"{', '.join(map(str, missing))}; the chapters are "
                         + ", ".join(f"{n} ({p.stem.split('_', 1)[-1].replace('_', ' ')})"
                                     for n, p in sorted(known.items())))
    return [known[c] for c in sorted(set(chapters))]


def build_notes(out: str | os.PathLike, *, scripts: list | str | os.PathLike | None = None,
                pdf: bool = True, title: str | None = None, audience: str = "teacher",
                author: str | None = None, date: str | None = None,
                chapters: list[int] | None = None) -> Notes:
    """Run the derivation scripts, write ``out/notes.tex`` (figures in ``out/figures``) and
    compile ``out/notes.pdf`` when ``pdf`` and pdflatex is on the PATH.

    ``scripts`` is a folder of ``NN_name.py`` files or a list of script paths (default: the
    shipped derivations); ``chapters`` keeps the scripts of those numbers (``[1, 4]``:
    ``01_*.py`` and ``04_*.py``); ``audience``, ``title``, ``author`` and ``date`` as in
    :func:`notes_latex`.
    """
    _audience(audience)
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {str(out)!r} exists and is not a folder")
    paths = (find_scripts(scripts) if scripts is None or not isinstance(scripts, (list, tuple))
             else [Path(p) for p in scripts])
    if not paths:
        raise ValueError("no derivation scripts (NN_name.py) found"
                         + (f" in {str(scripts)!r}" if scripts is not None else ""))
    if chapters is not None:
        paths = select_chapters(paths, chapters)
    figures = out / "figures"
    sections = [run_script(p, figures) for p in paths]
    tex, replaced = notes_latex(sections, base=out, title=title, audience=audience,
                                author=author, date=date)
    out.mkdir(parents=True, exist_ok=True)
    tex_path = out / "notes.tex"
    tex_path.write_text(tex, encoding="utf-8")
    shown = [i if isinstance(i, Path) else i[0] for _, _, items in sections for i in items
             if isinstance(i, Path) or isinstance(i, tuple) and i and isinstance(i[0], Path)]
    if not pdf:
        return Notes(tex_path, None, [s[0] for s in sections], shown, "PDF not requested",
                     replaced)
    if shutil.which("pdflatex") is None:
        return Notes(tex_path, None, [s[0] for s in sections], shown,
                     "pdflatex not on the PATH: compile notes.tex yourself", replaced)
    return Notes(tex_path, compile_pdf(tex_path), [s[0] for s in sections], shown, "", replaced)
