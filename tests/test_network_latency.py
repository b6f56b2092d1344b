"""Ring-step latency floors of GPU collectives, in a node and across nodes, as NCCL models
them (src/graph/tuning.cc at v2.30.7-1: hwLatencies[NVLINK][Ring][LL] = 0.6 us,
hwLatencies[NET][Ring][LL] = 2.7 us; a ring's latency is (nsteps - nInterSteps) intraLat +
nInterSteps interLat, nInterSteps = nNodes - 1 for AllGather and ReduceScatter). TPU DCN
axes keep no floor: no source we know gives a DCN latency (the book gives none)."""

from __future__ import annotations

from fractions import Fraction

import symroof as sr

NVLINK, NET = Fraction(6, 10**7), Fraction(27, 10**7)  # typed from tuning.cc, seconds


def test_every_gpu_record_carries_nccls_two_latencies():
    from symroof.hardware import CHIPS

    gpus = [c for c in CHIPS.values() if c.network is not None and c.network.kind == "switched"]
    assert {"h100", "b200", "gb200", "a100"} <= {c.name for c in gpus}
    for c in gpus:
        assert (c.network.hop_latency, c.network.net_latency) == (NVLINK, NET), c.name
        assert "hwLatencies[NET][Ring][LL] = 2.7 us" in c.sources["network.net_latency"]


def test_a_ring_across_two_nodes_pays_one_network_step():
    two = sr.mesh("h100", {"X": 2, "Y": 8})
    assert sr.all_gather(two, 10**6, "XY").t_lat == 14 * NVLINK + 1 * NET  # 15 steps
    assert sr.all_gather(two, 10**6, "Y").t_lat == 7 * NVLINK  # inside a node
    assert sr.all_gather(two, 10**6, "X").t_lat == NET  # one GPU a node
    assert sr.reduce_scatter(two, 10**6, "YX").t_lat == 14 * NVLINK + NET  # order-free
    assert sr.all_reduce(two, 10**6, "XY").t_lat == 2 * (14 * NVLINK + NET)


def test_a_latency_given_by_hand_applies_everywhere():
    two = sr.mesh("h100", {"X": 2, "Y": 8}, hop_latency=Fraction(1, 10**6))
    assert sr.all_gather(two, 10**6, "XY").t_lat == 15 * Fraction(1, 10**6)


def test_tpu_dcn_axes_have_no_latency_floor():
    mesh = sr.mesh("tpu-v5e", {"S": 2, "X": 16, "Y": 16}, dcn="S")
    assert mesh["S"].hop_latency == 0 and mesh["X"].hop_latency == Fraction(1, 10**6)
