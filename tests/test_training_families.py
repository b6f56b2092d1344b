"""Every dense family trains in the NumPy twin and its counted step equals ``train_ops``
row by row: GPT-2, GPT-NeoX (Pythia), Gemma, Gemma-2, Phi-3, Qwen3 and Mistral's window,
each as its preset with the widths shrunk; byte widths of weights, activations, gradients,
optimizer moments and master copies drawn apart; the gradients checked by finite
differences; one planted miscount per family caught and named."""

import numpy as np
import pytest
from finite_differences import assert_gradients_match
from hypothesis import given, settings
from hypothesis import strategies as st

import symroof as sr
from symroof.models import MODELS, REMAT_POLICIES, saved_activations
from symroof.models.check import _numeric_config
from symroof.models.training import matmul_keys
from symroof.numeric import Config, Counter, init_params, loss_and_grads

POLICIES = list(REMAT_POLICIES)


def _small(name: str, **extra) -> sr.Transformer:
    """The preset with its switches, heads shrunk to H = 4 (MHA stays MHA, GQA gets G = 2),
    widths to D = 8, F = 12, d_h = 4, V = 16, L = 2; a window of 3 (sequences run past it)."""
    m = sr.model(name)
    return m.replace(D=8, F=12, L=2, H=4, G=4 if m.G == m.H else 2, d_h=4, V=16,
                     window=None if m.window is None else 3,
                     rotary_dim=None if m.rotary_dim is None else 2,
                     max_position=8 if m.positions == "learned" else None, **extra)


#: family -> a row only its blocks have (the planted miscount's row)
FAMILIES = {"gpt2": "bwd/pos_embed", "pythia-160m": "bwd/mlp/gelu", "gemma-7b": "bwd/mlp/geglu",
            "gemma-2-9b": "bwd/logit_softcap", "phi-3-mini": "bwd/mlp/gate_up/dw",
            "qwen3-0.6b": "bwd/attn/q_norm", "mistral-7b": "bwd/attn/softmax"}
#: one preset per dense family of blocks (its switches, windowed or not), read off the
#: presets: a new family's preset trains exactly here without being named
DENSE = sorted({(m.features, m.window is not None): name for name, m in
                reversed(MODELS.items()) if m.moe is None and m.mla is None}.values())
#: (w_bytes, act_bytes, grad_bytes, moment_bytes, master_bytes): each kind at 1, 2 and 4,
#: no two kinds at one width in a row (a figure booked at another kind's width shows)
WIDTHS = [(1, 2, 4, 1, 0), (2, 4, 1, 2, 4), (4, 1, 2, 4, 2)]


def test_every_named_family_is_a_dense_family():
    assert set(FAMILIES) <= set(DENSE) and len(DENSE) >= len(FAMILIES) + 1  # + Llama's


@pytest.mark.parametrize("name", DENSE)
@pytest.mark.parametrize("i", range(len(WIDTHS)))
def test_every_family_trains_exactly_at_widths_1_2_4(name, i):
    w, a, g, mo, ma = WIDTHS[i]
    model = _small(name).replace(w_bytes=w, act_bytes=a)
    remat = POLICIES[(i + DENSE.index(name)) % len(POLICIES)]  # each policy somewhere
    report = sr.check_training(model, 2, 5, remat, grad_bytes=g, moment_bytes=mo,
                               master_bytes=ma)
    assert report.ok, str(report)
    assert name not in FAMILIES or FAMILIES[name] in report.rows


@pytest.mark.parametrize("name, row", FAMILIES.items())
def test_a_row_the_twin_counts_differently_is_caught_per_family(name, row, monkeypatch):
    """Plant one FLOP more in the twin's count of the family's own row."""
    op = Counter.op

    def miscount(self, key):
        scope = op(self, key)
        if key == row:
            scope._tally(1, 1)
        return scope

    monkeypatch.setattr(Counter, "op", miscount)
    report = sr.check_training(_small(name), 1, 4, "selective")
    assert [(m.op, m.quantity) for m in report.mismatches] == [(row, "flops"),
                                                              (row, "useful_flops")]


@pytest.mark.parametrize("name", FAMILIES)
def test_every_family_gradient_matches_finite_differences(name):
    cfg = _numeric_config(_small(name))
    if name == "gemma-2-9b":  # caps that bend the scores and logits of a tiny model
        cfg = cfg.replace(attn_softcap=0.5, final_softcap=1.0)
    params = init_params(cfg, seed=1)
    rng = np.random.default_rng(0)
    tokens, targets = rng.integers(0, cfg.V, (2, 5, 2)).transpose(2, 0, 1)
    _, grads = loss_and_grads(params, cfg, tokens, targets, "matmul_outputs")
    assert_gradients_match(params, cfg, tokens, targets, grads, rng, rel=1e-5)


@st.composite
def dense_configs(draw):
    """A model over the dense families' switches (any mix of them)."""
    G = draw(st.sampled_from([1, 2]))
    fields = dict(D=draw(st.integers(2, 8)), F=draw(st.integers(1, 8)), L=draw(st.integers(1, 2)),
                  H=G * draw(st.integers(1, 2)), G=G, d_h=2 * draw(st.integers(1, 2)),
                  V=draw(st.integers(2, 12)), name="random",
                  w_bytes=draw(st.sampled_from([1, 2, 4])),
                  act_bytes=draw(st.sampled_from([1, 2, 4])))
    flags = ("tied", "qkv_bias", "gated", "fused_qkv", "o_bias", "mlp_bias",
             "parallel_residual", "post_norms", "embed_scale", "qk_norm")
    fields |= {flag: draw(st.booleans()) for flag in flags}
    fields["fused_gate_up"] = fields["gated"] and draw(st.booleans())
    fields["norm"] = draw(st.sampled_from(["rms", "layer"]))
    fields["act"] = draw(st.sampled_from(["silu", "gelu_tanh", "gelu"]))
    fields["attn_softcap"] = draw(st.sampled_from([None, 2.0]))
    fields["final_softcap"] = draw(st.sampled_from([None, 3.0]))
    if draw(st.booleans()):
        fields["window"] = draw(st.integers(1, 4))
        fields["window_pattern"] = draw(st.sampled_from([(True,), (True, False)]))
    if draw(st.booleans()):
        fields |= dict(positions="learned", max_position=6)
    elif draw(st.booleans()):
        fields["rotary_dim"] = 2
    return sr.Transformer(**fields)


WIDTH = st.sampled_from([1, 2, 4])


@settings(max_examples=20, deadline=None)
@given(model=dense_configs(), batch=st.integers(1, 2), seq=st.integers(1, 6),
       remat=st.sampled_from(POLICIES), grad=WIDTH, moment=WIDTH,
       master=st.sampled_from([0, 1, 2, 4]))
def test_random_dense_family_configs(model, batch, seq, remat, grad, moment, master):
    report = sr.check_training(model, batch, seq, remat, grad_bytes=grad, moment_bytes=moment,
                               master_bytes=master)
    assert report.ok, str(report)


def test_gpt2_keeps_megatrons_activations_without_dropout():
    """Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer
    Models", eq. 1): a GPT layer keeps 34*s*b*h + 5*a*s^2*b bytes in 16 bits, with dropout.
    Without it the three masks (s*b*h twice, a*s^2*b) and the attention dropout's output
    (2*a*s^2*b) go: 32*s*b*h + 2*a*s^2*b; selective recomputation leaves 32*s*b*h."""
    gpt2, s, b = sr.model("gpt2"), 1024, 8  # h = 768, a = 12 heads (its released config)
    per_layer = {remat: sum(v for k, v in saved_activations(gpt2, b, s, remat).items()
                            if k not in ("final_input", "final_norm", "lm_head", "loss")) / 12
                 for remat in ("none", "selective")}
    assert per_layer["none"] == 32 * s * b * 768 + 2 * 12 * s**2 * b
    assert per_layer["selective"] == 32 * s * b * 768


BIASED = {"gpt2": 3 * 768 + 768 + 3072 + 768, "pythia-160m": 3 * 768 + 768 + 3072 + 768}


@pytest.mark.parametrize("name", [n for n, m in MODELS.items() if m.moe is None
                                  and m.mla is None])
def test_every_dense_preset_trains_at_six_params_plus_biases(name):
    """The 6ND rule from the rows of each dense preset: weight matmuls forward, dX and dW
    are 6 x matmul params x tokens, plus each bias's n adds forward and n - 1 in its dW
    (GPT-2 and Pythia: qkv 3D, o D, up 4D, down D, D = 768, their released configs)."""
    m, S = sr.model(name), 512
    rows = sr.train_ops(m, 1, S)
    matmuls = sum(rows[f"{p}/{k}{d}"].flops for k in matmul_keys(m)
                  for p, d in (("fwd", ""), ("bwd", "/dx"), ("bwd", "/dw")))
    assert matmuls == 6 * m.matmul_params * S + m.L * (2 * S - 1) * BIASED.get(name, 0)


#: what the weight-matmul rows add to 6 x matmul params x tokens, per layer and token S:
#: qkv biases' n adds forward and n - 1 in dW; Qwen1.5-MoE's shared-expert gate vector
#: (D = 2048, in matmul_params, run in the elementwise ``moe/shared/scale``) and its qkv
#: bias (16 heads x 3 x 128 = 6144), its released config
MOE_MLA_EXTRA = {"mixtral-8x7b": lambda S: 0, "deepseek-v3": lambda S: 0,
                 "qwen1.5-moe-a2.7b": lambda S: 24 * ((2 * S - 1) * 6144 - 6 * S * 2048)}


@pytest.mark.parametrize("name", sorted(MOE_MLA_EXTRA))
def test_moe_and_mla_presets_train_at_six_matmul_params(name):
    """The blocks' weight matmuls (router, routed and shared experts, MLA's four
    projections and o_proj) are the rows with a dW backward, and 6ND holds over them: the
    6ND rule for the families matmul_keys once left out (it listed Llama's keys)."""
    m, S = sr.model(name), 8
    rows = sr.train_ops(m, 1, S)
    assert {f"bwd/{k}/dw" for k in matmul_keys(m)} == {k for k in rows if k.endswith("/dw")}
    matmuls = sum(rows[f"{p}/{k}{d}"].flops for k in matmul_keys(m)
                  for p, d in (("fwd", ""), ("bwd", "/dx"), ("bwd", "/dw")))
    assert matmuls == 6 * m.matmul_params * S + MOE_MLA_EXTRA[name](S)


@pytest.mark.parametrize("call, message", [
    (lambda: sr.train_ops(sr.model("gpt2"), 1, 2048), "seq 2048 exceeds gpt2's 1024 learned"),
    (lambda: sr.check_training(_small("gpt2"), 1, 9), "positions 0 .. 8 exceed the 8 learned"),
    (lambda: sr.train_ops(sr.model("gpt2"), 1, 8, ("layer_input", "mlp/gate")),
     r"unknown tensor\(s\) mlp/gate for gpt2; its layers keep layer_input, attn_norm, "
     "attn/qkv_proj"),
    (lambda: saved_activations(sr.model("qwen3-8b"), 1, 8, ("layer_input", "attn/post_norm")),
     r"unknown tensor\(s\) attn/post_norm for qwen3-8b"),
])
def test_bad_family_input_is_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def _counted(cfg, B, T, **widths):
    """The twin's own counted rows of one training step (no symbolic side)."""
    counter = Counter(**widths)
    rng = np.random.default_rng(0)
    tokens, targets = rng.integers(0, cfg.V, (2, B, T))
    loss_and_grads(init_params(cfg), cfg, tokens, targets, counter=counter)
    return counter.rows


def _row(flops, useful=None, w=0, act=0):
    return {"flops": flops, "useful_flops": flops if useful is None else useful,
            "weight_bytes": w, "kv_bytes": 0, "act_bytes": act}


def test_the_twin_counts_docs_accounting_table_for_gpt2_and_neox_blocks():
    """docs/accounting.md's rows of the dense families, typed in from the page and compared
    with the twin's own counts (no symbolic side): LayerNorm, an ungated GELU, a fused qkv
    with biases, the parallel residual's three-way sum, learned positions."""
    D, F, L, H, G, d_h, V, B, T = 8, 12, 2, 4, 2, 4, 16, 2, 5
    cfg = Config(D=D, F=F, L=L, H=H, G=G, d_h=d_h, V=V, norm="layer", act="gelu",
                 gated=False, fused_qkv=True, qkv_bias=True, o_bias=True, mlp_bias=True,
                 parallel_residual=True, positions="learned", max_position=8)
    wb, ab, gb, n, qkv = 1, 2, 4, B * T, (H + 2 * G) * d_h
    rows = _counted(cfg, B, T, w_bytes=wb, act_bytes=ab, grad_bytes=gb)
    layernorm = _row(n * (13 * D + 2) + (3 * n - 2) * D, w=D * (wb + 2 * gb), act=3 * n * D * ab)
    assert rows["bwd/final_norm"] == layernorm
    assert rows["bwd/attn_norm"] == {k: L * v for k, v in layernorm.items()}
    assert rows["bwd/mlp/gelu"] == _row(L * 11 * n * F, act=L * 3 * n * F * ab)
    assert rows["bwd/attn/qkv_proj/dw"] == _row(
        L * (2 * n * D * qkv + (n - 1) * qkv), w=L * (D * qkv + qkv) * gb,
        act=L * n * (D + qkv) * ab)
    assert rows["bwd/attn/residual"] == _row(L * 2 * n * D, act=L * 4 * n * D * ab)
    assert "bwd/mlp/residual" not in rows and "bwd/attn/qkv_sum" not in rows
    assert rows["bwd/pos_embed"] == _row((B - 1) * T * D, w=T * D * gb, act=n * D * ab)


def test_the_twin_counts_docs_accounting_table_for_gemma2_and_qwen3_blocks():
    """The same for GeGLU, the attention softcap (a window of 3 on every other layer), the
    logits' softcap, the scaled tied embedding, Qwen3's q norm and Gemma-2's post norm."""
    D, F, L, H, G, d_h, V, B, T = 8, 12, 2, 4, 2, 4, 16, 2, 5
    cfg = Config(D=D, F=F, L=L, H=H, G=G, d_h=d_h, V=V, act="gelu_tanh", post_norms=True,
                 attn_softcap=2.0, final_softcap=3.0, embed_scale=True, qk_norm=True,
                 tied=True, window=3, window_pattern=(True, False))
    wb, ab, gb, n = 4, 1, 2, B * T
    rows = _counted(cfg, B, T, w_bytes=wb, act_bytes=ab, grad_bytes=gb)
    assert rows["bwd/mlp/geglu"] == _row(L * 20 * n * F, act=L * 5 * n * F * ab)
    P_global, P_window = T * (T + 1) // 2, 1 + 2 + 3 + 3 + 3  # pairs per sequence and head
    assert rows["bwd/attn/softmax"] == _row(
        L * B * H * T * (11 * T - 1), useful=sum(B * H * (11 * P - T) for P in
                                                (P_window, P_global)),
        act=L * 4 * B * H * T * T * ab)
    assert rows["bwd/logit_softcap"] == _row(4 * n * V, act=3 * n * V * ab)
    assert rows["bwd/embed"] == _row(2 * n * D, w=2 * V * D * gb, act=n * D * ab)
    assert rows["bwd/attn/q_norm"] == _row(
        L * (n * H * (9 * d_h + 2) + (2 * n * H - 1) * d_h), w=L * d_h * (wb + gb),
        act=L * 3 * n * H * d_h * ab)
    assert rows["bwd/attn/post_norm"] == _row(L * (n * (9 * D + 2) + (2 * n - 1) * D),
                                              w=L * D * (wb + gb), act=L * 3 * n * D * ab)
