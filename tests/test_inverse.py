"""Inverse questions: chips for a batch, the largest model an HBM budget holds, chips for a
byte count, the smallest training slice; remat as a tuple of kept tensors; crossover's
select= with symbolic roots.

Book numbers from "How to Scale Your Model" (scaling-book commit 0819a7d, Feb 2025):
training.md (ch. 5) and applied-training.md (ch. 6); each is named where it is used."""

from __future__ import annotations

import pytest
import sympy as sp

import symroof as sr
from symroof.models import saved_activations
from symroof.models.training_memory import remat_recompute
from symroof.symbols import B, D, F, L, M, T, X, Y, Z

C, W_ici = sp.Symbol("C", positive=True), sp.Symbol("W_ici", positive=True)
SYM_MESH = sr.mesh(sr.symbolic_chip(W_net=W_ici / 2), {"X": X, "Y": Y, "Z": Z})


def fsdp_v5p(batch=2**20):
    """The book's condition: solved from its one MLP block (conventions "book")."""
    return sr.train_plan("llama-3.1-70b", sr.mesh("tpu-v5p", "4x4x4"), "fsdp",
                         batch_tokens=batch, seq=4096, conventions="book").conditions["fsdp"]


def test_chips_for_batch_is_the_books_n_equals_b_over_threshold():
    c = fsdp_v5p()
    assert c.threshold == 850  # ch. 5: 2550 / 3 over three axes
    # ch. 5 "16e6 / (2550 / 3) = 18,823 chips"; "BS=2M ... at most ~2400 chips"
    assert int(c.chips_for(16 * 10**6)) == 18823
    assert round(int(c.chips_for(2 * 10**6)), -2) == 2400
    # ch. 5 problem 3: 4096 chips need 850 x 4096 = 3.48M tokens; 3M falls short
    assert c.chips_for(3 * 2**20) < 4096 <= c.chips_for(3481600)


def test_chips_for_is_symbolic_on_a_symbolic_mesh():
    c = sr.train_plan(sr.Transformer(), SYM_MESH, "fsdp", batch_tokens=B, seq=T,
                      conventions="book").conditions["fsdp"]
    assert sp.simplify(c.chips_for(B) - 3 * B * W_ici / C) == 0  # B / (alpha / 3)


def test_chips_for_refuses_a_condition_that_is_not_per_chip_batch():
    tp = sr.train_plan("llama-3.1-70b", sr.mesh("tpu-v5p", "4x4x4"), "fsdp+tp", fsdp="XY",
                       tp="Z", batch_tokens=2**20, seq=4096).conditions["tp"]
    with pytest.raises(ValueError, match="bounds Y, not the batch per chip"):
        tp.chips_for(10**6)
    with pytest.raises(ValueError, match="batch must be a positive number of tokens, got -5"):
        fsdp_v5p().chips_for(-5)


def test_max_params():
    # ch. 5: "num_params = HBM per device / 10 ... for TPU v5p this is roughly 9B"
    assert sr.max_params("tpu-v5p", {"grad_bytes": 0}) == 96 * 10**9 // 10
    assert sr.max_params("tpu-v5p") == 96 * 10**9 // 12  # bf16 gradients too
    assert sr.max_params("tpu-v5e", "int4", chips=3) == 3 * 16 * 10**9 * 2  # half a byte
    assert sr.max_params(sr.mesh("tpu-v5e", "4x4"), "bf16") == 16 * 16 * 10**9 // 2
    assert sr.max_params(sr.symbolic_chip(), "int8", chips=X) == X * M


@pytest.mark.parametrize("call, message", [
    (lambda: sr.max_params("tpu-v5p", "fp7"), "unknown weights dtype 'fp7'; known: "),
    (lambda: sr.max_params("tpu-v5p", {"adam_bytes": 4}), r"unknown width\(s\) adam_bytes; known"),
    (lambda: sr.max_params(sr.mesh("tpu-v5e", "2x2"), chips=3), "a mesh or chips=, not both"),
    (lambda: sr.min_chips(-1, "tpu-v5p"), "bytes must be non-negative, got total = -1"),
    (lambda: sr.min_chips("lots", "tpu-v5p"), "bytes must be a number .* got 'lots'"),
])
def test_bad_input_names_it(call, message):
    with pytest.raises((ValueError, TypeError), match=message):
        call()


def test_min_chips_fraction_ceiling_slice():
    # ch. 6: "21.6e12 / 96e9 = 225 TPUs"
    need = sr.min_chips(21.6e12, "tpu-v5p")
    assert (need.fraction, need.chips, need.slice_chips) == (225, 225, 256)
    # ch. 2: 200e9 bf16 parameters; 400e9 bytes over 16e9 a v5e chip is 25 chips, a 4x8
    cost = sr.Cost(weight_bytes=400 * 10**9, act_bytes=10**15)  # activations pass through
    assert (sr.min_chips(cost, "tpu-v5e").chips, sr.min_chips(cost, "tpu-v5e").slice) == (
        25, "4x8")
    parts = sr.min_chips({"params": 20 * 10**9, "moments": 80 * 10**9}, "h100")
    assert parts.fraction == sp.Rational(5, 4) and parts.chips == 2
    assert sr.min_chips(0, "h100").chips == 1
    big = sr.min_chips(10**16, "tpu-v5e")  # more than a 16x16 pod: no slice, still a count
    assert (big.chips, big.slice) == (625000, None)
    assert str(big) == "10 PB needs 625000 tpu-v5e (16 GB each): no slice on record has them"
    assert sr.min_chips(7 * M / 2, sr.symbolic_chip()).chips == 4


def test_min_training_slice_at_a_symbolic_batch():
    b = sp.Symbol("b", positive=True)
    s = sr.min_training_slice("llama-3.1-8b", "tpu-v5p", batch_tokens=b, seq=4096, remat=2,
                              widths={"grad_bytes": 0})
    model = sr.model("llama-3.1-8b")
    # ch. 6: 10 P + n checkpoints of width D a layer, 2 D b n L
    assert sp.expand(s.total - (10 * model.params + 2 * 4096 * b * 2 * 32)) == 0
    assert s.slice is None and s.chips.has(b)
    at = s.chips.subs(b, 4096 * 1000)
    assert at == sr.min_training_slice("llama-3.1-8b", "tpu-v5p", batch_tokens=4096 * 1000,
                                       seq=4096, remat=2, widths={"grad_bytes": 0}).chips


THREE = ("layer_input", "mlp/gate", "mlp/up")


def test_remat_tuple_is_the_books_checkpoint_after_three_matmuls():
    llama13 = sr.model("llama-2-13b")  # D = 5120, F = 13824, L = 40 (its released config)
    kept = saved_activations(llama13, 16 * 10**6, 1, THREE)
    per_layer = sum(kept[k] for k in THREE)
    # ch. 5 problem 2: 2 L B (D + 2F) in bf16, "~4.2e13 = 42TB" at 16M tokens
    assert per_layer == (2 * L * B * (D + 2 * F)).subs({L: 40, B: 16 * 10**6, D: 5120,
                                                        F: 13824})
    assert round(per_layer / 10**12) == 42
    mem = sr.train_memory(llama13, 16 * 10**6, 1, THREE)
    assert mem["activations"] == sum(kept.values())


def test_remat_tuple_reruns_what_the_backward_reads_and_is_not_kept():
    rows = sr.train_ops(sr.Transformer(), B, 8, THREE)
    rerun = [k.split("/", 1)[1] for k in rows if k.startswith("recompute/")]
    assert "mlp/swiglu" in rerun and "attn/softmax" in rerun
    assert not {"mlp/gate", "mlp/up", "mlp/down"} & set(rerun)
    # the rule rebuilds the policies' table (docs/accounting.md, "Remat policies"; selective
    # is Megatron-LM's, matmul_outputs JAX's dots_with_no_batch_dims_saveable)
    table = {"none": (), "selective": ("attn/scores", "attn/softmax"),
             "matmul_outputs": ("attn_norm", "attn/rope", "attn/scores", "attn/softmax",
                                "attn/av", "attn/residual", "mlp_norm", "mlp/swiglu")}
    for policy, keys in table.items():
        assert remat_recompute(policy) == keys
        assert remat_recompute(policy, "fused") == tuple(
            "attn/core" if k == "attn/av" else k for k in keys if k not in _CORE)


_CORE = ("attn/scores", "attn/softmax")


@pytest.mark.parametrize("remat, message", [
    (("mlp/gate",), "must keep 'layer_input'"),
    (("layer_input", "mlp/gelu"), r"unknown tensor\(s\) mlp/gelu for custom"),
    ((), "unknown tensor"),
])
def test_bad_remat_tuple(remat, message):
    with pytest.raises(ValueError, match=message):
        saved_activations(sr.Transformer(), B, 8, remat)


def test_crossover_select_with_symbolic_roots():
    a, b = sp.symbols("a b", positive=True)
    quad = (B**2 + 2 * a**2, 3 * a * B)  # roots a and 2a
    assert sr.crossover(*quad, B, select="smallest") == a
    assert sr.crossover(*quad, B, select="largest") == 2 * a
    assert sr.crossover(B**2 + a * b, (a + b) * B, B, select="largest") == sp.Max(a, b)
    with pytest.raises(ValueError, match="several roots"):
        sr.crossover(*quad, B)


def test_min_training_slice_of_a_train_step():
    kw = dict(remat=THREE, widths={"grad_bytes": 0})
    by_step = sr.min_training_slice("llama-3.1-8b", "tpu-v5p", step=sr.TrainStep(1024, 4096),
                                    **kw)
    by_tokens = sr.min_training_slice("llama-3.1-8b", "tpu-v5p", batch_tokens=1024 * 4096,
                                      seq=4096, **kw)
    assert by_step.total == by_tokens.total and by_step.slice == by_tokens.slice
    with pytest.raises(ValueError, match="give a TrainStep or batch_tokens=, not both"):
        sr.min_training_slice("llama-3.1-8b", "tpu-v5p", step=sr.TrainStep(8, 4096),
                              batch_tokens=4096)


@pytest.mark.parametrize("kept", [THREE, ("layer_input", "attn/softmax", "attn/v_proj"),
                                  ("layer_input", "attn/q_proj", "mlp_norm", "mlp/swiglu")])
def test_remat_tuple_checks_exactly_against_the_twin(kept):
    # the NumPy step reruns what its own forward graph says is missing; every row and every
    # kept tensor must equal the symbolic ones, integer for integer
    report = sr.check_training(sr.model("tiny"), batch=2, seq=8, remat=kept)
    assert report.ok, report.mismatches[:3]
    assert any(k.startswith("recompute/") for k in report.counted)
