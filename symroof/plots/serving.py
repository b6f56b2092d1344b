"""Serving plots: step latency against tokens/s per chip as the batch grows, one curve per
slice (or context), with each curve's HBM cap marked (matplotlib, imported when drawn).

>>> import symroof as sr
>>> fig = latency_throughput_plot("llama-3.1-8b", [sr.mesh("tpu-v5e", "2x2")], context=4096)
>>> fig.axes[0].get_xlabel()
'tokens/s per chip'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..conventions import as_conventions
from ..parallel.sizing import latency_throughput
from .model import _save
from .roofline import _pyplot

__all__ = ["latency_throughput_plot"]


def latency_throughput_plot(model: Any, meshes: Sequence[Any], *, context: int = 4096,
                            weights: str = "bf16", kv: str | None = None,
                            batches: Any = None, path: Any = None, title: str | None = None,
                            conventions: Any = None):
    """Per-token latency (ms) against throughput (tokens/s per chip) for batches 1, 2, 4, ...
    (and the cap) on each mesh; the batch where weights + KV cache fill HBM ends the solid
    curve (beyond it, dotted: the batch does not fit), with a marker.
    Each mesh's curve is one compiled evaluation over all its batches; the legend names
    each mesh's cap. ``conventions`` (a profile name or record; default the one in force)
    builds every plan, and the title names any but symroof's."""
    cv = as_conventions(conventions)
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for i, mesh in enumerate(meshes):
        colour = f"C{i}"
        label = f"{mesh.title} ({mesh.n_chips} chips)"
        cap = int(latency_throughput(model, mesh, context=context, batches=[1], weights=weights,
                                     kv=kv, conventions=cv)["max_batch"])
        if cap < 1:  # nothing to draw: the legend says why
            ax.plot([], [], "o-", color=colour, ms=3,
                    label=f"{label}: the weights alone do not fit")
            continue
        top = np.asarray(batches if batches is not None else 2 ** np.arange(0, 13), float)
        top = np.union1d(top, [cap, cap + 1])  # the cap is a point of the curve, and one past
        c = latency_throughput(model, mesh, context=context, batches=top, weights=weights,
                               kv=kv, conventions=cv)
        x, y, fits = c["tokens_per_s_per_chip"], c["latency"] * 1e3, c["fits"]
        ax.plot(x[fits], y[fits], "o-", color=colour, ms=3, label=f"{label}: HBM full at "
                f"B={cap}")
        last = np.flatnonzero(fits)[-1:]  # dotted from the last batch that fits
        over = np.concatenate([last, np.flatnonzero(~fits)[:2]])
        if over.size > len(last):
            ax.plot(x[over], y[over], ":", color=colour, alpha=0.6)
        k = int(np.flatnonzero(c["batch"] == cap)[0])
        ax.plot([x[k]], [y[k]], "s", color=colour, ms=7, mfc="white")
    # the caps are named in the legend, not beside their markers: labels there crowd each
    # other and the curves whenever two slices cap at similar throughput
    ax.plot([], [], "s", color="0.4", ms=7, mfc="white",
            label="HBM full: the largest batch that fits (dotted: past it)")
    ax.set(xscale="log", yscale="log", xlabel="tokens/s per chip",
           ylabel="step latency (ms, per generated token)")
    name = model if isinstance(model, str) else model.name
    ax.set_title(title or f"{name} decode at context {context} (weights {weights}): "
                 "batch 1, 2, 4, ... along each curve" + cv.title_part, fontsize=10)
    from matplotlib import ticker

    for axis in (ax.xaxis, ax.yaxis):  # 1, 2, 5, 10, 20: plain numbers, not 2 x 10^1
        axis.set_major_locator(ticker.LogLocator(subs=(1, 2, 3, 5, 7)))
        axis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        axis.set_minor_formatter(ticker.NullFormatter())
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    return _save(fig, path)
