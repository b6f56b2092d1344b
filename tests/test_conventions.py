"""Conventions as data: the record, its profiles, the CLI flags, and LLM-Viewer reproduced.

tests/data/llm_viewer_472f71f.json.gz holds LLM-Viewer's own output (hahnyuan/LLM-Viewer at
commit 472f71f1a1807e80b573252e9185fd5e8d795e95, ``ModelAnalyzer(...).analyze(seqlen,
batchsize, w_bit, a_bit, kv_bit, use_flashattention)`` with its configs/Llama.py and
hardware presets; transformers 4.57.6): 168 runs, 2 models x 4 GPU presets x 3 shapes x 7
bit / attention variants, each a prefill and a decode step, per-op OPs, bytes by kind and
times of one transformer block (the lm_head row: the whole model). The file keeps those
fields of the runs and the header that says how they were made.
"""

from __future__ import annotations

import gzip
import json
import math
import re
from fractions import Fraction
from pathlib import Path

import pytest

import symroof as sr
from symroof.conventions import FIELDS, PROFILES, Conventions, profile, using
from symroof.surfaces.cli import build_parser, main

DATA = Path(__file__).parent / "data" / "llm_viewer_472f71f.json.gz"
#: LLM-Viewer's row -> symroof's row of the same op
NAMES = {"q_proj": "attn/q_proj", "k_proj": "attn/k_proj", "v_proj": "attn/v_proj",
         "out_proj": "attn/o_proj", "gate_proj": "mlp/gate", "up_proj": "mlp/up",
         "down_proj": "mlp/down", "qk_matmul": "attn/scores", "sv_matmul": "attn/av",
         "softmax": "attn/softmax", "fused_attention": "attn/core", "attn_norm": "attn_norm",
         "mlp_norm": "mlp_norm", "attn_add": "attn/residual", "mlp_add": "mlp/residual",
         "mlp_act": "mlp/swiglu", "lm_head": "lm_head"}
KINDS = ("load_weight", "load_act", "store_act", "load_kv_cache", "store_kv_cache")
#: LLM-Viewer's kind -> the table's number of it (OpValues / JSON field)
AS_SYMROOF = {"load_weight": "weight_bytes", "load_act": "act_load_bytes",
              "store_act": "act_store_bytes", "load_kv_cache": "kv_load_bytes",
              "store_kv_cache": "kv_store_bytes"}


@pytest.fixture(scope="module")
def peer(tmp_path_factory):
    data = json.loads(gzip.decompress(DATA.read_bytes()))
    folder = tmp_path_factory.mktemp("llm_viewer_configs")
    configs = {}
    for name, config in data["model_configs"].items():
        path = folder / f"{name}.json"
        path.write_text(json.dumps(config))
        configs[name] = path
    return data, configs


def _step(run: dict, phase: str) -> dict:
    """The run's step in symroof's words: prefill is T = S = seqlen; decode one new token
    at context seqlen (LLM-Viewer's decode reads seqlen cached positions)."""
    S = run["seqlen"]
    T = S if phase == "prefill" else 1
    # LLM-Viewer's get_hardware_info: the INT8 peak when w, a and kv bits are all <= 8
    dtype = "int8" if max(run["w_bit"], run["a_bit"], run["kv_bit"]) <= 8 else "fp16"
    return {"batch": run["batchsize"], "new_tokens": T, "cached": S - T, "dtype": dtype,
            "attention": "fused" if run["use_flashattention"] else "naive"}


def _expected(row: dict, layers: int) -> dict:
    """LLM-Viewer's row in symroof's words: its OPs and its five kinds of bytes, each."""
    return {"flops": Fraction(row["OPs"]) * layers,
            **{AS_SYMROOF[kind]: Fraction(row[kind]) * layers for kind in KINDS}}


def _got(v) -> dict:
    """A table row's (OpValues or JSON row) OPs and bytes by kind, as LLM-Viewer splits them."""
    get = v.get if isinstance(v, dict) else lambda k: getattr(v, k)
    return {k: Fraction(get(k)) for k in ("flops", *AS_SYMROOF.values())}


def test_the_peers_file_says_how_it_was_made(peer):
    data, _ = peer
    assert data["tool"] == "hahnyuan/LLM-Viewer"
    assert data["commit"] == "472f71f1a1807e80b573252e9185fd5e8d795e95"
    assert len(data["runs"]) == 168
    assert {(r["model"], r["hardware"]) for r in data["runs"]} == {
        (m, h) for m in data["model_configs"] for h in data["hardware_presets"]}


def test_llm_viewer_presets_are_chips_with_its_figures(peer):
    data, _ = peer
    for name, figures in data["hardware_presets"].items():
        c = sr.chip(f"llm-viewer/{name}")
        assert c.name == "llm-viewer/" + name.lower().replace("_", "-")
        assert c.hbm_bw == Fraction(figures["bandwidth"])
        assert c.peak("fp16") == Fraction(figures["FP16"])
        assert c.peak("int8") == Fraction(figures["INT8"])
        assert "LLM-Viewer hardwares/hardware_params.py" in c.sources["peaks.fp16"]
    assert sr.chip("h100").hbm_bw == 3_350_000_000_000  # the datasheet's record is untouched


def test_llm_viewer_every_run_every_row_reproduced(peer):
    data, configs = peer
    models = {name: sr.model(str(path)) for name, path in configs.items()}
    checked = 0
    for run in data["runs"]:
        m = models[run["model"]].replace(w_bytes=Fraction(run["w_bit"], 8),
                                         act_bytes=Fraction(run["a_bit"], 8),
                                         kv_bytes=Fraction(run["kv_bit"], 8))
        chip = sr.chip("llm-viewer/" + run["hardware"])
        L = int(m.L)
        for phase in ("prefill", "decode"):
            t = sr.roofline_table(m, chip, **_step(run, phase), conventions="llm-viewer")
            report = t.as_dict()["rows"]  # what report --format json prints of the table
            layers = run[phase]["layers"]
            assert sorted(NAMES[k] for k in layers) == sorted(t.numbers), (run["quant"], phase)
            where = f"{run['model']} {run['hardware']} {run['quant']} S={run['seqlen']} " \
                    f"B={run['batchsize']} {phase}"
            for name, row in layers.items():
                n = 1 if name == "lm_head" else L  # LLM-Viewer's rows are one block's
                v = t.numbers[NAMES[name]]
                assert _got(v) == _expected(row, n) == _got(report[NAMES[name]]), \
                    f"{where} {name}"
                assert math.isclose(v.lower, row["inference_time"] * n, rel_tol=1e-12), \
                    f"{where} {name} time"
                checked += 1
            totals = run[phase]["totals"]  # sum(per block) * layers + lm_head
            assert _got(t._total) == _expected(totals, 1), f"{where} totals"
            assert math.isclose(float(t._per_op_sum), totals["inference_time"], rel_tol=1e-12)
    flash = sum(r["use_flashattention"] for r in data["runs"])
    assert flash == 24 and checked == 2 * (168 * 16 - flash * 2)  # 16 rows; flash: 1 for 3


@pytest.mark.parametrize("index", [0, 41, 118, 167])  # naive and flash, bf16 and int8 runs
def test_llm_viewer_through_the_report_command(peer, capsys, index):
    data, configs = peer
    run = data["runs"][index]
    for phase in ("prefill", "decode"):
        step = _step(run, phase)
        status = main(["report", "--model", str(configs[run["model"]]), "--chip",
                       "llm-viewer/" + run["hardware"], "--phase", phase, "--batch",
                       str(run["batchsize"]), "--context", str(run["seqlen"]), "--dtype",
                       step["dtype"], "--w-bytes", str(Fraction(run["w_bit"], 8)),
                       "--act-bytes", str(Fraction(run["a_bit"], 8)), "--kv-bytes",
                       str(Fraction(run["kv_bit"], 8)), "--attention", step["attention"],
                       "--conventions", "llm-viewer", "--format", "json"])
        assert status == 0
        out = json.loads(capsys.readouterr().out)
        assert out["conventions"]["name"] == "llm-viewer"
        L = data["model_configs"][run["model"]]["num_hidden_layers"]
        for name, row in run[phase]["layers"].items():
            n = 1 if name == "lm_head" else L
            got = out["rows"][NAMES[name]]
            assert _got(got) == _expected(row, n)
            assert got["act_bytes"] == got["act_load_bytes"] + got["act_store_bytes"]
            assert got["kv_bytes"] == got["kv_load_bytes"] + got["kv_store_bytes"]
            assert math.isclose(got["t_lower_s"], row["inference_time"] * n, rel_tol=1e-12)
        assert math.isclose(out["per_op_sum_s"], run[phase]["totals"]["inference_time"],
                            rel_tol=1e-12)


def test_default_profile_is_symroof_and_changes_nothing():
    assert profile("symroof") == Conventions() and Conventions().changed() == {}
    m = sr.model("llama-3.1-8b")
    for attention in ("naive", "fused", "flash"):
        assert m.ops(4, 16, 100, attention=attention) == m.ops(
            4, 16, 100, attention=attention, conventions="symroof")
    # the kv_write, residual and lm_head rows that llm-viewer changes keep symroof's counts
    rows = m.ops(1, 1, 2047, last_only=True)
    assert rows["attn/residual"].act_bytes == 32 * 3 * 4096 * 2  # reads 2, writes 1
    assert rows["lm_head"].flops == 2 * 4096 * 128256  # 2 FLOPs per multiply-add


def test_profiles_change_only_what_their_docstrings_name():
    from symroof.conventions import DOCS

    for name, record in PROFILES.items():
        assert record.name == name and record.changed() == {}
        for field in Conventions().differences(record):
            assert re.search(rf"\b{field}=", DOCS[name]), f"{name} does not explain {field}"


def test_each_field_is_read_in_exactly_one_place():
    """Each field is read (``.field``, outside doctests, comments and strings) exactly once,
    in the module FIELDS names for it."""
    package = Path(sr.__file__).parent
    where: dict[str, list[str]] = {f: [] for f in FIELDS}
    for path in package.rglob("*.py"):
        module = ".".join(path.relative_to(package).with_suffix("").parts)
        for line in path.read_text(encoding="utf-8").splitlines():
            stripped = line.strip()
            if stripped.startswith((">>>", "...", "#")):  # doctests and comments out
                continue
            code = re.sub(r'"[^"]*"', '""', stripped)  # and string literals
            for field in FIELDS:
                where[field] += [module] * len(re.findall(rf"\.{field}\b", code))
    for field, (_, _, named) in FIELDS.items():
        named = "conventions." + named if named.startswith("Conventions.") else named
        assert len(where[field]) == 1 and named.startswith(where[field][0] + "."), \
            f"{field} is read in {where[field]}, FIELDS says {named}"


def test_bad_values_are_one_line_naming_field_value_and_allowed():
    with pytest.raises(ValueError, match=r"^convention attention_pairs must be one of "
                       r"'causal', 'all', 'new'; got 'half'$"):
        Conventions(attention_pairs="half")
    with pytest.raises(ValueError, match=r"unknown convention field\(s\) softmax; fields are "
                       r"flops_per_mac, attention_pairs"):
        profile("book").replace(softmax=5)
    with pytest.raises(ValueError, match=r"convention omit names unknown row\(s\) attn/x, y; "
                                         "rows are attn/av"):  # as typed: no list repr
        sr.model("tiny").ops(1, 1, 0, conventions=profile("symroof").replace(omit="attn/x,y"))


def test_every_command_takes_conventions():
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices
    for name, sub in commands.items():
        flags = {s for a in sub._actions for s in a.option_strings}
        assert {"--conventions", "--convention"} <= flags, name


@pytest.mark.parametrize("argv, says", [
    (["--conventions", "xla"], "unknown conventions 'xla'; profiles are symroof, book, "
                               "llm-viewer, llm-analysis"),
    (["--convention", "softmax=5"], "unknown convention field 'softmax'; fields are "
                                    "flops_per_mac, attention_pairs"),
    (["--convention", "softmax_flops=-3"], "convention softmax_flops must be one of 'exact', "
                                           "a count per element; got -3"),
])
def test_cli_refuses_unknown_profiles_and_fields_in_one_line(capsys, argv, says):
    status = main(["report", "--model", "tiny", "--chip", "h100", "--phase", "decode",
                   "--batch", "1", "--context", "8", *argv])
    err = capsys.readouterr().err
    assert status == 2 and says in err and err.count("\n") == 1


def test_commands_that_do_not_apply_conventions_refuse_them(capsys):
    status = main(["critical-batch", "--chip", "h100", "--conventions", "book"])
    err = capsys.readouterr().err
    assert status == 2 and "does not apply --conventions yet" in err


def test_outputs_name_the_conventions():
    m, h100 = sr.model("tiny"), sr.chip("h100")
    plain = sr.roofline_table(m, h100, batch=1, new_tokens=1, cached=7, title="t")
    assert plain.to_text().splitlines()[1].endswith("; conventions: symroof")
    assert plain.as_dict()["conventions"]["changed"] == []
    changed = sr.roofline_table(m, h100, batch=1, new_tokens=1, cached=7, title="t",
                                conventions=profile("llm-viewer").replace(softmax_flops=6))
    assert "conventions: llm-viewer, softmax\\_flops=6}" in changed.to_latex()
    assert changed.to_markdown().startswith("**t** (conventions: llm-viewer, softmax_flops=6)")


def test_using_sets_and_restores_the_record_in_force():
    from symroof.conventions import current

    with using("book") as outer:
        with using("llm-viewer"):
            assert current().name == "llm-viewer"
        assert current() is outer
    assert current().name == "symroof"


def test_compare_conventions_explains_every_row_by_field_on_llama3_8b():
    m, h100 = sr.model("llama-3.1-8b"), sr.chip("h100")
    for step in ((1, 1, 2047), (1, 2048, 0)):  # decode and prefill
        for other in ("book", "llm-viewer", "llm-analysis"):
            d = sr.compare_conventions(m, h100, *step, "symroof", other)
            assert d.explained, (step, other)
            for name, row in d.rows.items():  # the parts add up to the whole difference
                for q in ("flops", "weight_bytes", "act_bytes", "kv_bytes"):
                    parts = sum(getattr(c, q) for c in row.by_field.values())
                    assert getattr(row.b, q) - getattr(row.a, q) == parts, (name, q)
    d = sr.compare_conventions(m, h100, 1, 1, 2047, "symroof", "llm-viewer")
    # LLM-Viewer's RMSNorm: 7 ops an element, no weight read (symroof: 4D + 2 a row, reads w)
    assert d.rows["attn_norm"].fields() == ["norm_flops", "norm_weights"]
    assert d.rows["attn_norm"].by_field["norm_flops"].flops == 32 * (7 * 4096 - (4 * 4096 + 2))
    assert d.rows["lm_head"].fields() == ["lm_head_flops_per_mac"]
    assert d.rows["lm_head"].b.flops * 2 == d.rows["lm_head"].a.flops == 2 * 4096 * 128256
    assert d.rows["attn/rope"].b == sr.Cost() and d.rows["attn/rope"].fields() == ["omit"]


def test_compare_conventions_formula_is_the_symbolic_difference():
    d = sr.compare_conventions(sr.model("llama-3.1-8b"), "h100", 1, 1, 2047, "symroof",
                               "llm-viewer")
    from symroof.symbols import B, S

    # softmax: 5 an element against 6n - 2 a row, over H = 32 heads and L = 32 layers
    assert d.formula("attn/core", "flops") == 32 * 32 * B * (2 - S)
    assert d.formula("attn/residual", "act_bytes") == -32 * 4096 * 2 * B


def test_conventions_command_lists_shows_and_diffs(capsys):
    assert main(["conventions", "--format", "json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert set(listing["profiles"]) == set(PROFILES) and set(listing["fields"]) == set(FIELDS)
    assert main(["conventions", "llm-viewer"]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith("conventions: llm-viewer\n") and "model_analyzer.py at 472f71f" in shown
    assert main(["conventions", "--diff", "symroof,llm-viewer", "--model", "llama-3.1-8b",
                 "--chip", "h100", "--phase", "decode", "--batch", "1", "--context", "2048",
                 "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["explained"] and out["rows"]["lm_head"]["fields"] == ["lm_head_flops_per_mac"]
    assert main(["conventions", "--diff", "symroof", "--model", "tiny"]) == 2
    assert "--diff wants two profiles" in capsys.readouterr().err


def test_ring_factor_book_drops_the_rings_share():
    node = sr.mesh("h100", {"X": 8})
    V = 450 * 10**9  # a GPU's NVLink egress moves this in one second
    assert sr.all_gather(node, V, "X").t_bw == Fraction(7, 8)
    assert sr.all_gather(node, V, "X", conventions="book").t_bw == 1
    # the bytes each chip sends are the exact count under either
    assert sr.all_gather(node, V, "X", conventions="book").net_bytes == V * 7 // 8


def _other_value(field: str):
    """A value of ``field`` other than symroof's."""
    allowed, default = FIELDS[field][0], getattr(Conventions(), field)
    if allowed == ("rows",):
        return ("attn/rope",)
    return next(v if v != "int" else 3 for v in reversed(allowed) if v != default)


@pytest.mark.parametrize("field", [f for f in FIELDS if f not in
                                   ("ring_factor", "lm_head_positions", "time_flops",
                                    "optimizer_bytes", "gpu_level", "allreduce_latency",
                                    "base_latency", "condition_layer")])
def test_every_row_field_changes_some_row(field):
    """No field is a dead switch: moving it off symroof's value changes some row of a
    prefill (naive or fused core) of Llama-3.1-8B or Gemma-7B (whose d_h is not D/H)."""
    changed = profile("symroof").replace(**{field: _other_value(field)})
    step = sr.Step(2, 16)
    differs = any(m.ops(step, attention=a) != m.ops(step, attention=a, conventions=changed)
                  for m in (sr.model("llama-3.1-8b"), sr.model("gemma-7b"))
                  for a in ("naive", "fused"))
    assert differs, field


def test_the_table_level_fields_change_the_table():
    m, h100, step = sr.model("llama-3.1-8b"), sr.chip("h100"), sr.Step(1, 512)
    base = sr.roofline_table(m, h100, step, attention="naive")
    executed = sr.roofline_table(m, h100, step, attention="naive",
                                 conventions=profile("symroof").replace(time_flops="executed"))
    scores = "attn/scores"  # the naive core executes all T x S pairs, uses the causal half
    assert executed.numbers[scores].t_math > base.numbers[scores].t_math
    assert executed.numbers[scores].flops == base.numbers[scores].flops
    every = sr.roofline_table(m, h100, step,
                              conventions=profile("symroof").replace(lm_head_positions="all"))
    assert every.numbers["lm_head"].flops == 512 * base.numbers["lm_head"].flops


def test_optimizer_bytes_sets_the_training_state_per_parameter():
    from symroof.symbols import B, S

    m = sr.model("llama-3.1-8b")
    for name, per_param in (("symroof", 12), ("book", 10), ("llm-analysis", 18)):
        mem = sr.train_memory(m, B, S, "full", conventions=name)
        assert sum(mem[k] for k in ("params", "grads", "master", "moments")) == per_param * m.params
    mixed = profile("symroof").replace(optimizer_bytes=16)
    assert sr.train_memory(m, B, S, conventions=mixed)["master"] == 4 * m.params


def test_compare_asks_every_question_under_the_conventions_given(cli):
    run = cli(["compare", "--chips", "h100,tpu-v5e", "--model", "tiny", "--batch", "8",
               "--context", "1024", "--conventions", "llm-analysis", "--format", "json"])
    assert run.returncode == 0, run.stderr
    d = json.loads(run.stdout)
    assert d["title"].endswith(", bf16 peak, conventions: llm-analysis")
    assert d["conventions"]["name"] == "llm-analysis"
    for chip in ("h100", "tpu-v5e"):  # the same question on report's surface
        t = sr.roofline_table(sr.model("tiny"), chip, batch=8, new_tokens=1, cached=1023,
                              conventions="llm-analysis")
        assert d["rows"][chip]["lower"] == pytest.approx(float(t.bounds[0]), rel=1e-12)
        mine = sr.roofline_table(sr.model("tiny"), chip, batch=8, new_tokens=1, cached=1023)
        assert t.bounds[0] != mine.bounds[0]
    refused = cli(["compare", "--chips", "h100,tpu-v5e", "--question", "critical-batch",
                   "--conventions", "book"])
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr == ("symroof: error: the critical batch question does not apply "
                           "conventions yet (its numbers are symroof's); the questions that "
                           "do: decode, prefill, serve, train\n")


def test_serve_params_and_prefill_take_conventions():
    v5e = sr.mesh("tpu-v5e", "4x4")
    args = dict(batch=4, context=8192, kv_bytes_per_token=100_000)
    mine = sr.serve_params(30 * 10**9, v5e, **args)
    peer = sr.serve_params(30 * 10**9, v5e, **args, conventions="llm-analysis")
    # llm-analysis (analysis.py at d841e40) reads and writes the KV cache at its final
    # length: 4 sequences x 8,192 tokens x 100 kB, twice
    assert mine.cost.kv_bytes == 4 * 8192 * 100_000
    assert peer.cost.kv_bytes == 2 * 4 * 8192 * 100_000
    assert (mine.cost.kv_store_bytes, peer.cost.kv_store_bytes) == (0, 4 * 8192 * 100_000)
    assert str(peer).splitlines()[0].endswith("KV bf16, conventions: llm-analysis:")
    assert "conventions" not in str(mine)
    mac = sr.serve_params(30 * 10**9, v5e, **args,
                          conventions=profile("symroof").replace(flops_per_mac=1))
    assert mac.cost.flops == 4 * 30 * 10**9 and mine.cost.flops == 2 * 4 * 30 * 10**9
    # LLM-Viewer's lm_head: one FLOP a multiply-add, on one row of D = 4096 (Llama-3.1-8B's
    # config: hidden_size 4096, vocab_size 128256)
    pre = sr.prefill("llama-3.1-8b", v5e, prompt=512, conventions="llm-viewer")
    assert pre.rows["lm_head"].flops == 4096 * 128256
    assert str(pre).endswith(", conventions: llm-viewer")


def test_a_float_or_a_bool_is_not_a_count():
    # 2.0 == 2 and True == 1 in Python: a field must hold the int itself, or a float would
    # enter every formula that multiplies by it (FLOPs per multiply-add, bytes per parameter)
    from symroof.conventions import Conventions

    for field, value in (("flops_per_mac", 2.0), ("flops_per_mac", True),
                         ("optimizer_bytes", 12.0), ("residual_reads", 1.0)):
        with pytest.raises(ValueError, match=f"convention {field} must be one of"):
            Conventions(**{field: value})
    assert type(Conventions(flops_per_mac=1).flops_per_mac) is int


def test_head_dim_d_over_h_reaches_the_whole_model_cost_too():
    """head_dim="D/H" (LLM-Viewer's, llm-analysis') sets the head width of every count: the
    whole-model cost reads the same KV cache as the per-op rows. Qwen3-0.6B has d_h = 128
    but D/H = 1024/16 = 64 (Qwen/Qwen3-0.6B config.json), so its KV cache halves."""
    m = sr.model("qwen3-0.6b")
    cv = profile("symroof").replace(head_dim="D/H")
    rows = m.ops(8, 1, 4095, last_only=True, attention="fused", conventions=cv)
    whole = m.whole(8, 1, 4095, last_only=True, conventions=cv)
    # 8 sequences x 4096 positions x 28 layers x K and V x 8 KV heads x 64 dims x 2 bytes
    assert whole.kv_bytes == 8 * 4096 * 28 * 2 * 8 * 64 * 2
    assert whole.kv_bytes == m.replace(d_h=64).whole(8, 1, 4095, last_only=True).kv_bytes
    assert rows["attn/core"].kv_bytes == whole.kv_bytes
    symbolic = m.whole(sr.symbols.B, 1, 4095, last_only=True, conventions=cv)  # derived
    assert symbolic.subs(sr.symbols.B, 8) == whole


#: the rows that multiply a weight or the cache (docs/accounting.md, "Whole-model roofline":
#: the whole counts "useful FLOPs of the matmuls and the attention core")
_CONTRACTIONS = ("_proj", "/scores", "/av", "/gate", "/up", "/down", "/router", "lm_head")


@pytest.mark.parametrize("name", ["qwen3-0.6b", "mixtral-8x7b", "gemma-2-9b"])
def test_the_whole_model_cost_is_the_rows_contractions_under_every_profile(name):
    """The whole-model cost is, by its definition, the contractions of the per-op rows: its
    FLOPs their useful FLOPs, its weight bytes theirs, its KV bytes the (naive) core's reads;
    the other rows only add to the per-op sum. That holds under symroof; every profile keeps
    it (llm-viewer's lm_head at 1 FLOP a MAC, llm-analysis' cache read and written back)."""
    m = sr.model(name)
    for cv in PROFILES.values():
        for step in ((4, 1, 1023), (2, 512, 0)):  # decode, prefill
            rows = m.ops(*step, last_only=cv.last_only, conventions=cv)
            whole = m.whole(*step, last_only=cv.last_only, conventions=cv)
            mm = [c for k, c in rows.items() if k.endswith(_CONTRACTIONS)]
            core = [c for k, c in rows.items() if k.endswith(("/scores", "/av"))]
            said = f"{name} {step} under {cv.name}"
            assert whole.flops == sum(c.useful_flops for c in mm), said
            assert whole.weight_bytes == sum(c.weight_bytes for c in mm), said
            assert whole.kv_bytes == sum(c.kv_bytes for c in core), said
            assert whole.kv_store_bytes == sum(c.kv_store_bytes for c in core), said
            total = sum(rows.values(), sr.Cost())
            assert total.useful_flops >= whole.flops and total.bytes >= whole.bytes, said


def test_the_whole_model_cost_reads_the_lm_head_and_kv_traffic_fields():
    """Llama-3.1-8B (meta-llama/Llama-3.1-8B config.json: D 4096, V 128256, L 32, 8 KV heads
    of 128), a decode step of 4 sequences at context 1024."""
    m = sr.model("llama-3.1-8b")
    plain = m.whole(4, 1, 1023, last_only=True)
    viewer = m.whole(4, 1, 1023, last_only=True, conventions="llm-viewer")
    # LLM-Viewer's lm_head: 1 OP a multiply-add, 4 x 4096 x 128256, not 2 (configs/Llama.py)
    assert plain.flops - viewer.flops == 4 * 4096 * 128256
    analysis = m.whole(4, 1, 1023, last_only=True, conventions="llm-analysis")
    # llm-analysis: the cache read and written back, 2 x 4 x 1024 x 32 x 2 x 8 x 128 x 2 B
    assert analysis.kv_bytes == 2 * plain.kv_bytes == 2 * 4 * 1024 * 32 * 2 * 8 * 128 * 2


def test_the_kv_crossover_weighs_the_weights_at_the_counted_head_width():
    """Qwen3-0.6B (Qwen/Qwen3-0.6B config.json: D 1024, F 3072, L 28, H 16, G 8, V 151936)
    under head_dim="D/H" (64): matmul weights 28 (3 x 1024 x 1024 + 3 x 1024 x 3072) +
    1024 x 151936 = 507,904,000 at 2 B against 28 x 2 x 8 x 64 x 2 = 57,344 B of cache a
    token; before, the weights kept d_h 128 while the cache read 64 (145504/7)."""
    m = sr.model("qwen3-0.6b")
    with using(profile("symroof").replace(head_dim="D/H")):
        assert sr.kv_crossover(m, 1) == Fraction(2 * 507_904_000, 57_344)  # 124000/7


@pytest.mark.parametrize("conventions", ["symroof", "book", "llm-viewer", "llm-analysis",
                                         profile("symroof").replace(flops_per_mac=1)])
def test_a_training_steps_gradient_matmuls_count_as_its_forward_does(conventions):
    """dX = dY W^T and dW = X^T dY each take as many multiply-adds as Y = X W (and the
    attention core's four gradient matmuls as many as QK^T or PV), so under every profile
    each counts what its forward counts: the FLOPs-per-multiply-add conventions reach the
    backward too (before, flops_per_mac=1 halved fwd/mlp/down and left its dX and dW)."""
    from symroof.models.training import matmul_keys, train_ops

    m = sr.model("llama-3.1-8b")
    rows = train_ops(m, 2, 16, conventions=conventions)
    for key in matmul_keys(m):
        fwd = rows[f"fwd/{key}"].flops
        assert rows[f"bwd/{key}/dx"].flops == fwd == rows[f"bwd/{key}/dw"].flops, key
    for fwd, bwd in (("attn/scores", ("scores/dq", "scores/dk")), ("attn/av", ("av/dp", "av/dv"))):
        for b in bwd:
            assert rows[f"bwd/attn/{b}"].flops == rows[f"fwd/{fwd}"].flops, (fwd, b)
