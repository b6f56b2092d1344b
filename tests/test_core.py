"""Cost algebra, the op catalogue, limits and crossovers: seed 000's exact results."""

import pytest
import sympy as sp

import symroof as sr
from symroof.ops import einsum_flops
from symroof.symbols import B, D, F, L, N, S, T, lookup


def test_cost_defaults_and_sum():
    c = sr.Cost(flops=2 * N)
    assert c.useful_flops == 2 * N
    assert c.bytes == 0 and c.net_bytes == 0
    parts = [sr.Cost(flops=1, act_bytes=2), sr.Cost(flops=3, weight_bytes=4, kv_bytes=5)]
    total = sum(parts)
    assert (total.flops, total.bytes) == (4, 11)  # 1 + 3 FLOPs; 2 + 4 + 5 bytes


def test_cost_scales_by_symbol_and_substitutes():
    layer = sr.matmul(B, D, F)
    model = L * layer
    assert model.flops == 2 * B * D * F * L
    assert model.subs({B: 2, D: 3, F: 5, L: 7}).flops == 2 * 2 * 3 * 5 * 7
    assert model.subs(B=2, D=3, F=5, L=7).weight_bytes == 2 * 3 * 5 * 7  # D F L bf16 weights


def test_cost_is_frozen_and_exact():
    c = sr.Cost(flops=0.5, act_bytes=8.1e11)
    assert c.flops == sp.Rational(1, 2) and c.act_bytes == 810_000_000_000
    with pytest.raises(AttributeError):
        c.flops = 3  # type: ignore[misc]


@pytest.mark.parametrize("bad", [{"D": -1}, {"D": 0}, {"D": 2.5}, {"D": "abc"}, {"D": True}])
def test_cost_subs_rejects_bad_dimensions(bad):
    name, value = next(iter(bad.items()))
    with pytest.raises(ValueError, match=f"{name} must be a positive integer.*{value!r}"):
        sr.matmul(B, D, F).subs(bad)


def test_unknown_symbol_name_lists_the_table():
    with pytest.raises(ValueError, match="unknown symbol 'Q'.*d_h"):
        lookup("Q")
    with pytest.raises(ValueError, match="unknown symbol 'Q'"):
        sr.matmul(B, D, F).subs(Q=3)


def test_dot_product_exact_intensity_and_limit():
    c = sr.dot(N, exact=True)
    assert c.flops == 2 * N - 1  # N multiplies + N - 1 adds
    assert c.bytes == 4 * N + 2  # two bf16 vectors in, one bf16 scalar out
    assert sp.simplify(c.intensity - (2 * N - 1) / (4 * N + 2)) == 0
    assert sr.limit(c.intensity, N) == sp.Rational(1, 2)


@pytest.mark.parametrize("widths, regime", [
    ({}, B),                                            # bf16 everywhere
    ({"w_bytes": 1}, 2 * B),                            # int8 weights, bf16 activations
    ({"x_bytes": 1, "w_bytes": 1, "out_bytes": 1}, 2 * B),  # all int8
])
def test_matmul_intensity_regimes(widths, regime):
    intensity = sr.matmul(B, D, F, **widths).intensity
    assert sr.leading(intensity, small=B) == regime
    assert sr.leading(intensity, large=(D, F)) == regime


def test_per_example_matrices_tend_to_a_constant():
    c = sr.batched_matmul(B, D, F, x_bytes=1, w_bytes=1, out_bytes=1)
    assert sp.simplify(c.intensity - 2 * B * D * F / (B * D + B * D * F + B * F)) == 0
    assert sr.leading(c.intensity, large=(D, F)) == 2
    assert sr.limit(sr.limit(c.intensity, D), F) == 2


def test_matvec_is_matmul_with_batch_one():
    assert sr.matvec(D, F) == sr.matmul(1, D, F)
    assert sr.leading(sr.matvec(D, F).intensity, large=(D, F)) == 1


@pytest.mark.parametrize("spec, shapes, expected", [
    ("bd,df->bf", ((B, D), (D, F)), 2 * B * D * F),
    ("btd,dnh->btnh", ((B, T, D), (D, 32, 128)), 2 * B * T * D * 32 * 128),
    ("btkgh,bskh->btskg", ((B, T, 8, 4, 128), (B, S, 8, 128)), 2 * B * T * S * 8 * 4 * 128),
    ("bd,bd->bd", ((B, D), (B, D)), B * D),             # nothing contracted: no factor 2
])
def test_einsum_rule(spec, shapes, expected):
    assert sp.expand(einsum_flops(spec, *shapes) - expected) == 0


def test_einsum_equals_matching_matmul():
    assert sr.einsum("bd,df->bf", (B, D), (D, F)).flops == sr.matmul(B, D, F).flops


@pytest.mark.parametrize("spec, shapes, message", [
    ("bd,df->bq", ((2, 3), (3, 4)), "output letter 'q'"),
    ("bd,df->bf", ((2, 3), (4, 5)), "letter 'd'.*two sizes"),
    ("bd,df->bf", ((2, 3),), "2 operands but 1 shapes"),
    ("bd,df->bf", ((2, 3, 4), (3, 4)), "3 dimensions"),
    ("not a spec", ((2,),), "spec must look like"),
    ("bd,df->bb", ((2, 3), (3, 4)), "repeats a letter"),
])
def test_einsum_errors(spec, shapes, message):
    with pytest.raises(ValueError, match=message):
        einsum_flops(spec, *shapes)


@pytest.mark.parametrize("call", [
    lambda: sr.matmul(-1, D, F), lambda: sr.matmul(0, D, F), lambda: sr.dot("many"),
    lambda: sr.matmul(B, 2.5, F), lambda: sr.matmul(B, D, F, w_bytes=0),
])
def test_ops_reject_bad_dimensions(call):
    with pytest.raises(ValueError, match="must be a positive"):
        call()


def test_crossover_returns_exact_positive_root_for_integer_symbols():
    # B is integer=True: a naive solve would drop the non-integer root 9850/41.
    v5e = sr.chip("tpu-v5e")
    root = sr.crossover(sr.leading(sr.matmul(B, D, F).intensity, small=B),
                        v5e.critical_intensity(), B)
    assert root == sp.Rational(197_000_000_000_000, 820_000_000_000)


def test_crossover_quadratic_picks_physical_root():
    assert sr.crossover(S**2 - S, 6, S) == 3  # roots 3 and -2
    with pytest.raises(ValueError, match="no positive root"):
        sr.crossover(S + 1, 0, S)


def test_critical_batch_numbers():
    v5e, h100 = sr.chip("tpu-v5e"), sr.chip("h100")
    assert float(sr.critical_batch(v5e)) == pytest.approx(240.24, abs=0.01)
    assert float(sr.critical_batch(v5e, w_bytes=1)) == pytest.approx(120.12, abs=0.01)
    assert float(sr.critical_batch(h100)) == pytest.approx(989e12 / 3.35e12)
    book_v5e = v5e.replace(hbm_bw=8.1e11, note="the book's problem 1 assumes 8.1e11 B/s")
    int8 = sr.critical_batch(book_v5e, dtype="int8", x_bytes=1, w_bytes=1)
    assert float(int8) == pytest.approx(3.94e14 / 8.1e11 / 2)  # 486 / 2 = 243


def test_critical_batch_exact_in_d_and_f_is_above_the_regime_estimate():
    v5e = sr.chip("tpu-v5e")
    approx = float(sr.critical_batch(v5e, w_bytes=1))
    big = float(sr.critical_batch(v5e, w_bytes=1, D=4096, F=4096))
    small = float(sr.critical_batch(v5e, w_bytes=1, D=1024, F=1024))
    assert approx < big < small
    assert 1.5 < small / big < 2.5  # the book: D=F=1024 nearly doubles the critical batch
    assert sr.critical_batch(v5e, D=128, F=128) == sp.oo  # never compute-bound


def test_symbolic_chip_gives_c_over_w():
    chip = sr.symbolic_chip()
    C, W = sp.Symbol("C", positive=True), sp.Symbol("W", positive=True)
    assert sr.critical_batch(chip) == C / W
    assert sr.critical_batch(chip, w_bytes=1) == C / (2 * W)


def test_time_bounds_and_bound_kind():
    h100 = sr.chip("h100")
    t = sr.time(sr.matmul(4096, 4096, 4096), h100)
    assert t.lower == sp.Max(t.t_math, t.t_mem)
    assert t.upper == t.t_math + t.t_mem
    assert t.bound == "compute"
    assert sr.time(sr.matvec(4096, 4096), h100).bound == "memory"
    assert float(t.upper) <= 2 * float(t.lower)  # the book: bounds differ by at most 2x


def test_two_chip_matmul_is_network_bound_below_d_star():
    two = sr.mesh(sr.chip("tpu-v5e"), {"X": 2}, wrap=False, hop_latency=0)

    def plan(**sizes):
        return sr.shard_matmul(two, "X[B, D_X] @ W[D_X, F] -> [B, F]", **sizes)

    d_star = sr.crossover(plan().t_math, plan().t_comms, D)
    assert round(float(d_star)) == 8756  # the book: D > 8755
    assert plan(B=256, D=8192, F=8192).bound == "network"
    assert plan(B=256, D=16384, F=8192).bound == "compute"


def test_latex_golden_strings():
    assert sr.latex(sr.matmul(B, D, F).intensity) == r"\frac{B D F}{B D + B F + D F}"
    assert sr.latex(sr.dot(N, exact=True).intensity) == r"\frac{2 N - 1}{4 N + 2}"
    assert sr.latex(sr.Cost(flops=2 * N, act_bytes=4 * N)) == (
        r"\begin{aligned} \text{FLOPs} &= 2 N \\ \text{activation bytes} &= 4 N \end{aligned}")
    assert sr.latex((N, 2 * N)) == "N = 2 N"


def test_subs_refuses_a_lookalike_symbol():
    lookalike = sp.Symbol("D")  # no assumptions: a different symbol to SymPy
    with pytest.raises(ValueError, match="not the table's D"):
        sr.matmul(B, D, F).subs({lookalike: 4})


def test_equal_costs_hash_equally():
    a = sr.Cost(flops=2 * B * (D + F))
    b = sr.Cost(flops=2 * B * D + 2 * B * F)
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
