"""Sharded matmuls in the book's notation (ch. 3) against its rooflines, symbolically.

Expected expressions are the book's (book_formulas.md section 4): alpha = C / W_ici, with
W_ici = 2 W_1 the bidirectional per-axis bandwidth; bf16 everywhere unless varied.
"""

import pytest
import sympy as sp

import symroof as sr
from symroof.symbols import B, D, F, X

chip = sr.symbolic_chip()
C, W1 = chip.peak(), chip.link_bw
W_ici = 2 * W1
ring = sr.mesh(chip, {"X": X}, wrap=True)


def same(a, b):
    return sp.simplify(a - b) == 0


def test_gather_weights_then_multiply_is_comms_bound_below_alpha():
    mm = sr.shard_matmul(ring, "X[B, D] @ W[D_X, F] -> [B, F]", strategy="gather")
    assert [s.collective.kind for s in mm.steps] == ["all-gather"]
    assert same(mm.t_math, 2 * B * D * F / C) and same(mm.t_comms, 2 * D * F / W_ici)
    assert same(mm.crossover(B), C / W_ici)  # comms-bound iff B < alpha


def test_multiply_shards_then_all_reduce_caps_the_mesh_at_D_over_2_alpha():
    mm = sr.shard_matmul(ring, "X[B, D_X] @ W[D_X, F] -> [B, F]")
    assert same(mm.t_math, 2 * B * D * F / (X * C))
    assert same(mm.t_comms, 4 * B * F / W_ici)  # AllReduce of the bf16 [B, F] partials
    assert same(sr.crossover(mm.t_math, mm.t_comms, X), D * W_ici / (2 * C))
    rs = sr.shard_matmul(ring, "X[B, D_X] @ W[D_X, F] -> [B, F_X]")   # ReduceScatter: X < D/alpha
    assert same(sr.crossover(rs.t_math, rs.t_comms, X), D * W_ici / C)


def test_gather_versus_reduce_crossover_is_D_equal_2B():
    text = "X[B, D] @ W[D_X, F] -> [B, F]"
    gather = sr.shard_matmul(ring, text, strategy="gather")
    reduce = sr.shard_matmul(ring, text, strategy="reduce")
    assert [s.collective.kind for s in reduce.steps] == ["all-reduce"]
    assert sr.crossover(gather.t_comms, reduce.t_comms, D) == 2 * B
    # auto picks the plan with less communication where the sizes are numbers
    assert sr.shard_matmul(sr.mesh("tpu-v5e", "16x1", custom=True), text, B=64, D=8192, F=8192,
                           ).strategy == "reduce"        # D > 2B: reduce after
    assert sr.shard_matmul(sr.mesh("tpu-v5e", "16x1", custom=True), text, B=8192, D=1024, F=8192,
                           ).strategy == "gather"


def test_chapter_one_two_chip_example_is_the_X_equals_2_case():
    # one link, one way; chapter 1 leaves latency out (with it, D* depends on B F)
    two = sr.mesh(sr.chip("tpu-v5e"), {"X": 2}, wrap=False, hop_latency=0)
    mm = sr.shard_matmul(two, "X[B, D_X] @ W[D_X, F] -> [B, F]")
    d_star = sr.crossover(mm.t_math, mm.t_comms, D)
    assert d_star == sp.Rational(78800, 9)  # 8755.6, as derivation 01 and the book
    assert mm.cost.net_bytes == 2 * B * F    # the book: the 2BF bytes of partial sums (bf16)


def test_case_four_gathers_the_operand_whose_dimension_the_output_drops():
    m = sr.mesh("tpu-v5e", "4x4")
    keep_b = sr.shard_matmul(m, "A[I_X, J] @ B[J, K_X] -> [I_X, K]", I=64, J=128, K=256)
    keep_a = sr.shard_matmul(m, "A[I_X, J] @ B[J, K_X] -> [I, K_X]", I=64, J=128, K=256)
    assert str(keep_b.steps[0]).startswith("AllGather_X B[J, K_X]")
    assert str(keep_a.steps[0]).startswith("AllGather_X A[I_X, J]")


def test_per_chip_flops_divide_by_the_axes_that_shard_the_work():
    m = sr.mesh("tpu-v5p", "4x4x4")
    mm = sr.shard_matmul(m, "A[B_X, D_Y] @ W[D_Y, F] -> [B_X, F]", B=256, D=512, F=1024)
    assert mm.compute.flops == 2 * 256 * 512 * 1024 // 16  # Z replicates the work
    # the bf16 partial sums of one X shard: V = 2 (B/X) F
    assert [str(s) for s in mm.steps] == [f"AllReduce_Y [B_X, F]{{U_Y}}: V = {2 * 64 * 1024}"]


@pytest.mark.parametrize("width", [1, 2, 4])
def test_byte_widths_scale_the_collectives(width):
    m = sr.mesh("tpu-v5e", "4x4")
    mm = sr.shard_matmul(m, "A[I, J_X] @ B[J_X, K] -> [I, K]", I=64, J=128, K=256,
                         x_bytes=width, w_bytes=width)
    assert mm.steps[0].collective.V == 64 * 256 * width
    assert mm.predicted()[0]["elements_in"] == 64 * 256


@pytest.mark.parametrize("text, sizes, message", [
    ("A[I_X, J] @ B[J, K] -> [I_X, K]", {}, None),
    ("A[I_Q, J] @ B[J, K] -> [I, K]", {}, "'Q' is not in this mesh"),
    ("A[I_X J] @ B[J, K] -> [I, K]", {}, "cannot read dimension"),
    ("A[I, J] B[J, K] -> [I, K]", {}, "cannot read matmul"),
    ("A[I, J] @ B[L, K] -> [I, K]", {}, "contracting dimensions differ"),
    ("A[I_X, J_X] @ B[J, K] -> [I, K]", {}, "shards more than one dimension"),
    ("A[I_X, J] @ B[J, K] -> [I, K]", {"I": 6}, "does not divide"),
    ("A[I_X, J] @ B[J, K] -> [I, K]", {"Q": 6}, "does not have"),
])
def test_bad_input(text, sizes, message):
    m = sr.mesh("tpu-v5e", "4x4")
    if message is None:
        sr.shard_matmul(m, text, I=64, J=64, K=64)
        return
    with pytest.raises(ValueError, match=message):
        sr.shard_matmul(m, text, **{"I": 64, "J": 64, "K": 64, **sizes})


def test_a_contracting_dimension_split_over_two_axes_is_gathered_in_one_collective():
    # ch. 3 "AllGather over multiple axes": one AllGather over X and Y moves V at both axes'
    # bandwidth, V / (2 W_ici) (W_ici = 2 x 4.5e10 B/s on a v5e, ch. 2); one axis at a time
    # (X, then Y) took V/(Y W_ici) + V/W_ici, 2 + 2/Y times as long
    m = sr.mesh("tpu-v5e", "16x16")
    mm = sr.shard_matmul(m, "X[B, D_XY] @ W[D, F] -> [B, F]", strategy="gather",
                         B=256, D=8192, F=8192)
    V = 2 * 256 * 8192                                  # the gathered bf16 X[B, D]
    assert [str(s) for s in mm.steps] == [f"AllGather_XY X[B, D_XY]: V = {V}"]
    assert mm.steps[0].collective.t_bw == sp.Rational(V, 2 * 9 * 10**10)
