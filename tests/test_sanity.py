"""Sanity warnings of one step (symroof.models.sanity), and the model records they read:
``max_position`` of every preset and config, and what reading a config assumed."""

import json
from pathlib import Path

import pytest

import symroof as sr
from symroof.models import MODELS
from symroof.models.sanity import step_warnings
from symroof.models.table import RooflineTable

H100 = sr.chip("h100")
DATA = Path(__file__).resolve().parent / "data"

#: preset -> max_position_embeddings of its config.json (the preset's source); the others
#: must state theirs too
MAX_POSITIONS = {"llama-3.1-8b": 131072, "llama-3.1-70b": 131072, "llama-3.1-405b": 131072,
                 "llama-2-7b": 4096, "llama-2-13b": 4096, "mistral-7b": 32768, "tiny": None}


@pytest.mark.parametrize("name", MODELS)
def test_every_preset_states_its_maximum_context(name):
    m = sr.model(name)
    assert m.max_position == MAX_POSITIONS.get(name, m.max_position)
    if name != "tiny":  # made up for the NumPy twin: no release, no maximum
        assert m.max_position is not None and m.source.endswith("/config.json")


def test_configs_give_their_maximum_context():
    assert sr.model(str(DATA / "llama-3.1-8b.config.json")).max_position == 131072
    assert sr.model(str(DATA / "llama-2-7b.config.json")).max_position == 4096


@pytest.mark.parametrize("batch, context, expected", [
    (64, 2048, []),  # the README's step: nothing off
    (2900, 2048, ["weights 16.1 GB + KV cache 778 GB = 795 GB, 9.93x the h100's HBM"]),
    (1, 131073, ["context 131,073 is 1 past llama-3.1-8b's maximum of 131,072 positions"]),
    (10**6, 100, ["weights 16.1 GB + KV cache 13.1 TB", "the KV crossover at batch 1,000,000 "
                  "(KV-cache bytes = weight bytes) is at context 7157/62500 ~ 0.1, below one "
                  "token: at this batch the KV cache outweighs the weights at every context"]),
])
def test_llama3_warnings(batch, context, expected):
    got = step_warnings(sr.model("llama-3.1-8b"), H100, batch, context)
    assert len(got) == len(expected) and all(w.startswith(e) for w, e in zip(got, expected))


def test_crossovers_past_the_maximum_context_are_said():
    ctx_star, kv = step_warnings(sr.model("llama-2-7b"), H100, 1, 2048)
    assert ctx_star.startswith("ctx* = 25,204 (attention FLOPs = matmul FLOPs per token)")
    assert kv.startswith("the KV crossover at batch 1 (KV-cache bytes = weight bytes) is at "
                         "context 25,204, past llama-2-7b's maximum 4,096")
    assert sr.ctx_star(sr.model("llama-2-7b")) == sr.kv_crossover(sr.model("llama-2-7b"), 1)


def test_an_unknown_maximum_is_said_not_skipped():
    (only,) = step_warnings(sr.model("tiny"), H100, 1, 8)
    assert only.startswith("tiny's maximum context is not known")


def test_tables_carry_the_warnings_in_every_form():
    t = sr.roofline_table(sr.model("llama-2-7b"), H100, batch=512, new_tokens=1, cached=8191)
    assert len(t.warnings) == 3  # weights + cache 2.21 TB; context 8192 > 4096; ctx* > 4096
    assert all(f"warning: {w}" in t.to_text() for w in t.warnings)
    assert all(f"> **warning:** {w}" in t.to_markdown() for w in t.warnings)
    assert t.to_latex().count(r"\textbf{warning:}") == 3
    assert t.as_dict()["warnings"] == list(t.warnings)
    assert RooflineTable(rows=t.rows, chip=H100).warnings == ()  # rows alone: no model


def _config(tmp_path, name="config.json", **changes):
    cfg = {**json.loads((DATA / "llama-3.1-8b.config.json").read_text()), **changes}
    cfg = {k: v for k, v in cfg.items() if v is not None}
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(cfg))
    return sr.model(str(path))


def test_config_names(tmp_path):
    assert _config(tmp_path / "Llama-3.1-8B").name == "Llama-3.1-8B"  # the folder
    assert _config(tmp_path, "mine.config.json").name == "mine"  # the file
    snapshot = tmp_path / "models--meta-llama--Llama-3.1-8B" / "snapshots" / "0123abc"
    assert _config(snapshot).name == "meta-llama/Llama-3.1-8B"  # a Hugging Face cache
    assert _config(tmp_path / "x", _name_or_path="org/model").name == "org/model"


@pytest.mark.parametrize("changes, widths, note", [
    ({}, (2, 2, 2), None),  # bfloat16: the default widths, nothing to say
    ({"model_type": None}, (2, 2, 2), "config has no model_type: read as a Llama-style "),
    ({"torch_dtype": "float32"}, (4, 4, 4), "torch_dtype float32: weights, activations and KV"),
    ({"torch_dtype": "float8_e4m3fn"}, (2, 2, 2), "torch_dtype 'float8_e4m3fn' is not a width"),
    ({"quantization_config": {"quant_method": "awq", "bits": 4}}, ("1/2", 2, 2),
     "quantization_config (awq): 4-bit weights, w_bytes = 1/2"),
    ({"quantization_config": {"load_in_8bit": True, "quant_method": "bitsandbytes"}},
     (1, 2, 2), "quantization_config (bitsandbytes): 8-bit weights"),
    ({"quantization_config": {"quant_method": "fbgemm_fp8"}}, (1, 2, 2),
     "quantization_config (fbgemm_fp8): 8-bit weights"),
    ({"quantization_config": {"quant_method": "hqq"}}, (2, 2, 2),
     "quantization_config (hqq) is not modelled: weights at w_bytes = 2 (set --w-bytes)"),
])
def test_configs_honour_or_flag_dtype_and_quantisation(tmp_path, changes, widths, note):
    m = _config(tmp_path, **changes)
    assert tuple(str(getattr(m, w)) for w in ("w_bytes", "act_bytes", "kv_bytes")) == \
        tuple(map(str, widths))
    assert (m.notes == ()) if note is None else (len(m.notes) == 1
                                                 and m.notes[0].startswith(note))
    assert set(m.notes) <= set(step_warnings(m, H100, 1, 8))  # the report shows them


def test_a_crossover_that_never_comes_is_said():
    """Mistral-7B's sliding window caps what a token attends to and what a layer caches at
    4096 tokens: attention never outweighs the matmuls, and at batch 1 nor does the cache."""
    ctx_star, kv = step_warnings(sr.model("mistral-7b"), H100, 1, 4096)
    assert ctx_star.startswith("ctx* (attention FLOPs = matmul FLOPs per token) is reached "
                               "at no context")
    assert kv.startswith("the KV crossover at batch 1 (KV-cache bytes = weight bytes) is "
                         "reached at no context")
    assert step_warnings(sr.model("mistral-7b"), H100, 64, 4096)[1:] == []  # 6781/4 < 4096


def test_the_kv_crossover_warning_is_kept_per_conventions():
    # head_dim="D/H" halves Qwen3-0.6B's KV cache (d_h 128, D/H = 1024/16 = 64, Qwen/Qwen3-0.6B
    # config.json), so its KV crossover doubles; the kept root must not be the other record's
    from symroof.conventions import profile, using
    from symroof.models import sanity

    m = sr.model("qwen3-0.6b")
    half = profile("symroof").replace(head_dim="D/H")
    roots = {}
    for cv in ("symroof", half, "symroof"):
        with using(cv) as record:
            roots[record.label] = sanity._root("kv", m, 64)
            assert roots[record.label] == sr.kv_crossover(m, 64)
    assert roots["symroof, head_dim=D/H"] == 2 * roots["symroof"]
