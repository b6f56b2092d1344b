"""The ``symroof`` command, run as a user runs it: ``python -m symroof ...`` in a subprocess
(and the installed ``symroof`` entry point when it is on the PATH).

One fixture runs every invocation, several at a time (each one pays SymPy's import), and
each test reads its own result; docs/cli.md's examples run too. Hugging Face configs are read from
tests/data, real public config.json files.
"""

import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import symroof as sr
from symroof.cli import main

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
LLAMA3, LLAMA2 = DATA / "llama-3.1-8b.config.json", DATA / "llama-2-7b.config.json"
REPORT = "report --model llama-3.1-8b --chip h100 --batch 64 --context 2048"
SCRIPT = '"""Demo section.\n\nOne paragraph."""\nfrom symroof.derivation import Derivation\n' \
         'd = Derivation("Two", source="test")\nd.step("two", "x", 2)\nNOTES = [d]\n'
ERROR = "report --model tiny --chip h100 --phase decode --batch 1 --context 8"

#: name -> arguments; the "err-" ones must exit with status 2, the others with 0
CASES = {
    "help": "--help",
    "version": "--version",
    "chips-text": "chips",
    "chips-markdown": "chips tpu-v5e --format markdown",
    "chips-json": "chips --format json",
    "models-text": "models",
    "models-markdown": "models --format markdown",
    "models-json": f"models tiny {shlex.quote(str(LLAMA2))} --format json",
    "cb-text": "critical-batch --chip tpu-v5e",
    "cb-json": "critical-batch --chip tpu-v5e --dtype int8 --w-bytes 1 --x-bytes 2 --format json",
    "cb-exact": "critical-batch --chip tpu-v5e --d 4096 --f 4096",
    "report-text": f"{REPORT} --phase decode",
    "report-markdown": f"{REPORT} --phase prefill --groups --attention naive --format markdown",
    "report-latex": f"{REPORT} --phase decode --format latex",
    "report-json": f"{REPORT} --phase decode --new-tokens 4 --format json",
    "report-hf-json": REPORT.replace("llama-3.1-8b", shlex.quote(str(LLAMA3)))
    + " --phase decode --new-tokens 4 --format json",
    "check-text": "check --model tiny --batch 4 --new-tokens 16 --cached 0",
    "check-json": "check --model tiny --batch 2 --new-tokens 3 --cached 5 --format json",
    "notes": "notes --out {tmp}/demo-notes --scripts {tmp}/scripts",
    "measure-help": "measure --help",
    "err-chip": ERROR.replace("h100", "h800"),
    "err-model": ERROR.replace("tiny", "gpt-5"),
    "err-batch": ERROR.replace("--batch 1", "--batch -3"),
    "err-missing": ERROR.replace("tiny", "no/such/config.json"),
    "err-json": "models {tmp}/bad.json",
    "err-command": "frobnicate",
}


def _documented() -> dict[str, tuple[list[str], str]]:
    """docs/cli.md's console blocks: ``$ symroof ARGS`` and the first line it shows."""
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```console\n(.*?)```", text, re.S)
    return {f"doc-{i}": (shlex.split(b.splitlines()[0].removeprefix("$ symroof ")),
                         (b.splitlines() + [""])[1]) for i, b in enumerate(blocks)}


DOCS = _documented()


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cli")
    (tmp / "bad.json").write_text('{"hidden_size": 4096,\n')
    (tmp / "scripts").mkdir()
    (tmp / "scripts" / "01_demo.py").write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get(
        "PYTHONPATH", "")]), "MPLBACKEND": "Agg"}
    todo = {name: shlex.split(args.format(tmp=tmp)) for name, args in CASES.items()}
    todo |= {name: args for name, (args, _) in DOCS.items()}
    if importlib.util.find_spec("symroof.measure") is None:
        todo.pop("measure-help")

    def run(args: list[str]) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "symroof", *args], cwd=tmp, env=env,
                              capture_output=True, text=True, timeout=300)

    with ThreadPoolExecutor(max_workers=min(8, 2 * (os.cpu_count() or 1))) as pool:
        out = dict(zip(todo, pool.map(run, todo.values())))
    out["tmp"] = tmp
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_exit_status_and_streams(runs, name):
    if name not in runs:
        pytest.skip("symroof.measure is not in this tree yet")
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
    assert r.returncode == (2 if shown.startswith("symroof: error") else 0), r.stderr
    first = (r.stdout or r.stderr).splitlines()[0]
    assert first.startswith(shown[:-3]) if shown.endswith("...") else first == shown


def test_help_lists_every_command_with_examples(runs):
    text = runs["help"].stdout
    for command in ("chips", "models", "critical-batch", "report", "check", "notes", "measure"):
        assert command in text
    assert "symroof report --model llama-3.1-8b --chip h100" in text
    assert runs["version"].stdout.strip() == f"symroof {sr.__version__}"


def test_error_messages_name_the_input(runs):
    err = {n: runs[n].stderr for n in runs if n.startswith("err-")}
    assert "unknown chip 'h800'; known chips: h100" in err["err-chip"]
    assert "unknown model 'gpt-5'; known models: llama-3.1-8b" in err["err-model"]
    assert "argument --batch: must be a positive integer, got '-3'" in err["err-batch"]
    assert "config file not found: 'no/such/config.json'" in err["err-missing"]
    assert "bad.json' is not valid JSON" in err["err-json"]
    assert "invalid choice: 'frobnicate'" in err["err-command"]


def test_chips_show_figures_and_sources(runs):
    text = runs["chips-text"].stdout
    assert "h100" in text and "3.35 T" in text and "sources:" in text
    assert "tpu-v5e hbm_bw: How to Scale Your Model" in text
    assert runs["chips-markdown"].stdout.startswith("| chip |")
    assert "- tpu-v5e peaks.bf16: " in runs["chips-markdown"].stdout
    data = json.loads(runs["chips-json"].stdout)
    assert set(data) == set(sr.CHIPS)
    assert data["h100"]["hbm_bw"] == 3350 * 10**9 and data["h100"]["peaks"]["bf16"] == 989e12
    assert data["tpu-v5e"]["ridge_exact"]["bf16"] == "9850/41"
    assert "datasheet" in data["h100"]["sources"]["hbm_bw"]


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


def test_report_json_is_stable_and_numeric(runs):
    data = json.loads(runs["report-json"].stdout)
    assert data["query"] == {"model": "llama-3.1-8b", "params": 8030261248, "chip": "h100",
                             "phase": "decode", "batch": 64, "context": 2048, "new_tokens": 4,
                             "cached": 2044, "attention": "fused", "groups": False}
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
        pytest.skip("symroof.measure is not in this tree yet")
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
    ("check --model llama-3.1-8b", "8.03 G parameters (limit 500 M)"),
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
    assert "--w-bytes: must be a positive number of bytes, got '0'" in capsys.readouterr().err


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
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "symroof.measure" else real(name, *a))
    assert main(["measure"]) == 2
    assert "needs symroof.measure" in capsys.readouterr().err


def test_no_command_prints_help(capsys):
    assert main([]) == 0
    assert "usage: symroof" in capsys.readouterr().out


def test_hf_configs_give_the_public_parameter_counts():
    assert sr.from_hf_config(LLAMA3).params == 8_030_261_248
    assert sr.from_hf_config(LLAMA2).params == 6_738_415_616
    assert sr.model(str(LLAMA3)).G == 8 and sr.model(str(LLAMA2)).G == 32  # GQA vs MHA
    cfg = json.loads(LLAMA3.read_text())
    assert cfg["rope_scaling"]["rope_type"] == "llama3" and cfg["torch_dtype"] == "bfloat16"
