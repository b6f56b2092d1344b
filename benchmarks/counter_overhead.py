"""How much does counting cost? The same forward, counted and uncounted, interleaved.

Runs a mid-size Llama-style forward (full: D=512, F=1376, L=4, H=8, G=2, d_h=64, V=4096,
B=4, T=128) with and without a ``Counter``, alternating which goes first, and prints the
ratio of the median times (target: < 1.10).

    python benchmarks/counter_overhead.py [small|full]
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np

try:
    import symroof.numeric  # noqa: F401
except ModuleNotFoundError:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from symroof.numeric import Config, Counter, forward, init_params  # noqa: E402

SIZES = {  # size -> (config, B, T, repetitions of each)
    "small": (Config(D=32, F=64, L=2, H=4, G=2, d_h=8, V=64, name="bench-small"), 2, 16, 3),
    "full": (Config(D=512, F=1376, L=4, H=8, G=2, d_h=64, V=4096, name="bench-full"), 4, 128,
             21),
}


def _seconds(params, cfg, tokens, counted: bool) -> float:
    counter = Counter() if counted else None
    start = time.perf_counter()
    forward(params, cfg, tokens, counter=counter)
    return time.perf_counter() - start


def main(size: str = "full") -> dict:
    """Time counted vs uncounted forwards; return the medians and their ratio.

    >>> main("small")["ratio"] > 0  # doctest: +ELLIPSIS
    counter overhead ...
    True
    """
    if size not in SIZES:
        raise ValueError(f"size must be one of {sorted(SIZES)}, got {size!r}")
    cfg, B, T, reps = SIZES[size]
    params = init_params(cfg)
    tokens = np.random.default_rng(0).integers(0, cfg.V, size=(B, T))
    times: dict[bool, list[float]] = {False: [], True: []}
    for counted in (False, True):  # warm-up
        _seconds(params, cfg, tokens, counted)
    for i in range(reps):
        for counted in ((False, True) if i % 2 == 0 else (True, False)):
            times[counted].append(_seconds(params, cfg, tokens, counted))
    uncounted, counted = statistics.median(times[False]), statistics.median(times[True])
    result = {"size": size, "config": cfg, "B": B, "T": T, "reps": reps,
              "uncounted_s": uncounted, "counted_s": counted, "ratio": counted / uncounted}
    print(f"counter overhead ({size}: B={B}, T={T}, D={cfg.D}, L={cfg.L}, {reps} reps each): "
          f"uncounted {uncounted * 1e3:.2f} ms, counted {counted * 1e3:.2f} ms, "
          f"ratio {result['ratio']:.3f}")
    return result


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "full")
