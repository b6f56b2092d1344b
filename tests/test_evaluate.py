"""symroof.evaluate: vectorised values equal SymPy's own substitution, broadcast, cached."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

import symroof as sr
from symroof.evaluate import cache_info, evaluate, free_symbols
from symroof.models.sweep import sweep_step_time
from symroof.symbols import B, D, F, G, H, L, N, S, T, V, d_h

LLAMA = sr.model("llama-3.1-8b")
H100 = sr.chip("h100")
DIMS = {"D": 64, "F": 176, "L": 3, "H": 8, "G": 2, "d_h": 16, "V": 1000}
POINTS = [{"B": 1, "T": 1, "S": 1}, {"B": 3, "T": 5, "S": 17}, {"B": 8, "T": 1, "S": 4096}]


def _exact(expr: sp.Expr, point: dict) -> sp.Expr:
    return sp.sympify(expr).subs({sr.symbols.lookup(k): v for k, v in point.items()})


@pytest.mark.parametrize("point", POINTS)
def test_per_op_table_equals_subs_exactly(point):
    rows = sr.Transformer().ops(B, T, S - T)
    values = {**DIMS, **point}
    table = evaluate(rows, values)
    assert list(table) == list(rows)
    for key, cost in rows.items():
        for field, expr in cost.as_dict().items():
            exact = _exact(expr, values)
            assert exact.is_integer  # counts: float64 holds them exactly below 2**53
            assert table[key][field] == int(exact), (key, field)
        assert table[key]["bytes"] == int(_exact(cost.bytes, values))


def test_time_bound_and_max_match_subs():
    tb = sr.time(LLAMA.whole(B, 1, S - 1), H100)
    for b, s in [(1, 1), (7, 300), (512, 131072)]:
        got = evaluate(tb, B=b, S=s)
        assert got["lower"] == pytest.approx(float(_exact(tb.lower, {"B": b, "S": s})), rel=1e-14)
        assert got["upper"] == pytest.approx(float(_exact(tb.upper, {"B": b, "S": s})), rel=1e-14)
        assert got["t_net"] == 0.0
        assert evaluate(tb.lower, B=b, S=s) == pytest.approx(got["lower"], rel=1e-14)


def test_max_is_elementwise_with_scalars_and_arrays():
    out = evaluate(sp.Max(B, 3 * D, 5), B=np.array([1, 9, 20]), D=2)
    assert out.tolist() == [6.0, 9.0, 20.0]
    assert evaluate(sp.Min(B, D), B=np.arange(1, 5)[:, None], D=np.arange(1, 4)).shape == (4, 3)


def test_broadcasting_shapes():
    cost = sr.matmul(B, D, F)
    out = evaluate(cost, B=np.arange(1, 4)[:, None], D=np.array([8, 16]), F=32)
    assert {k: v.shape for k, v in out.items()} == dict.fromkeys(out, (3, 2))
    assert out["net_bytes"].tolist() == [[0.0, 0.0]] * 3  # a constant leaf, broadcast
    assert out["weight_bytes"][0].tolist() == out["weight_bytes"][2].tolist()  # free of B
    scalar = evaluate(cost, B=2, D=3, F=4)
    assert isinstance(scalar["flops"], np.float64) and scalar["flops"] == 48
    with np.errstate(all="raise"):
        assert np.isinf(evaluate(sr.Cost(flops=N), N=[1, 2])["intensity"]).all()  # 0 bytes
    shapes = r"do not broadcast together \(B: \(3,\), D: \(2,\), F: \(\)\)"
    with pytest.raises(ValueError, match=shapes):
        evaluate(cost, B=np.arange(1, 4), D=np.arange(1, 3), F=1)


def test_second_call_does_not_recompile():
    expr = 7 * B * D + 3 * N  # a fresh expression, not compiled by any other test
    before = cache_info()
    evaluate(expr, B=1, D=2, N=3)
    mid = cache_info()
    evaluate(expr, B=np.arange(1, 11), D=2, N=[[1], [2]])
    evaluate(expr, {B: 5, "D": 1, N: 2})  # Symbols or names, same compiled function
    after = cache_info()
    assert (mid.misses - before.misses, after.misses - mid.misses) == (1, 0)
    assert after.hits - mid.hits == 2


def test_step_time_evaluates_both_views():
    st = sr.step_time(LLAMA, H100, B, 1, S - 1)
    got = evaluate(st, B=np.array([1, 64]), S=2048)
    assert set(got) == {"whole", "groups", "per_op_sum", "ratio"}
    for i, b in enumerate((1, 64)):
        ref = sr.step_time(LLAMA, H100, b, 1, 2047)
        assert got["per_op_sum"][i] == pytest.approx(float(ref.per_op_sum), rel=1e-13)
        assert got["ratio"][i] == pytest.approx(float(ref.ratio), rel=1e-13)
        assert got["whole"]["lower"][i] == pytest.approx(float(ref.whole.lower), rel=1e-13)


def test_sweep_step_time_grid():
    batch, context = np.arange(1, 1001)[:, None], np.arange(1, 1001)[None, :]
    grid = sweep_step_time(LLAMA, H100, batch=batch, context=context)
    assert set(grid) == {"t_math", "t_mem", "t_net", "t_host", "lower", "upper"}
    assert all(v.shape == (1000, 1000) for v in grid.values())
    for b, s in [(1, 1), (64, 999), (1000, 1000)]:
        ref = sr.step_time(LLAMA, H100, b, 1, s - 1).whole
        assert grid["lower"][b - 1, s - 1] == pytest.approx(float(ref.lower), rel=1e-13)
        assert grid["upper"][b - 1, s - 1] == pytest.approx(float(ref.upper), rel=1e-13)
    per_op = sweep_step_time(LLAMA, H100, batch=[1, 8], context=4096, new_tokens=4,
                             per_op=True)
    ref = sr.step_time(LLAMA, H100, 8, 4, 4092)
    assert per_op["ratio"][1] == pytest.approx(float(ref.ratio), rel=1e-13)


@pytest.mark.parametrize("kwargs, message", [
    ({"batch": 0, "context": 5}, "batch must be >= 1 everywhere, got 0"),
    ({"batch": 1, "context": [3, 4], "new_tokens": 4}, r"context must be >= new_tokens \(4\)"),
    ({"batch": 1, "context": 5, "new_tokens": 0}, "new_tokens must be a positive integer"),
])
def test_sweep_step_time_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        sweep_step_time(LLAMA, H100, **kwargs)


def test_sweep_step_time_needs_numbers():
    with pytest.raises(ValueError, match="still has free symbols"):
        sweep_step_time(sr.Transformer(), H100, batch=1, context=2)


def test_errors_name_the_symbols():
    with pytest.raises(ValueError, match=r"unknown symbol 'X'; free symbols: B, D, F"):
        evaluate(sr.matmul(B, D, F), B=1, D=1, F=1, X=2)
    with pytest.raises(ValueError, match=r"missing values for D, F; free symbols: B, D, F"):
        evaluate(sr.matmul(B, D, F), B=1)
    with pytest.raises(ValueError, match="other assumptions"):
        evaluate(2 * B, {sp.Symbol("B"): 1})
    with pytest.raises(ValueError, match=r"value of B must be a number .* got 'many'"):
        evaluate(2 * B, B="many")
    with pytest.raises(ValueError, match="symbol 'B' is given twice"):
        evaluate(2 * B, {B: 1, "B": 2})
    with pytest.raises(ValueError, match="free symbols: none"):
        evaluate(sp.Integer(3), B=1)
    with pytest.raises(TypeError, match="evaluate\\(\\) takes an expression"):
        evaluate(object())


def test_free_symbols_sorted_by_name():
    assert free_symbols(sr.Transformer().ops(B, T, S - T)) == [B, D, F, G, H, L, S, T, V, d_h]
    assert free_symbols(sr.time(sr.Cost(flops=N), sr.symbolic_chip())) == [
        sp.Symbol("C", positive=True), N]
    assert evaluate(sp.Integer(3)) == 3.0


def test_crossovers_evaluate_over_their_symbols():
    ctx = sr.ctx_star(sr.Transformer())
    values = {"D": 4096, "F": 14336, "L": 32, "H": 32, "G": 8, "d_h": 128, "V": 128256}
    assert evaluate(ctx, values) == pytest.approx(float(sr.ctx_star(LLAMA)), rel=1e-14)
    gpu = sr.symbolic_chip()
    b_star = sr.critical_batch(gpu)  # C/W for bf16 weights
    C, W = free_symbols(b_star)
    out = evaluate(b_star, {C: np.array([989e12, 1.97e14]), W: np.array([[3.35e12], [8.2e11]])})
    assert out.shape == (2, 2)
    assert out[0, 0] == pytest.approx(float(sr.critical_batch(H100)), rel=1e-14)


def test_values_of_positive_symbols_must_be_positive():
    mm = sr.matmul(B, D, F)
    with pytest.raises(ValueError, match="B must be positive, got -1"):
        evaluate(mm.intensity, B=-1, D=2, F=3)
    with pytest.raises(ValueError, match="D must be positive, got 0"):
        evaluate(mm.intensity, B=1, D=np.array([4096, 0]), F=3)
