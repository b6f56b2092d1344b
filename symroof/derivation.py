"""``Derivation``: a derivation recorded as steps, rendered to the terminal, LaTeX and Markdown.

Each step is a statement, an equation (lhs = rhs) and the assumption that licenses it. The
same object prints in a terminal, renders in a notebook (``_repr_latex_``,
``_repr_markdown_``) and goes into the lecture notes as an ``align*`` block.

Prose (statements, assumptions, claims, titles) may carry inline maths as ``$...$``, which
passes through to LaTeX while the rest is escaped (see :func:`symroof.prose.tex_text`); a
step given ``at={symbol: number}`` shows its formula first, then the formula's value there.

>>> from symroof.symbols import B, C, D, F, W
>>> import symroof as sr
>>> d = Derivation("Matmul intensity", source="How to Scale Your Model, ch. 1")
>>> i = d.step("Intensity of $X[B,D] W[D,F]$ in bf16", r"\\text{AI}",
...            sr.matmul(B, D, F).intensity)
>>> d.step("$B$ much smaller than $D$ and $F$", r"\\text{AI}", sr.leading(i, small=B),
...        because=r"$B \\ll D, F$")
B
>>> d.step("compute-bound above", "B^*", C / W, at={C: 197 * 10**12, W: 82 * 10**10})
9850/41
>>> print(d.to_markdown().splitlines()[0])
### Matmul intensity
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import sympy as sp

from .prose import plain_text, tex_escape, tex_number, tex_text
from .render import latex

__all__ = ["Derivation", "DerivationStep", "tex_escape", "tex_text", "plain_text", "print_notes"]

def _tex(x: Any) -> str:
    return x if isinstance(x, str) else latex(x, readable=True)


def _reading(x: Any) -> str:
    """The decimal shown beside an exact number: every non-integer, and integers of 7 or
    more digits unless they print in scientific form already (round figures)."""
    if isinstance(x, int) and not isinstance(x, bool):
        x = sp.Integer(x)
    if not (isinstance(x, sp.Basic) and x.is_number and x.is_real) or x.is_Float:
        return ""
    if x.is_Integer:
        digits = str(abs(int(x)))
        return f"{float(x):.6g}" if len(digits) >= 7 and len(digits.rstrip("0")) > 4 else ""
    return f"{float(x):.6g}"


def _scientific(x: Any) -> bool:
    """Whether the notes print this exact integer in scientific form already (5.91e17)."""
    return isinstance(x, (int, sp.Integer)) and r"\times 10^" in latex(x, readable=True)


def _plain(x: Any) -> str:
    if isinstance(x, str):  # a LaTeX label: unwrap \text{...}, keep other braces
        x = re.sub(r"\\lim_\{([^{}]*)\}\s*", r"lim(\1) ", x)
        x = re.sub(r"\s*\\to\s*", "->", x).replace(r"\infty", "oo")
        return re.sub(r"\\(?:text|mathrm)\{([^{}]*)\}", r"\1", x)
    return sp.sstr(x)


@dataclass(frozen=True)
class DerivationStep:
    """One step: ``statement``; ``lhs = rhs`` (then ``= at_value`` where the formula was
    evaluated at numbers); licensed by ``because``."""

    statement: str
    lhs: Any
    rhs: Any
    because: str = ""
    value: str = ""  # an optional numeric reading, e.g. "240.2"
    at_value: Any = None  # the formula's exact value at the step's numbers, if given


@dataclass
class Derivation:
    """An ordered record of steps and checked claims."""

    title: str
    source: str = ""
    steps: list[DerivationStep] = field(default_factory=list)
    claims: list[tuple[str, bool]] = field(default_factory=list)

    def step(self, statement: str, lhs: Any, rhs: Any, because: str = "",
             value: Any = None, *, at: dict | None = None) -> Any:
        """Record ``lhs = rhs`` and return ``rhs`` (so steps chain in scripts).

        With ``at`` (``{symbol: number}``) the step reads ``lhs = rhs = rhs.subs(at)``: the
        formula in named quantities first, then its exact value, and that value is returned.
        An exact number is shown with its decimal (``value`` overrides the reading)."""
        at_value = None if at is None else sp.sympify(rhs).subs(at)
        number = rhs if at is None else at_value
        shown = _reading(number)
        if value is not None and not _scientific(number):  # else the value is shown already
            shown = value if isinstance(value, str) else f"{float(value):.6g}"
        self.steps.append(DerivationStep(statement, lhs, rhs, because, shown, at_value))
        return rhs if at is None else at_value

    def claim(self, statement: str, holds: Any) -> None:
        """Record a claim and assert it: a derivation ends by asserting what it showed."""
        ok = bool(holds)
        self.claims.append((statement, ok))
        if not ok:
            raise AssertionError(f"{self.title}: claim failed: {plain_text(statement)}")

    # -- rendering ---------------------------------------------------------------------
    def __str__(self) -> str:
        title = plain_text(self.title)
        out = [title, "=" * len(title)]
        if self.source:
            out.append(f"source: {self.source}")
        for s in self.steps:
            out.append(f"- {plain_text(s.statement)}"
                       + (f"   [{plain_text(s.because)}]" if s.because else ""))
            eq = f"    {_plain(s.lhs)} = {_plain(s.rhs)}"
            if s.at_value is not None:
                eq += f" = {_plain(s.at_value)}"
            out.append(eq + (f"  ~ {s.value}" if s.value else ""))
            latex_eq = f"{_tex(s.lhs)} = {_tex(s.rhs)}"
            if s.at_value is not None:
                latex_eq += f" = {_tex(s.at_value)}"
            out.append(f"    LaTeX: {latex_eq}")
        for text, ok in self.claims:
            out.append(f"{'[ok]' if ok else '[FAILED]'} {plain_text(text)}")
        return "\n".join(out)

    def to_latex(self) -> str:
        """An ``align*`` block; statements as ``\\intertext``, assumptions flush right; a
        formula evaluated at numbers continues on a second line; claims as a checked list."""
        lines = [rf"\subsection*{{{tex_text(self.title)}}}"]
        if self.source:
            lines.append(rf"\noindent\emph{{Source: {tex_text(self.source)}}}")
        if self.steps:
            body = []
            for s in self.steps:
                row = rf"\intertext{{{tex_text(s.statement)}}}" + "\n"
                row += f"{_tex(s.lhs)} &= {_tex(s.rhs)}"
                if s.at_value is not None:  # \\*: the value stays on the formula's page
                    row += r" \\*" + "\n" + f"&= {_tex(s.at_value)}"
                if s.value:
                    row += rf" \approx {tex_number(s.value)}"
                if s.because:
                    row += rf" && \text{{{tex_text(s.because)}}}"
                body.append(row)
            lines += [r"\begin{align*}", " \\\\\n".join(body), r"\end{align*}"]
        if self.claims:
            lines.append(r"\begin{itemize}")
            lines += [rf"\item[\checkmark] {tex_text(t)}" for t, ok in self.claims if ok]
            lines.append(r"\end{itemize}")
        return "\n".join(lines)

    def to_markdown(self) -> str:
        """Markdown with ``$$ ... $$`` display math (renders in Jupyter and GitHub)."""
        out = [f"### {self.title}"]
        if self.source:
            out.append(f"*Source: {self.source}*")
        for s in self.steps:
            because = f" *({s.because})*" if s.because else ""
            value = rf" \approx {tex_number(s.value)}" if s.value else ""
            at = "" if s.at_value is None else f" = {_tex(s.at_value)}"
            math = f"$$ {_tex(s.lhs)} = {_tex(s.rhs)}{at}{value} $$"
            out += ["", f"{s.statement}{because}", "", math]
        if self.claims:
            out.append("")
            out += [f"- {'✓' if ok else '✗'} {t}" for t, ok in self.claims]
        return "\n".join(out)

    def _repr_markdown_(self) -> str:
        return self.to_markdown()

    def _repr_latex_(self) -> str:
        steps = r" \\ ".join(f"{_tex(s.lhs)} &= {_tex(s.rhs)}"
                              + ("" if s.at_value is None else f" = {_tex(s.at_value)}")
                              for s in self.steps)
        return r"$\begin{aligned} " + steps + r" \end{aligned}$"


def print_notes(notes: list) -> None:
    """Print a derivation script's ``NOTES`` for the terminal: each item as text, figures
    as ``figure: path (caption)``, maths in captions as plain ASCII. Every script's
    ``__main__`` block is this one call.

    >>> print_notes(["a paragraph", ("out/f.png", r"time against $B$")])
    a paragraph
    <BLANKLINE>
    figure: out/f.png (time against B)
    <BLANKLINE>
    """
    for item in notes:
        print(f"figure: {item[0]} ({plain_text(item[1])})" if isinstance(item, tuple) else item)
        print()
