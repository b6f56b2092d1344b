"""Mutation sweep: plant one realistic bug at a time and see whether the tests catch it.

Each mutant is a textual replacement in one source file (the text must occur exactly once),
applied in a temporary copy of the tree, never in place; the tests named for it run there
(``pytest -x``), and the mutant is *caught* if they fail, *survived* if they pass. The first
five are the survivors of an earlier sweep; the rest are planted in chips, chip files,
layouts, collectives, the time rule, blocks, rows, serving and the CLI. A survivor is a
missing test.

    python benchmarks/mutation_sweep.py            # every mutant (a few minutes)
    python benchmarks/mutation_sweep.py h200 ep    # the mutants whose name has a word given
    python benchmarks/mutation_sweep.py --list     # the mutants, without running them

It prints one row per mutant (name, file, caught or survived, seconds) and exits 1 if any
survived or did not apply.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: (name, file, text, replacement, tests): the tests are pytest arguments run in the copy
MUTANTS: list[tuple[str, str, str, str, list[str]]] = [
    # -- the five survivors of the earlier sweep ---------------------------------------
    ("h200 HBM bandwidth 2% high", "symroof/hardware/chips.py",
     'hbm_bw=(4800 * G, _H200', 'hbm_bw=(4896 * G, _H200', ["tests/test_chip_sheets.py"]),
    ("pipeline hop across nodes at NVLink", "symroof/parallel/layout.py",
     "bw = min(lv.bw_per_gpu for lv in mesh.levels((name,)))", "bw = axis.link_bw",
     ["tests/test_placement.py"]),
    ("MoE matmul params count all E experts", "symroof/models/blocks/mlp.py",
     "return m.k * m.expert_params(s.D)", "return m.E * m.expert_params(s.D)",
     ["tests/test_family_quantities.py"]),
    ("serve JSON t_net_s in milliseconds", "symroof/surfaces/cli_serve.py",
     '"t_net_s": float(t.t_net)', '"t_net_s": float(t.t_net) * 1000',
     ["tests/test_json_fields.py", "-k", "serve"]),
    ("twin books bias gradients at the weights' width", "symroof/numeric/backward.py",
     'ops.write(db, "grad")', 'ops.write(db, "weight")',
     ["tests/test_training_check.py", "-k", "random_configs"]),
    # -- chips ----------------------------------------------------------------------------
    ("tpu-v5e ICI link 5e10 (GCP's) not the book's", "symroof/hardware/chips.py",
     'link_bw=(45 * G, _BOOK_ROOF', 'link_bw=(50 * G, _BOOK_ROOF', ["tests/test_chip_sheets.py"]),
    ("b200 fp4 peak sparse, not dense", "symroof/hardware/chips.py",
     '"fp4": (18000 * T // 2, _HGX_B200', '"fp4": (18000 * T, _HGX_B200',
     ["tests/test_chip_sheets.py"]),
    ("a100 leaf NIC share at 50 GB/s", "symroof/hardware/chips.py",
     '("leaf", 20, 8, 200 * G // 8)', '("leaf", 20, 8, 400 * G // 8)',
     ["tests/test_chip_sheets.py"]),
    ("chip file: fp4 ranked with fp8", "symroof/hardware/chip_file.py",
     '"fp4": 5, "int4": 5}', '"fp4": 4, "int4": 4}', ["tests/test_chip_file.py"]),
    ("chip file: left-over twin only when equal", "symroof/hardware/chip_file.py",
     "PRECISION[d] == PRECISION[kept]\n                     and w != v]",
     "PRECISION[d] == PRECISION[kept]\n                     and w == v]",
     ["tests/test_chip_file.py"]),
    ("gb200 spine of 17 SUs, not the RA's 16", "symroof/hardware/chips.py",
     '("spine", 9216 // 576, 576', '("spine", 9792 // 576, 576', ["tests/test_gpu_scale.py"]),
    ("gb200 spine NIC share 2% high", "symroof/hardware/chips.py",
     '("spine", 9216 // 576, 576, _NVL72_NIC_PER_GPU)',
     '("spine", 9216 // 576, 576, _NVL72_NIC_PER_GPU * 51 // 50)',
     ["tests/test_chip_sheets.py"]),
    ("NCCL tree level latency 2% high", "symroof/hardware/chips.py",
     '"tree_latency": (Fraction(5, 10**6)', '"tree_latency": (Fraction(51, 10**7)',
     ["tests/test_network_latency.py"]),
    ("gb200 SMs 2% more", "symroof/hardware/chips.py",
     '"cores": (148, _BOOK_SM + ": B200 \'148\' SMs" + _GB200_GPU)',
     '"cores": (151, _BOOK_SM + ": B200 \'148\' SMs" + _GB200_GPU)', ["tests/test_internals.py"]),
    ("tpu-v6e host DRAM 2% low", "symroof/hardware/chips.py",
     '"host_dram": (1536 * 2**30', '"host_dram": (1505 * 2**30', ["tests/test_internals.py"]),
    ("tpu-v5e HBM 8.1e11 (the TPU table's)", "symroof/hardware/chips.py",
     "_V5E_HBM = 820 * G", "_V5E_HBM = 810 * G", ["tests/test_chip_sheets.py"]),
    ("GPU node level reads one NVLink port fewer", "symroof/hardware/chip.py",
     'Level(*node, values["nvlink_ports"] * link_bw)',
     'Level(*node, (values["nvlink_ports"] - 1) * link_bw)', ["tests/test_chip_sheets.py"]),
    ("tpu-v5e host DRAM 2% high", "symroof/hardware/chips.py",
     '"host_dram": (384 * G', '"host_dram": (392 * G', ["tests/test_internals.py"]),
    # -- collectives -------------------------------------------------------------------
    ("AllReduce priced as one ReduceScatter", "symroof/hardware/collectives.py",
     "bytes_sent(key, V, n), 2 * rs.t_bw,\n", "bytes_sent(key, V, n), rs.t_bw,\n",
     ["tests/test_collectives.py", "tests/test_placement.py"]),
    ("AllToAll on a ring without the 1/4", "symroof/hardware/collectives.py",
     "return V * worst / (4 * n), t_lat", "return V * worst / (2 * n), t_lat",
     ["tests/test_collectives.py"]),
    ("AllReduce tree one level shallower", "symroof/hardware/collectives.py",
     "(nodes.bit_length() - 1) * level", "(nodes.bit_length() - 2) * level",
     ["tests/test_network_latency.py"]),
    ("GPU AllGather without the (d-1)/d", "symroof/hardware/collectives.py",
     "terms = [V * ring_fraction(lv.degree) / lv.bw for lv in levels]",
     "terms = [V / lv.bw for lv in levels]", ["tests/test_placement.py"]),
    # -- layouts and search --------------------------------------------------------------
    ("GPU decode condition reads NVLink across nodes", "symroof/parallel/serving_2d.py",
     "all_gather(plan.mesh, 1, plan.mesh.names)", "all_gather(plan.mesh, 1, plan.mesh.names[-1:])",
     ["tests/test_gpu_scale.py"]),
    ("TP allowed up to twice the heads", "symroof/parallel/layout.py",
     '(("tp", model.H, "query heads', '(("tp", 2 * model.H, "query heads',
     ["tests/test_strategies.py"]),
    ("search forgets microbatches in the data width", "symroof/parallel/search.py",
     'width = (args["n_dp"] * args["n_fsdp"] * args["n_ep"] * args["n_mb"])',
     'width = (args["n_dp"] * args["n_fsdp"] * args["n_ep"])',
     ["tests/test_search.py", "tests/test_trust.py"]),
    ("search lower bound without the backward pass", "symroof/parallel/search.py",
     "lower = lo_f + lo_b", "lower = lo_f + 0 * lo_b",
     ["tests/test_search.py"]),
    ("nearest batch steps by the shards, not lcm(shards, seq)", "symroof/parallel/strategies.py",
     "step = math.lcm(self.width, seq)", "step = self.width", ["tests/test_trust.py"]),
    ("uneven split pads down", "symroof/parallel/search.py",
     "padded = sorted({-(-B // w) * w for w in shards} - {B})",
     "padded = sorted({B // w * w for w in shards} - {B})",
     ["tests/test_json_fields.py", "-k", "nearby"]),
    # -- rows (training) and blocks ---------------------------------------------------------
    ("pipeline sends one hop fewer", "symroof/parallel/rows.py",
     '_put(step, "forward/pp/send activations", make("send", "pp", hop, m + Z - 2))',
     '_put(step, "forward/pp/send activations", make("send", "pp", hop, m + Z - 3))',
     ["tests/test_trust.py"]),
    ("TP splits the norms too", "symroof/parallel/train_rows.py",
     'return not (key in _TP_WHOLE or _d_norm(key) or last == "residual"',
     'return not (key in _TP_WHOLE or last == "residual"',
     ["tests/test_strategies.py", "-k", "sums_of_parts"]),
    ("FSDP reads its weights still sharded", "symroof/parallel/train_layout.py",
     '"read": _spec("W", dims, ((), f))', '"read": _spec("W", dims, (("fsdp",), f))',
     ["tests/test_train_layout.py"]),
    ("gradients partial over fsdp only", "symroof/parallel/train_layout.py",
     'partial = ("dp", "fsdp") + (("ep",)', 'partial = ("fsdp",) + (("ep",)',
     ["tests/test_train_layout.py"]),
    ("FSDP forgets attention's weights", "symroof/parallel/rows.py",
     "        if w != 0:",
     '        if w != 0 and not k.startswith("attn/"):',
     ["tests/test_train_layout.py"]),
    ("KV cache of one token: K only", "symroof/models/sizes.py",
     "return self.L * self._cached()[0] * self.kv_bytes",
     "return self.L * self._cached()[0] * self.kv_bytes / 2",
     ["tests/test_serving.py", "tests/test_transformer.py"]),
    ("attention matmuls: k and v counted once", "symroof/models/blocks/attention.py",
     "return s.D * self.H * self.d_h + 2 * s.D * self.G * self.d_h + self.H * self.d_h * s.D",
     "return s.D * self.H * self.d_h + s.D * self.G * self.d_h + self.H * self.d_h * s.D",
     ["tests/test_family_quantities.py"]),
    # -- serving ------------------------------------------------------------------------
    ("MLA latent cache split over KV heads", "symroof/parallel/serving_layouts.py",
     'heads = 1 if getattr(m, "mla", None) else m.G', "heads = m.G",
     ["tests/test_trust.py"]),
    ("serve warns only past twice the heads", "symroof/parallel/serving.py",
     "sp.sympify(N > H) is not sp.true", "sp.sympify(N > 2 * H) is not sp.true",
     ["tests/test_trust.py"]),
    ("serve labels no collective latency-bound", "symroof/surfaces/cli_serve.py",
     'return ", latency-bound" if plan.bounds.get(key) == "latency" else ""', 'return ""',
     ["tests/test_trust.py"]),
    ("time upper bound is the max, not the sum", "symroof/timerule.py",
     "upper = ops.add(upper, t)", "upper = ops.max(upper, t)", ["tests/test_timerule.py"]),
    ("time rule: bound is the smallest term", "symroof/timerule.py",
     "ops.gt(t, lower)", "ops.gt(lower, t)", ["tests/test_timerule.py"]),
    ("cube slices wrap on a multiple of 2", "symroof/hardware/topology.py",
     "whole = len(shape) == self.rank and all(n % 4 == 0 for n in shape)",
     "whole = len(shape) == self.rank and all(n % 2 == 0 for n in shape)",
     ["tests/test_collectives.py", "tests/test_hardware.py"]),
    ("MLA block: kv_b without the values", "symroof/models/spec.py",
     "self.kv_rank * H * (self.d_nope + self.d_v)", "self.kv_rank * H * self.d_nope",
     ["tests/test_families.py", "tests/test_check_families.py"]),
    # -- conventions ---------------------------------------------------------------------
    ("book's ring factor applied to symroof's too", "symroof/hardware/mesh.py",
     'return (n - 1) / n if current().ring_factor == "exact" else sp.Integer(1)',
     'return (n - 1) / n if current().ring_factor == "book" else sp.Integer(1)',
     ["tests/test_conventions.py", "tests/test_collectives.py"]),
    ("all attention pairs counted as the causal ones", "symroof/models/attention_rows.py",
     'return K, {"causal": P, "all": sp.sympify(T) * K, "new": sp.sympify(T) ** 2}[rule]',
     "return K, P", ["tests/test_conventions.py", "tests/test_llm_analysis.py"]),
    ("LLM-Viewer's lm_head at 2 FLOPs a multiply-add", "symroof/models/rows.py",
     "return mac_flops(macs) if per == \"same\" else per * macs",
     "return mac_flops(macs)", ["tests/test_conventions.py"]),
    ("llm-analysis's decode attends the cached context", "symroof/conventions.py",
     'name="llm-analysis", attention_pairs="new"', 'name="llm-analysis", attention_pairs="all"',
     ["tests/test_llm_analysis.py"]),
    ("llm-analysis's GiB capacity read as GB", "symroof/hardware/chips.py",
     'f["mem_per_GPU_in_GB"] * 2**30', 'f["mem_per_GPU_in_GB"] * G',
     ["tests/test_llm_analysis.py"]),
    ("the book's GPU level read as the outermost", "symroof/hardware/collectives.py",
     "return above[:1] or terms[:1]", "return terms[-1:]", ["tests/test_gpu_level.py"]),
    ("the book's GPU level read as every level", "symroof/conventions.py",
     'ring_factor="book", gpu_level="one"', 'ring_factor="book", gpu_level="all"',
     ["tests/test_gpu_level.py"]),
    ("plan links cached across conventions", "symroof/parallel/layout.py",
     "_link(mesh, tuple(axes.get(r, ())), r, current())",
     "_link(mesh, tuple(axes.get(r, ())), r, current().replace(ring_factor='exact', "
     "gpu_level='all'))", ["tests/test_gpu_level.py"]),
    ("KV read+write traffic read once", "symroof/models/attention_rows.py",
     'return 1 if current().kv_traffic == "read" else 2',
     "return 1", ["tests/test_conventions.py"]),
    ("norm weights never read", "symroof/models/rows.py",
     'weights = base.weight_bytes if cv.norm_weights == "read" else 0',
     "weights = 0", ["tests/test_conventions.py", "tests/test_check.py"]),
    # -- the workload and the newest family -----------------------------------------------
    ("Step(context=S) caches S tokens, not S - 1", "symroof/workload.py",
     "            c = S - T\n", "            c = S - T + 1\n", ["tests/test_consistency.py"]),
    ("Qwen3's q/k norm weights left out", "symroof/models/blocks/attention.py",
     "qk_norms = 2 * self.d_h if self.qk_norm else 0", "qk_norms = 0",
     ["tests/test_families.py", "-k", "qwen3 or released"]),
    ("the V projection's array declared with H heads", "symroof/models/blocks/attention.py",
     '"W_v": Array(("D", "G", "d_h"))', '"W_v": Array(("D", "H", "d_h"))',
     ["tests/test_blocks.py"]),
    # -- CLI -------------------------------------------------------------------------------
    ("--tokens error names the Python argument", "symroof/surfaces/cli_train.py",
     'f"--tokens {args.tokens:,} ({_sequences(args.tokens // args.seq)}")',
     'f"batch_tokens = {args.tokens:,} ({_sequences(args.tokens // args.seq)}")',
     ["tests/test_trust.py"]),
    ("critical-batch JSON: widths as exact objects", "symroof/surfaces/cli.py",
     '"x_bytes": num(xb),', '"x_bytes": xb,', ["tests/test_trust.py"]),
]


def _copy_tree(dest: Path) -> None:
    """The tracked and untracked-but-not-ignored files of the repository, into ``dest``."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split("\n")
    for name in filter(None, files):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)


def run(mutants: list[tuple]) -> list[tuple[str, str, str, float]]:
    """Apply each mutant in one temporary copy (restoring the file after it) and run its
    tests; (name, file, verdict, seconds) per mutant."""
    out = []
    with tempfile.TemporaryDirectory(prefix="symroof-mutants-") as tmp:
        copy = Path(tmp)
        _copy_tree(copy)
        env = {**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1"}
        for name, path, text, new, tests in mutants:
            target = copy / path
            original = target.read_text(encoding="utf-8")
            if original.count(text) != 1:
                out.append((name, path, f"not applied ({original.count(text)} matches)", 0.0))
                continue
            target.write_text(original.replace(text, new), encoding="utf-8")
            start = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-n0",
                                   "-p", "no:cacheprovider", *tests], cwd=copy, env=env,
                                  capture_output=True, text=True)
            seconds = time.perf_counter() - start
            target.write_text(original, encoding="utf-8")
            verdict = {0: "SURVIVED", 1: "caught"}.get(done.returncode,
                                                       f"caught (pytest exit {done.returncode})")
            out.append((name, path, verdict, seconds))
            print(f"  {verdict:9} {name}", file=sys.stderr, flush=True)
    return out


def main(argv: list[str]) -> int:
    if argv[:1] == ["--list"]:
        for name, path, *_ in MUTANTS:
            print(f"{name} ({path})")
        return 0
    if argv[:1] in (["-h"], ["--help"]):
        print("usage: python benchmarks/mutation_sweep.py [--list] [WORD ...]: plant each "
              "mutant (or those whose names contain a WORD) and run its tests")
        return 0
    chosen = [m for m in MUTANTS if not argv or any(w in m[0] for w in argv)]
    if not chosen:
        print(f"no mutant's name contains {' or '.join(map(repr, argv))}; --list lists them",
              file=sys.stderr)
        return 2
    rows = run(chosen)
    width = max(len(r[0]) for r in rows)
    print(f"{'mutant':{width}}  {'file':32}  verdict   seconds")
    for name, path, verdict, seconds in rows:
        print(f"{name:{width}}  {path.removeprefix('symroof/'):32}  {verdict:8}  {seconds:7.1f}")
    bad = [r for r in rows if r[2] == "SURVIVED" or r[2].startswith("not applied")]
    print(f"{len(rows)} mutants: {len(rows) - len(bad)} caught, {len(bad)} survived or "
          "not applied")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
