"""Run every benchmark in one process and print each target's measured ratio.

    python benchmarks/run_all.py [small|full]

``small`` runs each benchmark at a size that takes seconds (the test suite does this, not
timed); ``full`` is the real measurement. Every figure is a ratio of times measured in this
same run. A benchmark that fails is reported and the others still run.
"""

from __future__ import annotations

import importlib.util
import sys
import time
import traceback
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent
#: benchmark module -> the targets read from its result: (label, key, test, target text)
TARGETS: dict[str, list[tuple[str, str, object, str]]] = {
    "import_time": [("import symroof / import sympy, numpy", "ratio",
                     lambda r: r <= 1.3, "<= 1.3")],
    "cli_vs_peer": [("symroof report / llm-analysis infer, whole processes", "ratio",
                     lambda r: r <= 1.0, "<= 1"),
                    ("symroof report / llm-analysis infer, CPU seconds", "cpu_ratio",
                     None, "informative"),
                    ("symroof report, whole process, seconds (cache warm)", "symroof_s",
                     None, "informative")],
    "derivations_time": [("slowest derivation script / 2 s budget", "budget_ratio",
                          lambda r: r < 1.0, "< 1")],
    "sweep": [("10^6-point sweep: symroof / hand-written NumPy", "ratio_numpy",
               lambda r: r <= 1.5, "<= 1.5"),
              ("10^6-point sweep: point-by-point subs / symroof", "speedup_subs",
               lambda r: r >= 1000, ">= 1000"),
              ("sweep_step_time (5 fields) / hand-written NumPy", "ratio_numpy5",
               lambda r: r <= 1.5, "<= 1.5")],
    "per_config": [("per-op table, one configuration: symroof / plain calculator", "ratio",
                    lambda r: r <= 1.0, "<= 1")],
    "time_views": [("table as_dict() / .numbers, per configuration", "as_dict_ratio",
                    lambda r: r <= 5.0, "<= 5"),
                   ("table as_dict() without sanity warnings / .numbers", "as_dict_quiet_ratio",
                    None, "informative"),
                   ("sr.time(model.whole(...)) / per-op calculator loop",
                    "time_whole_vs_calculator", lambda r: r <= 1.0, "<= 1"),
                   ("sr.time(model.whole(...)) / whole-model bound in floats",
                    "time_whole_ratio", None, "informative")],
    "strategy_search": [("strategy search, >= 1e5 points: seconds per search", "search_s",
                         lambda r: r < 1.0, "< 1 s"),
                        ("strategy search: Python loop / vectorised, per point", "speedup",
                         None, "informative")],
    "serving_sweep": [("latency/throughput sweep, 10^6 points: ns per point", "ns_per_point",
                       None, "informative"),
                      ("serving sweep: Python loop over the scalar formula / symroof",
                       "speedup_loop", lambda r: r >= 20, ">= 20"),
                      ("serving sweep: a plan built per point / symroof", "speedup_plans",
                       lambda r: r >= 1000, ">= 1000")],
    "counter_overhead": [("counted / uncounted forward", "ratio",
                          lambda r: r < 1.10, "< 1.10")],
    "symbolic_table": [("symbolic table / same table with numbers", "ratio_numeric",
                        None, "informative"),
                       ("symbolic table build, seconds (cache cold)", "symbolic_s",
                        None, "informative")],
    "measure_roofline": [("large matmuls: measured vs predicted (worst, either way)",
                          "matmul_spread", lambda r: r <= 1.5, "<= 1.5"),
                         ("model's matmuls: measured vs predicted (worst, either way)",
                          "model_matmul_spread", None, "informative"),
                         ("whole forward (mid): measured / predicted", "forward_ratio",
                          lambda r: 0.5 <= r <= 2.0, "within 2x")],
}


def load(name: str) -> ModuleType:
    """Import ``benchmarks/<name>.py`` by path (benchmarks/ is not a package)."""
    path = HERE / f"{name}.py"
    if not path.exists():
        raise FileNotFoundError(f"no benchmark script {path}")
    spec = importlib.util.spec_from_file_location(f"symroof_benchmarks_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(size: str = "full") -> dict:
    """Run every benchmark at ``size``; print a summary of ratios against targets."""
    if size not in ("small", "full"):
        raise ValueError(f"size must be 'small' or 'full', got {size!r}")
    results: dict[str, dict] = {}
    errors: dict[str, str] = {}
    start = time.perf_counter()
    for name in TARGETS:
        print(f"== {name} ({size})", flush=True)
        try:
            results[name] = load(name).main(size)
        except Exception as exc:  # report and go on: one broken benchmark hides no other
            errors[name] = f"{type(exc).__name__}: {exc}"
            traceback.print_exc()
    print(f"\n== summary ({size}, {time.perf_counter() - start:.0f} s in all): measured "
          "ratio, target, verdict")
    summary = []
    for name, targets in TARGETS.items():
        for label, key, test, target in targets:
            if name in errors:
                line, met = f"FAILED to run: {errors[name]}", False
            elif results[name][key] is None:  # a peer that is not installed: said, not judged
                line, met = f"skipped: {results[name].get('skipped')}", None
            else:
                value = results[name][key]
                met = None if test is None else bool(test(value))
                verdict = "" if met is None else ("met" if met else "NOT MET")
                if size == "small" and met is not None:
                    verdict = "(small size: not judged)"
                line = f"{value:>10.3g}   {target:<22} {verdict}"
            summary.append({"benchmark": name, "label": label, "met": met})
            print(f"  {label:<58} {line}")
    return {"size": size, "results": results, "errors": errors, "summary": summary}


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "full")
