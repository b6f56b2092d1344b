"""The symbolic transformer: parameters, per-op rows, groups, crossovers, step times."""

import pytest
import sympy as sp

import symroof as sr
from symroof.models import MODELS, from_hf_config, group
from symroof.symbols import B, D, F, G, H, L, S, T, V, d_h

# Released checkpoints' parameter counts (model cards / safetensors index totals).
RELEASED = {
    "llama-3.1-8b": 8_030_261_248,
    "llama-3.1-70b": 70_553_706_496,
    "llama-3.1-405b": 405_853_388_800,
    "llama-2-7b": 6_738_415_616,
    "llama-2-13b": 13_015_864_320,
    "mistral-7b": 7_241_732_096,
}


@pytest.mark.parametrize("name, params", RELEASED.items())
def test_preset_parameter_counts(name, params):
    m = sr.model(name)
    assert m.params == params
    assert m.source.startswith("https://huggingface.co/")


def test_every_preset_loads_and_has_consistent_heads():
    for name, m in MODELS.items():
        assert sr.model(name.upper()) is m
        assert (m.H / m.G).is_integer
        assert m.params == sum(m.param_breakdown().values())


def test_symbolic_parameter_formulas():
    m = sr.Transformer()
    assert m.attn_params_per_layer == D * H * d_h + 2 * D * G * d_h + H * d_h * D
    assert m.mlp_params_per_layer == 3 * D * F
    assert sp.expand(m.params - (2 * V * D + L * (m.attn_params_per_layer + 3 * D * F + 2 * D)
                                 + D)) == 0
    assert m.kv_bytes_per_token == 4 * L * G * d_h  # K and V, bf16
    tied = sr.Transformer(tied=True)
    assert sp.expand(m.params - tied.params) == V * D


def test_total_is_sum_of_rows_and_groups_partition_rows():
    m = sr.Transformer()
    rows = m.ops(B, T, S - T)
    groups = group(rows)
    assert sp.expand(sum(rows.values()).flops - sum(groups.values()).flops) == 0
    assert sp.expand(sum(rows.values()).bytes - sum(groups.values()).bytes) == 0


def test_gqa_with_g_equal_h_is_mha_and_fused_flops_are_useful():
    mha = sr.Transformer(G=H)
    rows = mha.ops(B, 1, S - 1)
    assert rows["attn/k_proj"].flops == rows["attn/q_proj"].flops
    fused = sr.model("llama-3.1-8b").ops(1, 2048, 0, attention="fused")
    naive = sr.model("llama-3.1-8b").ops(1, 2048, 0, attention="naive")
    core = naive["attn/scores"] + naive["attn/softmax"] + naive["attn/av"]
    assert fused["attn/core"].flops == core.useful_flops
    assert fused["attn/core"].bytes < core.bytes  # scores never leave the chip


def test_decode_useful_equals_executed_prefill_about_half():
    m = sr.model("llama-3.1-8b")
    dec = m.ops(8, 1, 127)["attn/scores"]
    assert dec.flops == dec.useful_flops
    pre = m.ops(1, 2048, 0)["attn/scores"]
    assert pre.flops / pre.useful_flops == sp.Rational(2 * 2048, 2049)  # 2T / (T + 1)


@pytest.mark.parametrize("name, expected_k", [("llama-3.1-8b", 29), ("llama-3.1-70b", 53),
                                              ("llama-3.1-405b", 98)])
def test_ctx_star_matches_the_lecture(name, expected_k):
    assert round(float(sr.ctx_star(sr.model(name))) / 1000) == expected_k


def test_ctx_star_is_solved_symbolically():
    m = sr.Transformer()
    star = sr.ctx_star(m)
    assert sp.simplify(m.attn_flops_per_token(star) - 2 * m.matmul_params) == 0


def test_step_time_ratios_of_the_lecture():
    m, h100 = sr.model("llama-3.1-8b"), sr.chip("h100")
    # the seed's 1.06 divides the per-op sum (lm_head on the last position) by lecture 1's
    # whole-model formula (lm_head on all 2048 tokens); under one lm_head rule it is 1.14
    pre = sr.step_time(m, h100, 1, 2048, 0)
    seed = pre.per_op_sum / sr.time(m.whole(1, 2048, 0), h100, useful=True).lower
    assert round(float(seed), 2) == 1.06 and round(float(pre.ratio), 2) == 1.14
    assert round(float(sr.step_time(m, h100, 1, 1, 2047).ratio), 2) == 1.00
    assert round(float(sr.step_time(m, h100, 64, 1, 2047).ratio), 2) == 1.02


def test_int8_weights_halve_weight_bytes():
    m = sr.model("llama-3.1-8b")
    q = m.replace(w_bytes=1)
    assert q.ops(1, 1, 0)["mlp/up"].weight_bytes * 2 == m.ops(1, 1, 0)["mlp/up"].weight_bytes
    assert float(sr.kv_crossover(q, 1)) == pytest.approx(float(sr.kv_crossover(m, 1)) / 2)


@pytest.mark.parametrize("kwargs, message", [
    ({"H": 32, "G": 5}, r"H \(32\) must be divisible by G \(5\)"),
    ({"D": -4}, "D must be a positive integer.*-4"),
    ({"L": 0}, "L must be a positive integer.*0"),
    ({"w_bytes": 0}, "w_bytes must be a positive"),
])
def test_transformer_bad_input(kwargs, message):
    with pytest.raises(ValueError, match=message):
        sr.Transformer(**kwargs)


@pytest.mark.parametrize("args, message", [
    ((0, 1, 0), "batch must be a positive integer.*0"),
    ((-2, 1, 0), "batch must be a positive integer.*-2"),
    ((1.5, 1, 0), "batch must be a positive integer.*1.5"),
    ((1, 0, 0), "new_tokens must be a positive integer.*0"),
    ((1, 1, -1), "cached must be a non-negative integer.*-1"),
])
def test_ops_bad_input(args, message):
    with pytest.raises(ValueError, match=message):
        sr.model("tiny").ops(*args)


def test_unknown_model_lists_known():
    with pytest.raises(ValueError, match="unknown model 'llama-9'.*llama-3.1-8b.*tiny"):
        sr.model("llama-9")


def test_hf_config_errors(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        from_hf_config(bad)
    with pytest.raises(ValueError, match="not found"):
        from_hf_config(tmp_path / "missing.json")
    with pytest.raises(ValueError, match="model_type 'bert' is not supported.*deepseek_v3.*gpt2"):
        from_hf_config({"model_type": "bert"})
    with pytest.raises(ValueError, match="num_local_experts"):  # experts: model_type mixtral
        from_hf_config({"model_type": "mistral", "num_local_experts": 8})
    with pytest.raises(ValueError, match="missing field.*vocab_size"):
        from_hf_config({"model_type": "llama", "hidden_size": 8, "intermediate_size": 8,
                           "num_hidden_layers": 1, "num_attention_heads": 2})


def test_qwen2_config_has_qkv_bias():
    qwen = from_hf_config({"model_type": "qwen2", "hidden_size": 896,
                              "intermediate_size": 4864, "num_hidden_layers": 24,
                              "num_attention_heads": 14, "num_key_value_heads": 2,
                              "vocab_size": 151936, "tie_word_embeddings": True})
    assert qwen.qkv_bias and qwen.tied
    assert qwen.params == 494_032_768  # Qwen2-0.5B, released checkpoint


LLAMA2_7B = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008,
             "num_hidden_layers": 32, "num_attention_heads": 32, "vocab_size": 32000}


@pytest.mark.parametrize("field, value", [
    ("num_attention_heads", 0), ("hidden_size", "4096"), ("hidden_size", [4096]),
    ("num_attention_heads", None), ("num_key_value_heads", 0), ("head_dim", 0),
    ("intermediate_size", 11008.0), ("tie_word_embeddings", "false"),
])
def test_hf_config_malformed_fields_are_named(field, value):
    with pytest.raises(ValueError, match=f"config field '{field}' must be .*{value!r}"):
        from_hf_config({**LLAMA2_7B, field: value})


def test_hf_config_null_kv_heads_means_mha_and_bad_files_are_named(tmp_path):
    assert from_hf_config({**LLAMA2_7B, "num_key_value_heads": None}).G == 32
    binary = tmp_path / "config.json"
    binary.write_bytes(b"\xff\xfe{\x00")
    with pytest.raises(ValueError, match="config.json.*not UTF-8"):
        from_hf_config(binary)
    with pytest.raises(ValueError, match="is a folder"):
        from_hf_config(tmp_path)


def test_sliding_window_is_read_and_modelled():
    cfg = {**LLAMA2_7B, "model_type": "mistral", "sliding_window": 4096}
    assert from_hf_config(cfg).window == 4096
    assert from_hf_config({**cfg, "use_sliding_window": False}).window is None
    mistral = sr.model("mistral-7b")
    full = mistral.replace(window=None)
    assert mistral.ops(1, 1, 4095) == full.ops(1, 1, 4095)  # the whole window: no change
    past = mistral.ops(1, 1, 10_000)["attn/scores"]  # decode at S = 10001 reads 4096 keys
    assert past == full.ops(1, 1, 4095)["attn/scores"]
    assert mistral.whole(8, 1, 10_000).kv_bytes == 8 * 4096 * mistral.kv_bytes_per_token


@pytest.mark.parametrize("flag", ["tied", "qkv_bias"])
def test_flags_must_be_booleans(flag):
    with pytest.raises(ValueError, match=f"{flag} must be True or False, got 'yes'"):
        sr.Transformer(**{flag: "yes"})


def test_bad_positions_name_the_allowed_ones_as_words():
    import pytest

    from symroof.models import Transformer

    with pytest.raises(ValueError, match=r"^positions must be one of rope, learned, got 'alibi'$"):
        Transformer(positions="alibi")


def test_bad_choices_list_the_allowed_ones_as_words():
    # "one of naive, fused, flash", never a tuple repr "('naive', 'fused', 'flash')"
    import pytest

    import symroof as sr
    from symroof.models import MoE

    cases = ((lambda: sr.model("tiny").ops(1, 1, 0, attention="slow"),
              "attention must be one of naive, fused, flash, got 'slow'"),
             (lambda: sr.check(sr.model("tiny"), 1, 1, attention="slow"),
              "attention must be one of naive, fused, flash, got 'slow'"),
             (lambda: MoE(E=8, k=2, F=16, router="topk"),
              "MoE router must be one of softmax, sigmoid, got 'topk'"),
             (lambda: sr.model("mixtral-8x7b").ops(1, 1, 0, tokens_per_expert="even"),
              "tokens_per_expert must be one of balanced, worst, None, or counts per expert"))
    for make, words in cases:
        with pytest.raises(ValueError) as err:
            make()
        assert words in str(err.value), str(err.value)
