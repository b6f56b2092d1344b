"""The exact check for every family: the NumPy twin runs each block (routing real tokens
through the experts, latent attention in both forms, sliding windows, the blockwise flash
kernel) and its counts equal the symbolic rows op by op, at byte widths 1, 2 and 4."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import symroof as sr
from symroof.models import MLA, MoE
from symroof.models.check import _numeric_config
from symroof.numeric import KVCache, count_params, forward, init_params

TINY = sr.model("tiny")  # D=64, F=172, L=2, H=8, G=2, d_h=8, V=256
MOE = dict(moe=MoE(E=4, k=2, F=24, norm_topk=True))
FAMILIES = {  # tiny versions of each family's blocks
    "gpt2": dict(norm="layer", act="gelu_tanh", gated=False, fused_qkv=True, qkv_bias=True,
                 o_bias=True, mlp_bias=True, positions="learned", max_position=32, tied=True),
    "gpt_neox": dict(norm="layer", act="gelu", gated=False, fused_qkv=True, qkv_bias=True,
                     o_bias=True, mlp_bias=True, rotary_dim=4, parallel_residual=True),
    "gemma": dict(act="gelu_tanh", tied=True, embed_scale=True, G=1, d_h=12),
    "gemma2": dict(act="gelu_tanh", tied=True, embed_scale=True, post_norms=True,
                   attn_softcap=50.0, final_softcap=30.0, window=3,
                   window_pattern=(True, False), d_h=12),
    "phi3": dict(fused_qkv=True, fused_gate_up=True, window=4),
    "mistral": dict(window=5),
    "mixtral": MOE,
    "qwen2_moe": dict(qkv_bias=True, moe=MoE(E=6, k=2, F=12, shared_F=24,
                                                shared_gate=True)),
    "deepseek_v3": dict(G=8, moe=MoE(E=8, k=2, F=12, shared_F=12, router="sigmoid",
                                        router_bias=True, groups=4, topk_groups=2,
                                        norm_topk=True, scale=2.5, dense_layers=1),
                        mla=MLA(kv_rank=16, d_nope=8, d_rope=4, d_v=6, q_rank=24)),
    "mla_naive": dict(G=8, mla=MLA(kv_rank=16, d_nope=8, d_rope=4, d_v=6, absorb=False)),
    "qwen3": dict(qk_norm=True, d_h=16),  # per-head q/k norms; d_h = 16, not D/H = 8
}
STEPS = [(2, 3, 4), (1, 1, 6), (2, 5, 0)]  # (batch, new tokens, cached): chunk, decode, prefill


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("attention", ["naive", "flash", "fused"])
def test_every_family_checks_exactly(family, attention):
    model = TINY.replace(**FAMILIES[family], attn_block=2)  # several KV blocks per row
    for batch, new, cached in STEPS:
        report = sr.check(model, batch, new, cached, attention=attention,
                          last_only=new == 1)
        assert report.ok, str(report)


@pytest.mark.parametrize("widths", [dict(w_bytes=1, act_bytes=1, kv_bytes=1),
                                    dict(w_bytes=4, act_bytes=4, kv_bytes=4),
                                    dict(w_bytes=1, act_bytes=4, kv_bytes=1),
                                    dict(w_bytes=4, act_bytes=2, kv_bytes=1)])
@pytest.mark.parametrize("family", ["llama", "deepseek_v3", "gemma2", "gpt2", "qwen3"])
def test_byte_widths_other_than_two(widths, family):
    model = TINY.replace(**FAMILIES.get(family, {}), **widths)
    for attention in ("naive", "fused"):
        report = sr.check(model, 2, 3, 4, attention=attention)
        assert report.ok, str(report)


def test_the_twin_routes_real_tokens_and_runs_only_visited_experts():
    model = TINY.replace(moe=MoE(E=8, k=1, F=16))
    report = sr.check(model, 1, 1, 3)  # one token, top-1: one expert per layer
    assert report.ok, str(report)
    one_expert = 2 * 3 * 64 * 16 * 2  # L, three matrices, D F, bf16
    assert sum(report.counted[k]["weight_bytes"] for k in ("moe/gate", "moe/up",
                                                          "moe/down")) == one_expert
    trace: list = []
    cfg = _numeric_config(model)
    forward(init_params(cfg), cfg, np.arange(12).reshape(2, 6), trace=trace)
    assert [int(t.sum()) for t in trace] == [12, 12] and len(trace[0]) == 8
    balanced = model.ops(2, 6, 0)["moe/up"]
    assert report.counted["moe/up"]["flops"] * 12 == balanced.flops  # FLOPs follow n k only


def test_twin_parameters_equal_the_symbolic_count():
    for family, fields in FAMILIES.items():
        model = TINY.replace(**fields)
        assert count_params(init_params(_numeric_config(model))) == model.params, family


@pytest.mark.parametrize("family", ["llama", "gemma2", "deepseek_v3", "mla_naive", "gpt2"])
def test_flash_equals_naive_and_a_cache_equals_recomputation(family):
    cfg = _numeric_config(TINY.replace(**FAMILIES.get(family, {}), attn_block=3))
    params = init_params(cfg)
    tokens = np.random.default_rng(1).integers(0, cfg.V, size=(2, 9))
    full = forward(params, cfg, tokens)
    assert np.allclose(forward(params, cfg, tokens, attention="flash"), full, atol=1e-12)
    cache = KVCache(cfg, 2)
    forward(params, cfg, tokens[:, :5], cache=cache)
    assert np.allclose(forward(params, cfg, tokens[:, 5:], cache=cache), full[:, 5:],
                       atol=1e-12)


def test_absorbed_latent_attention_equals_the_expanded_form():
    mla = FAMILIES["deepseek_v3"]["mla"]
    absorbed = _numeric_config(TINY.replace(G=8, mla=mla))
    expanded = absorbed.replace(mla=dataclasses.replace(absorbed.mla, absorb=False))
    params = init_params(absorbed)
    tokens = np.arange(14).reshape(2, 7)
    assert np.allclose(forward(params, absorbed, tokens), forward(params, expanded, tokens),
                       atol=1e-12)


def test_a_window_masks_what_it_should():
    cfg = _numeric_config(TINY.replace(window=2))
    params = init_params(cfg)
    a = np.array([[5, 6, 7, 8, 9]])
    b = np.array([[1, 2, 7, 8, 9]])  # differs only beyond a 2-token window of the last
    # the last token sees positions 3, 4 in layer 0, and through them 2 .. 4 in layer 1
    assert np.allclose(forward(params, cfg, a)[0, -1], forward(params, cfg, b)[0, -1])
    assert not np.allclose(forward(params, cfg, a)[0, 2], forward(params, cfg, b)[0, 2])


@st.composite
def family_configs(draw):
    G = draw(st.integers(1, 2))
    fields = dict(D=draw(st.integers(2, 10)), F=draw(st.integers(1, 10)),
                  L=draw(st.integers(1, 3)), H=G * draw(st.integers(1, 2)), G=G,
                  d_h=2 * draw(st.integers(1, 3)), V=draw(st.integers(2, 12)),
                  attn_block=draw(st.integers(1, 4)),
                  w_bytes=draw(st.sampled_from([1, 2, 4])),
                  act_bytes=draw(st.sampled_from([1, 2, 4])),
                  kv_bytes=draw(st.sampled_from([1, 2, 4])), name="random")
    if draw(st.booleans()):
        fields |= dict(window=draw(st.integers(1, 6)),
                       window_pattern=draw(st.sampled_from([(True,), (True, False),
                                                            (False, True)])))
    if draw(st.booleans()):
        E = draw(st.integers(1, 5))
        fields["moe"] = MoE(E=E, k=draw(st.integers(1, E)), F=draw(st.integers(1, 6)),
                               shared_F=draw(st.sampled_from([0, 3])),
                               norm_topk=draw(st.booleans()),
                               router=draw(st.sampled_from(["softmax", "sigmoid"])))
    if draw(st.booleans()):
        fields["mla"] = MLA(kv_rank=draw(st.integers(1, 6)), d_nope=draw(st.integers(1, 4)),
                               d_rope=draw(st.sampled_from([2, 4])),
                               d_v=draw(st.integers(1, 4)),
                               q_rank=draw(st.sampled_from([None, 3])),
                               absorb=draw(st.booleans()))
    else:
        fields |= dict(fused_qkv=draw(st.booleans()), qkv_bias=draw(st.booleans()),
                       rotary_dim=draw(st.sampled_from([None, 2])),
                       qk_norm=draw(st.booleans()))
    flags = ("gated", "o_bias", "mlp_bias", "post_norms", "embed_scale", "parallel_residual",
             "tied")
    fields |= {flag: draw(st.booleans()) for flag in flags}
    fields["fused_gate_up"] = fields["gated"] and draw(st.booleans())
    fields["norm"] = draw(st.sampled_from(["rms", "layer"]))
    fields["act"] = draw(st.sampled_from(["silu", "gelu_tanh", "gelu"]))
    fields["attn_softcap"] = draw(st.sampled_from([None, 20.0]))
    fields["final_softcap"] = draw(st.sampled_from([None, 10.0]))
    if draw(st.booleans()):
        fields |= dict(positions="learned", max_position=12)
    return sr.Transformer(**fields)


@settings(max_examples=25, deadline=None)
@given(model=family_configs(), batch=st.integers(1, 2), new_tokens=st.integers(1, 4),
       cached=st.integers(0, 7), attention=st.sampled_from(["naive", "flash", "fused"]),
       last_only=st.booleans())
def test_random_family_configs(model, batch, new_tokens, cached, attention, last_only):
    report = sr.check(model, batch, new_tokens, cached, attention=attention,
                      last_only=last_only)
    assert report.ok, str(report)


def test_the_twin_trains_every_family_and_names_what_it_does_not():
    from symroof.numeric import loss_and_grads

    cfg = _numeric_config(TINY.replace(**MOE))
    tokens = np.zeros((1, 3), dtype=int)
    loss, grads = loss_and_grads(init_params(cfg), cfg, tokens, tokens)
    assert np.isfinite(loss) and len(grads["layers"][0]["experts"]) == 4
    with pytest.raises(ValueError, match="runs SwiGLU experts; custom has act='gelu'"):
        loss_and_grads(init_params(cfg), cfg.replace(name="custom", act="gelu"), tokens, tokens)
