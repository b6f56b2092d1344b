"""The XLA oracle against the book's sharded-matmul table (ch3 § Computation With Sharded
Arrays), and `compare` on planted predictions.

Every expectation below is written by hand from the book, in its notation: `x[B, D_X]` is
x with D split over mesh axis X; counts are per-device elements. All cases compile in ONE JAX
process (a module-scoped fixture): JAX's startup costs seconds, a compile milliseconds.
"""

import importlib.util
import os

import pytest

from symroof.xla import compare, compile_matmuls, matmul_case
from symroof.xla import oracle as oracle_module

B, D, F = 64, 128, 256  # x[B, D] @ w[D, F]: the oracle's (M, K, N)
XY42, XY22 = {"X": 4, "Y": 2}, {"X": 2, "Y": 2}
_ = ()


def need_jax() -> None:
    """Skip without JAX, except on CI (CI=true), where a missing JAX is a failure."""
    if importlib.util.find_spec("jax") is None:
        if os.environ.get("CI") == "true":
            pytest.fail('CI=true but jax is not installed: pip install -e ".[jax]"')
        pytest.skip('jax is not installed: pip install -e ".[jax]"')


def coll(kind: str, axes: tuple, elements_in: int, elements_out: int) -> dict:
    return {"kind": kind, "axes": axes, "elements_in": elements_in, "elements_out": elements_out}


# id: (mesh, x spec, w spec, out spec, dtype, predicted collectives, devices splitting the dot)
BOOK = {
    # case 1, no contracting dim sharded: A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y], nothing to do
    "case1 2x2": (XY22, (("X",), _), (_, ("Y",)), (("X",), ("Y",)), "bf16", [], 4),
    "case1 4x2": (XY42, (("X",), _), (_, ("Y",)), (("X",), ("Y",)), "bf16", [], 8),
    # case 2, x[B, D_X] @ w[D, F]: AllGather_X(x), then a local matmul on every device
    "case2 gather x": (
        {"X": 4}, (_, ("X",)), (_, _), (_, _), "bf16",
        [coll("all-gather", ("X",), B * D // 4, B * D)], 1,
    ),
    # case 3, x[B, D_X] @ w[D_X, F] -> C[B, F]{U_X}, then AllReduce_X of B*F
    "case3 AR": (
        {"X": 4}, (_, ("X",)), (("X",), _), (_, _), "bf16",
        [coll("all-reduce", ("X",), B * F, B * F)], 4,
    ),
    "case3 AR over XY": (
        XY42, (_, ("X", "Y")), (("X", "Y"), _), (_, _), "f32",
        [coll("all-reduce", ("X", "Y"), B * F, B * F)], 8,
    ),
    "case3 AR with B_X": (  # x[B_X, D_Y] @ w[D_Y, F] -> [B_X, F]: AllReduce_Y of (B/X)*F
        XY42, (("X",), ("Y",)), (("Y",), _), (("X",), _), "f32",
        [coll("all-reduce", ("Y",), B // 4 * F, B // 4 * F)], 8,
    ),
    "case3 AR then AG": (  # x[B_Y, D_X] @ w[D_X, F] -> [B, F]: AllReduce_X, AllGather_Y of B
        XY42, (("Y",), ("X",)), (("X",), _), (_, _), "f32",
        [coll("all-reduce", ("X",), B // 2 * F, B // 2 * F),
         coll("all-gather", ("Y",), B // 2 * F, B * F)], 8,
    ),
    "case3 idle Y shards F": (  # x[B, D_X] @ w[D_X, F] -> [B, F_Y]: w sliced by Y, AR_X
        XY22, (_, ("X",)), (("X",), _), (_, ("Y",)), "f32",
        [coll("all-reduce", ("X",), B * F // 2, B * F // 2)], 4,
    ),
    # case 3 with a sharded output: the minimum is ReduceScatter_X to [B, F_X]
    "case3 RS": (
        {"X": 4}, (_, ("X",)), (("X",), _), (_, ("X",)), "bf16",
        [coll("reduce-scatter", ("X",), B * F, B * F // 4)], 4,
    ),
    "case3 RS 4x2": (
        XY42, (_, ("X",)), (("X",), _), (_, ("X",)), "f32",
        [coll("reduce-scatter", ("X",), B * F, B * F // 4)], 4,
    ),
    # case 4, x[B_X, D] @ w[D, F_X] -> [B_X, F]: AllGather_X(w)
    "case4 gather w": (
        {"X": 4}, (("X",), _), (_, ("X",)), (("X",), _), "bf16",
        [coll("all-gather", ("X",), D * F // 4, D * F)], 4,
    ),
}  # fmt: skip
NOTED = {"case3 RS", "case3 RS 4x2"}  # XLA's CPU partitioner all-reduces, then slices


@pytest.fixture(scope="module")
def xla():
    need_jax()
    cases = [(m, x, w, o, B, D, F, dt) for m, x, w, o, dt, _p, _n in BOOK.values()]
    return dict(zip(BOOK, compile_matmuls(cases)))


@pytest.mark.parametrize("name", BOOK)
def test_book_case(xla, name):
    *_, predicted, _devices = BOOK[name]
    report = compare(predicted, xla[name])
    assert report.ok, str(report)
    assert bool(report.notes) == (name in NOTED), str(report)
    if name in NOTED:
        assert "XLA chose all-reduce where the minimum is reduce-scatter" in report.notes[0]


@pytest.mark.parametrize("name", BOOK)
def test_flops_per_device(xla, name):
    """XLA's per-device FLOPs cover the dot share (2BDF / devices that split it), plus a few
    elementwise ops (converts, slices) on top."""
    dot = 2 * B * D * F // BOOK[name][-1]
    assert dot <= xla[name].flops <= 1.1 * dot


def test_bf16_reductions_may_be_f32(xla):
    """The CPU backend may move a bf16 matmul's partial sums as f32: counts, not bytes."""
    [c] = xla["case3 AR"].collectives
    assert c.dtype in ("bf16", "f32") and c.elements_out == B * F


@pytest.mark.parametrize(
    ("planted", "says"),
    [
        (coll("all-gather", ("X",), B * F, B * F), "missing: predicted all-gather"),  # kind
        (coll("all-reduce", ("Y",), B * F, B * F), "missing: predicted all-reduce over (Y)"),
        (coll("all-reduce", ("X",), B * F // 2, B * F // 2), "wrong element count"),
    ],
)
def test_planted_wrong_prediction_is_caught(xla, planted, says):
    report = compare([planted], xla["case3 AR"])
    assert not report.ok and any(says in d for d in report.disagreements), str(report)
    assert all(d.startswith(xla["case3 AR"].name) for d in report.disagreements)


# compare() on its own, no JAX
AR_X = coll("all-reduce", ("X",), 1024, 1024)


def test_compare_is_order_insensitive():
    observed = [coll("all-gather", ("X", "Y"), 8, 64), AR_X]
    assert compare([AR_X, coll("all-gather", ("Y", "X"), 8, 64)], observed).ok


def test_all_reduce_for_reduce_scatter_is_a_note():
    report = compare([coll("reduce-scatter", ("X",), 1024, 256)], [AR_X], case="c")
    assert report.ok and report.notes == (
        "c: XLA chose all-reduce where the minimum is reduce-scatter over (X) "
        "(1024 elements vs 256 elements per device)",
    )


def test_all_gather_in_two_steps_is_a_note_both_ways():
    """Decision: one all-gather over (X, Y) and all-gathers over X then Y (either order) that
    chain their counts deliver the same data; the cost differs, so a note, never a silent match."""
    whole = [coll("all-gather", ("X", "Y"), 8, 64)]
    steps = [coll("all-gather", ("Y",), 32, 64), coll("all-gather", ("X",), 8, 32)]
    for predicted, observed, says in ((whole, steps, "in 2 steps"), (steps, whole, "as one")):
        report = compare(predicted, observed, case="c")
        assert report.ok and len(report.notes) == 1 and says in report.notes[0], str(report)
    assert not compare(whole, steps[:1]).ok  # half a chain is not the whole


def test_a_tuple_no_group_explains_is_compared_piece_by_piece():
    """Decision: XLA's combiner may put a layer's six gradients in one tuple all-reduce of
    which a plan predicts two; each piece is then compared alone, and the rest is kept as
    data (``unexpected``) to be compared in turn."""
    tuple_ar = {**coll("all-reduce", ("X",), 16 + 4 + 4, 16 + 4 + 4),
                "operand_shapes": ((4, 4), (2, 2), (4, 1)),
                "result_shapes": ((4, 4), (2, 2), (4, 1))}
    report = compare([coll("all-reduce", ("X",), 16, 16)], [tuple_ar], case="c")
    assert report.matched == 1 and report.notes == (
        "c: XLA combined 3 all-reduces over (X) into one tuple; compared piece by piece",)
    assert report.unexpected == (coll("all-reduce", ("X",), 4, 4),) * 2
    assert compare([coll("all-reduce", ("X",), 4, 4)] * 2, report.unexpected).ok
    a2a = {**coll("all-to-all", ("X",), 8, 8), "operand_shapes": ((1, 4),) * 2,
           "result_shapes": ((1, 4),) * 2}   # one exchange, one piece per peer: never split
    assert compare([coll("all-to-all", ("X",), 8, 8)], [a2a]).ok


def test_report_text():
    report = compare([AR_X], [coll("all-to-all", ("X",), 4, 4)], case="c")
    assert str(report) == (
        "c: 2 disagreement(s) (0 of 1 predicted collectives matched exactly, 0 notes)\n"
        "  - c: missing: predicted all-reduce over (X) (1024 -> 1024 elements), "
        "XLA emitted no such collective\n"
        "  - c: unexpected: XLA emitted all-to-all over (X) (4 -> 4 elements), not predicted"
    )


def test_unknown_input_fails_loudly():
    with pytest.raises(ValueError, match="'allreduce'"):
        compare([coll("allreduce", ("X",), 1, 1)], [])
    with pytest.raises(TypeError, match="tuple of mesh-axis names"):
        compare([coll("all-reduce", "XY", 1, 1)], [])
    with pytest.raises(ValueError, match="uses a mesh axis twice"):
        matmul_case(({"X": 4}, (("X",), ("X",)), (_, _), (_, _), B, D, F))
    with pytest.raises(ValueError, match="not split evenly"):
        matmul_case(({"X": 3}, (("X",), _), (_, _), (_, _), B, D, F))
    with pytest.raises(ValueError, match="unknown dtype"):
        matmul_case(({"X": 4}, (_, _), (_, _), (_, _), B, D, F, "int7"))


def test_missing_jax_says_how_to_install(monkeypatch):
    monkeypatch.setattr(oracle_module.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ImportError, match=r'pip install -e "\.\[jax\]"'):
        compile_matmuls([({"X": 4}, (_, ("X",)), (("X",), _), (_, _), B, D, F)])
