"""The latency/throughput curve of a sharded decode step over 10^6 (batch, context) points.

The formula: one decode step of Llama-3.1-8B on a v5e 4x4 slice (1-D model parallelism:
weights and KV cache sharded, two AllReduces per layer), its lower time bound per chip, from
``sr.serve`` with batch and context left symbolic. Timed in the same run: (1) symroof's
``latency_throughput`` over a 1000 x 1000 grid (one compiled NumPy call, cached after the
first); (2) the same expression compiled for scalars (``lambdify`` with ``math``) and called
in a plain Python loop point by point, as a per-configuration calculator does, on a sample
extrapolated to the grid; (3) building the plan with SymPy for one configuration with
numbers, as a user looping over configurations would (``sr.serve(..., batch=b,
context=s)``), on a few points, extrapolated. Targets: (2)/(1) >= 20, (3)/(1) >= 1000.

    python benchmarks/serving_sweep.py [small|full]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import sympy as sp

try:
    import symroof  # noqa: F401
except ModuleNotFoundError:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import symroof as sr  # noqa: E402
from symroof.parallel.sizing import latency_throughput  # noqa: E402
from symroof.symbols import B, S  # noqa: E402

SIZES = {"small": (30, 200, 2, 3), "full": (1000, 20000, 5, 9)}  # grid side, loop, plans, reps


def main(size: str = "full") -> dict:
    """Time the three paths; check one grid value against the exact plan; return the ratios."""
    if size not in SIZES:
        raise ValueError(f"size must be one of {sorted(SIZES)}, got {size!r}")
    side, n_loop, n_plans, reps = SIZES[size]
    model, mesh = sr.model("llama-3.1-8b"), sr.mesh("tpu-v5e", "4x4")
    batches = np.arange(1, side + 1, dtype=np.float64)[:, None]
    contexts = 64 * np.arange(1, side + 1, dtype=np.float64)[None, :]

    def vectorised():
        return latency_throughput(model, mesh, context=contexts, batches=batches)["latency"]

    vectorised()  # compile once (cached on the expression)
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        grid = vectorised()
        best = min(best, time.perf_counter() - start)

    lower = sr.serve(model, mesh, batch=B, context=S).time.lower
    scalar = sp.lambdify((B, S), lower, modules="math")
    rng = np.random.default_rng(0)
    points = [(float(b), float(s)) for b, s in zip(rng.integers(1, side + 1, n_loop),
                                                    64 * rng.integers(1, side + 1, n_loop))]
    start = time.perf_counter()
    for b, s in points:
        scalar(b, s)
    loop = (time.perf_counter() - start) / n_loop * side * side

    start = time.perf_counter()
    for b, s in points[:n_plans]:
        exact = float(sr.serve(model, mesh, batch=int(b), context=int(s)).time.lower)
    plans = (time.perf_counter() - start) / n_plans * side * side
    b0, s0 = points[n_plans - 1]
    i, j = int(b0) - 1, int(s0) // 64 - 1
    assert abs(grid[i, j] - exact) <= 1e-9 * exact, "vectorised and exact disagree"

    points_total = side * side
    out = {"size": size, "points": points_total, "seconds": best,
           "ns_per_point": best / points_total * 1e9,
           "speedup_loop": loop / best, "speedup_plans": plans / best}
    print(f"{points_total} points: symroof {best * 1e3:.1f} ms "
          f"({out['ns_per_point']:.0f} ns/point, best of {reps}); a Python loop over the "
          f"compiled scalar formula {loop:.2f} s (extrapolated from {n_loop}): "
          f"{out['speedup_loop']:.0f}x; building a plan per point {plans:.0f} s "
          f"(extrapolated from {n_plans}): {out['speedup_plans']:.0f}x")
    return out


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "full")
