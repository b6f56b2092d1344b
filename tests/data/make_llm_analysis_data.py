"""Writes llm_analysis_d841e40.json.gz: llm-analysis's own numbers on a grid of Llama-2 steps.

Not a test and not a dependency: run it by hand with cli99/llm-analysis at commit d841e40
importable (its ``llm_analysis`` folder on PYTHONPATH; the PyPI release 0.2.2 predates
``mlp_gated_linear_units`` and counts a SwiGLU MLP as two matrices)::

    PYTHONPATH=/path/to/llm-analysis python tests/data/make_llm_analysis_data.py

Each run is ``LLMAnalysis(model, gpu, dtype).inference(batch, seq_len, n_generate)`` (no
parallelism, the package's default efficiencies of 1) and, beside its summary, the per-layer
pieces its latencies are made of, read from its own methods.
"""

from __future__ import annotations

import gzip
import itertools
import json
import logging
from pathlib import Path

#: Llama-2 configs as released (meta-llama/Llama-2-{7b,13b,70b}-hf config.json: hidden_size,
#: intermediate_size, num_hidden_layers, num_attention_heads, num_key_value_heads, vocab_size)
MODELS = {
    "llama-2-7b": dict(num_layers=32, n_head=32, hidden_dim=4096, vocab_size=32000,
                       num_key_value_heads=32, ffn_embed_dim=11008),
    "llama-2-13b": dict(num_layers=40, n_head=40, hidden_dim=5120, vocab_size=32000,
                        num_key_value_heads=40, ffn_embed_dim=13824),
    "llama-2-70b": dict(num_layers=80, n_head=64, hidden_dim=8192, vocab_size=32000,
                        num_key_value_heads=8, ffn_embed_dim=28672),
}
COMMIT = "d841e40aec8c84b9e76ba9cfbce67418adb172bd"  # the llm-analysis checked out
GPUS = ("h100-sxm-80gb", "a100-sxm-80gb")
DTYPES = ("w16a16e16", "w8a8e16", "w4a16e16")
BATCHES, SEQ_LENS, GENERATE = (1, 16), (512, 2048), 128
SUMMARY = ("prefill_num_flops_fwd_total", "decode_num_flops_fwd_total", "weight_memory_per_gpu",
           "weight_memory_embedding_per_gpu", "kv_cache_memory_per_gpu", "kv_cache_latency",
           "prefill_latency", "decode_latency", "num_params_total")
PARTS = ("latency_fwd_attn", "latency_fwd_mlp", "latency_fwd_layernorm",
         "latency_fwd_input_embedding", "latency_fwd_output_embedding_loss")


def _phase(a, batch: int, seq: int) -> dict:
    """The per-layer pieces of one forward at ``seq`` tokens a sequence."""
    return {"flops_attn_per_layer": a.get_num_flops_fwd_per_layer_attn(batch, seq),
            "flops_mlp_per_layer": a.get_num_flops_fwd_per_layer_mlp(batch, seq),
            "act_memory_attn_per_layer": a.get_activation_memory_per_layer_attn(batch, seq),
            "act_memory_mlp_per_layer": a.get_activation_memory_per_layer_mlp(batch, seq)}


def main() -> None:
    """Run llm-analysis over the grid and write its numbers, gzipped, beside this script."""
    from llm_analysis import analysis
    from llm_analysis.config import (
        DtypeConfig,
        ModelConfig,
        get_dtype_config_by_name,
        get_gpu_config_by_name,
    )

    logging.getLogger().setLevel(logging.ERROR)
    analysis.logger.setLevel(logging.ERROR)
    commit = COMMIT
    runs, refused = [], []
    for (name, cfg), gpu, dtype, batch, seq in itertools.product(
            MODELS.items(), GPUS, DTYPES, BATCHES, SEQ_LENS):
        model = ModelConfig(name=name, max_seq_len=4096, model_type="llama",
                            mlp_gated_linear_units=True, **cfg)
        d: DtypeConfig = get_dtype_config_by_name(dtype)
        a = analysis.LLMAnalysis(model, get_gpu_config_by_name(gpu), d)
        try:
            summary = a.inference(batch_size_per_gpu=batch, seq_len=seq,
                                  num_tokens_to_generate=GENERATE)
        except AssertionError as e:  # it refuses steps that do not fit its 80 GB
            refused.append({"model": name, "gpu": gpu, "dtype": dtype, "batch": batch,
                            "seq_len": seq, "why": str(e).split(",")[0]})
            continue
        attn, mlp, norm = a.get_weight_memory_per_layer(return_breakdown=True)[1:]
        runs.append({
            "model": name, "gpu": gpu, "dtype": dtype, "batch": batch, "seq_len": seq,
            "num_tokens_to_generate": GENERATE,
            "bits": {"weight": d.weight_bits, "activation": d.activation_bits,
                     "embedding": d.embedding_bits},
            "summary": {k: summary[k] for k in SUMMARY},
            "prefill": {**{k: summary["prefill_" + k] for k in PARTS}, **_phase(a, batch, seq)},
            "decode": {**{k: summary["decode_" + k] for k in PARTS}, **_phase(a, batch, 1)},
            "weight_memory_attn_per_layer": attn, "weight_memory_mlp_per_layer": mlp,
            "weight_memory_layernorm_per_layer": norm,
            "kv_cache_memory_per_layer_final": a.get_memory_kv_cache_per_layer(
                batch, seq + GENERATE),
            "TFLOPS_per_gpu": a.get_TFLOPS_per_gpu(),
            "hbm_bandwidth_GB_per_s": a.get_gpu_hbm_bandwidth()})
    gpus = {g: vars(get_gpu_config_by_name(g)) for g in GPUS}
    data = {
        "tool": "cli99/llm-analysis", "commit": commit,
        "api": "llm_analysis.analysis.LLMAnalysis(ModelConfig(..., mlp_gated_linear_units=True),"
               " get_gpu_config_by_name(gpu), get_dtype_config_by_name(dtype)).inference("
               "batch_size_per_gpu, seq_len, num_tokens_to_generate); efficiencies 1, no "
               "parallelism, kv_cache_dtype_bytes = activation bits / 8 (its default)",
        "made_by": "tests/data/make_llm_analysis_data.py",
        "units": "FLOPs; bytes; seconds; TFLOPS_per_gpu in 1e12 FLOP/s; hbm in 1e9 B/s",
        "per_layer_note": "'*_per_layer' values are one transformer layer's; 'prefill' and "
                          "'decode' hold its latency breakdown (whole model, seconds) and its "
                          "per-layer FLOPs and activation memory at seq_len = the prompt "
                          "(prefill) or 1 (decode, as inference() calls them); "
                          "kv_cache_memory_per_layer_final is at seq_len + num_tokens_to_generate",
        "model_configs": MODELS, "gpu_configs": gpus, "runs": runs, "refused": refused}
    out = Path(__file__).with_name(f"llm_analysis_{commit[:7]}.json.gz")
    out.write_bytes(gzip.compress(json.dumps(data, indent=0, sort_keys=True).encode(), mtime=0))
    print(f"{out.name}: {len(runs)} runs, {len(refused)} refused")


if __name__ == "__main__":
    main()
