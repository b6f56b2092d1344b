"""The strategy search over >= 10^5 (batch, split, strategy) points, two ways.

LLaMA-3.1-70B on TPU v5p: one 16x16x16 slice and two 8x16x16 slices joined over DCN, every
default strategy with every way of giving the mesh axes to its roles (86 splits; no role
mixes DCN and ICI axes), at 1200 global batches: 103,200 points. Timed in the same run:
(1) ``sr.strategy_search``: one compiled NumPy evaluation of the step template over the
whole grid, then the choice per batch; (2) a plain Python loop over the same points that
evaluates the same formulas with floats (the template compiled for scalars, ``math``
module) and keeps the fastest fitting split per batch. Both must choose alike. Targets:
(1) under a second; (2)/(1) per point, informative.

    python benchmarks/strategy_search.py [small|full]
"""

from __future__ import annotations

import math
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
from symroof.parallel.search import template  # noqa: E402

SIZES = {"small": (20, 1), "full": (1200, 5)}  # batches, repetitions of the vectorised search


def _loop(exprs: dict, batches: np.ndarray, cands: tuple, hbm: float) -> tuple[list, int]:
    """The search as a plain Python loop: every (batch, split) point in floats."""
    names = ["f_math", "f_mem", "f_net", "b_math", "b_mem", "b_net", "memory"]
    args = [c.args() for c in cands]
    symbols = sorted({s for e in exprs.values() for s in e.free_symbols}, key=lambda s: s.name)
    fn = sp.lambdify(symbols, [exprs[k] for k in names], modules="math", cse=True)
    order = [s.name for s in symbols]
    best, points = [], 0
    for b in batches:
        pick, fastest = -1, math.inf
        for j, a in enumerate(args):
            points += 1
            values = {**a, "B": float(b)}
            fm, fe, fn_, bm, be, bn, mem = fn(*(values[k] for k in order))
            width = int(a["n_dp"] * a["n_fsdp"] * a["n_mb"])
            if mem > hbm or b % width:
                continue
            lower = max(fm, fe, fn_) + max(bm, be, bn)
            if lower < fastest * (1 - 1e-9):
                pick, fastest = j, lower
        best.append(pick)
    return best, points


def main(size: str = "full") -> dict:
    """Time the vectorised search and the loop; check they choose alike; return ratios."""
    if size not in SIZES:
        raise ValueError(f"size must be one of {sorted(SIZES)}, got {size!r}")
    n, reps = SIZES[size]
    model = sr.model("llama-3.1-70b")
    meshes = [sr.mesh("tpu-v5p", "16x16x16"),
              sr.mesh("tpu-v5p", {"S": 2, "X": 8, "Y": 16, "Z": 16}, dcn="S")]
    batches = 4096 * 64 * np.arange(1, n + 1)  # 0.26 M .. 315 M tokens
    start = time.perf_counter()
    res = sr.strategy_search(model, meshes, batch_tokens=batches)
    first = time.perf_counter() - start  # builds and compiles the template once
    vector = math.inf
    for _ in range(reps):
        start = time.perf_counter()
        res = sr.strategy_search(model, meshes, batch_tokens=batches)
        vector = min(vector, time.perf_counter() - start)
    exprs = template(model, meshes[0].chip, 4096, "full", (), "bf16", True)
    start = time.perf_counter()
    best, points = _loop(exprs, batches, res.candidates, float(meshes[0].chip.hbm_bytes))
    loop = time.perf_counter() - start
    same = [i for i, j in enumerate(best) if j >= 0 and res.best[i] >= 0
            and not np.isclose(res.lower[i, j], res.lower[i, res.best[i]], rtol=1e-9)]
    assert points == res.points and not same, "loop and vectorised search disagree"
    assert [j < 0 for j in best] == [j < 0 for j in res.best], "fit verdicts disagree"
    per_vec, per_loop = vector / points, loop / points
    print(f"{points} points ({len(batches)} batches x {len(res.candidates)} splits)")
    print(f"  vectorised search  {vector * 1e3:8.1f} ms  {per_vec * 1e9:8.1f} ns/point "
          f"(best of {reps}; first call, template built and compiled: {first:.2f} s)")
    print(f"  Python loop        {loop * 1e3:8.1f} ms  {per_loop * 1e9:8.1f} ns/point")
    print(f"  loop / vectorised per point: {per_loop / per_vec:.0f}x; same choices: yes")
    for i in (0, len(batches) // 2, len(batches) - 1):
        c = res.choice(i)
        what = c["why"] if c["candidate"] is None else (
            f"{c['candidate']}: {c['lower']:.3g} s ({c['bound']}-bound)")
        print(f"  {int(batches[i]):>11} tokens -> {what}")
    return {"size": size, "points": points, "vector_s": vector, "loop_s": loop,
            "first_s": first, "speedup": per_loop / per_vec, "search_s": vector}


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "full")
