"""Latency floors of GPU collectives, in a node and across nodes, as NCCL models them
(src/graph/tuning.cc at v2.30.7-1: hwLatencies[NVLINK][Ring][LL] = 0.6 us,
hwLatencies[NET][Ring][LL] = 2.7 us; a ring's latency is (nsteps - nInterSteps) intraLat +
nInterSteps interLat, nInterSteps = nNodes - 1 for AllGather and ReduceScatter, 2 (nNodes -
1) for AllReduce; an AllReduce tree's 2 ((nRanks/nNodes - 1) intraLat + log2i(nNodes)
interLat) with hwLatencies[NVLINK][Tree][LL] = 0.6 us and hwLatencies[NET][Tree][LL] =
5.0 us). Once a ring crosses nodes its steps inside a node cost at least the network post
overhead, 1.0 us (getNetOverhead, lines 228-233; line 410: intraLat = max(intraLat,
netOverhead)), and with one GPU a node its network steps cost the tree's 5.0 us (lines 386-388:
interLat = ppn == 1 ? hwLatencies[NET][Tree] : hwLatencies[NET][Ring]); NCCL adds a constant per
call, baseLatencies line 151 (6.6 us a ring, 6.8 us a tree, LL), under base_latency="nccl".
TPU DCN axes keep no floor: no source we know gives a DCN latency (the book gives none)."""

from __future__ import annotations

from fractions import Fraction

import symroof as sr
from symroof.conventions import profile, using

NVLINK, NET = Fraction(6, 10**7), Fraction(27, 10**7)  # typed from tuning.cc, seconds
TREE = Fraction(5, 10**6)  # hwLatencies[NET][Tree][LL], tuning.cc v2.30.7-1
OVERHEAD = Fraction(1, 10**6)  # getNetOverhead(), x86 Intel and the default, line 232
BASE_RING, BASE_TREE = Fraction(66, 10**7), Fraction(68, 10**7)  # baseLatencies, line 151
NCCL_BASE = profile("symroof").replace(base_latency="nccl")


def test_every_gpu_record_carries_nccls_two_latencies():
    from symroof.hardware import CHIPS

    gpus = [c for c in CHIPS.values() if c.network is not None and c.network.kind == "switched"]
    assert {"h100", "b200", "gb200", "a100"} <= {c.name for c in gpus}
    for c in gpus:
        assert (c.network.hop_latency, c.network.net_latency) == (NVLINK, NET), c.name
        assert c.network.tree_latency == TREE, c.name
        assert "hwLatencies[NET][Ring][LL] = 2.7 us" in c.sources["network.net_latency"]
        assert "hwLatencies[NET][Tree][LL] = 5.0 us" in c.sources["network.tree_latency"]
        assert (c.network.net_overhead, c.network.ring_base_latency,
                c.network.tree_base_latency) == (OVERHEAD, BASE_RING, BASE_TREE), c.name
        assert "lines 228-233: 1.0 us" in c.sources["network.net_overhead"]
        assert "line 151: Ring LL = 6.6 us" in c.sources["network.ring_base_latency"]
        assert "line 151: Tree LL = 6.8 us" in c.sources["network.tree_base_latency"]


def test_a_ring_across_two_nodes_pays_one_network_step():
    # 15 steps: 14 inside a node at the 1.0 us overhead (not NVLink's 0.6: the ring crosses
    # nodes) and one over the network at 2.7 us
    two = sr.mesh("h100", {"X": 2, "Y": 8})
    assert sr.all_gather(two, 10**6, "XY").t_lat == 14 * OVERHEAD + 1 * NET
    assert sr.all_gather(two, 10**6, "Y").t_lat == 7 * NVLINK  # inside a node
    assert sr.all_gather(two, 10**6, "X").t_lat == TREE  # one GPU a node: the tree's 5.0
    assert sr.reduce_scatter(two, 10**6, "YX").t_lat == 14 * OVERHEAD + NET  # order-free
    with using(profile("symroof").replace(allreduce_latency="ring")):
        assert sr.all_reduce(two, 10**6, "XY").t_lat == 2 * (14 * OVERHEAD + NET)


def test_one_gpu_a_node_pays_the_trees_network_latency_every_step():
    spread = sr.mesh("h100", {"P": 8, "X": 16, "Y": 8})  # X: 16 GPUs, one in each node
    assert sr.all_gather(spread, 10**6, "X").t_lat == 15 * TREE
    assert sr.all_gather(spread, 10**6, "XY").t_lat == 112 * OVERHEAD + 15 * NET  # 127 steps


def test_an_allreduce_across_nodes_takes_nccls_tree_where_it_is_faster():
    # two nodes: the tree's 2 (7 x 0.6 + 1 x 5.0) = 18.4 us beats the ring's 2 (14 x 1.0 +
    # 2.7) = 33.4 us; one GPU a node: ring and tree both 2 x 5.0 us; inside a node: the ring
    two = sr.mesh("h100", {"X": 2, "Y": 8})
    assert sr.all_reduce(two, 10**6, "XY").t_lat == 2 * (7 * NVLINK + 1 * TREE)
    assert sr.all_reduce(two, 10**6, "X").t_lat == 2 * TREE
    assert sr.all_reduce(two, 10**6, "Y").t_lat == 2 * 7 * NVLINK


def test_nccls_constant_per_call_is_a_convention():
    two = sr.mesh("h100", {"X": 2, "Y": 8})
    with using(NCCL_BASE):
        assert sr.all_gather(two, 10**6, "Y").t_lat == BASE_RING + 7 * NVLINK
        assert sr.reduce_scatter(two, 10**6, "XY").t_lat == BASE_RING + 14 * OVERHEAD + NET
        # one call of each algorithm: 6.6 + 33.4 us against 6.8 + 18.4 us, the tree's
        assert sr.all_reduce(two, 10**6, "XY").t_lat == BASE_TREE + 2 * (7 * NVLINK + TREE)
        assert sr.all_reduce(two, 10**6, "Y").t_lat == BASE_RING + 2 * 7 * NVLINK
        # in-network reduction (NVLS: base 0 in the table) takes one step; ICI is not NCCL's
        assert sr.all_reduce(two, 10**6, "Y", sharp=True).t_lat == NVLINK
        tpu = sr.mesh("tpu-v5e", "4x4")  # X = 4 without wraparound: a line of 3 hops of 1 us
        assert sr.all_gather(tpu, 10**6, "X").t_lat == 3 * Fraction(1, 10**6)
    assert sr.all_gather(two, 10**6, "Y").t_lat == 7 * NVLINK  # the default: none


def test_the_16384_gpu_allreduce_floor_is_the_trees_log_of_2048_nodes():
    # LLaMA-3's 16,384 H100s as 2048 nodes of 8: a flat ring pays 2 x 16,383 steps (39.7 ms);
    # NCCL's tree 2 (7 x 0.6 + 11 x 5.0) us = 118.4 us. The bandwidth term stays the book's:
    # 2 x 31/32 V / W_node at the leaf (the derivation's 31/16)
    big, V = sr.mesh("h100", {"X": 2048, "Y": 8}), 10**6
    ar = sr.all_reduce(big, V, "XY")
    assert ar.t_lat == 2 * (7 * NVLINK + 11 * TREE) == Fraction(592, 5 * 10**6)
    assert ar.t_bw == Fraction(31, 16) * V / (400 * 10**9) and ar.bound == "latency"
    with using(profile("symroof").replace(allreduce_latency="ring")):
        flat = sr.all_reduce(big, V, "XY").t_lat
    assert flat == 2 * ((16383 - 2047) * OVERHEAD + 2047 * NET)  # 39.7 ms
    assert 1 < float(flat) * 10**3 / 39.7 < 1.01 and sr.all_reduce(big, 10**8, "XY").bound \
        == "bandwidth"  # 100 MB: 484 us against the tree's 118 us


def test_a_latency_given_by_hand_applies_everywhere():
    two = sr.mesh("h100", {"X": 2, "Y": 8}, hop_latency=Fraction(1, 10**6))
    assert sr.all_gather(two, 10**6, "XY").t_lat == 15 * Fraction(1, 10**6)


def test_tpu_dcn_axes_have_no_latency_floor():
    mesh = sr.mesh("tpu-v5e", {"S": 2, "X": 16, "Y": 16}, dcn="S")
    assert mesh["S"].hop_latency == 0 and mesh["X"].hop_latency == Fraction(1, 10**6)
