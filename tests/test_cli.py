"""The ``symroof`` command, run as a user runs it: ``python -m symroof ...`` in a subprocess
(and the installed ``symroof`` entry point when it is on the PATH).

One fixture runs every invocation, several at a time (each one pays SymPy's import), and
each test reads its own result; docs/cli.md's examples run too, and must print what they show.
Hugging Face configs are read from tests/data, real public config.json files, and from broken
copies of one written by the fixture.
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
from symroof.surfaces.cli import main

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
LLAMA3, LLAMA2 = DATA / "llama-3.1-8b.config.json", DATA / "llama-2-7b.config.json"
REPORT = "report --model llama-3.1-8b --chip h100 --batch 64 --context 2048"
SCRIPT = '"""Demo section.\n\nOne paragraph."""\nfrom symroof.derivation import Derivation\n' \
         'd = Derivation("Two", source="test")\nd.step("two", "x", 2)\nNOTES = [d]\n'
ERROR = "report --model tiny --chip h100 --phase decode --batch 1 --context 8"
#: broken copies of LLAMA3 the fixture writes: file name -> the fields changed
CONFIGS = {"heads-0.json": {"num_attention_heads": 0}, "hidden-str.json": {"hidden_size": "4096"},
           "kv-null.json": {"num_key_value_heads": None}, "kv-0.json": {"num_key_value_heads": 0}}

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
    "err-window": "report --model mistral-7b --chip h100 --phase decode --batch 1 --context 32768",
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
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cli")
    (tmp / "bad.json").write_text('{"hidden_size": 4096,\n')
    llama3 = json.loads(LLAMA3.read_text())
    for name, changes in CONFIGS.items():
        (tmp / name).write_text(json.dumps({**llama3, **changes}))
    (tmp / "latin1.json").write_bytes(  # "café" in Latin-1: not UTF-8
        json.dumps({**llama3, "_name_or_path": "café"}, ensure_ascii=False).encode("latin-1"))
    (tmp / "scripts").mkdir()
    (tmp / "scripts" / "01_demo.py").write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get(
        "PYTHONPATH", "")]), "MPLBACKEND": "Agg"}
    todo = {name: shlex.split(args.format(tmp=tmp)) for name, args in CASES.items()}
    todo |= {name: args for name, (args, _) in DOCS.items()}
    if importlib.util.find_spec("symroof.surfaces.measure") is None:
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
    for command in ("chips", "models", "critical-batch", "report", "check", "notes", "measure"):
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
    ("err-window", ["context 32768", "sliding window of 4096"]),
])
def test_bad_configs_and_sizes_are_named(runs, name, words):
    err = runs[name].stderr  # exit status 2, one line, no traceback: test_exit_status_and_streams
    for word in words:
        assert word in err, f"{word!r} not in {err!r}"


def test_null_kv_heads_mean_multi_head_attention(runs):
    (data,) = json.loads(runs["models-kv-null"].stdout).values()
    assert data["G"] == data["H"] == 32


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
    assert data["v100"]["ridge_exact"] == {"fp16": "1250/9", "fp32": "157/9"}  # no bf16


def test_chips_show_networks(runs):
    text = runs["chips-text"].stdout
    rows = {line.split()[0]: line for line in text.split("\n\n")[0].splitlines()[1:]}
    assert rows["h100"].endswith("switched 8x32x4, W_GPU 450 G, W_node 400 G")
    assert rows["gb200"].endswith("switched 72x8, W_GPU 900 G, W_node 3.6 T")
    assert re.search(r" - +switched 16, W_GPU 150 G$", rows["v100"])  # "-": no bf16 ridge
    assert rows["tpu-v5p"].endswith("torus 16x20x28 (host 2x2x1)")
    assert "tpu-v5e network.wrap_rule: How to Scale Your Model" in text
    assert runs["chips-markdown"].stdout.splitlines()[2].endswith("| torus 16x16 (host 4x2) |")
    data = json.loads(runs["chips-json"].stdout)
    v5p, h100 = data["tpu-v5p"]["network"], data["h100"]["network"]
    assert (v5p["kind"], v5p["pod"], v5p["pod_chips"], v5p["wrap_rule"]) == \
        ("torus", [16, 20, 28], 8960, "cube")
    assert v5p["hop_latency"] == 1e-6 and v5p["dcn_bw"] == 6_250_000_000
    assert [lv["degree"] for lv in h100["levels"]] == [8, 32, 4] and h100["max_gpus"] == 1024
    assert h100["node_egress"] == 400 * 10**9 and h100["sharp"] is True
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
                                             "kv_bytes=1 (from --dtype)**")
    assert (r"\caption{" + TITLE + r"int8 peak, w\_bytes=1, act\_bytes=1, kv\_bytes=1 (from "
            "--dtype)}") in runs["report-int8-latex"].stdout
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
    assert data["query"] == {"model": "llama-3.1-8b", "params": 8030261248, "chip": "h100",
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
    hidden = "symroof.surfaces.measure"
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == hidden else real(name, *a))
    assert main(["measure"]) == 2
    assert "needs symroof.surfaces.measure" in capsys.readouterr().err


def test_no_command_prints_help(capsys):
    assert main([]) == 0
    assert "usage: symroof" in capsys.readouterr().out


def test_hf_configs_give_the_public_parameter_counts():
    assert sr.from_hf_config(LLAMA3).params == 8_030_261_248
    assert sr.from_hf_config(LLAMA2).params == 6_738_415_616
    assert sr.model(str(LLAMA3)).G == 8 and sr.model(str(LLAMA2)).G == 32  # GQA vs MHA
    cfg = json.loads(LLAMA3.read_text())
    assert cfg["rope_scaling"]["rope_type"] == "llama3" and cfg["torch_dtype"] == "bfloat16"
