"""Every derivation script runs, prints the seeds' numbers, publishes its NOTES, and every
LaTeX string it produces compiles.

Each script runs twice: as a program (a subprocess, as a reader would run it) and through
``runpy`` with ``run_name="symroof.surfaces.notes"``, as the notes generator loads it.
"""

import contextlib
import io
import os
import re
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import symroof as sr
from symroof.derivation import Derivation, tex_escape
from symroof.models.table import RooflineTable

ROOT = Path(__file__).resolve().parents[1]
DERIVATIONS = ROOT / "derivations"

# Numbers the seeds print, as the scripts print them (exact values and their readings).
KEY_NUMBERS = {
    "01_rooflines.py": [
        "1000/989  ~ 1.01112",               # 1e12 FLOPs on an H100, ms
        "100/91  ~ 1.0989",                  # ... on a TPU v6e
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
        "per-op sum is 1.06x of it",         # prefill
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
}
SCRIPTS = sorted(DERIVATIONS.glob("[0-9][0-9]_*.py"))
FIGURES = {"01_rooflines.py": ["01_rooflines_problem3.png"],
           "04_sharding.py": ["04_collectives.png", "04_sharded_matmuls.png"]}


def _env(out: Path) -> dict:
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "SYMROOF_OUT": str(out), "PYTHONPATH": path, "MPLBACKEND": "Agg"}


def test_every_script_is_covered():
    assert [s.name for s in SCRIPTS] == sorted(KEY_NUMBERS)


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_script_runs_and_prints_the_seed_numbers(script, tmp_path):
    run = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=_env(tmp_path),
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    missing = [n for n in KEY_NUMBERS[script.name] if n not in run.stdout]
    assert not missing, f"{script.name} did not print {missing}"
    assert "[FAILED]" not in run.stdout
    for name in FIGURES.get(script.name, []):
        png = tmp_path / name
        assert png.exists() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", png


@pytest.fixture(scope="module")
def notes(tmp_path_factory):
    """Each script's NOTES, loaded as the notes generator loads it (nothing may print)."""
    out = tmp_path_factory.mktemp("notes")
    loaded, printed = {}, {}
    old = os.environ.get("SYMROOF_OUT")
    os.environ["SYMROOF_OUT"] = str(out)
    try:
        for script in SCRIPTS:
            buffer = io.StringIO()
            with contextlib.redirect_stdout(buffer):
                namespace = runpy.run_path(str(script), run_name="symroof.surfaces.notes")
            loaded[script.name] = namespace.get("NOTES")
            printed[script.name] = buffer.getvalue()
    finally:
        if old is None:
            os.environ.pop("SYMROOF_OUT", None)
        else:
            os.environ["SYMROOF_OUT"] = old
        if "matplotlib.pyplot" in sys.modules:
            sys.modules["matplotlib.pyplot"].close("all")
    return {"notes": loaded, "printed": printed, "out": out}


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_notes_are_a_list_of_publishable_items(script, notes):
    items = notes["notes"][script.name]
    assert isinstance(items, list) and items, f"{script.name}: NOTES must be a non-empty list"
    kinds = (Derivation, RooflineTable, sr.CheckReport, Path)
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
        if isinstance(item, sr.CheckReport):
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
    tex.write_text(sr.document(_latex_body(notes), title="symroof derivations"),
                   encoding="utf-8")
    run = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error",
                          tex.name], cwd=out, capture_output=True, text=True, timeout=300)
    errors = [line for line in run.stdout.splitlines() if line.startswith("!")]
    context = re.findall(r"^l\.\d+.*$", run.stdout, flags=re.M)
    assert run.returncode == 0 and (out / "derivations.pdf").exists(), (errors, context,
                                                                         run.stdout[-2000:])
