"""Wall time of every derivation script (derivations/*.py; target: each under 2 s).

Each script runs in a fresh interpreter, as a user runs it (``python derivations/x.py``),
and is timed from the outside, start-up included. The ratios printed are each script's
time over the 2 s budget and over a bare ``python -c "import symroof"`` measured in the same
run (the floor any script pays).

    python benchmarks/derivations_time.py [small|full]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUDGET_S = 2.0
SIZES = {"small": (1, 1), "full": (None, 3)}  # size -> (scripts run (None: all), runs each)


def scripts() -> list[Path]:
    """The derivation scripts, in order (``__init__.py`` and ``_private.py`` left out)."""
    return sorted(p for p in (ROOT / "derivations").glob("*.py") if not p.name.startswith("_"))


def _wall(args: list[str]) -> tuple[float, int, str]:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "PYTHONPATH": path, "MPLBACKEND": "Agg"}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    return time.perf_counter() - start, done.returncode, done.stderr.strip()[-300:]


def main(size: str = "full") -> dict:
    """Median wall time of each script; the slowest over the budget and over the floor."""
    if size not in SIZES:
        raise ValueError(f"size must be one of {sorted(SIZES)}, got {size!r}")
    limit, runs = SIZES[size]
    chosen = scripts()[:limit]
    floor = statistics.median(_wall(["-c", "import symroof"])[0] for _ in range(runs))
    seconds: dict[str, float] = {}
    failed: dict[str, str] = {}
    for script in chosen:
        walls = []
        for _ in range(runs):
            wall, rc, err = _wall([str(script.relative_to(ROOT))])
            walls.append(wall)
            if rc != 0:
                failed[script.name] = err
        seconds[script.name] = statistics.median(walls)
    print(f"derivation scripts ({len(chosen)} of {len(scripts())}, median of {runs} runs; "
          f"floor 'python -c \"import symroof\"' {floor:.2f} s):")
    for name, s in seconds.items():
        note = "  FAILED: " + failed[name].splitlines()[-1] if name in failed else ""
        print(f"  {name:<40} {s:6.2f} s  {s / BUDGET_S:5.2f} x budget  {s / floor:5.2f} x floor"
              f"{note}")
    slowest = max(seconds.values(), default=0.0)
    result = {"size": size, "seconds": seconds, "failed": failed, "floor_s": floor,
              "max_s": slowest, "budget_ratio": slowest / BUDGET_S,
              "all_under_budget": slowest < BUDGET_S and not failed}
    print(f"slowest {slowest:.2f} s = {result['budget_ratio']:.2f} x the 2 s budget "
          f"(target < 1); all under 2 s and passing: {result['all_under_budget']}")
    return result


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "full")
