"""Serving in the book's units (ch. 2, 7 and 8): a model known only by its parameters and
KV bytes per token, a prefill on a slice at an MFU, and the decode step's ICI condition.

- ``serve_params``: a decode step of ``P`` parameters (2 B P FLOPs, every parameter a
  matmul weight read once) and ``B S KV_tok`` bytes of KV cache, as a :class:`ServePlan`
  whose whole cost ``sr.time(cost, mesh, per_chip=False)`` spreads evenly over the mesh
  (no collectives: nothing is known of the layers);
- ``prefill``: one forward pass over ``prompt`` tokens of ``batch`` sequences on a mesh;
  its time at an MFU is the FLOPs per chip over C x MFU (the book's TTFT, 2 P T / (N C
  MFU), is ``book_time`` beside it), its roofline at peak says whether it is compute-bound;
- ``ici_condition``: the mesh width Y at which a memory-bound decode matmul, its weights
  split over F, turns ICI-bound, Y < F / (B beta) with beta = W_hbm / W_ici (ch. 7), solved
  with ``sr.crossover`` from ``sr.shard_matmul`` on a ring of the plan's chip;
  ``ServePlan.conditions`` includes it as ``"ici"``.

>>> import symroof as sr
>>> plan = sr.serve_params(200e9, sr.mesh("tpu-v4p", "2x4x4"))   # ch. 2: "around 10ms"
>>> print(plan.time)
t_math 45.5 us, t_mem 10.4 ms: 10.4 ms .. 10.5 ms (memory-bound), spread evenly over 32 chips
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sympy as sp

from ..analysis import TimeBound, time
from ..conventions import SYMROOF, Conventions, as_conventions, using
from ..cost import Cost, as_dimension, as_exact
from ..hardware.mesh import Mesh
from ..models.attention_rows import kv_passes
from ..models.rows import mac_flops
from ..render import fmt_si
from ..workload import Step
from .conditions import Condition
from .serving import ServePlan, width
from .serving_2d import ici_condition  # noqa: F401  (its home: below serving)

__all__ = ["ParamModel", "serve_params", "PrefillPlan", "prefill", "ici_condition"]

@dataclass(frozen=True)
class ParamModel:
    """A model known only by its parameter count and KV-cache bytes per token (as stored):
    what ``ServePlan`` reads of a model (``params``, ``w_bytes``, ``kv_bytes_per_token``,
    ``kv_cache_bytes``, ``matmul_params``)."""

    params: sp.Expr
    kv_bytes_per_token: sp.Expr
    w_bytes: sp.Expr
    kv_bytes: sp.Expr
    mla: Any = None

    @property
    def name(self) -> str:
        return f"{fmt_si(self.params)} parameters"

    @property
    def matmul_params(self) -> sp.Expr:
        return self.params

    @property
    def active_params(self) -> sp.Expr:
        return self.params

    def kv_cache_bytes(self, S: Any) -> sp.Expr:
        """The KV cache of one sequence at context S: S x KV bytes per token.

        >>> ParamModel(sp.Integer(10**9), sp.Integer(1000), 2, 2).kv_cache_bytes(4096)
        4096000
        """
        return sp.sympify(S) * self.kv_bytes_per_token


class ParamServePlan(ServePlan):
    """A :class:`ServePlan` of a :class:`ParamModel`: its ``rows`` (and ``cost``) are the
    whole model's, which ``time`` spreads evenly over the mesh (``sr.time(cost, mesh,
    per_chip=False)``, an ideal split with no collectives, and the bound says so); no layers,
    so no layout conditions, and no cap on the batch where there is no KV cache."""

    @property
    def time(self) -> TimeBound:
        return time(self.cost, self.mesh, self.compute_dtype, useful=True, per_chip=False)

    @property
    def conditions(self) -> dict[str, Condition]:
        return {}

    @property
    def warnings(self) -> tuple[str, ...]:
        """None: nothing is known of the heads a split would cut."""
        return ()

    @property
    def max_batch(self) -> Any:
        if self.model.kv_bytes_per_token == 0:
            return sp.oo
        return super().max_batch


def serve_params(params: Any, mesh: Mesh, step: Step | None = None, *, batch: Any = None,
                 context: Any = None, kv_bytes_per_token: Any = 0, weights: str = "bf16",
                 kv: str = "bf16", compute_dtype: str = "bf16",
                 conventions: Any = None) -> ServePlan:
    """A decode step of a model given as ``params`` parameters stored in ``weights`` and
    ``kv_bytes_per_token`` bytes of KV cache a token (in ``kv``): ``step`` (a decode
    :class:`~symroof.Step`) or ``batch`` sequences at ``context`` tokens (default one
    sequence, one token), spread evenly over ``mesh`` (module docstring). ``conventions``
    (a profile name or record; default the one in force): its FLOPs per multiply-add
    (``flops_per_mac``) and KV traffic (``kv_traffic``) price the step, and the plan's title
    names it.

    >>> import symroof as sr
    >>> p = sr.serve_params(30e9, sr.mesh("tpu-v5e", "4x4"), batch=4, context=8192,
    ...                     kv_bytes_per_token=100e3, weights="int8")   # ch. 7's pop quiz
    >>> round(float(p.time.lower) * 1e3, 2)
    2.54
    >>> q = sr.serve_params(30e9, sr.mesh("tpu-v5e", "4x4"), batch=4, context=8192,
    ...                     kv_bytes_per_token=100e3, weights="int8", conventions="llm-analysis")
    >>> q.cost.kv_bytes == 2 * p.cost.kv_bytes, q.conventions.name   # read and written back
    (True, 'llm-analysis')
    """
    if not isinstance(mesh, Mesh):
        raise TypeError(f"serve_params() takes a Mesh (sr.mesh(chip, '4x4')), got {mesh!r}")
    P = as_exact(params, "params")
    kv_tok = as_exact(kv_bytes_per_token, "kv_bytes_per_token")
    for name, v in (("params", P), ("kv_bytes_per_token", kv_tok)):
        if v.is_number and (v < 0 or (name == "params" and v == 0)):
            raise ValueError(f"serve_params(): {name} must be positive, got {v}")
    if step is not None:
        if batch is not None or context is not None:
            raise ValueError("give a Step or batch= and context=, not both")
        if step.new_tokens != 1:
            raise ValueError(f"serve_params() plans one decode step (1 new token per "
                             f"sequence); this step has {step.new_tokens}: for a prompt use "
                             "sr.prefill")
        batch, context = step.batch, step.context
    B = as_dimension(1 if batch is None else batch, "batch")
    S = as_dimension(1 if context is None else context, "context")
    m = ParamModel(P, kv_tok, width(weights, "weights"), width(kv, "KV"))
    with using(conventions) as cv:  # the whole model's rows, every parameter a weight
        rows = {"weights": Cost(flops=mac_flops(B * P), weight_bytes=P * m.w_bytes),
                "kv": Cost(kv_bytes=kv_passes() * B * m.kv_cache_bytes(S),  # passes after
                           kv_store_bytes=(kv_passes() - 1) * B * m.kv_cache_bytes(S))}  # 1: stores
    N = mesh.n_chips
    memory = {"weights": P * m.w_bytes / N, "kv": B * m.kv_cache_bytes(S) / N}
    return ParamServePlan(m, mesh, B, S, weights, kv, rows, memory, compute_dtype,
                          conventions=cv)


@dataclass(frozen=True)
class PrefillPlan:
    """One prefill of ``batch`` sequences of ``prompt`` tokens on ``mesh`` at ``mfu``:
    ``rows`` the model's forward rows (whole), ``time`` their roofline at peak spread evenly
    over the chips (``sr.time(cost, mesh, per_chip=False)``: an ideal split, no
    collectives), ``seconds`` the FLOPs per chip at the MFU, ``book_time`` the book's 2 P B
    T / (N C MFU)."""

    model: Any
    mesh: Mesh
    batch: Any
    prompt: Any
    mfu: sp.Expr
    rows: dict
    compute_dtype: str = "bf16"
    cached: Any = 0
    conventions: Conventions = SYMROOF

    @property
    def n(self) -> Any:
        return self.mesh.n_chips

    @property
    def cost(self) -> Cost:
        return sum(self.rows.values(), Cost())

    @property
    def time(self) -> TimeBound:
        """The roofline at the chip's peak of the cost spread evenly over the chips."""
        return time(self.cost, self.mesh, self.compute_dtype, useful=True, per_chip=False,
                    conventions=self.conventions)

    @property
    def seconds(self) -> sp.Expr:
        """Time to first token at this MFU: FLOPs per chip / (C MFU)."""
        return self.time.t_math / self.mfu

    @property
    def book_time(self) -> sp.Expr:
        """The book's form (ch. 7, 8): 2 P B T / (N C MFU), every parameter a matmul."""
        C = self.mesh.chip.peak(self.compute_dtype)
        return 2 * self.model.params * self.batch * self.prompt / (self.n * C * self.mfu)

    def __str__(self) -> str:
        return (f"prefill of {self.batch} x {self.prompt} tokens, {self.model.name} on "
                f"{self.n} {self.mesh.chip.name}: {fmt_si(self.seconds, 's')} at "
                f"{float(self.mfu):.0%} MFU ({self.time.bound}-bound at peak: "
                f"{fmt_si(self.time.lower, 's')})" + self.conventions.title_part)


def prefill(model: Any, mesh: Mesh, step: Step | None = None, *, prompt: Any = None,
            batch: Any = None, mfu: Any = 1, weights: str = "bf16",
            compute_dtype: str = "bf16", conventions: Any = None) -> PrefillPlan:
    """Plan the prefill of ``batch`` prompts (default 1) of ``prompt`` tokens, or of a
    :class:`~symroof.Step` (``sr.Step(1, new_tokens=8192)``; its cached tokens a prefix
    already in the cache), of ``model`` (a Transformer, a preset name, or a parameter count)
    on ``mesh`` at ``mfu``, under ``conventions`` (a profile name or record; default the
    one in force: the rows are built and timed under it, and the title names it).

    >>> import symroof as sr
    >>> p = sr.prefill("llama-3.1-70b", sr.mesh("tpu-v5e", "4x4"), prompt=8192, mfu=0.4)
    >>> round(float(p.book_time), 2), p.time.bound       # ch. 8: "0.91s" with 70e9
    (0.92, 'compute')
    >>> q = sr.prefill("llama-3.1-70b", sr.mesh("tpu-v5e", "4x4"), sr.Step(1, new_tokens=8192),
    ...                mfu=0.4)
    >>> q.seconds == p.seconds
    True
    """
    from ..models import model as _model

    if not isinstance(mesh, Mesh):
        raise TypeError(f"prefill() takes a Mesh (sr.mesh(chip, '4x4')), got {mesh!r}")
    cached: Any = 0
    if step is not None:
        if batch is not None or prompt is not None:
            raise ValueError("give a Step or batch= and prompt=, not both")
        batch, prompt, cached = step.batch, step.new_tokens, step.cached
    if prompt is None:
        raise ValueError("prefill() needs a Step (sr.Step(batch, new_tokens=T)) or prompt=")
    B = as_dimension(1 if batch is None else batch, "batch")
    T = as_dimension(prompt, "prompt")
    u = as_exact(mfu, "mfu")
    if u.is_number and not 0 < u <= 1:
        raise ValueError(f"prefill(): mfu must be in (0, 1], got {mfu!r}")
    if isinstance(model, str):
        model = _model(model)
    cv = as_conventions(conventions)
    if hasattr(model, "ops"):
        m = model.replace(w_bytes=width(weights, "weights"))
        whole = m.ops(B, T, cached, last_only=True, attention="fused", conventions=cv)
    else:
        try:
            P = as_exact(model, "model")
        except TypeError:
            raise TypeError(f"prefill() takes a Transformer, a preset name or a parameter "
                            f"count, got {model!r}") from None
        m = ParamModel(P, sp.Integer(0), width(weights, "weights"), sp.Integer(2))
        with using(cv):
            whole = {"weights": Cost(flops=mac_flops(B * T * P), weight_bytes=P * m.w_bytes)}
    return PrefillPlan(m, mesh, B, T, u, whole, compute_dtype, cached, cv)
