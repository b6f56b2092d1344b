"""Meshes: a chip repeated over named axes, with the interconnect each axis rides on.

``mesh(chip, {"X": 4, "Y": 4, "Z": 4})`` (or ``mesh(chip, "4x4x4")``, axes named X, Y, Z,
... in order) is a slice of ``chip``. Devices are numbered row-major: the **last axis varies
fastest**, so on a GPU system it is the one packed inside an NVLink node.

- TPU (``chip.network`` a ``Torus``): each axis is one physical torus axis, with 2 ICI links
  per chip (one to each neighbour), each ``chip.link_bw`` one way. Whether it wraps around
  follows the generation's rule (``Torus.wraps``) unless ``wrap=`` says otherwise. Axes
  named in ``dcn=`` join slices over the data-center network instead (``dcn_bw`` per chip).
- GPU (``chip.network`` a ``Switched``): an axis is placed on the switch levels its devices
  span: NVSwitch inside a node, then leaf and spine (see ``Axis.levels``).
- A chip without a network record (``symbolic_chip()``, a user's chip) gets a torus whose
  axes wrap by default, with ``chip.link_bw`` per link and ``hop_latency`` as given (0 if
  not), so collective times stay formulas in its symbols.

>>> import symroof as sr
>>> m = sr.mesh("tpu-v5p", "16x20x28")
>>> m.n_chips, m["X"].wrap, m["X"].bw
(8960, True, 180000000000)
>>> sr.mesh("tpu-v5e", "8x16").wraps
{'X': False, 'Y': True}
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sympy as sp

from ..conventions import current
from .chip import Chip, as_chip
from .topology import Switched, Torus, exact_figure

__all__ = ["Mesh", "Axis", "LevelUse", "mesh", "ring_fraction"]


def ring_fraction(n: Any) -> Any:
    """The share of a gathered array a ring of n members passes through each one, in the
    conventions in force: (n - 1)/n (``ring_factor="exact"``), or 1 (the book's form).

    >>> from symroof.conventions import using
    >>> with using("book"):
    ...     book = ring_fraction(8)
    >>> ring_fraction(8), book
    (7/8, 1)
    """
    n = sp.sympify(n)
    return (n - 1) / n if current().ring_factor == "exact" else sp.Integer(1)

_KINDS = ("ici", "nvlink", "scale-out", "dcn")


@dataclass(frozen=True)
class LevelUse:
    """How a group of devices along some axes uses one switch level of a GPU system:
    ``degree`` children of a switch hold members, ``members`` members per child share that
    child's links, each GPU with ``bw_per_gpu`` one way into the level."""

    name: str
    degree: int
    members: int
    bw_per_gpu: sp.Expr
    sharp: bool = False

    @property
    def bw(self) -> sp.Expr:
        """The group's bandwidth out of one child into this level, one way."""
        return self.members * self.bw_per_gpu


@dataclass(frozen=True)
class Axis:
    """One mesh axis: its ``size``, the network ``kind`` it rides on ("ici", "nvlink",
    "scale-out" or "dcn"), whether it ``wrap``s around (a ring, not a line), the one-way
    bandwidth of one link ``link_bw`` and the per-hop latency floor ``hop_latency``.
    ``bw`` is the bandwidth an AllGather along this axis alone gets (its ring time is
    ``V / bw``): the book's bidirectional W_ici on a wrapped torus axis."""

    name: str
    size: Any
    kind: str
    wrap: bool
    link_bw: sp.Expr
    hop_latency: sp.Expr

    @property
    def bw(self) -> sp.Expr:
        """AllGather bandwidth along this axis: ``2 link_bw`` on a ring (both directions),
        ``link_bw X/(X-1)`` on a line (an end chip takes X-1 of X shards through one link).
        For a GPU axis see ``Mesh.levels``."""
        if self.kind in ("nvlink", "scale-out"):
            raise ValueError(f"axis {self.name!r} is on a switched GPU network: its bandwidth "
                             "depends on the levels it spans; use mesh.levels(axes)")
        if self.size == 1:
            return sp.oo
        if self.kind == "dcn" or not self.wrap:
            return self.link_bw / ring_fraction(self.size)
        return 2 * self.link_bw

    @property
    def hops(self) -> sp.Expr:
        """Hops from a chip to the farthest one along the axis: X/2 on a ring, X-1 on a line
        (the book's latency term; a DCN ring of slices counts X-1 steps)."""
        if self.wrap and self.kind == "ici":
            return sp.Integer(self.size) / 2 if isinstance(self.size, int) else self.size / 2
        return self.size - 1


@dataclass(frozen=True)
class Mesh:
    """A slice: ``chip`` over named ``axes`` (an ordered tuple of ``Axis``).

    Aggregates (``peak``, ``hbm_bytes``, ``hbm_bw``) are over all chips; everything else
    symroof derives on a mesh is per chip unless it says otherwise.
    """

    chip: Chip
    axes: tuple[Axis, ...]
    custom: bool = False

    @property
    def title(self) -> str:
        """The mesh in a title: chip and shape, and ``custom`` where it is a hypothetical
        (a shape the chip's topology does not offer, or wraparound set by hand).

        >>> import symroof as sr
        >>> sr.mesh("tpu-v5e", "4x4").title, sr.mesh("tpu-v5e", "3x5", custom=True).title
        ('tpu-v5e 4x4', 'tpu-v5e 3x5 (custom)')
        """
        shape = "x".join(str(a.size) for a in self.axes)
        return f"{self.chip.name} {shape}" + (" (custom)" if self.custom else "")

    def __str__(self) -> str:
        return self.title

    def __getitem__(self, name: str) -> Axis:
        for axis in self.axes:
            if axis.name == name:
                return axis
        raise ValueError(f"mesh axis {name!r} is not in this mesh; its axes are "
                         f"{', '.join(a.name for a in self.axes)}")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.axes)

    @property
    def shape(self) -> dict[str, Any]:
        return {a.name: a.size for a in self.axes}

    @property
    def wraps(self) -> dict[str, bool]:
        return {a.name: a.wrap for a in self.axes}

    @property
    def n_chips(self) -> Any:
        return sp.Mul(*(a.size for a in self.axes)) if self.symbolic else math.prod(
            a.size for a in self.axes)

    @property
    def hosts(self) -> Any:
        """Hosts the mesh's chips hang off: chips / chips per host (a TPU's ``Torus.host``;
        the book's 'hosts = chips / host size'). A slice below one host has one.

        >>> import symroof as sr
        >>> sr.mesh("tpu-v5e", "16x16").hosts, sr.mesh("tpu-v5p", "16x20x28").hosts
        (32, 2240)
        """
        net = self.chip.network
        if not isinstance(net, Torus):
            raise ValueError(f"mesh.hosts is for TPU slices; {self.chip.name} has no torus "
                             "record with a host size")
        return max(1, self.n_chips // math.prod(net.host))

    @property
    def symbolic(self) -> bool:
        return any(not isinstance(a.size, int) for a in self.axes)

    def peak(self, dtype: str = "bf16") -> sp.Expr:
        """Aggregate peak FLOP/s of the whole mesh."""
        return self.n_chips * self.chip.peak(dtype)

    @property
    def hbm_bytes(self) -> sp.Expr:
        """Aggregate HBM capacity, bytes."""
        return self.n_chips * self.chip.hbm_bytes

    @property
    def hbm_bw(self) -> sp.Expr:
        """Aggregate HBM bandwidth, bytes/s."""
        return self.n_chips * self.chip.hbm_bw

    def size(self, axes: Any) -> Any:
        """The number of devices in one group along ``axes`` (the product of their sizes)."""
        return sp.Mul(*(self[a].size for a in self.axis_names(axes))) if self.symbolic \
            else math.prod(self[a].size for a in self.axis_names(axes))

    def axis_names(self, axes: Any) -> tuple[str, ...]:
        """``axes`` as a tuple of this mesh's axis names: "X", ("X", "Y") or "XY" (one
        letter per axis when every axis name is one letter). Unknown or repeated names
        fail naming them."""
        if isinstance(axes, str):
            if axes in self.names:
                names = (axes,)
            elif all(len(n) == 1 for n in self.names) and axes.isalpha():
                names = tuple(axes)
            else:
                names = (axes,)
        elif isinstance(axes, Sequence):
            names = tuple(axes)
        else:
            raise TypeError(f"axes must be a name or a sequence of names, got {axes!r}")
        if not names:
            raise ValueError("a collective needs at least one mesh axis")
        for name in names:
            self[name]  # noqa: B018  (raises naming the unknown axis)
        if len(set(names)) != len(names):
            raise ValueError(f"mesh axes {', '.join(names)} name an axis twice")
        return names

    def levels(self, axes: Any) -> tuple[LevelUse, ...]:
        """The switch levels a group along ``axes`` of a GPU mesh engages (degree > 1),
        found by placing the group that holds device 0 on the system's levels."""
        net = self.chip.network
        if not isinstance(net, Switched):
            raise ValueError(f"mesh.levels() is for GPU systems; {self.chip.name} has no "
                             "switched network record")
        names = self.axis_names(axes)
        members = _group_of_device_0(self, names)
        out = []
        for i, level in enumerate(net.levels):
            child = [m // level.gpus_per_child for m in members]
            parent = [m // level.gpus for m in members]
            per_parent = len(set(zip(parent, child))) // len(set(parent))
            per_child = len(members) // len(set(zip(parent, child)))
            if per_parent > 1:
                out.append(LevelUse(level.name, per_parent, per_child, level.bw_per_gpu,
                                    net.sharp_at(i)))
        return tuple(out)

    def __repr__(self) -> str:
        axes = ", ".join(f"{a.name}={a.size}{'' if a.wrap else ' (no wrap)'} {a.kind}"
                         for a in self.axes)
        return f"Mesh({self.chip.name}: {axes}{', custom' if self.custom else ''})"


def _group_of_device_0(m: Mesh, names: tuple[str, ...]) -> list[int]:
    """Device ids (row-major, last axis fastest) of the group along ``names`` holding 0."""
    strides = {}
    stride = 1
    for axis in reversed(m.axes):
        strides[axis.name] = stride
        stride *= axis.size
    ids = [0]
    for name in names:
        ids = [i + k * strides[name] for i in ids for k in range(m[name].size)]
    return sorted(ids)


def _parse_shape(shape: Any) -> dict[str, Any]:
    """``"4x4x4"`` or ``{"X": 4, ...}`` -> ordered ``{name: size}`` (sizes validated)."""
    if isinstance(shape, str):
        text = shape.strip().lower()
        if not re.fullmatch(r"\d+(x\d+)*", text):
            raise ValueError(f"mesh shape {shape!r} does not parse: write sizes joined by "
                             "'x' ('4x4x4') or a dict {'X': 4, ...}")
        sizes = [int(n) for n in text.split("x")]
        letters = "XYZWUV"
        if len(sizes) > len(letters):
            raise ValueError(f"mesh shape {shape!r} has more than {len(letters)} axes")
        shape = dict(zip(letters, sizes))
    if not isinstance(shape, Mapping) or not shape:
        raise ValueError(f"mesh axes must be a non-empty dict {{name: size}} or a string "
                         f"such as '4x4', got {shape!r}")
    out = {}
    for name, size in shape.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"mesh axis names must be identifiers, got {name!r}")
        if isinstance(size, sp.Expr) and size.is_positive and size.is_integer:
            out[name] = size
        elif isinstance(size, int) and not isinstance(size, bool) and size >= 1:
            out[name] = size
        else:
            raise ValueError(f"mesh axis {name!r} must have a positive integer size, "
                             f"got {size!r}")
    return out


def mesh(chip: Chip | str, axes: Mapping[str, Any] | str, *,
         wrap: bool | Mapping[str, bool] | None = None, dcn: Sequence[str] = (),
         hop_latency: Any = None, custom: bool = False) -> Mesh:
    """A mesh of ``chip`` with named ``axes``; see the module docstring.

    The shape must be a machine that exists: on a TPU a slice shape its generation offers
    (``Torus.offers``), inside one pod (axes in ``dcn=`` join slices); on a GPU system part
    of one node or whole nodes, each axis tiling them. Anything else is refused naming the
    nearest shapes that can be had, unless ``custom=True`` (a hypothetical on purpose; every
    title then says "custom"). ``wrap`` overrides the wraparound rule (one bool for every
    ICI axis, or per axis), which makes the mesh custom too; ``dcn`` names the axes that
    join slices over the data-center network; ``hop_latency`` overrides the per-hop floor
    (seconds, a symbol, or 0 to leave latency out as the book's chapter 1 does).

    >>> import symroof as sr
    >>> sr.mesh("h100", {"N": 16, "G": 8})["G"].kind
    'nvlink'
    >>> sr.mesh("tpu-v5e", "3x5")
    Traceback (most recent call last):
    ...
    ValueError: tpu-v5e offers no 3x5 slice; the nearest it offers: 4x4, 2x4, 4x8 ...
    >>> sr.mesh("h100", {"X": 9})
    Traceback (most recent call last):
    ...
    ValueError: a mesh of 9 h100 GPUs is not whole 8-GPU nodes ...
    >>> print(sr.mesh("tpu-v5e", "4x4", wrap=True))
    tpu-v5e 4x4 (custom)
    """
    if not isinstance(custom, bool):
        raise ValueError(f"custom must be True or False, got {custom!r}")
    chip = as_chip(chip)
    shape = _parse_shape(axes)
    dcn = (dcn,) if isinstance(dcn, str) else tuple(dcn)
    for name in dcn:
        if name not in shape:
            raise ValueError(f"dcn axis {name!r} is not in the mesh; its axes are "
                             f"{', '.join(shape)}")
    if isinstance(wrap, Mapping):
        for name in wrap:
            if name not in shape:
                raise ValueError(f"wrap names axis {name!r}, which is not in the mesh")
    net = chip.network
    if hop_latency is None or (isinstance(hop_latency, (int, sp.Integer)) and hop_latency == 0):
        latency = None if hop_latency is None else sp.Integer(0)  # 0: no latency floor
    else:
        latency = exact_figure(hop_latency, "hop_latency")
    custom = custom or wrap is not None
    if isinstance(net, Switched):
        if not custom:
            _check_nodes(chip, net, shape)
        return Mesh(chip, _gpu_axes(chip, net, shape, dcn, latency), custom)
    if isinstance(net, Torus) and not custom:
        _check_slice(chip, net, shape, dcn)
    return Mesh(chip, _torus_axes(chip, net, shape, dcn, wrap, latency), custom)


#: the end of a refusal in Python (the CLI, which has no custom=, leaves it out)
CUSTOM_HINT = "(or custom=True for a hypothetical on purpose)"


def _check_slice(chip: Chip, net: Torus, shape: dict, dcn: tuple) -> None:
    """Refuse an ICI slice the generation does not sell, naming the nearest it does."""
    sizes = tuple(n for name, n in shape.items() if name not in dcn)
    if not all(isinstance(n, int) for n in sizes) or len(sizes) > net.rank:
        return  # _torus_axes says what is wrong with these
    if not net.fits(sizes) or net.offers(sizes):
        return
    text = "x".join(map(str, sizes))
    near = ", ".join("x".join(map(str, sh)) for sh in net.nearest(sizes))
    raise ValueError(f"{chip.name} offers no {text} slice; the nearest it offers: {near} "
                     f"{CUSTOM_HINT}")


def _check_nodes(chip: Chip, net: Switched, shape: dict) -> None:
    """Refuse a GPU mesh that is not part of one node or whole nodes with axes tiling them."""
    sizes = list(shape.values())
    if not all(isinstance(n, int) for n in sizes):
        return
    node, total = net.node_size, math.prod(sizes)
    if total <= node:
        return  # part of one node: any count of its GPUs can be had
    if total % node:
        lower, upper = total // node * node, (total // node + 1) * node
        near = " or ".join(str(n) for n in (lower, upper) if n)
        raise ValueError(f"a mesh of {total} {chip.name} GPUs is not whole {node}-GPU nodes "
                         f"(an NVLink node has {node}); the nearest that are: {near} GPUs "
                         f"{CUSTOM_HINT}")
    inner = 1
    for name, size in reversed(shape.items()):
        inner *= size
        if inner > node and inner % node == 0 or node % inner == 0:
            continue
        below = inner // size
        ok = [n for n in range(1, 2 * size + node)
              if node % (n * below) == 0 or (n * below) % node == 0]
        choices = ", ".join(str(n) for n in sorted(ok, key=lambda n: abs(n - size))[:3])
        raise ValueError(f"{chip.name} mesh axis {name} = {size} does not tile {node}-GPU "
                         f"nodes: the axes from {name} inward hold {inner} GPUs, which neither "
                         f"divide a node nor fill whole nodes; sizes of {name} that do: "
                         f"{choices} {CUSTOM_HINT}")


def _torus_axes(chip: Chip, net: Torus | None, shape: dict, dcn: tuple, wrap: Any,
                latency: Any) -> tuple[Axis, ...]:
    ici = {n: s for n, s in shape.items() if n not in dcn}
    sizes = tuple(ici.values())
    if net is not None:
        if any(not isinstance(s, int) for s in shape.values()):
            raise ValueError(f"a {chip.name} mesh needs integer axis sizes; for formulas use "
                             "sr.symbolic_chip()")
        text = "x".join(map(str, sizes))
        if len(sizes) > net.rank:
            raise ValueError(f"{chip.name} is a {net.rank}-D torus: a slice has at most "
                             f"{net.rank} ICI axes, got {text}; put the others in dcn=(...)")
        if not net.fits(sizes):
            pod = "x".join(map(str, net.pod))
            raise ValueError(f"a {text} slice does not fit one {chip.name} pod ({pod}); put "
                             "the extra axes across pods with dcn=(...)")
        rule = dict(zip(ici, net.wraps(sizes)))
        lat = net.hop_latency if latency is None else latency
    else:
        rule = {n: True for n in ici}
        lat = sp.Integer(0) if latency is None else latency
    if isinstance(wrap, bool):
        rule = {n: wrap for n in ici}
    elif isinstance(wrap, Mapping):
        rule.update({n: bool(w) for n, w in wrap.items() if n in ici})
    out = []
    for name, size in shape.items():
        if name in dcn:
            bw = net.dcn_bw if net is not None else chip.link_bw
            out.append(Axis(name, size, "dcn", False, bw, sp.Integer(0)))
        else:
            out.append(Axis(name, size, "ici", rule[name] and size != 1, chip.link_bw, lat))
    return tuple(out)


def _gpu_axes(chip: Chip, net: Switched, shape: dict, dcn: tuple,
              latency: Any) -> tuple[Axis, ...]:
    if dcn:
        raise ValueError(f"dcn= is for TPU slices; a {chip.name} system crosses nodes through "
                         "its scale-out levels on its own")
    if any(not isinstance(s, int) for s in shape.values()):
        raise ValueError(f"a {chip.name} mesh needs integer axis sizes")
    total = math.prod(shape.values())
    if total > net.max_gpus:
        raise ValueError(f"a mesh of {total} GPUs is larger than the largest {chip.name} "
                         f"system on record ({net.max_gpus} GPUs: "
                         f"{' x '.join(str(lv.degree) for lv in net.levels)})")
    out, inner = [], 1
    for name, size in reversed(shape.items()):
        kind = "nvlink" if inner * size <= net.node_size else "scale-out"
        lat = latency if latency is not None else \
            net.hop_latency if kind == "nvlink" else net.net_latency
        out.append(Axis(name, size, kind, True, chip.link_bw * net.nvlink_ports, lat))
        inner *= size
    return tuple(reversed(out))
