"""Sharded matmuls in the book's notation (ch. 3, "Computation With Sharded Arrays").

``shard_matmul(mesh, "X[B_X, D_Y] @ W[D_Y, F] -> [B_X, F]", B=..., D=..., F=...)`` works out
what each chip computes and which collectives the product needs, by the book's four cases:

1. no contracting dimension sharded: multiply locally, nothing to send;
2. one operand's contracting dimension sharded over an axis the other leaves whole: either
   AllGather it first (``strategy="gather"``) or slice the other operand locally, multiply
   and reduce the partial sums (``strategy="reduce"``);
3. both contracting dimensions sharded over the same axis: multiply the shards, leaving
   ``{U_X}`` partial sums, then AllReduce_X, or ReduceScatter_X where the output is
   sharded over X;
4. both free dimensions sharded over the same axis: AllGather one operand (the one whose
   free dimension the output does not keep sharded).

Each case only chooses the partitions the operands are multiplied in; every collective, the
operands' and the result's (partial sums reduced, then brought to the requested output
sharding), comes from the one mechanism of :mod:`symroof.parallel.partition`, so a dimension
split over several axes is gathered in one collective over all of them. Sizes not given stay
symbols of the table (B, D, F, ...), so times and crossovers come out as formulas.

>>> import symroof as sr
>>> from symroof.symbols import B, D, F
>>> m = sr.mesh(sr.symbolic_chip(), {"X": 2}, wrap=False)   # the book's 2-chip example
>>> mm = sr.shard_matmul(m, "X[B, D_X] @ W[D_X, F] -> [B, F]")
>>> [str(s) for s in mm.steps]
['AllReduce_X [B, F]{U_X}: V = 2*B*F']
>>> mm.t_math, mm.t_comms
(B*D*F/C, 2*B*F/W_net)
>>> sr.crossover(mm.t_math, mm.t_comms, D)                     # D* = 2C/W_net
2*C/W_net
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import sympy as sp

from ..analysis import TimeBound, crossover, time
from ..cost import Cost, as_dimension, as_exact
from ..hardware.collectives import Collective
from ..hardware.mesh import Mesh
from ..symbols import dimension
from .partition import local_elements, moves
from .sharding import ArraySpec, parse_matmul

__all__ = ["ShardedMatmul", "MatmulStep", "shard_matmul", "STRATEGIES"]

STRATEGIES = ("auto", "gather", "reduce")
_BOOK = {"all-gather": "AllGather", "reduce-scatter": "ReduceScatter",
         "all-reduce": "AllReduce", "all-to-all": "AllToAll"}


@dataclass(frozen=True)
class MatmulStep:
    """One collective of a plan: what it does to which array, in the book's notation."""

    collective: Collective
    before: str
    after: str
    width: sp.Expr  # bytes per element of the array it moves

    def __str__(self) -> str:
        c = self.collective
        sub = "".join(c.axes) if all(len(a) == 1 for a in c.axes) else ",".join(c.axes)
        return f"{_BOOK[c.kind]}_{sub} {self.before}: V = {c.V}"

    def elements(self) -> tuple[Any, Any]:
        """Per-device (in, out) elements, as the compiled HLO shows them."""
        return self.collective.elements(self.width)


@dataclass(frozen=True)
class ShardedMatmul:
    """The per-chip plan of one sharded matmul: ``compute`` (FLOPs and HBM bytes per chip),
    ``steps`` (the collectives, in order), their sum in ``cost``, and the time bounds."""

    text: str
    mesh: Mesh
    strategy: str
    compute: Cost
    steps: tuple[MatmulStep, ...]
    local: str  # the local product, in notation
    specs: tuple[ArraySpec, ArraySpec, ArraySpec]  # the operands and output as written
    sizes: dict  # every dimension's size by name (numbers or symbols)
    widths: tuple  # bytes per element: left operand, right operand, product
    dtype: str = "bf16"
    alternatives: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def collectives(self) -> tuple[Collective, ...]:
        return tuple(s.collective for s in self.steps)

    @property
    def cost(self) -> Cost:
        """Per-chip compute plus every collective (network bytes and time)."""
        return self.compute + sum(self.collectives, Cost())

    @property
    def time(self) -> TimeBound:
        """Time bounds on the mesh: ``lower`` with perfect overlap, ``upper`` with none."""
        return time(self.cost, self.mesh, self.dtype, per_chip=True)

    @property
    def t_math(self) -> sp.Expr:
        return self.time.t_math

    @property
    def t_comms(self) -> sp.Expr:
        """Seconds in collectives (they run one after another)."""
        return self.time.t_net

    @property
    def bound(self) -> str:
        return self.time.bound

    def crossover(self, var: Any) -> sp.Expr:
        """The value of ``var`` where compute time equals communication time."""
        return crossover(self.t_math, self.t_comms, var)

    def predicted(self) -> list[dict]:
        """The collectives as the XLA oracle compares them (kind, axes, elements)."""
        return [{"kind": s.collective.kind, "axes": s.collective.axes,
                 "elements_in": int(s.elements()[0]), "elements_out": int(s.elements()[1])}
                for s in self.steps]

    def __str__(self) -> str:
        lines = [f"{self.text} on {self.mesh!r} ({self.strategy}):",
                 f"  local: {self.local}, {self.compute.flops} FLOPs per chip"]
        lines += [f"  {s}" for s in self.steps] or ["  no communication"]
        lines.append(f"  {self.time}")
        return "\n".join(lines)


def _size(spec: ArraySpec, sizes: dict, mesh: Mesh) -> sp.Expr:
    """Elements of one device's shard of ``spec``."""
    return local_elements(spec, sizes, mesh)


def _steps(src: ArraySpec, dst: ArraySpec, sizes: dict, mesh: Mesh, width: sp.Expr,
           ) -> list[MatmulStep]:
    """The collectives from ``src`` to ``dst`` (:func:`~symroof.parallel.partition.moves`:
    a dimension that loses several axes is gathered over all of them at once)."""
    return [MatmulStep(m.collective, str(m.before), str(m.after), width)
            for m in moves(src, dst, mesh, sizes, width)]


def _resolve(a: ArraySpec, b: ArraySpec, out: ArraySpec, strategy: str, mesh: Mesh,
             ) -> tuple[ArraySpec, ArraySpec]:
    """The partitions the operands are multiplied in, every mesh axis playing one role (I, K,
    or contracted J in both): cases 2 and 4 as partitions (their collectives follow)."""
    I, J, K = a.dims[0], a.dims[1], b.dims[1]

    def drop(spec: ArraySpec, dim: str, x: str) -> ArraySpec:
        return spec.with_axes(dim, tuple(y for y in spec.axes_of(dim) if y != x))

    a2, b2 = a, b
    for x in mesh.names:
        ra = "I" if x in a.axes_of(I) else "J" if x in a.axes_of(J) else None
        rb = "J" if x in b.axes_of(J) else "K" if x in b.axes_of(K) else None
        if (ra, rb) == ("J", None):  # gather a's J, or slice b's J locally (it is whole)
            a2, b2 = (drop(a2, J, x), b2) if strategy == "gather" else (
                a2, b2.with_axes(J, b2.axes_of(J) + (x,)))
        elif (ra, rb) == (None, "J"):
            a2, b2 = (a2, drop(b2, J, x)) if strategy == "gather" else (
                a2.with_axes(J, a2.axes_of(J) + (x,)), b2)
        elif (ra, rb) == ("I", "K"):  # case 4: keep the operand whose dim the output keeps
            a2, b2 = (a2, drop(b2, K, x)) if x in out.axes_of(I) else (drop(a2, I, x), b2)
        elif (ra, rb) == ("I", "J"):
            b2 = drop(b2, J, x)
        elif (ra, rb) == ("J", "K"):
            a2 = drop(a2, J, x)
    return a2, b2


def shard_matmul(mesh: Mesh, text: str, *, strategy: str = "auto", x_bytes: Any = 2,
                 w_bytes: Any = 2, out_bytes: Any = None, dtype: str = "bf16",
                 **sizes: Any) -> ShardedMatmul:
    """Plan ``text`` ("A[I_X, J] @ B[J, K_Y] -> [I_X, K_Y]") on ``mesh``; see the module.

    ``sizes`` give the dimensions by name (``B=4096``); a name left out is the table's
    symbol of that name. ``strategy`` picks case 2's plan: "gather", "reduce" or "auto"
    (the one with less communication time where that is a number, else "gather").
    Byte widths: ``x_bytes`` for the left operand, ``w_bytes`` for the right one,
    ``out_bytes`` (default ``x_bytes``) for the product and its partial sums.

    >>> import symroof as sr
    >>> mm = shard_matmul(sr.mesh("tpu-v5e", "16x16"), "X[B_X, D] @ W[D, F_Y] -> [B_X, F_Y]",
    ...                   B=4096, D=8192, F=8192)        # case 1: nothing to send
    >>> mm.steps, mm.compute.flops == 2 * 4096 * 8192 * 8192 // 256
    ((), True)
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    a, b, out = parse_matmul(text)
    for spec in (a, b, out):
        for x in spec.mesh_axes:
            mesh[x]  # noqa: B018  (raises naming the unknown axis)
    dims = {d: _dimension(d, sizes) for d in (a.dims[0], a.dims[1], b.dims[1])}
    unknown = sorted(set(sizes) - set(dims))
    if unknown:
        raise ValueError(f"sizes given for {', '.join(unknown)}, which {text!r} does not "
                         "have")
    for spec in (a, b, out):
        for d, axes in zip(spec.dims, spec.axes):
            n = mesh.size(axes) if axes else 1
            if dims[d].is_number and sp.sympify(n).is_number and n != 1 and dims[d] % n:
                raise ValueError(f"{d} = {dims[d]} does not divide over {spec}'s mesh axes "
                                 f"{'x'.join(axes)} ({n} devices)")
    widths = (as_exact(x_bytes, "x_bytes"), as_exact(w_bytes, "w_bytes"),
              as_exact(x_bytes if out_bytes is None else out_bytes, "out_bytes"))
    plans = {s: _plan(mesh, text, a, b, out, s, dims, widths, dtype)
             for s in ("gather", "reduce")}
    if strategy == "auto":
        g, r = (plans[s].time.t_net for s in ("gather", "reduce"))
        strategy = "reduce" if (g - r).is_number and r < g else "gather"
    chosen = plans[strategy]
    object.__setattr__(chosen, "alternatives", plans)
    return chosen


def _dimension(name: str, sizes: dict) -> sp.Expr:
    if name in sizes:
        return as_dimension(sizes[name], name)
    return dimension(name)


def _plan(mesh: Mesh, text: str, a: ArraySpec, b: ArraySpec, out: ArraySpec, strategy: str,
          dims: dict, widths: tuple, dtype: str) -> ShardedMatmul:
    a2, b2 = _resolve(a, b, out, strategy, mesh)
    steps = _steps(a, a2, dims, mesh, widths[0]) + _steps(b, b2, dims, mesh, widths[1])
    I, J, K = a.dims[0], a.dims[1], b.dims[1]
    partial = tuple(x for x in a2.axes_of(J) if x in b2.axes_of(J))
    c = ArraySpec("", (I, K), (a2.axes_of(I), b2.axes_of(K)), partial)
    flops = 2 * _size(a2, dims, mesh) * dims[K] / (mesh.size(b2.axes_of(K))
                                                    if b2.axes_of(K) else 1)
    written = _size(c, dims, mesh) * widths[2]  # the local product, written once
    compute = Cost(flops=flops, act_bytes=_size(a2, dims, mesh) * widths[0] + written,
                   act_store_bytes=written, weight_bytes=_size(b2, dims, mesh) * widths[1])
    steps += _steps(c, out.with_unreduced(()), dims, mesh, widths[2])
    local = f"{a2} @ {b2} -> {c}"
    return ShardedMatmul(text, mesh, strategy, compute, tuple(steps), local, (a, b, out), dims,
                         widths, dtype)
