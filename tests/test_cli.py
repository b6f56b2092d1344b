"""The ``symroof`` command: every case runs ``main(argv)`` in this process with its streams
captured (conftest.py's ``cli``), as the command line would; docs/cli.md's examples run too,
and must print what they show. A few real processes check what only a process can: the exit
status of ``python -m symroof`` (tests/test_readme.py) and the installed console script.
Hugging Face configs are read from tests/data, real public config.json files, and from broken
copies of one written by the fixture.
"""

import importlib.util
import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import sympy as sp

import symroof as sr
from symroof.hardware import CHIPS
from symroof.models import from_hf_config
from symroof.surfaces.cli import main
from symroof.surfaces.cli_args import OVERRIDE as OVERRIDE_SOURCE
from symroof.surfaces.cli_args import load_chip, size, width
from symroof.surfaces.solve import solve_step
from symroof.symbols import S as sr_S

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
LLAMA3, LLAMA2 = DATA / "llama-3.1-8b.config.json", DATA / "llama-2-7b.config.json"
REPORT = "report --model llama-3.1-8b --chip h100 --batch 64 --context 2048"
SCRIPT = '"""Demo section.\n\nOne paragraph."""\nfrom symroof.derivation import Derivation\n' \
         'd = Derivation("Two", source="test")\nd.step("two", "x", 2)\nNOTES = [d]\n'
ERROR = "report --model tiny --chip h100 --phase decode --batch 1 --context 8"
#: a batch whose KV cache is thousands of HBMs, a context far past llama-2-7b's 4096
WARN = "report --model llama-2-7b --chip h100 --phase decode --batch 512 --context 1000000"
#: a what-if H100 (HBM of a B200, the peak of nothing on record)
OVERRIDE = "--hbm-bw 6.7e12 --peak 2e15"
MESH_REPORT = "report --model llama-3.1-70b --mesh tpu-v5e:4x4 --phase decode --batch 32 " \
    "--context 8k"
TRAIN = "train --model llama-3.1-70b --mesh tpu-v5p:16x16x16 --tokens 4M --seq 4096"
SERVE = "serve --model llama-3.1-70b --mesh tpu-v5e:4x4 --batch 32 --context 8k"
#: decode never turns compute-bound at context 4096, at any batch (only below context 393)
# lecture 1's whole-model view: its numbers are the ones these tests derive by hand
SOLVE_NEVER = "solve 't_math = t_mem' --for batch --model llama-3.1-8b --chip h100 --phase " \
    "decode --context 4096 --view whole"
SOLVE_KV = "solve 'kv_bytes = weight_bytes' --for context --model llama-3.1-70b --kv-dtype fp8 " \
    "--batch 32 --view whole"
#: a config without model_type, in float32, with 4-bit GPTQ weights, in a folder named for it
FLAGS = {"torch_dtype": "float32", "quantization_config": {"quant_method": "gptq", "bits": 4}}
#: broken copies of LLAMA3 the fixture writes: file name -> the fields changed
CONFIGS = {"heads-0.json": {"num_attention_heads": 0}, "hidden-str.json": {"hidden_size": "4096"},
           "kv-null.json": {"num_key_value_heads": None}, "kv-0.json": {"num_key_value_heads": 0}}

#: name -> arguments; the "err-" ones must exit with status 2, the others with 0
CASES = {
    "help": "--help",
    "version": "--version",
    "chips-text": "chips",
    "chips-sources": "chips --sources",
    "chips-markdown": "chips tpu-v5e --format markdown --sources",
    "chips-json": "chips --format json",
    "models-text": "models",
    "models-markdown": "models --format markdown",
    "models-json": f"models tiny {shlex.quote(str(LLAMA2))} --format json",
    "cb-text": "critical-batch --chip tpu-v5e",
    "cb-json": "critical-batch --chip tpu-v5e --dtype int8 --w-bytes 1 --x-bytes 2 --format json",
    "cb-exact": "critical-batch --chip tpu-v5e --d 4096 --f 4096",
    "cb-markdown": "critical-batch --chip b200 --dtype fp8 --format markdown",
    "report-text": f"{REPORT} --phase decode",
    "report-markdown": f"{REPORT} --phase prefill --groups --attention naive --format markdown",
    "report-latex": f"{REPORT} --phase decode --format latex",
    "report-json": f"{REPORT} --phase decode --new-tokens 4 --format json",
    "report-hf-json": REPORT.replace("llama-3.1-8b", shlex.quote(str(LLAMA3)))
    + " --phase decode --new-tokens 4 --format json",
    "report-fp8-json": f"{REPORT} --phase decode --new-tokens 4 --dtype fp8 --format json",
    "report-int8-kv2-json": f"{REPORT} --phase decode --new-tokens 4 --dtype int8 --kv-bytes 2 "
    "--format json",
    "report-fp8-text": f"{REPORT} --phase decode --dtype fp8",
    "report-int8-markdown": f"{REPORT} --phase decode --dtype int8 --format markdown",
    "report-int8-latex": f"{REPORT} --phase decode --dtype int8 --format latex",
    "report-w1-text": f"{REPORT} --phase decode --w-bytes 1",
    "report-warn-text": WARN,
    "report-warn-markdown": f"{WARN} --format markdown",
    "report-warn-json": f"{WARN} --format json",
    "report-flags-text": "report --model {tmp}/flags/config.json --chip h100 --phase decode "
    "--batch 1 --context 8",
    "models-flags": "models {tmp}/flags/config.json",
    "check-text": "check --model tiny --batch 4 --new-tokens 16 --cached 0",
    "check-json": "check --model tiny --batch 2 --new-tokens 3 --cached 5 --format json",
    "check-markdown": "check --model tiny --batch 2 --new-tokens 3 --format markdown",
    "check-help": "check --help",
    "models-kv-null": "models {tmp}/kv-null.json --format json",
    "notes": "notes --out {tmp}/demo-notes --scripts {tmp}/scripts",
    "measure-help": "measure --help",
    "err-chip": ERROR.replace("h100", "tpu-v9"),
    "err-model": ERROR.replace("tiny", "gpt-5"),
    "err-batch": ERROR.replace("--batch 1", "--batch -3"),
    "err-missing": ERROR.replace("tiny", "no/such/config.json"),
    "err-json": "models {tmp}/bad.json",
    "err-command": "frobnicate",
    "err-heads-0": "models {tmp}/heads-0.json",
    "err-hidden-str": ERROR.replace("tiny", "{tmp}/hidden-str.json"),
    "err-kv-0": "models {tmp}/kv-0.json",
    "err-not-utf8": "models {tmp}/latin1.json",
    "err-check-memory": "check --model tiny --batch 64 --new-tokens 2048",
    "err-context": f"{ERROR} --new-tokens 9",
    "report-window-text": "report --model mistral-7b --chip h100 --phase decode --batch 1 "
    "--context 64k",
    # sizes, widths and chips (docs/cli.md, "Sizes, byte widths and chips")
    "report-sizes-json": "report --model llama-3.1-8b --chip h100 --phase decode --batch 1k "
    "--context 128k --w-bytes int4 --kv-dtype fp8 --format json",
    "chips-file": "chips docs/example-chip.json {tmp}/based.json --sources",
    "cb-file-json": "critical-batch --chip docs/example-chip.json --format json",
    "cb-override-json": f"critical-batch --chip h100 {OVERRIDE} --format json",
    "report-override-json": f"{REPORT} --phase decode {OVERRIDE} --format json",
    # on a mesh
    **{f"report-mesh-{f}": f"{MESH_REPORT} --format {f}" for f in ("text", "latex", "json")},
    "report-mesh-groups-markdown": f"{MESH_REPORT} --groups --format markdown",
    "report-mesh-nofit": MESH_REPORT.replace("4x4", "2x2"),
    **{f"train-{f}": f"{TRAIN} --format {f}" for f in ("text", "markdown", "json")},
    "train-axes-json": f"{TRAIN} --strategy fsdp+tp --fsdp XY --tp Z --format json",
    "train-nofit-json": TRAIN.replace("16x16x16", "4x4x4") + " --format json",
    "train-nofit-text": TRAIN.replace("16x16x16", "4x4x4") + " --strategy fsdp+tp",
    "train-small-json": "train --model llama-3.1-8b --mesh tpu-v5p:4x4x4 --tokens 1M --format "
    "json",
    **{f"serve-{f}": f"{SERVE} --format {f}" for f in ("text", "markdown", "json")},
    "serve-int8-json": f"{SERVE} --weights int8 --kv fp8 --format json",
    "serve-nofit-json": SERVE.replace("4x4", "2x2") + " --format json",
    "serve-h100": "serve --model llama-3.1-70b --mesh h100:16x8 --batch 64 --context 32k",
    "serve-file-chip": "serve --model llama-3.1-8b --mesh docs/example-chip.json:2x2 --batch 8 "
    "--context 4096 --format json",
    # solve
    **{f"solve-never-{f}": f"{SOLVE_NEVER} --format {f}" for f in ("text", "latex", "json")},
    "solve-kv-text": SOLVE_KV,
    "solve-kv-json": f"{SOLVE_KV} --format json",
    "solve-kv-markdown": f"{SOLVE_KV} --format markdown",
    "solve-prefill-json": "solve 't_math = t_mem' --for context --model llama-3.1-8b --chip h100 "
    "--phase prefill --batch 1 --format json --view whole",
    # errors of the new surfaces: one line each
    "err-mesh-chip": SERVE.replace("tpu-v5e:4x4", "tpu-v9:4x4"),
    "err-mesh-shape": SERVE.replace("4x4", "4x4y4"),
    "err-mesh-pod": SERVE.replace("4x4", "32x8"),
    "err-mesh-colon": SERVE.replace("tpu-v5e:4x4", "tpu-v5e"),
    "err-mesh-gpus": SERVE.replace("tpu-v5e:4x4", "h100:131072"),
    "err-mesh-prefill": MESH_REPORT.replace("decode", "prefill"),
    "err-mesh-and-chip": f"{MESH_REPORT} --chip h100",
    "err-no-chip": MESH_REPORT.replace(" --mesh tpu-v5e:4x4", ""),
    "err-size": f"{REPORT} --phase decode --context 1.5",
    "err-size-suffix": f"{REPORT} --phase decode --context 4m",
    "err-width": f"{REPORT} --phase decode --w-bytes int3",
    "err-train-seq": TRAIN.replace("4M", "1e6"),
    "err-train-strategy": f"{TRAIN} --strategy fsdp+xp",
    "err-train-axes": f"{TRAIN} --tp Z",
    "err-serve-weights": f"{SERVE} --weights int3",
    "err-override": f"{REPORT} --phase decode --hbm-bw fast",
    "err-chip-file": f"{REPORT} --phase decode".replace("h100", "{tmp}/nochip.json"),
    "err-chip-source": f"{REPORT} --phase decode".replace("h100", "{tmp}/unsourced.json"),
    "err-solve-quantity": SOLVE_NEVER.replace("t_mem", "t_foo"),
    "err-solve-chip": SOLVE_NEVER.replace(" --chip h100", ""),
    "err-solve-given": SOLVE_NEVER.replace(" --context 4096", ""),
    "err-solve-equation": SOLVE_NEVER.replace("=", "<"),
}


def _documented() -> dict[str, tuple[list[str], list[str]]]:
    """docs/cli.md's console blocks: ``$ symroof ARGS`` and the lines shown under it."""
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```console\n(.*?)```", text, re.S)
    return {f"doc-{i}": (shlex.split(b.splitlines()[0].removeprefix("$ symroof ")),
                         b.splitlines()[1:]) for i, b in enumerate(blocks)}


def shown_as_pattern(lines: list[str]) -> str:
    """A regex for the whole output a doc block shows: each line exactly, except that a line
    ``...`` stands for any lines (output that depends on the machine, or left out) and a line
    ending in ``...`` for any rest of that line."""
    parts = []
    for line in lines:
        if line.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        elif line.endswith("..."):
            parts.append(re.escape(line[:-3]) + r"[^\n]*\n")
        else:
            parts.append(re.escape(line) + r"\n")
    return "".join(parts)


DOCS = _documented()


@pytest.fixture(scope="module")
def runs(tmp_path_factory, cli, cached_run_script):
    tmp = tmp_path_factory.mktemp("cli")
    (tmp / "bad.json").write_text('{"hidden_size": 4096,\n')
    llama3 = json.loads(LLAMA3.read_text())
    for name, changes in CONFIGS.items():
        (tmp / name).write_text(json.dumps({**llama3, **changes}))
    (tmp / "flags").mkdir()
    flagged = {k: v for k, v in {**llama3, **FLAGS}.items() if k != "model_type"}
    (tmp / "flags" / "config.json").write_text(json.dumps(flagged))
    (tmp / "latin1.json").write_bytes(  # "café" in Latin-1: not UTF-8
        json.dumps({**llama3, "_name_or_path": "café"}, ensure_ascii=False).encode("latin-1"))
    (tmp / "docs").mkdir()  # the doc's chip, where its examples (run from the root) find it
    shutil.copy(ROOT / "docs" / "example-chip.json", tmp / "docs")
    (tmp / "based.json").write_text(json.dumps(
        {"name": "h100-hbm4", "base": "h100", "hbm_bw": [6.7e12, "what-if: HBM4"]}))
    (tmp / "unsourced.json").write_text(json.dumps(
        {"name": "x", "peaks": {"bf16": 1e15}, "hbm_bw": [1e12, "s"], "hbm_bytes": [8e10, "s"],
         "link_bw": [1e11, "s"]}))
    (tmp / "scripts").mkdir()
    (tmp / "scripts" / "01_demo.py").write_text(SCRIPT)
    todo = {name: shlex.split(args.format(tmp=tmp)) for name, args in CASES.items()}
    todo |= {name: args for name, (args, _) in DOCS.items()}
    if importlib.util.find_spec("symroof.surfaces.measure") is None:
        todo.pop("measure-help")
    with pytest.MonkeyPatch.context() as patch:  # `symroof notes`: the session's derivations
        patch.setattr("symroof.surfaces.notes.run_script", cached_run_script)
        out = {name: cli(args, cwd=tmp) for name, args in todo.items()}
    out["tmp"] = tmp
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_exit_status_and_streams(runs, name):
    if name not in runs:
        pytest.skip("symroof.surfaces.measure is not in this tree yet")
    r = runs[name]
    assert r.returncode == (2 if name.startswith("err-") else 0), r.stderr
    if name.startswith("err-"):  # one clear line on stderr, nothing on stdout, no traceback
        assert r.stdout == ""
        assert r.stderr.startswith("symroof: error: ") and r.stderr.count("\n") == 1
        assert "Traceback" not in r.stderr
    else:
        assert r.stderr == "" and r.stdout.strip()


@pytest.mark.parametrize("name", sorted(DOCS))
def test_documented_commands_run_as_shown(runs, name):
    args, shown = DOCS[name]
    r = runs[name]
    error = shown[0].startswith("symroof: error")
    assert r.returncode == (2 if error else 0), r.stderr
    assert (r.stdout, r.stderr)[not error] == ""
    out = r.stderr if error else r.stdout
    assert re.fullmatch(shown_as_pattern(shown), out), \
        f"symroof {shlex.join(args)} printed:\n{out}\ndocs/cli.md shows:\n" + "\n".join(shown)


def test_doc_pattern_elides_only_what_is_marked():
    pattern = shown_as_pattern(["a", "b: ...", "...", "z"])
    assert re.fullmatch(pattern, "a\nb: 1 2\nx\ny\nz\n")
    assert re.fullmatch(pattern, "a\nb: \nz\n")
    assert not re.fullmatch(pattern, "a\nc: 1\nz\n") and not re.fullmatch(pattern, "a\nb: 1\n")
    assert not re.fullmatch(shown_as_pattern(["a"]), "a\nb\n")


def test_help_lists_every_command_with_examples(runs):
    text = runs["help"].stdout
    for command in ("chips", "models", "critical-batch", "report", "train", "serve", "solve",
                    "check", "notes", "measure"):
        assert command in text
    assert "symroof report --model llama-3.1-8b --chip h100" in text
    assert runs["version"].stdout.strip() == f"symroof {sr.__version__}"


def test_error_messages_name_the_input(runs):
    err = {n: runs[n].stderr for n in runs if n.startswith("err-")}
    assert "unknown chip 'tpu-v9'; known chips: h100" in err["err-chip"]
    assert "unknown model 'gpt-5'; known models: llama-3.1-8b" in err["err-model"]
    assert "argument --batch: must be a positive integer, got '-3'" in err["err-batch"]
    assert "config file not found: 'no/such/config.json'" in err["err-missing"]
    assert "bad.json' is not valid JSON" in err["err-json"]
    assert "invalid choice: 'frobnicate'" in err["err-command"]


@pytest.mark.parametrize("name, words", [
    ("err-heads-0", ["num_attention_heads", "got 0"]),
    ("err-hidden-str", ["hidden_size", "got '4096'"]),
    ("err-kv-0", ["num_key_value_heads", "got 0"]),
    ("err-not-utf8", ["latin1.json", "UTF-8"]),
    ("err-check-memory", ["check(tiny, batch=64, new_tokens=2048", "GiB"]),
    ("err-context", ["--new-tokens (9) must not exceed --context (8)"]),
    # sharded steps: sr.mesh's own words, after the flag and what was given
    ("err-mesh-chip", ["unknown chip 'tpu-v9'; known chips: h100"]),
    ("err-mesh-shape", ["--mesh 'tpu-v5e:4x4y4': mesh shape '4x4y4' does not parse"]),
    ("err-mesh-pod", ["--mesh 'tpu-v5e:32x8': a 32x8 slice does not fit one tpu-v5e pod "
                      "(16x16); put the extra axes across pods with --dcn AXES"]),
    ("err-mesh-colon", ["--mesh 'tpu-v5e': write CHIP:SHAPE, e.g. tpu-v5p:16x16x16"]),
    ("err-mesh-gpus", ["a mesh of 131072 GPUs is larger than the largest h100 system"]),
    ("err-mesh-prefill", ["a prefill step on a mesh is not modelled: use --phase decode"]),
    ("err-mesh-and-chip", ["report takes --chip CHIP (one chip) or --mesh CHIP:SHAPE"]),
    ("err-no-chip", ["report takes --chip CHIP (one chip) or --mesh CHIP:SHAPE"]),
    ("err-size", ["argument --context: must be a positive integer, got '1.5'", "8k = 8,192"]),
    ("err-size-suffix", ["got '4m'"]),
    ("err-width", ["--w-dtype: must be a positive number of bytes or a dtype", "int4",
                   "got 'int3'"]),
    ("err-train-seq", ["--tokens 1,000,000 is not a whole number of sequences of --seq "
                       "4096"]),
    ("err-train-strategy", ["unknown strategy part 'xp' in 'fsdp+xp'"]),
    ("err-train-axes", ["give the axes of --strategy's roles: add --strategy"]),
    ("err-serve-weights", ["unknown weights dtype 'int3'; known: fp32, bf16"]),
    ("err-override", ["--hbm-bw must be a positive number, got 'fast'"]),
    ("err-chip-file", ["chip file not found", "nochip.json"]),
    ("err-chip-source", ["unsourced.json': peaks.bf16 must be [number, \"its source\"]"]),
    ("err-solve-quantity", ["unknown quantity 't_foo' in 't_math = t_foo'; known: t_math"]),
    ("err-solve-chip", ["t_math, t_mem need a chip: add --chip"]),
    ("err-solve-given", ["'t_math = t_mem' for batch also depends on context: give "
                         "--context"]),
    ("err-solve-equation", ["write one equation 'lhs = rhs', got 't_math < t_mem'"]),
])
def test_bad_configs_and_sizes_are_named(runs, name, words):
    err = runs[name].stderr  # exit status 2, one line, no traceback: test_exit_status_and_streams
    for word in words:
        assert word in err, f"{word!r} not in {err!r}"


def test_null_kv_heads_mean_multi_head_attention(runs):
    (data,) = json.loads(runs["models-kv-null"].stdout).values()
    assert data["G"] == data["H"] == 32


def test_chips_show_figures_and_sources(runs):
    text = runs["chips-text"].stdout  # sources on request only
    assert "h100" in text and "3.35 T" in text and "sources:" not in text
    assert text.rstrip().endswith("the source of every figure: symroof chips --sources")
    text = runs["chips-sources"].stdout
    assert text.startswith(runs["chips-text"].stdout.split("\n\n")[0]) and "sources:" in text
    assert "tpu-v5e hbm_bw: How to Scale Your Model" in text
    assert runs["chips-markdown"].stdout.startswith("| chip |")
    assert "- tpu-v5e peaks.bf16: " in runs["chips-markdown"].stdout
    data = json.loads(runs["chips-json"].stdout)
    assert set(data) == set(CHIPS)
    assert data["h100"]["hbm_bw"] == 3350 * 10**9 and data["h100"]["peaks"]["bf16"] == 989e12
    assert data["tpu-v5e"]["ridge_exact"]["bf16"] == "9850/41"
    assert "datasheet" in data["h100"]["sources"]["hbm_bw"]
    assert data["v100"]["ridge_exact"] == {"fp16": "1250/9", "fp32": "157/9"}  # no bf16


def test_chips_show_networks(runs):
    text = runs["chips-text"].stdout
    rows = {line.split()[0]: line for line in text.split("\n\n")[0].splitlines()[1:]}
    assert rows["h100"].endswith("switched 8x32x4x64, W_GPU 450 G, W_node 400 G, "
                                   "hop 600 ns / 2.7 us")  # NCCL: NVLink, NET
    assert rows["gb200"].endswith("switched 72x8x16, W_GPU 900 G, W_node 3.6 T, "
                                  "hop 600 ns / 2.7 us")
    assert re.search(r" - +switched 16, W_GPU 150 G, hop 600 ns$",
                     rows["v100"])  # "-": no bf16 ridge
    assert rows["tpu-v5p"].endswith("torus 16x20x28 (host 2x2x1), hop 1 us, DCN 6.25 G")
    assert "tpu-v5e network.wrap_rule: How to Scale Your Model" in runs["chips-sources"].stdout
    assert runs["chips-markdown"].stdout.splitlines()[2].endswith(
        "| torus 16x16 (host 4x2), hop 1 us, DCN 3.12 G |")
    data = json.loads(runs["chips-json"].stdout)
    v5p, h100 = data["tpu-v5p"]["network"], data["h100"]["network"]
    assert (v5p["kind"], v5p["pod"], v5p["pod_chips"], v5p["wrap_rule"]) == \
        ("torus", [16, 20, 28], 8960, "cube")
    assert v5p["hop_latency"] == 1e-6 and v5p["dcn_bw"] == 6_250_000_000
    assert [lv["degree"] for lv in h100["levels"]] == [8, 32, 4, 64]
    assert h100["max_gpus"] == 65536 and [lv["sharp"] for lv in h100["levels"]] == [True] * 4
    assert h100["node_egress"] == 400 * 10**9 and h100["sharp"] is True
    assert h100["node_bisection"] == 8 * 450 * 10**9  # book ch. 12 Quiz 2 Q2: 3.6 TB/s
    assert v5p["slices"][:4] == [[1, 2, 2], [2, 2, 2], [2, 2, 4], [2, 4, 4]]
    assert data["tpu-v5e"]["network"]["slices"] == [[1, 1], [2, 2], [2, 4], [4, 4], [4, 8],
                                                     [8, 8], [8, 16], [16, 16]]
    assert data["v100"]["network"]["node_egress"] is None


def test_models_show_presets_and_configs(runs):
    assert "8,030,261,248" in runs["models-text"].stdout
    assert runs["models-markdown"].stdout.startswith("| model | D |")
    data = json.loads(runs["models-json"].stdout)
    assert data["meta-llama/Llama-2-7b-hf"]["params"] == 6738415616
    assert data["tiny"]["D"] == 64 and data["tiny"]["tied"] is False


def test_critical_batch(runs):
    text = runs["cb-text"].stdout
    assert "B* = 9850/41 = 240.2439" in text and "B* = (C/W) * w_bytes / 2" in text
    data = json.loads(runs["cb-json"].stdout)
    assert data["critical_batch_exact"] == "9850/41"  # int8 peak, int8 weights: 480.5 / 2
    assert (data["x_bytes"], data["w_bytes"], data["out_bytes"]) == (2, 1, 2)
    assert isinstance(data["critical_batch"], float) and data["D"] is None
    md = runs["cb-markdown"].stdout.splitlines()
    assert md[0] == ("**critical batch of X[B,D] @ W[D,F] on b200 at the fp8 peak (x_bytes=1, "
                     "w_bytes=1, out_bytes=1)**")
    assert md[2] == "- `B* = 1125/4 = 281.2500`" and md[3].startswith("- formula: `B* = (C/W)")
    exact = runs["cb-exact"].stdout
    assert "B* = 10086400/37059 = 272.1714" in exact and "2048*B/(B + 2048)" in exact
    assert str(sr.critical_batch(sr.chip("tpu-v5e"), D=4096, F=4096)) == "10086400/37059"


def test_report_formats(runs):
    text = runs["report-text"].stdout
    assert text.startswith("llama-3.1-8b decode: batch 64, context 2048 (1 new, 2047 cached")
    assert "fused attention" in text and "attention core: fused" in text
    assert "attn/core" in text and "total" in text and "(max, full overlap)" in text
    assert "memory-bound: 'attn/core'" in text
    md = runs["report-markdown"].stdout
    assert "| attention core |" in md and "naive attention" in md and "| **total** |" in md
    tex = runs["report-latex"].stdout
    assert r"\begin{tabular}" in tex and r"\toprule" in tex and r"attn/q\_proj" in tex


def test_report_warns_of_what_does_not_fit(runs):
    text, md = runs["report-warn-text"].stdout, runs["report-warn-markdown"].stdout
    warnings = json.loads(runs["report-warn-json"].stdout)["warnings"]
    assert [line for line in text.splitlines() if line.startswith("warning: ")] == \
        [f"warning: {w}" for w in warnings] and len(warnings) == 3
    hbm, context, ctx_star = warnings
    assert hbm.startswith("weights 13.5 GB + KV cache 268 TB = 268 TB, 3,356x the h100's HBM")
    assert context == "context 1,000,000 is 995,904 past llama-2-7b's maximum of 4,096 positions"
    assert ctx_star.startswith("ctx* = 25,204 (attention FLOPs = matmul FLOPs per token) is "
                               "past llama-2-7b's maximum context 4,096")
    assert all(f"> **warning:** {w}" in md for w in warnings)
    assert json.loads(runs["report-json"].stdout)["warnings"] == []  # nothing off: an empty list


def test_config_reports_name_the_model_and_flag_what_they_assume(runs):
    text = runs["report-flags-text"].stdout
    title, _, first, second, third = text.splitlines()[:5]
    assert title.startswith("flags (") and "w_bytes=0.5, act_bytes=4, kv_bytes=4" in title
    assert first == "warning: config has no model_type: read as a Llama-style decoder (llama)"
    assert second == ("warning: torch_dtype float32: weights, activations and KV cache at 4 "
                      "bytes")
    assert third.startswith("warning: quantization_config (gptq): 4-bit weights, w_bytes = 1/2")
    models = runs["models-flags"].stdout
    assert models.startswith("model ") and "\nflags " in models and "131,072" in models
    assert "note: flags: config has no model_type" in models
    assert json.loads(runs["report-hf-json"].stdout)["query"]["model_name"] == "llama-3.1-8b"


TITLE = "llama-3.1-8b decode: batch 64, context 2048 (1 new, 2047 cached per sequence), fused " \
        "attention, "


def test_report_titles_record_dtype_and_widths(runs):
    first = {n: runs[n].stdout.splitlines()[0] for n in runs if n.startswith("report-")
             and not n.endswith("json")}
    assert first["report-text"] == TITLE + "bf16 peak, w_bytes=2, act_bytes=2, kv_bytes=2"
    assert first["report-fp8-text"] == (TITLE + "fp8 peak, w_bytes=1, act_bytes=1, "
                                        "kv_bytes=1 (from --dtype)")
    assert first["report-w1-text"] == TITLE + "bf16 peak, w_bytes=1, act_bytes=2, kv_bytes=2"
    assert first["report-int8-markdown"] == (f"**{TITLE}int8 peak, w_bytes=1, act_bytes=1, "
                                             "kv_bytes=1 (from --dtype)** (conventions: "
                                             "symroof)")
    assert (r"\caption{" + TITLE + r"int8 peak, w\_bytes=1, act\_bytes=1, kv\_bytes=1 (from "
            "--dtype); conventions: symroof}") in runs["report-int8-latex"].stdout
    assert "h100, fp8: ridge 591 FLOP/B" in runs["report-fp8-text"].stdout


def test_report_dtype_sets_the_widths_unless_flags_do(runs):
    bf16, fp8, mixed = (json.loads(runs[n].stdout) for n in
                        ("report-json", "report-fp8-json", "report-int8-kv2-json"))
    widths = lambda d: [d["query"][k] for k in ("dtype", "w_bytes", "act_bytes", "kv_bytes")]  # noqa: E731
    assert widths(bf16) == ["bf16", 2, 2, 2] and widths(fp8) == ["fp8", 1, 1, 1]
    assert widths(mixed) == ["int8", 1, 1, 2]  # an explicit --kv-bytes wins over --dtype
    for key in ("weight_bytes", "kv_bytes", "act_bytes"):  # every width halves: every byte
        assert 2 * fp8["total"][key] == bf16["total"][key]
    assert mixed["total"]["kv_bytes"] == bf16["total"]["kv_bytes"]
    assert 2 * mixed["total"]["weight_bytes"] == bf16["total"]["weight_bytes"]
    assert fp8["title"].endswith("fp8 peak, w_bytes=1, act_bytes=1, kv_bytes=1 (from --dtype)")
    assert mixed["title"].endswith("w_bytes=1, act_bytes=1, kv_bytes=2 (w_bytes, act_bytes "
                                   "from --dtype)")


def test_report_json_is_stable_and_numeric(runs):
    data = json.loads(runs["report-json"].stdout)
    assert data["query"] == {"model": "llama-3.1-8b", "model_name": "llama-3.1-8b",
                             "params": 8030261248, "chip": "h100",
                             "phase": "decode", "batch": 64, "context": 2048, "new_tokens": 4,
                             "cached": 2044, "attention": "fused", "groups": False,
                             "dtype": "bf16", "w_bytes": 2, "act_bytes": 2, "kv_bytes": 2}
    rows, total = data["rows"], data["total"]
    assert list(rows)[:2] == ["embed", "attn_norm"] and "attn/core" in rows
    for key in ("flops", "useful_flops", "weight_bytes", "kv_bytes", "act_bytes"):
        assert isinstance(total[key], int) and total[key] == sum(r[key] for r in rows.values())
    assert isinstance(total["intensity"], float) and isinstance(total["intensity_exact"], str)
    assert data["lower_s"] <= data["per_op_sum_s"] and data["lower_s"] < data["upper_s"]
    assert data["bottleneck"].startswith("memory-bound")


def test_report_reads_a_hugging_face_config(runs):
    preset, hf = (json.loads(runs[n].stdout) for n in ("report-json", "report-hf-json"))
    assert hf["query"]["model"] == str(LLAMA3) and hf["query"]["params"] == 8030261248
    assert hf["rows"] == preset["rows"] and hf["total"] == preset["total"]


def test_check(runs):
    text = runs["check-text"].stdout
    assert text.startswith("tiny: batch=4, new_tokens=16, cached=0")
    assert text.rstrip().endswith("all equal: counted == symbolic for every op and quantity")
    data = json.loads(runs["check-json"].stdout)
    assert data["ok"] is True and data["mismatches"] == []
    assert data["counted"]["lm_head"]["flops"] == 2 * 2 * 3 * 64 * 256  # 2 B T D V
    md = runs["check-markdown"].stdout
    assert md.startswith("**tiny: batch=2, new_tokens=3, cached=0, last_only=False**\n\n| op |")
    assert "| `lm_head` | 196,608 |" in md and md.rstrip().endswith("All equal.")


def test_check_help_shows_the_defaults(runs):
    text = " ".join(runs["check-help"].stdout.split())  # argparse wraps lines anywhere
    for flag, default in (("--batch B", 2), ("--new-tokens T", 4), ("--cached N", 0),
                          ("--model MODEL", "tiny")):
        assert re.search(re.escape(flag) + r" [^-]*\(default: " + str(default) + r"\)", text), flag


def test_notes(runs):
    out = runs["tmp"] / "demo-notes"
    assert f"wrote {out / 'notes.tex'}: 1 section(s)" in runs["notes"].stdout
    assert r"\section{Demo section}" in (out / "notes.tex").read_text()
    if shutil.which("pdflatex"):
        assert (out / "notes.pdf").stat().st_size > 1000
        assert f"compiled {out / 'notes.pdf'}" in runs["notes"].stdout
    else:
        assert "no PDF: pdflatex not on the PATH" in runs["notes"].stdout


def test_measure_help(runs):
    if "measure-help" not in runs:
        pytest.skip("symroof.surfaces.measure is not in this tree yet")
    assert runs["measure-help"].stdout.startswith("usage: symroof measure")


@pytest.mark.skipif(shutil.which("symroof") is None, reason="symroof is not installed")
def test_installed_entry_point():
    run = lambda *a: subprocess.run(["symroof", *a], capture_output=True, text=True)  # noqa: E731
    r = run("critical-batch", "--chip", "b200", "--dtype", "fp8", "--format", "json")
    assert json.loads(r.stdout)["critical_batch_exact"] == "1125/4"  # 4.5e15 / 8e12 / 2
    r = run("report", "--model", "tiny", "--chip", "h100", "--batch", "0", "--phase", "decode",
            "--context", "4")
    assert r.returncode == 2 and r.stderr.startswith("symroof: error: argument --batch")


# -- in-process: the same main(), for the rules that need no new process --------------
@pytest.mark.parametrize("argv, message", [
    (f"{REPORT} --phase decode --new-tokens 2049",
     "--new-tokens (2049) must not exceed --context (2048)"),
    (f"{REPORT} --phase prefill --new-tokens 4", "--new-tokens applies to --phase"),
    (f"{REPORT} --phase decode --dtype fp4", "no peak for dtype 'fp4'"),
    ("check --model llama-3.1-8b", "check(llama-3.1-8b, batch=2, new_tokens=4, cached=0) "
     "would need about"),
    ("critical-batch --chip h100 --d 64", "--d and --f go together"),
    (f"models {shlex.quote(str(ROOT))}", "config file not found"),
])
def test_errors_in_process(capsys, argv, message):
    assert main(shlex.split(argv)) == 2
    err = capsys.readouterr().err
    assert err.startswith("symroof: error: ") and message in err


def test_argument_types_reject_bad_numbers(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["critical-batch", "--chip", "h100", "--w-bytes", "0"])
    assert stop.value.code == 2
    assert "--w-bytes: must be a positive number of bytes or a dtype (fp32, bf16, fp16, fp8, " \
        "int8, int4, fp4), got '0'" in capsys.readouterr().err


def test_critical_batch_without_a_root(capsys):
    assert main(["critical-batch", "--chip", "tpu-v5e", "--d", "64", "--f", "64"]) == 0
    assert "none: the matmul stays memory-bound at every batch" in capsys.readouterr().out
    assert main(["critical-batch", "--chip", "tpu-v5e", "--d", "64", "--f", "64",
                 "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["critical_batch"] is None and data["critical_batch_exact"] == "oo"


def test_model_folder_and_prefill_semantics(tmp_path, capsys):
    (tmp_path / "config.json").write_text(LLAMA2.read_text())
    assert main(["report", "--model", str(tmp_path), "--chip", "a100", "--phase", "prefill",
                 "--batch", "2", "--context", "16", "--format", "json"]) == 0
    q = json.loads(capsys.readouterr().out)["query"]
    assert (q["params"], q["new_tokens"], q["cached"]) == (6738415616, 16, 0)


def test_measure_missing_is_a_clear_error(monkeypatch, capsys):
    real = importlib.util.find_spec
    hidden = "symroof.surfaces.measure"
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == hidden else real(name, *a))
    assert main(["measure"]) == 2
    assert "needs symroof.surfaces.measure" in capsys.readouterr().err


def test_no_command_prints_help(capsys):
    assert main([]) == 0
    assert "usage: symroof" in capsys.readouterr().out


def test_hf_configs_give_the_public_parameter_counts():
    assert from_hf_config(LLAMA3).params == 8_030_261_248
    assert from_hf_config(LLAMA2).params == 6_738_415_616
    assert sr.model(str(LLAMA3)).G == 8 and sr.model(str(LLAMA2)).G == 32  # GQA vs MHA
    cfg = json.loads(LLAMA3.read_text())
    assert cfg["rope_scaling"]["rope_type"] == "llama3" and cfg["torch_dtype"] == "bfloat16"


# -- sizes, widths and chips ------------------------------------------------------------
@pytest.mark.parametrize("text, value", [
    ("4096", 4096), ("8k", 8192), ("128k", 131_072), ("128K", 131_072), ("1.5k", 1536),
    ("4M", 4 * 2**20), ("1G", 2**30), ("1e6", 10**6), ("1_000", 1000), ("8,192", 8192),
])
def test_sizes_take_suffixes_and_exponents(text, value):
    assert size(text) == value


@pytest.mark.parametrize("text", ["0", "-3", "1.5", "4m", "1e-3", "abc", "", "8 k"])
def test_sizes_refuse_what_is_not_a_count(text):
    with pytest.raises(ValueError, match="must be a positive integer"):
        size(text)


@pytest.mark.parametrize("text, value", [  # a storage dtype is its width; int4/fp4 half a byte
    ("int4", sp.Rational(1, 2)), ("FP4", sp.Rational(1, 2)), ("fp8", 1), ("int8", 1),
    ("bf16", 2), ("fp32", 4), ("0.5", sp.Rational(1, 2)), ("2", 2),
])
def test_widths_are_numbers_or_dtypes(text, value):
    assert width(text) == value


def test_report_takes_sizes_and_dtype_widths(runs):
    q = json.loads(runs["report-sizes-json"].stdout)["query"]
    assert (q["batch"], q["context"], q["new_tokens"]) == (1024, 131_072, 1)
    assert (q["w_bytes"], q["act_bytes"], q["kv_bytes"]) == (0.5, 2, 1)


def test_chip_files_and_overrides_record_their_sources(runs):
    text = runs["chips-file"].stdout
    assert "example-chip  bf16 2 P, fp8 4 P" in text and "h100-hbm4" in text
    assert "example-chip hbm_bw: hypothetical: 6.7 TB/s" in text
    assert "h100-hbm4 hbm_bw: what-if: HBM4" in text
    assert "h100-hbm4 network.levels: How to Scale Your Model" in text  # the base's network
    data = json.loads(runs["cb-file-json"].stdout)
    assert (data["chip"], data["ridge_exact"]) == ("example-chip", "20000/67")  # 2e15 / 6.7e12
    data = json.loads(runs["cb-override-json"].stdout)
    assert data["chip"] == "h100 (--peak 2e15, --hbm-bw 6.7e12)"
    assert data["ridge_exact"] == "20000/67" and data["critical_batch_exact"] == "20000/67"
    chip = load_chip("h100", {"hbm_bw": "6.7e12", "peak": None}, "bf16")
    assert chip.hbm_bw == 6_700_000_000_000 and chip.sources["hbm_bw"] == OVERRIDE_SOURCE
    assert chip.sources["hbm_bytes"] == sr.chip("h100").sources["hbm_bytes"]
    report = json.loads(runs["report-override-json"].stdout)
    base = json.loads(runs["report-json"].stdout)
    assert report["rows"]["mlp/down"]["weight_bytes"] == base["rows"]["mlp/down"]["weight_bytes"]
    assert report["rows"]["mlp/down"]["t_mem_s"] < base["rows"]["mlp/down"]["t_mem_s"]


def test_doc_chip_file_is_the_one_the_docs_show():
    shown = re.search(r"```json\n(.*?)```", (ROOT / "docs" / "cli.md").read_text(), re.S)[1]
    assert json.loads(shown) == json.loads((ROOT / "docs" / "example-chip.json").read_text())


def test_a_context_past_the_maximum_warns(runs):
    text = runs["report-window-text"].stdout
    assert ("warning: context 65,536 is 32,768 past mistral-7b's maximum of 32,768 positions"
            in text.splitlines())


# -- on a mesh ---------------------------------------------------------------------------
def _plan(batch=32, context=8192, shape="4x4", **kw):
    return sr.serve("llama-3.1-70b", sr.mesh("tpu-v5e", shape), batch=batch, context=context,
                    **kw)


def test_report_mesh_rows_are_serves(runs):
    data, plan = json.loads(runs["report-mesh-json"].stdout), _plan()
    assert list(data["rows"]) == list(plan.rows)
    for key in ("mlp/gate", "attn/core", "lm_head"):
        row, cost = data["rows"][key], plan.rows[key]
        assert (row["flops"], row["weight_bytes"], row["kv_bytes"]) == \
            (int(cost.flops), int(cost.weight_bytes), int(cost.kv_bytes))
    comm = data["rows"]["comm/mlp_allreduce"]
    assert comm["t_lower_s"] == float(plan.rows["comm/mlp_allreduce"].net_time)
    assert comm["intensity"] is None  # no bytes, no FLOPs: null, not NaN
    assert data["lower_s"] == pytest.approx(float(plan.time.lower))
    assert data["upper_s"] == pytest.approx(float(plan.time.upper))
    assert (data["fits"], data["max_batch"], data["query"]["mesh"]) == (True, 42, "4x4")
    text = runs["report-mesh-text"].stdout
    assert text.startswith("llama-3.1-70b decode, per chip of tpu-v5e 4x4 (16 chips): batch 32")
    assert "memory per chip 14.2 GB of 16 GB" in text and "largest batch 42" in text
    md = runs["report-mesh-groups-markdown"].stdout
    assert "| collectives | 0 | 0 | 0 | 0 |" in md and "| MLP |" in md
    assert r"\begin{tabular}" in runs["report-mesh-latex"].stdout


def test_report_mesh_warns_when_the_slice_is_too_small(runs):
    text = runs["report-mesh-nofit"].stdout
    warning = next(line for line in text.splitlines() if line.startswith("warning: "))
    assert "does not fit: memory per chip 56.8 GB of 16 GB" in warning
    assert "it needs at least 15 chips" in warning and "is 4x4" in warning


def test_train_chooses_what_the_search_chooses(runs):
    data = json.loads(runs["train-json"].stdout)
    search = sr.strategy_search("llama-3.1-70b", sr.mesh("tpu-v5p", "16x16x16"),
                                batch_tokens=4 * 2**20, seq=4096)
    best = search.choice(0)
    chosen = data["chosen"]
    assert chosen["strategy"] == best["candidate"].strategy == "zero3"
    assert chosen["lower_s"] == pytest.approx(best["lower"])
    assert chosen["upper_s"] == pytest.approx(best["upper"])
    assert chosen["memory_bytes"] == pytest.approx(best["memory"])
    rows = data["strategies"]
    assert rows[0] == chosen and all(r["fits"] for r in rows)
    assert [r["lower_s"] for r in rows[1:]] == sorted(r["lower_s"] for r in rows[1:])
    excluded = {e["strategy"]: e["why"] for e in data["excluded"]}
    assert set(excluded) == {"dp", "zero1", "zero2", "tp", "pp"}
    assert excluded["tp"] == "every split that fits has TP wider than the 64 query heads"
    assert excluded["dp"].startswith("does not fit: at least 848 GB per chip")
    (fsdp,) = chosen["conditions"]
    # the plan's own condition (one answer on both surfaces): solved from one whole layer,
    # a little under the book's alpha / 3 = 850 of its MLP block (ch. 5)
    mine = sr.train_plan("llama-3.1-70b", sr.mesh("tpu-v5p", "16x16x16"), "zero3",
                         batch_tokens=4 * 2**20, seq=4096).conditions["fsdp"]
    assert (fsdp["lhs"], fsdp["relation"], fsdp["threshold_exact"], fsdp["value"],
            fsdp["holds"]) == ("B/N", ">", str(mine.threshold), 1024, True)
    assert 0.99 * 850 < mine.threshold < 850
    assert data["answer"].startswith("chosen: zero3 (fsdp: X,Y,Z): the fastest step")
    text = runs["train-text"].stdout.splitlines()
    assert text[1].split() == ["strategy", "split", "step", "bound", "memory/chip",
                               "conditions"]
    lo, hi = (float(f"{v:.3g}") for v in (chosen["lower_s"], chosen["upper_s"]))  # 3 digits
    assert text[2].startswith(f"zero3        fsdp: X,Y,Z            {lo:g} s .. {hi:g} s  compute")
    assert runs["train-markdown"].stdout.startswith("**llama-3.1-70b on tpu-v5p 16x16x16")
    assert "| strategy | split | step |" in runs["train-markdown"].stdout


def test_train_with_axes_is_train_plan(runs):
    (row,) = json.loads(runs["train-axes-json"].stdout)["strategies"]
    plan = sr.train_plan("llama-3.1-70b", sr.mesh("tpu-v5p", "16x16x16"), "fsdp+tp",
                         batch_tokens=4 * 2**20, seq=4096, fsdp="XY", tp="Z")
    assert row["axes"] == {"fsdp": ["X", "Y"], "tp": ["Z"]} and row["lower_s"] == float(plan.lower)
    holds = {c["name"]: c["holds"] for c in row["conditions"]}
    assert holds == {n: c.holds for n, c in zip(holds, plan.conditions.values())}
    assert holds["tp"] is False  # 16-way TP on one axis of v5p: comms-bound (book ch. 5)


def test_train_that_fits_nowhere_says_what_it_needs(runs):
    data = json.loads(runs["train-nofit-json"].stdout)
    need = sr.min_training_slice("llama-3.1-70b", "tpu-v5p", batch_tokens=4 * 2**20)
    assert data["chosen"] is None and data["strategies"] == []
    head, sep, rest = data["answer"].partition("; on these 64 chips, a batch of ")
    assert head == (
        f"llama-3.1-70b does not fit on tpu-v5p 4x4x4 with any strategy: needs at least "
        f"{need.chips} tpu-v5p chips (7.56 TB of weights, optimizer state and activations, "
        f"96 GB each): the smallest slice with them is {need.slice} ({need.slice_chips} chips)")
    # the smaller batch it offers has a plan on these chips, one more sequence has none
    offered = int(re.search(r"--tokens (\d+)", rest)[1])
    res = sr.strategy_search("llama-3.1-70b", sr.mesh("tpu-v5p", "4x4x4"),
                             batch_tokens=[offered, offered + 4096])
    assert sep and "(the largest that does)" in rest and res.best[0] >= 0 and res.best[1] < 0
    assert "4x4x8 (128 chips); on these 64 chips, a batch of " in \
        runs["train-nofit-text"].stdout
    small = json.loads(runs["train-small-json"].stdout)  # a tie: the search's choice wins
    assert small["chosen"]["strategy"] == "zero3" and "tied with" in small["answer"]


def test_serve_is_sr_serve(runs):
    data, plan = json.loads(runs["serve-json"].stdout), _plan()
    assert data["lower_s"] == float(plan.time.lower) and data["bound"] == "memory"
    assert data["tokens_per_s_per_chip"] == float(plan.tokens_per_s_per_chip)
    assert data["max_batch"] == plan.max_batch == 42
    assert set(data["collectives"]) == {"attn_allreduce", "mlp_allreduce", "attn_alltoall"}
    assert data["smallest_slice"] == {
        w: sr.smallest_slice("llama-3.1-70b", "tpu-v5e", weights=w, batch=32, context=8192)
        for w in ("bf16", "int8", "int4")}
    int8 = json.loads(runs["serve-int8-json"].stdout)
    assert (int8["query"]["weights"], int8["query"]["kv"]) == ("int8", "fp8")
    assert 2 * int8["memory_per_chip"]["weights"] == data["memory_per_chip"]["weights"]
    assert int8["smallest_slice"]["int8"] == "2x4"  # int8 weights, fp8 KV: half the bytes
    text = runs["serve-text"].stdout
    # the queries' AllToAlls over Y alone (the chips sharing a KV-head shard; G = 8 over X's 4)
    # 109 tokens/s while each row's activation bytes were divided by every chip its
    # operands split over (a replicated input read whole is each chip's to read)
    assert "107 tokens/s per chip" in text and "attn_alltoall: 3.93 MB sent per chip" in text
    assert runs["serve-markdown"].stdout.startswith("**llama-3.1-70b decode on tpu-v5e 4x4")
    # 1-D model parallelism over 16 nodes: the network takes 14.2 ms, as long as the memory
    # (it bound while each chip's activation bytes were divided by all 128 chips; now each
    # reads its replicated inputs whole, and with the KV cache the memory binds, 14.4 ms)
    gpus = runs["serve-h100"].stdout
    assert "h100 16x8 (128 chips)" in gpus and "t_net 14.2 ms" in gpus
    assert "t_mem 14.4 ms" in gpus and "(memory-bound)" in gpus
    assert json.loads(runs["serve-file-chip"].stdout)["query"]["chip"] == "example-chip"


def test_serve_that_does_not_fit_says_what_it_needs(runs):
    data = json.loads(runs["serve-nofit-json"].stdout)
    assert data["fits"] is False and "t_math_s" not in data
    assert (data["min_chips"], data["min_chips_weights"]) == (15, 9)
    assert data["lines"][1].startswith("it needs at least 15 chips")


# -- solve -------------------------------------------------------------------------------
def test_solve_never_gives_the_boundary_that_exists(runs):
    data = json.loads(runs["solve-never-json"].stdout)
    assert data["root"] is None and data["never"].startswith("t_mem > t_math at every batch")
    (b,) = data["boundaries"]
    assert (b["variable"], b["value_exact"], b["side"]) == ("context", "959038/2439", "below")
    m, h100 = sr.model("llama-3.1-8b"), sr.chip("h100")
    for context, root in ((393, True), (394, False)):  # the boundary, checked on each side
        s = solve_step("t_math = t_mem", "batch", m, chip=h100, context=context, view="whole")
        assert (s.root is not None) == root
    text = runs["solve-never-text"].stdout
    assert "t_math = 4188672*B/241455078125  (~ 17.35 us*B)" in text  # 4188672 / 241455078125 s
    assert "batch: never, because t_mem > t_math at every batch" in text
    tex = runs["solve-never-latex"].stdout
    assert tex.startswith("\\begin{aligned}\nt_\\text{math} &= t_\\text{mem} \\\\\n")
    assert r"S &= \frac{959038}{2439} \approx 393.2" in tex
    # the reason in maths and words: no quantity name set as escaped text
    assert r"&\text{no root in } B: t_\text{mem} > t_\text{math} \text{ at every batch" in tex
    assert r"\text{t\_" not in tex and r"\ensuremath" not in tex


def test_solve_roots_are_the_library_crossovers(runs):
    data = json.loads(runs["solve-kv-json"].stdout)
    fp8 = sr.model("llama-3.1-70b").replace(kv_bytes=1)
    assert data["root_exact"] == str(sr.kv_crossover(fp8, 32)) == "132564/5"
    assert data["query"]["kv_bytes"] == 1 and data["symbol"] == "S"
    assert "context = 132564/5 ~ 26512.8: kv_bytes > weight_bytes for context > 26512.8" in \
        runs["solve-kv-text"].stdout
    assert "- `weight_bytes = 139003428864`" in runs["solve-kv-markdown"].stdout
    prefill = json.loads(runs["solve-prefill-json"].stdout)
    whole = sr.step_time(sr.model("llama-3.1-8b"), "h100", 1, sr_S, 0).whole
    assert prefill["root_exact"] == str(sr.crossover(whole.t_math, whole.t_mem, sr_S))


@pytest.mark.parametrize("equation, var, kw, root", [
    ("kv_bytes = weight_bytes", "context", {"batch": 1}, 114512),  # sr.kv_crossover
    ("intensity = ridge", "batch", {"chip": "h100", "context": 100}, "141565460/357569"),
    # memory-bound: B = (W t - weight bytes) / (S KV bytes per token), W = 3.35e12
    ("t_lower = 1/100", "batch", {"chip": "h100", "context": 4096},
     sp.Rational(3350 * 10**9 // 100 - 15009316864, 4096 * 131072)),
])
def test_solve_examples(equation, var, kw, root):
    kw = {k: sr.chip(v) if k == "chip" else v for k, v in kw.items()}
    m = sr.model("llama-3.1-8b")  # lecture 1's terms, the hand formulas above
    assert str(solve_step(equation, var, m, view="whole", **kw).root) == str(root)
