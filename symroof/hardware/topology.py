"""How chips are wired together: a TPU's torus of ICI links, or a GPU's NVLink node under a
switched scale-out fat tree. A ``Chip`` carries one of these as ``chip.network``.

Units are SI (bytes/s, seconds). Every bandwidth is **one direction** of the thing named:
``link_bw`` one link, ``bw_per_gpu`` one GPU's share of a level's links. The book's "bidi"
per-axis figure is ``2 * link_bw`` (both neighbours on a torus axis).

>>> t = Torus(rank=2, pod=(16, 16), host=(4, 2), wrap_rule="full", hop_latency=1e-6,
...           pcie_bw=1.6e10, dcn_bw=3.125e9)
>>> t.wraps((16, 8)), t.wraps((4, 4))
((True, False), (False, False))
>>> t.fits((8, 16)), t.fits((32, 8))
(True, False)
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction

import sympy as sp

__all__ = ["Torus", "Level", "Switched", "exact_figure"]

#: wraparound rules of TPU generations (book ch. 2, "TPU Networking")
WRAP_RULES = {
    # v4p/v5p: slices are made of 4x4x4 cubes joined by optical switches; a slice of whole
    # cubes wraps on every axis, anything smaller wraps on none (2x2x4 has no wraparound).
    "cube": "every axis wraps iff every axis is a multiple of 4 (whole 4x4x4 cubes)",
    # v5e/v6e (and v2/v3): one fixed torus; an axis wraps only if it spans the whole pod side.
    "full": "an axis wraps iff it spans the whole side of the pod",
}


def exact_figure(value, what: str) -> sp.Expr:
    """``value`` as an exact positive SymPy expression, or a ValueError naming ``what``.
    Floats go through their decimal text, so 8.1e11 is exactly 810000000000.

    >>> exact_figure(8.1e11, "hbm_bw"), exact_figure(Fraction(1, 2), "x")
    (810000000000, 1/2)
    """
    if isinstance(value, sp.Expr):
        expr = sp.nsimplify(value, rational=True) if value.has(sp.Float) else value
    elif isinstance(value, bool) or value is None:
        expr = None
    elif isinstance(value, numbers.Integral):
        expr = sp.Integer(int(value))
    elif isinstance(value, Fraction):
        expr = sp.Rational(value.numerator, value.denominator)
    elif isinstance(value, (numbers.Real, Decimal)) and math.isfinite(value):
        expr = sp.Rational(str(value))  # decimal text, so 8.1e11 -> 810000000000 exactly
    else:
        expr = None
    if expr is None:
        raise ValueError(f"{what} must be a number or a SymPy expression, got {value!r}")
    if expr.is_positive is not True:
        hint = "" if expr.is_positive is False else " (declare symbols with positive=True)"
        raise ValueError(f"{what} must be positive, got {value!r}{hint}")
    return expr


def _shape(value: Sequence[int], what: str) -> tuple[int, ...]:
    shape = tuple(value)
    if not shape or not all(isinstance(n, int) and not isinstance(n, bool) and n > 0
                            for n in shape):
        raise ValueError(f"{what} must be a tuple of positive integers, got {value!r}")
    return shape


@dataclass(frozen=True)
class Torus:
    """A TPU interconnect: a ``rank``-D torus of ICI links, 2 links per axis (one to each
    neighbour), each ``chip.link_bw`` one way. ``pod`` is the largest ICI slice, ``host``
    the chips per host; ``wrap_rule`` says which slices get wraparound links ("cube" or
    "full", see ``WRAP_RULES``). ``hop_latency`` is the per-hop floor T_min; ``pcie_bw``
    host<->chip and ``dcn_bw`` each chip's share of the data-center network, both one way.
    ``slices``: the slice shapes the generation sells (sides ascending); on a "cube"
    generation the shapes below one cube, whole-cube shapes being offered by the rule.
    """

    rank: int
    pod: tuple[int, ...]
    host: tuple[int, ...]
    wrap_rule: str
    hop_latency: sp.Expr
    pcie_bw: sp.Expr
    dcn_bw: sp.Expr
    links_per_axis: int = 2
    slices: tuple[tuple[int, ...], ...] = ()
    kind: str = field(default="torus", init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "slices", tuple(tuple(sorted(_shape(sh, "Torus.slices")))
                                                 for sh in self.slices))
        object.__setattr__(self, "pod", _shape(self.pod, "Torus.pod"))
        object.__setattr__(self, "host", _shape(self.host, "Torus.host"))
        if len(self.pod) != self.rank:
            raise ValueError(f"Torus: pod {self.pod} must have rank {self.rank} axes")
        if self.wrap_rule not in WRAP_RULES:
            raise ValueError(f"Torus: unknown wrap_rule {self.wrap_rule!r}; known: "
                             f"{', '.join(WRAP_RULES)}")
        for name in ("hop_latency", "pcie_bw", "dcn_bw"):
            object.__setattr__(self, name, exact_figure(getattr(self, name), f"Torus.{name}"))

    @property
    def pod_chips(self) -> int:
        return math.prod(self.pod)

    def fits(self, shape: Sequence[int]) -> bool:
        """Whether a slice of this shape (axes in any order) fits in one pod."""
        shape = tuple(shape)
        if len(shape) > self.rank:
            return False
        padded = sorted(shape + (1,) * (self.rank - len(shape)))
        return all(n <= p for n, p in zip(padded, sorted(self.pod)))

    def offers(self, shape: Sequence[int]) -> bool:
        """Whether the generation sells a slice of this shape (axes in any order): one of
        ``slices`` (the shapes on record), or on a "cube" generation any shape of whole
        4x4x4 cubes inside the pod. A record without ``slices`` offers whatever fits."""
        shape = tuple(shape)
        if not self.slices:
            return self.fits(shape)
        if len(shape) != self.rank:
            return False
        if tuple(sorted(shape)) in self.slices:
            return True
        return (self.wrap_rule == "cube" and all(n % 4 == 0 for n in shape)
                and self.fits(shape))

    def offered(self) -> list[tuple[int, ...]]:
        """Every slice shape this generation offers, smallest first (sides ascending).

        >>> Torus(rank=2, pod=(16, 16), host=(4, 2), wrap_rule="full", hop_latency=1e-6,
        ...       pcie_bw=1.6e10, dcn_bw=3.125e9, slices=((1, 1), (2, 2), (2, 4))).offered()
        [(1, 1), (2, 2), (2, 4)]
        """
        shapes = set(self.slices)
        if self.wrap_rule == "cube" and self.slices:
            sides = [range(4, p + 1, 4) for p in sorted(self.pod)]
            shapes |= {tuple(sorted(sh)) for sh in itertools.product(*sides) if self.fits(sh)}
        return sorted(shapes, key=lambda sh: (math.prod(sh), sh))

    def nearest(self, shape: Sequence[int], count: int = 3) -> list[tuple[int, ...]]:
        """The offered slices closest to ``shape`` in chip count (then in shape), for an
        error that says what can be had.

        >>> v5e = Torus(rank=2, pod=(16, 16), host=(4, 2), wrap_rule="full",
        ...             hop_latency=1e-6, pcie_bw=1.6e10, dcn_bw=3.125e9,
        ...             slices=((1, 1), (2, 2), (2, 4), (4, 4), (4, 8)))
        >>> v5e.nearest((3, 5))
        [(4, 4), (2, 4), (4, 8)]
        """
        n = math.prod(shape)
        want = sorted(shape) + [1] * (self.rank - len(shape))

        def distance(sh: tuple[int, ...]) -> tuple:
            return (abs(math.log(math.prod(sh) / n)),
                    sum(abs(math.log(a / b)) for a, b in zip(sorted(sh), sorted(want))))
        return sorted(self.offered(), key=distance)[:count]

    def wraps(self, shape: Sequence[int]) -> tuple[bool, ...]:
        """Which axes of a slice of this shape have wraparound links, by ``wrap_rule``.

        >>> v5p = Torus(rank=3, pod=(16, 20, 28), host=(2, 2, 1), wrap_rule="cube",
        ...             hop_latency=1e-6, pcie_bw=1.6e10, dcn_bw=6.25e9)
        >>> v5p.wraps((4, 4, 8)), v5p.wraps((2, 2, 4))
        ((True, True, True), (False, False, False))
        """
        shape = tuple(shape)
        if self.wrap_rule == "cube":
            whole = len(shape) == self.rank and all(n % 4 == 0 for n in shape)
            return tuple(whole and n > 1 for n in shape)
        side = max(self.pod)  # a fixed torus is square (16x16, 32x32)
        return tuple(n == side for n in shape)


@dataclass(frozen=True)
class Level:
    """One level of a GPU system: ``degree`` children, each holding ``gpus_per_child`` GPUs,
    joined by switches; ``bw_per_gpu`` is one GPU's share of the bandwidth into this level,
    one way (the node level: W_GPU, the NVLink egress; leaf and spine: the NIC share).
    ``sharp``: this level's switches reduce in the network (InfiniBand SHARP on a scale-out
    level; the node level's NVLink SHARP is ``Switched.sharp``)."""

    name: str
    degree: int
    gpus_per_child: int
    bw_per_gpu: sp.Expr
    sharp: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.sharp, bool):
            raise ValueError(f"Level {self.name!r}: sharp must be True or False, "
                             f"got {self.sharp!r}")
        for name in ("degree", "gpus_per_child"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"Level {self.name!r}: {name} must be a positive integer, "
                                 f"got {value!r}")
        object.__setattr__(self, "bw_per_gpu",
                           exact_figure(self.bw_per_gpu, f"Level {self.name!r}: bw_per_gpu"))

    @property
    def gpus(self) -> int:
        """GPUs under one switch of this level."""
        return self.degree * self.gpus_per_child


@dataclass(frozen=True)
class Switched:
    """A GPU system: ``nvlink_ports`` NVLink links per GPU (each ``chip.link_bw`` one way)
    into NVSwitches joining ``levels[0].degree`` GPUs (the node, i.e. the NVLink domain);
    above it a fat tree of ``levels[1:]`` (leaf, spine) with full bisection bandwidth.
    ``sharp``: the switches can reduce in the network (NVLink SHARP, Hopper on).
    ``hop_latency`` is the per-step floor of a ring step inside a node, ``net_latency`` of
    one that crosses the scale-out network (None: ``hop_latency``), ``tree_latency`` of one
    level of a tree across nodes (NCCL's AllReduce tree; None: ``net_latency``).
    ``net_overhead``: the least a ring step inside a node costs once the ring crosses nodes
    (NCCL's network post overhead; None: 0); ``ring_base_latency`` and ``tree_base_latency``:
    NCCL's constant per call of a ring and of a tree (None: 0), added where the conventions'
    ``base_latency`` says so.
    """

    nvlink_ports: int
    levels: tuple[Level, ...]
    sharp: bool
    hop_latency: sp.Expr
    pcie_bw: sp.Expr
    net_latency: sp.Expr | None = None
    tree_latency: sp.Expr | None = None
    net_overhead: sp.Expr | None = None
    ring_base_latency: sp.Expr | None = None
    tree_base_latency: sp.Expr | None = None
    kind: str = field(default="switched", init=False)

    def __post_init__(self) -> None:
        levels = tuple(self.levels)
        if not levels or not all(isinstance(lv, Level) for lv in levels):
            raise ValueError(f"Switched.levels must be Level records, got {self.levels!r}")
        if levels[0].gpus_per_child != 1:
            raise ValueError("Switched.levels[0] is the node: its children are single GPUs")
        for below, above in zip(levels, levels[1:]):
            if above.gpus_per_child != below.gpus:
                raise ValueError(f"level {above.name!r} has children of "
                                 f"{above.gpus_per_child} GPUs, but one {below.name!r} "
                                 f"holds {below.gpus}")
        object.__setattr__(self, "levels", levels)
        if self.net_latency is None:
            object.__setattr__(self, "net_latency", self.hop_latency)
        if self.tree_latency is None:
            object.__setattr__(self, "tree_latency", self.net_latency)
        for name in ("net_overhead", "ring_base_latency", "tree_base_latency"):  # None: 0
            value = getattr(self, name)
            object.__setattr__(self, name, sp.Integer(0) if value is None else
                               exact_figure(value, f"Switched.{name}"))
        for name in ("hop_latency", "pcie_bw", "net_latency", "tree_latency"):
            object.__setattr__(self, name, exact_figure(getattr(self, name),
                                                        f"Switched.{name}"))

    @property
    def node_size(self) -> int:
        """GPUs in one NVLink domain (8; 72 for GB200 NVL72)."""
        return self.levels[0].degree

    @property
    def max_gpus(self) -> int:
        """GPUs under the top switch level: the largest system of this record."""
        return self.levels[-1].gpus

    def sharp_at(self, level: int) -> bool:
        """Whether the switches of ``levels[level]`` reduce in the network (SHARP per level:
        the node's NVLink SHARP is ``sharp``, each scale-out level says for itself)."""
        return self.sharp if level == 0 else self.levels[level].sharp

    @property
    def node_bisection(self) -> sp.Expr:
        """The node's bisection bandwidth counted both ways, the book's (and NVIDIA's)
        figure: half the GPUs send W_GPU each to the other half, in both directions, so
        ``node_size * W_GPU`` (3.6 TB/s on an 8 x H100 node). It is also all the node's GPUs
        can push through their NVSwitches, whose own capacity is larger (an H100 node's 4 x 64
        ports x 25e9 = 6.4 TB/s: ``chip.internals["nvswitch_bw"]``)."""
        return self.node_size * self.levels[0].bw_per_gpu

    @property
    def node_egress(self) -> sp.Expr:
        """One node's bandwidth into the scale-out network, one way (W_node)."""
        if len(self.levels) < 2:
            raise ValueError("this system has no scale-out level above the node")
        return self.levels[1].bw_per_gpu * self.node_size
