"""Model plots: a model's ops on the roofline, decode throughput against batch, and the
attention share of FLOPs against context (matplotlib, imported only when a plot is made).

Each function returns the matplotlib ``Figure`` (a notebook shows it) and, given ``path``,
saves it; the suffix picks the format (``.png`` or ``.svg``).

>>> import symroof as sr
>>> fig = attention_share_plot(["llama-3.1-8b"], contexts=[1024, 32768])
>>> fig.axes[0].get_xscale()
'log'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..analysis import time
from ..evaluate import evaluate
from ..hardware import as_chip
from ..models import model as _model
from ..models.inference import ctx_star, step_time
from ..models.table_render import in_words
from ..models.transformer import Transformer, group
from ..symbols import B as _B
from ..symbols import S as _S
from .roofline import _pyplot, place_label, plain_log_ticks

__all__ = ["ops_roofline_plot", "throughput_plot", "attention_share_plot"]

_PHASE_STYLE = {"prefill": ("o", "tab:blue", 1), "decode": ("^", "tab:red", -1)}


def _as_model(m: Any) -> Transformer:
    return _model(m) if isinstance(m, str) else m


def _save(fig: Any, path: Any, tight: bool = True) -> Any:
    if tight:
        fig.tight_layout()
    if path:
        fig.savefig(path, dpi=120)
    return fig


def _context(context: Any) -> int:
    if isinstance(context, bool) or not isinstance(context, (int, np.integer)) or context < 1:
        raise ValueError(f"context must be a positive integer (tokens attended), got {context!r}")
    return int(context)


def _phase_rows(m: Transformer, phase: str, batch: int, context: int, attention: str,
                groups: bool) -> dict:
    new, cached = (context, 0) if phase == "prefill" else (1, context - 1)
    rows = m.ops(batch, new, cached, last_only=True, attention=attention)
    return group(rows) if groups else rows


def _clusters(xs: list[float], gap: float = 0.3) -> list[list[int]]:
    """Indices of points grouped left to right: a cluster spans less than ``gap`` decades."""
    clusters: list[list[int]] = []
    for i in sorted(range(len(xs)), key=lambda i: xs[i]):
        if clusters and np.log10(xs[i]) - np.log10(xs[clusters[-1][0]]) < gap:
            clusters[-1].append(i)
        else:
            clusters.append([i])
    return clusters


def ops_roofline_plot(model: Any, chip: Any, *, context: int = 2048, prefill_batch: int = 1,
                      decode_batch: int = 64, dtype: str = "bf16", groups: bool = True,
                      attention: str = "fused", path: Any = None, title: str | None = None):
    """The roofline of ``chip`` with the ops of one prefill step (``prefill_batch`` prompts of
    ``context`` tokens) and one decode step (``decode_batch`` sequences, one new token at
    ``context``) placed as labelled points on the roof at their useful intensity. A marker's
    area is the op's share of its step's per-op time; ops with no FLOPs (the embedding
    gather, the KV write) cannot sit on a log axis and are listed under the chart.

    >>> import symroof as sr
    >>> fig = ops_roofline_plot(sr.model("llama-3.1-8b"), sr.chip("h100"))
    >>> sorted(t.get_text() for t in fig.axes[0].get_legend().get_texts())[:2]
    ['decode: B=64, S=2048', 'h100 HBM roof (bf16)']
    """
    plt, chip = _pyplot(), as_chip(chip)
    m, S = _as_model(model), _context(context)
    peak, bw = float(chip.peak(dtype)), float(chip.hbm_bw)
    ridge = peak / bw
    phases, hidden = {}, []
    for phase, batch in (("prefill", prefill_batch), ("decode", decode_batch)):
        rows = _phase_rows(m, phase, batch, S, attention, groups)
        times = {k: float(time(c, chip, dtype, useful=True).lower) for k, c in rows.items()}
        pts = [(in_words(k), float(c.useful_intensity), times[k] / sum(times.values()))
               for k, c in rows.items()]
        hidden += [f"{k} ({phase})" for k, i, _ in pts if not 0 < i < np.inf]
        phases[phase, batch] = [p for p in pts if 0 < p[1] < np.inf]
    xs_all = [i for pts in phases.values() for _, i, _ in pts]
    lo, hi = min([0.1, *xs_all]) / 3, max([1e4, ridge, *xs_all]) * 3
    fig, ax = plt.subplots(figsize=(8, 5.5))
    fig.subplots_adjust(left=0.1, right=0.97, top=0.93, bottom=0.13)
    x = np.logspace(np.log10(lo), np.log10(hi), 400)
    ax.plot(x, np.minimum(peak, x * bw), color="k", lw=1.2, label=f"{chip.name} HBM roof ({dtype})")
    ax.plot([ridge, ridge], [lo * bw / 3, peak], ls=":", lw=0.8, color="grey")  # to the knee
    ax.text(ridge, 0.02, f"ridge {ridge:.0f} FLOP/B ", transform=ax.get_xaxis_transform(),
            rotation=90, ha="right", va="bottom", fontsize=7, color="grey")
    ax.set(xscale="log", yscale="log", xlim=(lo, hi), ylim=(lo * bw / 3, peak * 30),
           xlabel="arithmetic intensity (useful FLOP / byte)", ylabel=f"attainable {dtype} TFLOP/s")
    plain_log_ticks(ax.xaxis)
    plain_log_ticks(ax.yaxis, 1e12)
    boxes: list = []
    for (phase, batch), pts in phases.items():
        marker, color, sign = _PHASE_STYLE[phase]
        xs = [i for _, i, _ in pts]
        ys = [min(peak, i * bw) for i in xs]
        ax.scatter(xs, ys, s=[15 + 400 * share for *_, share in pts], marker=marker,
                   color=color, alpha=0.6, edgecolors="k", linewidths=0.5, zorder=3,
                   label=f"{phase}: B={batch}, S={S}")
        for idx in _clusters(xs):  # one label per cluster of nearby points, names stacked
            place_label(fig, ax, "\n".join(pts[i][0] for i in idx), (xs[idx[0]], ys[idx[0]]),
                        (6, -8), [(ridge, peak)], boxes, sign, fontsize=7, color=color)
    ax.set_title(title or f"{m.name} on {chip.name}: ops of one prefill and one decode step "
                 f"({attention} attention)", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    legend = ax.legend(fontsize=8, loc="lower right")
    for handle in getattr(legend, "legend_handles", []):
        if hasattr(handle, "set_sizes"):
            handle.set_sizes([40])  # legend markers at one size, not the first op's share
    if hidden:
        fig.text(0.01, 0.01, "not shown (no FLOPs): " + ", ".join(hidden), fontsize=7)
    return _save(fig, path, tight=False)


def throughput_plot(model: Any, chip: Any, batches: Any = None, context: int = 2048, *,
                    dtype: str = "bf16", attention: str = "fused", path: Any = None,
                    title: str | None = None):
    """Attainable decode throughput (tokens/s = B / step time) against batch B at context
    ``context``: the whole-model bound (weights + KV cache, lecture 1) and the per-op sum
    (unfused kernels one after another). A dashed line marks the batch at which weights
    plus KV cache fill HBM.

    >>> import symroof as sr
    >>> fig = throughput_plot(sr.model("llama-3.1-8b"), sr.chip("h100"), [1, 8, 64, 512])
    >>> [line.get_label() for line in fig.axes[0].get_lines()][:2]
    ['whole-model bound', 'per-op sum']
    """
    plt, chip = _pyplot(), as_chip(chip)
    m, S = _as_model(model), _context(context)
    bs = np.unique(np.geomspace(1, 1024, 60).astype(int)) if batches is None else np.asarray(
        list(batches))
    if bs.size == 0 or np.any(bs < 1):
        raise ValueError(f"batches must be positive integers, got {list(bs)!r}")
    st = step_time(m, chip, _B, 1, S - 1, dtype=dtype, attention=attention)
    curves = {"whole-model bound": st.whole.lower, "per-op sum": st.per_op_sum}
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    b = bs.astype(float)
    for label, t in curves.items():
        ax.plot(b, b / evaluate(t, B=b),
                marker=".", label=label)
    free = chip.hbm_bytes - m.params * m.w_bytes
    if float(free) <= 0:
        ax.text(0.02, 0.95, f"weights alone ({float(m.params * m.w_bytes) / 1e9:.0f} GB) "
                "exceed one chip's HBM", transform=ax.transAxes, fontsize=8, color="tab:red")
    else:
        b_max = float(free / m.kv_cache_bytes(S))  # windowed layers cap their part
        if b_max <= b.max():
            ax.axvspan(b_max, b.max(), color="tab:red", alpha=0.08)
            ax.axvline(b_max, ls="--", color="tab:red", lw=1)
            ax.text(b_max, 0.03, f"HBM full at B={b_max:.0f} (weights + KV cache > "
                    f"{float(chip.hbm_bytes) / 1e9:.0f} GB) ", transform=ax.get_xaxis_transform(),
                    fontsize=8, color="tab:red", rotation=90, ha="right", va="bottom")
    ax.set(xscale="log", yscale="log", xlabel="batch B (sequences decoded together)",
           ylabel="decode tokens/s (upper bound)")
    plain_log_ticks(ax.xaxis)
    plain_log_ticks(ax.yaxis)
    ax.set_title(title or f"{m.name} decode on {chip.name} ({dtype}), context {S}, "
                 f"{attention} attention", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, path)


def attention_share_plot(models: Sequence[Any], contexts: Any = None, *, path: Any = None,
                         title: str | None = None):
    """Share of a decoded token's FLOPs spent in the attention core, 4LHd_hS / (2P_mm +
    4LHd_hS), against context S, one curve per model; a dot marks ctx* (share 1/2).

    >>> import symroof as sr
    >>> fig = attention_share_plot(["llama-3.1-8b", sr.model("llama-2-7b")])
    >>> [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    ['llama-3.1-8b (ctx* = 28,628)', 'llama-2-7b (ctx* = 25,204)']
    """
    plt = _pyplot()
    ms = [_as_model(m) for m in ([models] if isinstance(models, (str, Transformer)) else models)]
    if not ms:
        raise ValueError("attention_share_plot() needs at least one model")
    cs = np.geomspace(64, 1 << 20, 200) if contexts is None else np.asarray(list(contexts), float)
    if cs.size == 0 or np.any(cs <= 0):
        raise ValueError(f"contexts must be positive, got {list(cs)!r}")
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for m in ms:
        attn = m.attn_flops_per_token(_S)
        share = evaluate(attn / (2 * m.matmul_params + attn), S=cs)
        star = float(ctx_star(m))
        (line,) = ax.plot(cs, share, label=f"{m.name} (ctx* = {star:,.0f})")
        if cs.min() <= star <= cs.max():
            ax.plot([star], [0.5], "o", color=line.get_color(), ms=5)
    ax.axhline(0.5, ls=":", lw=0.8, color="grey")
    ax.set(xscale="log", ylim=(0, 1), xlabel="context S (tokens attended)",
           ylabel="attention share of FLOPs per token")
    plain_log_ticks(ax.xaxis)
    ax.set_title(title or "Attention share of a decoded token's FLOPs", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, path)
