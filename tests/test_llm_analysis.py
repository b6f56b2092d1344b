"""llm-analysis reproduced: the "llm-analysis" profile against the peer's own numbers.

tests/data/llm_analysis_d841e40.json.gz holds llm-analysis's output (cli99/llm-analysis at
commit d841e40aec8c84b9e76ba9cfbce67418adb172bd, ``LLMAnalysis(model, gpu, dtype).inference(
batch, seq_len, num_tokens_to_generate=128)`` with its gpu_configs and dtype_configs, written
by tests/data/make_llm_analysis_data.py; the file's header says how): Llama-2-7B, 13B and 70B
as released, on its H100 and A100 SXM 80 GB presets, w16a16, w8a8 and w4a16, batch 1 and 16,
prompts of 512 and 2048 tokens: 64 runs (the 8 where bf16 70B does not fit its 80 GB are
listed as refused), each a prefill and a decode step.

Fields that correspond, compared exactly (FLOPs, bytes) or to float rounding (seconds):
prefill and decode FLOPs, whole and per block (attention, MLP, logits); weight bytes of the
attention, MLP and norm blocks; the decode KV traffic (the cache loaded and stored at its
final length); the logits' time (compute only) and the KV time; the attention and MLP
blocks' times, given llm-analysis's own activation bytes.

Fields that do not, and why (each also named in the profile's docstring):
- activation bytes: llm-analysis's are an activation-memory footprint (max(3 b s h, ...)
  a layer), not the bytes each op moves;
- the input embedding's time and weight footprint: it reads the whole V x D table each step
  and counts one table even for untied models (checked below: its parameter count is
  symroof's less the lm_head's V x D);
- the layernorm time: 5 FLOPs an element over fp32 bytes, while its FLOP count has none;
- prefill KV bytes: its prefill books no KV traffic.
"""

from __future__ import annotations

import gzip
import json
import math
from fractions import Fraction
from pathlib import Path

import pytest

import symroof as sr

DATA = Path(__file__).parent / "data" / "llm_analysis_d841e40.json.gz"


@pytest.fixture(scope="module")
def peer(tmp_path_factory):
    data = json.loads(gzip.decompress(DATA.read_bytes()))
    folder = tmp_path_factory.mktemp("llm_analysis_configs")
    data["models"] = {name: _model(config, folder / f"{name}.json")
                      for name, config in data["model_configs"].items()}
    return data


def _model(config: dict, path: Path) -> sr.Transformer:
    """symroof's model of llm-analysis's config, written as the Hugging Face config it is."""
    hf = {"model_type": "llama", "hidden_act": "silu", "tie_word_embeddings": False,
          "hidden_size": config["hidden_dim"], "intermediate_size": config["ffn_embed_dim"],
          "num_hidden_layers": config["num_layers"], "num_attention_heads": config["n_head"],
          "num_key_value_heads": config["num_key_value_heads"],
          "vocab_size": config["vocab_size"], "max_position_embeddings": 4096}
    path.write_text(json.dumps(hf))
    return sr.model(str(path))


def _widths(m: sr.Transformer, bits: dict) -> sr.Transformer:
    """``m`` at the run's widths (the KV cache at the activation's, llm-analysis's default)."""
    return m.replace(w_bytes=Fraction(bits["weight"], 8), act_bytes=Fraction(bits["activation"], 8),
                     kv_bytes=Fraction(bits["activation"], 8))


def _tables(run: dict, m: sr.Transformer) -> dict:
    b, s, n = run["batch"], run["seq_len"], run["num_tokens_to_generate"]
    # llm-analysis's GEMM roof: the wider of the weight and activation widths (int8 at 8)
    dtype = "int8" if max(run["bits"]["weight"], run["bits"]["activation"]) == 8 else "fp16"
    chip = sr.chip("llm-analysis/" + run["gpu"])
    assert chip.peak(dtype) == Fraction(run["TFLOPS_per_gpu"]) * 10**12
    assert chip.hbm_bw == Fraction(run["hbm_bandwidth_GB_per_s"]) * 10**9
    # prefill: the prompt; decode: its last step, the cache at seq_len + n_generate
    return {phase: sr.roofline_table(m, chip, batch=b, new_tokens=T, cached=c, dtype=dtype,
                                     conventions="llm-analysis")
            for phase, T, c in (("prefill", s, 0), ("decode", 1, s + n - 1))}


def _block(t, prefix: str, kind: str) -> Fraction:
    return sum(Fraction(getattr(v, kind)) for k, v in t.numbers.items() if k.startswith(prefix))


def test_the_peers_file_says_how_it_was_made(peer):
    assert peer["tool"] == "cli99/llm-analysis"
    assert peer["commit"] == "d841e40aec8c84b9e76ba9cfbce67418adb172bd"
    assert len(peer["runs"]) == 64 and len(peer["refused"]) == 8
    assert {r["model"] for r in peer["refused"]} == {"llama-2-70b"}
    assert {r["dtype"] for r in peer["refused"]} == {"w16a16e16"}


def test_llm_analysis_presets_are_chips_with_its_figures(peer):
    for name, figures in peer["gpu_configs"].items():
        c = sr.chip("llm-analysis/" + name)
        assert c.peak("fp16") == figures["peak_fp16_TFLOPS"] * 10**12
        assert c.peak("int8") == figures["peak_i8_TFLOPS"] * 10**12
        assert c.hbm_bw == figures["hbm_bandwidth_in_GB_per_sec"] * 10**9
        assert c.hbm_bytes == figures["mem_per_GPU_in_GB"] * 1024**3  # GiB: analysis.py 1611


def test_llm_analysis_every_run_reproduced(peer):
    checked = 0
    for run in peer["runs"]:
        config = peer["model_configs"][run["model"]]
        m, L = _widths(peer["models"][run["model"]], run["bits"]), config["num_layers"]
        tables, where = _tables(run, m), f"{run['model']} {run['gpu']} {run['dtype']} " \
                                         f"b={run['batch']} s={run['seq_len']}"
        for phase, t in tables.items():
            got, want = run[phase], run["summary"]
            assert t._total.flops == want[f"{phase}_num_flops_fwd_total"], (where, phase)
            assert _block(t, "attn/", "flops") == L * got["flops_attn_per_layer"], where
            assert _block(t, "mlp/", "flops") == L * got["flops_mlp_per_layer"], where
            # the blocks' weights: llm-analysis's footprint a layer, read once a step
            w_attn, w_mlp = _block(t, "attn/", "weight_bytes"), _block(t, "mlp/", "weight_bytes")
            assert w_attn == L * Fraction(run["weight_memory_attn_per_layer"]), where
            assert w_mlp == L * Fraction(run["weight_memory_mlp_per_layer"]), where
            norms = t.numbers["attn_norm"].weight_bytes + t.numbers["mlp_norm"].weight_bytes
            assert norms == L * Fraction(run["weight_memory_layernorm_per_layer"]), where
            # the logits: compute-bound in llm-analysis (no weight read), t = FLOPs / peak
            assert math.isclose(t.numbers["lm_head"].t_math,
                                got["latency_fwd_output_embedding_loss"], rel_tol=1e-12)
            # attention and MLP blocks: max(compute, weights + its activation bytes) a layer
            bw = sr.chip("llm-analysis/" + run["gpu"]).hbm_bw
            for prefix, name in (("attn/", "attn"), ("mlp/", "mlp")):
                t_math = sum(v.t_math for k, v in t.numbers.items() if k.startswith(prefix))
                weights = _block(t, prefix, "weight_bytes") / L
                t_mem = float((weights + Fraction(got[f"act_memory_{name}_per_layer"])) / bw)
                assert math.isclose(L * max(t_math / L, t_mem), got[f"latency_fwd_{name}"],
                                    rel_tol=1e-9), (where, phase, name)
            checked += 1
        decode = tables["decode"]
        kv = run["summary"]["kv_cache_memory_per_gpu"]
        assert kv == L * run["kv_cache_memory_per_layer_final"]
        assert decode._total.kv_bytes == 2 * Fraction(kv), where  # loaded and stored
        assert math.isclose(decode._total.kv_bytes / bw, run["summary"]["kv_cache_latency"],
                            rel_tol=1e-12)
    assert checked == 2 * 64


def test_llm_analysis_counts_one_vocabulary_table(peer):
    """Its parameters: symroof's less the untied lm_head's V x D (shared_embedding=True)."""
    for name, config in peer["model_configs"].items():
        m = peer["models"][name]
        run = next(r for r in peer["runs"] if r["model"] == name)
        assert int(m.params) - config["vocab_size"] * config["hidden_dim"] == \
            run["summary"]["num_params_total"], name


def test_llm_analysis_decode_flops_do_not_grow_with_the_context():
    """attention_pairs="new": the decode step's attention core is one pair a head."""
    m = sr.model("llama-2-7b")
    short, long = (m.ops(1, 1, c, attention="fused", conventions="llm-analysis")["attn/core"]
                   for c in (10, 4000))
    assert short.flops == long.flops == 32 * 2 * 2 * 4096  # L x 2 matmuls x 2 FLOPs x H d_h
    assert long.kv_bytes == 32 * 2 * 2 * 4001 * 4096 * 2  # L x read+write x K,V x S x G d_h x 2 B
