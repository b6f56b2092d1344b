"""The plot of a side-by-side comparison (``sr.compare(...).plot()``, ``symroof compare
--plot``): one group of bars per compared value, one bar per plotted column, read from the
comparison's cells (matplotlib, imported when drawn).

>>> import symroof as sr
>>> c = sr.compare("critical-batch", "chips", ["tpu-v5e", "h100"])
>>> fig = compare_plot(c)
>>> [t.get_text() for t in fig.axes[0].get_xticklabels()]
['tpu-v5e', 'h100']
"""

from __future__ import annotations

import textwrap
from typing import Any

import sympy as sp

from .model import _save
from .roofline import _pyplot, plain_log_ticks

__all__ = ["compare_plot"]

def _number(value: Any) -> float | None:
    """A cell as a float bar height, or None (no value, text, or not finite)."""
    if value is None or isinstance(value, (str, bool)):
        return None
    value = sp.sympify(value)
    return float(value) if value.is_finite and value > 0 else None


def compare_plot(comparison: Any, *, path: Any = None, title: str | None = None):
    """Bars of the comparison's plotted columns (they share a unit), grouped by label; a
    log axis where the bars span more than 30x; a cell without a number has no bar, and its
    text ("never") or "none" stands in its group's place.

    >>> import symroof as sr
    >>> c = sr.compare("critical-batch", "dtypes", ["bf16", "int8"], chip="h100")
    >>> compare_plot(c).axes[0].get_ylabel()
    'batch B (sequences)'
    """
    plt = _pyplot()
    labels = list(comparison.labels)
    cols = [c for c in comparison.columns if c.plotted and any(
        _number(comparison.cells[x].get(c.key)) is not None for x in labels)]
    if not cols:
        raise ValueError(f"this {comparison.question} comparison has no number to plot")
    ylabel, scale = comparison.plot_label, 1.0
    if cols[0].unit == "s":  # seconds, or milliseconds where every bar is under a second
        top = max(_number(comparison.cells[x].get(c.key)) or 0 for x in labels for c in cols)
        ylabel, scale = (f"{ylabel} (ms)", 1e-3) if top < 1 else (f"{ylabel} (s)", 1.0)
    fig, ax = plt.subplots(figsize=(max(5.0, 1.3 * len(labels) * len(cols) ** 0.5 + 2.5), 4))
    width = 0.8 / len(cols)
    heights, empty = [], {}
    for j, col in enumerate(cols):
        xs, ys = [], []
        for i, label in enumerate(labels):
            value = comparison.cells[label].get(col.key)
            h = _number(value)
            if h is not None:
                xs.append(i - 0.4 + width * (j + 0.5))
                ys.append(h / scale)
            else:  # no bar: say so under the group ("never", or no answer at all)
                empty.setdefault(i, []).append(value if isinstance(value, str) else "none")
        heights += ys
        ax.bar(xs, ys, width=width * 0.92, color=f"C{j}", label=col.header)
    from matplotlib.transforms import blended_transform_factory

    under = blended_transform_factory(ax.transData, ax.transAxes)
    for i, texts in empty.items():
        ax.text(i, 0.03, " / ".join(dict.fromkeys(texts)), transform=under, ha="center",
                fontsize=8, color="0.35")
    ax.set_xticks(range(len(labels)), labels)
    ax.set_xlim(-0.6, len(labels) - 0.4)
    if heights and max(heights) > 30 * min(heights):
        ax.set_yscale("log")
        plain_log_ticks(ax.yaxis)
    ax.set_ylabel(ylabel)
    ax.set_xlabel(comparison.rows()[0][0])
    ax.grid(True, axis="y", which="both", alpha=0.3)
    if len(cols) > 1:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    ax.set_title("\n".join(textwrap.wrap(title or comparison.title, 70)), fontsize=9)
    return _save(fig, path)
