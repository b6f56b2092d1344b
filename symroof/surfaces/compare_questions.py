"""The questions ``sr.compare`` asks (:data:`QUESTIONS`): for each, the ``Setting`` fields
it reads, the ones it needs, its columns, and the function that answers it for one setting,
reading the API that answers the question alone: ``sr.roofline_table`` (the totals
``symroof report`` prints), ``sr.critical_batch`` and ``solve_step`` (``symroof
critical-batch``, ``symroof solve``), ``sr.serve`` and ``cost_per_million_tokens``
(``symroof serve``), ``sr.strategy_search`` (``symroof train``). A new question is one entry.

>>> import symroof as sr
>>> QUESTIONS["critical-batch"].answer(Setting(chip=sr.chip("tpu-v5e")))["b_star"]
9850/41
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..analysis import critical_batch
from ..conventions import SYMROOF, Conventions, using
from ..hardware import Chip, Mesh
from ..hardware.prices import PRICES
from ..models import Transformer
from ..models.table import roofline_table
from ..parallel import cost_per_million_tokens, serve, strategy_search
from ..parallel.serving import width
from ..render import fmt_si
from .solve import solve_step

__all__ = ["Setting", "Column", "Question", "QUESTIONS"]


@dataclass(frozen=True)
class Setting:
    """Everything a question may read: the model, one chip or a mesh, the storage dtypes
    of the weights and the KV cache, the peak's dtype, batch (sequences) and context
    (``train``: the sequence length), a price per chip-hour with its source, and the
    accounting conventions every answer is built under (a :class:`Conventions` record)."""

    model: Transformer | None = None
    chip: Chip | None = None
    mesh: Mesh | None = None
    weights: str = "bf16"
    kv: str | None = None
    dtype: str = "bf16"
    batch: int | None = None
    context: int | None = None
    price: Any = None
    price_source: str = "command line"
    conventions: Conventions = SYMROOF

    def on_chip(self) -> Chip:
        """The chip: the one given, else the mesh's.

        >>> import symroof as sr
        >>> Setting(mesh=sr.mesh("tpu-v5e", "2x2")).on_chip().name
        'tpu-v5e'
        """
        if self.chip is None and self.mesh is None:
            raise ValueError("this question needs a chip (--chip or --chips) or a mesh "
                             "(--mesh or --meshes)")
        return self.chip if self.chip is not None else self.mesh.chip

    def weights_model(self) -> Transformer:
        """The model with the weights (and the KV cache, if given) stored as asked.

        >>> import symroof as sr
        >>> Setting(model=sr.model("tiny"), weights="int4").weights_model().w_bytes
        1/2
        """
        m = self.model
        changes = {"w_bytes": width(self.weights, "weights")}
        if self.kv is not None:
            changes["kv_bytes"] = width(self.kv, "KV")
        return m.replace(**changes)


@dataclass(frozen=True)
class Column:
    """One column: its key in the cells, its header, its unit (fmt_si's), and whether the
    plot draws it (columns drawn together share a unit)."""

    key: str
    header: str
    unit: str = ""
    plotted: bool = False


# -- the questions: each reads the API that answers it alone ------------------------------
def _step(s: Setting, prefill: bool) -> dict[str, Any]:
    chip = s.on_chip() if s.mesh is None else None
    if chip is None:
        if prefill:
            raise ValueError("a prefill step on a mesh is not modelled (as in symroof report "
                             "--mesh): compare chips (--chips, --chip) for a prefill")
        plan = serve(s.model, s.mesh, batch=s.batch, context=s.context, weights=s.weights,
                     kv=s.kv, compute_dtype=s.dtype)
        t = plan.time
        return {"t_math": t.t_math, "t_mem": t.t_mem, "t_net": t.t_net, "lower": t.lower,
                "upper": t.upper, "bound": t.bound,
                "notes": () if plan.fits else (_no_fit(plan),)}
    T = s.context if prefill else 1
    table = roofline_table(s.weights_model(), chip, batch=s.batch, new_tokens=T,
                           cached=s.context - T, dtype=s.dtype)
    total, (lower, upper) = table.as_dict()["total"], table.bounds
    return {"t_math": total["t_math_s"], "t_mem": total["t_mem_s"], "t_net": None,
            "lower": lower, "upper": upper, "bound": total["bound"],
            "per_op_sum": table.per_op_sum, "notes": table.warnings}


def _no_fit(plan: Any) -> str:
    return (f"does not fit: {fmt_si(plan.hbm_used, 'B')} per chip of "
            f"{fmt_si(plan.mesh.chip.hbm_bytes, 'B')}")


def _critical(s: Setting) -> dict[str, Any]:
    c = s.on_chip()
    out = {"ridge": c.critical_intensity(s.dtype),
           "b_star": critical_batch(c, dtype=s.dtype, w_bytes=width(s.weights, "weights"))}
    if s.model is not None:
        if s.context is None:
            raise ValueError("the decode step's critical batch needs a context (--context)")
        sol = solve_step("t_math = t_mem", "batch", s.weights_model(), chip=c, dtype=s.dtype,
                         context=s.context)
        out["b_decode"] = sol.root if sol.root is not None else "never"
    return out


def _price(s: Setting) -> tuple[Any, str] | None:
    """The price of a chip-hour and its source: the one given, else the one on record."""
    if s.price is not None:
        return s.price, s.price_source
    p = PRICES.get(s.mesh.chip.name)
    return (p.usd_per_chip_hour, p.cited) if p else None


def _serve(s: Setting) -> dict[str, Any]:
    if s.mesh is None:
        raise ValueError("a serving plan shards over a mesh: give --mesh CHIP:SHAPE or "
                         "--meshes")
    plan = serve(s.model, s.mesh, batch=s.batch, context=s.context, weights=s.weights,
                 kv=s.kv, compute_dtype=s.dtype)
    out = {"chips": plan.n, "hbm_used": plan.hbm_used, "fits": plan.fits,
           "max_batch": plan.max_batch}
    price = _price(s)
    if plan.fits:
        out.update(lower=plan.time.lower, bound=plan.time.bound,
                   tokens_per_s_per_chip=plan.tokens_per_s_per_chip,
                   usd_per_mtok=cost_per_million_tokens(plan, *price) if price else None)
    out["notes"] = (f"${float(price[0]):.2f} per chip-hour ({price[1]})",) if price and \
        plan.fits else () if plan.fits else (_no_fit(plan),)
    return out


def _train(s: Setting) -> dict[str, Any]:
    if s.mesh is None:
        raise ValueError("a training plan needs a mesh: give --mesh CHIP:SHAPE or --meshes")
    # batch sequences of context tokens a step, as ``symroof train --batch`` counts them
    res = strategy_search(s.model, s.mesh, batch_tokens=s.batch * s.context, seq=s.context,
                          dtype=s.dtype)
    best = res.choice(0)
    if best["candidate"] is None:
        return {"strategy": "none", "why": best["why"]}
    return {"strategy": str(best["candidate"]), "lower": best["lower"],
            "upper": best["upper"], "bound": best["bound"], "memory": best["memory"]}


@dataclass(frozen=True)
class Question:
    """A question: the ``Setting`` fields it reads (an axis over any other is refused),
    those it needs, its columns, and the function that answers it for one setting."""

    name: str
    what: str
    reads: tuple[str, ...]
    needs: tuple[str, ...]
    columns: tuple[Column, ...]
    answer: Callable[[Setting], dict[str, Any]]
    plot_label: str = "time per step"
    #: whether the answer follows the setting's conventions (else only symroof's is taken)
    conventions: bool = True

    def ask(self, s: Setting) -> dict[str, Any]:
        """The answer for ``s``, under ``s.conventions`` (the one place a question puts the
        record in force; the APIs it calls read it).

        >>> import dataclasses, symroof as sr
        >>> s = Setting(model=sr.model("tiny"), chip=sr.chip("h100"), batch=1, context=16)
        >>> peer = dataclasses.replace(s, conventions=sr.profile("llm-analysis"))
        >>> t = sr.roofline_table(sr.model("tiny"), "h100", batch=1, new_tokens=1, cached=15,
        ...                       conventions="llm-analysis")
        >>> QUESTIONS["decode"].ask(peer)["lower"] == t.bounds[0] != QUESTIONS["decode"].ask(
        ...     s)["lower"]
        True
        """
        if not self.conventions and s.conventions != SYMROOF:
            raise ValueError(f"the {self.name} question does not apply conventions yet (its "
                             "numbers are symroof's); the questions that do: "
                             + ", ".join(k for k, q in QUESTIONS.items() if q.conventions))
        with using(s.conventions):
            return self.answer(s)


_TIMES = (Column("t_math", "t_math", "s", True), Column("t_mem", "t_mem", "s", True),
          Column("t_net", "t_net", "s", True), Column("lower", "step (max)", "s"),
          Column("upper", "step (sum)", "s"), Column("bound", "bound"))
_STEP = ("model", "chip", "mesh", "weights", "kv", "dtype", "batch", "context")
#: question -> its entry (``symroof compare --question``; ``--phase`` names the first two)
QUESTIONS: dict[str, Question] = {
    "decode": Question(
        "decode step", "one decode step (per chip on a mesh: sr.serve's plan)", _STEP,
        ("model", "batch", "context"), _TIMES + (Column("per_op_sum", "per-op sum", "s"),),
        lambda s: _step(s, prefill=False)),
    "prefill": Question(
        "prefill", "one prefill of the whole context (one chip)", _STEP,
        ("model", "batch", "context"), _TIMES + (Column("per_op_sum", "per-op sum", "s"),),
        lambda s: _step(s, prefill=True)),
    "critical-batch": Question(
        "critical batch", "the batch where a matmul turns compute-bound (and, with a model "
        "and a context, the decode step)",
        ("model", "chip", "mesh", "weights", "kv", "dtype", "context"), (),
        (Column("ridge", "C/W", "FLOP/B"), Column("b_star", "B* matmul", "", True),
         Column("b_decode", "B decode t_math = t_mem", "", True)), _critical,
        "batch B (sequences)", conventions=False),
    "serve": Question(
        "serving plan", "one decode step sharded over a mesh (sr.serve)", _STEP + ("price",),
        ("model", "batch", "context"),
        (Column("chips", "chips"), Column("hbm_used", "HBM/chip", "B"),
         Column("max_batch", "max batch"), Column("lower", "step", "s"),
         Column("bound", "bound"), Column("tokens_per_s_per_chip", "tokens/s/chip", "", True),
         Column("usd_per_mtok", "$/Mtok", "$")), _serve, "tokens/s per chip"),
    "train": Question(
        "training plan", "the fastest training strategy that fits (sr.strategy_search)",
        ("model", "mesh", "dtype", "batch", "context"), ("model", "batch", "context"),
        (Column("strategy", "strategy"), Column("lower", "step (max)", "s", True),
         Column("upper", "step (sum)", "s", True), Column("bound", "bound"),
         Column("memory", "memory/chip", "B"), Column("why", "why none")), _train),
}
