"""Every figure of every chip record, pinned to its sheet: a table typed from the sources
(NVIDIA's datasheets, Google's TPU pages and "How to Scale Your Model"), not from the
records, so a figure changed in ``symroof/hardware/chips.py`` (a 2% HBM bandwidth, a link, a
level of a fat tree) fails here. Then a golden ``critical-batch`` per chip from the table.

Conventions of the records (stated in chips.py, applied here by hand): NVIDIA's tensor-core
figures are quoted with 2:4 sparsity, dense is half; GB is 1e9 bytes; a GPU's NVLink figure
is bidirectional per GPU over its links, so one link one way is sheet / 2 / links.
"""

from fractions import Fraction

import pytest

import symroof as sr
from symroof.hardware import CHIPS
from symroof.surfaces.cli import main

T, G, P = 10**12, 10**9, 10**15
US = Fraction(1, 10**6)
NCCL_STEP = Fraction(6, 10**7)  # NCCL tuning.cc hwLatencies NVLINK Ring LL: 0.6 us
NCCL_NET_STEP = Fraction(27, 10**7)  # and hwLatencies NET Ring LL: 2.7 us (v2.30.7-1)

#: chip -> (peaks {dtype: FLOP/s}, HBM B/s, HBM bytes, one link one way B/s)
SHEETS = {
    # H100 SXM datasheet: BF16/FP16 1,979 TFLOPS* (sparse; the seeds' dense 989e12),
    # FP8/INT8 3,958*, FP32 67, 3.35 TB/s, 80 GB, NVLink 900 GB/s over 18 links
    "h100": ({"bf16": 989 * T, "fp16": 989 * T, "fp8": 1979 * T, "int8": 1979 * T,
              "fp32": 67 * T}, 3350 * G, 80 * G, 25 * G),
    # H200 SXM datasheet: H100's compute, 4.8 TB/s, 141 GB
    "h200": ({"bf16": 989 * T, "fp16": 989 * T, "fp8": 1979 * T, "int8": 1979 * T,
              "fp32": 67 * T}, 4800 * G, 141 * G, 25 * G),
    # H800 SXM: H100 SXM compute and memory (DeepSeek ISCA 2025), NVLink-4 links of 25 GB/s
    "h800": ({"bf16": 989 * T, "fp16": 989 * T, "fp8": 1979 * T, "int8": 1979 * T,
              "fp32": 67 * T}, 3350 * G, 80 * G, 25 * G),
    # A100 80GB SXM datasheet: BF16/FP16 624* (312 dense), INT8 1248*, FP32 19.5,
    # 2,039 GB/s, 80 GB, NVLink 600 GB/s over 12 links
    "a100": ({"bf16": 312 * T, "fp16": 312 * T, "int8": 624 * T, "fp32": 19_500 * G},
             2039 * G, 80 * G, 25 * G),
    # V100 SXM2 datasheet: 125 TFLOPS tensor (fp16, dense), FP32 15.7, 900 GB/s, 32 GB,
    # NVLink 300 GB/s over 6 links
    "v100": ({"fp16": 125 * T, "fp32": 15_700 * G}, 900 * G, 32 * G, 25 * G),
    # HGX B200: FP16/BF16 4.5 PF*, FP8 9*, INT8 9*, FP4 18*, FP32 75 TF; DGX B200: 64 TB/s and
    # 1,440 GB for 8 GPUs; NVLink 1.8 TB/s over 18 links
    "b200": ({"bf16": 2250 * T, "fp16": 2250 * T, "fp8": 4500 * T, "int8": 4500 * T,
              "fp4": 9000 * T, "fp32": 75 * T}, 8000 * G, 180 * G, 50 * G),
    # GB200 NVL72 (72 GPUs): FP16/BF16 360 PF*, FP8/INT8 720*, FP4 1,440*, FP32 5,760 TF;
    # superchip (2 GPUs): 16 TB/s, 372 GB, NVLink 3.6 TB/s
    "gb200": ({"bf16": 2500 * T, "fp16": 2500 * T, "fp8": 5000 * T, "int8": 5000 * T,
               "fp4": 10_000 * T, "fp32": 80 * T}, 8000 * G, 186 * G, 50 * G),
    # TPU v2: Cloud TPU page (2018) '180 teraflops, 64 GB' per 4-chip device; Norrie et al.,
    # IEEE Micro 2021: 'HBM: 700 GB/s' a chip, four ICI links of '500 Gb/s'
    "tpu-v2": ({"bf16": 45 * T}, 700 * G, 16 * G, 500 * G // 8),
    # How to Scale Your Model, ch. 2 TPU table (v3 per chip: both TensorCores)
    "tpu-v3": ({"bf16": 140 * T, "int8": 140 * T}, 900 * G, 32 * G, 100 * G),
    "tpu-v4p": ({"bf16": 275 * T, "int8": 275 * T}, 1200 * G, 32 * G, 45 * G),
    # v5e: the book's roofline chapter (1.97e14, 3.94e14, 8.2e11), 16 GB, ICI 4.5e10
    "tpu-v5e": ({"bf16": 197 * T, "int8": 394 * T}, 820 * G, 16 * G, 45 * G),
    "tpu-v5p": ({"bf16": 459 * T, "int8": 918 * T}, 2800 * G, 96 * G, 90 * G),
    # v6e: the roofline chapter's 9.1e14 and 1.6 TB/s; the TPU table's 1.84e15 int8, 32 GB
    "tpu-v6e": ({"bf16": 910 * T, "int8": 1840 * T}, 1600 * G, 32 * G, 90 * G),
}

#: GPU networks: NVLink ports, levels (name, degree, GPUs per child, one GPU's one-way B/s
#: into it), SHARP, PCIe one way. Book ch. 12 node and SuperPod tables; NVIDIA BasePOD and
#: SuperPOD reference architectures; DeepSeek ISCA 2025 for the H800 cluster.
# leaf and spine: 8 x 400 Gb/s NICs per node of 8 GPUs = 50 GB/s per GPU one way
GPU_NETS = {
    "h100": (18, [("node", 8, 1, 450 * G), ("leaf", 32, 8, 50 * G), ("spine", 4, 256, 50 * G)],
             True, 64 * G),
    "h200": (18, [("node", 8, 1, 450 * G), ("leaf", 32, 8, 50 * G), ("spine", 4, 256, 50 * G)],
             True, 64 * G),
    "h800": (8, [("node", 8, 1, 200 * G), ("leaf", 32, 8, 50 * G), ("spine", 64, 256, 50 * G)],
             True, 64 * G),
    "a100": (12, [("node", 8, 1, 300 * G), ("leaf", 20, 8, 25 * G)], False, 32 * G),
    "v100": (6, [("node", 16, 1, 150 * G)], False, 16 * G),
    "b200": (18, [("node", 8, 1, 900 * G), ("leaf", 32, 8, 50 * G), ("spine", 4, 256, 50 * G)],
             True, 64 * G),
    # GB200 SuperPOD RA: SUs of 8 NVL72 racks (576 GPUs), "up to and beyond 128 racks with
    # 9216 GPUs" (16 SUs under the spine)
    "gb200": (18, [("node", 72, 1, 900 * G), ("leaf", 8, 72, 50 * G),
                   ("spine", 16, 576, 50 * G)], True, 225 * G),
}
#: TPU tori: rank, pod, host (chips), wraparound rule, PCIe and DCN one way per chip
#: (book ch. 2 'TPU Networking' and 'TPU Specs'; hop latency 1 us, ch. 3)
TPU_NETS = {
    "tpu-v2": (2, (16, 16), (2, 2), "full", 16 * G, Fraction(25 * G, 4)),
    "tpu-v3": (2, (32, 32), (2, 2), "full", 16 * G, Fraction(25 * G, 4)),
    "tpu-v4p": (3, (16, 16, 16), (2, 2, 1), "cube", 16 * G, Fraction(25 * G, 4)),
    "tpu-v5e": (2, (16, 16), (4, 2), "full", 16 * G, Fraction(3125 * G, 1000)),
    "tpu-v5p": (3, (16, 20, 28), (2, 2, 1), "cube", 16 * G, Fraction(25 * G, 4)),
    "tpu-v6e": (2, (16, 16), (4, 2), "full", 32 * G, Fraction(125 * G, 10)),
}


def test_every_preset_is_in_the_table():
    # the presets; "tool/name" records are other tools' figures, kept to compare with them
    presets = {name for name in CHIPS if "/" not in name}
    assert set(SHEETS) == presets == set(GPU_NETS) | set(TPU_NETS)


@pytest.mark.parametrize("name", sorted(SHEETS))
def test_figures_match_the_sheet(name):
    c = sr.chip(name)
    peaks, hbm_bw, hbm_bytes, link_bw = SHEETS[name]
    assert dict(c.peaks) == peaks
    assert (c.hbm_bw, c.hbm_bytes, c.link_bw) == (hbm_bw, hbm_bytes, link_bw)


@pytest.mark.parametrize("name", sorted(GPU_NETS))
def test_gpu_networks_match_their_sources(name):
    net = sr.chip(name).network
    ports, levels, sharp, pcie = GPU_NETS[name]
    assert net.nvlink_ports == ports and net.sharp is sharp and net.pcie_bw == pcie
    got = [(lv.name, lv.degree, lv.gpus_per_child, lv.bw_per_gpu) for lv in net.levels]
    assert got[:len(levels)] == [tuple(lv) for lv in levels]
    assert net.hop_latency == NCCL_STEP and net.net_latency == NCCL_NET_STEP
    assert net.levels[0].bw_per_gpu == ports * SHEETS[name][3]  # W_GPU = ports x link


@pytest.mark.parametrize("name", sorted(TPU_NETS))
def test_tpu_networks_match_the_book(name):
    net = sr.chip(name).network
    rank, pod, host, wrap, pcie, dcn = TPU_NETS[name]
    assert (net.rank, tuple(net.pod), tuple(net.host), net.wrap_rule) == (rank, pod, host, wrap)
    assert (net.pcie_bw, net.dcn_bw, net.hop_latency) == (pcie, dcn, US)


@pytest.mark.parametrize("name", sorted(SHEETS))
def test_golden_critical_batch(name, capsys):
    """B* = C / W at bf16 widths (fp16 on V100, which has no bf16), from the table."""
    peaks, hbm_bw, _, _ = SHEETS[name]
    dtype = "bf16" if "bf16" in peaks else "fp16"
    golden = Fraction(peaks[dtype], hbm_bw)
    assert main(["critical-batch", "--chip", name, "--dtype", dtype]) == 0
    shown = capsys.readouterr().out.splitlines()[1].strip()
    exact = f"{golden.numerator}/{golden.denominator}" if golden.denominator != 1 else \
        str(golden.numerator)
    assert shown == f"B* = {exact} = {float(golden):.4f}"
    assert sr.critical_batch(sr.chip(name), dtype=dtype) == golden


def test_book_ridges():
    # the book's ch. 1: TPU v5e bf16 ridge 240 FLOP/B, H100 about 295
    assert round(float(sr.critical_batch(sr.chip("tpu-v5e")))) == 240
    assert round(float(sr.critical_batch(sr.chip("h100")))) == 295
