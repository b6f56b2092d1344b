"""The command line against llm-analysis's, as whole processes, on one question (target:
symroof no slower).

The question: Llama-3.1-8B decoding a batch of 64 sequences at context 2048 on an H100.

- symroof: ``python -m symroof report --model llama-3.1-8b --chip h100 --phase decode
  --batch 64 --context 2048`` (the README's first command).
- llm-analysis 0.2.2 (``pip install llm-analysis==0.2.2``; not a dependency): ``python -m
  llm_analysis.analysis infer --model_name <file> --gpu_name h100-sxm-80gb
  --batch_size_per_gpu 64 --seq_len 2047 --num_tokens_to_generate 1``. It has no Llama-3.1-8B
  preset and, offline, cannot fetch one from the Hugging Face Hub, so the model is a JSON
  file in its own format written here from symroof's preset; its ``ModelConfig`` refuses
  an MLP width that is not a multiple of the model width (14336 = 3.5 x 4096), so the file
  says 16384, the width its own Llama-2-7B file uses. It answers prefill and decode of that
  step in one run (it has no decode-only question), so it does more arithmetic, in floats.

Each process is timed from the outside, interpreter start-up included, the two alternating
(``full``: 7 runs each; ``small``: 1); the ratio is of the medians, the best of each
printed beside it, and so is the ratio of CPU seconds (user + system, from the children's
resource usage), which a busy machine disturbs less than the wall clock. symroof keeps its
compiled table and solved crossovers on disk after its first run (:mod:`symroof.cache`), so
that run is timed apart and the others are warm, as a user's second question is; the cache
folder is a temporary one, empty at the start. The same command is also timed with
symroof's modules compiled to bytecode first (a copy of the package, ``compileall``-ed), as
an installed package has them and the peer's and SymPy's are: a
checkout run with ``PYTHONDONTWRITEBYTECODE`` compiles each of its modules from source in
every process. Without llm-analysis the peer is skipped with that message and the ratios
are None.

    python benchmarks/cli_vs_peer.py [small|full]
"""

from __future__ import annotations

import importlib.util
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SIZES = {"small": 1, "full": 7}  # runs of each process
REPORT = ["-m", "symroof", "report", "--model", "llama-3.1-8b", "--chip", "h100", "--phase",
          "decode", "--batch", "64", "--context", "2048"]


def _peer_command(folder: Path) -> list[str]:
    """llm-analysis's ``infer`` on the same step, its model file written into ``folder``."""
    sys.path.insert(0, str(ROOT))
    import symroof as sr

    m = sr.model("llama-3.1-8b")
    config = {"name": "llama-3.1-8b", "num_layers": int(m.L), "n_head": int(m.H),
              "hidden_dim": int(m.D), "vocab_size": int(m.V), "num_key_value_heads": int(m.G),
              "max_seq_len": int(m.max_position), "model_type": "llama",
              "ffn_embed_dim": 4 * int(m.D)}  # its check needs a multiple of D (see above)
    path = folder / "llama-3.1-8b.json"
    path.write_text(json.dumps(config))
    return ["-m", "llm_analysis.analysis", "infer", "--model_name", str(path), "--gpu_name",
            "h100-sxm-80gb", "--batch_size_per_gpu", "64", "--seq_len", "2047",
            "--num_tokens_to_generate", "1"]


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _wall(args: list[str], env: dict[str, str], cpu: list[float] | None = None,
          cwd: Path = ROOT) -> float:
    """Wall seconds of one whole process (run in ``cwd``: ``python -m`` imports from there
    first); its CPU seconds (user + system) go to ``cpu``."""
    start, before = time.perf_counter(), _cpu()
    done = subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:3])} failed: {done.stderr.strip()[-400:]}")
    if cpu is not None:
        cpu.append(_cpu() - before)
    return wall


def main(size: str = "full") -> dict:
    """Median wall times of symroof's ``report`` and llm-analysis's ``infer``; their ratio."""
    if size not in SIZES:
        raise ValueError(f"size must be one of {sorted(SIZES)}, got {size!r}")
    runs = SIZES[size]
    peer = importlib.util.find_spec("llm_analysis") is not None
    with tempfile.TemporaryDirectory() as tmp:
        path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
        env = {**os.environ, "PYTHONPATH": path, "SYMROOF_CACHE": str(Path(tmp) / "cache")}
        # a copy of symroof with its modules compiled to bytecode, as an install has them
        # (the peer's and SymPy's are; a checkout run with PYTHONDONTWRITEBYTECODE compiles
        # every module from source in every process)
        shutil.copytree(ROOT / "symroof", Path(tmp) / "tree" / "symroof",
                        ignore=shutil.ignore_patterns("__pycache__"))
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(tmp) / "tree")],
                       check=True, capture_output=True, timeout=300)
        compiled = {**env, "PYTHONPATH": os.pathsep.join(
            p for p in (str(Path(tmp) / "tree"), os.environ.get("PYTHONPATH")) if p)}
        commands = {"symroof": (REPORT, env),
                    "symroof, bytecode": (REPORT, compiled, Path(tmp) / "tree"),
                    **({"llm-analysis": (_peer_command(Path(tmp)), env)} if peer else {})}
        cold = _wall(REPORT, env)  # fills the cache
        times: dict[str, list[float]] = {k: [] for k in commands}
        cpu: dict[str, list[float]] = {k: [] for k in commands}
        for i in range(runs):
            for name in (list(commands) if i % 2 == 0 else list(commands)[::-1]):
                args, environ, *cwd = commands[name]
                times[name].append(_wall(args, environ, cpu[name], *cwd))
    ours = statistics.median(times["symroof"])
    installed = statistics.median(times["symroof, bytecode"])
    result = {"size": size, "runs": runs, "symroof_s": ours, "symroof_cold_s": cold,
              "symroof_best_s": min(times["symroof"]), "peer_s": None, "ratio": None,
              "symroof_cpu_s": statistics.median(cpu["symroof"]), "cpu_ratio": None,
              "symroof_bytecode_s": installed, "bytecode_ratio": None,
              "symroof_bytecode_cpu_s": statistics.median(cpu["symroof, bytecode"]),
              "skipped": None if peer else "llm-analysis is not installed "
                                           "(pip install llm-analysis==0.2.2)"}
    line = (f"symroof report, whole process ({runs} runs, median): {ours:.2f} s (best "
            f"{result['symroof_best_s']:.2f} s; first run, cache cold: {cold:.2f} s)")
    if peer:
        theirs = statistics.median(times["llm-analysis"])
        result.update(peer_s=theirs, peer_best_s=min(times["llm-analysis"]),
                      ratio=ours / theirs, peer_cpu_s=statistics.median(cpu["llm-analysis"]))
        result["cpu_ratio"] = result["symroof_cpu_s"] / result["peer_cpu_s"]
        result["bytecode_ratio"] = installed / theirs
        line += (f"; llm-analysis infer {theirs:.2f} s (best {result['peer_best_s']:.2f} s); "
                 f"ratio symroof / llm-analysis {result['ratio']:.2f} (target <= 1); CPU "
                 f"seconds (user + system, median) {result['symroof_cpu_s']:.2f} against "
                 f"{result['peer_cpu_s']:.2f}, ratio {result['cpu_ratio']:.2f}; with "
                 f"symroof's bytecode compiled, as installed: {installed:.2f} s, ratio "
                 f"{result['bytecode_ratio']:.2f}, CPU "
                 f"{result['symroof_bytecode_cpu_s']:.2f} s")
    else:
        line += f"; peer skipped: {result['skipped']}"
    print(line)
    return result


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "full")
