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


def test_ragged_all_to_all_is_min_k_over_n_of_the_dense_one():
    # book ch. 12 Pop Quiz 2: 8 x H100, only 4 of 8 entries non-zero: half the dense cost
    node = sr.mesh("h100", {"X": 8})
    dense = sr.all_to_all(node, V, "X")
    assert sr.all_to_all(node, V, "X", top_k=4).t_bw == dense.t_bw / 2 == V * 7 / (128 * W_GPU)
    assert sr.all_to_all(node, V, "X", top_k=16).t_bw == dense.t_bw  # min(k/N, 1)
    assert sr.all_to_all(node, V, "X", top_k=2).net_bytes == dense.net_bytes / 4
    with pytest.raises(ValueError, match="top_k must be a positive"):
        sr.all_to_all(node, V, "X", top_k=0)


def test_send_over_ici_hops():
    m = sr.mesh("tpu-v5e", "16x16")  # W_1 = 4.5e10 one way, T_min = 1 us (book ch. 2, 3)
    near = sr.send(m, 45 * 10**3, (0, 0), (0, 1))
    # the book's knee: 4.5e10 x 1e-6 = 45 kB takes as long to stream as one hop's latency
    assert near.t_lat == near.t_bw == sp.Rational(1, 10**6)
    far = sr.send(m, 9 * 10**6, {"X": 3, "Y": 5}, {"X": 0, "Y": 0})
    assert far.t_lat == 8 * sp.Rational(1, 10**6)  # 3 + 5 hops
    assert far.t_bw == sp.Rational(9 * 10**6, 2 * 45 * 10**9)  # leaves by an X and a Y port
    ring = sr.send(m, 9 * 10**6, (0, 0), (0, 15))  # a wraparound neighbour: one hop
    assert ring.t_lat == sp.Rational(1, 10**6)
    line = sr.send(sr.mesh("tpu-v5e", "4x4"), 9 * 10**6, (0, 0), (0, 3))  # no wraparound
    assert line.t_lat == 3 * sp.Rational(1, 10**6)
    gpu = sr.mesh("h100", {"N": 2, "G": 8})
    assert sr.send(gpu, V, (0, 0), (0, 5)).t_bw == V / W_GPU  # NVLink inside the node
    assert sr.send(gpu, V, (0, 0), (1, 0)).t_bw == V / (W_NODE // 8)  # one NIC across nodes
    with pytest.raises(ValueError, match="src and dst are the same device"):
        sr.send(m, V, (1, 1), (1, 1))
    with pytest.raises(ValueError, match=r"dst must be one coordinate per axis \(X, Y\)"):
        sr.send(m, V, (0, 0), (16, 0))


def test_shard_array_in_the_books_notation():
    # book ch. 3 Pop Quiz: int8[128, 2048] as A[I_XY, J] on Mesh({'X': 2, 'Y': 8, 'Z': 2}):
    # 'int8[8, 2048]', '16,384 bytes' a device, '512kiB' over all devices
    m = sr.mesh(sr.symbolic_chip(), {"X": 2, "Y": 8, "Z": 2})
    a = sr.shard_array("int8[128, 2048]", "I_XY, J", m)
    assert a.device_shape == (8, 2048) and a.device_bytes == 16384 and a.replicas == 2
    assert a.total_bytes == 512 * 1024
    # ch. 3 Question 1: A[I_X, J, K] on X=4, Y=8, Z=2 totals 16 copies' worth of the array
    q1 = sr.shard_array("bf16[64, 32, 16]", "I_X, J, K", sr.mesh(sr.symbolic_chip(),
                                                               {"X": 4, "Y": 8, "Z": 2}))
    assert q1.total_bytes == 16 * 64 * 32 * 16 * 2 and q1.replicas == 16
    b = sr.shard_array("fp32[1024, 4096]", "I_XY, J", sr.mesh(sr.symbolic_chip(),
                                                              {"X": 8, "Y": 2}))
    assert "fp32[64, 4096] a device, 1 MiB" in str(b)
    with pytest.raises(ValueError, match="dimension I = 100 .* does not split evenly 16 ways"):
        sr.shard_array("fp32[100, 4096]", "I_XY, J", b.mesh)
    with pytest.raises(ValueError, match="unknown dtype 'fp33'"):
        sr.shard_array("fp33[8, 8]", "I, J", b.mesh)
    for bad in ("fp32[1024,,4096]", "fp32[1024, ]", "fp32[0, 4096]"):  # no int() traceback
        with pytest.raises(ValueError, match=r"each size must be a positive integer"):
            sr.shard_array(bad, "I, J", b.mesh)
