"""Meshes and collectives against the book's formulas (ch. 2, 3 and 12), symbolically.

The expected expressions are the book's, written here in its letters: W_ici = 2 W_1 (the
bidirectional per-axis figure), T_min the per-hop latency, V the bytes of one group's array.
"""

import pytest
import sympy as sp

import symroof as sr
from symroof.hardware import collective
from symroof.symbols import V_b as V  # (the book's V: a collective's bytes)
from symroof.symbols import X, Y

W1, T_min = sp.symbols("W_net T_min", positive=True)
W_ici = 2 * W1
chip = sr.symbolic_chip()  # its link_bw is W_net, one link one way


def ring(shape, wrap=True):
    return sr.mesh(chip, shape, wrap=wrap, hop_latency=T_min)


def same(a, b):
    return sp.simplify(a - b) == 0


# -- TPU rings, one axis -----------------------------------------------------------------
def test_bidirectional_ring_all_gather_is_V_over_W_ici_with_latency_floor():
    ag = sr.all_gather(ring({"X": X}), V, "X")
    assert same(ag.t_bw, V / W_ici)
    assert same(ag.t_lat, T_min * X / 2)
    assert ag.net_time == sp.Max(T_min * X / 2, V / W_ici)
    assert same(ag.net_bytes, V * (X - 1) / X)  # each chip passes on X-1 of X shards


def test_reduce_scatter_equals_all_gather_and_all_reduce_is_both():
    m = ring({"X": X})
    ag, rs, ar = (f(m, V, "X") for f in (sr.all_gather, sr.reduce_scatter, sr.all_reduce))
    assert same(rs.t_bw, ag.t_bw)
    assert same(ar.t_bw, 2 * V / W_ici) and same(ar.t_lat, 2 * ag.t_lat)
    assert same(ar.net_bytes, 2 * rs.net_bytes)


def test_no_wraparound_is_a_line_twice_as_slow():
    ag = sr.all_gather(ring({"X": X}, wrap=False), V, "X")
    assert same(ag.t_bw, (X - 1) / X * V / W1)   # the end chip: X-1 shards through 1 link
    assert same(ag.t_lat, T_min * (X - 1))
    assert sp.limit(ag.t_bw / (V / W_ici), X, sp.oo) == 2


def test_all_to_all_is_a_quarter_of_an_all_gather_on_a_ring():
    m = ring({"X": X})
    assert same(sr.all_to_all(m, V, "X").t_bw, V / (4 * W_ici))
    assert same(sr.all_to_all(m, V, "X").net_bytes, V * (X - 1) / X**2)


# -- several axes --------------------------------------------------------------------------
def test_several_axes_add_their_bandwidth():
    m = ring({"X": X, "Y": Y})
    ag = sr.all_gather(m, V, ("X", "Y"))
    assert same(ag.t_bw, V / (2 * W_ici))
    assert same(ag.t_lat, T_min * (X + Y) / 2)  # the longest path, sum_i X_i / 2
    assert ag.group == X * Y
    assert sr.all_gather(m, V, "XY") == ag  # "XY" is ("X", "Y")


def test_n_d_all_to_all_book_form():
    m = sr.mesh("tpu-v5p", "4x4x8")
    a2a = sr.all_to_all(m, 10**9, "XYZ")
    w_ici = 2 * sr.chip("tpu-v5p").link_bw
    assert a2a.t_bw == sp.Rational(10**9) * 8 / (4 * 128 * w_ici)  # V max(A,B,C)/(4 N W)


# -- TPU records ---------------------------------------------------------------------------
def test_v5p_superpod():
    m = sr.mesh("tpu-v5p", "16x20x28")
    c = sr.chip("tpu-v5p")
    assert m.n_chips == 8960
    assert m.wraps == {"X": True, "Y": True, "Z": True}
    assert all(m[a].bw == 2 * 90 * 10**9 for a in "XYZ")
    assert m.peak() == 8960 * c.peak() and m.hbm_bytes == 8960 * c.hbm_bytes


@pytest.mark.parametrize("chip_name, shape, wraps", [
    ("tpu-v5e", "8x16", {"X": False, "Y": True}),   # book: wraps only on its 16 axis
    ("tpu-v5e", "4x4", {"X": False, "Y": False}),
    ("tpu-v5e", "16x16", {"X": True, "Y": True}),
    ("tpu-v5p", "4x4x4", {"X": True, "Y": True, "Z": True}),   # a whole cube
    ("tpu-v5p", "2x2x4", {"X": False, "Y": False, "Z": False}),  # smaller than a cube
    ("tpu-v4p", "4x4x8", {"X": True, "Y": True, "Z": True}),
])
def test_wraparound_rules(chip_name, shape, wraps):
    assert sr.mesh(chip_name, shape).wraps == wraps


def test_wrap_override_and_latency_bound_small_buffers():
    m = sr.mesh("tpu-v5e", "16x16")
    assert not sr.mesh("tpu-v5e", "16x16", wrap={"X": False}).wraps["X"]
    small, big = sr.all_gather(m, 10**4, "X"), sr.all_gather(m, 10**8, "X")
    assert small.bound == "latency" and big.bound == "bandwidth"
    # the knee: per-shard bytes V/X = W_1 T_min = 45 kB (book ch. 3)
    knee = sr.crossover(small.t_lat, sr.all_gather(m, V, "X").t_bw, V)
    assert knee / 16 == 45 * 10**3


# -- GPUs (ch. 12) -------------------------------------------------------------------------
W_GPU, W_node = 450 * 10**9, 400 * 10**9


def test_h100_node_collectives():
    m = sr.mesh("h100", {"X": 8})
    n = 8
    assert sr.all_gather(m, V, "X").t_bw == V * (n - 1) / (n * W_GPU)
    assert sr.all_reduce(m, V, "X").t_bw == 2 * V * (n - 1) / (n * W_GPU)
    assert sr.all_reduce(m, V, "X", sharp=True).t_bw == V / W_GPU
    assert sr.all_to_all(m, V, "X").t_bw == V * (n - 1) / (W_GPU * n**2)


def test_h100_across_nodes_hierarchical():
    # X over 16 nodes, Y inside a node: the X group has one GPU per node, each on its NIC
    m = sr.mesh("h100", {"X": 16, "Y": 8})
    assert m["X"].kind == "scale-out" and m["Y"].kind == "nvlink"
    assert sr.all_gather(m, V, "X").t_bw == V * 15 / (16 * (W_node // 8))
    # a 128-GPU AllGather: V max_i (D_i - 1) / (D_i W_i), node W_GPU, leaf W_node per node
    whole = sr.all_gather(m, V, "XY").t_bw
    assert whole == sp.Max(V * 7 / (8 * W_GPU), V * 15 / (16 * W_node))
    # AllToAll over M = 16 nodes is V (M - 1) / (M^2 W_node); inside a node each GPU sends
    # its 7 node-mates V/N^2 each over NVLink (N = 128)
    assert sr.all_to_all(m, V, "XY").t_bw == sp.Max(V * 7 / (128**2 * W_GPU),
                                                    V * 15 / (16**2 * W_node))


# -- bad input -----------------------------------------------------------------------------
@pytest.mark.parametrize("call, message", [
    (lambda: sr.all_gather(sr.mesh("tpu-v5e", "4x4"), 10**6, "Z"), "'Z' is not in this mesh"),
    (lambda: sr.mesh("tpu-v5e", "32x8"), "does not fit one tpu-v5e pod"),
    (lambda: sr.mesh("tpu-v5p", "4x4x4x4"), "3-D torus"),
    (lambda: sr.mesh("h100", {"X": 16384, "Y": 8}), "larger than the largest h100 system"),
    (lambda: sr.mesh("tpu-v5e", "4by4"), "does not parse"),
    (lambda: sr.mesh("tpu-v5e", {"X": 0}), "positive integer size"),
    (lambda: sr.all_gather(sr.mesh("tpu-v5e", "4x4"), -5, "X"), "positive number of bytes"),
    (lambda: collective("broadcast", sr.mesh("tpu-v5e", "4x4"), 1, "X"), "unknown collec"),
    (lambda: sr.all_reduce(sr.mesh("tpu-v5e", "4x4"), 1, "X", sharp=True), "switched GPU"),
])
def test_bad_input_names_the_value(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_a_collective_is_a_cost_that_time_combines_with_compute():
    m = sr.mesh("tpu-v5e", "16x16")
    ar = sr.all_reduce(m, 2 * 10**8, "X")
    t = sr.time(sr.Cost(flops=10**12) + ar, m, per_chip=True)
    assert t.t_net == ar.net_time and t.t_math == sp.Rational(10**12, 197 * 10**12)
    assert t.bound == "compute"
