"""Preset chip records: plain data, one dict per chip, each figure paired with its source.

Units are SI: FLOP/s (OP/s for int8), bytes/s, bytes. Peaks are *dense* (NVIDIA's sheets
quote tensor-core figures "with sparsity", twice the dense rate; the literal keeps the sheet's
number and the halving). Every literal is an exact Python integer (``T = 10**12``).

Choices that apply to every record:

* ``GB`` on a sheet is read as SI, 1e9 bytes (the book does the same). The silicon is
  binary: an H100 "80GB" has 5 stacks of 16 GiB and nvidia-smi reports 81,559 MiB
  (85.52e9 B) usable; see https://github.com/modal-labs/modal-client/pull/2797 ("nvidia
  quotes GB on their GPUs not GiB"). 80e9 is the conservative reading.
* ``link_bw`` is one direction of one physical link. TPUs: one ICI link (4 per chip on the
  2D-torus v5e/v6e, 6 on the 3D-torus v4p/v5p). GPUs: one NVLink link; the per-GPU figure on
  the sheet is bidirectional and spread over 18 links (12 on A100), so a GPU's NVLink egress
  is ``links * link_bw`` (18 * 25e9 = 450e9 B/s on H100).
* TPUs use the figures of "How to Scale Your Model" (the seeds' book); where its roofline
  chapter (the seed) prints a figure, that one wins over its TPU table.
* ``fp32`` on a GPU is the CUDA-core (non-tensor) rate, the roof for elementwise work.

This module imports nothing; :mod:`symroof.hardware` turns the dicts into ``Chip`` records.
"""

T = 10**12  # tera
G = 10**9  # giga

_BOOK_ROOF = "How to Scale Your Model, ch. 1 (seed 000), https://jax-ml.github.io/scaling-book/roofline/"
_BOOK_TPU = "How to Scale Your Model, ch. 2 'TPU Specs' table, https://jax-ml.github.io/scaling-book/tpus/"
_BOOK_GPU = "How to Scale Your Model, ch. 12, https://jax-ml.github.io/scaling-book/gpus/"
_H100 = "NVIDIA H100 datasheet, H100 SXM column, https://www.nvidia.com/en-us/data-center/h100/"
_H200 = "NVIDIA H200 datasheet, H200 SXM column, https://www.nvidia.com/en-us/data-center/h200/"
_A100 = (
    "NVIDIA A100 datasheet, A100 80GB SXM column, https://www.nvidia.com/content/dam/en-zz/"
    "Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf"
)
_HGX_B200 = "NVIDIA HGX B200 spec table, per-GPU column, https://www.nvidia.com/en-us/data-center/hgx/"
_DGX_B200 = "NVIDIA DGX B200 datasheet (8 GPUs), https://www.nvidia.com/en-us/data-center/dgx-b200/"
_GCP = "Google Cloud TPU docs, https://cloud.google.com/tpu/docs/"
_SPARSE = "; the sheet's figure is with 2:4 sparsity, dense is half"

RECORDS: list[dict] = [
    dict(
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
        # 900 GB/s per GPU, both directions, over 18 NVLink-4 links: 25e9 B/s per link each way.
        link_bw=(900 * G // 2 // 18, _H100 + ": 'NVLink 900GB/s' (bidirectional, per GPU) "
                 "over 18 links; " + _BOOK_GPU + ": 25GB/s per link each way"),
    ),
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
    ),
    dict(
        name="b200",
        peaks={
            "bf16": (4500 * T // 2, _HGX_B200 + ": 'FP16/BF16 Tensor Core 4.5 PFLOPS'" + _SPARSE
                     + "; " + _BOOK_GPU + " uses 2250e12 (2.3e15). The GB200 part at 1,200 W "
                     "is faster (5 PFLOPS sparse): this record is the 1,000 W HGX B200"),
            "fp16": (4500 * T // 2, _HGX_B200 + ": 'FP16/BF16 Tensor Core 4.5 PFLOPS'" + _SPARSE),
            "fp8": (9000 * T // 2, _HGX_B200 + ": 'FP8/FP6 Tensor Core 9 PFLOPS'" + _SPARSE
                    + "; DGX B200: 72 PFLOPS sparse for 8 GPUs"),
            "int8": (9000 * T // 2, _HGX_B200 + ": 'INT8 Tensor Core 9 POPS'" + _SPARSE),
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
    ),
    dict(
        name="tpu-v5e",
        peaks={
            "bf16": (197 * T, _BOOK_ROOF + ": 1.97e14; " + _GCP + "v5e: '197 TFLOPs'"),
            "int8": (394 * T, _BOOK_ROOF + ", problem 1: 3.94e14; " + _GCP + "v5e: '393 TOPs'"),
        },
        hbm_bw=(820 * G, _BOOK_ROOF + ": 8.2e11 (critical intensity 240). The same chapter's "
                "problem 1 and the TPU table use 8.1e11; " + _GCP + "v5e: '819 GBps'"),
        hbm_bytes=(16 * G, _BOOK_TPU + ": 16GB, read as 16e9 B; " + _GCP + "v5e: '16 GB' "
                   "(the book's prose says 16GiB)"),
        link_bw=(45 * G, _BOOK_ROOF + " and " + _BOOK_TPU + ": ICI 4.5e10 B/s per link each "
                 "way, 4 links. " + _GCP + "v5e: 400 GBps bidi per chip over 4 ports = 5e10 "
                 "each way (an older book version also said 5e10)"),
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
    ),
]
