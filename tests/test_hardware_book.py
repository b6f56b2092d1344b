"""Hardware against the book's printed numbers: GPU systems at scale, the cross-node AllToAll,
critical batches per dtype. Expected values come from "How to Scale Your Model" ch. 12
(https://jax-ml.github.io/scaling-book/gpus/), typed from its text, never from the records."""

import pytest
import sympy as sp

import symroof as sr
from symroof.symbols import V_b as V

G = 10**9
W_GPU, W_NODE = 450 * G, 400 * G  # book ch. 12 table 'Node egress': H100 450e9 and 400e9


@pytest.mark.parametrize("M", [2, 16, 64])
def test_cross_node_all_to_all_is_the_node_egress_bound(M):
    # book ch. 12 'Cross-node collectives': over M nodes, T = B (M - 1) / (M^2 W_node); the
    # leaf and spine pieces both leave through each GPU's network card, so they add
    a2a = sr.all_to_all(sr.mesh("h100", {"N": M, "G": 8}), V, "NG")
    assert sp.simplify(a2a.t_bw - V * (M - 1) / (M**2 * W_NODE)) == 0


def test_two_node_all_to_all_is_four_times_slower_than_one_node():
    # book: "from B / (8 * 450e9) within a single H100 node to B / (2 * 400e9) when spanning
    # 2 nodes, a more than 4x degradation" (exact forms: (N-1)/N^2 and (M-1)/M^2)
    one = sr.all_to_all(sr.mesh("h100", {"G": 8}), V, "G").t_bw
    two = sr.all_to_all(sr.mesh("h100", {"N": 2, "G": 8}), V, "NG").t_bw
    assert one == V * 7 / (64 * W_GPU) and two == V / (4 * W_NODE)
    # the book's "more than 4x" compares the approximations V/(N W_GPU) and V/(M W_node)
    # (3600 / 800 = 4.5); the exact forms' ratio is (1/1600) / (7/28800) = 18/7, about 2.6
    assert two / one == sp.Rational(18, 7)


def test_expert_parallel_rows_across_64_nodes_inherit_the_node_egress_bound():
    from symroof.parallel.layout import a2a_link
    m = sr.mesh("h100", {"N": 64, "G": 8})
    assert a2a_link(m, ("N", "G")) == sp.Rational(63, 64**2 * W_NODE)  # seconds per byte


def test_16384_h100s_build_and_an_all_reduce_follows_the_records():
    m = sr.mesh("h100", {"X": 2048, "Y": 8})  # LLaMA-3's 16k GPUs as DGX SuperPods
    assert m.n_chips == 16384
    levels = m.levels("XY")
    assert [(lv.name, lv.degree) for lv in levels] == [("node", 8), ("leaf", 32),
                                                      ("spine", 4), ("core", 16)]
    ar = sr.all_reduce(m, V, "XY")
    # twice the AllGather, whose bound is the leaf: V (D - 1) / (D W) with D = 32 nodes of
    # 400e9 each (book: 'min(514, 413, 17.1e3) GB/s = 413 GB/s at the leaf level')
    assert ar.t_bw == 2 * V * 31 / (32 * W_NODE)
    # in-network reduction on every level: V / W_node, the node's 8 GPUs sharing the NIC
    assert sr.all_reduce(m, V, "XY", sharp=True).t_bw == V / W_NODE


@pytest.mark.parametrize("gpus", [4096, 16384, 32768])
def test_h100_and_b200_systems_at_scale(gpus):
    for name in ("h100", "b200"):
        m = sr.mesh(name, {"X": gpus // 8, "Y": 8})
        assert m.n_chips == gpus
        assert sr.all_gather(m, V, "X").t_bw.is_positive


def test_gb200_nvl72_scalable_unit_is_a_mesh():
    m = sr.mesh("gb200", {"R": 8, "G": 72})  # 8 racks of 72 (book: GB200 SuperPod of 576)
    assert m.n_chips == 576 and m["G"].kind == "nvlink"
    # every GPU in: the racks' 3.6e12 egress against the node's 72 x 900e9; the book's
    # Appendix A: with NVL72 'the node level may then be the bottleneck'
    node, racks = V * 71 / (72 * 900 * G), V * 7 / (8 * 3600 * G)
    assert sr.all_gather(m, V, "RG").t_bw == sp.Max(node, racks) == node


def test_critical_batch_in_fp4_on_b200():
    # book ch. 12 Quiz 1 Q3: B200 ridge 2250e12 / 8e12 = 281; fp4 doubles fp8's C again, and
    # with weights and activations in fp4 too the batch is unchanged
    b200 = sr.chip("b200")
    assert sr.critical_batch(b200, dtype="fp4") == sr.critical_batch(b200) == sp.Rational(1125, 4)
    assert round(float(sr.critical_batch(b200, dtype="fp4"))) == 281
    # fp4 compute on bf16 weights: intensity ~ B, so B* = the fp4 ridge 9e15 / 8e12
    assert sr.critical_batch(b200, dtype="fp4", w_bytes=2) == 1125
    with pytest.raises(ValueError, match="unknown dtype 'fp5'.*int4, fp4"):
        sr.critical_batch(b200, dtype="fp5")
