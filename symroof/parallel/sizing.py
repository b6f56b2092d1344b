"""Serving questions around a plan (book ch. 7 and 8): the smallest slice that holds a
model, the latency/throughput curve as batch grows, KV evictions, the prefill:decode server
ratio, the cost of a million tokens, and the critical batch of a mixture-of-experts layer.

>>> import symroof as sr
>>> [smallest_slice("llama-3.1-70b", "tpu-v5e", weights=w) for w in ("bf16", "int8", "int4")]
['4x4', '2x4', '2x2']
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import sympy as sp

from ..analysis import critical_batch
from ..conventions import Conventions, as_conventions
from ..cost import as_exact
from ..evaluate import evaluate
from ..hardware.chip import as_chip
from ..symbols import B as _B
from ..symbols import S as _S
from .inverse import min_chips, slices  # noqa: F401  (slices: its home is inverse)
from .serving import ServePlan, serve, width

__all__ = ["smallest_slice", "slices", "latency_throughput", "kv_evictions",
           "prefill_decode_ratio", "cost_per_million_tokens", "flops_per_dollar",
           "moe_critical_batch"]


def smallest_slice(model: Any, chip: Any, *, weights: str = "bf16", kv: str | None = None,
                   batch: int = 0, context: int = 1) -> str:
    """The smallest slice (``slices(chip)``, and a TPU's whole pod) whose HBM holds the
    weights and ``batch`` sequences of KV cache at ``context`` (``sr.min_chips`` of those
    bytes); fails with what it would need if none does.

    >>> smallest_slice("llama-3.1-70b", "tpu-v5e", weights="int8")   # 70.6 GB of weights
    '2x4'
    """
    from ..models import model as _model

    m = _model(model) if isinstance(model, str) else model
    chip = as_chip(chip)
    need = m.params * width(weights, "weights")
    if batch:
        kv_width = width(kv, "KV") if kv else m.kv_bytes
        need += batch * m.kv_cache_bytes(context) / m.kv_bytes * kv_width
    held = min_chips(need, chip)
    if held.slice is not None:
        return held.slice
    raise ValueError(f"{m.name} needs {float(need) / 1e9:.1f} GB, more than the largest "
                     f"{chip.name} slice holds ({slices(chip)[-1]})")


def latency_throughput(model: Any, mesh: Any, *, context: Any, batches: Any = None,
                       weights: str = "bf16", kv: str | None = None,
                       form: str = "plan", conventions: Any = None) -> dict[str, np.ndarray]:
    """Step latency and tokens/s per chip as batch grows, evaluated in one compiled NumPy
    call over ``batches`` and ``context`` (numbers or arrays, broadcast together: pass
    ``batches[:, None]`` and ``contexts[None, :]`` for a grid). ``batches`` defaults to 1 ..
    the HBM cap of a single context. Returns arrays ``batch``, ``context``, ``latency`` (s,
    the lower bound), ``upper`` (s, no overlap), ``tokens_per_s_per_chip``, the HBM cap
    ``max_batch`` (per context) and ``fits`` (batch <= cap). ``form="book"``: the step
    is the book's general form instead (ch. 7, ``ServePlan.book_time``: B KV/W + max(2BP/C,
    P_bytes/W), attention and the MLP not overlapped, no ICI), both ``latency`` and
    ``upper``. ``conventions`` (a profile name or record; default the one in force) builds
    the plan, as :func:`symroof.serve` does.

    >>> import symroof as sr
    >>> c = latency_throughput("llama-3.1-8b", sr.mesh("tpu-v5e", "2x2"), context=4096,
    ...                        batches=[1, 8, 64])
    >>> [round(float(x) * 1e3, 2) for x in c["latency"]], int(c["max_batch"])
    ([4.75, 5.95, 15.56], 89)
    """
    if form not in ("plan", "book"):
        raise ValueError(f"form must be 'plan' or 'book', got {form!r}")
    plan = _symbolic_plan(model, mesh, weights, kv, as_conventions(conventions))
    s = np.asarray(context, dtype=np.float64)
    if s.size and not (s >= 1).all():
        raise ValueError(f"context must be >= 1, got {s.min():g}")
    m = plan.model
    free = float(plan.n * plan.mesh.chip.hbm_bytes - m.params * m.w_bytes)
    per_seq = evaluate(m.kv_cache_bytes(_S), S=s)  # windows cap their layers
    cap = np.maximum(np.floor(free / np.asarray(per_seq, dtype=np.float64)), 0)
    if batches is None:
        if s.ndim:
            raise ValueError("give batches when context is an array")
        batches = np.arange(1, max(int(cap), 1) + 1)
    b = np.asarray(batches, dtype=np.float64)
    if b.size and not (b >= 1).all():
        raise ValueError(f"batches must be >= 1, got {b.min():g}")
    if form == "book":
        book = evaluate(plan.book_time, B=b, S=s)
        t = {"lower": book, "upper": book}
    else:
        t = evaluate(plan.time, B=b, S=s)
    return {"batch": b, "context": s, "latency": t["lower"], "upper": t["upper"],
            "tokens_per_s_per_chip": b / (t["lower"] * float(plan.n)), "max_batch": cap,
            "fits": b <= cap}


@functools.lru_cache(maxsize=32)
def _symbolic_plan(model: Any, mesh: Any, weights: str, kv: str | None,
                   conventions: Conventions) -> ServePlan:
    """The decode step with batch and context left as B and S, built once per (model, mesh,
    widths, conventions record): a curve's evaluations then only substitute numbers."""
    return serve(model, mesh, batch=_B, context=_S, weights=weights, kv=kv,
                 conventions=conventions)


def kv_evictions(batch: Any, prompt: Any, generated: Any) -> sp.Expr:
    """KV tokens evicted per decode step in steady state: B (P + G) / G (ch. 8), with P the
    prompt and G the generated length of a request.

    >>> kv_evictions(32, 1000, 200)
    192
    """
    b, p, g = (as_exact(v, n) for v, n in ((batch, "batch"), (prompt, "prompt"),
                                            (generated, "generated")))
    return b * (p + g) / g


def prefill_decode_ratio(t_prefill: Any, t_step: Any, *, batch: Any, generated: Any) -> sp.Expr:
    """Prefill servers per decode server (ch. 7): prefill at batch 1 supplies 1/T_prefill
    sequences a second, a decode server consumes B / (T_step n_decode): P/G = B T_prefill /
    (T_step n_decode).

    >>> prefill_decode_ratio(0.2, 0.02, batch=64, generated=512)
    5/4
    """
    return (as_exact(batch, "batch") * as_exact(t_prefill, "t_prefill")
            / (as_exact(t_step, "t_step") * as_exact(generated, "generated")))


def cost_per_million_tokens(plan: ServePlan, usd_per_chip_hour: Any, source: str) -> sp.Expr:
    """Dollars per million decoded tokens: price N t_step / (3600 B) x 1e6. The price is an
    input with its ``source`` (the book's Feb 2025 Google Cloud list: v5e $1.2, v5p $4.2,
    H100 $10.8 per chip-hour); the answer is exact.

    >>> import symroof as sr
    >>> plan = sr.serve("llama-3.1-8b", sr.mesh("tpu-v5e", "2x2"), batch=64, context=2048)
    >>> round(float(cost_per_million_tokens(plan, 1.2, "book ch. 8, GCP Feb 2025")), 3)
    0.215
    """
    if not isinstance(source, str) or not source.strip():
        raise ValueError("a price needs its source (where and when it was quoted)")
    price = as_exact(usd_per_chip_hour, "usd_per_chip_hour")
    return price * plan.n * plan.time.lower / (3600 * plan.batch) * 10**6


def flops_per_dollar(chip: Any, usd_per_chip_hour: Any, source: str, *,
                     dtype: str = "bf16") -> sp.Expr:
    """FLOPs one dollar buys at the chip's peak: C x 3600 / price per chip-hour (ch. 8),
    exact; the price is an input with its ``source``.

    >>> import symroof as sr
    >>> f"{float(flops_per_dollar('tpu-v5e', 1.2, 'book ch. 8, GCP Feb 2025')):.2e}"
    '5.91e+17'
    """
    if not isinstance(source, str) or not source.strip():
        raise ValueError("a price needs its source (where and when it was quoted)")
    price = as_exact(usd_per_chip_hour, "usd_per_chip_hour")
    if price.is_number and not price > 0:
        raise ValueError(f"usd_per_chip_hour must be positive, got {usd_per_chip_hour!r}")
    return as_chip(chip).peak(dtype) * 3600 / price


def moe_critical_batch(chip: Any, *, experts: Any, top_k: Any, **kwargs: Any) -> sp.Expr:
    """Critical batch of a mixture-of-experts layer: (E / k) B_crit (ch. 7), since every
    expert's weights are read each step while a token uses k of them; assumes B k >= E.

    >>> import symroof as sr
    >>> float(moe_critical_batch("tpu-v5e", experts=8, top_k=2)) == 4 * 9850 / 41
    True
    """
    E, k = as_exact(experts, "experts"), as_exact(top_k, "top_k")
    if E.is_number and k.is_number and not (0 < k <= E):
        raise ValueError(f"top_k must be between 1 and experts ({E}), got {top_k!r}")
    return E / k * critical_batch(chip, **kwargs)

