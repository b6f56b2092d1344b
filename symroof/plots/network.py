"""Network plots: collective time against buffer size, and the compute and communication
times of sharded matmuls against one dimension (matplotlib, imported only when a plot is made).

Each function returns the matplotlib ``Figure`` (a notebook shows it) and, given ``path``,
saves it; the suffix picks the format (``.png`` or ``.svg``). Times are evaluated from the
exact formulas of :mod:`symroof.hardware.collectives` and :mod:`symroof.parallel.matmul`;
crossovers are solved with :func:`symroof.crossover`.

>>> import symroof as sr
>>> fig = collective_plot({"v5e 16x16, X": (sr.mesh("tpu-v5e", "16x16"), "X")})
>>> fig.axes[0].get_xscale(), fig.axes[0].get_yscale()
('log', 'log')
>>> fig.axes[0].get_legend().get_texts()[0].get_text()
'v5e 16x16, X: all-gather, V / 90 GB/s, knee 720 kB'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import sympy as sp

from ..analysis import crossover
from ..evaluate import evaluate
from ..hardware.collectives import KINDS, collective
from ..hardware.mesh import Mesh
from ..parallel.matmul import STRATEGIES, shard_matmul
from ..render import fmt_si
from ..symbols import V_b as _V
from ..symbols import dimension
from .roofline import _pyplot

__all__ = ["collective_plot", "sharded_matmul_plot"]

_KIND_STYLE = {"all-gather": "-", "reduce-scatter": (0, (6, 2)), "all-reduce": "--",
               "all-to-all": ":"}
_AXIS_LABEL = {"B": "batch B (rows of X: tokens)", "D": "model width D (contracted)",
               "F": "MLP width F", "X": "mesh axis size X"}
_BOOK = {"all-gather": "AllGather", "reduce-scatter": "ReduceScatter",
         "all-reduce": "AllReduce", "all-to-all": "AllToAll"}


def _si(x: float, unit: str) -> str:
    """``fmt_si`` with a real micro sign, for tick labels and legends; a bare count is
    written close up (``10k``)."""
    text = fmt_si(x, unit)
    return text.replace(f" u{unit}", f" µ{unit}") if unit else text.replace(" ", "")


def _si_axis(axis: Any, unit: str) -> None:
    """Decade ticks labelled in SI units (1 kB, 10 µs); minor ticks unlabelled (and cheap)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis.set_major_locator(LogLocator(base=10))
    axis.set_major_formatter(FuncFormatter(lambda x, _: _si(x, unit) if x > 0 else ""))
    axis.set_minor_locator(LogLocator(base=10, subs=(2.0, 5.0)))
    axis.set_minor_formatter(NullFormatter())


def _save(fig: Any, path: Any) -> Any:
    if path:
        fig.savefig(path, dpi=120)
    return fig


def _mesh_label(m: Mesh, names: tuple[str, ...]) -> str:
    return f"{m.title}, {'/'.join(names)}"


def _entries(meshes_and_axes: Any) -> list[tuple[str, Mesh, tuple[str, ...]]]:
    items = (list(meshes_and_axes.items()) if isinstance(meshes_and_axes, Mapping)
             else [(None, e) for e in meshes_and_axes])
    if not items:
        raise ValueError("collective_plot() needs at least one (mesh, axes) pair")
    out = []
    for label, entry in items:
        if not (isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[0], Mesh)):
            raise ValueError("each entry must be a (mesh, axes) pair such as "
                             f"(sr.mesh('tpu-v5e', '16x16'), 'X'), got {entry!r}")
        names = entry[0].axis_names(entry[1])
        out.append((label or _mesh_label(entry[0], names), entry[0], names))
    return out


def _kind(kind: Any) -> str:
    key = kind.strip().lower().replace("_", "-") if isinstance(kind, str) else kind
    if key not in KINDS:
        raise ValueError(f"unknown collective {kind!r}; known: {', '.join(KINDS)}")
    return key


def _curve(expr: sp.Expr, sym: sp.Symbol, xs: np.ndarray) -> np.ndarray:
    if sym not in expr.free_symbols:
        return np.full(xs.shape, float(expr))
    return np.broadcast_to(evaluate(expr, {sym: xs}), xs.shape)


def collective_plot(meshes_and_axes: Any, kinds: Sequence[str] = ("all-gather",),
                    sizes: Any = None, *, path: Any = None, title: str | None = None):
    """Collective time against buffer size V (bytes of one group's array), log-log: one
    colour per (mesh, axes) pair, one line style per kind. A dot marks each latency knee,
    the V where the latency floor equals the bandwidth term (``sr.crossover(t_lat, t_bw,
    V)``); below it the time is flat. The legend gives the bandwidth-bound time as
    V / (effective bandwidth) and the knee.

    ``meshes_and_axes``: ``{label: (mesh, axes)}`` or a sequence of ``(mesh, axes)`` pairs.

    >>> import symroof as sr
    >>> fig = collective_plot([(sr.mesh("tpu-v4p", "4x4x4"), "X")], kinds=("all-reduce",))
    >>> fig.axes[0].get_legend().get_texts()[0].get_text()
    'tpu-v4p 4x4x4, X: all-reduce, V / 45 GB/s, knee 180 kB'
    """
    plt = _pyplot()
    entries, kinds = _entries(meshes_and_axes), [_kind(k) for k in kinds]
    if not kinds:
        raise ValueError("collective_plot() needs at least one collective kind")
    vs = np.geomspace(1e3, 1e10, 141) if sizes is None else np.asarray(list(sizes), float)
    if vs.size == 0 or np.any(vs <= 0):
        raise ValueError(f"sizes must be positive byte counts, got {list(vs)!r}")
    fig, ax = plt.subplots(figsize=(8, 4.8))
    for i, (label, m, names) in enumerate(entries):
        for kind in kinds:
            c = collective(kind, m, _V, names)
            extra = (c.t_bw.free_symbols | c.t_lat.free_symbols) - {_V}
            if extra:
                raise ValueError(f"{label}: the collective time is symbolic in "
                                 f"{sorted(s.name for s in extra)}; plot a mesh of numbers")
            t = np.maximum(_curve(c.t_bw, _V, vs), float(c.t_lat))
            text = f"{label}: {kind}, V / {_si(float(_V / c.t_bw), 'B/s')}"
            if c.t_lat != 0:
                knee = float(crossover(c.t_lat, c.t_bw, _V))
                text += f", knee {_si(knee, 'B')}"
                if vs.min() <= knee <= vs.max():
                    ax.plot([knee], [float(c.t_lat)], "o", color=f"C{i}", ms=5, zorder=3)
            ax.plot(vs, t, color=f"C{i}", ls=_KIND_STYLE[kind], lw=1.5, label=text)
    ax.set(xscale="log", yscale="log", xlabel="buffer size V (bytes of one group's array)",
           ylabel="collective time (bound)")
    _si_axis(ax.xaxis, "B")
    _si_axis(ax.yaxis, "s")
    ax.set_title(title or "Collective time against buffer size; dots: latency knee "
                 "(latency floor = bandwidth term)", fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    fig.subplots_adjust(left=0.11, right=0.97, top=0.93, bottom=0.11)  # no tight_layout pass
    return _save(fig, path)


def _cases(texts: Any) -> list[tuple[str, str, str]]:
    """``[(label, text, strategy)]`` from strings, ``(text, strategy)`` pairs or a dict."""
    items = (list(texts.items()) if isinstance(texts, Mapping)
             else [(None, t) for t in ([texts] if isinstance(texts, str) else texts)])
    if not items:
        raise ValueError("sharded_matmul_plot() needs at least one matmul")
    out = []
    for label, entry in items:
        text, strategy = (entry, "auto") if isinstance(entry, str) else tuple(entry)
        if strategy not in STRATEGIES:
            raise ValueError(f"strategy of {text!r} must be one of {', '.join(STRATEGIES)}, "
                             f"got {strategy!r}")
        out.append((label or (text if strategy == "auto" else f"{text} ({strategy})"),
                    text, strategy))
    return out


def _crossing(lhs: sp.Expr, rhs: sp.Expr, sym: sp.Symbol, xs: np.ndarray) -> float | None:
    """Where ``lhs = rhs``: solved exactly, or (a latency floor makes ``rhs`` a Max that
    ``solve`` cannot take) found on the plotted range by bisection."""
    try:
        return float(crossover(lhs, rhs, sym))
    except ValueError:
        return None
    except NotImplementedError:
        pass
    grid = np.geomspace(xs.min(), xs.max(), 2001)
    diff = _curve(lhs, sym, grid) - _curve(rhs, sym, grid)
    change = np.nonzero(np.sign(diff[:-1]) * np.sign(diff[1:]) < 0)[0]
    if change.size == 0:
        return None
    lo, hi = grid[change[0]], grid[change[0] + 1]
    for _ in range(60):
        mid = np.sqrt(lo * hi)
        d = float(_curve(lhs - rhs, sym, np.array([mid]))[0])
        lo, hi = (mid, hi) if np.sign(d) == np.sign(diff[change[0]]) else (lo, mid)
    return float(np.sqrt(lo * hi))


def _draw_case(ax: Any, sm: Any, sym: sp.Symbol, xs: np.ndarray, i: int, n: int) -> str:
    """Draw one case's compute (solid) and communication (dashed) time, and its crossover;
    return its legend text. Equal curves stay visible: earlier cases are drawn wider and
    dashes interleave."""
    color = f"C{i}"
    t_math = _curve(sm.t_math, sym, xs)
    ax.plot(xs, t_math, color=color, lw=1.3 + 2.4 * (n - 1 - i) / max(n - 1, 1))
    steps = ", ".join(f"{_BOOK[s.collective.kind]}_{''.join(s.collective.axes)}"
                      for s in sm.steps) or "no communication"
    if sm.t_comms == 0:
        return steps
    t_comms = _curve(sm.t_comms, sym, xs)
    ax.plot(xs, t_comms, color=color, lw=1.6, ls=(3 * i, (3, 3 * max(n - 1, 1))))
    at = _crossing(sm.t_math, sm.t_comms, sym, xs)
    if at is None or not xs.min() <= at <= xs.max():
        side = "compute" if t_math[-1] > t_comms[-1] else "comms"
        return f"{steps}, {side}-bound throughout"
    ax.plot([at], [float(_curve(sm.t_math, sym, np.array([at]))[0])], "o", color=color,
            ms=6, zorder=3)
    return f"{steps}, {sym.name}* = {at:,.0f}"


def _layout(fig: Any, ax: Any, mesh: Mesh, sizes: dict, var: str, rows: int) -> None:
    """Axes, title and the legend under the axes (0.55 in for the x labels, 0.17 an entry)."""
    ax.plot([], [], color="k", lw=1.2, label="solid: compute time per chip")
    ax.plot([], [], color="k", ls="--", lw=1.2, label="dashed: communication time")
    ax.set(xscale="log", yscale="log", xlabel=_AXIS_LABEL.get(var, var),
           ylabel="time per chip")
    _si_axis(ax.xaxis, "")
    _si_axis(ax.yaxis, "s")
    fixed = ", ".join(f"{k} = {v:,}" if isinstance(v, int) else f"{k} = {v}"
                      for k, v in sizes.items())
    shape = ", ".join(f"{a.name} = {a.size}" for a in mesh.axes)
    ax.set_title(f"Sharded matmuls on {mesh.chip.name} ({shape})"
                 + (f"; {fixed}" if fixed else ""), fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    height = fig.get_figheight()
    top, bottom = 1 - 0.35 / height, (0.65 + 0.17 * rows) / height
    below = 0.5 / (height * (top - bottom))  # 0.5 in under the axes, in axes units
    ax.legend(fontsize=7.5, loc="upper left", bbox_to_anchor=(-0.1, -below), frameon=False)
    fig.subplots_adjust(left=0.11, right=0.97, top=top, bottom=bottom)


def sharded_matmul_plot(mesh: Mesh, texts: Any, var: str = "B", values: Any = None,
                        sizes: Mapping[str, Any] | None = None, *, path: Any = None,
                        title: str | None = None):
    """Per-chip compute time (solid) and communication time (dashed) of sharded matmuls
    against the dimension ``var``, one colour per case; a dot marks each crossover
    (compute = communication), and the legend says which side of it each case is on.

    ``texts``: a matmul in the book's notation, a sequence of them (each a string or a
    ``(text, strategy)`` pair) or ``{label: text or (text, strategy)}``; ``sizes`` give
    every other dimension (``{"D": 8192, "F": 32768}``); ``values`` the range of ``var``.

    >>> import symroof as sr
    >>> fig = sharded_matmul_plot(sr.mesh("tpu-v5p", "4x4x4"),
    ...                           [("X[B, D] @ W[D_X, F] -> [B, F]", "gather")],
    ...                           sizes={"D": 8192, "F": 32768})
    >>> fig.axes[0].get_legend().get_texts()[0].get_text()
    'X[B, D] @ W[D_X, F] -> [B, F] (gather): AllGather_X, B* = 2,550'
    """
    plt = _pyplot()
    if not isinstance(mesh, Mesh):
        raise TypeError(f"sharded_matmul_plot() takes a Mesh (sr.mesh(chip, '4x4')), "
                        f"got {mesh!r}")
    cases, sizes = _cases(texts), dict(sizes or {})
    if var in sizes:
        raise ValueError(f"{var!r} is the plotted variable; leave it out of sizes")
    sym = dimension(var)
    xs = np.geomspace(1, 1e5, 241) if values is None else np.asarray(list(values), float)
    if xs.size < 2 or np.any(xs <= 0):
        raise ValueError(f"values of {var} must be at least two positive numbers")
    rows = len(cases) + 2  # legend entries, drawn under the axes
    fig, ax = plt.subplots(figsize=(8, 4.2 + 0.2 * rows))
    seen: dict = {}  # compute-time formula -> the first case that has it
    for i, (label, text, strategy) in enumerate(cases):
        sm = shard_matmul(mesh, text, strategy=strategy, **sizes)
        extra = (sm.t_math.free_symbols | sm.t_comms.free_symbols) - {sym}
        if extra:
            raise ValueError(f"{text!r}: give sizes for {', '.join(sorted(map(str, extra)))} "
                             f"(only {var} varies)")
        legend = f"{label}: " + _draw_case(ax, sm, sym, xs, i, len(cases))
        if sm.t_math in seen:
            legend += f" (compute time as {seen[sm.t_math]})"
        seen.setdefault(sm.t_math, f"'{label}'")
        ax.plot([], [], color=f"C{i}", lw=1.6, label=legend)
    _layout(fig, ax, mesh, sizes, var, rows)
    if title:
        ax.set_title(title, fontsize=10)
    return _save(fig, path)
