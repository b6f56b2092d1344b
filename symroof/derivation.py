"""``Derivation``: a derivation recorded as steps, rendered to the terminal, LaTeX and Markdown.

Each step is a statement, an equation (lhs = rhs) and the assumption that licenses it. The
same object prints in a terminal, renders in a notebook (``_repr_latex_``,
``_repr_markdown_``) and goes into the lecture notes as an ``align*`` block.

>>> from symroof.symbols import B, D, F
>>> import symroof as sr
>>> d = Derivation("Matmul intensity", source="How to Scale Your Model, ch. 1")
>>> i = d.step("Intensity of X[B,D] @ W[D,F] in bf16", r"\\text{AI}",
...            sr.matmul(B, D, F).intensity)
>>> d.step("B much smaller than D and F", r"\\text{AI}", sr.leading(i, small=B),
...        because="B << D, F")
B
>>> print(d.to_markdown().splitlines()[0])
### Matmul intensity
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import sympy as sp

from .render import latex

__all__ = ["Derivation", "Step", "tex_escape"]

_TEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\ensuremath{\sim}",
                "^": r"\textasciicircum{}", "<": r"\ensuremath{<}", ">": r"\ensuremath{>}"}


def tex_escape(text: str) -> str:
    r"""Escape plain text for LaTeX text mode.

    >>> tex_escape("50% of d_h & more")
    '50\\% of d\\_h \\& more'
    """
    return "".join(_TEX_SPECIAL.get(ch, ch) for ch in text)


def _tex(x: Any) -> str:
    return x if isinstance(x, str) else latex(x)


def _tex_number(text: str) -> str:
    r"""``8.013e-05`` as ``8.013 \times 10^{-5}``; other text unchanged.

    >>> _tex_number("8.013e-05"), _tex_number("240.2")
    ('8.013 \\times 10^{-5}', '240.2')
    """
    match = re.fullmatch(r"(-?[\d.]+)e([+-]?\d+)", text)
    return text if match is None else rf"{match[1]} \times 10^{{{int(match[2])}}}"


def _plain(x: Any) -> str:
    if isinstance(x, str):  # a LaTeX label: unwrap \text{...}, keep other braces
        return re.sub(r"\\(?:text|mathrm)\{([^{}]*)\}", r"\1", x)
    return sp.sstr(x)


@dataclass(frozen=True)
class Step:
    """One step: ``statement``; ``lhs = rhs``; licensed by ``because``."""

    statement: str
    lhs: Any
    rhs: Any
    because: str = ""
    value: str = ""  # an optional numeric reading, e.g. "= 240.2"


@dataclass
class Derivation:
    """An ordered record of steps and checked claims."""

    title: str
    source: str = ""
    steps: list[Step] = field(default_factory=list)
    claims: list[tuple[str, bool]] = field(default_factory=list)

    def step(self, statement: str, lhs: Any, rhs: Any, because: str = "",
             value: Any = None) -> Any:
        """Record ``lhs = rhs`` and return ``rhs`` (so steps chain in scripts)."""
        shown = ""
        if value is not None:
            shown = value if isinstance(value, str) else f"{float(value):.6g}"
        elif isinstance(rhs, sp.Basic) and rhs.is_number and not rhs.is_Integer:
            shown = f"{float(rhs):.6g}"
        self.steps.append(Step(statement, lhs, rhs, because, shown))
        return rhs

    def claim(self, statement: str, holds: Any) -> None:
        """Record a claim and assert it: a derivation ends by asserting what it showed."""
        ok = bool(holds)
        self.claims.append((statement, ok))
        if not ok:
            raise AssertionError(f"{self.title}: claim failed: {statement}")

    # -- rendering ---------------------------------------------------------------------
    def __str__(self) -> str:
        out = [self.title, "=" * len(self.title)]
        if self.source:
            out.append(f"source: {self.source}")
        for s in self.steps:
            out.append(f"- {s.statement}" + (f"   [{s.because}]" if s.because else ""))
            eq = f"    {_plain(s.lhs)} = {_plain(s.rhs)}"
            out.append(eq + (f"  ~ {s.value}" if s.value else ""))
            out.append(f"    LaTeX: {_tex(s.lhs)} = {_tex(s.rhs)}")
        for text, ok in self.claims:
            out.append(f"{'[ok]' if ok else '[FAILED]'} {text}")
        return "\n".join(out)

    def to_latex(self) -> str:
        """An ``align*`` block; statements as ``\\intertext``, assumptions flush right."""
        lines = [rf"\subsection*{{{tex_escape(self.title)}}}"]
        if self.source:
            lines.append(rf"\noindent\emph{{Source: {tex_escape(self.source)}}}")
        if self.steps:
            body = []
            for s in self.steps:
                row = rf"\intertext{{{tex_escape(s.statement)}}}" + "\n"
                row += f"{_tex(s.lhs)} &= {_tex(s.rhs)}"
                if s.value:
                    row += rf" \approx {_tex_number(s.value)}"
                if s.because:
                    row += rf" && \text{{{tex_escape(s.because)}}}"
                body.append(row)
            lines += [r"\begin{align*}", " \\\\\n".join(body), r"\end{align*}"]
        if self.claims:
            lines.append(r"\begin{itemize}")
            lines += [rf"\item {tex_escape(t)} (checked)" for t, ok in self.claims if ok]
            lines.append(r"\end{itemize}")
        return "\n".join(lines)

    def to_markdown(self) -> str:
        """Markdown with ``$$ ... $$`` display math (renders in Jupyter and GitHub)."""
        out = [f"### {self.title}"]
        if self.source:
            out.append(f"*Source: {self.source}*")
        for s in self.steps:
            because = f" *({s.because})*" if s.because else ""
            value = rf" \approx {_tex_number(s.value)}" if s.value else ""
            math = f"$$ {_tex(s.lhs)} = {_tex(s.rhs)}{value} $$"
            out += ["", f"{s.statement}{because}", "", math]
        if self.claims:
            out.append("")
            out += [f"- {'✓' if ok else '✗'} {t}" for t, ok in self.claims]
        return "\n".join(out)

    def _repr_markdown_(self) -> str:
        return self.to_markdown()

    def _repr_latex_(self) -> str:
        steps = r" \\ ".join(f"{_tex(s.lhs)} &= {_tex(s.rhs)}" for s in self.steps)
        return r"$\begin{aligned} " + steps + r" \end{aligned}$"
