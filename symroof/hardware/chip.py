"""Hardware records: one frozen ``Chip`` per accelerator, every figure exact and sourced.

Units are SI: peaks in FLOP/s per dtype (OP/s for int8), dense, not sparse; HBM bandwidth in
bytes/s; HBM capacity in bytes; ``link_bw`` in bytes/s over one link in one direction (one ICI
link on a TPU, one NVLink link on a GPU). Figures are SymPy Integers or Rationals (a float such
as ``8.1e11`` is read through its decimal text, so it becomes exactly 810000000000) or positive
SymPy expressions, so a chip can be symbolic and thresholds come out as ``C/W``.

The presets live in :mod:`symroof.hardware.chips` with the source of each figure beside it.

>>> chip("tpu-v5e").critical_intensity()
9850/41
>>> symbolic_chip().critical_intensity()
C/W
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import sympy as sp

from ..symbols import C as _C
from ..symbols import M as _M
from ..symbols import W as _W
from ..symbols import W_net as _W_net
from ..symbols import quantity
from .chips import RECORDS as _RECORDS
from .topology import Level, Switched, Torus
from .topology import exact_figure as _exact

__all__ = ["Chip", "chip", "as_chip", "symbolic_chip", "CHIPS", "DTYPE_BYTES",
           "STORAGE_BYTES"]

#: Bytes per element of each dtype name used for peaks (the default operand width of a
#: computation "in" that dtype).
DTYPE_BYTES: dict[str, int] = {"fp64": 8, "fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2,
                               "fp8": 1, "int8": 1}

#: Bytes per element of the dtypes weights and KV caches are *stored* in: the compute
#: dtypes' widths, and the 4-bit formats at half a byte (no peak is quoted "in" them here).
STORAGE_BYTES: dict[str, sp.Expr] = {
    **{k: sp.Integer(DTYPE_BYTES[k]) for k in ("fp32", "bf16", "fp16", "fp8", "int8")},
    "int4": sp.Rational(1, 2), "fp4": sp.Rational(1, 2)}

_FIGURES = ("hbm_bw", "hbm_bytes", "link_bw")
_UNSOURCED = "user assumption"


@dataclass(frozen=True, repr=False)
class Chip:
    """One accelerator: dense peak per dtype, HBM bandwidth and capacity, link bandwidth.

    ``sources`` maps a figure (``"peaks.bf16"``, ``"hbm_bw"``, ``"hbm_bytes"``,
    ``"link_bw"``) to where it comes from; a figure given without one gets
    ``"user assumption"``. Floats are converted exactly, and every figure must be positive.

    >>> toy = Chip("toy", peaks={"bf16": 1e15}, hbm_bw=2.5e12, hbm_bytes=64e9, link_bw=1e11)
    >>> toy.peak(), toy.critical_intensity()
    (1000000000000000, 400)
    >>> toy.sources["hbm_bw"]
    'user assumption'
    >>> Chip("bad", peaks={"bf16": 1e15}, hbm_bw=0, hbm_bytes=64e9, link_bw=1e11)
    Traceback (most recent call last):
    ...
    ValueError: Chip 'bad': hbm_bw must be positive, got 0
    """

    name: str
    peaks: Mapping[str, int | sp.Expr]
    hbm_bw: int | sp.Expr
    hbm_bytes: int | sp.Expr
    link_bw: int | sp.Expr
    sources: Mapping[str, str] = field(default_factory=dict)
    network: Torus | Switched | None = None
    internals: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"Chip name must be a non-empty string, got {self.name!r}")
        tag = f"Chip {self.name!r}"
        if not isinstance(self.peaks, Mapping) or not self.peaks:
            raise ValueError(f"{tag}: peaks must be a non-empty mapping dtype -> FLOP/s, "
                             f"got {self.peaks!r}")
        peaks = {}
        for dtype, value in self.peaks.items():
            if not isinstance(dtype, str) or not dtype.strip():
                raise ValueError(f"{tag}: peak dtypes must be non-empty strings, got {dtype!r}")
            peaks[dtype.strip().lower()] = _exact(value, f"{tag}: peaks[{dtype!r}]")
        object.__setattr__(self, "peaks", MappingProxyType(peaks))
        for name in _FIGURES:
            object.__setattr__(self, name, _exact(getattr(self, name), f"{tag}: {name}"))
        if self.network is not None and not isinstance(self.network, (Torus, Switched)):
            raise ValueError(f"{tag}: network must be a Torus, a Switched or None, "
                             f"got {self.network!r}")
        if not isinstance(self.internals, Mapping):
            raise ValueError(f"{tag}: internals must be a mapping, got {self.internals!r}")
        inside = {str(k): _exact(v, f"{tag}: internals[{k!r}]")
                  for k, v in self.internals.items()}
        object.__setattr__(self, "internals", MappingProxyType(inside))
        keys = [f"peaks.{dtype}" for dtype in peaks] + list(_FIGURES) + _network_keys(self)
        keys += [f"internals.{k}" for k in inside]
        if not isinstance(self.sources, Mapping):
            raise ValueError(f"{tag}: sources must be a mapping, got {self.sources!r}")
        stray = sorted(set(self.sources) - set(keys))
        if stray:
            raise ValueError(f"{tag}: sources name no figure: {', '.join(stray)}; figures "
                             f"are {', '.join(keys)}")
        sources = {key: str(self.sources.get(key, _UNSOURCED)) for key in keys}
        object.__setattr__(self, "sources", MappingProxyType(sources))

    def __hash__(self) -> int:
        figures = tuple(sorted(self.peaks.items())), self.hbm_bw, self.hbm_bytes, self.link_bw
        return hash((self.name, figures, self.network))

    def __repr__(self) -> str:
        peaks = ", ".join(f"{dtype!r}: {value}" for dtype, value in self.peaks.items())
        return (f"Chip(name={self.name!r}, peaks={{{peaks}}}, hbm_bw={self.hbm_bw}, "
                f"hbm_bytes={self.hbm_bytes}, link_bw={self.link_bw})")

    def peak(self, dtype: str = "bf16") -> sp.Expr:
        """Dense peak FLOP/s (OP/s for int8) for ``dtype``, exact.

        >>> chip("h100").peak("fp8")
        1979000000000000
        >>> chip("tpu-v5e").peak("fp8")
        Traceback (most recent call last):
        ...
        ValueError: chip 'tpu-v5e' has no peak for dtype 'fp8'; known dtypes: bf16, int8
        """
        key = dtype.strip().lower() if isinstance(dtype, str) else dtype
        if key not in self.peaks:
            known = ", ".join(self.peaks)
            raise ValueError(f"chip {self.name!r} has no peak for dtype {dtype!r}; "
                             f"known dtypes: {known}")
        return self.peaks[key]

    def critical_intensity(self, dtype: str = "bf16") -> sp.Expr:
        """Peak over HBM bandwidth, FLOP/byte: above it a kernel is compute-bound.

        >>> ratio = chip("tpu-v5e").critical_intensity()
        >>> ratio, round(float(ratio), 2)
        (9850/41, 240.24)
        >>> round(float(chip("h100").critical_intensity()), 1)
        295.2
        """
        return self.peak(dtype) / self.hbm_bw

    def replace(self, note: str | None = None, **changes) -> Chip:
        """A copy with some figures changed; ``note`` becomes their source.

        ``peaks`` merges into the existing peaks. Floats are converted exactly.

        >>> v5e = chip("tpu-v5e").replace(hbm_bw=8.1e11, note="book's problem 1")
        >>> v5e.hbm_bw, v5e.sources["hbm_bw"], v5e.critical_intensity("int8")
        (810000000000, "book's problem 1", 39400/81)
        >>> chip("h100").replace(peaks={"bf16": 1979e12 / 2}).peaks["fp8"]
        1979000000000000
        """
        allowed = ("name", "peaks", "pcie_bw") + _FIGURES
        unknown = sorted(set(changes) - set(allowed))
        if unknown:
            raise ValueError(f"replace() got unknown field(s) {', '.join(unknown)}; fields "
                             f"are {', '.join(allowed)}")
        source = _UNSOURCED if note is None else note
        sources = dict(self.sources)
        peaks = dict(self.peaks)
        new_peaks = changes.pop("peaks", {})
        if not isinstance(new_peaks, Mapping):
            raise ValueError(f"replace(peaks=...) must be a mapping, got {new_peaks!r}")
        for dtype, value in new_peaks.items():
            key = dtype.strip().lower() if isinstance(dtype, str) else dtype
            peaks[key] = value
            sources[f"peaks.{key}"] = source
        figures = {name: getattr(self, name) for name in _FIGURES}
        for name in _FIGURES:
            if name in changes:
                figures[name] = changes[name]
                sources[name] = source
        network = self.network
        if "pcie_bw" in changes:  # the host link lives on the network record
            if network is None:
                raise ValueError(f"replace(pcie_bw=...): chip {self.name!r} has no network "
                                 "record to carry a host link")
            network = dataclasses.replace(network, pcie_bw=changes["pcie_bw"])
            sources["network.pcie_bw"] = source
        out = Chip(changes.get("name", self.name), peaks, sources=sources,
                   network=network, internals=self.internals, **figures)
        if "link_bw" in changes and isinstance(network, Switched):
            # a GPU's collectives read its node level (W_GPU, every NVLink port): it scales
            # with the one link, or a new link_bw would change p2p sends and not them
            node = network.levels[0]
            node = dataclasses.replace(node, bw_per_gpu=node.bw_per_gpu * out.link_bw
                                       / self.link_bw)
            sources["network.levels"] += f"; node level scaled with link_bw ({source})"
            out = dataclasses.replace(out, sources=sources, network=dataclasses.replace(
                network, levels=(node,) + network.levels[1:]))
        return out


def _network_keys(c: Chip) -> list[str]:
    """The figures of ``c.network`` that need a source (``network.<field>``)."""
    if isinstance(c.network, Torus):
        return [f"network.{k}" for k in _TORUS]
    if isinstance(c.network, Switched):
        return [f"network.{k}" for k in _SWITCHED]
    return []


_TORUS = ("rank", "pod", "host", "wrap_rule", "hop_latency", "pcie_bw", "dcn_bw", "slices")
_SWITCHED = ("nvlink_ports", "levels", "sharp", "hop_latency", "net_latency", "tree_latency",
             "net_overhead", "ring_base_latency", "tree_base_latency", "pcie_bw")


def _network(spec: dict | None, sources: dict, link_bw: Any) -> Torus | Switched | None:
    """A record's ``network`` entry, ``{"torus" | "switched": {field: (value, source)}}``; a
    GPU's node level is ``(name, degree, 1)``, its W_GPU every NVLink port at ``link_bw``."""
    if spec is None:
        return None
    (kind, entries), = spec.items()
    values = {key: value for key, (value, _) in entries.items()}
    sources.update({f"network.{key}": src for key, (_, src) in entries.items()})
    if kind == "torus":
        return Torus(**values)
    node, *above = values["levels"]
    values["levels"] = (Level(*node, values["nvlink_ports"] * link_bw),
                        *(Level(*lv) for lv in above))
    return Switched(**values)


def _from_record(record: dict) -> Chip:
    peaks = {dtype: value for dtype, (value, _) in record["peaks"].items()}
    sources = {f"peaks.{dtype}": src for dtype, (_, src) in record["peaks"].items()}
    figures = {name: record[name][0] for name in _FIGURES}
    sources.update({name: record[name][1] for name in _FIGURES})
    network = _network(record.get("network"), sources, figures["link_bw"])
    internals = {key: value for key, (value, _) in record.get("internals", {}).items()}
    sources.update({f"internals.{key}": src
                    for key, (_, src) in record.get("internals", {}).items()})
    return Chip(record["name"], peaks, sources=sources, network=network,
                internals=internals, **figures)


#: The presets, by lower-case name. Sources: see each record's ``sources``.
CHIPS: dict[str, Chip] = {record["name"]: _from_record(record) for record in _RECORDS}


def chip(name: str | os.PathLike | Chip) -> Chip:
    """The preset called ``name`` (case-insensitive; ``_`` may stand for ``-``), or the JSON
    chip record at a path ending in ``.json`` (:mod:`symroof.hardware.chip_file`, the file
    the CLI's ``--chip`` reads); a ``Chip`` passes through as it is.

    >>> chip("TPU_v5e").peak("int8")
    394000000000000
    >>> chip("docs/example-chip.json").name
    'example-chip'
    >>> chip(chip("h100")) is chip("h100")
    True
    >>> chip("tpu-v9")
    Traceback (most recent call last):
    ...
    ValueError: unknown chip 'tpu-v9'; known chips: h100, h200, h800, a100, v100, b200, ...
    """
    if isinstance(name, Chip):
        return name
    key = name.strip().lower().replace("_", "-") if isinstance(name, str) else name
    if isinstance(key, str) and key in CHIPS:  # a preset's name, whatever files are about
        return CHIPS[key]
    if isinstance(name, (str, os.PathLike)) and (str(name).endswith(".json")
                                                 or os.path.isfile(name)):
        from .chip_file import read_chip_file

        return read_chip_file(name, Chip, chip)
    if not isinstance(key, str) or key not in CHIPS:
        raise ValueError(f"unknown chip {name!r}; known chips: {', '.join(CHIPS)}")
    return CHIPS[key]


def as_chip(value: Chip | str) -> Chip:
    """A Chip, or the preset named by a string; anything else fails naming what was given.

    >>> as_chip("h100") is chip("h100")
    True
    """
    if isinstance(value, Chip):
        return value
    if isinstance(getattr(value, "chip", None), Chip):  # a Mesh: per-chip figures
        return value.chip
    if isinstance(value, str):
        return chip(value)
    raise TypeError(f"expected a Chip or a chip name such as 'h100', got {value!r}")


def dtype_bytes(dtype: str) -> int:
    """Bytes per element of ``dtype`` (``DTYPE_BYTES``); unknown names fail listing known ones.

    >>> dtype_bytes("int8"), dtype_bytes("BF16")
    (1, 2)
    """
    key = dtype.strip().lower() if isinstance(dtype, str) else dtype
    if key not in DTYPE_BYTES:
        raise ValueError(f"unknown dtype {dtype!r}; known dtypes: {', '.join(DTYPE_BYTES)}")
    return DTYPE_BYTES[key]


def symbolic_chip(name: str = "symbolic", C: Any = _C, W: Any = _W,
                  W_net: Any = _W_net) -> Chip:
    """A chip whose figures are positive symbols: peak ``C`` (and ``C_int8``), HBM bandwidth
    ``W``, link bandwidth ``W_net``, capacity ``M``, the symbols of
    :mod:`symroof.symbols`; so thresholds come out as ``C/W``.

    Each of ``C``, ``W``, ``W_net`` may be a name or a positive SymPy expression.

    >>> from symroof.symbols import C, W
    >>> gpu = symbolic_chip()
    >>> gpu.critical_intensity() == C / W, gpu.peak() / gpu.link_bw, gpu.peak("int8")
    (True, C/W_net, C_int8)
    """

    def sym(value):
        return quantity(value) if isinstance(value, str) else value

    peaks = {"bf16": sym(C)}
    if isinstance(peaks["bf16"], sp.Symbol):
        peaks["int8"] = quantity(f"{peaks['bf16'].name}_int8")
    sources = {f"peaks.{dtype}": "symbolic" for dtype in peaks}
    sources.update({key: "symbolic" for key in _FIGURES})
    return Chip(name, peaks, sym(W), _M, sym(W_net), sources)
