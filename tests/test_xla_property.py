"""symroof's sharded-matmul plans against XLA's partitioner, on random shapes and meshes.

Hypothesis draws a batch of cases (a mesh, one of the book's four cases written in its
notation, sizes that divide the mesh); every case of a batch compiles in ONE JAX process.
Each plan must agree with XLA, exactly or through a named valid alternative (an all-reduce
where the minimum is a reduce-scatter; the other plan of case 2). A planted wrong prediction
must be caught.
"""

import importlib.util
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import symroof as sr


def need_jax() -> None:
    """Skip without JAX, except on CI (CI=true), where a missing JAX is a failure."""
    if importlib.util.find_spec("jax") is None:
        if os.environ.get("CI") == "true":
            pytest.fail('CI=true but jax is not installed: pip install -e ".[jax]"')
        pytest.skip('jax is not installed: pip install -e ".[jax]"')


MESHES = [{"X": 2}, {"X": 4}, {"X": 8}, {"X": 2, "Y": 2}, {"X": 4, "Y": 2}, {"X": 2, "Y": 4}]

# The four cases of ch. 3, on one axis and with a second axis sharding a free dimension so
# that no mesh axis sits idle (XLA would shard the work over an idle axis on its own).
CASES_1D = [
    "A[I_X, J] @ B[J, K] -> [I_X, K]",            # 1: nothing to send
    "A[I, J_X] @ B[J, K] -> [I, K]",              # 2: gather A, or slice B and reduce
    "A[I, J_X] @ B[J_X, K] -> [I, K]",            # 3: AllReduce_X
    "A[I, J_X] @ B[J_X, K] -> [I, K_X]",          # 3: ReduceScatter_X
    "A[I_X, J] @ B[J, K_X] -> [I_X, K]",          # 4: gather B
    "A[I_X, J] @ B[J, K_X] -> [I, K_X]",          # 4: gather A
]
CASES_2D = [
    "A[I_X, J] @ B[J, K_Y] -> [I_X, K_Y]",        # 1
    "A[I_Y, J_X] @ B[J, K] -> [I_Y, K]",          # 2
    "A[I_Y, J_X] @ B[J_X, K] -> [I_Y, K]",        # 3: AllReduce_X
    "A[I_X, J_Y] @ B[J_Y, K] -> [I_X, K]",        # 3 on the other axis
    "A[I_XY, J] @ B[J, K] -> [I, K]",             # 1, then AllGather_XY of the product
]


@st.composite
def plan(draw):
    shape = draw(st.sampled_from(MESHES))
    text = draw(st.sampled_from(CASES_2D if len(shape) == 2 else CASES_1D))
    n = 1
    for size in shape.values():
        n *= size
    I, J, K = (draw(st.sampled_from([1, 2, 4])) * 8 * n for _ in range(3))
    width = draw(st.sampled_from([2, 4]))  # bf16 or f32 operands, product and partial sums
    mesh = sr.mesh("tpu-v5e", "x".join(map(str, shape.values())), custom=True)  # any shape
    return sr.shard_matmul(mesh, text,
                           I=I, J=J, K=K, x_bytes=width, w_bytes=width)


@settings(max_examples=2, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(plan(), min_size=12, max_size=12))
def test_every_plan_agrees_with_xla(plans):
    need_jax()
    from symroof.xla.check import check_matmuls

    reports = check_matmuls(plans)
    bad = [str(r) for r in reports if not r.ok]
    assert not bad, "\n".join(bad)


@pytest.fixture(scope="module")
def book_plans():
    m1, m2 = sr.mesh("tpu-v5e", "4x1", custom=True), sr.mesh("tpu-v5e", "4x2")
    return [sr.shard_matmul(m1, "A[I, J_X] @ B[J_X, K] -> [I, K]", I=64, J=128, K=256),
            sr.shard_matmul(m1, "A[I, J_X] @ B[J_X, K] -> [I, K_X]", I=64, J=128, K=256),
            sr.shard_matmul(m2, "A[I_X, J] @ B[J, K_Y] -> [I_X, K_Y]", I=64, J=128, K=256)]


def test_planted_wrong_predictions_are_caught(book_plans):
    need_jax()
    from symroof.xla.check import check_matmuls

    right = book_plans[0].predicted()  # one all-reduce over X of I*K elements
    (c,) = right
    planted = [
        [{**c, "kind": "all-gather"}],                                   # wrong kind
        [{**c, "axes": ("Y",)}],                                         # wrong axis
        [{**c, "elements_in": c["elements_in"] + 1,
          "elements_out": c["elements_out"] + 1}],                       # off by one element
        [],                                                              # missing
    ]
    reports = check_matmuls([book_plans[0]] * len(planted), planted)
    for wrong, report in zip(planted, reports):
        assert not report.ok, f"planted {wrong} was not caught"
    (ok,) = check_matmuls([book_plans[0]])
    assert ok.ok and ok.matched == 1


def test_reduce_scatter_answered_by_all_reduce_is_a_note(book_plans):
    need_jax()
    from symroof.xla.check import check_matmuls

    reports = check_matmuls(book_plans)
    assert all(r.ok for r in reports), [str(r) for r in reports]
    assert any("all-reduce where the minimum is reduce-scatter" in n for n in reports[1].notes)
    assert reports[2].predicted == 0 and reports[2].matched == 0  # case 1: nothing sent
