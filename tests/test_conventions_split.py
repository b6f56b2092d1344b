"""The load/store split of activation and KV bytes: each row's written bytes
(``act_store_bytes``, ``kv_store_bytes``) checked against what the blocks declare and against
the cache a step adds, on every surface that prints them.

LLM-Viewer's five kinds (load_weight, load_act, store_act, load_kv_cache, store_kv_cache)
are checked run by run in test_conventions.py.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import sympy as sp

import symroof as sr
from symroof.models.family_presets import FAMILY_PRESETS
from symroof.parallel.serving_layouts import serving_layout
from symroof.surfaces.cli import main
from symroof.symbols import B as _B
from symroof.symbols import T as _T

B, S = 16, 1024


def test_every_forward_row_stores_the_array_it_declares_it_writes():
    """For every forward row of every preset family, the activation bytes it writes are the
    elements of the arrays its block declares it writes (``Blocks.uses()``, the share of
    each it writes), at the activation width, once per layer the row holds; a row that
    declares no write stores nothing."""
    mesh = sr.mesh("tpu-v5e", "4x4")
    checked = 0
    for m in FAMILY_PRESETS:
        lay, sizes = serving_layout(m, mesh, B, S, "1d", ())
        for key, c in m.ops(B, 1, S - 1, last_only=True, attention="fused").items():
            rule = lay.rule(key)
            written = rule.moved[len(rule.reads):]  # Operands.moved: its reads, then writes
            elements = sp.Add(*(e for _, e in written)).xreplace({_B: B, _T: 1})
            assert c.act_store_bytes == m.act_bytes * rule.repeats * elements, (m.name, key)
            assert c.act_load_bytes + c.act_store_bytes == c.act_bytes
            checked += 1
    assert checked > 100


def test_a_step_stores_exactly_the_cache_its_new_tokens_add():
    """The KV bytes a step writes are the cache its new tokens add: B (kv_cache_bytes(c + T)
    - kv_cache_bytes(c)), the footprint's own formula (models.sizes), for every family,
    decode and prefill, fused and naive core (inside every sliding window)."""
    for m in FAMILY_PRESETS:
        for T, c in ((1, S - 1), (64, 0)):
            for attention in ("fused", "naive"):
                rows = m.ops(B, T, c, last_only=True, attention=attention)
                stored = sum(r.kv_store_bytes for r in rows.values())
                assert stored == B * (m.kv_cache_bytes(c + T) - m.kv_cache_bytes(c)), \
                    (m.name, T, attention)
                # and every other KV byte is a read of the cache
                assert all(r.kv_load_bytes == 0 for k, r in rows.items()
                           if not k.endswith(("/core", "/scores", "/av"))), m.name


def test_llm_analysis_stores_the_cache_back_at_its_final_length():
    """llm-analysis (analysis.py at d841e40) loads and stores the KV cache at its final
    length in a decode step: the stored half is its kv_cache_memory_per_gpu, read from its
    own output (tests/data/llm_analysis_d841e40.json.gz: Llama-2-7B on its H100 preset,
    batch 1, prompt 512, 128 tokens generated)."""
    data = json.loads(gzip.decompress(
        (Path(__file__).parent / "data" / "llm_analysis_d841e40.json.gz").read_bytes()))
    run = next(r for r in data["runs"] if (r["model"], r["gpu"], r["dtype"], r["batch"],
                                           r["seq_len"]) == ("llama-2-7b", "h100-sxm-80gb",
                                                             "w16a16e16", 1, 512))
    t = sr.roofline_table(sr.model("llama-2-7b"), "llm-analysis/h100-sxm-80gb", batch=1,
                          new_tokens=1, cached=512 + 128 - 1, dtype="fp16",
                          conventions="llm-analysis")
    kv = run["summary"]["kv_cache_memory_per_gpu"]  # 335,544,320 B
    assert t._total.kv_store_bytes == t._total.kv_load_bytes == kv


def test_report_json_carries_loads_and_stores_under_symroof(capsys):
    """Llama-3.1-8B decode at batch 1, context 2048 (meta-llama/Llama-3.1-8B config.json:
    D 4096, F 14336, L 32, 8 KV heads of 128)."""
    assert main(["report", "--model", "llama-3.1-8b", "--chip", "h100", "--phase", "decode",
                 "--batch", "1", "--context", "2048", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["conventions"]["name"] == "symroof"
    up = out["rows"]["mlp/up"]  # reads h[1, 4096], writes u[1, 14336], bf16, 32 layers
    assert (up["act_load_bytes"], up["act_store_bytes"]) == (32 * 4096 * 2, 32 * 14336 * 2)
    write = out["rows"]["attn/kv_write"]  # reads k and v, writes them into the cache
    assert write["kv_store_bytes"] == write["kv_bytes"] == 32 * 2 * 8 * 128 * 2
    assert write["kv_load_bytes"] == 0 and write["act_store_bytes"] == 0
    core = out["rows"]["attn/core"]  # reads the 2048 cached positions' K and V
    assert core["kv_load_bytes"] == 32 * 2048 * 2 * 8 * 128 * 2 and core["kv_store_bytes"] == 0
    for row in (*out["rows"].values(), out["total"]):
        assert row["act_load_bytes"] + row["act_store_bytes"] == row["act_bytes"]
        assert row["kv_load_bytes"] + row["kv_store_bytes"] == row["kv_bytes"]


def test_a_tables_stores_are_its_rows_stores():
    """The compiled numbers and the exact rows give the same split (one answer)."""
    t = sr.roofline_table(sr.model("qwen3-0.6b"), "h100", batch=3, new_tokens=5, cached=7,
                          attention="naive", conventions="llm-analysis")
    for name, cost in t.rows.items():
        v = t.numbers[name]
        assert (v.act_store_bytes, v.kv_store_bytes) == (cost.act_store_bytes,
                                                         cost.kv_store_bytes), name
    total = t.total
    assert (t._total.act_store_bytes, t._total.kv_store_bytes) == (total.act_store_bytes,
                                                                   total.kv_store_bytes)


def _twin_stores(model, B: int, T: int, cached: int, attention: str):
    """The NumPy twin's own ledger of the bytes each op writes (it never sees a formula),
    and its routing (tokens per expert per MoE layer) for the symbolic side."""
    from symroof.models.check import _numeric_config, twin_step

    counter, trace = twin_step(model, _numeric_config(model), B, T, cached, T == 1,
                               attention, seed=0)
    return counter.stored, trace


@pytest.mark.parametrize("attention", ["naive", "flash"])
def test_every_rows_stores_are_the_twins_writes(attention):
    """Every family's tiny twin (test_check_families.FAMILIES), a decode step and a chunk:
    each op's activation and KV bytes written, as the twin counts its writes, equal the
    row's ``act_store_bytes`` and ``kv_store_bytes``, exactly."""
    from test_check_families import FAMILIES, TINY

    for family, fields in {"llama": {}, **FAMILIES}.items():
        model = TINY.replace(**fields, attn_block=2)
        for B, T, cached in ((1, 1, 6), (2, 3, 4)):
            stored, trace = _twin_stores(model, B, T, cached, attention)
            rows = model.ops(B, T, cached, last_only=T == 1, attention=attention,
                             tokens_per_expert=trace if model.moe is not None else None)
            assert set(rows) == set(stored), family
            for key, cost in rows.items():
                assert (cost.act_store_bytes, cost.kv_store_bytes) == (
                    stored[key]["act_store_bytes"], stored[key]["kv_store_bytes"]), \
                    (family, attention, B, T, key)
