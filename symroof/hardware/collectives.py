"""Collectives on a mesh as symbolic costs: AllGather, ReduceScatter, AllReduce, AllToAll.

Each takes ``(mesh, V, axes)``: ``V`` is the bytes of the array **one group** holds after an
AllGather (before a ReduceScatter or AllReduce; the group's whole array for an AllToAll),
and ``axes`` the mesh axes the group spans ("X", ("X", "Y") or "XY"). If the array is also
sharded over other axes, only that share counts (book ch. 3: AllGather_X of bf16
``[B_X, D_Y]`` has V = 2BD/Y). The result is a :class:`Collective`: a ``Cost`` whose
``net_bytes`` are the bytes each chip sends and whose ``net_time`` is its time on the mesh,
so ``sr.time(compute + collective, mesh)`` combines them.

Times (book ch. 3 and ch. 12; W_1 = one link one way, X = the axis size):

- TPU ring with wraparound: AllGather = ReduceScatter = V / W_ici with W_ici = 2 W_1 (each
  shard travels both ways); without wraparound (a line) (X-1)/X V / W_1. Several axes at
  once add their bandwidths: V / sum_i W_i. AllReduce = ReduceScatter + AllGather.
  AllToAll = V max_i(X_i / W_i') / (4 N), W_i' = 2 W_1 on a ring, W_1 on a line (1-D ring:
  V / (4 W_ici)).
- Latency: each hop costs at least T_min; a ring's farthest chip is X/2 hops away, a line's
  X-1; the time is max(T_min * hops, bandwidth term) (book ch. 3, "latency-bound").
- GPU (NVSwitch node, fat tree above): per engaged level i with d_i children holding
  m_i members each, AllGather = max_i V (d_i - 1) / (d_i m_i w_i); AllToAll (n members,
  V/n^2 to each) = max(node term, max_i sum_{j >= i} V (d_j - 1) m_j / (n^2 w_i)): a GPU's
  network card carries every piece that leaves its node, whatever level it is bound for, so
  over M nodes it is the book's V (M - 1) / (M^2 W_node); AllReduce twice the AllGather, or
  with in-network reduction (``sharp=True``) max_i V / (m_i w_i) on the levels whose
  switches have SHARP (the records say which, level by level), 2x the ring elsewhere.
  Latency: T_hop per ring step (a ring of n - 1 steps, NCCL's), and for an AllReduce across
  M nodes the lower of that and NCCL's tree, 2 ((n/M - 1) T_hop + floor(log2 M) T_tree)
  (``allreduce_latency="nccl"``; "ring" keeps the ring's): the bandwidth term is the book's.
  A ring across nodes pays at least the record's ``net_overhead`` (1.0 us) a step inside a
  node, and T_tree a network step with one GPU a node; ``base_latency="nccl"`` adds NCCL's
  constant per call (6.6 us a ring, 6.8 us a tree; NCCL src/graph/tuning.cc, v2.30.7-1).
- DCN axes (slices): a ring of slices, each chip over its own DCN share: (X-1)/X V / W_dcn.

>>> import symroof as sr
>>> m = sr.mesh("tpu-v5e", "16x16")
>>> ag = sr.all_gather(m, 2 * 4096 * 8192, "X")     # gather a bf16 [4096, 8192] over X
>>> ag.net_time == sp.Rational(2 * 4096 * 8192, 9 * 10**10)   # V / W_ici, W_ici = 2 W_1
True
>>> ag.net_bytes                                     # each chip sends (X-1)/X of V
62914560
>>> print(ag)
all-gather over X (16 chips) of 67.1 MB: 746 us (bandwidth-bound), 62.9 MB sent per chip
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any

import sympy as sp

from ..conventions import current, using
from ..cost import Cost, as_exact
from .mesh import Mesh, ring_fraction
from .topology import Switched

__all__ = ["Collective", "all_gather", "reduce_scatter", "all_reduce", "all_to_all",
           "send", "collective", "bytes_sent", "KINDS"]

#: the collective kinds, in the spelling of XLA's HLO (what the oracle reads back)
KINDS = ("all-gather", "reduce-scatter", "all-reduce", "all-to-all")


@dataclass(frozen=True, eq=False)
class Collective(Cost):
    """A collective as a Cost: ``net_bytes`` sent per chip, ``net_time`` on the mesh.

    ``t_bw`` is the bandwidth term, ``t_lat`` the latency floor, ``net_time`` their max.
    ``V`` the group's array bytes, ``group`` the devices per group, ``axes`` the mesh axes.
    """

    kind: str = field(default="all-gather", kw_only=True)
    axes: tuple[str, ...] = field(default=(), kw_only=True)
    V: Any = field(default=0, kw_only=True)
    group: Any = field(default=1, kw_only=True)
    t_bw: Any = field(default=0, kw_only=True)
    t_lat: Any = field(default=0, kw_only=True)
    mesh: Any = field(default=None, kw_only=True, repr=False)
    conventions: str = field(default="symroof", kw_only=True, repr=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("V", "group", "t_bw", "t_lat"):
            object.__setattr__(self, name, sp.sympify(as_exact(getattr(self, name), name)))

    __eq__ = Cost.__eq__
    __hash__ = Cost.__hash__

    @property
    def time(self) -> sp.Expr:
        """Seconds on the mesh: max(latency floor, bandwidth term)."""
        return self.net_time

    @property
    def bound(self) -> str:
        """'latency' or 'bandwidth', where the two terms are numbers."""
        if not (self.t_bw.is_number and self.t_lat.is_number):
            return "undetermined"
        return "latency" if self.t_lat > self.t_bw else "bandwidth"

    def elements(self, bytes_per_element: Any = 2) -> tuple[Any, Any]:
        """Per-device elements (in, out) of the collective's operand and result, as XLA's
        HLO shows them: AllGather V/X -> V, ReduceScatter V -> V/X, AllReduce V -> V,
        AllToAll V/X -> V/X (elements = bytes / width)."""
        whole = self.V / as_exact(bytes_per_element, "bytes_per_element")
        shard = whole / self.group
        return {"all-gather": (shard, whole), "reduce-scatter": (whole, shard),
                "all-reduce": (whole, whole), "all-to-all": (shard, shard),
                "collective-permute": (whole, whole)}[self.kind]

    def __repr__(self) -> str:
        return (f"Collective({self.kind} over {'/'.join(self.axes)}, V={self.V}, "
                f"sent={self.net_bytes}, time={self.net_time})")

    def __str__(self) -> str:
        from ..render import fmt_si
        if not self.net_time.is_number:
            return repr(self)
        named = "" if self.conventions == "symroof" else f" (conventions: {self.conventions})"
        return (f"{self.kind} over {', '.join(self.axes)} ({self.group} chips) of "
                f"{fmt_si(self.V, 'B')}: {fmt_si(self.net_time, 's')} ({self.bound}-bound), "
                f"{fmt_si(self.net_bytes, 'B')} sent per chip{named}")



def _numbers(xs: tuple) -> bool:
    return all(getattr(x, "is_Number", False) or isinstance(x, int) for x in xs)


def _max(*xs: Any) -> sp.Expr:
    """``sp.Max`` of ``xs``; numbers compared directly (what Max returns for numbers, without
    its symbolic simplification, most of a numeric collective's cost), symbolic maxima
    built once per arguments (a plan asks for the same ones again)."""
    return sp.sympify(max(xs)) if _numbers(xs) else _symbolic_max(xs)


@functools.lru_cache(maxsize=4096)
def _symbolic_max(xs: tuple) -> sp.Expr:
    numbers = [x for x in xs if getattr(x, "is_Number", False) or isinstance(x, int)]
    others = [x for x in xs if not (getattr(x, "is_Number", False) or isinstance(x, int))]
    if numbers and len(others) == 1 and _undecided(max(numbers), others[0]):
        # what sp.Max returns here, without its search for an order it cannot find (the
        # most of a symbolic collective's cost): a latency floor against V / W
        return sp.Max(max(numbers), others[0], evaluate=False)
    return sp.Max(*xs)


def _undecided(n: Any, e: Any) -> bool:
    """Whether ``n`` lies strictly between the infimum and the supremum of ``e``, a positive
    coefficient times powers of positive symbols (a positive integer symbol is at least 1),
    so that no assumption orders ``Max(n, e)``; False for any other ``e``.

    >>> from symroof.symbols import B, X
    >>> _undecided(sp.Rational(1, 10**5), B / 10**9), _undecided(sp.Rational(1, 10**12), B / 10**9)
    (True, False)
    >>> _undecided(sp.Rational(1, 10), 3 / X), _undecided(4, 3 / X)
    (True, False)
    """
    c, rest = sp.sympify(e).as_coeff_Mul()
    if not (c.is_Rational and c.is_positive):
        return False
    lo, hi = c, c
    for base, p in rest.as_powers_dict().items():
        if not (base.is_Symbol and base.is_positive and p.is_Rational and p != 0):
            return False
        least = 1 if base.is_integer else 0  # a positive integer is at least 1
        if p > 0:
            lo, hi = lo * least, sp.oo
        else:
            lo, hi = 0, hi * (1 if least else sp.oo)
    return bool(lo < n < hi)


def _min(*xs: Any) -> sp.Expr:
    """``sp.Min`` of ``xs``; numbers compared directly (see :func:`_max`)."""
    return sp.sympify(min(xs)) if _numbers(xs) else sp.Min(*xs)

def collective(kind: str, mesh: Mesh, V: Any, axes: Any, *, sharp: bool = False,
               conventions: Any = None) -> Collective:
    """The collective ``kind`` ("all-gather", "reduce-scatter", "all-reduce", "all-to-all";
    ``_`` may stand for ``-``) of ``V`` bytes over ``axes`` of ``mesh``; ``conventions``
    (a profile name or record, default the one in force) decides the ring factor of its
    time (``ring_factor``; the bytes sent per chip are always the exact count).

    >>> import symroof as sr
    >>> node = sr.mesh("h100", {"X": 8})
    >>> [sr.all_gather(node, 450 * 10**9, "X", conventions=c).t_bw for c in ("symroof", "book")]
    [7/8, 1]
    >>> str(sr.all_gather(node, 450 * 10**9, "X", conventions="book")).split("chip ")[-1]
    '(conventions: book)'
    """
    with using(conventions):
        return _collective(kind, mesh, V, axes, sharp)


def _collective(kind: str, mesh: Mesh, V: Any, axes: Any, sharp: bool) -> Collective:
    key = kind.strip().lower().replace("_", "-") if isinstance(kind, str) else kind
    if key not in KINDS:
        raise ValueError(f"unknown collective {kind!r}; known: {', '.join(KINDS)}")
    if not isinstance(mesh, Mesh):
        raise TypeError(f"collectives take a Mesh (sr.mesh(chip, '4x4')), got {mesh!r}")
    V = as_exact(V, "V")
    if V.is_positive is False or V == 0:
        raise ValueError(f"V must be a positive number of bytes, got {V}")
    names = mesh.axis_names(axes)
    n = mesh.size(names)
    if key == "all-reduce" and not sharp:
        rs = _collective("reduce-scatter", mesh, V, names, False)
        ring = 2 * (rs.t_lat - _base(mesh, names, "ring"))  # its steps twice, one call
        return _make(key, mesh, names, V, n, bytes_sent(key, V, n), 2 * rs.t_bw,
                     _allreduce_latency(mesh, names, ring))
    if any(mesh[a].kind in ("nvlink", "scale-out") for a in names):
        t_bw, t_lat = _switched(key, mesh, names, V, n, sharp)
        if key != "all-to-all" and not sharp:  # NCCL's per-call constant (none for NVLS)
            t_lat += _base(mesh, names, "ring")
    else:
        if sharp:
            raise ValueError("sharp=True (in-network reduction) needs a switched GPU network")
        t_bw, t_lat = _torus(key, mesh, names, V, n)
    return _make(key, mesh, names, V, n, bytes_sent(key, V, n), t_bw, t_lat)


def _make(kind, mesh, names, V, n, sent, t_bw, t_lat) -> Collective:
    t = _max(t_lat, t_bw) if t_lat != 0 else t_bw
    return Collective(net_bytes=sent, net_time=t, kind=kind, axes=names, V=V, group=n,
                      t_bw=t_bw, t_lat=t_lat, mesh=mesh, conventions=current().label)


def bytes_sent(kind: str, V: Any, n: Any) -> sp.Expr:
    """Bytes one chip sends in a collective of ``V`` bytes over ``n`` chips: a ring passes
    on n-1 of n shards (AllReduce: twice, ReduceScatter then AllGather); AllToAll sends n-1
    of its n pieces of V/n.

    >>> from symroof.symbols import N, V_b
    >>> bytes_sent("all-reduce", V_b, N)
    2*V_b*(N - 1)/N
    """
    if kind == "all-to-all":
        return V * (n - 1) / n**2
    return (2 if kind == "all-reduce" else 1) * V * (n - 1) / n


def _torus(kind: str, mesh: Mesh, names: tuple, V: sp.Expr, n: Any) -> tuple:
    axes = [mesh[a] for a in names if mesh[a].size != 1]
    if not axes:
        return sp.Integer(0), sp.Integer(0)
    hops = sum(a.hops for a in axes)
    t_lat = hops * axes[0].hop_latency if all(a.kind == "ici" for a in axes) else sp.Integer(0)
    if kind == "all-to-all":
        # on a ring each chip ships X^2/4 pieces of V/X^2 per direction; a line carries
        # twice that over its middle link (book ch. 3, "Fun with AllToAll")
        worst = _max(*(a.size / (2 * a.link_bw if a.wrap and a.kind == "ici"
                                   else a.link_bw) for a in axes))
        return V * worst / (4 * n), t_lat
    return V / sum(a.bw for a in axes), t_lat


def _switched(kind: str, mesh: Mesh, names: tuple, V: sp.Expr, n: int, sharp: bool) -> tuple:
    levels, node = mesh.levels(names), mesh.chip.network.levels[0].name
    if not levels:
        return sp.Integer(0), sp.Integer(0)
    if kind == "all-to-all":
        # each member sends V/n^2 to every other member: (d_i - 1) m_i pieces cross level i.
        # A GPU's link into level i carries every piece bound for level i *or above* (a
        # piece for another SU leaves through the NIC as well as one for the next node), so
        # the terms of the levels above add onto it, not max: the book's node-egress bound
        # V (M - 1) / (M^2 W_node) over M nodes. The node level rides NVLink on its own.
        sent = [V * (lv.degree - 1) * lv.members / n**2 for lv in levels]
        terms = [sum(sent[i:i + 1] if lv.name == node else sent[i:]) / lv.bw_per_gpu
                 for i, lv in enumerate(levels)]
    elif sharp:  # in-network reduction where a level's switches have it (each byte goes up
        # once and comes back reduced, V / W); a level without SHARP rings twice
        terms = [V / lv.bw if lv.sharp else 2 * V * ring_fraction(lv.degree) / lv.bw
                 for lv in levels]
    else:
        terms = [V * ring_fraction(lv.degree) / lv.bw for lv in levels]
    steps = 1 if sharp else n - 1
    ring = kind != "all-to-all" and not sharp  # the collectives NCCL's ring model is of
    return _max(*switch_terms(levels, terms, node)), _ring_latency(mesh, names, levels, node,
                                                                     steps, ring)


def _ring_latency(mesh: Mesh, names: tuple, levels: tuple, node: str, steps: int,
                  ring: bool = True) -> sp.Expr:
    """NCCL's latency model of a ring (tuning.cc at v2.30.7-1): a step that crosses nodes (one
    per node boundary, ``nodes - 1`` of them) costs the scale-out axes' latency, the others
    the NVLink one. For a ring AllGather, ReduceScatter or AllReduce (``ring``; not an
    AllToAll's sends, nor in-network reduction), once the ring crosses nodes a step inside a
    node costs at least the record's ``net_overhead`` (line 410), and with one GPU a node each
    crossing costs the tree's network latency (lines 386-388: "with ppn=1 latencies are fully
    exposed"); a latency given by hand stands for every step."""
    nodes = math.prod(lv.degree for lv in levels if lv.name != node)
    inter = min(steps, nodes - 1)
    lats = [mesh[a].hop_latency for a in names]
    intra, cross = _min(*lats), _max(*lats)
    net = mesh.chip.network
    if ring and nodes > 1 and not _by_hand(mesh, names):
        intra = _max(intra, net.net_overhead)
        if mesh.size(names) == nodes:
            cross = net.tree_latency
    return (steps - inter) * intra + inter * cross


def _by_hand(mesh: Mesh, names: tuple) -> bool:
    """Whether the GPU axes' latencies were given by hand (``mesh(..., hop_latency=)``)."""
    net = mesh.chip.network
    return any(mesh[a].hop_latency != (net.hop_latency if mesh[a].kind == "nvlink"
                                       else net.net_latency)
               for a in names if mesh[a].kind in ("nvlink", "scale-out"))


def _base(mesh: Mesh, names: tuple, algorithm: str) -> sp.Expr:
    """NCCL's constant per call of a ``algorithm`` ("ring" or "tree") on a GPU system, where
    the conventions' ``base_latency`` is "nccl" (tuning.cc baseLatencies, LL); else 0.

    >>> import symroof as sr
    >>> from symroof.conventions import using
    >>> node = sr.mesh("h100", {"X": 8})
    >>> with using(sr.profile("symroof").replace(base_latency="nccl")):
    ...     sr.all_gather(node, 10**3, "X").t_lat * 10**6       # 6.6 + 7 x 0.6 us
    54/5
    """
    net = mesh.chip.network
    if current().base_latency == "none" or not isinstance(net, Switched) or \
            not any(mesh[a].kind in ("nvlink", "scale-out") for a in names):
        return sp.Integer(0)
    return net.ring_base_latency if algorithm == "ring" else net.tree_base_latency


def _allreduce_latency(mesh: Mesh, names: tuple, ring: sp.Expr) -> sp.Expr:
    """The latency floor of an AllReduce whose ring floor is ``ring``: on a GPU system
    across M > 1 nodes under ``allreduce_latency="nccl"``, the lower of the ring's and NCCL's
    tree's, 2 ((n/M - 1) T_hop + floor(log2 M) T_tree) (NCCL src/graph/tuning.cc at
    v2.30.7-1, its Tree/LL latency), each with its constant per call where ``base_latency``
    is "nccl"; a latency given by hand (``mesh(..., hop_latency=)``) stands for every step.

    >>> import symroof as sr
    >>> big = sr.mesh("h100", {"X": 2048, "Y": 8})      # 16,384 GPUs: 2048 nodes
    >>> sr.all_reduce(big, 10**6, "XY").t_lat * 10**6     # 2 (7 x 0.6 + 11 x 5.0) us
    592/5
    """
    net = mesh.chip.network
    ring = ring + _base(mesh, names, "ring")
    if current().allreduce_latency == "ring" or not isinstance(net, Switched) or \
            not any(mesh[a].kind in ("nvlink", "scale-out") for a in names):
        return ring
    levels, node = mesh.levels(names), net.levels[0].name
    nodes = math.prod(lv.degree for lv in levels if lv.name != node)
    if nodes < 2:
        return ring
    per_node = mesh.size(names) // nodes
    lats = [mesh[a].hop_latency for a in names]
    hop, level = _min(*lats), (_max(*lats) if _by_hand(mesh, names) else net.tree_latency)
    tree = 2 * ((per_node - 1) * hop + (nodes.bit_length() - 1) * level)
    return _min(ring, tree + _base(mesh, names, "tree"))


def switch_terms(levels: tuple, terms: list[Any], node: str) -> list[Any]:
    """The per-level times of a GPU collective (one per engaged level of ``levels``,
    innermost first) that its time is the largest of: all of them (``gpu_level="all"``), or
    (``"one"``, the book's W_coll) the one level the book reads: the ``node`` level for a
    group inside an NVLink domain, else the first level above it (the node's egress, W_node).

    >>> from symroof.conventions import using
    >>> from types import SimpleNamespace as L
    >>> levels = (L(name="node"), L(name="leaf"), L(name="spine"))
    >>> with using("book"):
    ...     switch_terms(levels, [7, 5, 1], "node")
    [5]
    >>> switch_terms(levels, [7, 5, 1], "node")
    [7, 5, 1]
    """
    if current().gpu_level == "all":
        return terms
    above = [t for lv, t in zip(levels, terms) if lv.name != node]
    return above[:1] or terms[:1]


def all_gather(mesh: Mesh, V: Any, axes: Any, *, conventions: Any = None) -> Collective:
    """AllGather over ``axes``: ``[I_X, J] -> [I, J]``; V = the gathered array's bytes.

    >>> import symroof as sr
    >>> ag = sr.all_gather(sr.mesh("tpu-v5e", "8x16"), 10**6, "X")   # X = 8: no wraparound
    >>> ag.t_bw                                                       # 7/8 V / W_1
    7/360000
    """
    return collective("all-gather", mesh, V, axes, conventions=conventions)


def reduce_scatter(mesh: Mesh, V: Any, axes: Any, *, conventions: Any = None) -> Collective:
    """ReduceScatter over ``axes``: ``[I, J]{U_X} -> [I, J_X]``; V = the unreduced bytes.

    >>> import symroof as sr
    >>> rs = sr.reduce_scatter(sr.mesh("tpu-v5p", "4x4x4"), 10**9, "XYZ")
    >>> rs.t_bw == sp.Rational(10**9, 3 * 180 * 10**9)                # V / (3 W_ici)
    True
    """
    return collective("reduce-scatter", mesh, V, axes, conventions=conventions)


def all_reduce(mesh: Mesh, V: Any, axes: Any, *, sharp: bool = False,
               conventions: Any = None) -> Collective:
    """AllReduce over ``axes`` = ReduceScatter + AllGather: ``[I, J]{U_X} -> [I, J]``.
    ``sharp=True`` reduces in the switches (GPU systems): V / W instead of 2 V / W.

    >>> import symroof as sr
    >>> node = sr.mesh("h100", {"X": 8})
    >>> sr.all_reduce(node, 10**9, "X").t_bw, sr.all_reduce(node, 10**9, "X", sharp=True).t_bw
    (7/1800, 1/450)
    """
    return collective("all-reduce", mesh, V, axes, sharp=sharp, conventions=conventions)


def all_to_all(mesh: Mesh, V: Any, axes: Any, *, top_k: Any = None,
               conventions: Any = None) -> Collective:
    """AllToAll over ``axes``: ``[I_X, J] -> [I, J_X]``; V = the group's whole array.

    ``top_k=k``: the ragged AllToAll of a mixture of experts, where each token goes to at most
    k of the N members: min(k/N, 1) of the dense one's bytes and time (book ch. 12,
    "Intra-node collectives": about min(k/N, 1) B / (W N)).

    >>> import symroof as sr
    >>> m = sr.mesh("tpu-v5e", "16x16")
    >>> sr.all_to_all(m, 10**6, "X").t_bw * 4 == sr.all_gather(m, 10**6, "X").t_bw
    True
    >>> node = sr.mesh("h100", {"X": 8})
    >>> sr.all_to_all(node, 10**6, "X", top_k=4).t_bw / sr.all_to_all(node, 10**6, "X").t_bw
    1/2
    """
    dense = collective("all-to-all", mesh, V, axes, conventions=conventions)
    if top_k is None:
        return dense
    k = as_exact(top_k, "top_k")
    if k.is_positive is not True:
        raise ValueError(f"top_k must be a positive number of destinations, got {top_k!r}")
    share = _min(k / dense.group, 1)
    with using(conventions):  # the label the dense one was made under
        return _make("all-to-all", mesh, dense.axes, V, dense.group, dense.net_bytes * share,
                     dense.t_bw * share, dense.t_lat)


def send(mesh: Mesh, V: Any, src: Any, dst: Any) -> Collective:
    """A point-to-point send of ``V`` bytes from device ``src`` to ``dst`` (each a tuple of
    coordinates in the mesh's axis order, or a dict by axis name).

    On a TPU torus the message is cut through the ICI hops between them: its first byte
    arrives after ``hops x T_min`` and the rest streams behind it over the ports it can
    leave by, one link ``W_1`` each: one for every axis it moves along, two on a ring axis
    it crosses by half (both ways are as short). Time = hops T_min + V / (ports W_1). On a
    GPU system: one step over the level the two GPUs first share (NVLink's W_GPU inside a
    node, the network card's share across nodes). XLA calls it a collective-permute.

    >>> import symroof as sr
    >>> m = sr.mesh("tpu-v5e", "16x16")
    >>> s = sr.send(m, 45 * 10**3, (0, 0), (0, 3))    # 3 hops along Y, one port
    >>> s.t_lat, s.t_bw, s.net_time
    (3/1000000, 1/1000000, 1/250000)
    >>> sr.send(m, 9 * 10**6, (0, 0), (8, 0)).t_bw       # half way round X: both ways
    1/10000
    """
    if not isinstance(mesh, Mesh):
        raise TypeError(f"send() takes a Mesh (sr.mesh(chip, '4x4')), got {mesh!r}")
    V = as_exact(V, "V")
    if V.is_positive is not True:
        raise ValueError(f"V must be a positive number of bytes, got {V}")
    a, b = _coordinates(mesh, src, "src"), _coordinates(mesh, dst, "dst")
    if a == b:
        raise ValueError(f"send(): src and dst are the same device {a}")
    if isinstance(mesh.chip.network, Switched):
        ids = [_device_id(mesh, c) for c in (a, b)]
        level = next(lv for lv in mesh.chip.network.levels
                     if ids[0] // lv.gpus == ids[1] // lv.gpus)
        t_bw, t_lat = V / level.bw_per_gpu, mesh[mesh.names[0]].hop_latency
        if level is mesh.chip.network.levels[0]:
            t_bw = V / mesh[mesh.names[-1]].link_bw  # every NVLink port of the GPU
    else:
        hops, ports, lat = 0, 0, sp.Integer(0)
        for axis, i, j in zip(mesh.axes, a, b):
            d = abs(i - j)
            if d == 0:
                continue
            ring = axis.wrap and axis.kind == "ici"
            hops += min(d, axis.size - d) if ring else d
            ports += 2 if ring and 2 * d == axis.size else 1
            lat = axis.hop_latency
        bw = min((mesh[n].link_bw for n, i, j in zip(mesh.names, a, b) if i != j),
                 key=lambda w: float(w) if w.is_number else 0)
        t_bw, t_lat = V / (ports * bw), hops * lat
    return Collective(net_bytes=V, net_time=t_lat + t_bw, kind="collective-permute",
                      axes=mesh.names, V=V, group=2, t_bw=t_bw, t_lat=t_lat, mesh=mesh)


def _coordinates(mesh: Mesh, where: Any, what: str) -> tuple[int, ...]:
    """A device's coordinates, one per mesh axis, checked against the axis sizes."""
    if isinstance(where, dict):
        unknown = sorted(set(where) - set(mesh.names))
        if unknown:
            raise ValueError(f"send(): {what} names axis {unknown[0]!r}, not in the mesh "
                             f"(axes {', '.join(mesh.names)})")
        where = tuple(where.get(n, 0) for n in mesh.names)
    coords = tuple(where) if isinstance(where, (tuple, list)) else None
    if coords is None or len(coords) != len(mesh.axes) or not all(
            isinstance(c, int) and 0 <= c < ax.size for c, ax in zip(coords, mesh.axes)):
        shape = "x".join(str(ax.size) for ax in mesh.axes)
        raise ValueError(f"send(): {what} must be one coordinate per axis "
                         f"({', '.join(mesh.names)}) inside the {shape} mesh, got {where!r}")
    return coords


def _device_id(mesh: Mesh, coords: tuple[int, ...]) -> int:
    """Row-major device number (the last axis fastest, as ``Mesh.levels`` places them)."""
    out = 0
    for axis, c in zip(mesh.axes, coords):
        out = out * axis.size + c
    return out

