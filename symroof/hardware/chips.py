"""Preset chip records: plain data, one dict per chip, each figure paired with its source.

Units are SI: FLOP/s (OP/s for int8), bytes/s, bytes, seconds. Peaks are *dense* (NVIDIA's
sheets quote tensor-core figures "with sparsity", twice the dense rate; the literal keeps the
sheet's number and the halving). Every literal is an exact Python integer (``T = 10**12``) or
a ``Fraction``.

Choices that apply to every record:

* ``GB`` on a sheet is read as SI, 1e9 bytes (the book does the same). The silicon is
  binary: an H100 "80GB" has 5 stacks of 16 GiB and nvidia-smi reports 81,559 MiB
  (85.52e9 B) usable; see https://github.com/modal-labs/modal-client/pull/2797 ("nvidia
  quotes GB on their GPUs not GiB"). 80e9 is the conservative reading.
* ``link_bw`` is one direction of one physical link. TPUs: one ICI link (4 per chip on the
  2D-torus v3/v5e/v6e, 6 on the 3D-torus v4p/v5p). GPUs: one NVLink link; the per-GPU figure
  on the sheet is bidirectional and spread over 18 links (12 on A100, 6 on V100), so a GPU's
  NVLink egress is ``links * link_bw`` (18 * 25e9 = 450e9 B/s on H100).
* TPUs use the figures of "How to Scale Your Model" (the seeds' book); where its roofline
  chapter (the seed) prints a figure, that one wins over its TPU table.
* ``fp32`` on a GPU is the CUDA-core (non-tensor) rate, the roof for elementwise work.
* A chip without bf16 (V100) has no ``bf16`` peak: asking for it fails naming the dtypes it
  has. No chip gets a peak it does not run at.
* ``fp4`` peaks are recorded, but ``DTYPE_BYTES`` has no ``fp4``/``int4`` width yet (half a
  byte would ripple into the CLI's byte widths and JSON), so ``critical_batch(dtype="fp4")``
  fails naming the known dtypes; ``chip.peak("fp4")`` and its ridge work.
* ``network``: a TPU's torus (``_torus``) or a GPU's switched levels (``_switched``), from
  the node up; a level is (name, degree, GPUs per child, one GPU's one-way bandwidth into it,
  and whether its switches reduce in the network: SHARP) and appears only where a source gives
  its size. The node level is (name, degree, 1): its bandwidth, W_GPU, is the record's
  ``nvlink_ports`` x ``link_bw``, filled in by :mod:`symroof.hardware.chip` (never retyped).
* A figure that follows from another field's is written as that field times its factor (a
  named constant both read), never as the other field's literal again.

This module imports nothing but ``fractions``; :mod:`symroof.hardware` turns the dicts into
``Chip`` records.
"""

from fractions import Fraction

T = 10**12  # tera
G = 10**9  # giga
P = 10**15  # peta

_BOOK_ROOF = "How to Scale Your Model, ch. 1 (seed 000), https://jax-ml.github.io/scaling-book/roofline/"
_BOOK_TPU = "How to Scale Your Model, ch. 2 'TPU Specs' table, https://jax-ml.github.io/scaling-book/tpus/"
_BOOK_GPU = "How to Scale Your Model, ch. 12, https://jax-ml.github.io/scaling-book/gpus/"
_H100 = "NVIDIA H100 datasheet, H100 SXM column, https://www.nvidia.com/en-us/data-center/h100/"
_H200 = "NVIDIA H200 datasheet, H200 SXM column, https://www.nvidia.com/en-us/data-center/h200/"
_A100 = (
    "NVIDIA A100 datasheet, A100 80GB SXM column, https://www.nvidia.com/content/dam/en-zz/"
    "Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf"
)
_V100 = "NVIDIA V100 datasheet, V100 SXM2 column, https://www.nvidia.com/en-us/data-center/v100/"
_HGX_B200 = "NVIDIA HGX B200 spec table, per-GPU column, https://www.nvidia.com/en-us/data-center/hgx/"
_DGX_B200 = "NVIDIA DGX B200 datasheet (8 GPUs), https://www.nvidia.com/en-us/data-center/dgx-b200/"
_GB200 = ("NVIDIA GB200 NVL72 spec table (72-GPU rack and 2-GPU superchip columns), "
          "https://www.nvidia.com/en-us/data-center/gb200-nvl72/")
_DSV3 = ("DeepSeek-AI, 'Insights into DeepSeek-V3: Scaling Challenges and Reflections on "
         "Hardware for AI Architectures' (ISCA 2025), https://arxiv.org/abs/2505.09343")
_GCP = "Google Cloud TPU docs, https://cloud.google.com/tpu/docs/"
_SPARSE = "; the sheet's figure is with 2:4 sparsity, dense is half"
_BOOK_NET = ("How to Scale Your Model, ch. 2 'TPU Networking' and 'TPU Specs', "
             "https://jax-ml.github.io/scaling-book/tpus/")
_BOOK_LAT = ("How to Scale Your Model, ch. 3: ICI per-hop latency about 1us, "
             "https://jax-ml.github.io/scaling-book/sharding/")
_BOOK_NODE = ("How to Scale Your Model, ch. 12 'At the node level' and 'Beyond the node level' "
              "(NVLink, node egress and DGX SuperPod tables), "
              "https://jax-ml.github.io/scaling-book/gpus/")
_BASEPOD = ("NVIDIA DGX BasePOD RA 'Core Components': DGX B200, H200 and H100 each have 8 "
            "single-port ConnectX-7, up to 400Gb/s, https://docs.nvidia.com/dgx-basepod/"
            "reference-architecture-infrastructure-foundation-enterprise-ai/latest/"
            "core-components.html")
_NCCL_LAT = ("NCCL src/graph/tuning.cc, hwLatencies[NVLINK][Ring][LL] = 0.6 us per ring step, "
             "the same for every GPU generation (v2.30.7-1, https://github.com/NVIDIA/nccl/blob/"
             "v2.30.7-1/src/graph/tuning.cc; it was 0.47 us in v2.7.3 to v2.17 and is 0.6 since "
             "v2.18.1); the book gives no GPU hop latency")
_NCCL_NET_LAT = ("NCCL src/graph/tuning.cc, hwLatencies[NET][Ring][LL] = 2.7 us per ring step "
                 "that crosses the network (v2.30.7-1, https://github.com/NVIDIA/nccl/blob/"
                 "v2.30.7-1/src/graph/tuning.cc; the same 2.7 since v2.7.3); the book gives "
                 "no scale-out latency")
_NCCL_TREE_LAT = ("NCCL src/graph/tuning.cc, hwLatencies[NET][Tree][LL] = 5.0 us per tree level "
                  "that crosses the network; an AllReduce tree costs 2 ((nRanks/nNodes - 1) "
                  "intraLat + log2i(nNodes) interLat), intraLat = hwLatencies[NVLINK][Tree][LL] "
                  "= 0.6 us, the ring's (v2.30.7-1, https://github.com/NVIDIA/nccl/blob/"
                  "v2.30.7-1/src/graph/tuning.cc); the book: 'A tree (log N hops) lowers "
                  "latency, not bandwidth cost' (ch. 12, https://jax-ml.github.io/scaling-book/"
                  "gpus/)")
_TUNING = ("NCCL src/graph/tuning.cc at v2.30.7-1 (commit 73cf112, https://github.com/NVIDIA/"
           "nccl/blob/v2.30.7-1/src/graph/tuning.cc)")
_NCCL_OVERHEAD = (_TUNING + ", getNetOverhead() lines 228-233: 1.0 us (x86 Intel and by "
                  "default; 2.0 on AMD); line 410: intraLat = std::max(intraLat, netOverhead) "
                  "for every step inside a node of a ring that crosses nodes (LL protocol)")
_NCCL_BASE_RING = (_TUNING + ", baseLatencies line 151: Ring LL = 6.6 us, added once per call "
                   "(line 384: latencies = baseLatencies)")
_NCCL_BASE_TREE = (_TUNING + ", baseLatencies line 151: Tree LL = 6.8 us, added once per call "
                   "(line 384: latencies = baseLatencies)")
_NVLS = ("NVLink SHARP (in-network reduction in the NVSwitch) arrived with third-generation "
         "NVSwitch on Hopper, https://www.nvidia.com/en-us/data-center/technologies/"
         "hopper-architecture/; the book prices SHARP in ch. 12 ("
         "https://jax-ml.github.io/scaling-book/gpus/)")


#: the slice shapes each TPU generation sells (chips; sides ascending), from Google Cloud's
#: pages of TPU types and topologies
_SLICES_2D = ((1, 1), (2, 2), (2, 4), (4, 4), (4, 8), (8, 8), (8, 16), (16, 16))
_SLICES_V3 = ((2, 2), (4, 4), (4, 8), (8, 8), (8, 16), (16, 16), (16, 32), (32, 32))
_SLICES_V2 = ((2, 2), (4, 4), (8, 8), (8, 16), (16, 16))
_SLICES_CUBE = ((1, 2, 2), (2, 2, 2), (2, 2, 4), (2, 4, 4))  # below one cube; whole cubes on
_V2_CLOUD = ("Google Cloud TPU product page as of 2018 ('Cloud TPU v2: 180 teraflops, 64 GB "
             "High Bandwidth Memory'), https://cloud.google.com/tpu/")
_V2_MICRO = ("N. Norrie et al., 'The Design Process for Google's Training Chips: TPUv2 and "
             "TPUv3', IEEE Micro 41(2), 2021, https://ieeexplore.ieee.org/document/9351692")
_SLICES_SRC = {
    "tpu-v2": _GCP + "v2: v2-8, v2-32, v2-128, v2-256, v2-512 = 2x2, 4x4, 8x8, 8x16, 16x16 "
              "chips ('up to 256 chips (512 TensorCores)' a pod)",
    "tpu-v3": _GCP + "v3: v3-8 to v3-2048 = 2x2, 4x4, 4x8, 8x8, 8x16, 16x16, 16x32, 32x32 "
              "chips (2 TensorCores a chip)",
    "tpu-v5e": _GCP + "v5e: v5litepod-1 to -256 = 1x1, 2x2, 2x4, 4x4, 4x8, 8x8, 8x16, 16x16",
    "tpu-v6e": _GCP + "v6e: v6e-1 to -256 = 1x1, 2x2, 2x4, 4x4, 4x8, 8x8, 8x16, 16x16",
    "cube": ("topologies 2x2x1, 2x2x2, 2x2x4, 2x4x4, then any of whole 4x4x4 cubes (4x4x4, "
             "4x4x8, ...) inside the pod; How to Scale Your Model ch. 2: slices below a cube "
             "(2x2x1, 2x2x2, 2x2x4) have no wraparound"),
}


def _torus(rank, pod, host, wrap_rule, pcie_bw, dcn_bw, slices, pcie_src, dcn_src,
           host_src="") -> dict:
    """A TPU's ``network`` entry: every field paired with its source."""
    return {"torus": {
        "slices": slices,
        "rank": (rank, _BOOK_NET + f": {rank}D torus"),
        "pod": (pod, _BOOK_NET + ": pod size"),
        "host": (host, _BOOK_NET + ": host size" + host_src),
        "wrap_rule": (wrap_rule, _BOOK_NET + ": wraparound"),
        "hop_latency": (Fraction(1, 10**6), _BOOK_LAT),
        "pcie_bw": (pcie_bw, pcie_src),
        "dcn_bw": (dcn_bw, dcn_src),
    }}


def _switched(ports, levels, levels_src, sharp, sharp_src, pcie_bw, pcie_src) -> dict:
    """A GPU's ``network`` entry: NVLink ports (a ``(count, source)`` pair), switch levels
    from the node up (each ``(name, degree, GPUs per child, one GPU's one-way B/s into the
    level)``), SHARP, NCCL's latencies (a ring step in a node and across nodes, a tree level
    across nodes) and the host link (one way); every field paired with its source."""
    return {"switched": {
        "nvlink_ports": (ports[0], ports[1]),
        "levels": (levels, levels_src),
        "sharp": (sharp, sharp_src),
        "hop_latency": (Fraction(6, 10**7), _NCCL_LAT),
        "net_latency": (Fraction(27, 10**7), _NCCL_NET_LAT),
        "tree_latency": (Fraction(5, 10**6), _NCCL_TREE_LAT),
        "net_overhead": (Fraction(1, 10**6), _NCCL_OVERHEAD),
        "ring_base_latency": (Fraction(66, 10**7), _NCCL_BASE_RING),
        "tree_base_latency": (Fraction(68, 10**7), _NCCL_BASE_TREE),
        "pcie_bw": (pcie_bw, pcie_src),
    }}


#: one GPU's share of its node's scale-out: a 400 Gb/s ConnectX-7 NIC a GPU, one way (8 a
#: DGX H100, H200 or B200 node, and DeepSeek's H800 nodes), at every level of a full fat tree
_CX7_PER_GPU = 400 * G // 8
#: The DGX H100 node and 1024-GPU SuperPod of the book (H200 sits in the same node), and the
#: core level above SuperPods. A level is (name, degree, GPUs per child, one GPU's one-way
#: B/s into it, SHARP in its switches); the node's B/s is nvlink_ports x link_bw.
_DGX_H100_LEVELS = (("node", 8, 1), ("leaf", 32, 8, _CX7_PER_GPU, True),
                    ("spine", 4, 256, _CX7_PER_GPU, True),
                    ("core", 64, 1024, _CX7_PER_GPU, True))
_CORE_SRC = ("; core: " + _BOOK_NODE + " Quiz 3 Q2: beyond 2048 GPUs 'we need to add another "
             "level ... NVIDIA calls these core switches' (4096 GPUs: 128 spine and 64 core "
             "switches), full bisection kept, so 50 GB/s per GPU; its degree: a three-tier fat "
             "tree of k-port switches has k^3/4 end ports (Al-Fares, Loukissas, Vahdat, 'A "
             "Scalable, Commodity Data Center Network Architecture', SIGCOMM 2008, "
             "https://doi.org/10.1145/1402958.1402967), k = 64 (the book's 64-port NDR IB "
             "switches): 65,536 GPUs = 64 SuperPods of 1024")
_IB_SHARP = ("; SHARP at leaf, spine and core: " + _BOOK_NODE + " 'NVIDIA sells SHARP-enabled "
             "IB switches' (the DGX SuperPOD's 64-port NDR Quantum-2 switches run SHARPv3, "
             "https://www.nvidia.com/en-us/networking/quantum2/)")
_DGX_H100_SRC = (_BOOK_NODE + ": node of 8 GPUs, W_GPU = 18 x 25 GB/s = 450 GB/s; a scalable "
                 "unit of 32 nodes under the leaf switches; 4 SUs under the spine (1024 GPUs = "
                 "8 x 32 x 4); node egress 8 x 400 Gb/s ConnectX-7 = 400 GB/s, 50 GB/s per GPU "
                 "at leaf and spine (full bisection)" + _CORE_SRC + _IB_SHARP)
_HOPPER_NET = _switched(
    (18, _BOOK_NODE + ": 18 NVLink-4 ports per Hopper GPU"), _DGX_H100_LEVELS, _DGX_H100_SRC,
    True, _NVLS, 128 * G // 2, _H100 + ": 'PCIe Gen5: 128GB/s' (both directions)")


# -- inside the chips (``symroof.hardware.internals`` names the figures) -----------------------
_BOOK_TC = ("How to Scale Your Model, ch. 2 'How TPUs Work' and Appendix C (TPU internals), "
            "https://jax-ml.github.io/scaling-book/tpus/")
_BOOK_SM = ("How to Scale Your Model, ch. 12 'What Is a GPU?', 'Memory' and 'Summary of GPU "
            "specs', https://jax-ml.github.io/scaling-book/gpus/")
_MXU = (2 * 8 * 128 * 128 // 8, _BOOK_TC + ": one bf16[8,128] @ bf16[128,128] matmul every 8 "
        "cycles = 2 x 8 x 128 x 128 / 8 FLOPs a cycle per 128x128 MXU")
_VOLTA = ("NVIDIA Tesla V100 architecture whitepaper, "
          "https://images.nvidia.com/content/volta-architecture/pdf/volta-architecture-"
          "whitepaper.pdf")
_AMPERE = ("NVIDIA A100 Tensor Core GPU architecture whitepaper, "
           "https://images.nvidia.com/aem-dam/en-zz/Solutions/data-center/"
           "nvidia-ampere-architecture-whitepaper.pdf")


#: SMs per GPU (the book's GPU table): a record's ``cores``, and its CUDA cores are SMs x lanes
_GH100_SMS, _B200_SMS, _A100_SMS, _V100_SMS = 132, 148, 108, 80
#: one NVLink-4 link, one way: the H100 sheet's 900 GB/s per GPU, both directions, over 18
#: links (the h100 record's link_bw; a Hopper NVSwitch port runs at it)
_NVLINK4 = 900 * G // 2 // 18


def _hopper_internals(name: str) -> dict:
    """An H100 or H200 SXM (the same GH100): SMs, tensor cores, SMEM, L2, registers."""
    return {
        "cores": (_GH100_SMS, _BOOK_SM + f": {name} '132' SMs"),
        "units_per_core": (4, _BOOK_SM + ": 4 subpartitions a SM, each with one Tensor Core"),
        "clock": (198 * G // 100, _BOOK_SM + f": {name} clock '1.59GHz/1.98GHz' (base/boost): "
                  "the boost, at which 132 x 128 x 2 FLOPs x 1.98e9 = the sheet's 67e12 fp32. "
                  "The tensor-core clock is not published: the sheet's 989.4e12 implies "
                  "1.83 GHz, the book's footnote uses 1.76 GHz"),
        "unit_flops.bf16": (1024, _BOOK_SM + ": 'each H100 TC can do ... ~ 1024 bf16 "
                            "FLOPs/cycle' (an estimate; NVIDIA publishes no TC details)"),
        "vector_alus": (_GH100_SMS * 4 * 32, _BOOK_SM + " Quiz 1 Q1: 132 x 4 x 32 = 16896 fp32 "
                        "CUDA cores"),
        "smem_bytes": (256 * 10**3, _BOOK_SM + ": SMEM '256kB' per SM"),
        "registers_bytes": (4 * 16384 * 4, _BOOK_SM + ": 16,384 32-bit registers per "
                            "subpartition, 4 x 16384 x 4 = 256 KiB per SM"),
        "l2_bytes": (50 * 10**6, _BOOK_SM + ": L2 '50MB' per chip"),
        "l2_bw": (55 * T // 10, _BOOK_SM + ": L2 bandwidth not published, 'measured to be about "
                  "5.5TB/s' (https://chipsandcheese.com/p/nvidias-h100-funny-l2-and-tons-of-"
                  "bandwidth)"),
        "nvswitch_bw": (4 * 64 * _NVLINK4, _BOOK_NODE + " Quiz 2 Q1: the node's 4 NVSwitches of 64 "
                        "NVLink-4 ports, 4 x 64 x 25e9 = 6.4 TB/s one way"),
    }


#: one GPU's share of an NVL72 rack's scale-out, one way: the rack's 3.6 TB/s egress (4 x 18 x
#: 400 Gb/s / 8) over its 72 GPUs, at leaf and spine (a full fat tree)
_NVL72_NIC_PER_GPU = 3600 * G // 72
_GB200_GPU = ("; a GB200 NVL72's GPU is a B200: NVIDIA DGX SuperPOD RA (DGX GB200), 'Each B200 "
              "GPU features 18 NVL5 links', https://docs.nvidia.com/dgx-superpod/reference-"
              "architecture-scalable-infrastructure-gb200/latest/network-fabrics.html. No "
              "clock: no source gives the 1,200 W part's")


def _blackwell_internals() -> dict:
    """A GB200 NVL72's GPU: the book's B200 row (SMs, tensor cores, SMEM, TMEM, L2) and its
    CUDA-core count; no clock on record (neither NVIDIA nor the book gives the GB200's)."""
    return {
        "cores": (_B200_SMS, _BOOK_SM + ": B200 '148' SMs" + _GB200_GPU),
        "units_per_core": (4, _BOOK_SM + ": 4 Tensor Cores a SM" + _GB200_GPU),
        "unit_flops.bf16": (2048, _BOOK_SM + ": 'it seems likely it's about 2048 "
                            "FLOPs/TC/cycle' (an estimate)" + _GB200_GPU),
        "vector_alus": (_B200_SMS * 4 * 32, _BOOK_SM + " Quiz 1 Q1: 'a total of 18944' CUDA cores"
                        + _GB200_GPU),
        "smem_bytes": (256 * 10**3, _BOOK_SM + ": SMEM '256kB' per SM" + _GB200_GPU),
        "tmem_bytes": (256 * 10**3, _BOOK_SM + ": 'Blackwell adds 256kB of TMEM per SM'"
                       + _GB200_GPU),
        "l2_bytes": (126 * 10**6, _BOOK_SM + ": L2 '126MB'" + _GB200_GPU),
    }


_V5E_HBM = 820 * G  # tpu-v5e's HBM bandwidth: its hbm_bw, and VMEM's is 22x it

_H100_RECORD = dict(
    name="h100",
    peaks={
        # 1979 / 2 = 989.5, but the unrounded sparse figure is 1978.9, so dense is 989.4;
        # the seeds (and design.md) use 989e12.
        "bf16": (989 * T, _H100 + ": 'BF16 Tensor Core 1,979 TFLOPS*'" + _SPARSE
                 + " (989.4e12 unrounded; the seeds print 9.89e14)"),
        "fp16": (989 * T, _H100 + ": 'FP16 Tensor Core 1,979 TFLOPS*', as bf16"),
        "fp8": (3958 * T // 2, _H100 + ": 'FP8 Tensor Core 3,958 TFLOPS*'" + _SPARSE),
        "int8": (3958 * T // 2, _H100 + ": 'INT8 Tensor Core 3,958 TOPS*'" + _SPARSE),
        "fp32": (67 * T, _H100 + ": 'FP32 67 TFLOPS' (CUDA cores, not tensor cores)"),
    },
    hbm_bw=(3350 * G, _H100 + ": 'GPU memory bandwidth 3.35TB/s'; the seeds use 3.35e12"),
    hbm_bytes=(80 * G, _H100 + ": 'GPU memory 80GB', read as 80e9 B (silicon: 80 GiB)"),
    link_bw=(_NVLINK4, _H100 + ": 'NVLink 900GB/s' (bidirectional, per GPU) "
             "over 18 links; " + _BOOK_GPU + ": 25GB/s per link each way"),
    network=_HOPPER_NET,
    internals=_hopper_internals("H100")
)

RECORDS: list[dict] = [
    _H100_RECORD,
    dict(
        name="h200",
        peaks={
            "bf16": (989 * T, _H200 + ": 'BF16 Tensor Core 1,979 TFLOPS*'" + _SPARSE
                     + "; same GH100 compute as H100 (989.4e12 unrounded)"),
            "fp16": (989 * T, _H200 + ": 'FP16 Tensor Core 1,979 TFLOPS*', as bf16"),
            "fp8": (3958 * T // 2, _H200 + ": 'FP8 Tensor Core 3,958 TFLOPS*'" + _SPARSE),
            "int8": (3958 * T // 2, _H200 + ": 'INT8 Tensor Core 3,958 TOPS*'" + _SPARSE),
            "fp32": (67 * T, _H200 + ": 'FP32 67 TFLOPS' (CUDA cores)"),
        },
        hbm_bw=(4800 * G, _H200 + ": 'GPU memory bandwidth 4.8TB/s'"),
        hbm_bytes=(141 * G, _H200 + ": 'GPU memory 141GB' (HBM3e), read as 141e9 B"),
        link_bw=(900 * G // 2 // 18, _H200 + ": 'NVLink 900GB/s' (bidirectional, per GPU) "
                 "over 18 NVLink-4 links, 25e9 B/s per link each way"),
        # the DGX H200 is the DGX H100 node with H200s in it: 4 NVSwitches, 8 x 400 Gb/s NICs
        network=_switched(
            (18, _BOOK_NODE + ": 18 NVLink-4 ports per Hopper GPU; " + _H200
             + ": 'NVLink 900GB/s'"), _DGX_H100_LEVELS,
            _DGX_H100_SRC + ". The DGX H200 has the same node: " + _BASEPOD,
            True, _NVLS, 128 * G // 2, _H200 + ": 'PCIe Gen5: 128GB/s' (both directions)"),
        internals=_hopper_internals("H200")
    ),
    dict(
        name="h800",
        # The H800 SXM is a GH100 at H100 SXM rates with NVLink and FP64 cut: its peaks and
        # memory are the h100 record's. The book quotes the H800 sheet's FP8 '3,026 TFLOPS*'
        # (1.513e15 dense): that is the PCIe column (the H100 PCIe's rate), not the SXM part
        # DeepSeek trained on.
        peaks={d: (v, src + "; the H800 SXM keeps H100 SXM compute (" + _DSV3 + ")"
                   + (". " + _BOOK_GPU + " quotes '3,026 TFLOPS' sparse (1.513e15 dense), the "
                      "PCIe form factor" if d == "fp8" else ""))
               for d, (v, src) in _H100_RECORD["peaks"].items()},
        **{k: (_H100_RECORD[k][0], _H100_RECORD[k][1] + "; the H800 SXM is the H100 SXM with "
               "FP64 and NVLink cut (" + _DSV3 + ")") for k in ("hbm_bw", "hbm_bytes")},
        link_bw=(25 * G, _DSV3 + ": H800 NVLink 400 GB/s bidirectional (H100: 900), NVLink-4 "
                 "links at 25e9 B/s each way (" + _BOOK_GPU + ")"),
        network=_switched(
            (8, _DSV3 + ": 'NVLink 400GB/s' bidirectional = 8 NVLink-4 links of 50 GB/s "
             "(25e9 each way), 8 x 25e9 = 200e9 B/s one way"),
            # node: W_GPU = 8 links x 25e9 one way. leaf/spine: DeepSeek's multi-plane fat
            # tree, one 400 Gb/s NIC per GPU (one plane each), two layers of 64-port switches:
            # a leaf has 32 nodes below it, a spine 64 leaves: 8 x 32 x 64 = 16,384 GPUs.
            (("node", 8, 1), ("leaf", 32, 8, _CX7_PER_GPU), ("spine", 64, 256, _CX7_PER_GPU)),
            "node: W_GPU = 8 NVLink-4 links x 25e9 = 200e9 B/s one way: the H800 sheet's and "
            + _DSV3 + "'s 'NVLink 400GB/s' is bidirectional, read one way as the H100 sheet's "
            "900 GB/s is read as the book's 450e9 (18 x 25e9). " + _BOOK_GPU + " 'Data "
            "Parallelism' writes 'NVLink cut to 300 GB/s per GPU', which neither the H800 sheet "
            "nor DeepSeek gives (300 GB/s is the A100's 12 links one way), so it is not used; "
            "leaf and spine: " + _DSV3 + ", 8 x 400G InfiniBand CX7 NICs per node "
            "(50 GB/s per GPU), a two-layer multi-plane fat tree of 64-port 400G switches for "
            "up to 16,384 GPUs",
            True, _NVLS + " (the H800 is a Hopper GPU)",
            128 * G // 2, _H100 + ": 'PCIe Gen5: 128GB/s' (both directions), as H100 SXM"),
    ),
    dict(
        name="a100",
        peaks={
            "bf16": (624 * T // 2, _A100 + ": 'BF16 Tensor Core 312 | 624 TFLOPS*'" + _SPARSE),
            "fp16": (624 * T // 2, _A100 + ": 'FP16 Tensor Core 312 | 624 TFLOPS*'" + _SPARSE),
            "int8": (1248 * T // 2, _A100 + ": 'INT8 Tensor Core 624 | 1248 TOPS*'" + _SPARSE),
            "fp32": (195 * T // 10, _A100 + ": 'FP32 19.5 TFLOPS' (CUDA cores)"),
        },
        hbm_bw=(2039 * G, _A100 + ": 'GPU memory bandwidth 2,039GB/s' (80GB SXM; the book's "
                "GPU table rounds to 2.0e12)"),
        hbm_bytes=(80 * G, _A100 + ": 'GPU memory 80GB HBM2e', read as 80e9 B"),
        link_bw=(600 * G // 2 // 12, _A100 + ": 'NVLink 600GB/s' (bidirectional, per GPU) "
                 "over 12 NVLink-3 links, 25e9 B/s per link each way (" + _BOOK_GPU + ")"),
        network=_switched(
            (12, _BOOK_NODE + ": NVLink 3.0, 12 ports of 25 GB/s per Ampere GPU"),
            # node: 6 NVSwitch-2; above it one HDR 200 Gb/s NIC per GPU into the scalable
            # unit of 20 DGX A100 (no spine: no source gives the DGX A100 SuperPOD's top).
            (("node", 8, 1), ("leaf", 20, 8, 200 * G // 8)),
            _BOOK_NODE + ": Ampere node of 8 GPUs, W_GPU = 12 x 25 GB/s = 300 GB/s; node "
            "egress: NVIDIA DGX A100 datasheet '8x Single-Port Mellanox ConnectX-6 VPI "
            "200Gb/s HDR InfiniBand' = 200 GB/s per node, 25 GB/s per GPU "
            "(https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/"
            "nvidia-dgx-a100-datasheet.pdf); a scalable unit is 20 DGX A100 (NVIDIA DGX "
            "SuperPOD RA-09950-001, summarised at https://www.naddod.com/blog/efficient-data-"
            "transfer-network-architecture-for-nvidia-dgx-a100-server-cluster)",
            False, _NVLS + "; the A100's second-generation NVSwitch has none",
            64 * G // 2, _A100 + ": 'PCIe Gen4: 64GB/s' (both directions)"),
        internals={
            "cores": (_A100_SMS, _BOOK_SM + ": A100 '108' SMs"),
            "units_per_core": (4, _BOOK_SM + ": 4 Tensor Cores a SM (one per subpartition)"),
            "clock": (141 * G // 100, _BOOK_SM + ": A100 clock '1.10GHz/1.41GHz': the boost"),
            "unit_flops.bf16": (512, _BOOK_SM + ": 'An A100 can do 512' bf16 FLOPs/TC/cycle"),
            "vector_alus": (_A100_SMS * 64, _AMPERE + ": 64 FP32 CUDA cores per SM, 6912 a GPU"),
            "smem_bytes": (192 * 10**3, _BOOK_SM + ": SMEM '192kB' per SM"),
            "l2_bytes": (40 * 10**6, _BOOK_SM + ": L2 '40MB'"),
        }
    ),
    dict(
        name="v100",
        peaks={
            # Volta has no bf16 (and no sparsity): its tensor cores run fp16 only.
            "fp16": (125 * T, _V100 + ": 'Tensor Performance 125 TFLOPS' (fp16 in, dense; "
                     "Volta has no bf16, so this record has no bf16 peak)"),
            "fp32": (157 * T // 10, _V100 + ": 'Single-Precision Performance 15.7 TFLOPS' "
                     "(CUDA cores)"),
        },
        hbm_bw=(900 * G, _V100 + ": 'Memory Bandwidth 900GB/sec'; " + _BOOK_GPU + ": 9.0e11"),
        hbm_bytes=(32 * G, _V100 + ": 'GPU Memory 32/16GB HBM2', the 32GB part, read as "
                   "32e9 B; " + _BOOK_GPU + ": 32GB"),
        link_bw=(300 * G // 2 // 6, _V100 + ": 'Interconnect Bandwidth 300GB/sec' (NVLink, "
                 "bidirectional, per GPU) over 6 NVLink-2 links, 25e9 B/s per link each way"),
        # The DGX-1's 8 V100s are a hybrid cube-mesh with no switch; the switched V100 node
        # is the DGX-2: 16 GPUs under 12 first-generation NVSwitches. No source here sizes a
        # scale-out level above it, so the node is the only level.
        network=_switched(
            (6, _V100 + ": 300 GB/s over 6 NVLink-2 links"),
            (("node", 16, 1),),
            "NVIDIA DGX-2: 16 V100 joined by 12 NVSwitches, every GPU at 300 GB/s "
            "bidirectional (150e9 B/s one way), https://www.nvidia.com/en-us/data-center/"
            "dgx-2/; its 8 x 100 Gb/s EDR NICs would give 6.25e9 B/s per GPU, but no source "
            "here sizes the level above",
            False, _NVLS + "; first-generation NVSwitch (DGX-2) has none",
            32 * G // 2, _V100 + ": the PCIe card's 'Interconnect Bandwidth 32GB/sec' "
            "(Gen3 x16, both directions); the SXM2 part has the same Gen3 x16 host link"),
        internals={
            "cores": (_V100_SMS, _BOOK_SM + ": V100 '80' SMs; " + _VOLTA + ": 80 SMs, 640 "
                      "Tensor Cores"),
            "units_per_core": (8, _VOLTA + ": 640 Tensor Cores / 80 SMs = 8 a SM (the book "
                               "counts 4 of 256 FLOPs: the same 1024 a SM per cycle)"),
            "clock": (153 * G // 100, _VOLTA + ": V100 SXM2 GPU Boost Clock 1530 MHz. The book's "
                      "'1.25GHz/1.38GHz' is the PCIe card's, at which its 125e12 does not "
                      "follow"),
            "unit_flops.fp16": (2 * 64, _VOLTA + ": each Tensor Core does 64 FP16 FMA a clock "
                                "(128 FLOPs)"),
            "vector_alus": (_V100_SMS * 64, _VOLTA + ": 64 FP32 cores per SM, 5120 a GPU"),
            "smem_bytes": (96 * 10**3, _BOOK_SM + ": SMEM '96kB' per SM"),
            "l2_bytes": (6 * 10**6, _BOOK_SM + ": L2 '6MB'"),
        }
    ),
    dict(
        name="b200",
        peaks={
            "bf16": (4500 * T // 2, _HGX_B200 + ": 'FP16/BF16 Tensor Core 4.5 PFLOPS'" + _SPARSE
                     + "; " + _BOOK_GPU + " uses 2250e12 (2.3e15). The GB200 part at 1,200 W "
                     "is faster (see gb200): this record is the 1,000 W HGX B200"),
            "fp16": (4500 * T // 2, _HGX_B200 + ": 'FP16/BF16 Tensor Core 4.5 PFLOPS'" + _SPARSE),
            "fp8": (9000 * T // 2, _HGX_B200 + ": 'FP8/FP6 Tensor Core 9 PFLOPS'" + _SPARSE
                    + "; DGX B200: 72 PFLOPS sparse for 8 GPUs"),
            "int8": (9000 * T // 2, _HGX_B200 + ": 'INT8 Tensor Core 9 POPS'" + _SPARSE),
            "fp4": (18000 * T // 2, _HGX_B200 + ": 'FP4 Tensor Core 18 PFLOPS'" + _SPARSE
                    + "; " + _BOOK_GPU + ": 9.0e15"),
            "fp32": (75 * T, _HGX_B200 + ": 'FP32 75 TFLOPS' (CUDA cores). Uncertain: the "
                     "book quotes 80 TFLOPS from the Blackwell architecture page (GB200)"),
        },
        hbm_bw=(64000 * G // 8, _DGX_B200 + ": '64TB/s HBM3e bandwidth' over 8 GPUs; the book "
                "says 8.0e12 too. Uncertain: the current HGX B200 table says 7.7TB/s"),
        hbm_bytes=(1440 * G // 8, _DGX_B200 + ": '1,440GB total GPU memory' over 8 GPUs "
                   "(HGX B200: 180GB). The book and launch material say 192GB (full 8 stacks)"),
        link_bw=(1800 * G // 2 // 18, _HGX_B200 + ": '5th generation NVLink 1.8TB/s' "
                 "(bidirectional, per GPU) over 18 links, 50e9 B/s per link each way ("
                 + _BOOK_GPU + ")"),
        network=_switched(
            (18, _BOOK_NODE + ": NVLink 5.0, 18 ports of 50 GB/s per Blackwell GPU"),
            (("node", 8, 1), ("leaf", 32, 8, _CX7_PER_GPU, True),
             ("spine", 4, 256, _CX7_PER_GPU, True), ("core", 64, 1024, _CX7_PER_GPU, True)),
            _BOOK_NODE + ": B200 node of 8 GPUs, W_GPU = 18 x 50 GB/s = 900 GB/s, node egress "
            "400 GB/s (8 x 400 Gb/s, " + _BASEPOD + "); leaf and spine: NVIDIA DGX SuperPOD "
            "RA (DGX B200), SUs of 32 DGX B200, 4 SUs = 128 nodes = 1024 GPUs under 32 leaf "
            "and 16 spine switches, https://docs.nvidia.com/dgx-superpod/"
            "reference-architecture-scalable-infrastructure-b200/latest/"
            "dgx-superpod-architecture.html" + _CORE_SRC + _IB_SHARP,
            True, _NVLS + "; fourth-generation NVSwitch (Blackwell) keeps it",
            128 * G // 2, _DGX_B200 + ": dual 5th-gen Xeon hosts, PCIe Gen5 x16 = 128GB/s "
            "both directions. Uncertain: the sheets list no B200 host link; the GPU supports "
            "Gen6"),
        internals={
            "cores": (_B200_SMS, _BOOK_SM + ": B200 '148' SMs"),
            "units_per_core": (4, _BOOK_SM + ": 4 Tensor Cores a SM"),
            "clock": (186 * G // 100, _BOOK_SM + ": the clock is '?' in the book's table; its "
                      "footnote estimates 2250e12 / (148 x 4 x 1.86e9) ~ 2048. Uncertain: "
                      "Quiz 1 Q6 reads 2.1 GHz off the 80e12 fp32 figure"),
            "unit_flops.bf16": (2048, _BOOK_SM + ": 'it seems likely it's about 2048 "
                                "FLOPs/TC/cycle' (an estimate)"),
            "vector_alus": (_B200_SMS * 4 * 32, _BOOK_SM + " Quiz 1 Q1: 'a total of 18944' CUDA "
                            "cores"),
            "smem_bytes": (256 * 10**3, _BOOK_SM + ": SMEM '256kB' per SM"),
            "tmem_bytes": (256 * 10**3, _BOOK_SM + ": 'Blackwell adds 256kB of TMEM per SM'"),
            "l2_bytes": (126 * 10**6, _BOOK_SM + ": L2 '126MB'"),
        }
    ),
    dict(
        name="gb200",
        # One Blackwell GPU of a GB200 NVL72 rack (the 1,200 W part): 72 GPUs, 36 Grace CPUs.
        peaks={
            "bf16": (360 * P // 72 // 2, _GB200 + ": 'FP16/BF16 Tensor Core 360 PFLOPS' for 72 "
                     "GPUs" + _SPARSE),
            "fp16": (360 * P // 72 // 2, _GB200 + ": 'FP16/BF16 Tensor Core 360 PFLOPS' for 72 "
                     "GPUs" + _SPARSE),
            "fp8": (720 * P // 72 // 2, _GB200 + ": 'FP8/FP6 Tensor Core 720 PFLOPS' for 72 "
                    "GPUs" + _SPARSE),
            "int8": (720 * P // 72 // 2, _GB200 + ": 'INT8 Tensor Core 720 POPS' for 72 GPUs"
                     + _SPARSE),
            "fp4": (1440 * P // 72 // 2, _GB200 + ": 'FP4 Tensor Core 1,440 PFLOPS' for 72 "
                    "GPUs" + _SPARSE),
            "fp32": (5760 * T // 72, _GB200 + ": 'FP32 5,760 TFLOPS' for 72 GPUs (CUDA cores); "
                     + _BOOK_GPU + " quotes 80 TFLOPS for Blackwell"),
        },
        hbm_bw=(16 * T // 2, _GB200 + ": superchip 'up to 372GB HBM3e | 16TB/s' for 2 GPUs "
                "(rack: 576TB/s / 72 = 8e12)"),
        hbm_bytes=(372 * G // 2, _GB200 + ": superchip 'up to 372GB HBM3e' for 2 GPUs, read as "
                   "186e9 B (rack: 'up to 13.4TB' / 72); launch material said 192GB per GPU "
                   "(8 full stacks), which this record does not use"),
        link_bw=(3600 * G // 2 // 2 // 18, _GB200 + ": superchip 'NVLink bandwidth 3.6TB/s' "
                 "for 2 GPUs (bidirectional) over 18 links each, 50e9 B/s per link each way"),
        network=_switched(
            (18, _BOOK_NODE + ": NVLink 5.0, 18 ports of 50 GB/s per Blackwell GPU"),
            # node: the 72-GPU NVLink domain; leaf: a scalable unit of 8 racks (576 GPUs);
            # spine: 16 SUs, the RA's 128 racks of 9216 GPUs.
            (("node", 72, 1), ("leaf", 8, 72, _NVL72_NIC_PER_GPU),
             ("spine", 9216 // 576, 576, _NVL72_NIC_PER_GPU)),
            _BOOK_NODE + ": GB200 NVL72 node of 72 GPUs, W_GPU 900 GB/s, node egress "
            "4 x 18 x 400 Gb/s / 8 = 3.6 TB/s (50 GB/s per GPU); NVIDIA DGX SuperPOD RA (DGX "
            "GB200): 'each SU contains 8 DGX GB200 systems', https://docs.nvidia.com/"
            "dgx-superpod/reference-architecture-scalable-infrastructure-gb200/latest/"
            "abstract.html; spine: the same RA, 'DGX SuperPOD can scale to much larger "
            "configurations up to and beyond 128 racks with 9216 GPUs', https://docs.nvidia."
            "com/dgx-superpod/reference-architecture-scalable-infrastructure-gb200/latest/"
            "dgx-superpod-architecture.html: 9216 / 576 = 16 SUs under the spine, each GPU "
            "keeping its 400 Gb/s NIC share (a full fat tree above the node, as the book reads "
            "the SuperPod's and as the DGX B200 RA's counts show: as many leaf-spine cables as "
            "node-leaf ones). Uncertain: the GB200 RA details one SU and prints no spine "
            "cable count",
            True, _NVLS + "; fourth-generation NVSwitch (Blackwell) keeps it",
            900 * G // 2 // 2, _GB200 + ": NVLink-C2C 900GB/s (bidirectional) between the Grace "
            "CPU and its 2 GPUs, read as shared: 225e9 B/s per GPU one way (the conservative "
            "reading; 2x if each GPU has its own 900GB/s)"),
        internals=_blackwell_internals(),
    ),
    dict(
        name="tpu-v2",
        # Two TensorCores of one 128x128 MXU each, 8 GB of HBM each (JAX sees 2 devices); as
        # for v3 this record is the whole chip.
        peaks={
            "bf16": (180 * T // 4, _V2_CLOUD + ": a Cloud TPU v2 device of 4 chips, '180 "
                     "teraflops'"),
        },
        hbm_bw=(700 * G, _V2_MICRO + ": 'HBM: 700 GB/s' per chip"),
        hbm_bytes=(64 * G // 4, _V2_CLOUD + ": '64 GB High Bandwidth Memory' per 4-chip device, "
                   "read as 16e9 B a chip"),
        link_bw=(500 * G // 8, _V2_MICRO + ": four ICI links of '500 Gb/s' a chip, read as one "
                 "direction. Uncertain: the paper's tables round (496 Gb/s)"),
        network=_torus(2, (16, 16), (2, 2), "full", 16 * G, 25 * G // 4,
                       (_SLICES_V2, _SLICES_SRC["tpu-v2"]),
                       _V2_MICRO + ": 'PCIe: 16 GB/s' per chip",
                       _BOOK_NET + ": DCN about 6.25e9 B/s per TPU (no v2 figure)",
                       host_src=": a v2-8 host has 4 chips (8 TensorCores), " + _SLICES_SRC[
                           "tpu-v2"]),
        internals={
            "cores": (2, _BOOK_TPU + ": v3 and older have 2 TensorCores a chip"),
            "units_per_core": (1, _BOOK_TC + ": 'Some TPUs (since TPU v3) have multiple MXUs': "
                               "v2 has one a TensorCore"),
            "unit_flops.bf16": _MXU,
        },
    ),
    dict(
        name="tpu-v3",
        # A v3 chip has 2 TensorCores with separate HBM, which JAX sees as 2 devices. This
        # record is the whole chip (both cores), as the book's tables are: one core is half
        # of each figure (16GB, 4.5e11 B/s, 7e13 FLOP/s). Meshes here count chips.
        peaks={
            "bf16": (140 * T, _BOOK_TPU + ": 1.4e14 per chip (both TensorCores); " + _GCP
                     + "v3: 'Peak compute per chip 123 teraflops (bf16)'"),
            "int8": (140 * T, _BOOK_TPU + ": 1.4e14, the bf16 rate"),
        },
        hbm_bw=(900 * G, _BOOK_TPU + ": 9.0e11 per chip; " + _GCP + "v3: '32 GiB, 900 GBps' "
                "(2 TensorCores, each with half)"),
        hbm_bytes=(32 * G, _BOOK_TPU + ": 32GB per chip, read as 32e9 B; " + _GCP + "v3: '32 "
                   "GiB' (16 GiB per TensorCore, separate memories)"),
        link_bw=(100 * G, _BOOK_TPU + ": ICI 1e11 B/s per link one-way (2e11 bidi), 4 links"),
        network=_torus(2, (32, 32), (2, 2), "full", 16 * G, 25 * G // 4,
                       (_SLICES_V3, _SLICES_SRC["tpu-v3"]),
                       _BOOK_NET + ": PCIe about 1.6e10 B/s per TPU (no v3 figure)",
                       _BOOK_NET + ": DCN about 6.25e9 B/s per TPU (no v3 figure)",
                       host_src=". The book's table prints 4x2, which counts the 8 "
                       "TensorCores (devices) of a v3 host; a host has 4 chips (v3-8 = 4 chips "
                       "x 2 cores, " + _GCP + "v3), so in chips it is 2x2"),
        internals={
            "cores": (2, _BOOK_TPU + ": v3 and older have 2 TensorCores a chip"),
            "units_per_core": (2, _BOOK_TC + ": '2 for TPU v3' MXUs a TensorCore"),
            "unit_flops.bf16": _MXU,
        }
    ),
    dict(
        name="tpu-v4p",
        peaks={
            "bf16": (275 * T, _BOOK_TPU + ": 2.75e14; " + _GCP
                     + "v4: '275 teraflops (bf16 or int8)'"),
            "int8": (275 * T, _BOOK_TPU + ": 2.75e14 (v4 int8 runs at the bf16 rate)"),
        },
        hbm_bw=(1200 * G, _BOOK_TPU + ": 1.2e12 (its worked answer uses 1.23e12); "
                + _GCP + "v4: '1200 GBps'"),
        hbm_bytes=(32 * G, _BOOK_TPU + ": 32GB, read as 32e9 B; " + _GCP + "v4 says '32 GiB' "
                   "(34.4e9 B)"),
        link_bw=(45 * G, _BOOK_TPU + ": ICI 4.5e10 B/s per link one-way (9e10 bidi), 6 links"),
        network=_torus(3, (16, 16, 16), (2, 2, 1), "cube", 16 * G,
                       25 * G // 4, (_SLICES_CUBE, _GCP + "v4: " + _SLICES_SRC["cube"]),
                       _BOOK_NET + ": PCIe 'TPU v4 16 GB/s each way'",
                       _BOOK_NET + ": DCN about 6.25e9 B/s per TPU (a v5p/v4 host: "
                       "200 Gb/s for 4 chips)"),
        internals={
            "cores": (2, _BOOK_TC + ": v4 chips have 2 TensorCores (a megacore)"),
            "units_per_core": (4, _BOOK_TC + ": '4 for TPU v4/5' MXUs a TensorCore"),
            "unit_flops.bf16": _MXU,
            "vector_alus": (2 * 8 * 128 * 2, _BOOK_TC + " App. C: each (lane, sublane) pair "
                            "on v4 has 2 ALUs, '2048 floating point adders' a core, 2 cores"),
            "vregs_bytes": (2 * 32 * 8 * 128 * 4, _BOOK_TC + " App. C: 'TPU v4 has 32 VREGs "
                            "of size (8, 128)' of 32-bit words a core, 2 cores"),
        }
    ),
    dict(
        name="tpu-v5e",
        peaks={
            "bf16": (197 * T, _BOOK_ROOF + ": 1.97e14; " + _GCP + "v5e: '197 TFLOPs'"),
            "int8": (394 * T, _BOOK_ROOF + ", problem 1: 3.94e14; " + _GCP + "v5e: '393 TOPs'"),
        },
        hbm_bw=(_V5E_HBM, _BOOK_ROOF + ": 8.2e11 (critical intensity 240). The same chapter's "
                "problem 1 and the TPU table use 8.1e11; " + _GCP + "v5e: '819 GBps'"),
        hbm_bytes=(16 * G, _BOOK_TPU + ": 16GB, read as 16e9 B; " + _GCP + "v5e: '16 GB' "
                   "(the book's prose says 16GiB)"),
        link_bw=(45 * G, _BOOK_ROOF + " and " + _BOOK_TPU + ": ICI 4.5e10 B/s per link each "
                 "way, 4 links. " + _GCP + "v5e: 400 GBps bidi per chip over 4 ports = 5e10 "
                 "each way (an older book version also said 5e10)"),
        network=_torus(2, (16, 16), (4, 2), "full", 16 * G, 3125 * G // 1000,
                       (_SLICES_2D, _SLICES_SRC["tpu-v5e"]),
                       _BOOK_NET + ": PCIe about 1.6e10 B/s per TPU",
                       _BOOK_NET + ": DCN egress 3.125e9 B/s per v5e chip"),
        internals={
            "cores": (1, _BOOK_TC + ": v5e has 'only 1 core per chip'"),
            "units_per_core": (4, _BOOK_TC + ": '4 for TPU v4/5' MXUs a TensorCore"),
            "clock": (15 * G // 10, _BOOK_TC + ": 'about 5e13 bf16 FLOPs/s per MXU at 1.5GHz on "
                      "TPU v5e'"),
            "unit_flops.bf16": _MXU,
            "unit_flops.int8": (2 * _MXU[0], _BOOK_TC + ": 'int8 ... roughly 2x' bf16 FLOPs "
                                "(the v5e table: 3.94e14 against 1.97e14)"),
            "vmem_bytes": (128 * 2**20, _BOOK_TC + ": VMEM '128 MiB on TPU v5e'"),
            "vmem_bw": (22 * _V5E_HBM, _BOOK_TC + ": 'VMEM bandwidth is around 22x higher than "
                        "HBM bandwidth' (ch. 2 problem 4 writes 1.78e13 = 22 x 8.1e11); 22 x "
                        "this record's 8.2e11"),
            "host_dram": (384 * G, "Google Cloud TPU docs, https://cloud.google.com/tpu/docs/"
                          "v5e, 'VM types': ct5lp-hightpu-8t, 8 chips (one host, 4x2), 224 "
                          "vCPUs, 'RAM (GB)' 384, as v5p's figure is its 4-chip VM's. "
                          "Uncertain: a newer version of the page says 'DRAM per host 512 "
                          "GiB' (the machine, not the VM)"),
        }
    ),
    dict(
        name="tpu-v5p",
        peaks={
            "bf16": (459 * T, _BOOK_TPU + ": 4.59e14; " + _GCP + "v5p: '459 TFLOPs'"),
            "int8": (918 * T, _BOOK_TPU + ": 9.18e14"),
        },
        hbm_bw=(2800 * G, _BOOK_TPU + ": 2.8e12; its prose says 2.5e12; " + _GCP
                + "v5p: '2765 GBps'"),
        hbm_bytes=(96 * G, _BOOK_TPU + ": 96GB, read as 96e9 B; " + _GCP + "v5p: '95GB' "
                   "(a newer page: 95 GiB)"),
        link_bw=(90 * G, _BOOK_TPU + ": ICI 9e10 B/s per link one-way (1.8e11 bidi), 6 links. "
                 + _GCP + "v5p: 1200 GBps bidi per chip = 1e11 each way per link; the book "
                 "notes the difference"),
        network=_torus(3, (16, 20, 28), (2, 2, 1), "cube", 16 * G, 25 * G // 4,
                       (_SLICES_CUBE, _GCP + "v5p: " + _SLICES_SRC["cube"]),
                       _BOOK_NET + ": PCIe about 1.6e10 B/s per TPU",
                       _BOOK_NET + ": DCN about 6.25e9 B/s per TPU (ch. 5: a v5p host "
                       "has 200 Gb/s = 25e9 B/s for its 4 chips)"),
        internals={
            "cores": (2, _BOOK_TC + ": 'each TPU has two TensorCores' (v5p)"),
            "units_per_core": (4, _BOOK_TC + ": '4 for TPU v4/5' MXUs a TensorCore"),
            "unit_flops.bf16": _MXU,
            "vector_alus": (2 * 4 * 8 * 128, _BOOK_SM + " Quiz 1 Q1: v5p '2 * 4 * 8 * 128 = "
                            "8192 ALUs'"),
            "vector_peak": (7 * T, "How to Scale Your Model, ch. 1 footnote, https://jax-ml."
                            "github.io/scaling-book/roofline/: 'The TPU v5p VPU can do roughly "
                            "7e12 FLOPs / second'"),
            "vmem_bytes": (128 * 10**6, _BOOK_SM + ": the GPU/TPU table: VMEM '128MB' (v5p)"),
            "vregs_bytes": (256 * 10**3, _BOOK_SM + ": the GPU/TPU table: Vector Registers "
                            "'256kB' (v5p)"),
            "host_dram": (448 * G, "Google Cloud TPU docs, https://cloud.google.com/tpu/docs/"
                          "v5p-training: 'RAM (GB) (4-chip VM) 448', one host of 4 chips"),
        }
    ),
    dict(
        name="tpu-v6e",
        peaks={
            "bf16": (910 * T, _BOOK_ROOF + ": 9.1e14. The book's TPU table says 9.20e14 and "
                     + _GCP + "v6e says '918 TFLOPs'"),
            "int8": (1840 * T, _BOOK_TPU + ": 1.84e15; " + _GCP + "v6e: '1836 TOPs'"),
        },
        hbm_bw=(1600 * G, _BOOK_ROOF + ": 1.6TB/s (and the TPU table); " + _GCP
                + "v6e: '1638 GBps'"),
        hbm_bytes=(32 * G, _BOOK_TPU + ": 32GB, read as 32e9 B; " + _GCP + "v6e: '32 GB'"),
        link_bw=(90 * G, _BOOK_TPU + ": ICI 9e10 B/s per link one-way (1.8e11 bidi), 4 links. "
                 + _GCP + "v6e: 800 GBps bidi per chip over 4 ports = 1e11 each way"),
        network=_torus(2, (16, 16), (4, 2), "full", 32 * G, 125 * G // 10,
                       (_SLICES_2D, _SLICES_SRC["tpu-v6e"]),
                       _BOOK_NET + ": PCIe 3.2e10 B/s per v6e chip",
                       _BOOK_NET + ": DCN egress 12.5e9 B/s per v6e chip"),
        internals={
            "cores": (1, _BOOK_TPU + ": v5e and v6e have 1 TensorCore a chip"),
            "unit_flops.bf16": (4 * _MXU[0], _BOOK_TC + ": 'Trillium (TPU v6e) has a 256x256 "
                                "systolic array, which means it can perform 4x more FLOPs / "
                                "cycle'"),
            "host_dram": (1536 * 2**30, "Google Cloud TPU docs, https://cloud.google.com/tpu/"
                          "docs/v6e: 'DRAM per host 1536 GiB', 'Chips per host 8' (the "
                          "machine's DRAM; the page gives no VM figure, which v5e and v5p's "
                          "records use)"),
        }
    ),
]

# LLM-Viewer's own hardware presets, as chips, so that its numbers can be reproduced with its
# figures (symroof's records above are the datasheets'; these never shadow them: each name
# starts "llm-viewer/"). Peaks and bandwidth: hahnyuan/LLM-Viewer hardwares/hardware_params.py
# at 472f71f ("the OPS = sparse OPS/2"); its FP16 roof is the 16-bit one. LLM-Viewer records
# no capacity and no link: those come from the symroof record of the same part, sourced so.
_LV = ("LLM-Viewer hardwares/hardware_params.py at 472f71f, https://github.com/hahnyuan/"
       "LLM-Viewer/blob/472f71f1a1807e80b573252e9185fd5e8d795e95/hardwares/hardware_params.py"
       ", ")
_A100_40 = ("NVIDIA A100 datasheet, A100 40GB SXM column (same document as the a100 record): "
            "'GPU memory 40GB HBM2', read as 40e9 B")
_PEERS = (  # name, its key in hardware_params.py, base record, (bandwidth, FP16, INT8) as
    # hardware_params.py writes them, its comment, hbm_bytes (None: the base record's)
    ("nvidia-a100", "nvidia_A100", "a100", (1555 * G, 312 * T, 624 * T), "# use 40G data",
     (40 * G, _A100_40)),
    ("nvidia-a100-80g", "nvidia_A100_80G", "a100", (2039 * G, 312 * T, 624 * T), "", None),
    ("nvidia-h100", "nvidia_H100", "h100", (3072 * G, 1979 * T // 2, 3958 * T // 2),
     "# use SXM data", None),
    ("nvidia-h100-pcie", "nvidia_H100_PCIe", "h100", (2048 * G, 1513 * T // 2, 3026 * T // 2),
     "", None),
)


def _peer(name: str, key: str, base: str, figures: tuple, comment: str,
          hbm: tuple | None) -> dict:
    record = next(r for r in RECORDS if r["name"] == base)
    bw, fp16, int8 = figures
    src = _LV + f"'{key}' {comment}".rstrip()
    borrowed = f"not in LLM-Viewer's preset; symroof's {base} record's (SXM) figure: "
    return dict(name=f"llm-viewer/{name}",
                peaks={"fp16": (fp16, src + ": 'FP16'"), "int8": (int8, src + ": 'INT8'")},
                hbm_bw=(bw, src + ": 'bandwidth'"),
                hbm_bytes=hbm or (record["hbm_bytes"][0], borrowed + record["hbm_bytes"][1]),
                link_bw=(record["link_bw"][0], borrowed + record["link_bw"][1]),
                network=record.get("network"))


RECORDS += [_peer(*p) for p in _PEERS]

# llm-analysis's GPU presets (cli99/llm-analysis llm_analysis/gpu_configs/<name>.json at
# d841e40): its roofs, so that its numbers can be reproduced and its ridge set beside the
# others; the link is symroof's. Its capacity is GiB: analysis.py line 1611 reads
# mem_per_GPU_in_GB * 1024**3 (its bandwidth, hbm_bandwidth_in_GB_per_sec * 10**9, is GB).
_LA = ("llm-analysis llm_analysis/gpu_configs/{0}.json at d841e40, https://github.com/cli99/"
       "llm-analysis/blob/d841e40/llm_analysis/gpu_configs/{0}.json: ")
_LA_PRESETS = (  # its file name, symroof's record of the part, and the file's figures
    ("h100-sxm-80gb", "h100", {"peak_fp16_TFLOPS": 989, "peak_i8_TFLOPS": 1979,
                               "hbm_bandwidth_in_GB_per_sec": 3350, "mem_per_GPU_in_GB": 80}),
    ("a100-sxm-80gb", "a100", {"peak_fp16_TFLOPS": 312, "peak_i8_TFLOPS": 624,
                               "hbm_bandwidth_in_GB_per_sec": 2039, "mem_per_GPU_in_GB": 80}),
)


def _llm_analysis(name: str, base: str, f: dict[str, int]) -> dict:
    record, src = next(r for r in RECORDS if r["name"] == base), _LA.format(name)
    return dict(
        name=f"llm-analysis/{name}",
        peaks={"fp16": (f["peak_fp16_TFLOPS"] * T, src + f"'peak_fp16_TFLOPS': "
                        f"{f['peak_fp16_TFLOPS']}"),
               "int8": (f["peak_i8_TFLOPS"] * T, src + f"'peak_i8_TFLOPS': {f['peak_i8_TFLOPS']}")},
        hbm_bw=(f["hbm_bandwidth_in_GB_per_sec"] * G, src + "'hbm_bandwidth_in_GB_per_sec': "
                f"{f['hbm_bandwidth_in_GB_per_sec']}"),
        hbm_bytes=(f["mem_per_GPU_in_GB"] * 2**30, src + f"'mem_per_GPU_in_GB': "
                   f"{f['mem_per_GPU_in_GB']}, read as GiB (analysis.py line 1611)"),
        link_bw=(record["link_bw"][0], f"not in llm-analysis's preset per link; symroof's "
                 f"{base} record's: " + record["link_bw"][1]),
        network=record.get("network"))


RECORDS += [_llm_analysis(*p) for p in _LA_PRESETS]
