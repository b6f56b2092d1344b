"""Each family's derived quantities pinned to values computed here, from the released
``config.json`` (tests/data, copied from the Hugging Face Hub) by an independent formula:
the parameters a decode token's matmuls touch (a mixture of experts: its k routed experts,
not all E), ctx* (the context where decode attention FLOPs equal the matmul FLOPs) and the
whole-model weight bytes of one decode step at batch 1.

The formulas are written from the architectures, not from symroof's code:

* attention: q and o are D x H d_h, k and v are D x G d_h;
* MLP: gated (SwiGLU / GeGLU) 3 D F, plain (GPT-2, NeoX) 2 D F; a mixture of experts runs
  k experts of 3 D F_e, its shared expert 3 D F_s (and a D x 1 gate where the config has
  one), and a D x E router; the lm_head is D x V (tied or not, it is a matmul);
* decode attention: QK^T and AV, 2 FLOPs per multiply-add, 4 H d_h L per context token,
  so ctx* = 2 P / (4 H d_h L) = P / (2 H d_h L).
"""

import json
from fractions import Fraction
from pathlib import Path

import pytest

import symroof as sr
from symroof.models import from_hf_config

DATA = Path(__file__).parent / "data"

#: preset -> (config file in tests/data, MLP kind)
FAMILIES = {
    "llama-3.1-8b": ("llama-3.1-8b", "gated"),
    "llama-2-7b": ("llama-2-7b", "gated"),
    "mistral-7b": ("mistral-7b-v0.1", "gated"),
    "mixtral-8x7b": ("mixtral-8x7b", "moe"),
    "qwen1.5-moe-a2.7b": ("qwen1.5-moe-a2.7b", "moe"),
    "gemma-7b": ("gemma-7b", "gated"),
    "gemma-2-9b": ("gemma-2-9b", "gated"),
    "gpt2": ("gpt2", "plain"),
    "pythia-160m": ("pythia-160m", "plain"),
    "phi-3-mini": ("phi-3-mini-4k-instruct", "gated"),
    "qwen3-8b": ("qwen3-8b", "gated"),
}
#: sliding windows cap the attended context, so ctx* is not P / (2 H d_h L) there
WINDOWED = {"mistral-7b", "gemma-2-9b", "phi-3-mini"}


def dims(cfg: dict) -> dict:
    D = cfg.get("hidden_size", cfg.get("n_embd"))
    H = cfg.get("num_attention_heads", cfg.get("n_head"))
    return {"D": D, "H": H, "G": cfg.get("num_key_value_heads") or H,
            "L": cfg.get("num_hidden_layers", cfg.get("n_layer")),
            "d_h": cfg.get("head_dim") or D // H, "V": cfg["vocab_size"],
            "F": cfg.get("intermediate_size") or cfg.get("n_inner") or 4 * D}


def matmul_params(cfg: dict, kind: str) -> int:
    d = dims(cfg)
    D, H, G, d_h = d["D"], d["H"], d["G"], d["d_h"]
    attention = 2 * D * H * d_h + 2 * D * G * d_h
    if kind == "plain":
        mlp = 2 * D * d["F"]
    elif kind == "gated":
        mlp = 3 * D * d["F"]
    else:
        E = cfg.get("num_local_experts", cfg.get("num_experts"))
        k = cfg["num_experts_per_tok"]
        F_e = cfg.get("moe_intermediate_size", cfg["intermediate_size"])
        F_s = cfg.get("shared_expert_intermediate_size", 0)
        gate = D if F_s and cfg.get("model_type") == "qwen2_moe" else 0  # shared_expert_gate
        mlp = k * 3 * D * F_e + 3 * D * F_s + gate + D * E
    return d["L"] * (attention + mlp) + D * d["V"]


def config(name: str) -> dict:
    return json.loads((DATA / f"{FAMILIES[name][0]}.config.json").read_text())


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_matmul_params_and_decode_weight_bytes(name):
    cfg, kind = config(name), FAMILIES[name][1]
    P = matmul_params(cfg, kind)
    m = sr.model(name)
    assert m.matmul_params == P
    assert m.whole(1, 1, 2047).weight_bytes == 2 * P  # bf16 weights, batch 1
    assert from_hf_config(cfg).matmul_params == P  # the config reads as the preset


@pytest.mark.parametrize("name", sorted(set(FAMILIES) - WINDOWED))
def test_ctx_star(name):
    cfg, kind = config(name), FAMILIES[name][1]
    d = dims(cfg)
    expected = Fraction(matmul_params(cfg, kind), 2 * d["H"] * d["d_h"] * d["L"])
    assert sr.ctx_star(sr.model(name)) == expected


def test_mixtral_uses_k_experts_not_all():
    # the figures: ctx* 48,632 and 25.5 GB of decode weights at batch 1 (all 8
    # experts would give 177,656 and 93 GB)
    m = sr.model("mixtral-8x7b")
    assert sr.ctx_star(m) == 48632
    assert round(float(m.whole(1, 1, 2047).weight_bytes) / 10**9, 1) == 25.5
