"""Training MoE and MLA models: the NumPy twin routes real tokens and runs a counted
backward; every row of its step equals train_ops' at the twin's own routing, at byte
widths drawn independently for weights, activations, gradients and optimizer state."""

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import symroof as sr
from symroof.models import MLA, MoE, saved_activations
from symroof.models.blocks import latent, mlp
from symroof.models.check import _numeric_config
from symroof.numeric import init_params, loss_and_grads, train_moe
from symroof.numeric.optimizer import _get, _leaves

POLICIES = ["none", "selective", "matmul_outputs", "full"]
_SMALL = dict(D=16, F=24, H=4, d_h=4, V=32, max_position=None)


def _mixtral():  # the preset's routing (top-2 of 8, softmax, renormalised), shrunk
    m = sr.model("mixtral-8x7b")
    return m.replace(**_SMALL, L=2, G=2, moe=replace(m.moe, E=4, F=8), name="mixtral-like")


def _deepseek():  # MLA with a q latent; sigmoid router, bias, groups, scale, shared expert
    m = sr.model("deepseek-v3")
    return m.replace(**_SMALL, L=3, G=4, w_bytes=2,
                     moe=replace(m.moe, E=8, F=8, shared_F=8, k=2, topk_groups=2,
                                 groups=4, dense_layers=1),
                     mla=replace(m.mla, kv_rank=8, d_nope=4, d_rope=2, d_v=6, q_rank=6),
                     name="deepseek-like")


def _qwen_moe():  # a gated shared expert, q/k/v biases, softmax top-4 without renorm
    m = sr.model("qwen1.5-moe-a2.7b")
    return m.replace(**_SMALL, L=2, G=4, moe=replace(m.moe, E=6, F=8, shared_F=12),
                     name="qwen-moe-like")


def _mla_direct():  # MLA without a q latent (DeepSeek-V2-Lite's q_proj), dense MLP
    return sr.Transformer(**_SMALL, L=2, G=4, name="mla-direct",
                          mla=MLA(kv_rank=8, d_nope=4, d_rope=2, d_v=4))


FAMILIES = {m.name: m for m in (_mixtral(), _deepseek(), _qwen_moe(), _mla_direct())}
_MIXTRAL_CFG = _numeric_config(FAMILIES["mixtral-like"])


@pytest.mark.parametrize("remat", POLICIES)
@pytest.mark.parametrize("name", FAMILIES)
def test_every_family_and_policy_is_exact(name, remat):
    report = sr.check_training(FAMILIES[name], 2, 5, remat)
    assert report.ok, str(report)
    assert {r.removeprefix("saved/") for r in report.rows if r.startswith("saved/")} == set(
        saved_activations(FAMILIES[name], 2, 5, remat))


_rng = np.random.default_rng(2026)  # widths drawn once, each kind on its own
DRAWS = [tuple(int(w) for w in _rng.choice([1, 2, 4], 4)) for _ in range(3)]


@pytest.mark.parametrize("w, a, g, mom", DRAWS + [(1, 1, 1, 1), (4, 4, 4, 4)])
@pytest.mark.parametrize("name", ["mixtral-like", "deepseek-like"])
def test_byte_widths_drawn_independently(name, w, a, g, mom):
    model = FAMILIES[name].replace(w_bytes=w, act_bytes=a, kv_bytes=a)
    report = sr.check_training(model, 1, 4, "none", grad_bytes=g, moment_bytes=mom,
                               master_bytes=4)
    assert report.ok, str(report)


def test_rows_follow_the_twins_routing_not_a_balanced_one():
    """3 tokens x top-2 of 8 experts: balanced routing reads 6 experts' weights; the
    twin's router sends this draw to fewer, and the rows read exactly those."""
    m = FAMILIES["deepseek-like"].replace(L=2)
    trace = []
    cfg = _numeric_config(m)
    tokens = np.random.default_rng(0).integers(0, cfg.V, size=(2, 1, 3))  # the check's draw
    loss_and_grads(init_params(cfg), cfg, *tokens, trace=trace)
    assert [int(t.sum()) for t in trace] == [6]  # one MoE layer: 3 tokens x k = 2
    assert sum(1 for t in trace[0] if t) < 6
    assert sr.check_training(m, 1, 3).ok
    balanced = sr.train_ops(m, 1, 3)["bwd/moe/up/dw"].weight_bytes
    counted = sr.check_training(m, 1, 3).counted["bwd/moe/up/dw"]["weight_bytes"]
    assert counted < balanced == 6 * 16 * 8 * 2  # 6 experts' D x F gradient, bf16


@st.composite
def moe_mla_models(draw):
    E = draw(st.integers(2, 6))
    groups = draw(st.sampled_from([g for g in (1, 2, 3) if E % g == 0 and E // g >= 2]))
    moe = MoE(E=E, k=draw(st.integers(1, E)), F=draw(st.integers(1, 6)),
              shared_F=draw(st.sampled_from([0, 3])), router=draw(st.sampled_from(
                  ["softmax", "sigmoid"])), router_bias=draw(st.booleans()),
              norm_topk=draw(st.booleans()), scale=draw(st.sampled_from([1, 2])),
              groups=groups, topk_groups=draw(st.integers(1, groups)))
    moe = replace(moe, shared_gate=moe.shared_F != 0 and draw(st.booleans()))
    mla = draw(st.sampled_from([None, MLA(kv_rank=4, d_nope=2, d_rope=2, d_v=3),
                                MLA(kv_rank=3, d_nope=3, d_rope=4, d_v=2, q_rank=5)]))
    H = draw(st.integers(1, 3))
    return sr.Transformer(D=draw(st.integers(2, 8)), F=4, L=2, H=H, G=H, d_h=2,
                          V=draw(st.integers(2, 12)), tied=draw(st.booleans()),
                          w_bytes=draw(st.sampled_from([1, 2, 4])),
                          act_bytes=draw(st.sampled_from([1, 2, 4])),
                          moe=draw(st.sampled_from([None, moe])) if mla else moe, mla=mla,
                          name="random")


@settings(max_examples=12, deadline=None)
@given(model=moe_mla_models(), batch=st.integers(1, 2), seq=st.integers(1, 4),
       remat=st.sampled_from(POLICIES), grad=st.sampled_from([1, 2, 4]),
       moment=st.sampled_from([1, 2, 4]))
def test_random_moe_and_mla_configs(model, batch, seq, remat, grad, moment):
    report = sr.check_training(model, batch, seq, remat, grad_bytes=grad, moment_bytes=moment)
    assert report.ok, str(report)


# A planted mistake on either side, per family: the check names the row it breaks.
PLANTED = [
    ("mixtral-like", lambda mp: mp.setattr(mlp, "route_backward_flops",
                                           lambda moe: 9 * moe.E - 3 + 6 * moe.k - 1),
     "bwd/moe/route"),
    ("mixtral-like", lambda mp: mp.setattr(train_moe, "combine_backward", _extra_read(
        train_moe.combine_backward)), "bwd/moe/combine"),
    ("deepseek-like", lambda mp: mp.setattr(latent, "backward_in", _all_heads(
        latent.backward_in)), "bwd/attn/k_rope_sum"),
    ("qwen-moe-like", lambda mp: mp.setattr(train_moe, "shared_scale_backward", _extra_read(
        train_moe.shared_scale_backward, 3)), "bwd/moe/shared/scale"),
    ("mla-direct", lambda mp: mp.setattr(latent, "tensors", lambda a, B, S: {
        **_LATENT_TENSORS(a, B, S), "k_pe": 0}),
     "saved/attn/rope"),  # the shared RoPE key forgotten
]


def _extra_read(fn, arg=1):
    def planted(ops, *args):
        ops.read(args[arg - 1], "act")  # one operand read twice
        return fn(ops, *args)
    return planted


_LATENT_TENSORS = latent.tensors


def _all_heads(fn):
    def planted(a, w, S):  # the shared key's gradient summed as if over H + 1 heads
        return fn(a, w, S) | {"attn/k_rope_sum": w.sum(a.H + 1, a.latent.d_rope)}
    return planted


@pytest.mark.parametrize("name, plant, row", PLANTED)
def test_a_planted_mismatch_is_caught(monkeypatch, name, plant, row):
    plant(monkeypatch)
    report = sr.check_training(FAMILIES[name], 1, 3, "none")
    assert {m.op for m in report.mismatches} == {row}, str(report)


_ATTENTION = ("attn_norm", "wq", "wk", "wv", "bq", "bk", "bv", "wo", "wq_a", "q_a_norm", "wq_b",
              "wkv_a", "kv_a_norm", "wkv_b")


def test_gradients_match_finite_differences():
    """The counted backward computes the real gradient: along random directions (all
    parameters; the last layer's MLP block; its attention block), the gradient's dot
    product equals a central difference of the loss (routing, away from ties, does not
    move under eps)."""
    for m in (FAMILIES["deepseek-like"], FAMILIES["qwen-moe-like"]):
        cfg, rng = _numeric_config(m), np.random.default_rng(1)
        params = init_params(cfg)
        tokens, targets = rng.integers(0, cfg.V, (2, 2, 4))
        _, grads = loss_and_grads(params, cfg, tokens, targets)
        leaves = list(_leaves(params))
        last = [(p, a) for p, a in leaves if p[:2] == ("layers", cfg.L - 1)]
        attn = [(p, a) for p, a in last if p[2] in _ATTENTION]
        for chosen in (leaves, attn, [(p, a) for p, a in last if p[2] not in _ATTENTION]):
            v = [(path, rng.standard_normal(arr.shape)) for path, arr in chosen]
            dot = sum(float((_get(grads, path) * d).sum()) for path, d in v)
            losses = []
            for sign in (1, -1):
                for path, d in v:
                    _get(params, path)[...] += sign * 1e-6 * d
                losses.append(loss_and_grads(params, cfg, tokens, targets)[0])
                for path, d in v:
                    _get(params, path)[...] -= sign * 1e-6 * d
            assert dot == pytest.approx((losses[0] - losses[1]) / 2e-6, rel=1e-5)


# fwd, dX and dW rows of every weight matmul of a MoE or MLA model
_MATMULS = ("attn/q_proj", "attn/k_proj", "attn/v_proj", "attn/q_a_proj", "attn/q_b_proj",
            "attn/kv_a_proj", "attn/kv_b_proj", "attn/o_proj", "mlp/gate", "mlp/up",
            "mlp/down", "moe/router", "moe/gate", "moe/up", "moe/down", "moe/shared/gate",
            "moe/shared/up", "moe/shared/down", "lm_head")


@pytest.mark.parametrize("name", ["mixtral-8x7b", "deepseek-v3"])
def test_matmul_rows_follow_the_6nd_rule_with_active_parameters(name):
    """Kaplan et al.'s 6ND (the book's ch. 4): forward, dX and dW of every weight matmul
    sum to 6 x tokens x the parameters a token multiplies by (k routed experts of E,
    balanced routing) for the released shapes."""
    from symroof.symbols import B, S
    m = sr.model(name)
    rows = sr.train_ops(m, B, S)
    mm = sum(rows[k].flops for key in _MATMULS for k in (f"fwd/{key}", f"bwd/{key}/dx",
                                                         f"bwd/{key}/dw") if k in rows)
    assert (mm - 6 * B * S * m.matmul_params).expand() == 0


@pytest.mark.parametrize("call, message", [
    (lambda: sr.train_ops(FAMILIES["mixtral-like"], 1, 4, ("layer_input", "mlp/gate")),
     "MoE and MLA layers train under none, selective, matmul_outputs, full"),
    (lambda: sr.train_ops(FAMILIES["mla-direct"], 1, 4, attention="fused"),
     "mla-direct's latent attention trains with attention='naive', not 'fused'"),
    (lambda: sr.train_ops(FAMILIES["mixtral-like"].replace(act="gelu"), 1, 4),
     "training rows run SwiGLU experts; mixtral-like has act='gelu'"),
    (lambda: loss_and_grads(init_params(_MIXTRAL_CFG), _MIXTRAL_CFG, [[1]], [[1]],
                            ("layer_input", "moe/gate")),
     r"remat=\('layer_input', 'moe/gate'\): MoE and MLA layers train under none"),
])
def test_what_is_not_covered_is_named(call, message):
    """Refused on the symbolic side and on the twin's, each naming what was asked."""
    with pytest.raises(ValueError, match=message):
        call()


def test_a_kept_tuple_keeps_every_tensor_its_op_wrote():
    """RoPE writes q and k under one key: a tuple that keeps ``attn/rope`` keeps both on
    the twin too (it once kept only k, and reran q_proj and RoPE for q)."""
    report = sr.check_training(sr.model("tiny"), 1, 4, ("layer_input", "attn/rope"))
    assert report.ok, str(report)
