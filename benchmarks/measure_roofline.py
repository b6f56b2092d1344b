"""The empirical roofline: this machine's roofs, and the NumPy transformer timed against them.

Runs ``symroof.surfaces.measure`` (full: the "mid" config, small: "tiny") and prints measured over
predicted time, where predicted = max(FLOPs / C, bytes / W) + per-call overhead with C and W
measured in the same run. Targets: large matmuls (standalone, n >= 1024) within 1.5x; the
whole forward of the mid config within 2x. The model's own matmuls (per layer, 128 rows at the
mid size; NumPy runs a 3-D ``x @ W`` as one GEMM per sequence) are reported beside them.

    python benchmarks/measure_roofline.py [small|full]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

try:
    import symroof  # noqa: F401
except ModuleNotFoundError:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from symroof.surfaces.measure import measure  # noqa: E402

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
              "matmul_share": share, "plot": plot, "result": r}
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
    main(sys.argv[1] if len(sys.argv) > 1 else "full")
