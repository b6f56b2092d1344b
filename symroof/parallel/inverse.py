"""Inverse questions of memory (book ch. 5, 6 and 8): the largest model an HBM budget holds,
and the chips (fractional, then rounded up to a slice that exists) that a byte count needs.

- ``max_params``: HBM of the chips over the bytes each parameter holds (the book's "HBM per
  device / 10" for bf16 weights and fp32 Adam moments, ch. 5), floored;
- ``min_chips``: bytes / HBM per chip, exactly (a fraction), its ceiling, and the smallest
  slice of :func:`training_slices` with that many chips (``2^ceil(log2(bytes / HBM))`` on
  a TPU, ch. 8, then the whole pod).

Both are exact where the inputs are numbers and symbolic where they are symbols (a
symbolic chip's HBM is ``M``). The batch-side inverse, the chips a batch keeps above a
per-chip threshold, is ``Condition.chips_for`` (:mod:`symroof.parallel.conditions`).

>>> import symroof as sr
>>> sr.max_params("tpu-v5p", {"grad_bytes": 0})        # ch. 5: "roughly 9B parameters"
9600000000
>>> print(sr.min_chips(21.6e12, "tpu-v5p"))             # ch. 6: "21.6e12 / 96e9 = 225 TPUs"
21.6 TB needs 225 tpu-v5p (96 GB each): slice 4x8x8 (256 chips)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sympy as sp

from ..cost import Cost, as_dimension, as_exact
from ..hardware.chip import STORAGE_BYTES, as_chip
from ..hardware.mesh import Mesh
from ..hardware.topology import Switched
from ..models.training_memory import state_bytes
from ..render import fmt_si

__all__ = ["MinSlice", "min_chips", "max_params", "training_slices", "slices"]


def training_slices(chip: Any) -> list[tuple[int, str]]:
    """(chips, shape) of the slices of ``chip``, smallest first: ``sizing.slices`` and,
    for a TPU, its whole pod (16x20x28 on v5p, which is not a power of two).

    >>> training_slices("tpu-v5p")[-2:]
    [(4096, '16x16x16'), (8960, '16x20x28')]
    """
    chip = as_chip(chip)
    out = [(math.prod(int(s) for s in shape.split("x")), shape) for shape in slices(chip)]
    pod = getattr(chip.network, "pod", None)
    if pod and math.prod(pod) > out[-1][0]:
        out.append((math.prod(pod), "x".join(map(str, pod))))
    return out


@dataclass(frozen=True)
class MinSlice:
    """The bytes to hold (by part), the chips they need, and the slice that has them:
    ``fraction`` = bytes / HBM per chip (exact), ``chips`` its ceiling (at least 1),
    ``slice`` and ``slice_chips`` the smallest slice on record with that many (while the
    bytes are symbolic: ``chips`` is a ``ceiling`` and no slice is chosen)."""

    bytes: dict[str, sp.Expr]
    chip: Any
    chips: sp.Expr
    slice: str | None
    slice_chips: int | None

    @property
    def total(self) -> sp.Expr:
        return sum(self.bytes.values())

    @property
    def fraction(self) -> sp.Expr:
        """Chips' worth of HBM the bytes fill, not rounded: bytes / HBM per chip."""
        return self.total / self.chip.hbm_bytes

    def per_chip(self, n_chips: int) -> sp.Expr:
        """Bytes per chip when everything is sharded over ``n_chips``."""
        return self.total / n_chips

    def __str__(self) -> str:
        if not self.chips.is_number:
            return f"{self.total} bytes need {self.chips} {self.chip.name}"
        if self.slice is None:
            return (f"{fmt_si(self.total, 'B')} needs {self.chips} {self.chip.name} "
                    f"({fmt_si(self.chip.hbm_bytes, 'B')} each): no slice on record has them")
        return (f"{fmt_si(self.total, 'B')} needs {self.chips} {self.chip.name} "
                f"({fmt_si(self.chip.hbm_bytes, 'B')} each): slice {self.slice} "
                f"({self.slice_chips} chips)")


def _held(need: Any) -> dict[str, sp.Expr]:
    """The bytes to hold, by part, from a number, a mapping of parts or a Cost."""
    if isinstance(need, Cost):  # a step's resident bytes: weights and KV cache it reads
        return {"weights": need.weight_bytes, "kv": need.kv_bytes}
    if isinstance(need, Mapping):
        parts = {str(k): as_exact(v, f"bytes[{k!r}]") for k, v in need.items()}
    else:
        parts = {"total": as_exact(need, "bytes")}
    bad = [k for k, v in parts.items() if v.is_number and (not v.is_real or v < 0)]
    if bad:
        raise ValueError(f"min_chips(): bytes must be non-negative, got "
                         f"{', '.join(f'{k} = {parts[k]}' for k in bad)}")
    return parts


def min_chips(need: Any, chip: Any) -> MinSlice:
    """The chips of ``chip`` whose HBM holds ``need`` (bytes; a dict of parts; or a Cost,
    whose weight and KV bytes are what it keeps resident): the exact fraction, its ceiling
    and the smallest slice on record with that many (``None`` where no slice has them).

    >>> import symroof as sr
    >>> need = sr.min_chips(400e9, "tpu-v5e")          # 200e9 bf16 parameters
    >>> need.fraction, need.chips, need.slice
    (25, 25, '4x8')
    >>> from symroof.symbols import M
    >>> sr.min_chips(M * 5 / 2, sr.symbolic_chip()).chips
    3
    """
    chip = as_chip(chip)
    parts = _held(need)
    total = sum(parts.values())
    fraction = total / chip.hbm_bytes
    if not fraction.is_number:
        return MinSlice(parts, chip, sp.Max(1, sp.ceiling(fraction)), None, None)
    chips = sp.Integer(max(1, math.ceil(fraction)))
    if chip.network is None:
        return MinSlice(parts, chip, chips, None, None)
    n, shape = next(((n, s) for n, s in training_slices(chip) if n >= chips), (None, None))
    return MinSlice(parts, chip, chips, shape, n)


def max_params(chip_or_mesh: Any, widths: Mapping[str, Any] | str | None = None, *,
               chips: Any = 1) -> sp.Expr:
    """The most parameters the HBM of ``chip_or_mesh`` (a chip, its name, or a Mesh: every
    chip's HBM) holds, floored where it is a number.

    ``widths``: the training state's bytes per parameter, as :func:`train_memory` takes
    them (``param_bytes``, ``grad_bytes``, ``master_bytes``, ``moment_bytes``,
    ``n_moments``; default 12 bytes: bf16 weights and gradients, two fp32 moments), or a
    storage dtype name ("bf16", "int8", "int4", ...) for weights alone. ``chips``: how many
    of the chip (with a chip, not a mesh). Activations are not counted (the book's "absolute
    lower bound with a batch of 1 token").

    >>> import symroof as sr
    >>> sr.max_params(sr.mesh("tpu-v5e", "2x2"), "int8")      # weights only, 4 x 16 GB
    64000000000
    >>> from symroof.symbols import M
    >>> sr.max_params(sr.symbolic_chip(), {"grad_bytes": 0}) == M / 10
    True
    """
    if isinstance(chip_or_mesh, Mesh):
        if chips != 1:
            raise ValueError("max_params(): give a mesh or chips=, not both")
        chip, n = chip_or_mesh.chip, chip_or_mesh.n_chips
    else:
        chip, n = as_chip(chip_or_mesh), as_dimension(chips, "chips")
    if isinstance(widths, str):
        key = widths.strip().lower()
        if key not in STORAGE_BYTES:
            raise ValueError(f"max_params(): unknown weights dtype {widths!r}; known: "
                             f"{', '.join(STORAGE_BYTES)}")
        per = sp.sympify(STORAGE_BYTES[key])
    else:
        known = ("param_bytes", "grad_bytes", "master_bytes", "moment_bytes", "n_moments")
        unknown = sorted(set(widths or {}) - set(known))
        if unknown:
            raise ValueError(f"max_params(): unknown width(s) {', '.join(unknown)}; known: "
                             f"{', '.join(known)}")
        per = sum(state_bytes(**dict(widths or {})).values())
    if per == 0:
        raise ValueError("max_params(): the widths give 0 bytes per parameter")
    most = n * chip.hbm_bytes / per
    return sp.Integer(math.floor(most)) if most.is_number else most


def slices(chip: Any) -> list[str]:
    """The slice sizes of ``chip``, smallest first: on a TPU the squarest power-of-two shape
    of each size inside the pod that the generation sells; on GPUs 1, 2, 4 GPUs, then whole
    nodes doubling up to the largest system.

    >>> slices("tpu-v5e")
    ['1x1', '2x2', '2x4', '4x4', '4x8', '8x8', '8x16', '16x16']
    """
    chip = as_chip(chip)
    net = chip.network
    if isinstance(net, Switched):
        counts = [n for n in (1, 2, 4) if n < net.node_size]
        n = net.node_size
        while n <= net.max_gpus:
            counts.append(n)
            n *= 2
        return [str(n) for n in counts]
    if net is None:
        raise ValueError(f"{chip.name} has no network record: give the slice yourself")
    # the squarest power-of-two shape of each size that fits the pod (the book sizes slices
    # as 2^ceil(log2(bytes / HBM)) chips: v5e 1x1, 2x2, 2x4, 4x4, ..., 16x16; no 1x2 is sold)
    out, shape = [], [1] * net.rank
    while True:
        if net.offers(shape):  # only the slices the generation sells (sr.mesh refuses others)
            out.append("x".join(map(str, sorted(shape))))
        grow = [i for i in sorted(range(net.rank), key=lambda i: shape[i])
                if 2 * shape[i] <= sorted(net.pod)[sorted(range(net.rank),
                                                          key=lambda j: shape[j]).index(i)]]
        if not grow:
            return out
        shape[grow[0]] *= 2
