"""``symroof notes`` handout options and ``symroof problems``: documents for a course.

``symroof problems --chapter sharding --seed 2027`` writes ``sharding-2027.tex`` (the
problems) and ``sharding-2027-solutions.tex`` (each worked: the formula, then the number),
compiled when pdflatex is on the PATH; seed 0 (the default) is the book's own numbers.

>>> import argparse
>>> p = argparse.ArgumentParser()
>>> add_handout_options(p)
>>> p.parse_args(["--audience", "students", "--chapters", "1,4"]).chapters
[1, 4]
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_handout_options", "chapter_numbers", "add_problems", "cmd_problems"]


def chapter_numbers(text: str) -> list[int]:
    """``--chapters 1,4`` as ``[1, 4]``; anything else fails naming what was typed."""
    try:
        numbers = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        numbers = []
    if not numbers or any(n < 0 for n in numbers):
        raise argparse.ArgumentTypeError(f"--chapters {text!r}: write chapter numbers "
                                         "separated by commas, such as 1,4")
    return numbers


def cmd_problems(args: argparse.Namespace) -> int:
    """Write the problem and solution sheets of one chapter (or all) for one seed."""
    from ..problems import problem_set  # the templates load only for this command
    from ..problems.sheets import build_problems

    problems = problem_set(args.chapter, args.seed)
    title = args.title or ("How to Scale Your Model" if args.chapter == "all" else
                           f"How to Scale Your Model: {args.chapter}")
    sheets = build_problems(args.out, problems, title=title, pdf=not args.no_pdf,
                            author=args.author or "", date=args.date,
                            stem=f"{args.chapter}-{args.seed}")
    numbers = "the book's numbers" if args.seed == 0 else f"seed {args.seed}"
    print(f"wrote {sheets.problems_tex} and {sheets.solutions_tex}: {len(problems)} "
          f"problem(s), {numbers}")
    print(f"compiled {sheets.problems_pdf} and {sheets.solutions_pdf}" if sheets.problems_pdf
          else f"no PDF: {sheets.pdf_note}")
    return 0


def _seed(text: str) -> int:
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"--seed {text!r}: a whole number, 0 or more (0: "
                                         "the book's own numbers)")
    return int(text)


def add_problems(command: Any) -> None:
    """Register ``symroof problems`` (``command`` is the CLI's subcommand factory)."""
    from ..problems import CHAPTERS

    c = command("problems", cmd_problems, "write a problem sheet and its worked solutions "
                "(LaTeX, and PDF with pdflatex) from the book's problems, with fresh numbers "
                "for each seed")
    c.add_argument("--chapter", default="all", choices=(*CHAPTERS, "all"),
                   help="which chapter's problems (default: all)")
    c.add_argument("--seed", type=_seed, default=0, help="0 (default): the book's own "
                   "numbers; any other: real chips and models, round sizes, drawn for it")
    c.add_argument("--out", default="problems", help="output folder (default: problems)")
    c.add_argument("--no-pdf", action="store_true", help="write the .tex files only")
    for flag, what in (("title", "the sheets' title"), ("author", "the author line"),
                       ("date", "the date line (default: the day it is compiled)")):
        c.add_argument(f"--{flag}", help=what)


def add_handout_options(c: Any) -> None:
    """--audience, --title, --author, --date and --chapters of ``symroof notes``."""
    c.add_argument("--audience", choices=("teacher", "students"), default="teacher",
                   help="teacher (default): everything, with sources, errata and exact "
                   "values; students: a handout without internal references, claims as "
                   "short statements, numbers at 3 significant figures with units")
    c.add_argument("--title", help="the document's title")
    c.add_argument("--author", help="the author line (students' default: none)")
    c.add_argument("--date", help="the date line (default: the day it is compiled)")
    c.add_argument("--chapters", type=chapter_numbers, metavar="N,N",
                   help="only these chapters, by script number (1,4: rooflines and sharding)")
