"""Training strategies' per-layer collectives against XLA: one MLP layer's training step
(the book's ch. 5 layer) compiled under DP, FSDP, TP and FSDP + TP on a virtual CPU mesh,
all in one JAX process. Every predicted collective must be matched, exactly or through a
named valid alternative; planted wrong predictions must be caught."""

import importlib.util
import os

import pytest

import symroof as sr
from symroof.models import MoE

TOY = sr.Transformer(D=128, F=512, L=2, H=8, G=8, d_h=16, V=256, name="toy")
B, SEQ = 4096, 16


def need_jax() -> None:
    """Skip without JAX, except on CI (CI=true), where a missing JAX is a failure."""
    if importlib.util.find_spec("jax") is None:
        if os.environ.get("CI") == "true":
            pytest.fail('CI=true but jax is not installed: pip install -e ".[jax]"')
        pytest.skip('jax is not installed: pip install -e ".[jax]"')


#: the plans' layer is the book's MLP block (the oracle's program here): symroof's
#: conventions but condition_layer; the whole layer is tests/test_xla_layers.py's
BLOCK = sr.profile("symroof").replace(condition_layer="mlp_block")


def plans():
    # 1-D lines of 8 are not v5e slices: hypotheticals, as the oracle's CPU mesh is
    x8, y8 = (sr.mesh("tpu-v5e", s, custom=True) for s in ({"X": 8}, {"Y": 8}))
    xy = sr.mesh("tpu-v5e", "4x2")
    kw = {"batch_tokens": B, "seq": SEQ, "conventions": BLOCK}
    return {
        "dp": sr.train_plan(TOY, x8, "dp", **kw),
        "fsdp": sr.train_plan(TOY, x8, "fsdp", **kw),
        "tp": sr.train_plan(TOY, y8, "tp", **kw),
        "fsdp+tp": sr.train_plan(TOY, xy, "fsdp+tp", fsdp=("X",), tp=("Y",), **kw),
        "dp+tp": sr.train_plan(TOY, xy, "dp+tp", dp=("X",), tp=("Y",), **kw),
    }


def planted(right: list[dict]) -> list[list[dict]]:
    """The first collective on another axis, its count doubled, and one XLA never sends."""
    return [[{**c, "axes": ("Y",)} if i == 0 else c for i, c in enumerate(right)],
            [{**c, "elements_out": c["elements_out"] * 2} if i == 0 else c
             for i, c in enumerate(right)],
            right + [{"kind": "all-to-all", "axes": ("X",), "elements_in": 8,
                      "elements_out": 8}]]


@pytest.fixture(scope="module")
def reports():
    """Every plan, and FSDP's three planted predictions, in one JAX process (a plan given
    twice compiles once)."""
    need_jax()
    from symroof.xla.check import check_train_layers, layer_predicted

    ps = plans()
    wrong = planted(layer_predicted(ps["fsdp"]))
    out = check_train_layers([*ps.values(), *[ps["fsdp"]] * len(wrong)],
                             [None] * len(ps) + wrong)
    return dict(zip(ps, out)) | {"planted": out[len(ps):]}


@pytest.mark.parametrize("name", ["dp", "fsdp", "tp", "fsdp+tp", "dp+tp"])
def test_strategy_layer_agrees_with_xla(reports, name):
    report = reports[name]
    assert report.ok, str(report)
    assert report.predicted >= (2 if name != "tp" else 4)


def test_what_xla_does_differently_is_named(reports):
    fsdp = "\n".join(reports["fsdp"].notes)
    assert "reused the result of the earlier all-gather" in fsdp     # no ZeRO-3 re-gather
    assert "the minimum is reduce-scatter" in fsdp                    # grads: one tuple AR
    assert "as one all-reduce" in "\n".join(reports["tp"].notes)      # RS Out + AG dOut


def test_planted_wrong_layer_predictions_are_caught(reports):
    assert [r.ok for r in reports["planted"]] == [False, False, False]


def test_pipelines_and_zero12_are_refused_with_a_reason():
    from symroof.xla.check import layer_case_of

    line8 = sr.mesh("tpu-v5e", {"X": 8}, custom=True)
    z1 = sr.train_plan(TOY, line8, "zero1", batch_tokens=B, seq=SEQ)
    with pytest.raises(ValueError, match="ZeRO-1/2 gather the updated weights"):
        layer_case_of(z1)
    moe = TOY.replace(moe=MoE(E=8, k=2, F=512), name="toy-moe")
    ep = sr.train_plan(moe, line8, "ep", batch_tokens=B, seq=SEQ)
    with pytest.raises(ValueError, match="no experts to split"):
        layer_case_of(ep)
