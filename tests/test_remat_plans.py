"""Remat as a tuple of kept tensors in training plans, the strategy search and ``symroof
train --remat``: the same plan as the named policy that keeps the same tensors, and the book's
"checkpoint after the three big matmuls" between no remat and block remat."""

import pytest

import symroof as sr
from symroof.models import saved_activations
from symroof.surfaces.cli import main

ONCE = ("final_input", "final_norm", "lm_head", "loss")  # kept once, not per layer
#: How to Scale Your Model, ch. 5 problems (https://jax-ml.github.io/scaling-book/training/):
#: keeping the outputs of the three big MLP matmuls costs 2 L B (D + 2F) bytes in bf16
BOOK3 = ("layer_input", "mlp/gate", "mlp/up")
MODEL, MESH = sr.model("llama-2-13b"), sr.mesh("tpu-v5p", "4x4x4")
TOKENS = 2**20


def _plan(remat, strategy="fsdp+tp", **kw):
    kw = {"fsdp": "XY", "tp": "Z"} if strategy == "fsdp+tp" else kw
    return sr.train_plan(MODEL, MESH, strategy, batch_tokens=TOKENS, remat=remat, **kw)


@pytest.mark.parametrize("policy", ["none", "selective", "matmul_outputs"])
def test_a_tuple_plans_as_the_policy_that_keeps_the_same_tensors(policy):
    keep = tuple(k for k in saved_activations(MODEL, 1, 4096, policy) if k not in ONCE)
    named, kept = _plan(policy), _plan(keep)
    assert kept.remat == keep
    for field in ("step", "layer", "memory"):  # rows, collectives (TP on Z) and bytes
        assert getattr(kept, field) == getattr(named, field), field
    assert kept.lower == named.lower and kept.upper == named.upper


def test_the_books_three_checkpoints_sit_between_no_remat_and_block_remat():
    plans = {r: _plan(r, "fsdp") for r in ("none", BOOK3, "full")}
    act = {r: p.memory["activations"] * MESH.n_chips for r, p in plans.items()}
    # block remat keeps the book's 2 B T D L (ch. 4) and the tensors kept once (logits...)
    once = act["full"] - 2 * TOKENS * MODEL.D * MODEL.L
    assert act[BOOK3] - once == 2 * MODEL.L * TOKENS * (MODEL.D + 2 * MODEL.F)
    assert act["full"] < act[BOOK3] < act["none"]
    flops = {r: p.flops for r, p in plans.items()}  # the rerun forward moves the other way
    assert flops["none"] < flops[BOOK3] < flops["full"]


def test_a_tuple_that_reruns_weight_matmuls_reruns_tp_collectives():
    def tp_count(plan):  # backward TP collectives over forward ones (per-row counts differ)
        fwd = sum(c.net_bytes for k, c in plan.step.items() if k.startswith("forward/tp/"))
        bwd = sum(c.net_bytes for k, c in plan.step.items() if k.startswith("backward/tp/"))
        return bwd / fwd

    assert tp_count(_plan(BOOK3)) == tp_count(_plan("full")) == 2  # the attention reruns
    assert tp_count(_plan("selective")) == 1


def test_unknown_tensors_fail_naming_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown tensor\(s\) mlp/gates;.*mlp/gate, mlp/up"):
        _plan(("layer_input", "mlp/gates"))
    with pytest.raises(ValueError, match="must keep 'layer_input'"):
        sr.strategy_search(MODEL, MESH, batch_tokens=TOKENS, remat=("mlp/gate",))


def test_search_takes_a_tuple_and_agrees_with_the_plan():
    res = sr.strategy_search(MODEL, MESH, batch_tokens=TOKENS, strategies=["fsdp"], remat=BOOK3)
    plan = _plan(BOOK3, "fsdp")  # the one split of fsdp: all three axes
    assert float(res.lower.min()) == pytest.approx(float(plan.lower), rel=1e-12)
    assert float(res.memory.min()) == pytest.approx(float(plan.memory_total), rel=1e-12)


def test_cli_train_takes_kept_tensors_and_names_a_wrong_one(capsys):
    argv = ["train", "--model", "llama-2-13b", "--mesh", "tpu-v5p:4x4x4", "--tokens",
            str(TOKENS), "--strategy", "fsdp", "--fsdp", "XYZ"]
    assert main(argv + ["--remat", ",".join(BOOK3)]) == 0
    out = capsys.readouterr().out
    assert "remat layer_input,mlp/gate,mlp/up" in out
    assert main(argv + ["--remat", "layer_input,mlp/gates"]) != 0
    err = capsys.readouterr().err
    assert "--remat layer_input,mlp/gates: unknown tensor mlp/gates" in err
    assert "Traceback" not in err
