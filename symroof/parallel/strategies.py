"""Training plans: a model, a mesh and a parallelism strategy mapped onto named mesh axes
(book ch. 5 "How to Parallelize a Transformer for Training", ch. 6, ch. 12 "Rooflines for
LLM Scaling on GPUs").

``train_plan(model, mesh, strategy="fsdp+tp", batch_tokens=..., fsdp=("X", "Y"), tp="Z")``
works out, **per chip**: the compute and collectives of the whole step (the model's
training rows, :func:`symroof.train_ops`, sharded by the strategy's roles) and of the
layer every condition is solved from (one whole layer of those rows, or the book's MLP
block under the conventions' ``condition_layer = "mlp_block"``), the memory
(:func:`symroof.models.training_memory.train_memory`, each part divided by the degrees
that shard it), the step-time bounds and
which bound binds, and the conditions (:mod:`symroof.parallel.conditions`). Roles and
strategies: :mod:`symroof.parallel.layout`; counting conventions: :mod:`symroof.parallel.rows`.

>>> import symroof as sr
>>> plan = sr.train_plan("llama-3.1-70b", sr.mesh("tpu-v5p", "16x16x16"), strategy="fsdp+tp",
...                      batch_tokens=4 * 2**20, seq=4096, fsdp=("Y", "Z"), tp="X")
>>> plan.degrees, plan.fits
({'dp': 1, 'fsdp': 256, 'tp': 16, 'pp': 1, 'ep': 1}, True)
>>> print(plan)
llama-3.1-70b on tpu-v5p 16x16x16 (4096 chips): fsdp+tp (fsdp: Y,Z; tp: X)
  batch 4.19 M tokens, seq 4096, remat full
  memory per chip 1.85 GB of 96 GB (weights and optimizer 207 MB, activations 1.64 GB)
  step 1.44 s .. 3.61 s (compute-bound); forward network-bound, backward compute-bound
>>> print(plan.conditions["tp"])                  # 16-way TP on one axis: comms-bound
tp: Y < 11.06 (plan: 16): does not hold
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import sympy as sp

from ..analysis import TimeBound
from ..conventions import Conventions, as_conventions, using
from ..cost import Cost, as_dimension
from ..hardware.collectives import collective
from ..hardware.mesh import Mesh
from ..models.training_memory import REMAT_POLICIES, remat_recompute, train_memory
from ..models.transformer import Transformer
from ..render import fmt_si
from ..timerule import SYMPY, combine
from ..workload import TrainStep
from .conditions import derive
from .layout import (
    ROLES,
    assign_axes,
    check_degrees,
    check_experts,
    parse_strategy,
    role_axes,
    role_links,
)
from .rows import condition_rows, pass_times, step_rows
from .train_rows import stage_state, train_rows

__all__ = ["TrainPlan", "train_plan", "plan_memory", "STRATEGIES", "EP_STRATEGIES",
           "BatchSplitError"]

#: the strategies ``strategy_search`` compares by default (here, not in the search, so that
#: naming them does not load NumPy)
STRATEGIES = ("dp", "zero1", "zero2", "zero3", "tp", "fsdp+tp", "zero1+tp", "pp", "zero1+pp",
              "zero1+tp+pp", "dp+fsdp", "dp+fsdp+tp")
#: the strategies with expert parallelism, also searched by default for a mixture of experts
EP_STRATEGIES = ("ep", "fsdp+ep", "zero1+ep", "fsdp+tp+ep", "zero1+tp+ep", "zero1+pp+ep")


def plan_memory(model: Any, B: Any, seq: Any, remat: Any, n: dict, z: tuple,
                widths: Mapping[str, Any]) -> dict[str, sp.Expr]:
    """Per-chip bytes: :func:`train_memory` of the whole model, each of its parameter parts
    times s = P_own/P, the parameters of the pipeline's last stage
    (:meth:`~symroof.models.blocks.Blocks.stage_params`: its ceil(L/Z) layers and the head,
    the stage that holds the most) with its routed experts / Z_e: params s / (Y X_fsdp^z3),
    grads s / (Y X_fsdp^z2), master and moments s / (Y X_fsdp^z1); activations
    / (X Y Z Z_e) (the average stage's); ``remat`` an int n keeps n checkpoints of width D
    per layer (book ch. 6: 2 D B n L)."""
    policy = "full" if isinstance(remat, int) else remat
    mem = train_memory(model, B / seq, seq, policy, **widths)
    if isinstance(remat, int):
        mem["activations"] = model.act_bytes * model.D * B * remat * model.L
    X, Y, Z, Ze, f = n["dp"] * n["fsdp"], n["tp"], n["pp"], n["ep"], n["fsdp"]
    z1, z2, z3 = z
    s = stage_state(model, Z, Ze)  # the last stage's parameters, its experts over Z_e
    return {"params": s * mem["params"] / (Y * f**z3),
            "grads": s * mem["grads"] / (Y * f**z2),
            "master": s * mem["master"] / (Y * f**z1),
            "moments": s * mem["moments"] / (Y * f**z1),
            "activations": mem["activations"] / (X * Y * Z * Ze)}


def _check_remat(remat: Any) -> Any:
    """A remat policy name, n checkpoints per layer, or a tuple of kept tensors (its names
    checked against :data:`~symroof.models.training_memory.TENSORS`; a list becomes a tuple).

    >>> _check_remat(["layer_input", "mlp/gate", "mlp/up"])
    ('layer_input', 'mlp/gate', 'mlp/up')
    >>> _check_remat(("layer_input", "mlp/gates"))
    Traceback (most recent call last):
    ...
    ValueError: remat=layer_input,mlp/gates: unknown tensor(s) mlp/gates; a kept-tensor ...
    """
    if isinstance(remat, (tuple, list)):
        remat_recompute(tuple(remat))  # the names: a clear error naming the known ones
        return tuple(dict.fromkeys(remat))
    if isinstance(remat, bool) or not (remat in REMAT_POLICIES or
                                       (isinstance(remat, int) and remat >= 1)):
        raise ValueError(f"remat must be a policy ({', '.join(REMAT_POLICIES)}), a number "
                         f"of checkpoints per layer (book ch. 6) or a tuple of kept tensors, "
                         f"got {remat!r}")
    return remat


@dataclass(frozen=True)
class TrainPlan:
    """One training step of ``model`` on ``mesh`` under ``strategy``, per chip.

    ``layer``: the layer the conditions are solved from (forward and backward rows: one
    whole layer of the model, or the book's MLP block, by ``conventions``); ``step``: the
    whole model;
    ``memory``: bytes per chip; ``time``: per pass ``TimeBound`` (its t_net the slowest
    role's collectives); ``lower``/``upper``: the step's bounds, perfect overlap (the sum
    of the passes' max terms) and none at all (compute plus every collective, one after
    another); ``conditions``: the solved thresholds.
    """

    model: Any
    mesh: Mesh
    strategy: str
    axes: dict[str, tuple[str, ...]]
    zero: int
    batch_tokens: Any
    seq: Any
    microbatches: Any
    remat: Any
    layer: dict[str, Cost]
    memory: dict[str, sp.Expr]
    dtype: str = "bf16"
    overlap_axes: bool = True
    widths: dict = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    conventions: Conventions = field(default_factory=as_conventions)
    build_step: Any = field(default=None, repr=False, compare=False)  # () -> the step's rows

    @functools.cached_property
    def step(self) -> dict[str, Cost]:
        """The whole step's rows per chip, built when first read (a plan asked only for its
        conditions, which read ``layer``, never builds them)."""
        with using(self.conventions):
            return self.build_step()

    @property
    def degrees(self) -> dict[str, Any]:
        return {r: self.mesh.size(self.axes[r]) if self.axes[r] else 1 for r in ROLES}

    @property
    def n_chips(self) -> Any:
        return self.mesh.n_chips

    @property
    def bubble(self) -> sp.Expr:
        """GPipe's idle fraction (Z - 1)/(N_mb + Z - 1) (not in the book; 0 without stages)."""
        Z = self.degrees["pp"]
        return sp.sympify(Z - 1) / (self.microbatches + Z - 1)

    @functools.cached_property
    def time(self) -> dict[str, TimeBound]:
        """Per pass ("forward", "backward"): the step's time bounds on the mesh."""
        stretch = 1 / (1 - self.bubble)
        with using(self.conventions):
            return pass_times(self.step, self.mesh.chip, self.dtype, bubble=stretch,
                              overlap_axes=self.overlap_axes)

    @property
    def lower(self) -> sp.Expr:
        """Step time with perfect overlap inside each pass, seconds."""
        return sum(t.lower for t in self.time.values())

    @property
    def upper(self) -> sp.Expr:
        """Step time with no overlap at all (every collective after the compute and after
        each other), seconds."""
        return sum(combine([t.t_math, t.t_mem, t.cost.net_time], SYMPY)[1]
                   for t in self.time.values())

    @property
    def bound(self) -> str:
        """What binds the pass that takes longest: 'compute', 'memory' or 'network'."""
        if not self.lower.is_number:
            return "undetermined"
        return max(self.time.values(), key=lambda t: float(t.lower)).bound

    @property
    def flops(self) -> sp.Expr:
        """FLOPs per chip per step (both passes, recompute included)."""
        return sum(c.flops for k, c in self.step.items() if k.endswith("/compute"))

    @property
    def memory_total(self) -> sp.Expr:
        return sum(self.memory.values())

    @property
    def fits(self) -> bool | None:
        """Whether the per-chip memory fits in HBM (None while symbolic)."""
        ok = sp.sympify(self.memory_total <= self.mesh.chip.hbm_bytes)
        return bool(ok) if ok in (sp.true, sp.false) else None

    @functools.cached_property
    def conditions(self) -> dict[str, Any]:
        """The strategy's thresholds, solved with ``sr.crossover``: name -> Condition."""
        with using(self.conventions):
            return derive(self)

    def __str__(self) -> str:
        axes = "; ".join(f"{r}: {','.join(self.axes[r])}" for r in ROLES if self.axes[r])
        remat = ",".join(self.remat) if isinstance(self.remat, tuple) else self.remat
        head = [f"{self.model.name} on {self.mesh.title} ({self.n_chips} chips): "
                f"{self.strategy} ({axes})",
                f"  batch {_num(self.batch_tokens)} tokens, seq {self.seq}, remat "
                f"{remat}" + (f", {self.microbatches} microbatches, bubble "
                                   f"{_num(self.bubble * 100)}%" if self.axes["pp"] else "")]
        if self.axes["pp"]:  # the step waits on the slowest stage (parallel.train_rows)
            layers = self.model.blocks.last_stage(self.degrees["pp"])["all"]
            head.append(f"  timed on its slowest stage, the last: {_num(layers)} of "
                        f"{self.model.L} layers and the head")
        if not self.lower.is_number:
            return "\n".join(head + ["  (symbolic)"])
        state = self.memory_total - self.memory["activations"]
        mem = (f"  memory per chip {fmt_si(self.memory_total, 'B')} of "
               f"{fmt_si(self.mesh.chip.hbm_bytes, 'B')} (weights and optimizer "
               f"{fmt_si(state, 'B')}, activations {fmt_si(self.memory['activations'], 'B')})"
               + ("" if self.fits else ": does not fit"))
        passes = ", ".join(f"{p} {t.bound}-bound" for p, t in self.time.items())
        step = (f"  step {fmt_si(self.lower, 's')} .. {fmt_si(self.upper, 's')} "
                f"({self.bound}-bound); {passes}")
        return "\n".join([*head, mem, step, *(f"  note: {n}" for n in self.notes)])


def _num(x: Any) -> str:
    return fmt_si(x) if sp.sympify(x).is_number else str(x)


def _batch(value: Any) -> sp.Expr:
    return as_dimension(int(value) if isinstance(value, float) and value.is_integer()
                        else value, "batch_tokens")


def train_plan(model: Transformer | str, mesh: Mesh, strategy: str = "fsdp", *,
               step: TrainStep | None = None, batch_tokens: Any = None, seq: int = 4096,
               dp: Any = None, fsdp: Any = None, tp: Any = None,
               pp: Any = None, ep: Any = None, microbatches: int | None = None,
               remat: Any = "full", widths: Mapping[str, Any] | None = None,
               dtype: str = "bf16", overlap_axes: bool = True,
               conventions: Any = None) -> TrainPlan:
    """Plan one training step; see the module docstring and :class:`TrainPlan`.

    ``strategy``: roles joined by '+' (``dp``, ``zero1``, ``zero2``, ``zero3``/``fsdp``,
    ``tp``, ``pp``, ``ep``); ``dp=``, ``fsdp=``, ``tp=``, ``pp=``, ``ep=`` give each role's
    mesh axes (one role left out takes the rest). ``ep`` (expert parallelism) needs a
    mixture of experts whose E experts its degree divides. ``step``: a
    :class:`~symroof.TrainStep` (sequences and seq), or ``batch_tokens``: global batch
    in tokens (a number, or a symbol for formulas), whole sequences of ``seq`` tokens,
    divisible by the data degree X Z_e (dp x fsdp x ep; times ``microbatches``, default
    4 x stages, under a pipeline). ``remat``: a :data:`REMAT_POLICIES` name, n
    checkpoints per layer, or a tuple of the tensors each layer keeps (``("layer_input",
    "mlp/gate", "mlp/up")``; :mod:`symroof.models.training_memory`). ``widths``: byte widths for
    :func:`train_memory` (``grad_bytes=0`` is the book's 10 bytes per parameter).
    ``overlap_axes``: collectives on different roles' axes overlap each other (the book's
    current ch. 5); False adds them (its earlier revision). ``conventions``: a profile
    name or record (:mod:`symroof.conventions`); "book" solves the conditions from the
    book's MLP block (``condition_layer``) with its ring factor and 10 bytes a parameter.

    >>> import symroof as sr
    >>> sr.train_plan("llama-3.1-8b", sr.mesh("tpu-v5p", "4x4x4"), "dp", batch_tokens=10**6)
    Traceback (most recent call last):
    ...
    ValueError: batch_tokens = 1000000 is not a whole number of sequences of seq = 4096 tokens

    Expert parallelism on a mixture of experts: Mixtral's 8 experts over Z, FSDP on X, Y.
    In the book's MoE MLP block (``conventions="book"``) the data-parallel threshold grows
    by E/k (ch. 12), and EP's two AllToAlls against the expert compute ask for wide experts
    (``F > ...``); in a whole layer, attention's work hides most of them:

    >>> kw = dict(step=sr.TrainStep(1024, 4096), fsdp=("X", "Y"), ep=("Z",))
    >>> book = sr.train_plan(sr.model("mixtral-8x7b"), sr.mesh("tpu-v5p", "8x8x8"),
    ...                      "fsdp+ep", conventions="book", **kw)
    >>> book.degrees["ep"], book.fits
    (8, True)
    >>> print(book.conditions["fsdp"])          # (E/k) alpha/2 per data shard, / Z_e per chip
    fsdp: B/N > 637.5 (plan: 8192): holds
    >>> print(book.conditions["ep"])            # Z_e alpha / 4 on one wrapped axis of 8
    ep: F > 5100 (plan: 14336): holds
    >>> plan = sr.train_plan(sr.model("mixtral-8x7b"), sr.mesh("tpu-v5p", "8x8x8"),
    ...                      "fsdp+ep", **kw)
    >>> print(plan.conditions["fsdp"], plan.conditions["ep"], sep="; ")
    fsdp: B/N > 704.9 (plan: 8192): holds; ep: F > 309.2 (plan: 14336): holds
    """
    from ..models import model as _model

    model = _model(model) if isinstance(model, str) else model
    if not isinstance(mesh, Mesh):
        raise TypeError(f"train_plan() needs a Mesh (sr.mesh(chip, '4x4x4')), got {mesh!r}")
    roles, zero = parse_strategy(strategy)
    check_experts(model, roles, strategy)
    try:
        axes = assign_axes(mesh, roles, {"dp": dp, "fsdp": fsdp, "tp": tp, "pp": pp, "ep": ep})
    except ValueError as err:
        raise ValueError(f"strategy {strategy!r} on {mesh.title}: {err}") from None
    n = {r: mesh.size(axes[r]) if axes[r] else 1 for r in ROLES}
    check_degrees(model, n)
    if step is not None:
        if batch_tokens is not None:
            raise ValueError("give a TrainStep or batch_tokens=, not both")
        batch_tokens, seq = step.tokens, step.seq
    if batch_tokens is None:
        raise ValueError("train_plan() needs a TrainStep (sr.TrainStep(sequences, seq)) or "
                         "batch_tokens=")
    B, seq, remat = _batch(batch_tokens), as_dimension(seq, "seq"), _check_remat(remat)
    if microbatches is None:
        microbatches = 4 * n["pp"] if "pp" in roles else 1
    elif "pp" not in roles and microbatches != 1:
        raise ValueError(f"microbatches={microbatches!r} needs a pipeline (a 'pp' role)")
    m = as_dimension(microbatches, "microbatches")
    X = n["dp"] * n["fsdp"] * n["ep"]
    notes = _check_batch(B, seq, X, m) + tuple(
        f"{r} mixes DCN and ICI axes ({','.join(axes[r])}): its collectives add the "
        "bandwidths (optimistic: the DCN share of the group waits on DCN)"
        for r in roles if len({mesh[a].kind == "dcn" for a in axes[r]}) > 1)
    z = tuple(int(zero >= level) for level in (1, 2, 3))
    links = role_links(mesh, axes)

    def make(kind: str, role: str, V: Any, count: Any) -> Any:
        names = role_axes(axes, role)  # a role's axes ("dp+ep": dp's and ep's)
        if not names or count == 0 or mesh.size(names) == 1:
            return None
        if kind == "send":
            k, lat = links[role]
            return Cost(net_bytes=count * V, net_time=count * sp.Max(lat, V * k))
        c = collective(kind, mesh, V, names)
        return c if count == 1 else count * c

    widths = dict(widths or {})
    with using(conventions) as conv:
        train_rows(model, seq, remat)  # a model train_ops refuses fails here, not at .step
        return TrainPlan(model=model, mesh=mesh, strategy=strategy, axes=axes, zero=zero,
                         batch_tokens=B, seq=seq, microbatches=m, remat=remat,
                         layer=condition_rows(model, B, seq, n, z, make),
                         memory=plan_memory(model, B, seq, remat, n, z, widths), dtype=dtype,
                         overlap_axes=overlap_axes, widths=widths, notes=notes,
                         conventions=conv,
                         build_step=lambda: step_rows(model, B, seq, remat, n, m, z, make))


class BatchSplitError(ValueError):
    """A global batch that does not divide over the data degree (times microbatches):
    ``batch``, ``seq`` and ``width`` (data degree x microbatches) in tokens, sequences and
    shards, and the nearest whole-sequence batches that divide, ``below`` (0: none) and
    ``above``.

    >>> err = BatchSplitError(2**22, 4096, 560, 1)
    >>> err.below // 4096, err.above // 4096
    (1015, 1050)
    """

    def __init__(self, batch: int, seq: int, width: int, microbatches: int) -> None:
        self.batch, self.seq, self.width = batch, seq, width * microbatches
        self.degree, self.microbatches = width, microbatches
        step = math.lcm(self.width, seq)
        self.below, self.above = batch // step * step, -(-batch // step) * step
        times = f" times microbatches = {microbatches}" if microbatches != 1 else ""
        nearest = " or ".join(f"{b} ({b // seq} sequences)" for b in (self.below, self.above)
                              if b)
        super().__init__(f"batch_tokens = {batch} is not divisible by the data-parallel width "
                         f"{width} (dp x fsdp x ep){times}; the nearest whole-sequence "
                         f"batches that are: {nearest}")


def _check_batch(B: sp.Expr, seq: sp.Expr, X: Any, m: Any) -> tuple[str, ...]:
    """Whole sequences, divisible by the data degree (times microbatches); a note where the
    data degree exceeds the sequences (the plan then also shards sequences)."""
    if not (B.is_number and sp.sympify(X).is_number):
        return ()
    if B % seq:
        raise ValueError(f"batch_tokens = {B} is not a whole number of sequences of "
                         f"seq = {seq} tokens")
    if B % (X * m):
        raise BatchSplitError(int(B), int(seq), int(X), int(m))
    sequences = B // seq
    if X > sequences:
        return (f"data degree {X} > {sequences} sequences: each sequence is split "
                f"{math.ceil(X / sequences)} ways (sequence/context parallelism, book ch. 5); "
                "attention then needs ring attention or KV gathers, not modelled",)
    return ()
