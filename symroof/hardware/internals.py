"""Inside a chip: compute units, clock, per-cycle rates, the vector unit and on-chip
memories, and the roofs they make (HBM, an on-chip memory, the vector unit, the host link).

A record's ``internals`` maps a figure name to an exact number (SI units: Hz, bytes, B/s,
FLOP/s), each with its source in ``chip.sources["internals.<name>"]``:

========================== ==================================================================
``cores``                  TensorCores per TPU chip; SMs per GPU
``units_per_core``         MXUs per TensorCore; tensor cores per SM
``clock``                  Hz (the clock the matmul peak is quoted at, where known)
``unit_flops.<dtype>``     FLOPs per MXU (per tensor core) per cycle
``vector_alus``            vector ALUs per chip: VPU lanes x sublanes x ALUs x cores; CUDA cores
``vector_peak``            vector FLOP/s per chip (a GPU's is its ``fp32`` peak, CUDA cores)
``vmem_bytes``/``vmem_bw`` a TPU's VMEM capacity and its bandwidth to the MXUs
``vregs_bytes``            a TPU's vector registers, per chip
``smem_bytes``             a GPU's SMEM (L1) per SM; ``registers_bytes``, ``tmem_bytes`` per SM
``l2_bytes``/``l2_bw``     a GPU's L2 cache and its (measured) bandwidth
``host_dram``              DRAM of one host (``Torus.host`` chips), bytes
``nvswitch_bw``            a GPU node's NVSwitch capacity, one way (all switches, all ports)
========================== ==================================================================

>>> from symroof.hardware import chip
>>> v5e = chip("tpu-v5e")
>>> peak_from_units(v5e), v5e.peak()          # 4 MXUs x 1.5 GHz x 32768 FLOPs a cycle
(196608000000000, 197000000000000)
>>> ridge(v5e, "vmem", "int8")                # int8 peak over VMEM's 22 x HBM bandwidth
9850/451
"""

from __future__ import annotations

from typing import Any

import sympy as sp

__all__ = ["ROOFS", "roof", "roofs", "ridge", "peak_from_units", "vector_peak"]

#: the levels a roofline can be drawn against: what feeds the compute, and which compute
ROOFS = {
    "hbm": "the dtype's peak against HBM bandwidth (the default)",
    "vmem": "the dtype's peak against VMEM's bandwidth to the MXUs (TPU)",
    "l2": "the dtype's peak against the L2 cache's bandwidth (GPU, measured)",
    "vpu": "the vector unit's peak (VPU; CUDA cores) against HBM bandwidth",
    "pcie": "the dtype's peak against the host link (PCIe; NVLink-C2C on GB200), one way",
}


def _figure(c: Any, name: str, level: str) -> sp.Expr:
    if name not in c.internals:
        raise ValueError(f"chip {c.name!r} has no {name} on record, so no {level} roof; "
                         f"its roofs: {', '.join(roofs(c))}")
    return c.internals[name]


def roofs(c: Any) -> list[str]:
    """The roofs chip ``c`` has the figures for.

    >>> from symroof.hardware import chip
    >>> roofs(chip("tpu-v5e")), roofs(chip("h100"))
    (['hbm', 'vmem', 'pcie'], ['hbm', 'l2', 'vpu', 'pcie'])
    """
    have = {"hbm": True, "vmem": "vmem_bw" in c.internals, "l2": "l2_bw" in c.internals,
            "vpu": "vector_peak" in c.internals or "fp32" in c.peaks,
            "pcie": getattr(c.network, "pcie_bw", None) is not None}
    return [r for r in ROOFS if have[r]]


def vector_peak(c: Any) -> sp.Expr:
    """Vector FLOP/s of a chip: the VPU's on a TPU, the CUDA cores' (the ``fp32`` peak) on a
    GPU.

    >>> from symroof.hardware import chip
    >>> vector_peak(chip("tpu-v5p")), vector_peak(chip("h100"))
    (7000000000000, 67000000000000)
    """
    if "vector_peak" in c.internals:
        return c.internals["vector_peak"]
    if "fp32" in c.peaks:
        return c.peaks["fp32"]
    return _figure(c, "vector_peak", "vpu")


def roof(c: Any, level: str = "hbm", dtype: str = "bf16") -> tuple[sp.Expr, sp.Expr]:
    """(FLOP/s, bytes/s) of roofline ``level`` (``ROOFS``) on chip ``c`` at ``dtype``.

    >>> from symroof.hardware import chip
    >>> roof(chip("tpu-v6e"), "pcie")
    (910000000000000, 32000000000)
    >>> roof(chip("h100"), "vmem")
    Traceback (most recent call last):
    ...
    ValueError: chip 'h100' has no vmem_bw on record, so no vmem roof; its roofs: hbm, l2, ...
    """
    key = level.strip().lower() if isinstance(level, str) else level
    if key not in ROOFS:
        raise ValueError(f"unknown roof {level!r}; roofs are: {', '.join(ROOFS)}")
    if key == "vpu":
        return vector_peak(c), c.hbm_bw
    compute = c.peak(dtype)
    if key == "hbm":
        return compute, c.hbm_bw
    if key == "pcie":
        pcie = getattr(c.network, "pcie_bw", None)
        if pcie is None:
            raise ValueError(f"chip {c.name!r} has no host link on record, so no pcie roof")
        return compute, pcie
    return compute, _figure(c, f"{key}_bw", key)


def ridge(c: Any, level: str = "hbm", dtype: str = "bf16") -> sp.Expr:
    """Critical intensity (FLOPs per byte) against roof ``level``: its peak over its
    bandwidth. The book: "the TPU v5p VPU ... its critical intensity is around 3".

    >>> from symroof.hardware import chip
    >>> ridge(chip("tpu-v5p"), "vpu")
    5/2
    """
    compute, bandwidth = roof(c, level, dtype)
    return compute / bandwidth


def peak_from_units(c: Any, dtype: str = "bf16") -> sp.Expr:
    """The matmul peak the chip's units give: cores x units per core x clock x FLOPs per unit
    per cycle (the spec sheet's peak is this, up to its rounding, where the sheet allows).

    >>> from symroof.hardware import chip
    >>> peak_from_units(chip("a100"))         # 108 SMs x 4 tensor cores x 1.41 GHz x 512
    311869440000000
    """
    need = ("cores", "units_per_core", "clock", f"unit_flops.{dtype}")
    missing = [k for k in need if k not in c.internals]
    if missing:
        raise ValueError(f"chip {c.name!r} lacks {', '.join(missing)} on record, so its "
                         f"{dtype} peak cannot be built from its units")
    f = c.internals
    return f["cores"] * f["units_per_core"] * f["clock"] * f[f"unit_flops.{dtype}"]
