"""Building the full symbolic per-op table of a fully symbolic Transformer.

Every dimension a symbol (B, T, S, D, F, L, H, G, d_h, V): the ``dict[str, Cost]`` of one
forward step, its op groups, and their time bounds on a symbolic chip (C, W). Timed in the
same run against the same table for a preset with numbers (llama-3.1-8b, B = 8, T = 1,
S = 2048), and the first evaluation of the symbolic table over a 1000-point batch axis
(compile + run) against a cached one.

    python benchmarks/symbolic_table.py [small|full]
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
from symroof.evaluate import evaluate  # noqa: E402
from symroof.models import group  # noqa: E402
from symroof.models.inference import op_times  # noqa: E402
from symroof.symbols import B, S, T  # noqa: E402

SIZES = {"small": 1, "full": 5}  # repetitions (best of)


def _symbolic():
    rows = sr.Transformer().ops(B, T, S - T)
    return rows, op_times(group(rows), sr.symbolic_chip())


def _numeric():
    rows = sr.model("llama-3.1-8b").ops(8, 1, 2047)
    return rows, op_times(group(rows), sr.chip("h100"))


def _best(fn, reps: int, cold: bool = False) -> tuple[float, object]:
    """Best wall time of ``fn``; ``cold`` clears SymPy's cache before each call."""
    best, out = float("inf"), None
    for _ in range(reps):
        if cold:
            sp.core.cache.clear_cache()
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def main(size: str = "full") -> dict:
    """Time the symbolic table against the numeric one; time its evaluation."""
    if size not in SIZES:
        raise ValueError(f"size must be one of {sorted(SIZES)}, got {size!r}")
    reps = SIZES[size]
    t_sym, (rows, times) = _best(_symbolic, reps, cold=True)
    t_num, _ = _best(_numeric, reps, cold=True)
    t_warm, _ = _best(_symbolic, reps)
    values = {"B": np.arange(1, 1001), "T": 1, "S": 4096, "D": 4096, "F": 14336, "L": 32,
              "H": 32, "G": 8, "d_h": 128, "V": 128256}
    start = time.perf_counter()
    table = evaluate(rows, values)
    first = time.perf_counter() - start
    t_cached, _ = _best(lambda: evaluate(rows, values), max(reps, 3))
    n_symbols = len(set().union(*(c.free_symbols for c in rows.values())))
    result = {"size": size, "rows": len(rows), "symbols": n_symbols, "symbolic_s": t_sym,
              "numeric_s": t_num, "ratio_numeric": t_sym / t_num, "warm_s": t_warm,
              "first_eval_s": first,
              "cached_eval_s": t_cached, "compile_ratio": first / t_cached,
              "evaluated_rows": len(table), "group_bounds": len(times)}
    print(f"symbolic per-op table ({len(rows)} rows in {n_symbols} symbols, {len(times)} group "
          f"time bounds on a symbolic chip; best of {reps}, SymPy's cache cleared): "
          f"{t_sym * 1e3:.1f} ms = {result['ratio_numeric']:.2f} x the same table for "
          f"llama-3.1-8b with numbers ({t_num * 1e3:.1f} ms); rebuilt with the cache warm "
          f"{t_warm * 1e3:.1f} ms")
    print(f"  evaluated over 1000 batches: first call (compile) {first * 1e3:.1f} ms, cached "
          f"{t_cached * 1e3:.2f} ms ({result['compile_ratio']:.0f} x)")
    return result


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "full")
