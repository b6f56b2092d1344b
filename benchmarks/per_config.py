"""One per-op roofline table per configuration: symroof against a per-configuration calculator.

Per-configuration calculators (LLM-Viewer's ``analyze()`` and the like) loop over a model's
ops for every (batch, context) they are asked about: for each op, flops = ..., bytes = ...,
t = max(flops / C, bytes / W), in floats. ``calculator`` below is that loop, typed in from
docs/accounting.md for a Llama-style model (fused attention core, lm_head on the last
position), producing what such a calculator produces per op: FLOPs, bytes by kind,
intensity, time and bound. symroof answers the same question with ``sr.roofline_table``
(the symbolic rows compiled once per model, chip, dtype and attention; see
symroof/models/compiled.py) and reading its per-op numbers, ``table.numbers``. Both run on
the same configurations (decode and prefill of Llama-3.1-8B on an H100), interleaved, best
of several rounds; the one-off compile is timed apart. Target: symroof / calculator <= 1.

    python benchmarks/per_config.py [small|full]
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

import symroof as sr  # noqa: E402
from symroof.models.compiled import compiled_table  # noqa: E402

SIZES = {"small": (40, 3), "full": (2000, 9)}  # configurations, rounds (best of)


def calculator(m: dict, C: float, W: float, B: int, T: int, S: int) -> dict[str, dict]:
    """The per-op table the way a per-configuration calculator computes it, floats only."""
    D, F, L, H, G, dh, V, w, a, k = (m[x] for x in ("D", "F", "L", "H", "G", "d_h", "V",
                                                      "w", "a", "k"))
    n, c = B * T, S - T
    pairs = T * c + T * (T + 1) / 2  # causal (query, key) pairs per sequence and head
    ops = [  # (name, FLOPs, weight bytes, activation bytes, KV bytes), all L layers
        ("embed", 0, n * D * w, n * D * a, 0),
        ("attn_norm", L * n * (4 * D + 2), L * D * w, L * 2 * n * D * a, 0),
        ("attn/q_proj", L * 2 * n * D * H * dh, L * D * H * dh * w, L * n * (D + H * dh) * a, 0),
        ("attn/k_proj", L * 2 * n * D * G * dh, L * D * G * dh * w, L * n * (D + G * dh) * a, 0),
        ("attn/v_proj", L * 2 * n * D * G * dh, L * D * G * dh * w, L * n * (D + G * dh) * a, 0),
        ("attn/rope", L * 3 * n * (H + G) * dh, 0, L * (2 * n * (H + G) * dh + T * dh) * a, 0),
        ("attn/kv_write", 0, 0, L * 2 * n * G * dh * a, L * 2 * n * G * dh * k),
        ("attn/core", L * (4 * B * H * pairs * dh + 6 * B * H * pairs - 2 * B * H * T), 0,
         L * 2 * n * H * dh * a, L * 2 * B * S * G * dh * k),
        ("attn/o_proj", L * 2 * n * H * dh * D, L * H * dh * D * w, L * n * (H * dh + D) * a, 0),
        ("attn/residual", L * n * D, 0, L * 3 * n * D * a, 0),
        ("mlp_norm", L * n * (4 * D + 2), L * D * w, L * 2 * n * D * a, 0),
        ("mlp/gate", L * 2 * n * D * F, L * D * F * w, L * n * (D + F) * a, 0),
        ("mlp/up", L * 2 * n * D * F, L * D * F * w, L * n * (D + F) * a, 0),
        ("mlp/swiglu", L * 5 * n * F, 0, L * 3 * n * F * a, 0),
        ("mlp/down", L * 2 * n * F * D, L * F * D * w, L * n * (F + D) * a, 0),
        ("mlp/residual", L * n * D, 0, L * 3 * n * D * a, 0),
        ("final_norm", B * (4 * D + 2), D * w, 2 * B * D * a, 0),
        ("lm_head", 2 * B * D * V, D * V * w, B * (D + V) * a, 0),
    ]
    table = {}
    for name, flops, weight, act, kv in ops:
        nbytes = weight + act + kv
        t_math, t_mem = flops / C, nbytes / W
        table[name] = {"flops": flops, "weight_bytes": weight, "act_bytes": act,
                       "kv_bytes": kv, "intensity": flops / nbytes, "t": max(t_math, t_mem),
                       "bound": "compute" if t_math >= t_mem else "memory"}
    return table


def configurations(count: int) -> list[tuple[int, int, int]]:
    """(batch, new tokens, context): decode steps over batch and context, and prefills."""
    out = []
    for i in range(count):
        if i % 4 == 3:
            out.append((1 + i % 8, 128 * (1 + i % 16), 128 * (1 + i % 16)))  # prefill
        else:
            out.append((1 + i % 256, 1, 1 + (37 * i) % 8192))  # decode
    return out


def subject() -> tuple:
    """Llama-3.1-8B on an H100: the model, the chip, the calculator's dimensions (ints) and
    the chip's bf16 peak and HBM bandwidth (floats)."""
    model, chip = sr.model("llama-3.1-8b"), sr.chip("h100")
    dims = {x: int(getattr(model, x)) for x in ("D", "F", "L", "H", "G", "d_h", "V")}
    dims |= {"w": int(model.w_bytes), "a": int(model.act_bytes), "k": int(model.kv_bytes)}
    return model, chip, dims, float(chip.peak("bf16")), float(chip.hbm_bw)


def main(size: str = "full") -> dict:
    if size not in SIZES:
        raise ValueError(f"size must be one of {sorted(SIZES)}, got {size!r}")
    count, rounds = SIZES[size]
    model, chip, dims, C, W = subject()
    configs = configurations(count)

    start = time.perf_counter()  # the one-off compile (SymPy's own cache may be warm)
    compiled_table.cache_clear()
    compiled_table(model, chip)
    compile_s = time.perf_counter() - start

    def run_symroof() -> dict:
        for b, t, s in configs:
            table = sr.roofline_table(model, chip, batch=b, new_tokens=t, cached=s - t).numbers
        return table

    def run_calculator() -> dict:
        for b, t, s in configs:
            table = calculator(dims, C, W, b, t, s)
        return table

    best = {"symroof": math.inf, "calculator": math.inf}
    for _ in range(rounds):  # interleaved: a busy neighbour slows both alike
        for name, fn in (("symroof", run_symroof), ("calculator", run_calculator)):
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)

    for b, t, s in configs[:8]:  # the two loops agree: the same table, op by op
        mine = sr.roofline_table(model, chip, batch=b, new_tokens=t, cached=s - t).numbers
        theirs = calculator(dims, C, W, b, t, s)
        assert list(mine) == list(theirs), (list(mine), list(theirs))
        for op, row in theirs.items():
            assert mine[op].useful_flops == row["flops"], (op, b, t, s)
            assert math.isclose(mine[op].lower, row["t"], rel_tol=1e-12), (op, b, t, s)

    per = {k: v / count for k, v in best.items()}
    ratio = per["symroof"] / per["calculator"]
    print(f"llama-3.1-8b on h100, {count} configurations (3 decode : 1 prefill), "
          f"{len(calculator(dims, C, W, 1, 1, 1))} ops each, best of {rounds} rounds")
    print(f"  symroof roofline_table + .numbers {per['symroof'] * 1e6:8.2f} us per config")
    print(f"  plain-Python calculator loop      {per['calculator'] * 1e6:8.2f} us per config")
    print(f"  ratio symroof / calculator        {ratio:8.3f}   (target <= 1)")
    print(f"  one-off compile per model & chip  {compile_s * 1e3:8.1f} ms "
          f"= {compile_s / per['calculator']:.0f} calculator configurations")
    return {"size": size, "configs": count, "rounds": rounds, "ratio": ratio,
            "symroof_s": per["symroof"], "calculator_s": per["calculator"],
            "compile_s": compile_s}


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "full")
