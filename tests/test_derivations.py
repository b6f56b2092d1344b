"""Every derivation script runs, prints the seeds' numbers, publishes its NOTES, and every
LaTeX string it produces compiles.

Each script runs once for the whole session (the ``derivations`` fixture of conftest.py),
as the notes generator loads it; what it prints as a program is its ``__main__`` block run on
the namespace the script left. (``python derivations/01_rooflines.py`` itself runs in a real
process in tests/test_benchmarks.py, through benchmarks/derivations_time.py.)
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from symroof.derivation import Derivation, tex_escape
from symroof.models.check import CheckReport
from symroof.models.table import RooflineTable
from symroof.render import document

ROOT = Path(__file__).resolve().parents[1]
DERIVATIONS = ROOT / "derivations"

# Numbers the seeds print, as the scripts print them (exact values and their readings).
KEY_NUMBERS = {
    "01_rooflines.py": [
        "= 1/989  ~ 0.00101112",             # 1e12 FLOPs on an H100, s (1.01 ms)
        "= 1/910  ~ 0.0010989",              # ... on a TPU v6e (1.1 ms)
        "(2*N - 1)/(4*N + 2)",               # the exact dot product
        "B*D*F/(B*D + B*F + D*F)",           # matmul intensity
        "9850/41  ~ 240.244",                # B > 240 on TPU v5e
        "B*D*F/197000000000000",             # 2-chip T_math
        "B*F/22500000000",                   # 2-chip T_comms = 2BF / 4.5e10
        "78800/9  ~ 8755.56",                # D > 8755
        "2*B*D*F/(B*D + B*F + D*F)",         # problem 1 intensity
        "39400/81  ~ 486.42",                # int8 ridge with 8.1e11
        "19700/81  ~ 243.21",                # B > 243
        "4925/41  ~ 120.122",                # problem 2: B > 120
        "01_rooflines_problem3.png",         # problem 3's figure
        "5043200/37059  ~ 136.086",          # problem 3, D = F = 4096
        "1260800/5571  ~ 226.315",           # problem 3, D = F = 1024
        "2*D*F/(D*F + D + F)",               # problem 4
        "20000/67  ~ 298.507",               # problem 5, the book's 1e15
        "19790/67  ~ 295.373",               # the sheet's half
        "19780/67  ~ 295.224",               # the record's 989e12
        "C/W",                               # symbolic chip
    ],
    "02_transformer_accounting.py": [
        "P(llama-3.1-8b) = 8030261248",
        "llama-3.1-8b = (16.7, 70.2, 13.1)",
        "llama-3.1-405b = (17.7, 81.3, 1.0)",
        "all equal: counted == symbolic for every op and quantity",
        "executed / useful = 256/129",
        "btkgh,bskh->btskg",
        "btskg,bskh->btkgh",
        "FLOPs_layer = 962072674304",
        "ctx^*_llama-3.1-8b = 28628",
        "265128/5  ~ 53025.6",               # 70B
        "2053568/21  ~ 97789",               # 405B
        "T^*_llama-3.1-8b = 57255",          # prefill equal point = 2 ctx* - 1
        "S_KV^*(B = 1) = 114512",
        "7157/4  ~ 1789.25",
        "ratio_seed = 1106725224901/1041612144640  ~ 1.06251",  # prefill, the seed's division
        "per-op sum is 1.14x of it",         # prefill, one lm_head rule
        "per-op sum is 1.00x of it",         # decode B = 1
        "per-op sum is 1.02x of it",         # decode B = 64
        "~ 3.69115",                         # prefill norms + elementwise, ms
        "~ 28.9053",                         # prefill projections + MLP, ms
        "~ 5.13834",                         # decode B = 64 attention core, ms
        "~ 3.43307",                         # decode B = 64 MLP, ms
        "AI_B=64 = (61.5, 62.7, 63.0)",
    ],
    "03_decode_throughput.py": [
        "262144/3271484375  ~ 8.013e-05",    # KV read per sequence at S = 2048, s
        "3926528/241455078125  ~ 1.62619e-05",  # FLOPs per sequence, s
        "959038/2439  ~ 393.21",             # below this context batching can turn compute-bound
        "3271484375/(128*S)",                # tokens/s ceiling W / (S KV_tok)
        "975639/4096  ~ 238.193",            # batch that fills 80 GB
        "~ 10107.1",                         # tokens/s at that batch
        "03_throughput.png",
        "03_attention_share.png",
    ],
    "04_sharding.py": [
        "W_ring = 2*W_1",                    # a ring axis: both neighbours' links
        "hosts = 2240",                      # v5p superpod 16x20x28
        "T_AG = Max(T_min*X/2, V_b/(2*W_1))",  # AllGather on a ring, with its latency floor
        "131072/5625  ~ 23.3017",            # ch3 Q2: AllGather_X on v4p 4x4x4, us
        "262144/5625  ~ 46.6034",            # AllGather_XY, us
        "65536/5625  ~ 11.6508",             # AllReduce_Z, us
        "1048576/1875  ~ 559.241",           # pop quiz 2: v5e line of 4, us
        "V^*_ring = T_min*W_1*X",            # latency knee
        "V^*/X / B = 45000",                 # 45 kB a shard on v5e
        "1835008/28125  ~ 65.2447",          # 8xH100 AllGather, us
        "12800/31  ~ 412.903",               # scalable-unit AllGather bandwidth, GB/s
        "D^*_bytes = 2*B",                   # reduce-after moves fewer bytes when D > 2B
        "X^*_reduce = D*W_1/C",              # X < D / (2 alpha)
        "78800/9  ~ 8755.56",                # ch1's 2-chip D* on v5e
        "04_collectives.png",
        "04_sharded_matmuls.png",
    ],
    "05_training.py": [
        "FLOPs^mm / (B S P_mm) = 6",         # the 6ND rule, read off the rows
        "FLOPs^attn = 12*B*H*L*S**2*d_h",    # the attention core beside it
        "FLOPs^attn / FLOPs^mm_layers = S/(8*D)",  # attention passes the matmuls at S = 8D
        "all equal: counted == symbolic",    # the NumPy training step, op by op
        "M_none / (2 B S L) = 20*D + H*S",   # no remat: ~20 D a token and layer, plus S x S
        "M_full / (2 B S L) = D",            # block remat keeps the layer input
        "M_state / P = 10",                  # the book's 10 bytes a parameter
        "(B/X)^* = C/W_ici",                 # DP and FSDP: per-chip batch > alpha
        "X_opt = sqrt(2)*sqrt(B)*sqrt(N)/sqrt(F)",  # FSDP degree at the optimum, M_X/M_Y = 2
        "(B/N)^*_FSDP+TP = C**2/(2*F*W_ici**2)",  # current ch. 5
        "(B/N)^*_FSDP+TP, added = 2*C**2/(F*W_ici**2)",  # the Feb 2025 revision: 4x
        "14336/1275  ~ 11.2439",             # TP limit for LLaMA-3-70B on a v5p axis
        "512*sqrt(10)  ~ 1619.09",           # X_opt at 4M tokens on the v5p pod
        "1625625/14336  ~ 113.395",          # FSDP + TP minimum batch per chip
        "1625625/3584  ~ 453.578",           # ... as ch. 6 quotes it
        "C / W_dcn = 73440",                 # DCN bound per slice, v5p
        "(B/N)_knee = 56",                   # the pod's FSDP + TP knee: T_FSDP = T_TP
        "(B/N)^* = Matrix([[1923, 2395, 1923]])",  # H100: node, SuperPod, two nodes
        "(B/N)^*_book = Matrix([[2198, 2472]])",  # the book's 2200 and 2475 (at 990e12)
        "FLOPs^attn_book = 12*B*H*L*S**2*d_h",  # the book's 12 B T^2 N H a layer
        "73728/4945  ~ 14.9096",             # TP limit inside an H100 node
        "1230359/27540  ~ 44.6753",          # LLaMA-3-70B, 15T tokens, v5p pod, 40% MFU, days
        "200291/4968  ~ 40.3162",            # ... on 4096 H100s at 45% MFU, days
        "N_min = 226",                       # chips for 4 checkpoints a layer (book: 225)
        "4000/3  ~ 1333.33",                 # ch. 5 problem 3's X_opt
        "05_step_time.png",
        "05_memory_by_remat.png",
    ],
    "06_inference.py": [
        "B_crit = C*b_w/(2*W)",              # the decode step's MLP turns compute-bound
        "10399/4100  ~ 2.53634",             # ch7 pop quiz, B = 4, ms
        "4211648/201925  ~ 20.8575",         # B = 256, ms
        "55421572/3203125  ~ 17.3023",       # LLaMA-3-70B int8, B = 32, v5e 2x4, ms
        "KV_tok = 2*G*L*b_kv*d_h",           # keys and values: the factor 2
        "B_max = 15",                        # LLaMA-2-13B on 8 v5e, multi-head
        "B_max^GQA = 75",                    # ... with 8 KV heads
        "B_max = (M*nu - P)/(S*kappa)",      # the dtype cancels from the largest batch
        "B_max = 42",                        # every smallest slice (bf16, int8, int4)
        "B_max = 138",                       # slices twice as large
        "T_full = M/W",                      # a step with HBM full
        "B_crit^MoE = C*E/(W*k)",            # (E/k) B_crit
        "78800/41  ~ 1921.95",               # E = 16, k = 2 on v5e
        "Y_ICI = F*W_ici/(B*W)",             # per-matmul T_ici = T_hbm, solved for Y
        "Y_ICI = F/(B*beta)",                # the book's form, beta = W_hbm / W_ici
        "2304/41  ~ 56.1951",                # ch7's example, F = 16384, B = 32
        "T_net / ms = 1127/250  ~ 4.508",    # 8x8 at B = 1: 161 AllReduces' latency floor
        "V^*_8 = 360000",                    # latency-bound below 45 kB a shard
        "N^* = 18*F/D",                      # 2-D weight-stationary beats 1-D
        "8819213312/9619140625  ~ 0.91684",  # prefill of 8192 tokens, s
        "evicted = 96",                      # KV tokens evicted per step
        "42618354525/549575936  ~ 77.5477",  # doubling latency: 77.5x cheaper tokens
        "FLOPs/\\$_tpu-v5e = 591000000000000000",  # C 3600 / price
        "275600416/1154296875  ~ 0.23876",   # $ per million tokens, compute floor
        "06_latency_throughput.png",
    ],
    "07_conventions.py": [
        "= 1/2  ~ 0.5",                      # LLM-Viewer's lm_head: 1 FLOP a multiply-add
        "KV_core (LLM-Viewer / symroof) = 4",  # its fused core reads all H heads' K and V
        "\\Delta FLOPs_core = 1024*B*(2 - S)",  # softmax 5 an element against 6S - 2 a row
        "C / W = Matrix([[295.2, 295.2, 322.1, 290.9, 298.5]])",  # five H100 records
        "07_conventions.png",
    ],
    "08_hardware.py": [
        "C_units / (FLOP/s) = 196608000000000",  # 4 MXUs x 1.5 GHz x 32768: v5e's 1.97e14
        "f_TC / GHz = 123625/67584  ~ 1.82921",  # the H100 tensor-core clock the sheet implies
        "B^*_VMEM = 4925/451  ~ 10.9202",        # from VMEM an int8 matmul needs B > 11
        "I^*_VPU = 5/2  ~ 2.5",                  # v5p's VPU 'around 3'
        "B^*_PCIe = 184000/3  ~ 61333.3",        # a PCIe-bound matmul on v6e: B > 61,000
        "T_host / ms = 200/3  ~ 66.6667",        # 1 GB a PCIe link of 1.5e10 B/s
        "W_bisection / (TB/s) = 18/5  ~ 3.6",    # an H100 node's bisection bandwidth
        "T_A2A\\, W_node / V_b = 63/4096",        # V (M - 1) / (M^2 W_node), M = 64 nodes
        "bytes_total / KiB = 512",               # ch. 3 pop quiz: 512 KiB over the mesh
    ],
    "09_questions.py": [
        "N_max(16M) = 320000/17  ~ 18823.5",  # FSDP on v5p: 16e6 / 850 chips
        "P_max = M/10",                       # the largest model, HBM / 10 bytes
        "T / ms = 125/12  ~ 10.4167",         # 200e9 bf16 params over 32 v4p
        "T_prefill / s = 896/985  ~ 0.909645",  # 70e9 prefill of 8192 on a v5e 4x4
        "Y_ICI = 129024/(41*B)",              # decode ICI limit, F/(B beta)
        "M_ckpt = 2*B*L*(D + 2*F)",           # three checkpoints a layer
    ],
}
SCRIPTS = sorted(DERIVATIONS.glob("[0-9][0-9]_*.py"))
FIGURES = {"01_rooflines.py": ["01_rooflines_problem3.png"],
           "04_sharding.py": ["04_collectives.png", "04_sharded_matmuls.png"],
           "05_training.py": ["05_step_time.png", "05_memory_by_remat.png"],
           "06_inference.py": ["06_latency_throughput.png"],
           "07_conventions.py": ["07_conventions.png"]}


def test_every_script_is_covered():
    assert [s.name for s in SCRIPTS] == sorted(KEY_NUMBERS)


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_script_runs_and_prints_the_seed_numbers(script, derivations):
    run = derivations["runs"][script.name]
    run.ok()
    missing = [n for n in KEY_NUMBERS[script.name] if n not in run.program]
    assert not missing, f"{script.name} did not print {missing}"
    assert "[FAILED]" not in run.program
    for name in FIGURES.get(script.name, []):
        png = derivations["figures"] / name
        assert png.exists() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", png


@pytest.fixture(scope="module")
def notes(derivations):
    """Each script's NOTES and what it printed while loaded as notes (nothing may print)."""
    runs = derivations["runs"]
    return {"notes": {n: r.namespace.get("NOTES") for n, r in runs.items() if r.error is None},
            "printed": {n: r.printed for n, r in runs.items()}, "out": derivations["figures"],
            "runs": runs}


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_notes_are_a_list_of_publishable_items(script, notes):
    items = notes["runs"][script.name].ok().get("NOTES")
    assert isinstance(items, list) and items, f"{script.name}: NOTES must be a non-empty list"
    kinds = (Derivation, RooflineTable, CheckReport, Path)
    for item in items:
        if isinstance(item, tuple):  # a (figure, caption) pair
            assert len(item) == 2 and isinstance(item[1], str) and item[1], item
            item = item[0]
        assert isinstance(item, kinds), f"{script.name}: {item!r} is not publishable"
        if isinstance(item, Path):
            assert item.suffix == ".png" and item.exists(), item
            assert item.parent == notes["out"], "figures go to SYMROOF_OUT"
        if isinstance(item, Derivation):
            assert item.claims and all(ok for _, ok in item.claims), item.title
        if isinstance(item, CheckReport):
            assert item.ok, item.label
    assert notes["printed"][script.name] == "", f"{script.name} printed while loaded as notes"


def _latex_body(notes) -> str:
    parts = []
    for name in sorted(notes["notes"]):
        parts.append(r"\section*{" + tex_escape(name) + "}")
        for item in notes["notes"][name]:
            item = item[0] if isinstance(item, tuple) else item
            if isinstance(item, (Derivation, RooflineTable)):
                parts.append(item.to_latex())
            elif isinstance(item, Path):
                parts.append(r"\begin{center}\includegraphics[width=0.8\textwidth]{"
                             + item.name + r"}\end{center}")
    return "\n\n".join(parts)


@pytest.mark.skipif(shutil.which("pdflatex") is None and not os.environ.get("CI"),
                    reason="pdflatex is not installed (CI installs it, and there this fails)")
def test_all_latex_compiles(notes):
    out = notes["out"]  # the figures live here, so \includegraphics finds them by name
    tex = out / "derivations.tex"
    tex.write_text(document(_latex_body(notes), title="symroof derivations"),
                   encoding="utf-8")
    run = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error",
                          tex.name], cwd=out, capture_output=True, text=True, timeout=300)
    errors = [line for line in run.stdout.splitlines() if line.startswith("!")]
    context = re.findall(r"^l\.\d+.*$", run.stdout, flags=re.M)
    assert run.returncode == 0 and (out / "derivations.pdf").exists(), (errors, context,
                                                                         run.stdout[-2000:])
