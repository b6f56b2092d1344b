"""Import time of ``symroof`` against ``import sympy, numpy`` alone (target: <= 1.3x).

Each import runs in a fresh interpreter that times only the import statement
(``time.perf_counter`` around it, so interpreter start-up is left out); the two kinds
alternate and the medians are compared. Also reports whether ``import symroof`` loaded
matplotlib (it must not: plotting imports it lazily).

    python benchmarks/import_time.py [small|full]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SIZES = {"small": 1, "full": 15}  # interpreters started per import (small: runnable, not judged)
_PROBE = ("import sys, time; t = time.perf_counter(); {stmt}; "
          "print(time.perf_counter() - t, 'matplotlib' in sys.modules)")


def _import_seconds(stmt: str) -> tuple[float, bool]:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "PYTHONPATH": path}
    out = subprocess.run([sys.executable, "-c", _PROBE.format(stmt=stmt)], cwd=ROOT, env=env,
                         capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), out[1] == "True"


def main(size: str = "full") -> dict:
    """Median import times of ``symroof`` and of ``sympy, numpy``, and their ratio."""
    if size not in SIZES:
        raise ValueError(f"size must be one of {sorted(SIZES)}, got {size!r}")
    times: dict[str, list[float]] = {"sympy, numpy": [], "symroof": []}
    loads_mpl = False
    for i in range(SIZES[size]):
        order = list(times) if i % 2 == 0 else list(times)[::-1]
        for stmt in order:
            seconds, mpl = _import_seconds(f"import {stmt}")
            times[stmt].append(seconds)
            loads_mpl |= mpl and stmt == "symroof"
    base, ours = (statistics.median(times[k]) for k in ("sympy, numpy", "symroof"))
    result = {"size": size, "runs": SIZES[size], "baseline_s": base, "symroof_s": ours,
              "ratio": ours / base, "loads_matplotlib": loads_mpl}
    print(f"import time ({SIZES[size]} fresh interpreters each, median): import sympy, numpy "
          f"{base * 1e3:.0f} ms, import symroof {ours * 1e3:.0f} ms, ratio {result['ratio']:.2f} "
          f"(target <= 1.3); matplotlib loaded by import symroof: {loads_mpl}")
    return result


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "full")
