"""How a roofline table prints: aligned text, Markdown and LaTeX (booktabs), each with the
table's warnings, its totals and a summary (:class:`symroof.models.table.RooflineTable`
calls these; they read its numbers, never a SymPy expression).
"""

from __future__ import annotations

import re
from typing import Any

from ..prose import tex_escape, tex_text
from ..render import fmt_num, fmt_si

__all__ = ["COLUMNS", "GROUP_WORDS", "in_words", "cells", "body", "summary", "text",
           "markdown", "latex"]

COLUMNS = ("op", "FLOPs", "weight B", "KV B", "act B", "intensity", "bound", "time")

#: the op groups (``models.transformer.OP_GROUPS``) whose names are code, in words: what a
#: figure's ticks and labels print (every other group is named in words already)
GROUP_WORDS = {"lm_head": "LM head"}


def in_words(name: str) -> str:
    """An op group's name as a figure prints it (:data:`GROUP_WORDS`; any other name as is).

    >>> in_words("lm_head"), in_words("attention core"), in_words("attn/q_proj")
    ('LM head', 'attention core', 'attn/q_proj')
    """
    return GROUP_WORDS.get(name, name)


def cells(t: Any, name: str, v: Any) -> list[str]:
    """One row's cells, in the order of COLUMNS."""
    flops = v.useful_flops if t.useful else v.flops
    return [name, fmt_si(flops), fmt_si(v.weight_bytes), fmt_si(v.kv_bytes),
            fmt_si(v.act_bytes), fmt_num(t._intensity(v)), v.bound,
            fmt_si(v.lower, "s")]


def body(t: Any) -> tuple[list[list[str]], list[str]]:
    """The rows' cells and the total's (its time: the per-op sum)."""
    rows = [cells(t, n, v) for n, v in t.numbers.items()]
    total = cells(t, "total", t._total)
    total[-1] = fmt_si(t._per_op_sum, "s") + " (sum)"
    return rows, total


def summary(t: Any) -> list[str]:
    """The lines under the table: both bounds, the whole model, the bottleneck, the notes."""
    lo, hi = t._bounds
    lines = [f"per-op sum {fmt_si(t._per_op_sum, 's')}; totals as one roofline: "
             f"{fmt_si(lo, 's')} (max, full overlap) .. {fmt_si(hi, 's')} (sum, no overlap)"]
    if t._whole_values is not None:
        w = t._exact_times(t._whole_values, t._whole_net, useful=True)[0]
        lines.append(f"whole-model bound (weights + KV only) {fmt_si(w, 's')}; per-op sum "
                     f"is {float(t._per_op_sum / w):.2f}x of it")
    lines.append(t.bottleneck())
    return lines + list(t.notes)


def text(t: Any) -> str:
    """Aligned columns under the title, the chip and the warnings."""
    rows, total = body(t)
    table = [list(COLUMNS), *rows, total]
    widths = [max(len(r[i]) for r in table) for i in range(len(COLUMNS))]
    fmt = lambda r: "  ".join(c.ljust(w) if i == 0 else c.rjust(w)  # noqa: E731
                              for i, (c, w) in enumerate(zip(r, widths)))
    rule = "-" * len(fmt(table[0]))
    head = [t.title] if t.title else []
    ridge = float(t.chip.critical_intensity(t.dtype))
    head.append(f"{t.chip.name}, {t.dtype}: ridge {ridge:.3g} FLOP/B; {t.conventions}")
    head += [f"warning: {w}" for w in t.warnings]
    lines = head + [fmt(table[0]), rule] + [fmt(r) for r in rows] + [rule, fmt(total)]
    return "\n".join(lines + [""] + summary(t))


def markdown(t: Any) -> str:
    """A Markdown table; warnings as quotes above it, the summary as a list below."""
    rows, total = body(t)
    lines = [f"**{t.title}** ({t.conventions})" if t.title else f"({t.conventions})", ""]
    lines += [f"> **warning:** {w}\n" for w in t.warnings]
    lines += ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    lines.append("| " + " | ".join(f"**{c}**" for c in total) + " |")
    return "\n".join(lines + [""] + [f"- {s}" for s in summary(t)])


def _micro(tex: str) -> str:
    """fmt_si's ``us`` (microseconds) as µs."""
    return re.sub(r"(?<=\d) us\b", lambda _: r" $\mu$s", tex)


def latex(t: Any) -> str:
    """A booktabs ``table`` with its summary inside, set where it stands (``[H]``, from the
    ``float`` package: a floating ``[ht]`` table drifts above its heading)."""
    rows, total = body(t)
    esc = lambda r: " & ".join(_micro(tex_escape(c)) for c in r) + r" \\"  # noqa: E731
    lines = [r"\begin{table}[H] % needs \usepackage{booktabs,float}", r"\centering", r"\small",
             r"\begin{tabular}{l" + "r" * (len(COLUMNS) - 1) + "}", r"\toprule",
             esc(COLUMNS), r"\midrule", *map(esc, rows), r"\midrule", esc(total),
             r"\bottomrule", r"\end{tabular}"]
    caption = f"{t.title}; {t.conventions}" if t.title else str(t.conventions)
    lines.append(rf"\caption{{{tex_text(caption)}}}")
    # the summary stays inside the float, under its own table
    lines += [r"\par\smallskip\footnotesize\raggedright"]
    lines += [rf"\textbf{{warning:}} {tex_text(w)}\par" for w in t.warnings]
    lines += [_micro(tex_text(s.replace(" .. ", " to "))) + r"\par" for s in summary(t)]
    lines.append(r"\end{table}")
    return "\n".join(lines)
