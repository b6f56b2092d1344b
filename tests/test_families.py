"""The families beyond Llama, symbolic side: released parameter counts, Hugging Face config
import, and the identities their rows must keep (a window that is never reached changes
nothing, MoE rows follow the routing, MLA's absorbed form caches the latent)."""

import dataclasses
import re
from pathlib import Path

import pytest
import sympy as sp

import symroof as sr
from symroof.models import MoE, from_hf_config, group
from symroof.models.attention_rows import blocks, context
from symroof.symbols import B, S, T

DATA = Path(__file__).parent / "data"

# Released checkpoints' parameter counts, each from a source outside symroof.
# keras-hub: keras_hub/src/models/<family>/<family>_presets.py, "params" of the preset.
RELEASED = {  # preset: (config file, parameters, source)
    "mixtral-8x7b": ("mixtral-8x7b", 46_702_792_704,
                     "keras-hub mixtral_8_7b_en; HF safetensors total of Mixtral-8x7B"),
    "qwen1.5-moe-a2.7b": ("qwen1.5-moe-a2.7b", 14_315_784_192,
                          "keras-hub qwen1.5_moe_2.7b_en"),
    "deepseek-v3": ("deepseek-v3", 671_026_419_200,
                    "DeepSeek-V3 README: 671B main model (685B on HF with the 14B MTP "
                    "module); exact: recounts of the checkpoint's tensor headers, MTP and "
                    "fp8 scales excluded"),
    "gemma-7b": ("gemma-7b", 8_537_680_896, "keras-hub gemma_7b_en"),
    "gemma-2-9b": ("gemma-2-9b", 9_241_705_984,
                   "keras-hub gemma2_9b_en; HF safetensors total of google/gemma-2-9b"),
    "gpt2": ("gpt2", 124_439_808, "transformers GPT2LMHeadModel.num_parameters()"),
    "pythia-160m": ("pythia-160m", 162_322_944,
                    "Pythia model card, 'Naming convention and parameter count' table"),
    "phi-3-mini": ("phi-3-mini-4k-instruct", 3_821_079_552,
                   "keras-hub phi3_mini_4k_instruct_en; HF safetensors of Phi-3-mini-4k"),
    "qwen3-8b": ("qwen3-8b", 8_190_735_360,
                 "HF model.safetensors.index.json of Qwen/Qwen3-8B: total_size "
                 "16,381,470,720 bytes of bf16"),
    "qwen3-0.6b": ("qwen3-0.6b", 596_049_920,
                   "transformers: sum of p.numel() over Qwen/Qwen3-0.6B's parameters; "
                   "llama.cpp's param_count of its GGUF"),
}


@pytest.mark.parametrize("name", RELEASED)
def test_released_parameter_counts_from_presets_and_configs(name):
    config, params, _source = RELEASED[name]
    preset, read = sr.model(name), from_hf_config(DATA / f"{config}.config.json")
    assert preset.params == read.params == params
    assert preset.params == sum(preset.param_breakdown().values())
    assert preset.source.startswith("https://huggingface.co/")
    # the config reads to the preset's rows (widths aside: configs state their dtype)
    same = read.replace(w_bytes=2, act_bytes=2, kv_bytes=2, name=name, source="", notes=())
    assert same.ops(2, 3, 5) == preset.replace(w_bytes=2).ops(2, 3, 5)


def test_qwen3_as_its_release_says():
    """Per-head q/k RMSNorms of width d_h (2 d_h parameters a layer), head_dim = 128 where
    D/H is 64 (0.6B) or 128 (8B); the model cards' counts, and the safetensors totals of
    Qwen3-4B and Qwen3-32B (bf16 bytes / 2) read from their configs."""
    q8, q06 = sr.model("qwen3-8b"), sr.model("qwen3-0.6b")
    for m, non_embedding in ((q8, 6.95), (q06, 0.44)):  # "Non-Embedding" on the model cards
        assert m.qk_norm and m.d_h == 128
        embedding = m.V * m.D * (1 if m.tied else 2)
        assert round(int(m.params - embedding) / 1e9, 2) == non_embedding
    assert q06.D // q06.H == 64 and q8.attn_params_per_layer - sr.model(
        "qwen3-8b").replace(qk_norm=False).attn_params_per_layer == 2 * 128
    base = {"model_type": "qwen3", "head_dim": 128, "vocab_size": 151936,
            "num_key_value_heads": 8}
    for (D, F, L, H, tied), total in (((2560, 9728, 36, 32, True), 8_044_936_192),
                                      ((5120, 25600, 64, 64, False), 65_524_246_528)):
        m = from_hf_config(base | {"hidden_size": D, "intermediate_size": F,
                                      "num_hidden_layers": L, "num_attention_heads": H,
                                      "tie_word_embeddings": tied})
        assert 2 * m.params == total  # Qwen3-4B and Qwen3-32B safetensors index total_size
    rows = q8.ops(1, 1, 4095)
    assert rows["attn/q_norm"].flops == 36 * 32 * (4 * 128 + 2)  # L H rows of d_h
    assert rows["attn/k_norm"].weight_bytes == 36 * 128 * 2


def test_parts_that_sources_state_too():
    pythia = sr.model("pythia-160m").param_breakdown()  # the card's non-embedding params
    assert sum(pythia.values()) - pythia["embedding"] - pythia["lm_head"] == 85_056_000
    mixtral, qwen, ds = (sr.model(n) for n in ("mixtral-8x7b", "qwen1.5-moe-a2.7b",
                                               "deepseek-v3"))
    assert round(int(mixtral.active_params) / 1e9, 1) == 12.9  # Mistral: 12.9B active
    assert round(int(qwen.active_params) / 1e9, 1) == 2.7     # "A2.7B"
    assert int(ds.active_params) // 10**9 == 37               # DeepSeek-V3: 37B activated
    assert ds.kv_bytes_per_token == 61 * (512 + 64) * 2    # the latent and the RoPE key


def test_unknown_model_type_lists_the_known_and_missing_fields_are_named():
    with pytest.raises(ValueError, match=r"model_type 'mamba' is not supported \(supported: "
                                         r"deepseek_v3, gemma, gemma2, gpt2, gpt_neox, llama, "
                                         r"mistral, mixtral, phi3, qwen2, qwen2_moe, qwen3\)"):
        from_hf_config({"model_type": "mamba"})
    with pytest.raises(ValueError, match=r"^config: config field 'model_type' must be a string, "
                                         r"got \["):  # not "unhashable type: 'list'"
        from_hf_config({"model_type": ["llama"]})
    for config, field in [("mixtral-8x7b", "num_local_experts"), ("gpt2", "n_positions"),
                          ("deepseek-v3", "kv_lora_rank"), ("qwen1.5-moe-a2.7b", "num_experts"),
                          ("gemma-2-9b", "head_dim"), ("pythia-160m", "intermediate_size"),
                          ("phi-3-mini-4k-instruct", "vocab_size")]:
        cfg = sr.models.presets.json.loads((DATA / f"{config}.config.json").read_text())
        del cfg[field]
        if field == "head_dim":  # Gemma's 256 is not D / H: without it D / H is taken
            assert from_hf_config(cfg).d_h == 3584 // 16
            continue
        with pytest.raises(ValueError, match=rf"missing field\(s\) {field} "):
            from_hf_config(cfg)
    with pytest.raises(ValueError, match="'hidden_act' = 'relu'"):
        from_hf_config({**_cfg("pythia-160m"), "hidden_act": "relu"})
    with pytest.raises(ValueError, match="'n_layer' must be a positive integer.*'12'"):
        from_hf_config({**_cfg("gpt2"), "n_layer": "12"})


def _cfg(name):
    return sr.models.presets.json.loads((DATA / f"{name}.config.json").read_text())


def test_family_fields_read_from_configs():
    gemma2, neox = from_hf_config(_cfg("gemma-2-9b")), from_hf_config(_cfg("pythia-160m"))
    assert (gemma2.window, gemma2.window_pattern, gemma2.local_layers) == (4096, (True, False),
                                                                           21)
    assert gemma2.attn_softcap == 50 and gemma2.final_softcap == 30 and gemma2.post_norms
    assert gemma2.w_bytes == 4  # the base checkpoint is float32
    assert (neox.rotary, neox.parallel_residual, neox.act) == (16, True, "gelu")
    ds = from_hf_config(_cfg("deepseek-v3"))
    assert ds.w_bytes == 1 and "multi-token-prediction" in ds.notes[0]
    assert (ds.moe.dense_layers, ds.moe.groups, ds.moe.scale) == (3, 8, sp.Rational(5, 2))
    assert from_hf_config(_cfg("qwen1.5-moe-a2.7b")).window is None  # use_sliding_window
    assert from_hf_config(_cfg("phi-3-mini-4k-instruct")).window == 2047


def test_window_context_pairs_and_blocks():
    for c, t, w in [(0, 9, 4), (7, 3, 4), (2, 1, 8), (20, 5, 3), (0, 1, 1)]:
        rows = range(c, c + t)
        seen = [range(max(0, p - w + 1), p + 1) for p in rows]  # the keys each row sees
        assert context(t, c, w) == (len(set().union(*seen)), sum(len(r) for r in seen))
        for b in (1, 2, 3, 8):
            assert blocks(t, c, w, b) == sum(len({k // b for k in r}) for r in seen)
    assert context(T, S - T, None) == (S, T * (S - T) + T * (T + 1) / 2)


def test_a_window_past_the_context_changes_nothing_and_gemma2_halves():
    m = sr.model("gemma-2-9b")
    glob = m.replace(window=None)
    for attention in ("naive", "fused", "flash"):
        assert m.ops(1, 100, 3000, attention=attention) == glob.ops(1, 100, 3000,
                                                                    attention=attention)
    far, near = m.ops(1, 1, 20_000, attention="fused"), glob.ops(1, 1, 4095, attention="fused")
    g20k = glob.ops(1, 1, 20_000, attention="fused")["attn/core"]
    assert far["attn/core"] == (near["attn/core"] + g20k) * sp.Rational(1, 2)  # 21 + 21
    assert m.attn_flops_per_token(S).has(sp.Min)


def test_moe_rows_follow_the_routing():
    m = sr.model("mixtral-8x7b")
    bal, worst = m.ops(1, 1, 99), m.ops(1, 1, 99, tokens_per_expert="worst")
    assert bal["moe/gate"].flops == worst["moe/gate"].flops == 32 * 2 * 2 * 4096 * 14336
    assert bal["moe/up"].weight_bytes == worst["moe/up"].weight_bytes  # n k = 2: 2 experts
    big = m.ops(64, 1, 99)
    assert big["moe/up"].weight_bytes == 32 * 8 * 4096 * 14336 * 2  # every expert read
    assert m.ops(64, 1, 99, tokens_per_expert="worst")["moe/up"].weight_bytes * 4 \
        == big["moe/up"].weight_bytes
    counts = [[2, 2, 0, 0, 0, 0, 0, 0]] * 32  # both tokens to experts 0 and 1
    two = m.ops(2, 1, 9, tokens_per_expert=counts)["moe/down"]
    assert two.weight_bytes == 32 * 2 * 14336 * 4096 * 2
    assert two.flops == 32 * 2 * (2 * 2) * 14336 * 4096
    assert (m.busiest_expert(2, 1, counts), m.busiest_expert(64, 1, "worst")) == (2, 64)
    with pytest.raises(ValueError, match="adds up to 1"):
        m.ops(2, 1, 9, tokens_per_expert=[1, 0, 0, 0, 0, 0, 0, 0])
    with pytest.raises(ValueError, match="an expert got 3 tokens of a step of n = 2"):
        m.ops(2, 1, 9, tokens_per_expert=[3, 1, 0, 0, 0, 0, 0, 0])
    with pytest.raises(ValueError, match="gives 2 layers of counts"):
        m.ops(1, 1, 9, tokens_per_expert=[[1, 1, 0, 0, 0, 0, 0, 0]] * 2)
    sym = sr.Transformer(moe=MoE(E=8, k=2, F=100))
    assert sym.ops(B, T, 0)["moe/up"].weight_bytes.has(sp.Min)  # min(E, n k) experts
    assert sp.expand(sym.matmul_params - sr.Transformer().matmul_params) != 0


def test_mla_forms_cache_and_matmuls():
    ds = sr.model("deepseek-v3")
    naive = ds.replace(mla=dataclasses.replace(ds.mla, absorb=False))
    assert naive.kv_bytes_per_token == 61 * 128 * (192 + 128) * 2  # every head's k and v
    dec, exp = ds.ops(1, 1, 4095, attention="fused"), naive.ops(1, 1, 4095, attention="fused")
    assert dec["attn/core"].kv_bytes * 128 * 320 == exp["attn/core"].kv_bytes * 576
    assert ds.matmul_params == naive.matmul_params and ds.params == naive.params
    assert "attn/q_absorb" in dec and "attn/kv_b_proj" in exp


def test_flash_and_fused_share_bytes_and_groups_cover_every_family():
    for name in ("mixtral-8x7b", "deepseek-v3", "gemma-2-9b", "gpt2", "pythia-160m",
                 "phi-3-mini", "qwen1.5-moe-a2.7b"):
        m = sr.model(name)
        fused, flash = m.ops(2, 7, 300, attention="fused"), m.ops(2, 7, 300, attention="flash")
        assert fused["attn/core"].bytes == flash["attn/core"].bytes
        rows = m.ops(B, T, S - T)
        assert sp.expand(sum(rows.values()).flops - sum(group(rows).values()).flops) == 0


@pytest.mark.parametrize("name", ["mixtral-8x7b", "deepseek-v3", "gemma-2-9b", "gpt2"])
def test_reports_of_the_families_compile(name):
    m, h100 = sr.model(name), sr.chip("h100")
    fast = sr.roofline_table(m, h100, batch=4, new_tokens=1, cached=9000)
    exact = group(m.ops(4, 1, 9000, last_only=True, attention="fused"))
    assert sum(exact.values()).flops == fast.total.flops


def test_training_rows_cover_every_family_and_name_what_they_do_not():
    assert "bwd/moe/route" in sr.train_ops(sr.model("mixtral-8x7b"), 1, 8)
    assert "bwd/attn/k_rope_sum" in sr.train_ops(sr.model("deepseek-v3"), 1, 8)
    with pytest.raises(ValueError, match="deepseek-v3's latent attention trains with "
                                         "attention='naive', not 'fused'"):
        sr.train_ops(sr.model("deepseek-v3"), 1, 8, attention="fused")


def test_gemma2_softcaps_are_exact_in_the_preset_and_from_its_config():
    # google/gemma-2-9b config.json: attn_logit_softcapping 50.0, final_logit_softcapping 30.0
    for m in (sr.model("gemma-2-9b"), from_hf_config(_cfg("gemma-2-9b"))):
        assert (m.attn_softcap, m.final_softcap) == (50, 30)
        assert all(isinstance(c, sp.Integer) for c in (m.attn_softcap, m.final_softcap))
    assert sr.Transformer(attn_softcap=12.5).attn_softcap == sp.Rational(25, 2)


@pytest.mark.parametrize("field", ["n_shared_experts", "first_k_dense_replace"])
def test_deepseek_counts_are_checked_naming_the_field(field):
    config = _cfg("deepseek-v3")
    for bad in ("1", -1, 1.5, True):
        with pytest.raises(ValueError, match=f"^config: config field '{field}' must be an "
                           f"integer >= 0, got {re.escape(repr(bad))}$"):
            from_hf_config({**config, field: bad})
    none = from_hf_config({**config, field: 0}).moe  # 0 is a count: no shared expert, no
    assert (none.shared_F, none.dense_layers)[field == "first_k_dense_replace"] == 0  # dense


def test_deepseek_routed_scaling_factor_is_checked_naming_the_field():
    config = _cfg("deepseek-v3")  # its config.json: routed_scaling_factor 2.5
    assert from_hf_config(config).moe.scale == sp.Rational(5, 2)  # made exact
    for bad in ("2.5", 0, -1.0, True, None):
        with pytest.raises(ValueError, match="config field 'routed_scaling_factor' must be a "
                           f"positive number, got {re.escape(repr(bad))}$"):
            from_hf_config({**config, "routed_scaling_factor": bad})
