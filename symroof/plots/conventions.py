"""Per-op time of one step under several conventions, side by side (matplotlib, imported
only when a plot is made): where two calculators' numbers part, row group by row group.

>>> import symroof as sr
>>> fig = conventions_plot("tiny", "h100", batch=1, context=64)
>>> len(fig.axes[0].patches) > 0
True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..conventions import PROFILES, profile
from ..hardware import as_chip
from ..models import model as _model
from ..models.table import RooflineTable
from ..models.table_render import in_words
from ..models.transformer import group
from .roofline import _pyplot


def conventions_plot(model: Any, chip: Any, *, batch: int, context: int,
                     phase: str = "decode", profiles: Sequence[str] = tuple(PROFILES),
                     attention: str = "fused", dtype: str = "bf16", path: Any = None) -> Any:
    """Bars of each op group's time (the per-op lower bounds, summed in the group) of one
    step under each profile in ``profiles``; returns the Figure, saved to ``path`` if given.
    """
    m = _model(model) if isinstance(model, str) else model
    chip = as_chip(chip)
    new, cached = (context, 0) if phase == "prefill" else (1, context - 1)
    tables = {}
    for p in profiles:  # one configuration each: the exact rows, not a compiled table
        cv = profile(p)
        rows = m.ops(batch, new, cached, last_only=cv.last_only, attention=attention,
                     conventions=cv)
        tables[p] = RooflineTable(group(rows), chip, dtype,
                                  useful=cv.counted == "useful_flops", conventions=cv)
    names = list(dict.fromkeys(n for t in tables.values() for n in t.numbers))
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(10, 4))
    width = 0.8 / len(tables)
    for i, (p, t) in enumerate(tables.items()):
        ys = [t.numbers[n].lower * 1e3 if n in t.numbers else 0.0 for n in names]
        ax.bar([k + (i - (len(tables) - 1) / 2) * width for k in range(len(names))], ys,
               width, label=f"{p} ({float(t._per_op_sum) * 1e3:.3g} ms)")
    ax.set_xticks(range(len(names)), [in_words(n) for n in names], rotation=30, ha="right")
    ax.set_yscale("log")
    ax.set_ylabel("time (ms, per-op lower bound)")
    ax.set_title(f"{m.name} {phase}, batch {batch}, context {context} on {chip.name}")
    ax.legend(title="conventions (per-op sum)", fontsize=8, loc="upper left",
              bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    if path:
        fig.savefig(path, dpi=120)
    return fig
