"""The empirical roofline: this machine's roofs, and the NumPy transformer timed against them.

Runs ``symroof.surfaces.measure`` (full: the "mid" config, small: "tiny") and prints measured over
predicted time, where predicted = max(FLOPs / C, bytes / W) + per-call overhead with C and W
measured in the same run. Targets: large matmuls (standalone, n >= 1024) within 1.5x; the
whole forward of the mid config within 2x. The model's own matmuls (per layer, 128 rows at the
mid size; NumPy runs a 3-D ``x @ W`` as one GEMM per sequence) are reported beside them.

The timings run in a child interpreter with the BLAS threads pinned to one before NumPy loads,
as ``symroof measure`` runs them by default: the roofs are then measured with the threads the
model's ops run with. Unpinned on a shared 2-core machine, the 128-row matmuls of the mid
model ran at a fraction of the roof that large square matmuls set with two threads (a BLAS
thread waiting for a busy core stalls the other), and the forward ratio read about 2.

    python benchmarks/measure_roofline.py [small|full]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

try:
    import symroof  # noqa: F401
except ModuleNotFoundError:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from symroof.measured import _PINNED  # noqa: E402
from symroof.surfaces.measure import THREAD_VARIABLES, measure  # noqa: E402

THREADS = 1  # BLAS threads of the timings: symroof measure's default
RESULT = "measure_roofline result: "  # the child's last line: its result as JSON

SIZES = {"small": ("tiny", 1, 0), "full": ("mid", None, 1024)}  # size, repeats, large n
MODEL_MATMULS = ("attn/q_proj", "attn/k_proj", "attn/v_proj", "attn/o_proj", "mlp/gate",
                 "mlp/up", "mlp/down", "lm_head")


def _spread(ratios: list[float]) -> float:
    """How far from 1 the worst ratio is, either way (1.3 for 0.77 or 1.3)."""
    return max((max(r, 1 / r) for r in ratios), default=float("nan"))


def main(size: str = "full") -> dict:
    """Measure; return the roofs, the worst matmul ratios and the forward ratio."""
    if size not in SIZES:
        raise ValueError(f"size must be one of {sorted(SIZES)}, got {size!r}")
    if os.environ.get(_PINNED) != str(THREADS):  # pin in a child: BLAS reads them at load
        env = {**os.environ, **dict.fromkeys(THREAD_VARIABLES, str(THREADS)),
               _PINNED: str(THREADS)}
        child = subprocess.run([sys.executable, __file__, size], env=env, capture_output=True,
                               text=True, timeout=1800)
        if child.returncode != 0:
            raise RuntimeError(f"the pinned measurement failed: {child.stderr.strip()[-600:]}")
        printed, _, result = child.stdout.rpartition(RESULT)
        print(printed, end="")
        return json.loads(result)
    which, repeats, large = SIZES[size]
    plot = str(Path(tempfile.gettempdir()) / "symroof-bench" / "roofline_measured.png")
    r = measure(which, repeats, plot=plot)
    standalone = [op.ratio for op in r.matmuls if int(op.key.split("n=")[1]) >= large]
    in_model = [op.ratio for op in r.ops if op.key in MODEL_MATMULS]
    share = sum(op.measured for op in r.ops if op.key in MODEL_MATMULS) / r.forward_measured
    result = {"size": size, "config": which, "peak_fp32": float(r.chip.peak("fp32")),
              "peak_fp64": float(r.chip.peak("fp64")), "bandwidth": float(r.chip.hbm_bw),
              "t_call": r.t_call, "matmul_spread": _spread(standalone),
              "model_matmul_spread": _spread(in_model), "forward_ratio": r.forward_ratio,
              "matmul_share": share, "plot": plot, "blas_threads": THREADS}
    print(r.roofs_text())
    if size == "full":
        print(r.table())
    print(f"empirical roofline ({which}): large matmuls within "
          f"{result['matmul_spread']:.2f}x of prediction (standalone n >= {large}; target 1.5x), "
          f"the model's matmuls within {result['model_matmul_spread']:.2f}x; whole forward "
          f"measured / predicted {r.forward_ratio:.2f} (target <= 2; matmuls take "
          f"{share:.0%} of it); plot {plot}")
    return result


if __name__ == "__main__":
    out = main(sys.argv[1] if len(sys.argv) > 1 else "full")
    if os.environ.get(_PINNED) == str(THREADS):  # the child: hand the result to the parent
        print(RESULT + json.dumps(out))
