"""Mutation sweep: plant one realistic bug at a time and see whether the tests catch it.

Each mutant is a textual replacement in one source file (the text must occur exactly once),
applied in a temporary copy of the tree, never in place; the tests named for it run there
(``pytest -x``), and the mutant is *caught* if they fail, *survived* if they pass. The first
five are the survivors of an earlier sweep; then mutants planted in chips, chip files,
layouts, collectives, the time rule, blocks, rows, serving and the CLI; then (from "backward:
gradients written at the weights' width" on) in the code of the last two rounds: the blocks'
backward rows and ``uses()``, the array layouts and ``partition.ways``, NCCL's latency terms
and the ``base_latency`` convention, remat tuples, and ``train``'s fixes. A survivor is a
missing test.

    python benchmarks/mutation_sweep.py            # every mutant (a few minutes)
    python benchmarks/mutation_sweep.py h200 ep    # the mutants whose name has a word given
    python benchmarks/mutation_sweep.py --list     # the mutants, without running them

It prints one row per mutant (name, file, caught or survived, the first test that failed,
seconds) and exits 1 if any survived or did not apply.
"""

from __future__ import annotations

import os
import re
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
     '"cores": (_B200_SMS, _BOOK_SM + ": B200 \'148\' SMs" + _GB200_GPU)',
     '"cores": (151, _BOOK_SM + ": B200 \'148\' SMs" + _GB200_GPU)', ["tests/test_internals.py"]),
    ("B200 SMs 2% more (cores and CUDA cores)", "symroof/hardware/chips.py",
     "_B200_SMS, _A100_SMS, _V100_SMS = 132, 148,", "_B200_SMS, _A100_SMS, _V100_SMS = 132, 151,",
     ["tests/test_internals.py"]),
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
     'return Pairs(K, T * K, P if rule == "causal" else T * K, sp.sympify(c))',
     "return Pairs(K, T * K, P, sp.sympify(c))",
     ["tests/test_conventions.py", "tests/test_llm_analysis.py"]),
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
    # -- new in the last two rounds: blocks' backward rows --------------------------------
    ("backward: gradients written at the weights' width", "symroof/models/blocks/backprop.py",
     "x_bytes=self.s.ab, grad_bytes=self.gb,\n                            bias=bias",
     "x_bytes=self.s.ab, grad_bytes=self.s.wb,\n                            bias=bias",
     ["tests/test_training_check.py", "tests/test_block_backward.py"]),
    ("backward: dX reads activations at the weights' width", "symroof/models/blocks/backprop.py",
     "bw.linear_dx(self.n, d_in, d_out, x_bytes=self.s.ab, w_bytes=self.s.wb,",
     "bw.linear_dx(self.n, d_in, d_out, x_bytes=self.s.wb, w_bytes=self.s.ab,",
     ["tests/test_training_check.py", "tests/test_block_backward.py"]),
    ("backward: a norm's gradient at the activations' width", "symroof/models/blocks/backprop.py",
     "w_bytes=self.s.wb,\n                                grad_bytes=self.gb)",
     "w_bytes=self.s.wb,\n                                grad_bytes=self.s.ab)",
     ["tests/test_training_check.py", "tests/test_block_backward.py"]),
    ("backward: a sum of k gradients adds k", "symroof/models/blocks/backprop.py",
     "return bw.grad_sum(self.n * (self.s.D if width is None else width), k,",
     "return bw.grad_sum(self.n * (self.s.D if width is None else width), k + 1,",
     ["tests/test_training_check.py", "tests/test_block_backward.py"]),
    ("MLA backward: kv_b_proj without the values", "symroof/models/blocks/latent.py",
     'proj("kv_b_proj", m.kv_rank, H * (m.d_nope + m.d_v))',
     'proj("kv_b_proj", m.kv_rank, H * m.d_nope)',
     ["tests/test_training_moe.py", "tests/test_training_families.py"]),
    ("MLA backward: kv_a_proj without the RoPE key", "symroof/models/blocks/latent.py",
     'proj("kv_a_proj", D, m.kv_rank + m.d_rope)', 'proj("kv_a_proj", D, m.kv_rank)',
     ["tests/test_training_moe.py", "tests/test_training_families.py"]),
    ("MLA backward: RoPE's inverse forgets the shared key", "symroof/models/blocks/latent.py",
     "rw.rope(n, H + 1, m.d_rope, S, ab=w.s.ab)", "rw.rope(n, H, m.d_rope, S, ab=w.s.ab)",
     ["tests/test_training_moe.py", "tests/test_training_families.py"]),
    ("MLA remat: the shared RoPE key kept per head", "symroof/models/blocks/latent.py",
     '"k_pe": n * m.d_rope,', '"k_pe": n * H * m.d_rope,',
     ["tests/test_training_moe.py", "tests/test_remat_plans.py", "tests/test_training.py"]),
    ("MLA remat: kv_b_proj's output not a matmul output", "symroof/models/blocks/latent.py",
     'return Graph(ops, reads, ("cq0", "q0", "ckv_pe", "kv", "y"))',
     'return Graph(ops, reads, ("cq0", "q0", "ckv_pe", "y"))',
     ["tests/test_training_moe.py", "tests/test_remat_plans.py", "tests/test_training.py"]),
    ("GQA backward: RoPE's inverse on 2H heads", "symroof/models/blocks/attention.py",
     "rows = pos.rope_row(n, H + G, pos.rotated(d_h), S, w.s)",
     "rows = pos.rope_row(n, 2 * H, pos.rotated(d_h), S, w.s)",
     ["tests/test_training_check.py", "tests/test_block_backward.py"]),
    ("GQA backward: the core's K and V at H heads", "symroof/models/blocks/attention.py",
     "kv_heads = self.heads(), self.H if self.latent is not None else self.G",
     "kv_heads = self.heads(), self.H",
     ["tests/test_training_check.py", "tests/test_block_backward.py"]),
    ("attention backward: q, k, v's dX summed as two", "symroof/models/blocks/attention.py",
     'return rows | {"attn/qkv_sum": w.sum(3)}', 'return rows | {"attn/qkv_sum": w.sum(2)}',
     ["tests/test_training_check.py", "tests/test_block_backward.py"]),
    ("fused gate_up backward at width F", "symroof/models/blocks/mlp.py",
     '"gate_up/dx": w.dx(D, 2 * F)', '"gate_up/dx": w.dx(D, F)',
     ["tests/test_training_families.py", "tests/test_block_backward.py"]),
    ("MoE backward: d(h) sums k contributions, not k + 1", "symroof/models/blocks/mlp.py",
     "parts = k + 1 + (1 if shared else 0)", "parts = k + (1 if shared else 0)",
     ["tests/test_training_moe.py"]),
    ("MoE backward: combine without the weights' gradient", "symroof/models/blocks/mlp.py",
     '"moe/combine": Cost(flops=n * k * (3 * D - 1),', '"moe/combine": Cost(flops=n * k * D,',
     ["tests/test_training_moe.py"]),
    ("lm_head dW at 2 FLOPs a multiply-add whatever the convention",
     "symroof/models/blocks/embedding.py",
     '"lm_head/dw": w.dw(w.s.D, V, count=per)', '"lm_head/dw": w.dw(w.s.D, V)',
     ["tests/test_training.py", "tests/test_conventions.py", "tests/test_block_backward.py"]),
    ("tied embedding's gradient not added to the lm_head's", "symroof/models/blocks/embedding.py",
     "grad_bytes=w.gb, accumulate=self.tied,", "grad_bytes=w.gb, accumulate=False,",
     ["tests/test_training_families.py", "tests/test_training_check.py"]),
    ("parallel residual sums two gradients at the attention", "symroof/models/blocks/residual.py",
     '"attn/residual": w.sum(3 if self.parallel else 2)', '"attn/residual": w.sum(2)',
     ["tests/test_training_families.py", "tests/test_training_check.py"]),
    # -- uses() and the array layouts ------------------------------------------------------
    ("norms declare no sums of squares", "symroof/models/blocks/residual.py",
     'Uses((x,), h, f"norms/{branch}_norm", sums="D")', 'Uses((x,), h, f"norms/{branch}_norm")',
     ["tests/test_partition.py", "tests/test_serving.py", "tests/test_layout.py",
      "tests/test_blocks.py"]),
    ("kv_write caches k only", "symroof/models/blocks/attention.py",
     '"attn/kv_write": Uses((k, v), kv="attn/K")', '"attn/kv_write": Uses((k,), kv="attn/K")',
     ["tests/test_mutation_survivors.py",
      "tests/test_partition.py", "tests/test_serving.py", "tests/test_layout.py",
      "tests/test_blocks.py", "tests/test_serving_act_bytes.py"]),
    ("MoE rows named after their own block, not the MLP", "symroof/parallel/partition.py",
     '{"attn": "attn", "mlp": "mlp", "moe": "mlp"}', '{"attn": "attn", "mlp": "mlp", "moe": "moe"}',
     ["tests/test_partition.py", "tests/test_serving.py", "tests/test_layout.py"]),
    ("ways: a split over two axes counts the first", "symroof/parallel/partition.py",
     "return mesh.size(spec.mesh_axes) if spec is not None",
     "return mesh.size(spec.mesh_axes[:1]) if spec is not None",
     ["tests/test_partition.py", "tests/test_serving.py", "tests/test_layout.py"]),
    ("sharded rows keep the whole KV cache per chip", "symroof/parallel/partition.py",
     "kv_bytes=c.kv_bytes / ways(rule.kv, mesh)", "kv_bytes=c.kv_bytes",
     ["tests/test_mutation_survivors.py",
      "tests/test_partition.py", "tests/test_serving.py", "tests/test_layout.py"]),
    # -- NCCL latency terms and the base_latency convention ----------------------------------
    ("ring across nodes: net_overhead as a ceiling", "symroof/hardware/collectives.py",
     "intra = _max(intra, net.net_overhead)", "intra = _min(intra, net.net_overhead)",
     ["tests/test_network_latency.py", "tests/test_collectives.py"]),
    ("one GPU a node: crossings at the ring's network latency", "symroof/hardware/collectives.py",
     "            cross = net.tree_latency\n", "            cross = net.net_latency\n",
     ["tests/test_network_latency.py", "tests/test_collectives.py"]),
    ("ring and tree base latencies swapped", "symroof/hardware/collectives.py",
     'return net.ring_base_latency if algorithm == "ring" else net.tree_base_latency',
     'return net.tree_base_latency if algorithm == "ring" else net.ring_base_latency',
     ["tests/test_network_latency.py", "tests/test_collectives.py"]),
    ("base latency added whatever the convention", "symroof/hardware/collectives.py",
     'if current().base_latency == "none" or not isinstance(net, Switched) or \\\n',
     'if not isinstance(net, Switched) or \\\n',
     ["tests/test_network_latency.py", "tests/test_collectives.py", "tests/test_gpu_level.py"]),
    ("NCCL net overhead 2.0 us (AMD's)", "symroof/hardware/chips.py",
     '"net_overhead": (Fraction(1, 10**6)', '"net_overhead": (Fraction(2, 10**6)',
     ["tests/test_network_latency.py", "tests/test_chip_sheets.py"]),
    ("NCCL ring base latency in the wrong unit", "symroof/hardware/chips.py",
     '"ring_base_latency": (Fraction(66, 10**7)', '"ring_base_latency": (Fraction(66, 10**6)',
     ["tests/test_network_latency.py", "tests/test_chip_sheets.py"]),
    # -- remat tuples ----------------------------------------------------------------------
    ("remat tuple keeps a tensor named twice twice", "symroof/parallel/strategies.py",
     "return tuple(dict.fromkeys(remat))", "return tuple(remat)",
     ["tests/test_mutation_survivors.py",
      "tests/test_remat_plans.py", "tests/test_strategies.py", "tests/test_search.py"]),
    ("search's memory ignores the remat policy", "symroof/parallel/search.py",
     'out["memory"] = sum(plan_memory(model, _B, seq, remat, n, z, dict(widths)).values())',
     'out["memory"] = sum(plan_memory(model, _B, seq, "full", n, z, dict(widths)).values())',
     ["tests/test_remat_plans.py", "tests/test_search.py"]),
    ("TP condition solved at a symbolic batch", "symroof/parallel/conditions.py",
     "if s != y} | {_B: plan.batch_tokens}", "if s != y}",
     ["tests/test_cli_fuzz.py", "-k", "valid_runs"]),
    ("serve JSON: dollars per thousand tokens", "symroof/surfaces/cli_serve.py",
     '"usd_per_million_tokens": None if cost is None else float(cost)}',
     '"usd_per_million_tokens": None if cost is None else float(cost) / 1000}',
     ["tests/test_json_fields.py", "-k", "price"]),
    ("train fix: searches again under remat full, not the tensors kept",
     "symroof/surfaces/cli_train_fixes.py",
     "remat=args.remat_value if remat is None else remat,",
     'remat="full" if remat is None else remat,',
     ["tests/test_mutation_survivors.py",
      "tests/test_trust.py", "tests/test_json_fields.py", "-k", "kept or fix"]),
    ("chips JSON: NCCL's base latencies swapped", "symroof/surfaces/cli_format.py",
     '"ring_base_latency": num(net.ring_base_latency),',
     '"ring_base_latency": num(net.tree_base_latency),',
     ["tests/test_json_fields.py", "-k", "chips"]),
    # -- train's fixes -----------------------------------------------------------------------
    ("train fix: nearest batch forgets microbatches", "symroof/surfaces/cli_train_fixes.py",
     'c.degrees["ep"] * c.microbatches', 'c.degrees["ep"]',
     ["tests/test_trust.py", "tests/test_cli.py"]),
    ("train fix: the farthest batch below, not the nearest", "symroof/surfaces/cli_train_fixes.py",
     "below = [b for b in had if b < B][-1:]", "below = [b for b in had if b < B][:1]",
     ["tests/test_mutation_survivors.py",
      "tests/test_trust.py", "tests/test_cli.py"]),
    ("train fix: smaller batches include the batch itself", "symroof/surfaces/cli_train_fixes.py",
     "tries = np.arange(1, sequences) if every", "tries = np.arange(1, sequences + 1) if every",
     ["tests/test_trust.py", "tests/test_cli.py", "symroof/surfaces/cli_train_fixes.py"]),
    ("train fix: narrowest optimizer state first", "symroof/surfaces/cli_train_fixes.py",
     "key=lambda v: -widths[v])", "key=lambda v: widths[v])",
     ["tests/test_mutation_survivors.py",
      "tests/test_trust.py", "tests/test_cli.py", "symroof/surfaces/cli_train_fixes.py"]),
    ("train fix: state per parameter without gradients", "symroof/surfaces/cli_train_fixes.py",
     'for k in ("params", "grads", "master", "moments")',
     'for k in ("params", "master", "moments")',
     ["tests/test_trust.py", "tests/test_cli.py", "symroof/surfaces/cli_train_fixes.py"]),
    ("train fix: smaller slices farthest first", "symroof/surfaces/cli_train_fixes.py",
     "(shapes if larger else shapes[::-1])", "shapes",
     ["tests/test_trust.py", "tests/test_cli.py"]),
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


def _failed(output: str) -> str:
    """The first test pytest's short summary names as failed (or erroring), shortened to
    ``file::test``; "" where none is named."""
    hit = re.search(r"^(?:FAILED|ERROR) (\S+)", output, re.MULTILINE)
    if not hit:
        return ""
    path, _, test = hit.group(1).partition("::")
    return f"{path.removeprefix('tests/').removeprefix('symroof/')}::{test.split('[')[0]}"


def run(mutants: list[tuple]) -> list[tuple[str, str, str, float, str]]:
    """Apply each mutant in one temporary copy (restoring the file after it) and run its
    tests; (name, file, verdict, seconds, the first failing test) per mutant."""
    out = []
    with tempfile.TemporaryDirectory(prefix="symroof-mutants-") as tmp:
        copy = Path(tmp)
        _copy_tree(copy)
        env = {**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1"}
        for name, path, text, new, tests in mutants:
            target = copy / path
            original = target.read_text(encoding="utf-8")
            if original.count(text) != 1:
                out.append((name, path, f"not applied ({original.count(text)} matches)", 0.0,
                            ""))
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
            by = _failed(done.stdout) if done.returncode else ""
            out.append((name, path, verdict, seconds, by))
            print(f"  {verdict:9} {name}  {by}", file=sys.stderr, flush=True)
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
    print(f"{'mutant':{width}}  {'file':32}  verdict   seconds  caught by")
    for name, path, verdict, seconds, by in rows:
        print(f"{name:{width}}  {path.removeprefix('symroof/'):32}  {verdict:8}  {seconds:7.1f}"
              f"  {by}")
    bad = [r for r in rows if r[2] == "SURVIVED" or r[2].startswith("not applied")]
    print(f"{len(rows)} mutants: {len(rows) - len(bad)} caught, {len(bad)} survived or "
          "not applied")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
