"""The empirical roofline: measure this machine's roofs, then time the NumPy transformer op
by op against them.

Roofs: peak FLOP/s from large NumPy matmuls (float32, float64; a few sizes, best of the
repetitions), memory bandwidth from large copies (bytes read + bytes written), both in a
``Chip`` record (dtypes ``"fp32"``, ``"fp64"``). Each op of the float64 NumPy transformer is
timed (median) and counted at 8 bytes per element, and compared with
``max(FLOPs / C, bytes / W) + t_overhead``. Per-call overhead is its own term, measured, not
guessed: an op's ``t_overhead`` is its time in a *miniature* of the same model (every
dimension 1 or 2, one token), which makes the same NumPy calls with next to no work.

BLAS threads: ``symroof measure`` pins them (``--threads``, default 1) by running the
measurement in a child interpreter whose ``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``,
``MKL_NUM_THREADS`` (and the like) are set before NumPy loads: a BLAS library reads them
once, at load, and the ``symroof`` process has loaded NumPy already (threadpoolctl could
change them later, but it is not a dependency). :func:`measure` called from Python times
with whatever the process has, and every source of the chip record says which.

``symroof measure --backend jax`` asks the same of JAX's device (a GPU or a TPU where there is
one), against its chip record where it is a known chip: :mod:`symroof.surfaces.measure_jax`.

>>> r = measure("tiny", repeats=1, plot=None)
>>> sorted(r.chip.peaks), r.ops[0].key
(['fp32', 'fp64'], 'embed')
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..cost import Cost
from ..hardware import Chip
from ..measured import (
    _PINNED,
    SIZES,
    MeasureResult,
    OpTiming,
    _round3,
    _timing,
    blas_threads,
)
from ..numeric import Config, Counter, forward, init_params
from ..numeric.model import PLAIN  # the uncounted primitives that forward() itself uses

__all__ = ["measure", "measure_chip", "MeasureResult", "OpTiming", "SIZES",
           "add_arguments", "run_cli", "blas_threads", "THREAD_VARIABLES"]

def _once(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _times(fn: Callable[[], Any], repeats: int) -> list[float]:
    """Wall times of ``repeats`` calls of ``fn`` after one warm-up call."""
    return [_once(fn) for _ in range(repeats + 1)][1:]


def _peak(n: int, dtype: Any, repeats: int) -> tuple[float, list[float]]:
    a, b = (np.random.default_rng(i).standard_normal((n, n)).astype(dtype) for i in (0, 1))
    ts = _times(lambda: a @ b, repeats)
    return 2 * n**3 / min(ts), ts


def _bandwidth(n_bytes: int, repeats: int) -> float:
    src, dst = np.ones(n_bytes // 8), np.empty(n_bytes // 8)
    return 2 * src.nbytes / min(_times(lambda: np.copyto(dst, src), repeats))  # read + write


def measure_chip(size: str = "tiny", repeats: int | None = None) -> tuple[Chip, float, dict]:
    """Measure the roofs; return the chip record, the per-call overhead (s) and the raw
    matmul timings ``{(dtype, n): [seconds, ...]}``."""
    if size not in SIZES:
        raise ValueError(f"size must be one of {sorted(SIZES)}, got {size!r}")
    spec = SIZES[size]
    reps = max(spec["repeats"] if repeats is None else repeats, 3)
    peaks, raw = {}, {}  # dtype -> best FLOP/s; (dtype, n) -> seconds of each repetition
    for name, dt in (("fp32", np.float32), ("fp64", np.float64)):
        for n in spec["matmuls"]:
            rate, raw[name, n] = _peak(n, dt, reps)
            peaks[name] = max(peaks.get(name, 0.0), rate)
    bw, a = _bandwidth(spec["copy_bytes"], reps), np.ones(1)
    t_call = min(_times(lambda: [PLAIN.add(a, a) for _ in range(1000)], reps)) / 1000
    how = f"measured by symroof.surfaces.measure ({size}): best of {reps}, {blas_threads()}"
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    chip = Chip("this-machine", {k: _round3(v) for k, v in peaks.items()}, hbm_bw=_round3(bw),
                hbm_bytes=ram, link_bw=_round3(bw),
                sources={"peaks.fp32": f"{how} float32 matmuls n={spec['matmuls']}",
                         "peaks.fp64": f"{how} float64 matmuls n={spec['matmuls']}",
                         "hbm_bw": f"{how} copies of {spec['copy_bytes']} B (read + write)",
                         "hbm_bytes": "os.sysconf: physical memory",
                         "link_bw": "placeholder: one machine, no network (= memory bandwidth)"})
    return chip, t_call, raw


class _Stopwatch(Counter):
    """The timing hook, kept here so the counter stays untouched: a Counter whose op scopes
    count nothing (they hand out the uncounted primitives) and add their wall time to
    ``seconds[key]``. forward() opens its scopes one after another, never nested."""

    def __init__(self) -> None:
        super().__init__()
        self.seconds: dict[str, float] = {}
        self._key: str | None = None

    def op(self, key: str) -> Any:
        if self._key is not None:
            raise RuntimeError(f"op scope {key!r} opened inside {self._key!r}: cannot time it")
        self._key = key
        return self

    def __enter__(self) -> Any:
        self._start = time.perf_counter()
        return PLAIN

    def __exit__(self, *exc: object) -> None:
        elapsed = time.perf_counter() - self._start
        self.seconds[self._key] = self.seconds.get(self._key, 0.0) + elapsed
        self._key = None


def measure(size: str = "tiny", repeats: int | None = None,
            plot: str | None = None) -> MeasureResult:
    """Measure the roofs, time every op of the float64 NumPy transformer and the standalone
    matmuls, and compare with max(FLOPs/C, bytes/W) + per-call overhead. ``plot`` is a PNG
    path (None: no plot). The module's docstring runs an example.
    """
    if repeats is not None and (isinstance(repeats, bool) or not isinstance(repeats, int)
                                or repeats < 1):
        raise ValueError(f"repeats must be a positive integer, got {repeats!r}")
    chip, t_call, raw = measure_chip(size, repeats)
    spec = SIZES[size]
    reps = spec["repeats"] if repeats is None else repeats
    width = {"fp32": 4, "fp64": 8}  # bytes per element
    matmuls = [_timing(f"matmul {dt} n={n}", Cost(flops=2 * n**3, act_bytes=3 * n * n * width[dt],
                                                  act_store_bytes=n * n * width[dt]),  # C written
                       statistics.median(ts), chip, t_call, dt) for (dt, n), ts in raw.items()]
    cfg, B, T = spec["cfg"], spec["batch"], spec["tokens"]
    params = init_params(cfg)
    tokens = np.random.default_rng(0).integers(0, cfg.V, size=(B, T))
    counter = Counter(w_bytes=8, act_bytes=8, kv_bytes=8)  # float64 arrays: 8 B per element
    forward(params, cfg, tokens, counter=counter)
    seconds, whole = _time_forward(cfg, params, tokens, reps, statistics.median)
    mini = cfg.replace(D=2, F=2, H=1, G=1, d_h=2, V=2)  # the same calls, next to no work
    overhead, whole_overhead = _time_forward(mini, init_params(mini), np.zeros((1, 1), int),
                                             max(reps, 5), min)
    ops = [_timing(key, Cost(flops=row["flops"], weight_bytes=row["weight_bytes"],
                             act_bytes=row["act_bytes"], kv_bytes=row["kv_bytes"],
                             **counter.stored[key]),
                   seconds[key], chip, overhead[key], "fp64") for key, row in counter.rows.items()]
    result = MeasureResult(size, chip, t_call, matmuls, ops, whole, whole_overhead, plot)
    if plot is not None:
        from ..plots.measured import plot_measured

        plot_measured(result, plot)
    return result


def _time_forward(cfg: Config, params: dict, tokens: np.ndarray, reps: int,
                  pick: Callable) -> tuple[dict[str, float], float]:
    """Per op key and for the whole uncounted forward, ``pick`` of the timings."""
    runs = []
    for _ in range(reps):
        watch = _Stopwatch()
        forward(params, cfg, tokens, counter=watch)
        runs.append(watch.seconds)
    per_op = {key: pick([run[key] for run in runs]) for key in runs[0]}
    return per_op, pick(_times(lambda: forward(params, cfg, tokens), reps))


#: the variables BLAS libraries (OpenBLAS, MKL, BLIS, Accelerate) and OpenMP read at load
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags of ``symroof measure``: --backend, --size, --dtype, --out, --repeats, --threads."""
    parser.add_argument("--backend", choices=("numpy", "jax"), default="numpy",
                        help="numpy: NumPy on this CPU (default); jax: jitted JAX on JAX's "
                        "device (a GPU or TPU where there is one), against its chip record "
                        "where it is a known chip (symroof.surfaces.measure_jax)")
    parser.add_argument("--size", choices=("tiny", "mid", "large"), default=None,
                        help="tiny: seconds (a smoke test); mid: the calibrated run (the "
                        "default); large: --backend jax only, an accelerator's size (the "
                        "default on one)")
    parser.add_argument("--dtype", choices=("bf16", "fp32"), default=None,
                        help="--backend jax only: the ops' dtype (default: bf16 on an "
                        "accelerator, fp32 on a CPU); the NumPy model runs in float64")
    parser.add_argument("--out", default=".", help="folder for roofline_measured.png "
                        "(--backend numpy)")
    parser.add_argument("--repeats", type=int, default=None,
                        help="repetitions per timing (median); default by size")
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads, pinned before "
                        "NumPy loads (default: %(default)s; a busy neighbour on a shared "
                        "machine slows multithreaded BLAS most; --backend jax: XLA keeps "
                        "its own threads)")


def run_cli(args: argparse.Namespace) -> int:
    """Run ``symroof measure``: print the roofs and the per-op table, write the plot. The
    timings run in a child interpreter with the BLAS threads pinned (see the module).
    ``--backend jax`` runs :func:`symroof.surfaces.measure_jax.run_cli` in this process."""
    if getattr(args, "backend", "numpy") == "jax":
        if importlib.util.find_spec("jax") is None:
            raise ValueError('--backend jax needs jax: pip install -e ".[jax]"')
        from .measure_jax import run_cli as run_jax  # JAX loads only here

        return run_jax(args)
    if getattr(args, "dtype", None) is not None:
        raise ValueError(f"--dtype {args.dtype} is for --backend jax; the NumPy model runs "
                         "in float64")
    size = args.size or "mid"
    if size not in SIZES:
        raise ValueError(f"--size {size} is for --backend jax; --backend numpy takes "
                         f"{sorted(SIZES)}")
    if args.threads < 1:
        raise ValueError(f"--threads must be a positive integer, got {args.threads}")
    if os.environ.get(_PINNED) != str(args.threads):
        argv = ["--size", size, "--out", str(args.out), "--threads", str(args.threads)]
        argv += [] if args.repeats is None else ["--repeats", str(args.repeats)]
        env = {**os.environ, **dict.fromkeys(THREAD_VARIABLES, str(args.threads)),
               _PINNED: str(args.threads)}
        child = subprocess.run([sys.executable, "-m", "symroof", "measure", *argv], env=env,
                               capture_output=True, text=True)
        sys.stdout.write(child.stdout)
        sys.stderr.write(child.stderr)
        return child.returncode
    path = str(Path(args.out) / "roofline_measured.png")
    result = measure(size, args.repeats, plot=path)
    print(result.roofs_text(), result.table(), sep="\n")
    print("predicted = max(FLOPs/C, bytes/W) + overhead; overhead, its own term, is the op's "
          "time in a miniature of the model (every dimension 1 or 2, one token): the same NumPy "
          f"calls with next to no work (a standalone matmul: one call)\nplot: {path}")
    return 0
