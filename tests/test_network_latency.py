"""Latency floors of GPU collectives, in a node and across nodes, as NCCL models them
(src/graph/tuning.cc at v2.30.7-1: hwLatencies[NVLINK][Ring][LL] = 0.6 us,
hwLatencies[NET][Ring][LL] = 2.7 us; a ring's latency is (nsteps - nInterSteps) intraLat +
nInterSteps interLat, nInterSteps = nNodes - 1 for AllGather and ReduceScatter, 2 (nNodes -
1) for AllReduce; an AllReduce tree's 2 ((nRanks/nNodes - 1) intraLat + log2i(nNodes)
interLat) with hwLatencies[NVLINK][Tree][LL] = 0.6 us and hwLatencies[NET][Tree][LL] =
5.0 us). TPU DCN axes keep no floor: no source we know gives a DCN latency (the book gives
none)."""

from __future__ import annotations

from fractions import Fraction

import symroof as sr
from symroof.conventions import profile, using

NVLINK, NET = Fraction(6, 10**7), Fraction(27, 10**7)  # typed from tuning.cc, seconds
TREE = Fraction(5, 10**6)  # hwLatencies[NET][Tree][LL], tuning.cc v2.30.7-1


def test_every_gpu_record_carries_nccls_two_latencies():
    from symroof.hardware import CHIPS

    gpus = [c for c in CHIPS.values() if c.network is not None and c.network.kind == "switched"]
    assert {"h100", "b200", "gb200", "a100"} <= {c.name for c in gpus}
    for c in gpus:
        assert (c.network.hop_latency, c.network.net_latency) == (NVLINK, NET), c.name
        assert c.network.tree_latency == TREE, c.name
        assert "hwLatencies[NET][Ring][LL] = 2.7 us" in c.sources["network.net_latency"]
        assert "hwLatencies[NET][Tree][LL] = 5.0 us" in c.sources["network.tree_latency"]


def test_a_ring_across_two_nodes_pays_one_network_step():
    two = sr.mesh("h100", {"X": 2, "Y": 8})
    assert sr.all_gather(two, 10**6, "XY").t_lat == 14 * NVLINK + 1 * NET  # 15 steps
    assert sr.all_gather(two, 10**6, "Y").t_lat == 7 * NVLINK  # inside a node
    assert sr.all_gather(two, 10**6, "X").t_lat == NET  # one GPU a node
    assert sr.reduce_scatter(two, 10**6, "YX").t_lat == 14 * NVLINK + NET  # order-free
    with using(profile("symroof").replace(allreduce_latency="ring")):
        assert sr.all_reduce(two, 10**6, "XY").t_lat == 2 * (14 * NVLINK + NET)


def test_an_allreduce_across_nodes_takes_nccls_tree_where_it_is_faster():
    # two nodes: the tree's 2 (7 x 0.6 + 1 x 5.0) = 18.4 us beats the ring's 22.2 us; one GPU
    # a node: the ring's 2 x 2.7 us beats the tree's 2 x 5.0 us; inside a node: the ring
    two = sr.mesh("h100", {"X": 2, "Y": 8})
    assert sr.all_reduce(two, 10**6, "XY").t_lat == 2 * (7 * NVLINK + 1 * TREE)
    assert sr.all_reduce(two, 10**6, "X").t_lat == 2 * NET
    assert sr.all_reduce(two, 10**6, "Y").t_lat == 2 * 7 * NVLINK


def test_the_16384_gpu_allreduce_floor_is_the_trees_log_of_2048_nodes():
    # LLaMA-3's 16,384 H100s as 2048 nodes of 8: a flat ring pays 2 x 16,383 steps (28.3 ms);
    # NCCL's tree 2 (7 x 0.6 + 11 x 5.0) us = 118.4 us. The bandwidth term stays the book's:
    # 2 x 31/32 V / W_node at the leaf (the derivation's 31/16)
    big, V = sr.mesh("h100", {"X": 2048, "Y": 8}), 10**6
    ar = sr.all_reduce(big, V, "XY")
    assert ar.t_lat == 2 * (7 * NVLINK + 11 * TREE) == Fraction(592, 5 * 10**6)
    assert ar.t_bw == Fraction(31, 16) * V / (400 * 10**9) and ar.bound == "latency"
    with using(profile("symroof").replace(allreduce_latency="ring")):
        flat = sr.all_reduce(big, V, "XY").t_lat
    assert flat == 2 * ((16383 - 2047) * NVLINK + 2047 * NET)
    assert 1 < float(flat) * 10**3 / 28 < 1.01 and sr.all_reduce(big, 10**8, "XY").bound \
        == "bandwidth"  # 100 MB: 484 us against the tree's 118 us


def test_a_latency_given_by_hand_applies_everywhere():
    two = sr.mesh("h100", {"X": 2, "Y": 8}, hop_latency=Fraction(1, 10**6))
    assert sr.all_gather(two, 10**6, "XY").t_lat == 15 * Fraction(1, 10**6)


def test_tpu_dcn_axes_have_no_latency_floor():
    mesh = sr.mesh("tpu-v5e", {"S": 2, "X": 16, "Y": 16}, dcn="S")
    assert mesh["S"].hop_latency == 0 and mesh["X"].hop_latency == Fraction(1, 10**6)
