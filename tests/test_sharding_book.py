"""The worked numbers of "How to Scale Your Model" ch. 2, 3 and 12 (collectives, sharded
matmuls), each computed here by hand from the book's formula and the spec figures (never from
symroof's formulas), then compared with symroof and with the number the book prints, to the
book's rounding. Read from the book's markdown: sharding.md and tpus.md at scaling-book commits
0819a7d and 04d8de5, gpus.md at 1a55377. Derivation 04 asserts the same numbers in prose.
"""

import math

import pytest
import sympy as sp

import symroof as sr
from symroof.hardware import collective
from symroof.symbols import B, D, V_b

US = 1e-6
W1_V4P, W1_V5E, W1_V5P = 4.5e10, 4.5e10, 9e10  # one-way ICI link, B/s (ch. 2 table)
W_GPU, W_NODE = 18 * 25e9, 400e9  # H100 NVLink egress, DGX H100 node egress (ch. 12)

# (what, mesh, kind, V bytes, axes, by hand (s), the book's number (s), its rounding)
COLLECTIVES = [
    ("ch3 Q2: AllGather_X bf16[B_X, D_Y] on v4p 4x4x4, V = 2BD/Y", ("tpu-v4p", "4x4x4"),
     "all-gather", 2 * 1024 * 4096 // 4, "X", 2 * 1024 * 4096 / 4 / (2 * W1_V4P), 23 * US, "int"),
    ("ch3 Q2: AllGather_Y, the same", ("tpu-v4p", "4x4x4"), "all-gather",
     2 * 1024 * 4096 // 4, "Y", 2 * 1024 * 4096 / 4 / (2 * W1_V4P), 23 * US, "int"),
    ("ch3 Q2: AllGather_XY, two axes' bandwidth", ("tpu-v4p", "4x4x4"), "all-gather",
     2 * 1024 * 4096, "XY", 2 * 1024 * 4096 / (2 * 2 * W1_V4P), 46 * US, "int"),
    ("ch3 Q3: AllGather_X bf16[128], latency: 2 hops of 1 us", ("tpu-v4p", "4x4x4"),
     "all-gather", 256, "X", 2 * US, 2 * US, "int"),
    ("ch3 pop quiz 2: AllGather_Y bf16[E_Y, F] on v5e {X: 8, Y: 4}, a line of 4",
     ("tpu-v5e", {"X": 8, "Y": 4}), "all-gather", 2 * 2048 * 8192, "Y",
     3 * (2 * 512 * 8192) / W1_V5E, 560 * US, "tens"),
    ("ch3 pop quiz 2: E = F = 256, latency: 3 hops of 1 us", ("tpu-v5e", {"X": 8, "Y": 4}),
     "all-gather", 2 * 256 * 256, "Y", 3 * US, 3 * US, "int"),
    ("ch12 pop quiz 1: AllGather bf16[B_X, F] on 8xH100, (N-1)/N V / W_GPU",
     ("h100", {"X": 8}), "all-gather", 2 * 1024 * 16384, "X",
     2 * 1024 * 16384 * 7 / (8 * W_GPU), 65 * US, "int"),
    ("ch12 Q5: AllGather over exactly 2 nodes: node level V 7/(8 W_GPU) binds",
     ("h100", {"N": 2, "G": 8}), "all-gather", 10**9, "NG", 10**9 * 7 / (8 * W_GPU),
     10**9 / 514e9, "GB/s"),
    ("ch12: AllGather over a scalable unit, leaf level V 31/(32 W_node)",
     ("h100", {"N": 32, "G": 8}), "all-gather", 10**9, "NG", 10**9 * 31 / (32 * W_NODE),
     10**9 / 413e9, "GB/s"),
    ("ch12: AllToAll in a node, V (N-1)/(N^2 W_GPU)", ("h100", {"X": 8}), "all-to-all",
     10**9, "X", 10**9 * 7 / (64 * W_GPU), 10**9 * 7 / (64 * W_GPU), "3 digits"),
    ("ch12: AllToAll over M = 2 nodes, V (M-1)/(M^2 W_node)", ("h100", {"N": 2, "G": 8}),
     "all-to-all", 10**9, "NG", 10**9 / (4 * W_NODE), 10**9 / (4 * W_NODE), "3 digits"),
]


def _rounded(seconds: float, rounding: str) -> float:
    if rounding == "int":  # the book prints whole microseconds, truncated
        return math.floor(seconds / US + 1e-9) * US
    if rounding == "tens":
        return round(seconds / US, -1) * US
    if rounding == "GB/s":  # the book prints the bandwidth of 1 GB over this time
        return 1 / round(1 / seconds)
    return float(f"{seconds:.3g}")


@pytest.mark.parametrize("what, where, kind, V, axes, by_hand, book, rounding", COLLECTIVES,
                         ids=[c[0] for c in COLLECTIVES])
def test_collective_times_match_the_book(what, where, kind, V, axes, by_hand, book, rounding):
    c = collective(kind, sr.mesh(*where), V, axes)
    assert float(c.net_time) == pytest.approx(by_hand, rel=1e-12)
    assert _rounded(float(c.net_time), rounding) == pytest.approx(_rounded(book, rounding),
                                                                  rel=1e-12)


def test_latency_threshold_is_per_shard():
    # ch. 3: "sending any buffer under 4.5e10 * 1e-6 = 45kB will be latency bound"; the knee of
    # a ring of X chips is X times that (each hop carries one shard)
    for where, axes, X in ((("tpu-v5e", "16x16"), "X", 16), (("tpu-v4p", "4x4x4"), "X", 4)):
        c = sr.all_gather(sr.mesh(*where), V_b, axes)
        assert sr.crossover(c.t_lat, c.t_bw, V_b) == X * 45_000


def test_no_wraparound_costs_2_x_minus_1_over_x():
    # pop quiz 2: 377 us "fully bidirectional" (V / W_ici) against 560 on the line of 4
    line = sr.all_gather(sr.mesh("tpu-v5e", {"X": 8, "Y": 4}), 2 * 2048 * 8192, "Y")
    ring = sr.all_gather(sr.mesh("tpu-v5e", {"X": 8, "Y": 4}, wrap=True), 2 * 2048 * 8192, "Y")
    assert float(ring.net_time) == pytest.approx(2 * 2048 * 8192 / (2 * W1_V5E))
    assert line.net_time / ring.net_time == sp.Rational(2 * 3, 4)
    assert round(34e6 / (2 * W1_V5E) / US) == 378  # the book's 377 truncates V = 34e6


def test_two_chip_example_of_chapter_1():
    # ch. 1: compute-bound iff D/2 > C/W_1, D > 8755 on a v5e (1.97e14 over 4.5e10 one way)
    pair = sr.mesh("tpu-v5e", {"X": 2}, custom=True)  # ch. 1's two chips: not a v5e slice
    mm = sr.shard_matmul(pair, "X[B, D_X] @ W[D_X, F] -> [B, F]")
    d_star = sr.crossover(mm.t_math, mm.steps[0].collective.t_bw, D)
    assert float(d_star) == pytest.approx(2 * 1.97e14 / W1_V5E, rel=1e-12)
    assert math.floor(d_star) == 8755


def test_gather_or_reduce_on_v5p():
    # ch. 3 problem 4: alpha = C / W_ici = 4.59e14 / 1.8e11 = 2550; the reduce's comms beat the
    # gather's math for D > 2 alpha = 5100; the gather is compute-bound for B > alpha
    mesh, text = sr.mesh("tpu-v5p", "4x4x4"), "X[B, D] @ W[D_X, F] -> [B, F]"
    g = sr.shard_matmul(mesh, text, strategy="gather", F=32768)
    r = sr.shard_matmul(mesh, text, strategy="reduce", B=4096, F=32768)
    alpha = 4.59e14 / (2 * W1_V5P)
    assert alpha == pytest.approx(2550)
    assert float(g.crossover(B).subs(D, 8192)) == pytest.approx(alpha)
    gather_math = g.t_math.subs(B, 4096)
    assert float(sr.crossover(r.steps[0].collective.t_bw, gather_math, D)) == pytest.approx(
        2 * alpha)


# The book's slips: (what, the book's number, the right number by hand, symroof's)
ERRATA = [
    ("ch3 Q2 (0819a7d): AllReduce_Z of [B_X, D_Y]{U_Z} ignores the X, Y sharding", 190 * US,
     2 * (2 * 1024 * 4096 / 16) / (2 * W1_V4P),
     lambda: sr.all_reduce(sr.mesh("tpu-v4p", "4x4x4"), 2 * 1024 * 4096 // 16, "Z")),
    ("ch3 Q2 (04d8de5): 5.8 us is a ReduceScatter's cost, half the AllReduce", 5.8 * US,
     2 * (2 * 1024 * 4096 / 16) / (2 * W1_V4P),
     lambda: sr.all_reduce(sr.mesh("tpu-v4p", "4x4x4"), 2 * 1024 * 4096 // 16, "Z")),
    ("ch3 Q2 (04d8de5): latency floor of AllGather_XY with 1/2 us per hop", 2 * US, 4 * US,
     lambda: sr.all_gather(sr.mesh("tpu-v4p", "4x4x4"), 256, "XY")),
    ("ch12: AllToAll over 2 nodes as B / (M W_node) drops (M - 1)/M", 10**9 / (2 * W_NODE),
     10**9 / (4 * W_NODE), lambda: sr.all_to_all(sr.mesh("h100", {"N": 2, "G": 8}), 10**9,
                                                 "NG")),
]


@pytest.mark.parametrize("what, book, right, make", ERRATA, ids=[e[0] for e in ERRATA])
def test_book_slips_are_not_reproduced(what, book, right, make):
    got = float(make().net_time)
    assert got == pytest.approx(right, rel=1e-12)
    assert got != pytest.approx(book, rel=0.05)


def test_all_to_all_over_a_scalable_unit():
    # ch. 12: an N-way AllToAll over M = N/8 nodes costs V (M - 1)/(M^2 W_node)
    c = sr.all_to_all(sr.mesh("h100", {"N": 32, "G": 8}), 10**9, "NG")
    assert float(c.t_bw) == pytest.approx(10**9 * 31 / (32**2 * W_NODE), rel=1e-12)
