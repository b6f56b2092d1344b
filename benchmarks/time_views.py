"""Views of the one time rule, per configuration: a table's JSON and ``sr.time`` of a whole step.

Two questions, each timed against its baseline in the same run (interleaved, best of several
rounds; Llama-3.1-8B on an H100, 3 decode steps to 1 prefill over batch and context):

1. ``sr.roofline_table(...).as_dict()`` against the same table's ``.numbers``: what the JSON
   form adds to the compiled per-op numbers (target: within 5x). Printed also without the
   table's sanity warnings (``models/sanity.py``), which are most of what is left.
2. ``float(sr.time(model.whole(...), chip).lower)``, SymPy all the way, against a plain-Python
   loop that types the whole-model bound in floats (FLOPs 2 P_mm + attention, bytes
   weights + KV, max over the peak and bandwidth; from docs/accounting.md) and against the
   per-op calculator loop of ``per_config.py`` (target: no slower than that calculator, the
   plain-Python loop the issue measured 4.3x against; the float-typed bound is printed as
   the floor a float formula has).

    python benchmarks/time_views.py [small|full]
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

try:
    import symroof  # noqa: F401
except ModuleNotFoundError:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

sys.path.insert(0, str(Path(__file__).resolve().parent))
import per_config  # noqa: E402

import symroof as sr  # noqa: E402

SIZES = {"small": (8, 1), "full": (400, 9)}  # configurations, rounds (best of)


def _whole_loop(m: dict, C: float, W: float, configs: list) -> float:
    """The whole-model lower bound of each configuration, typed in floats."""
    P = m["P"]
    for B, T, S in configs:
        c = S - T
        pairs = T * c + T * (T + 1) / 2  # causal (query, key) pairs per sequence and head
        flops = B * T * 2 * P - B * (T - 1) * 2 * m["V"] * m["D"]  # lm_head on the last
        flops += 4 * m["L"] * m["H"] * m["d_h"] * B * pairs
        nbytes = P * m["w"] + 2 * m["L"] * m["G"] * m["d_h"] * m["k"] * B * S
        lower = max(flops / C, nbytes / W)
    return lower


def main(size: str = "full") -> dict:
    if size not in SIZES:
        raise ValueError(f"size must be one of {sorted(SIZES)}, got {size!r}")
    count, rounds = SIZES[size]
    model, chip, dims, C, W = per_config.subject()
    dims["P"] = int(model.matmul_params)
    configs = per_config.configurations(count)

    def table(b: int, t: int, s: int) -> sr.models.table.RooflineTable:
        return sr.roofline_table(model, chip, batch=b, new_tokens=t, cached=s - t)

    def quiet(b: int, t: int, s: int) -> dict:
        tab = table(b, t, s)
        vars(tab)["warnings"] = ()  # the sanity warnings left out
        return tab.as_dict()

    runs = {
        "numbers": lambda: [table(*c).numbers for c in configs],
        "as_dict": lambda: [table(*c).as_dict() for c in configs],
        "as_dict_quiet": lambda: [quiet(*c) for c in configs],
        "time_whole": lambda: [float(sr.time(model.whole(b, t, s - t, last_only=True),
                                             chip).lower) for b, t, s in configs],
        "whole_loop": lambda: _whole_loop(dims, C, W, configs),
        "calculator": lambda: [per_config.calculator(dims, C, W, *c) for c in configs],
    }
    for fn in runs.values():
        fn()  # compile once, fill SymPy's cache alike
    best = dict.fromkeys(runs, math.inf)
    for _ in range(rounds):  # interleaved: a busy neighbour slows all alike
        for name, fn in runs.items():
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)
    for b, t, s in configs[:4]:  # the loop and the symbolic whole agree
        exact = float(sr.time(model.whole(b, t, s - t, last_only=True), chip).lower)
        assert math.isclose(exact, _whole_loop(dims, C, W, [(b, t, s)]), rel_tol=1e-12)
    per = {k: v / count for k, v in best.items()}
    out = {"size": size, "configs": count, "rounds": rounds,
           "as_dict_ratio": per["as_dict"] / per["numbers"],
           "as_dict_quiet_ratio": per["as_dict_quiet"] / per["numbers"],
           "time_whole_ratio": per["time_whole"] / per["whole_loop"],
           "time_whole_vs_calculator": per["time_whole"] / per["calculator"],
           **{f"{k}_s": v for k, v in per.items()}}
    us = {k: v * 1e6 for k, v in per.items()}
    print(f"llama-3.1-8b on h100, {count} configurations (3 decode : 1 prefill), "
          f"best of {rounds} rounds, per configuration:")
    print(f"  roofline_table(...).numbers           {us['numbers']:9.1f} us")
    print(f"  roofline_table(...).as_dict()         {us['as_dict']:9.1f} us = "
          f"{out['as_dict_ratio']:.1f} x .numbers (target <= 5)")
    print(f"    the same without sanity warnings    {us['as_dict_quiet']:9.1f} us = "
          f"{out['as_dict_quiet_ratio']:.1f} x .numbers")
    print(f"  float(sr.time(model.whole(...)).lower) {us['time_whole']:8.1f} us = "
          f"{out['time_whole_ratio']:.1f} x the whole-model bound typed in floats "
          f"({us['whole_loop']:.2f} us), "
          f"{out['time_whole_vs_calculator']:.1f} x the per-op calculator "
          f"({us['calculator']:.1f} us; target <= 1)")
    return out


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "full")
