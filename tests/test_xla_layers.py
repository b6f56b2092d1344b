"""Whole layers against XLA: one Llama-style decode layer under each serving layout (1-D, 1-D
wider than the KV heads, 2-D weight-stationary), and one layer's training step with attention
under DP, FSDP, TP and FSDP + TP, all compiled in ONE JAX process (a module-scoped fixture;
planted predictions reuse the compiled cases).

Expectations are written by hand from the toy's sizes and the book's rules (ch. 3: a
contraction over a sharded dimension is all-reduced; ch. 5: FSDP gathers each weight and
reduce-scatters its gradient, TP gathers In[B_X, D_Y] and reduce-scatters each block's
output), in per-device elements.
"""

import importlib.util
import os

import pytest

import symroof as sr
from symroof.models import MoE

# f32 throughout: element counts are compared, never bytes, and the CPU backend computes
# bf16 in f32 anyway; without the converts XLA compiles these layers in half the time
F32 = {"w_bytes": 4, "act_bytes": 4, "kv_bytes": 4}
SERVE = sr.Transformer(D=128, F=256, L=2, H=8, G=8, d_h=16, V=256, name="toy", **F32)
GQA = SERVE.replace(G=2, name="toy-gqa")
TRAIN = sr.Transformer(D=128, F=512, L=2, H=8, G=8, d_h=16, V=256, name="toy", **F32)
B, S = 8, 64                       # decode: sequences, context
b, T = 16, 8                       # training: sequences of T tokens
D, H, d_h = 128, 8, 16
TOKENS = b * T


def need_jax() -> None:
    """Skip without JAX, except on CI (CI=true), where a missing JAX is a failure."""
    if importlib.util.find_spec("jax") is None:
        if os.environ.get("CI") == "true":
            pytest.fail('CI=true but jax is not installed: pip install -e ".[jax]"')
        pytest.skip('jax is not installed: pip install -e ".[jax]"')


def coll(kind: str, axes: tuple, elements_in: int, elements_out: int) -> dict:
    return {"kind": kind, "axes": axes, "elements_in": elements_in, "elements_out": elements_out}


def plans() -> dict:
    v5e = lambda shape: sr.mesh("tpu-v5e", shape, custom=True)  # noqa: E731  (any CPU mesh)
    step, train, f32 = sr.Step(B, context=S), sr.TrainStep(b, T), {"weights": "fp32"}
    return {
        "1d X4": sr.serve(SERVE, v5e({"X": 4}), step, **f32),
        "1d 4x2": sr.serve(SERVE, v5e("4x2"), step, **f32),
        "1d 2x4 G=2": sr.serve(GQA, v5e("2x4"), step, **f32),       # N = 8 > G = 2
        "2d 4x2": sr.serve(SERVE, v5e("4x2"), step, layout="2d", d_axes="X", **f32),
        "dp": sr.train_plan(TRAIN, v5e({"X": 8}), "dp", step=train),
        "fsdp": sr.train_plan(TRAIN, v5e({"X": 8}), "fsdp", step=train),
        "tp": sr.train_plan(TRAIN, v5e({"Y": 8}), "tp", step=train),
        "fsdp+tp": sr.train_plan(TRAIN, v5e("4x2"), "fsdp+tp", step=train, fsdp=("X",),
                                 tp=("Y",)),
    }


def planted(right: list[dict]) -> list[list[dict]]:
    """Three wrong versions of a prediction: first collective on another axis, its count
    doubled, and one collective XLA never sends."""
    first = right[0]
    return [[{**first, "axes": ("Z",)}, *right[1:]],
            [{**first, "elements_out": 2 * first["elements_out"]}, *right[1:]],
            [*right, coll("all-to-all", first["axes"], 8, 8)]]


@pytest.fixture(scope="module")
def reports():
    need_jax()
    from symroof.xla.check import layer_predicted
    from symroof.xla.check_layers import check_layers, serve_predicted

    ps = plans()
    wrong = {"1d X4": planted(serve_predicted(ps["1d X4"])),
             "fsdp": planted(layer_predicted(ps["fsdp"])),
             "tp": planted(layer_predicted(ps["tp"]))}
    extra = [ps[name] for name, ws in wrong.items() for _ in ws]
    out = check_layers([*ps.values(), *extra],
                       [None] * len(ps) + [w for ws in wrong.values() for w in ws])
    mine = dict(zip(ps, out))
    mine["planted"] = out[len(ps):]
    return mine


@pytest.mark.parametrize("name", ["1d X4", "1d 4x2"])
def test_1d_serving_layer_agrees_with_xla(reports, name):
    """Heads and F over every axis, x replicated: o_proj and W_down contract a sharded
    dimension, so each ends in an AllReduce of [B, D]; nothing else moves."""
    report = reports[name]
    assert report.ok and not report.notes, str(report)
    assert report.matched == report.predicted == 2


def test_1d_serving_wider_than_the_kv_heads(reports):
    """N = 8 > G = 2: the KV cache [B_Y, S, G_X, d_h]. Both AllReduces of [B, D] match. The
    queries [B, H_XY] reach the cache's [B_Y, H_X] by exchanging over Y alone (the chips that
    share a KV-head shard), not over (X, Y) as the plan's two AllToAll rows say; and XLA
    gathers W_q's shard over Y instead of sending the queries, then sends the attention's
    output back with one AllToAll over Y."""
    report = reports["1d 2x4 G=2"]
    assert report.matched == 2, str(report)
    missing = [d for d in report.disagreements if "missing" in d]
    assert len(missing) == 2 and all("all-to-all over (X, Y)" in d for d in missing)
    q = B * H * d_h // 8                                    # [B, H, d_h] over 8 chips
    wq = D * H * d_h // 8                                   # W_q[D, H_XY, d_h]
    assert sorted(report.unexpected, key=str) == sorted(
        [coll("all-to-all", ("Y",), q, q), coll("all-gather", ("Y",), wq, wq * 4)], key=str)


def test_2d_serving_layer(reports):
    """2-D (D over X = 4, F and heads over Y = 2): each block's AllGather_Y of In[B, D_XY]
    and AllReduce_X of its D-contracting outputs match; XLA all-reduces the MLP's output
    where the minimum is the ReduceScatter_Y (a note). Not in the plan: each RMSNorm reads
    all of D from In[B, D_XY], an AllReduce of B sums of squares over (X, Y); the attention
    block's ReduceScatter is missing because the plan's KV cache (heads over every axis)
    leaves the attention's output split over X, which XLA regathers its own way."""
    report = reports["2d 4x2"]
    assert report.predicted == 6 and report.matched == 4, str(report)
    assert any("minimum is reduce-scatter over (Y)" in n for n in report.notes)
    missing = [d for d in report.disagreements if "missing" in d]
    assert len(missing) == 1 and "reduce-scatter over (Y)" in missing[0]
    assert report.unexpected.count(coll("all-reduce", ("X", "Y"), B, B)) == 2


# per strategy, one layer's training step by the book's rules (ch. 5), in per-device
# elements: FSDP gathers each of W_q, W_k, W_v, W_o (D H d_h here, H = G) and W_gate,
# W_up, W_down (D F) forward and again backward and reduce-scatters its gradient; DP
# all-reduces each gradient; TP gathers each block's input x[B_X, D_Y] and reduce-scatters
# its output (attention and MLP; the transposes backward), and, D being split, all-reduces
# each RMSNorm's sums of squares, one a token (two norms, forward and backward)
WEIGHTS = [D * H * d_h] * 4 + [D * 512] * 3


def _layer(data: tuple, X: int, fsdp: tuple, tp: tuple, Y: int) -> list[dict]:
    out = []
    for w in WEIGHTS:
        if fsdp:
            out += [coll("all-gather", fsdp, w // (X * Y), w // Y)] * 2
            out += [coll("reduce-scatter", fsdp, w // Y, w // (X * Y))]
        elif data:
            out += [coll("all-reduce", data, w // Y, w // Y)]
    if tp:
        act, tokens = TOKENS * D // X, TOKENS // X  # [B/X, D] tokens of one data shard
        block = [coll("all-gather", tp, act // Y, act), coll("reduce-scatter", tp, act, act // Y)]
        out += block * 4  # attention and MLP, forward and backward
        out += [coll("all-reduce", tp, tokens, tokens)] * 4
    return out


LAYER = {
    "dp": _layer(("X",), 8, (), (), 1),
    "fsdp": _layer(("X",), 8, ("X",), (), 1),
    "tp": _layer((), 1, (), ("Y",), 8),
    "fsdp+tp": _layer(("X",), 4, ("X",), ("Y",), 2),
}


def _xla_extras(X: int, tp: tuple, Y: int) -> list[dict]:
    """What XLA sends beyond the book's rules, under TP: dIn's partial sums through W_q,
    W_k and W_v all-reduced apart (one tuple of three), and through W_gate and W_up (two),
    where one ReduceScatter of each block's sum is the minimum: three more [B/X, D]."""
    if not tp:
        return []
    act = TOKENS * D // X
    return [coll("all-reduce", tp, act, act)] * 3


EXTRAS = {"dp": [], "fsdp": [], "tp": _xla_extras(1, ("Y",), 8),
          "fsdp+tp": _xla_extras(4, ("Y",), 2)}


@pytest.mark.parametrize("name", list(LAYER))
def test_training_layer_agrees_with_xla(reports, name):
    """The plan's layer (one whole layer of its training rows: attention and MLP) is the
    book's rules collective by collective (``LAYER``), and XLA's program for the layer
    sends every one of them; what XLA sends beyond them is ``EXTRAS``."""
    from symroof.xla import compare
    from symroof.xla.check import layer_predicted

    mine = layer_predicted(plans()[name])
    book = compare(LAYER[name], [{k: v for k, v in p.items() if k != "row"} for p in mine],
                   case=name)
    assert book.ok and not book.unexpected, str(book)
    report = reports[name]
    assert report.predicted == len(LAYER[name]), str(report)
    assert all(": unexpected: " in d for d in report.disagreements), str(report)
    assert sorted(report.unexpected, key=str) == sorted(EXTRAS[name], key=str)
    # where XLA does not send a predicted collective as it stands, it says why: reductions
    # combined into one tuple, the forward's gather of a weight kept for the backward (one
    # compiled program), or an AllReduce where the ReduceScatter is the minimum
    known = ("XLA combined", "XLA reused", "XLA chose all-reduce where the minimum is")
    assert all(any(k in n for k in known) for n in report.notes), str(report)


def test_planted_wrong_predictions_are_caught(reports):
    assert [r.ok for r in reports["planted"]] == [False] * 9
    # a doubled count is either a wrong count of a collective XLA sends, or one it never
    # sends where XLA reuses the forward's gather for the backward (FSDP's first weight)
    says = [("missing",), ("wrong element count", "missing"), ("missing: predicted all-to-all",)]
    for report, say in zip(reports["planted"], says * 3):
        assert any(s in d for s in say for d in report.disagreements), str(report)


def test_layouts_the_oracle_cannot_compile_are_refused():
    from symroof.xla.check_layers import serve_case_of

    odd = SERVE.replace(G=4, name="toy-g4")        # G = 4 on a 2x4 mesh: no leading axes
    wide = sr.serve(odd, sr.mesh("tpu-v5e", "2x4"), sr.Step(B, context=S), weights="fp32")
    with pytest.raises(ValueError, match="G = 4 KV heads need leading axes"):
        serve_case_of(wide)
    moe = sr.serve(SERVE.replace(moe=MoE(E=4, k=2, F=256), name="toy-moe"),
                   sr.mesh("tpu-v5e", {"X": 4}, custom=True), sr.Step(B, context=S))
    with pytest.raises(ValueError, match="dense gated"):
        serve_case_of(moe)


def test_bad_layer_cases_fail_before_jax_with_the_array_named():
    from symroof.xla import LayerCase, compile_layers

    sizes = {"b": 16, "T": 8, "D": 128, "F": 512, "H": 8, "G": 8, "d": 16}
    for specs, says in (({"w_in": ((), ())}, r"no array \['w_in'\] in a train layer"),
                        ({"wq": ((), ())}, "wq has 3 dimensions"),
                        ({"wq": ((), ("Z",), ())}, r"names mesh axes \['Z'\]"),
                        ({"x": (("X",), ("X",), ())}, "x's T = 8 does not split evenly")):
        with pytest.raises(ValueError, match=says):
            compile_layers([LayerCase("train", {"X": 16}, sizes, specs)])
    with pytest.raises(ValueError, match="layer must be one of decode, train"):
        compile_layers([LayerCase("prefill", {"X": 2}, sizes, {})])
