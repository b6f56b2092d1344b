"""The NumPy twin trains: finite-difference gradients, remat executed for real, and every
counted row of a training step equal to the symbolic one."""

import numpy as np
import pytest
from finite_differences import assert_gradients_match
from hypothesis import given, settings
from hypothesis import strategies as st

import symroof as sr
from symroof.cost import Cost
from symroof.models import MODELS, REMAT_POLICIES, saved_activations
from symroof.models.check import _numeric_config
from symroof.numeric import (
    Adam,
    Config,
    backward_reads,
    init_params,
    loss_and_grads,
    train_step,
)
from symroof.numeric import train as numeric_train
from symroof.numeric.optimizer import _get, _leaves

TINY = sr.model("tiny")
POLICIES = list(REMAT_POLICIES)
SMALL = Config(D=8, F=12, L=2, H=4, G=2, d_h=4, V=16)


@pytest.mark.parametrize("remat", POLICIES)
def test_tiny_every_policy(remat):
    report = sr.check_training(TINY, 2, 6, remat)
    assert report.ok, str(report)
    assert {m.removeprefix("saved/") for m in report.rows if m.startswith("saved/")} == set(
        saved_activations(TINY, 2, 6, remat))


@pytest.mark.parametrize("widths, state", [
    (dict(w_bytes=1, act_bytes=1), dict(grad_bytes=1, moment_bytes=1)),
    (dict(w_bytes=2, act_bytes=4), dict(master_bytes=4)),
    (dict(w_bytes=4, act_bytes=2), dict(grad_bytes=4, moment_bytes=2, master_bytes=4)),
    (dict(w_bytes=4, act_bytes=4), {}),
])
def test_byte_widths(widths, state):
    for remat in ("none", "full"):
        report = sr.check_training(TINY.replace(**widths), 1, 3, remat, **state)
        assert report.ok, str(report)


@st.composite
def configs(draw):
    G = draw(st.integers(1, 3))
    return sr.Transformer(
        D=draw(st.integers(1, 10)), F=draw(st.integers(1, 12)), L=draw(st.integers(1, 2)),
        H=G * draw(st.integers(1, 3)), G=G, d_h=2 * draw(st.integers(1, 3)),
        V=draw(st.integers(2, 16)), tied=draw(st.booleans()), qkv_bias=draw(st.booleans()),
        w_bytes=draw(st.sampled_from([1, 2, 4])), act_bytes=draw(st.sampled_from([1, 2, 4])),
        name="random")


WIDTHS = st.sampled_from([1, 2, 4])


@settings(max_examples=60, deadline=None)
@given(model=configs(), batch=st.integers(1, 3), seq=st.integers(1, 5),
       remat=st.sampled_from(POLICIES), grad=WIDTHS, moment=WIDTHS,
       master=st.sampled_from([0, 2, 4]))
def test_random_configs(model, batch, seq, remat, grad, moment, master):
    """Every width drawn on its own (weights, activations in ``configs``; gradients,
    optimizer moments, master copy here): a figure booked at another kind's width (a
    bias gradient at the weights' width) shows wherever the two differ."""
    report = sr.check_training(model, batch, seq, remat, grad_bytes=grad,
                               moment_bytes=moment, master_bytes=master)
    assert report.ok, str(report)


def _batch(cfg, B=2, T=5, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, cfg.V, (B, T)), rng.integers(0, cfg.V, (B, T))


@pytest.mark.parametrize("cfg", [SMALL, SMALL.replace(tied=True, qkv_bias=True, G=4)])
def test_gradients_match_finite_differences(cfg):
    params = init_params(cfg, seed=1)
    tokens, targets = _batch(cfg)
    _, grads = loss_and_grads(params, cfg, tokens, targets)
    assert_gradients_match(params, cfg, tokens, targets, grads, np.random.default_rng(2),
                           per_leaf=2, rel=1e-6)


def test_every_policy_gives_the_same_gradients():
    cfg = SMALL.replace(qkv_bias=True)
    params = init_params(cfg)
    tokens, targets = _batch(cfg)
    loss, ref = loss_and_grads(params, cfg, tokens, targets)
    for remat in POLICIES[1:]:
        other_loss, grads = loss_and_grads(params, cfg, tokens, targets, remat)
        assert other_loss == loss
        for path, g in _leaves(ref):
            np.testing.assert_allclose(_get(grads, path), g, rtol=1e-12, atol=1e-15)


#: every switch that changes what a layer's backward reads, on two small configs
EVERY_READ = {"llama": SMALL, "gemma2_qwen3": SMALL.replace(
    qk_norm=True, post_norms=True, attn_softcap=2.0, act="gelu_tanh", window=3),
    "neox_gpt2": SMALL.replace(norm="layer", gated=False, act="gelu", fused_qkv=True,
                               parallel_residual=True, positions="learned", max_position=8)}


@pytest.mark.parametrize("name, tensor", [(name, t) for name, cfg in EVERY_READ.items()
                                          for t in backward_reads(cfg)])
def test_the_backward_reads_every_tensor_none_keeps(name, tensor, monkeypatch):
    """The backward reads only what the policy kept or recomputed: keeping one tensor too
    few fails (so "none" keeps nothing the backward does not read)."""
    cfg = EVERY_READ[name]
    fewer = tuple(t for t in backward_reads(cfg) if t != tensor)
    monkeypatch.setattr(numeric_train, "_kept", lambda cfg, remat, moe=None: fewer)
    monkeypatch.setattr(numeric_train, "_rerun_plan", lambda cfg, remat, moe: [])  # none
    with pytest.raises(KeyError, match=tensor):
        loss_and_grads(init_params(cfg), cfg, *_batch(cfg))


def test_a_planted_backward_flop_is_caught_and_named(monkeypatch):
    from symroof.models import check_training

    train_ops = check_training.train_ops

    def off_by_one(*args, **kwargs):
        rows = train_ops(*args, **kwargs)
        rows["bwd/attn/softmax"] = rows["bwd/attn/softmax"] + Cost(flops=1)
        return rows

    monkeypatch.setattr(check_training, "train_ops", off_by_one)
    report = sr.check_training(TINY, 1, 3, "selective")
    assert [(m.op, m.quantity) for m in report.mismatches] == [
        ("bwd/attn/softmax", "flops"), ("bwd/attn/softmax", "useful_flops")]
    assert "MISMATCH" in str(report)


def test_a_kept_tensor_too_many_is_caught(monkeypatch):
    cfg, kept = _numeric_config(TINY), numeric_train._kept
    plan = numeric_train._rerun_plan(cfg, "selective", False)
    monkeypatch.setattr(numeric_train, "_kept", lambda cfg, remat, moe=None: kept(
        cfg, "none" if remat == "selective" else remat, moe))
    monkeypatch.setattr(numeric_train, "_rerun_plan", lambda cfg, remat, moe: plan)
    report = sr.check_training(TINY, 1, 3, "selective")
    assert [(m.op, m.quantity) for m in report.mismatches] == [
        ("saved/attn/softmax", "act_bytes")]


def test_adam_lowers_the_loss():
    params = init_params(SMALL)
    tokens, targets = _batch(SMALL)
    opt = Adam(params, lr=1e-2, master=True)
    losses = [train_step(params, SMALL, tokens, targets, opt, remat="full") for _ in range(5)]
    assert losses == sorted(losses, reverse=True)


@pytest.mark.parametrize("call, message", [
    (lambda: sr.check_training(TINY, 1, 2, "half"), "unknown remat policy 'half'; known:"),
    (lambda: sr.check_training(TINY, 1, 0), "seq must be a positive integer"),
    (lambda: sr.check_training(TINY, -1, 2), "batch must be a positive integer"),
    (lambda: sr.check_training(TINY, 1, 2, grad_bytes=1.5), "grad_bytes must be a positive"),
    (lambda: sr.check_training(TINY, 1, 2, master_bytes=-4), "master_bytes must be 0"),
    (lambda: sr.check_training(sr.Transformer(), 1, 2), "needs numbers for every dimension"),
    (lambda: sr.check_training(TINY, 64, 4096), "would need about"),
    (lambda: loss_and_grads(init_params(SMALL), SMALL, [[1]], [[1]], "x"),
     "unknown remat policy 'x'"),
    (lambda: loss_and_grads(init_params(SMALL), SMALL, [[1, 2]], [[1]]),
     "targets must have the tokens' shape"),
])
def test_bad_input_is_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()


DENSE = [name for name, m in MODELS.items() if m.moe is None and m.mla is None]
LLAMA = [name for name in DENSE if not sr.model(name).features]  # the Llama family


@pytest.mark.parametrize("name", DENSE)
def test_every_dense_preset_trains_exactly_at_its_own_head_layout(name):
    """Each dense preset with its own H, G, tying, biases, switches and window, its widths
    shrunk (D, F, d_h, V, L; a window of 6 with 4 tokens, learned positions 8) so that a
    float64 backward runs: counted == symbolic."""
    m = sr.model(name)
    small = m.replace(D=16, F=24, L=2, d_h=2, V=32, window=None if m.window is None else 6,
                      rotary_dim=None, max_position=8 if m.positions == "learned" else None)
    report = sr.check_training(small, 1, 4, "full" if m.H > 32 else "none")
    assert report.ok, str(report)


@pytest.mark.parametrize("name", LLAMA)
def test_dense_presets_train_at_six_params_plus_attention(name):
    """Training FLOPs per token of each dense preset, from its rows: 6 x matmul parameters
    plus the attention matmuls' 12 L H d_h S, and lower-order terms (norms, softmax, loss,
    Adam) under 1 percent."""
    m, S = sr.model(name), 4096  # within Mistral's 4096-token window
    rows = sr.train_ops(m, 1, S)
    per_token = sum(c.flops for c in rows.values()) / S
    book = 6 * m.matmul_params + 12 * m.L * m.H * m.d_h * S
    if name != "tiny":  # (tiny's D = 64: its norms and softmax are not lower order)
        assert 1 <= per_token / book < 1.01
    matmuls = sum(c.flops for k, c in rows.items()
                  if k.split("/")[-1] in ("dx", "dw") or k.endswith("_proj")
                  or k.split("/")[-1] in ("gate", "up", "down", "lm_head"))
    assert matmuls == 6 * m.matmul_params * S  # the 6ND rule, exactly, from the rows
