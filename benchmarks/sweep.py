"""A 10^6-point (batch, context) sweep of decode-step time bounds, three ways.

The formula: the whole-model lower bound of one decode step of Llama-3.1-8B on an H100,
max(FLOPs / C, bytes / W) over a 1000 x 1000 grid of batch and context. Timed, in the same
run, as (1) symroof's vectorised path, ``sr.evaluate`` of the derived SymPy expression
(compiled once, cached); (2) the same formula written by hand in NumPy; (3) SymPy ``subs``
point by point, on a sample, extrapolated to the grid. Also the full ``sweep_step_time``
(t_math, t_mem, t_net, lower, upper) against the hand-written version of all five.
Targets: (1) within 1.5x of (2); (1) at least 1000x faster than (3).

    python benchmarks/sweep.py [small|full]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

try:
    import symroof  # noqa: F401
except ModuleNotFoundError:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import symroof as sr  # noqa: E402
from symroof.evaluate import evaluate  # noqa: E402
from symroof.hardware import Chip  # noqa: E402
from symroof.models.sweep import sweep_step_time  # noqa: E402
from symroof.symbols import B, S  # noqa: E402

SIZES = {"small": (30, 3, 3), "full": (1000, 300, 15)}  # side of the grid, subs sample, reps


def _hand(model: sr.Transformer, chip: Chip):
    """The decode step's whole-model bounds, typed in by hand from docs/accounting.md."""
    P = int(model.matmul_params)
    attn = 4 * int(model.L * model.H * model.d_h)  # FLOPs per (token, context position)
    kv = int(model.kv_bytes_per_token)
    C, W, wb = float(chip.peak("bf16")), float(chip.hbm_bw), int(model.w_bytes)

    def lower(b, s):
        return np.maximum(b * (2 * P + attn * s) / C, (P * wb + b * s * kv) / W)

    def bounds(b, s):
        t_math, t_mem = b * (2 * P + attn * s) / C, (P * wb + b * s * kv) / W
        return {"t_math": t_math, "t_mem": t_mem, "t_net": np.zeros(t_math.shape),
                "lower": np.maximum(t_math, t_mem), "upper": t_math + t_mem}

    return lower, bounds


def _best(fns: dict, reps: int) -> dict[str, float]:
    """Best wall time of each callable, the callables interleaved in every round."""
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(reps):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def main(size: str = "full") -> dict:
    """Time the three paths; check they agree; return the times and the ratios."""
    if size not in SIZES:
        raise ValueError(f"size must be one of {sorted(SIZES)}, got {size!r}")
    n, sample, reps = SIZES[size]
    model, chip = sr.model("llama-3.1-8b"), sr.chip("h100")
    b = np.arange(1, n + 1, dtype=float)[:, None]  # (n, 1) batch
    s = np.linspace(1, 131072, n).round()[None, :]  # (1, n) context
    start = time.perf_counter()
    expr = sr.step_time(model, chip, B, 1, S - 1).whole.lower
    derive = time.perf_counter() - start
    start = time.perf_counter()
    ours = evaluate(expr, B=b, S=s)
    first = time.perf_counter() - start
    lower, bounds = _hand(model, chip)
    assert np.allclose(ours, lower(b, s), rtol=1e-12), "vectorised != hand-written"
    sweep_step_time(model, chip, b, s)  # derive and compile once
    t = _best({"symroof": lambda: evaluate(expr, B=b, S=s), "numpy": lambda: lower(b, s),
               "sweep": lambda: sweep_step_time(model, chip, b, s),
               "numpy5": lambda: bounds(b, s)}, reps)
    rng = np.random.default_rng(0)
    points = [(int(rng.integers(1, n + 1)), int(rng.choice(s.ravel()))) for _ in range(sample)]
    start = time.perf_counter()
    for pb, ps in points:
        value = float(expr.subs({B: pb, S: ps}))
    per_point = (time.perf_counter() - start) / sample
    assert np.isclose(value, lower(np.array([pb]), np.array([ps]))[0], rtol=1e-12)
    subs_total = per_point * b.size * s.size
    result = {"size": size, "points": b.size * s.size, "derive_s": derive,
              "first_call_s": first, "symroof_s": t["symroof"], "numpy_s": t["numpy"],
              "subs_per_point_s": per_point, "subs_extrapolated_s": subs_total,
              "ratio_numpy": t["symroof"] / t["numpy"], "speedup_subs": subs_total / t["symroof"],
              "sweep_step_time_s": t["sweep"], "numpy5_s": t["numpy5"],
              "ratio_numpy5": t["sweep"] / t["numpy5"]}
    print(f"sweep of {result['points']:,} (batch, context) points, llama-3.1-8b decode on h100 "
          f"(best of {reps}):")
    print(f"  symroof evaluate(lower)      {t['symroof'] * 1e3:8.2f} ms = "
          f"{result['ratio_numpy']:.2f} x hand-written NumPy ({t['numpy'] * 1e3:.2f} ms; "
          "target <= 1.5)")
    print(f"  SymPy subs, point by point   {per_point * 1e6:8.0f} us/point x {result['points']:,} "
          f"= {subs_total:.0f} s extrapolated from {sample}: symroof is "
          f"{result['speedup_subs']:,.0f} x faster (target >= 1000)")
    print(f"  sweep_step_time (5 fields)   {t['sweep'] * 1e3:8.2f} ms = "
          f"{result['ratio_numpy5']:.2f} x hand-written NumPy of all five "
          f"({t['numpy5'] * 1e3:.2f} ms)")
    print(f"  once: derive the step {derive * 1e3:.1f} ms, first evaluate (compile + run) "
          f"{first * 1e3:.1f} ms = {first / t['symroof']:.1f} x a cached call")
    return result


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "full")
