"""GPU systems past one scalable unit, and the book's per-axis decode condition on GPUs.

Figures typed from the sources, not the records: NVIDIA's DGX SuperPOD reference
architecture for DGX GB200 (scalable units of 8 NVL72 racks, 'up to and beyond 128 racks
with 9216 GPUs', https://docs.nvidia.com/dgx-superpod/reference-architecture-scalable-
infrastructure-gb200/latest/dgx-superpod-architecture.html) and "How to Scale Your Model"
ch. 7 (Y > F/(B beta)) and ch. 12 (W_coll: W_GPU in a node, W_node beyond it;
https://jax-ml.github.io/scaling-book/gpus/)."""

import pytest
import sympy as sp

import symroof as sr

G = 10**9
V = 10**9


def test_gb200_builds_past_one_scalable_unit_to_the_ras_9216_gpus():
    racks = sr.mesh("gb200", {"R": 128, "G": 72})  # the RA's 128 racks
    assert racks.n_chips == 9216
    assert [(lv.name, lv.degree) for lv in racks.levels("RG")] == [
        ("node", 72), ("leaf", 8), ("spine", 16)]
    with pytest.raises(ValueError, match=r"larger than the largest gb200 system on record "
                                         r"\(9216 GPUs: 72 x 8 x 16\)"):
        sr.mesh("gb200", {"R": 129, "G": 72})


def test_a_gb200_allgather_over_16_sus_follows_the_records():
    # one GPU a rack over 16 SUs of 8 racks: leaf (8 racks, one NIC each at 50 GB/s) and
    # spine (16 SUs, 8 NICs a SU): V 7/8 / 50e9 against V 15/16 / (8 x 50e9)
    m = sr.mesh("gb200", {"R": 128, "G": 72})
    ag = sr.all_gather(m, V, "R")
    leaf, spine = sp.Rational(7, 8) * V / (50 * G), sp.Rational(15, 16) * V / (8 * 50 * G)
    assert ag.t_bw == sp.Max(leaf, spine) == leaf
    # the NVL72 racks' 3.6 TB/s egress keeps an AllReduce over every GPU at the node level
    ar = sr.all_reduce(m, V, "RG")
    assert ar.t_bw == 2 * V * sp.Rational(71, 72) / (900 * G) and ar.bound == "bandwidth"


# The decode condition Y < F/(B beta), beta = W_hbm / W_coll, on H100s at each placement and
# under each reading of the switch levels. Typed from the sheets, not the record: NVLink 4
# at 18 x 25 GB/s = 450 GB/s a GPU each way (W_GPU), one 400 Gb/s NIC a GPU, so 8 x 50 GB/s
# = 400 GB/s out of a node (W_node), 32 nodes a leaf (DGX H100 SuperPOD RA), HBM 3.35 TB/s.
# W_coll is the group's AllGather bandwidth: the book's one level without the ring factor
# (ch. 12), or with the exact (N - 1)/N share of the level it reads (X - 1)/X, or symroof's
# slowest of every level spanned.
W_GPU, W_NODE, HBM = 450 * G, 400 * G, 3350 * G
ONE_EXACT = sr.profile("symroof").replace(gpu_level="one")
_NODE, _TWO, _SUS = {"G": 8}, {"N": 2, "G": 8}, {"S": 2, "N": 32, "G": 8}


@pytest.mark.parametrize("shape, conventions, w_coll", [
    (_NODE, "book", W_GPU),                              # ch. 12: W_GPU in a node
    (_TWO, "book", W_NODE),                              # W_node beyond it
    (_SUS, "book", W_NODE),                              # the leaf, not the spine above
    (_NODE, ONE_EXACT, sp.Rational(8, 7) * W_GPU),       # 8 GPUs pass on 7/8
    (_TWO, ONE_EXACT, 2 * W_NODE),                       # 2 nodes: 1/2 over the NICs
    (_SUS, ONE_EXACT, sp.Rational(32, 31) * W_NODE),     # 32 nodes under a leaf: 31/32
    (_NODE, "symroof", sp.Rational(8, 7) * W_GPU),
    (_TWO, "symroof", sp.Rational(8, 7) * W_GPU),        # NVLink's 7/8 / 450 binds over 1/2 / 400
    (_SUS, "symroof", sp.Rational(32, 31) * W_NODE),     # the leaf's 31/32 / 400 binds
])
def test_the_decode_ici_condition_reads_the_gpu_level_convention(shape, conventions, w_coll):
    # ch. 7: HBM-bound while Y < F/(B beta); on a GPU beta = W_hbm/W_coll (ch. 12)
    F, B = 28672, 64  # Llama-3.1-70B's F (its released config), 64 sequences
    plan = sr.serve("llama-3.1-70b", sr.mesh("h100", shape), batch=B, context=8192,
                    conventions=conventions)
    assert plan.conditions["ici"].threshold == sp.Rational(F, B * HBM) * w_coll
