"""Serving a model on a mesh (book ch. 7 and 8): one decode step with the weights and the KV
cache sharded, per chip, with its collectives.

Layout (ch. 7, "Distributing Inference"): **1-D model parallelism** (``layout="1d"``, the
default) over every axis of the mesh: MLP weights split over F, attention weights over
heads, activations replicated; each layer ends its attention and its MLP with an AllReduce
of the [B, D] activations. ``layout="2d"``: **2-D weight-stationary**, D split over
``d_axes`` and F over the other axes (:mod:`symroof.parallel.serving_2d`: its collectives
and where it beats 1-D). The KV cache is split over KV heads first (whole axes, at most G
ways), then over the batch; where the batch splits it, each attention layer adds two
AllToAlls over the batch's axes (queries to batch sharding and back). Under 1-D, norms,
residuals and the embedding gather are replicated (every chip does them). Both layouts are
data (:mod:`symroof.parallel.serving_layouts`, the plan's ``partitions``), sharded by the one
mechanism of :mod:`symroof.parallel.partition`.

- memory per chip: (weight bytes + B S KV_tok) / N, and the largest batch that fits;
- time: ``sr.time`` of the per-chip cost with its collectives: lower bound with perfect
  overlap, upper with none; the book's form B KV/W + max(2BP/C, P_bytes/W) beside it;
- tokens per second per chip, B / (t N).

>>> import symroof as sr
>>> plan = sr.serve(sr.model("llama-3.1-8b"), sr.mesh("tpu-v5e", "2x2"),
...                 sr.Step(32, context=4096))
>>> plan.fits, plan.max_batch
(True, 89)
>>> print(plan)    # doctest: +NORMALIZE_WHITESPACE
llama-3.1-8b on tpu-v5e 2x2 (4 chips), batch 32, context 4096, weights bf16, KV bf16:
  memory per chip 8.31 GB of 16 GB (weights 4.02 GB, KV 4.29 GB); largest batch 89
  step t_math 698 us, t_mem 10.1 ms, t_net 256 us: 10.1 ms .. 11 ms (memory-bound),
  per chip of tpu-v5e 2x2
  795 tokens/s per chip
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import sympy as sp

from ..analysis import TimeBound, crossover, time
from ..conventions import SYMROOF, Conventions, as_conventions, using
from ..cost import Cost, as_dimension
from ..hardware.chip import STORAGE_BYTES
from ..hardware.mesh import Mesh
from ..render import fmt_si
from ..timerule import SYMPY
from ..workload import Step
from .partition import shard_layers, ways
from .serving_2d import LAYOUTS, ici_condition, layout_conditions, split_axes
from .serving_layouts import serving_layout

__all__ = ["ServePlan", "serve", "WIDTHS"]

#: bytes per element of the storage dtypes a plan takes (int4/fp4: half a byte)
WIDTHS = STORAGE_BYTES  # one home: symroof.hardware.chip


def width(dtype: str, what: str) -> sp.Expr:
    key = dtype.strip().lower() if isinstance(dtype, str) else dtype
    if key not in WIDTHS:
        raise ValueError(f"unknown {what} dtype {dtype!r}; known: {', '.join(WIDTHS)}")
    return sp.sympify(WIDTHS[key])


@dataclass(frozen=True)
class ServePlan:
    """One decode step of ``model`` on ``mesh``, per chip: ``rows`` (every op's share and
    the collectives), their sum ``cost``, ``memory`` per chip, ``time`` on the mesh;
    ``layout`` "1d" or "2d" (``d_axes``: the axes splitting D)."""

    model: Any
    mesh: Mesh
    batch: Any
    context: Any
    weights: str
    kv: str
    rows: dict
    memory: dict
    compute_dtype: str = "bf16"
    layout: str = "1d"
    d_axes: tuple[str, ...] = ()
    #: one (dense) layer's collectives, ``key -> (times per layer, Collective)``: what the
    #: ``comm/*`` rows hold L times over (the XLA oracle checks them one layer at a time)
    layer_comm: dict = field(default_factory=dict)
    #: the layout as data: each row's operand partitions (:mod:`.serving_layouts`)
    partitions: Any = None
    #: the conventions record the rows were built under; its time and conditions read it
    conventions: Conventions = SYMROOF

    @property
    def n(self) -> Any:
        return self.mesh.n_chips

    @cached_property  # a plan is immutable: summed and timed once, however often read
    def cost(self) -> Cost:
        return sum(self.rows.values(), Cost())

    @cached_property
    def time(self) -> TimeBound:
        return time(self.cost, self.mesh, self.compute_dtype, per_chip=True,
                    conventions=self.conventions)

    @property
    def collectives(self) -> dict[str, Cost]:
        """The rows that are collectives (all L layers' worth each)."""
        return {k: c for k, c in self.rows.items() if k.startswith("comm/")}

    @property
    def bound(self) -> str:
        return self.time.bound

    @property
    def bounds(self) -> dict[str, str]:
        """Per collective row, "latency" or "bandwidth": which term sets one layer's
        collective's time (``layer_comm``; every layer's is the same)."""
        return {k: c.bound for k, (_, c) in self.layer_comm.items()}

    @property
    def warnings(self) -> tuple[str, ...]:
        """What the plan prices that cannot be done as laid out: attention split over more
        chips than the model has query heads (``train`` refuses such a TP degree).

        >>> import symroof as sr
        >>> (w,) = sr.serve("llama-3.1-8b", sr.mesh("tpu-v5e", "16x16"), batch=32,
        ...                 context=8192).warnings
        >>> for part in w.split("; "):
        ...     print(part)
        attention split 256 ways over llama-3.1-8b's 32 query heads (each cut 8 ways)
        1-D model parallelism splits whole heads: at most 32 chips
        """
        H, N = self.model.H, self.n
        if self.layout != "1d" or sp.sympify(N > H) is not sp.true:
            return ()
        return (f"attention split {N} ways over {self.model.name}'s {H} query heads (each "
                f"cut {sp.ceiling(sp.Rational(N, H))} ways); 1-D model parallelism splits "
                f"whole heads: at most {H} chips",)

    @property
    def conditions(self) -> dict[str, Any]:
        """Where 2-D weight-stationary pays, solved with ``sr.crossover``: ``x_opt`` (a 2-D
        plan's best D degree) and ``2d`` (the chips above which 2-D beats 1-D); see
        :mod:`symroof.parallel.serving_2d`; ``ici``: the mesh width below which decode
        stays HBM-bound, Y < F/(B beta) (:func:`symroof.parallel.serving_2d.ici_condition`)."""
        with using(self.conventions):  # solved under the plan's record, not the one in force
            return layout_conditions(self) | ici_condition(self)

    @property
    def hbm_used(self) -> sp.Expr:
        """Bytes per chip: weights + KV cache."""
        return sum(self.memory.values())

    @property
    def fits(self) -> bool | None:
        diff = self.mesh.chip.hbm_bytes - self.hbm_used
        return bool(diff >= 0) if diff.is_number else None

    @property
    def max_batch(self) -> Any:
        """The largest batch whose KV cache fits beside the weights, floor((N HBM -
        P_bytes) / (S KV_tok)); 0 if the weights alone do not fit."""
        m = self.model
        free = self.n * self.mesh.chip.hbm_bytes - m.params * m.w_bytes
        per_seq = m.kv_cache_bytes(self.context)  # windowed layers cap their part
        if free.is_number and per_seq.is_number:
            return max(0, math.floor(free / per_seq))
        return free / per_seq

    @property
    def min_chips(self) -> Any:
        """ceil(weight bytes / HBM per chip): the fewest chips that hold the weights
        (``sr.min_chips`` of them)."""
        from .inverse import min_chips

        return min_chips(self.model.params * self.model.w_bytes, self.mesh.chip).chips

    @property
    def tokens_per_s_per_chip(self) -> sp.Expr:
        """Throughput per chip: B / (t_lower N)."""
        return self.batch / (self.time.lower * self.n)

    def requests_per_s_per_chip(self, tokens: Any, *, form: str = "plan") -> sp.Expr:
        """Requests a second per chip when each generates ``tokens`` tokens: B / (t N tokens)
        (ch. 7), with t the plan's step (``form="plan"``, the lower bound) or the book's
        general form (``form="book"``, :attr:`book_time`).

        >>> import symroof as sr
        >>> plan = sr.serve("llama-3.1-70b", sr.mesh("tpu-v5e", "4x4"), batch=42,
        ...                 context=8192)
        >>> round(float(plan.requests_per_s_per_chip(512, form="book")), 3)   # ch. 8: 0.27
        0.265
        """
        if form not in ("plan", "book"):
            raise ValueError(f"form must be 'plan' or 'book', got {form!r}")
        n_tokens = as_dimension(tokens, "tokens")
        per_chip = (self.tokens_per_s_per_chip if form == "plan"
                    else self.batch / (self.book_time * self.n))
        return per_chip / n_tokens

    @property
    def book_time(self) -> sp.Expr:
        """The book's general form (ch. 7): B KV / W_tot + max(2 B P / C_tot, P_bytes / W_tot),
        attention taken as memory-bound and not overlapped with the MLP; no ICI."""
        m, chip = self.model, self.mesh.chip
        C, W = self.n * chip.peak(self.compute_dtype), self.n * chip.hbm_bw
        kv = self.batch * self.context * m.kv_bytes_per_token
        return kv / W + SYMPY.max(2 * self.batch * m.matmul_params / C,  # the time rule's
                                  m.params * m.w_bytes / W)  # Max: no order search

    def crossover(self, lhs: str, rhs: str, var: Any) -> sp.Expr:
        """Solve ``t_<lhs> = t_<rhs>`` ("math", "mem", "net") for ``var`` (e.g. B)."""
        t = self.time
        terms = {"math": t.t_math, "mem": t.t_mem, "net": t.t_net}
        for side in (lhs, rhs):
            if side not in terms:
                raise ValueError(f"time term {side!r} is not one of {', '.join(terms)}")
        return crossover(terms[lhs], terms[rhs], var)

    def __str__(self) -> str:
        mem = self.memory
        head = (f"{self.model.name} on {self.mesh.title} ({self.n} chips), batch "
                f"{self.batch}, context {self.context}, weights {self.weights}, KV {self.kv}"
                + (f", 2-D (D over {','.join(self.d_axes)})" if self.layout == "2d" else "")
                + self.conventions.title_part + ":")
        fit = (f"memory per chip {_si(self.hbm_used, 'B')} of "
               f"{_si(self.mesh.chip.hbm_bytes, 'B')} (weights "
               f"{_si(mem['weights'], 'B')}, KV {_si(mem['kv'], 'B')}); largest batch "
               f"{self.max_batch}")
        if self.fits is False:
            return "\n  ".join([head, fit, f"DOES NOT FIT: the weights alone need at least "
                                             f"{self.min_chips} chips"])
        rate = self.tokens_per_s_per_chip
        speed = (f"{float(rate):.0f} tokens/s per chip" if rate.is_number else
                 f"tokens/s per chip = {rate}")
        return "\n  ".join([head, fit, f"step {self.time}", speed, *(
            f"warning: {w}" for w in self.warnings)])


def serve(model: Any, mesh: Mesh, step: Step | None = None, *, batch: Any = None,
          context: Any = None, weights: str = "bf16", kv: str | None = None,
          compute_dtype: str = "bf16", layout: str = "1d", d_axes: Any = None,
          conventions: Any = None) -> ServePlan:
    """Plan one decode step of ``model`` on ``mesh`` (see the module docstring).

    ``step``: a decode :class:`~symroof.Step` (``sr.Step(32, context=4096)``), or ``batch``
    sequences each at ``context`` tokens (the new one included); ``weights`` and
    ``kv`` are storage dtypes ("bf16", "int8", "fp8", "int4", ...; ``kv`` defaults to the
    model's); ``compute_dtype`` picks the chip's peak. ``layout``: "1d" or "2d";
    ``d_axes``: under "2d", the mesh axes that split D (default the first).
    ``conventions`` (a profile name or record; default the one in force) builds the rows and
    their collectives, and the plan keeps it for its time and conditions.

    >>> import symroof as sr
    >>> plan = sr.serve("llama-3.1-70b", sr.mesh("tpu-v5e", "16x16"), batch=64,
    ...                 context=4096, layout="2d", d_axes="X")
    >>> one = sr.all_gather(plan.mesh, 64 * 8192 * 2 // 16, "Y")   # In[B, D_X] over Y
    >>> plan.rows["comm/mlp_allgather"].net_time == 80 * one.net_time    # every layer
    True
    """
    from ..models import model as _model

    if isinstance(model, str):
        model = _model(model)
    if not isinstance(mesh, Mesh):
        raise TypeError(f"serve() takes a Mesh (sr.mesh(chip, '4x4')), got {mesh!r}")
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
    if d_axes is not None and layout != "2d":
        raise ValueError(f"d_axes={d_axes!r} splits D under layout='2d'; this plan's layout "
                         f"is {layout!r}")
    d = split_axes(mesh, d_axes)[0] if layout == "2d" else ()
    if step is not None:
        if batch is not None or context is not None:
            raise ValueError("give a Step or batch= and context=, not both")
        if step.new_tokens != 1:
            raise ValueError(f"serve() plans one decode step (1 new token per sequence); "
                             f"this step has {step.new_tokens} new tokens")
        batch, context = step.batch, step.context
    if batch is None or context is None:
        raise ValueError("serve() needs a Step (sr.Step(batch, context=...)) or batch= and "
                         "context=")
    B = as_dimension(batch, "batch")
    S = as_dimension(context, "context")
    changes = {"w_bytes": width(weights, "weights")}
    if kv is not None:
        changes["kv_bytes"] = width(kv, "KV")
    m = model.replace(**changes)
    cv = as_conventions(conventions)
    with using(cv):  # the rows' counts and the collectives' ring factor read it
        lay, sizes = serving_layout(m, mesh, B, S, layout, d)
        ops = m.ops(B, 1, S - 1, last_only=True, attention="fused")
        rows, layer = shard_layers(ops, lay, mesh, sizes, act_bytes=m.act_bytes)
    kv_ways = ways(lay.rule("attn/core").kv, mesh)
    memory = {"weights": m.params * m.w_bytes / mesh.n_chips,
              "kv": B * m.kv_cache_bytes(S) / kv_ways}
    return ServePlan(m, mesh, B, S, weights, kv or _name(m.kv_bytes), rows, memory,
                     compute_dtype, layout=layout, d_axes=d, layer_comm=layer, partitions=lay,
                     conventions=cv)


def _si(x: Any, unit: str) -> str:
    """SI text of a number, the expression itself where it is symbolic."""
    return fmt_si(x, unit) if sp.sympify(x).is_number else str(x)


def _name(w: sp.Expr) -> str:
    return {2: "bf16", 1: "int8", 4: "fp32"}.get(w, str(w))
