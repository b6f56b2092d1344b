"""The empirical roofline through JAX: ``symroof measure --backend jax``.

The questions of :mod:`symroof.surfaces.measure`, asked of the device JAX runs on (a GPU or a
TPU where there is one, else the CPU). JAX loads only when a measurement runs.

Roofs: peak FLOP/s from jitted ``jnp.dot`` of n x n matrices in bf16 and fp32 (fp32 at
``Precision.HIGHEST``, so that a GPU does not quietly run TF32), the best of the repetitions;
bandwidth from y = x + 1 on a large fp32 array in place (x donated), bytes read + written:
a fresh output buffer each call would time the page faults of its first touch, and XLA
elides a donated plain copy. Every timing calls the compiled function once first (compile and
warm-up, excluded) and waits with ``block_until_ready``.

Ops: one jitted JAX function per row of the NumPy forward's counter, on arrays of the shapes
that op has in one layer of the same run (the NumPy measurement's config, batch and tokens;
one prefill from an empty cache, so S = T): embedding gather, norms, the projections, RoPE,
the KV write, the attention core (scores, masked softmax, times V), SwiGLU, residuals and
lm_head. FLOPs and bytes are the counter's, at the dtype's width (bf16: 2 bytes an element);
a per-layer op's time is L times one layer's call. Per-call overhead is its own term, as in
the NumPy measurement: the same op's time in a miniature of the model (every dimension 1 or
2, one token).

Predicted = max(FLOPs / C, bytes / W) + overhead, against the measured roofs and, where
``device_kind`` names a chip on record (:func:`known_chip`), against that chip's record too.

>>> known_chip("NVIDIA H100 80GB HBM3"), known_chip("NVIDIA H100 PCIe"), known_chip("cpu")
('h100', None, None)
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from ..cost import Cost
from ..hardware import Chip
from ..hardware import chip as chip_record
from ..measured import SIZES, OpTiming, _ms, _round3, _timing
from ..numeric import Config, Counter, forward, init_params
from ..render import fmt_si
from . import measure_jax_ops as ops

__all__ = ["measure_jax", "JaxMeasureResult", "JAX_SIZES", "known_chip", "run_cli"]

LARGE = Config(D=2048, F=5632, L=2, H=16, G=8, d_h=128, V=32000, name="large")

#: the NumPy sizes, and one for an accelerator (matmuls of 1 to 9 TFLOP, a 2 GB copy)
JAX_SIZES: dict[str, dict[str, Any]] = {
    **SIZES, "large": dict(matmuls=(4096, 8192, 16384), copy_bytes=2**31, cfg=LARGE, batch=4,
                           tokens=512, repeats=10)}

WIDTH = {"bf16": 2, "fp32": 4}  # bytes per element

#: device_kind pattern -> chip record; the first match wins. Only the variant a record
#: describes: the GPU records are SXM columns (no PCIe or NVL), the A100 the 80 GB one.
KNOWN_KINDS = ((r"GB200", "gb200"), (r"B200", "b200"), (r"H200(?!.*NVL)", "h200"),
               (r"H800(?!.*PCIe)", "h800"), (r"H100(?!.*(PCIe|NVL))", "h100"),
               (r"A100.*SXM.*80GB", "a100"), (r"V100.*SXM2", "v100"), (r"^TPU v3", "tpu-v3"),
               (r"^TPU v4$", "tpu-v4p"), (r"^TPU v5( lite|e)$", "tpu-v5e"),
               (r"^TPU v5p?$", "tpu-v5p"), (r"^TPU v6( lite|e)$", "tpu-v6e"))


def known_chip(device_kind: str) -> str | None:
    """The chip record for a JAX ``device_kind``, or None where none is on record."""
    return next((name for pattern, name in KNOWN_KINDS if re.search(pattern, device_kind)),
                None)


def _seconds(fn: Callable, args: tuple, repeats: int) -> list[float]:
    """Wall times of ``repeats`` calls, each waited for; one call before (compile, warm-up)."""
    import jax

    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - start)
    return times


@dataclass(frozen=True)
class JaxMeasureResult:
    """The device, the measured roofs (``chip``), the record of a known chip (``spec``), and
    per op and standalone matmul the timing against each."""

    size: str
    device: str
    dtype: str
    chip: Chip
    spec: Chip | None
    t_call: float
    matmuls: list[OpTiming]
    ops: list[OpTiming]
    on_spec: dict[str, OpTiming]  # key -> the same timing against the spec (empty: none)

    def roofs_text(self) -> str:
        c, s = self.chip, self.spec
        text = (f"roofs of {self.device} ({self.size}, {self.dtype} ops), measured with JAX: "
                f"bf16 {fmt_si(c.peak('bf16'), 'FLOP/s')}, fp32 {fmt_si(c.peak('fp32'), 'FLOP/s')}"
                f", memory {fmt_si(c.hbm_bw, 'B/s')}, per-call overhead "
                f"{fmt_si(self.t_call, 's')}")
        if s is None:
            return text + "\nno chip on record for this device kind: measured roofs only"
        peaks = [f"{dt} {fmt_si(s.peak(dt), 'FLOP/s')} (measured: "
                 f"{float(c.peak(dt) / s.peak(dt)):.2f} of it)" for dt in ("bf16", "fp32")
                 if dt in s.peaks]
        return (text + f"\nrecord {s.name}: {', '.join(peaks)}, memory "
                f"{fmt_si(s.hbm_bw, 'B/s')} (measured: {float(c.hbm_bw / s.hbm_bw):.2f} of it)")

    def table(self) -> str:
        spec = bool(self.on_spec)
        head = (f"{'op':<22}{'GFLOP':>9}{'MB':>9}{'measured':>11}{'roofline':>11}"
                f"{'overhead':>11}{'predicted':>11}{'ratio':>7}  {'bound':<9}")
        head += f"{'record':>11}{'ratio':>7}  bound" if spec else ""
        lines = [head, "-" * len(head)]
        for op in [*self.matmuls, *self.ops]:
            lines.append(_row(op.key, op.flops, op.bytes, op.measured, op.roofline,
                              op.t_overhead, f"  {op.bound:<9}"))
            if op.key in self.on_spec:
                on = self.on_spec[op.key]
                lines[-1] += f"{_ms(on.roofline)}{on.ratio:>7.2f}  {on.bound}"
        ops, on = self.ops, [self.on_spec[op.key] for op in self.ops] if spec else []
        total = [sum(getattr(op, f) for op in ops) for f in ("flops", "bytes", "measured",
                                                              "roofline", "t_overhead")]
        lines += ["-" * len(head), _row("ops (sum)", *total, " " * 11)]
        if on:
            record = sum(op.roofline for op in on)
            lines[-1] += f"{_ms(record)}{total[2] / (record + total[4]):>7.2f}"
        return "\n".join(lines)


def _row(key: str, flops: int, n_bytes: int, measured: float, roofline: float,
         overhead: float, bound: str) -> str:
    predicted = roofline + overhead
    return (f"{key:<22}{flops / 1e9:>9.3f}{n_bytes / 1e6:>9.2f}{_ms(measured)}{_ms(roofline)}"
            f"{_ms(overhead)}{_ms(predicted)}{measured / predicted:>7.2f}{bound}")


def _roofs(device: Any, spec: dict, reps: int) -> tuple[dict, float, float, dict]:
    """Peaks {dtype: FLOP/s}, bandwidth, per-call overhead and raw matmul timings."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    peaks, raw = {}, {}
    with jax.default_device(device):  # operands made on the device (n = 16384: 1 GB each)
        for name, dt, precision in (("bf16", jnp.bfloat16, None),
                                    ("fp32", jnp.float32, lax.Precision.HIGHEST)):
            dot = jax.jit(partial(jnp.dot, precision=precision))
            for n in spec["matmuls"]:
                a = jax.random.normal(jax.random.key(n), (n, n), dt)
                raw[name, n] = _seconds(dot, (a, a), reps)
                peaks[name] = max(peaks.get(name, 0.0), 2 * n**3 / min(raw[name, n]))
        bw = _bandwidth(jnp.ones(spec["copy_bytes"] // 4, jnp.float32), reps)
        t_call = min(_seconds(jax.jit(lambda x: x + x), (jnp.ones(1),), max(reps, 20)))
    return peaks, bw, t_call, raw


def _bandwidth(x: Any, reps: int) -> float:
    """Bytes read + written per second by y = x + 1 in place (x donated, fed back): no fresh
    buffer faulted in each call, and no copy for XLA to elide (a donated copy is none)."""
    import jax

    step, times = jax.jit(lambda x: x + 1, donate_argnums=0), []
    x = jax.block_until_ready(step(x))  # compile and warm-up, excluded
    for _ in range(reps):
        start = time.perf_counter()
        x = jax.block_until_ready(step(x))
        times.append(time.perf_counter() - start)
    return 2 * x.nbytes / min(times)


def _measured_chip(device: Any, size: str, reps: int, peaks: dict, bw: float) -> Chip:
    import jax

    stats = device.memory_stats() or {}
    mem = stats.get("bytes_limit") or os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    how = f"measured by symroof.surfaces.measure_jax ({size}) on {device} with JAX " \
          f"{jax.__version__}: best of {reps}"
    spec = JAX_SIZES[size]
    return Chip("this-device", {k: _round3(v) for k, v in peaks.items()}, hbm_bw=_round3(bw),
                hbm_bytes=int(mem), link_bw=_round3(bw),
                sources={"peaks.bf16": f"{how}, bf16 jnp.dot n={spec['matmuls']}",
                         "peaks.fp32": f"{how}, fp32 jnp.dot (HIGHEST) n={spec['matmuls']}",
                         "hbm_bw": f"{how}, x + 1 in place on {spec['copy_bytes']} B "
                                   "(read + write, x donated)",
                         "hbm_bytes": "device.memory_stats()['bytes_limit'] (CPU: physical "
                                      "memory)",
                         "link_bw": "placeholder: one device, no network (= memory bandwidth)"})


def _time_ops(device: Any, cfg: Config, B: int, T: int, dtype: str, reps: int,
              pick: Callable) -> dict[str, float]:
    """Per op key, ``pick`` of the times of its jitted kernel times its calls per forward."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    fns = ops.kernels(lax.Precision.HIGHEST if dtype == "fp32" else None)
    dt = {"bf16": jnp.bfloat16, "fp32": jnp.float32}[dtype]

    def put(x: np.ndarray) -> Any:
        return jax.device_put(jnp.asarray(x, jnp.int32 if x.dtype.kind == "i" else dt), device)

    out, jitted = {}, {}  # one jitted kernel per (name, static): equal shapes compile once
    for key, (name, static, operands, calls) in ops.program(cfg, B, T).items():
        fn = jitted.setdefault((name, *static.items()), jax.jit(partial(fns[name], **static)))
        out[key] = calls * pick(_seconds(fn, tuple(put(x) for x in operands), reps))
    return out


def measure_jax(size: str = "tiny", repeats: int | None = None, dtype: str | None = None,
                platform: str | None = None) -> JaxMeasureResult:
    """Measure the roofs of JAX's device (``platform``: "cpu", "gpu", ...; default JAX's
    default) and time the twin's ops through JAX at ``dtype`` (default bf16 on an
    accelerator, fp32 on a CPU) against them and against the chip on record, if any."""
    import jax

    if size not in JAX_SIZES:
        raise ValueError(f"size must be one of {sorted(JAX_SIZES)}, got {size!r}")
    if repeats is not None and (isinstance(repeats, bool) or not isinstance(repeats, int)
                                or repeats < 1):
        raise ValueError(f"repeats must be a positive integer, got {repeats!r}")
    device = jax.devices(platform)[0]
    dtype = dtype or ("fp32" if device.platform == "cpu" else "bf16")
    if dtype not in WIDTH:
        raise ValueError(f"dtype must be one of {sorted(WIDTH)}, got {dtype!r}")
    spec = JAX_SIZES[size]
    reps = spec["repeats"] if repeats is None else repeats
    peaks, bw, t_call, raw = _roofs(device, spec, max(reps, 3))
    chip = _measured_chip(device, size, max(reps, 3), peaks, bw)
    name = known_chip(device.device_kind)
    record = None if name is None else chip_record(name)
    cfg, B, T = spec["cfg"], spec["batch"], spec["tokens"]
    costs = _counted(cfg, B, T, WIDTH[dtype])
    seconds = _time_ops(device, cfg, B, T, dtype, reps, statistics.median)
    if set(seconds) != set(costs):
        raise ValueError(f"the JAX ops {sorted(seconds)} are not the rows of the NumPy "
                         f"forward of {cfg.name} {sorted(costs)}")
    mini = cfg.replace(D=2, F=2, H=1, G=1, d_h=2, V=2)  # the same calls, next to no work
    overhead = _time_ops(device, mini, 1, 1, dtype, max(reps, 5), min)
    work = {f"matmul {dt} n={n}": (Cost(flops=2 * n**3, act_bytes=3 * n * n * WIDTH[dt]),
                                   statistics.median(ts), t_call, dt)
            for (dt, n), ts in raw.items()}
    work |= {key: (cost, seconds[key], overhead[key], dtype) for key, cost in costs.items()}

    def against(c: Chip) -> dict[str, OpTiming]:
        return {key: _timing(key, cost, t, c, o, dt) for key, (cost, t, o, dt) in work.items()
                if dt in c.peaks}

    timed = against(chip)
    on_spec = {} if record is None or dtype not in record.peaks else against(record)
    return JaxMeasureResult(size, f"{device} ({device.device_kind})", dtype, chip, record,
                            t_call, [v for k, v in timed.items() if k not in costs],
                            [timed[key] for key in costs], on_spec)


def _counted(cfg: Config, B: int, T: int, width: int) -> dict[str, Cost]:
    """Per op key, the NumPy forward's counted FLOPs and bytes (``width`` B an element)."""
    counter = Counter(w_bytes=width, act_bytes=width, kv_bytes=width)
    tokens = np.random.default_rng(0).integers(0, cfg.V, size=(B, T))
    forward(init_params(cfg, dtype=np.float32), cfg, tokens, counter=counter)  # float32: faster
    return {key: Cost(flops=row["flops"], weight_bytes=row["weight_bytes"],
                      act_bytes=row["act_bytes"], kv_bytes=row["kv_bytes"],
                      **counter.stored[key])  # and the act and KV bytes it wrote
            for key, row in counter.rows.items()}


def run_cli(args: argparse.Namespace) -> int:
    """``symroof measure --backend jax``: print the roofs and the per-op table (no plot)."""
    import jax

    size = args.size or ("mid" if jax.default_backend() == "cpu" else "large")
    result = measure_jax(size, args.repeats, getattr(args, "dtype", None))
    print(result.roofs_text(), result.table(), sep="\n")
    print("predicted = max(FLOPs/C, bytes/W) + overhead; the ops are jitted JAX on the NumPy "
          "forward's shapes, with its counted FLOPs and bytes; overhead is the op's time in "
          "a miniature of the model" + ("; 'record': against the chip on record"
                                        if result.on_spec else ""))
    return 0
