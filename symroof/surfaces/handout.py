"""The students' edition of the notes: what a handout keeps of the teacher's notes.

A handout has no internal references (the seed lectures, errata, the book's commit hashes,
its revisions and slips, file names, code), claims as short statements (no parenthetical
asides), and every computed number at 3 significant figures with its unit, in the readable
form of :func:`symroof.render.number`. The teacher's edition keeps all of it; both come from
the same derivation scripts (:mod:`symroof.surfaces.notes`). Names and units in words (a row
key, a preset, a quantity over its unit) come from :mod:`symroof.surfaces.handout_words`.

>>> print(for_students("Problem 1 (seed 000). The ridge is 240. Erratum: the book says 241."))
Problem 1. The ridge is 240.
>>> unit_of(r"T_\\text{math}"), unit_of(r"T_\\text{AG} / \\text{us}"), unit_of(r"B^*")
('s', '', '')
"""

from __future__ import annotations

import re
from typing import Any

import sympy as sp

from ..derivation import Derivation, DerivationStep
from ..models.check import QUANTITIES, CheckReport
from ..prose import tex_text
from ..render import PREFIXED, latex, number
from .handout_words import (
    BLOCKS,
    PASSES,
    ROW_WORDS,
    WORDS,
    in_words,
    pass_and_block,
    per_unit,
    product_name,
    row_words,
)

__all__ = ["INTERNAL", "for_students", "short_claim", "unit_of", "stated_unit",
           "derivation_latex", "handout_latex", "per_unit", "product_name", "WORDS", "in_words",
           "ROW_WORDS", "row_words", "PASSES", "BLOCKS", "pass_and_block", "grouped_rows",
           "grouped_latex"]

#: what a handout never shows: internal references, errata and the book's slips, code
INTERNAL = re.compile(
    r"\bseeds?\b|\bseed's\b|\bcommits?\b|\brevisions?\b|errat|\.py\b|\.md\b|CS349|"
    r"Feb 2025|lecture[- ]\d|\bscript\b|``|\\texttt|\btruncat|\bslip|\bderivations? \d|"
    r"(?i:the book's|book prints|the book (?:writes|rounds|prints|gives|says|evaluates|reads))|"
    r"\b(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7}\b")
_MATH = re.compile(r"(?<!\\)\$(?:[^$\\]|\\.)+?(?<!\\)\$")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\x00(`\"'])")


def _masked(text: str) -> tuple[str, list[str]]:
    """``text`` with its inline maths replaced by placeholders (maths is never cut)."""
    maths: list[str] = []

    def keep(m: re.Match) -> str:
        maths.append(m.group())
        return f"\x00{len(maths) - 1}\x00"
    return _MATH.sub(keep, text), maths


def _unmasked(text: str, maths: list[str]) -> str:
    return re.sub("\x00(\\d+)\x00", lambda m: maths[int(m[1])], text)


def _parentheticals(text: str) -> list[tuple[int, int]]:
    """The spans of the outermost ``(...)`` groups of ``text``."""
    spans, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c == "(":
            start, depth = (i if depth == 0 else start), depth + 1
        elif c == ")" and depth:
            depth -= 1
            if depth == 0:
                spans.append((start, i + 1))
    return spans


def _drop(text: str, spans: list[tuple[int, int]]) -> str:
    for a, b in reversed(spans):
        text = text[:a].rstrip() + text[b:]
    return text


def _internal(text: str, maths: list[str]) -> bool:
    return INTERNAL.search(_unmasked(text, maths)) is not None


def for_students(text: str, *, asides: bool = True) -> str:
    """``text`` without its internal references: an erratum to the end of its paragraph,
    asides in parentheses and then whole sentences that cite the seeds, commits, revisions,
    the book's slips or code; ``asides=False`` drops every parenthetical aside too. Code
    names are said in words (:func:`in_words`)."""
    masked, maths = _masked(text)
    masked = re.split(r"\s*\bErrat(?:um|a)\b", masked)[0]
    masked = _drop(masked, [(a, b) for a, b in _parentheticals(masked)
                            if not asides or _internal(masked[a:b], maths)])
    kept = [s for s in _SENTENCE.split(masked) if s.strip() and not _internal(s, maths)]
    out = re.sub(r"\s+([,.;:])", r"\1", " ".join(kept)).strip()
    out = re.sub(r"[,;:]\s*$", "", out)
    return _unmasked(in_words(out), maths)


def short_claim(text: str) -> str:
    """A claim as a short statement: no asides, no internal references.

    >>> short_claim("about 298 with 1e15 (298.5, as the book prints it)")
    'about 298 with 1e15'
    """
    return for_students(text, asides=False).rstrip(".")


#: a left side's unit: a time (``T_x``, ``t_x``, ``T(4)``), FLOPs, bytes, an intensity, a
#: peak ``C``, a bandwidth ``W``, a memory ``M``, a KV cache or a collective's ``V_b``;
#: a left side divided by something (``T / \text{ms}``) is already a pure number
_UNITS = [(r"^[Tt](?:_|\()", "s"), (r"^\\text\{FLOPs\}", "FLOP"), (r"\\text\{bytes\}", "B"),
          (r"^\\text\{AI\}", "FLOP/B"), (r"^C(?:_|\^|$)", "FLOP/s"), (r"^W(?:_|\^|$)", "B/s"),
          (r"^M(?:_|$)", "B"), (r"^\\text\{KV\}", "B"), (r"^V_b", "B")]


def unit_of(lhs: Any) -> str:
    """The unit of a step's value, read from its left side's LaTeX (see ``_UNITS``)."""
    if not isinstance(lhs, str) or "/" in lhs:
        return ""
    return next((unit for pattern, unit in _UNITS if re.search(pattern, lhs)), "")


def handout_latex(x: Any, unit: str = "") -> str:
    """A value as the handout prints it: readable numbers (:func:`symroof.render.latex`)
    and a symbol's word subscript upright, as the prose writes it (``C_\text{int8}``).

    >>> from symroof.symbols import W, d_h, quantity
    >>> print(handout_latex(quantity("C_int8") * d_h / (2 * W)))
    \\frac{C_\\text{int8} d_{h}}{2 W}
    """
    words = {s: rf"{s.name.split('_')[0]}_\text{{{s.name.split('_', 1)[1]}}}"
             for s in getattr(x, "free_symbols", ()) if re.fullmatch(r"[A-Za-z]+_[A-Za-z]\w+",
                                                                     s.name)}
    return latex(x, unit=unit, **({"symbol_names": words} if words else {}))


def _tex(x: Any, unit: str = "") -> str:
    if isinstance(x, str):  # a left side: microseconds as such, not "us"; code in words
        return in_words(x.replace(r"\text{us}", r"\mu\text{s}"))
    return handout_latex(x, unit)


#: a statement that names its value's unit last, in brackets: "attention core (ms)"
_STATED = re.compile(r"\((ms|us|ns|s|kB|MB|GB|TB|GB/s|TB/s|FLOP/B|%|days|years|bytes)\)\s*$")
#: or in words, last: "the per-op sums, in milliseconds"
_IN_WORDS = {"milliseconds": "ms", "microseconds": "us", "seconds": "s"}
_STATED_WORDS = re.compile(r",? in (" + "|".join(_IN_WORDS) + r")\s*$")


def stated_unit(statement: str) -> str | None:
    """The unit a statement gives its value in (the value is a pure number in it), if any.

    >>> stated_unit("decode: attention core (ms)"), stated_unit("the ridge")
    ('ms', None)
    >>> stated_unit("the per-op sums under four profiles, in milliseconds")
    'ms'
    """
    m = _STATED.search(statement)
    if m is None:
        words = _STATED_WORDS.search(statement)
        return None if words is None else _IN_WORDS[words.group(1)]
    return m.group(1)


def _as_basic(x: Any) -> Any:
    """A Python number as SymPy's (exact), anything else as it is."""
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return sp.nsimplify(x) if isinstance(x, float) else sp.Integer(x)
    return x


def _in_unit(x: Any, unit: str) -> str:
    """A pure number in a stated unit: ``3.69\\,\\mathrm{ms}``."""
    x = _as_basic(x)
    shown = handout_latex(x)
    numbers = isinstance(x, (sp.MatrixBase, sp.Tuple)) and all(v.is_number for v in x)
    if not (isinstance(x, sp.Basic) and x.is_number or numbers):  # numbers: a row of them
        return shown
    if unit == "bytes" and not numbers:  # a count of bytes, with its SI prefix: 360 kB
        return number(x, "B")
    tex = {"us": r"\mu\mathrm{s}", "%": r"\%", "bytes": r"\mathrm{B}"}.get(
        unit, rf"\mathrm{{{unit}}}")
    return rf"{shown}\,{tex}"


def _per_unit_row(s: DerivationStep) -> str | None:
    """``lhs &= value`` for a left side divided by its unit and a numeric value: the
    quantity, and the value with its unit (one number: with its SI prefix)."""
    per = per_unit(s.lhs) if isinstance(s.lhs, str) else None
    x = _as_basic(s.rhs) if s.at_value is None else None
    numbers = isinstance(x, (sp.MatrixBase, sp.Tuple)) and all(v.is_number for v in x)
    if per is None or not (isinstance(x, sp.Basic) and x.is_number and x.is_real or numbers):
        return None
    lhs, said, unit, scale = per
    if numbers:  # a row of numbers: the unit as written, once, after it
        shown = _in_unit(x, said)
    elif unit in PREFIXED:
        shown = number(x * scale, unit)
    else:
        shown = rf"{number(x)}\,\mathrm{{{unit}}}"
    return f"{_tex(lhs)} &= {shown}"


def _row(s: DerivationStep) -> str:
    statement = for_students(s.statement)
    stated = stated_unit(s.statement)
    unit = unit_of(s.lhs) if stated is None else ""

    def value(x: Any) -> str:
        return _tex(x, unit) if stated is None or isinstance(x, str) else _in_unit(x, stated)
    row = (stated is None and _per_unit_row(s)) or f"{_tex(s.lhs)} &= {value(s.rhs)}"
    if s.at_value is not None:
        row += r" \\*" + "\n" + f"&= {value(s.at_value)}"
    if s.because and for_students(s.because):  # beside its equation, not at the far margin
        row += rf" \qquad \text{{({tex_text(for_students(s.because))})}}"
    return (rf"\intertext{{{tex_text(statement)}}}" + "\n" if statement else "") + row


def derivation_latex(d: Derivation) -> str:
    """A derivation for the handout: steps with readable numbers and units, short claims,
    no source line (the handout credits the book once, on its title page).

    >>> from symroof.symbols import C, W
    >>> d = Derivation("Ridge")
    >>> d.step("on a TPU v5e (seed 000)", r"B^*", C / W, at={C: 197 * 10**12, W: 82 * 10**10})
    9850/41
    >>> print(derivation_latex(d))
    \\subsection*{Ridge}
    \\begin{align*}
    \\intertext{on a TPU v5e}
    B^* &= \\frac{C}{W} \\\\*
    &= 240
    \\end{align*}
    """
    title = for_students(d.title) or for_students(d.title.split(":")[0])  # never a bare head
    lines = [rf"\subsection*{{{tex_text(title)}}}"]
    rows = [_row(s) for s in d.steps  # a step about an internal reference goes: its quantity
            if not (isinstance(s.lhs, str) and INTERNAL.search(s.lhs))  # or all its words
            and not (s.statement and not for_students(s.statement))]
    if rows:
        lines += [r"\begin{align*}", " \\\\\n".join(rows), r"\end{align*}"]
    claims = [short_claim(t) for t, ok in d.claims if ok]
    if any(claims):
        lines.append(r"\begin{itemize}")
        lines += [rf"\item {tex_text(t)}" for t in claims if t]
        lines.append(r"\end{itemize}")
    return "\n".join(lines)


def grouped_rows(report: CheckReport) -> dict[str, dict[str, int]]:
    """The counted rows of ``report`` summed by pass and block, ``"pass/block"`` keys in the
    order the rows run, each with the five quantities and ``"ops"`` (how many rows).

    >>> import symroof as sr
    >>> g = grouped_rows(sr.check_training(sr.model("tiny"), batch=2, seq=8, remat="full"))
    >>> list(g)[:3], g["optimizer/Adam"]["ops"]
    (['forward/embedding', 'forward/attention', 'forward/MLP'], 1)
    """
    groups: dict[str, dict[str, int]] = {}
    for op in report.rows:
        group = groups.setdefault("/".join(pass_and_block(op)),
                                  {"ops": 0, **{q: 0 for q in QUANTITIES}})
        group["ops"] += 1
        for q in QUANTITIES:
            group[q] += report.counted.get(op, {}).get(q, 0)
    return groups


#: the grouped table's columns: heading, unit, the quantities summed into the cell
_COLUMNS = [("FLOPs", "FLOP", ("flops",)), ("weights", "B", ("weight_bytes",)),
            ("KV cache", "B", ("kv_bytes",)), ("activations", "B", ("act_bytes",))]


def grouped_latex(report: CheckReport, caption: str) -> str:
    """The students' form of a long check report: one row per pass and block
    (:func:`grouped_rows`) with the step's total (the kept activations apart: bytes held,
    not moved), readable numbers, the verdict, and where the op-by-op table is."""
    groups = grouped_rows(report)
    columns = [c for c in _COLUMNS if any(g[q] for g in groups.values() for q in c[2])]

    def cells(name: str, block: str, g: dict[str, int]) -> str:
        values = [f"${number(sum(g[q] for q in qs), unit)}$" if name != "kept"
                  or qs == ("act_bytes",) else "--" for _, unit, qs in columns]
        return " & ".join([name, block, str(g["ops"]), *values]) + r" \\"
    step = {k: g for k, g in groups.items() if not k.startswith("kept/")}
    kept = {k: g for k, g in groups.items() if k.startswith("kept/")}
    body = [cells(*k.split("/", 1), g) for k, g in step.items()]
    total = {q: sum(g[q] for g in step.values()) for q in ["ops", *QUANTITIES]}
    body += [r"\midrule", cells("step", "total", total)]
    if kept:
        body += [r"\midrule", *[cells(*k.split("/", 1), g) for k, g in kept.items()],
                 cells("kept", "total", {q: sum(g[q] for g in kept.values())
                                         for q in ["ops", *QUANTITIES]})]
    head = " & ".join(["pass", "block", "ops", *[h for h, _, _ in columns]]) + r" \\"
    verdict = ("counted and symbolic are equal for every op and quantity" if report.ok
               else f"{len(report.mismatches)} figures differ between counted and symbolic")
    where = (f"Each line sums the ops of one pass through one block; the teacher's edition "
             f"lists all {len(report.rows)} ops one by one.")
    note = " Kept: the activations held for the backward (bytes held, not moved)." \
        if kept else ""
    return "\n".join([r"\begin{table}[htbp]", r"\centering", r"\small",
                      r"\begin{tabular}{ll" + "r" * (1 + len(columns)) + "}", r"\toprule",
                      head, r"\midrule", *body, r"\bottomrule", r"\end{tabular}",
                      rf"\caption{{{caption}}}", r"\end{table}",
                      rf"\noindent {tex_text(verdict.capitalize() + '. ' + where + note)}\par"])
