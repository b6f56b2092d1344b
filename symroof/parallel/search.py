"""Search strategies and splits: the fastest (strategy, split of the mesh axes into roles)
for a model at each global batch, among those that fit in HBM and divide the batch (with
TP no wider than the query heads, no more stages than layers, and EP degrees that divide
the experts).

One symbolic template of the whole step (:mod:`symroof.parallel.rows`, with each role's
degree, seconds per byte and latency left as symbols) is compiled once by ``sr.evaluate``
and evaluated over a (batch x candidate) grid in NumPy: no Python loop over
configurations. A candidate is a strategy with every mesh axis given to one of its roles;
its numbers (degrees, links from ``sr.all_gather`` and ``sr.all_to_all`` on the mesh, ZeRO
flags, microbatches) are the template's arguments, so the answer equals ``train_plan`` of
the same split. A mixture of experts is also searched with expert parallelism
(:data:`EP_STRATEGIES`).

>>> import symroof as sr
>>> print(strategy_search("llama-3.1-405b", sr.mesh("tpu-v5e", "2x2"), batch_tokens=4096))
llama-3.1-405b on tpu-v5e 2x2, 14 splits x 1 batches:
  4.1 k tokens: does not fit: needs 4.89 TB = 306 chips; no slice on record has them
>>> moe = strategy_search("mixtral-8x7b", sr.mesh("tpu-v5p", "4x4x8"), batch_tokens=2**22)
>>> print(moe)                     # ep splits too; compute-bound ties go to the least memory
mixtral-8x7b on tpu-v5p 4x4x8, 73 splits x 1 batches:
  4.19 M tokens: zero3 on 4x4x8 (fsdp: X,Y,Z): 7.57 s .. 10.6 s (compute-bound)
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy as sp

from ..conventions import current
from ..evaluate import NUMPY, evaluate, free_symbols
from ..hardware.mesh import Mesh
from ..models.transformer import Transformer
from ..render import fmt_si
from ..symbols import B as _B
from ..timerule import combine
from .inverse import min_chips
from .layout import (
    JOINT,
    ROLES,
    SYM,
    a2a_link,
    allreduce_latency,
    check_experts,
    mesh_text,
    parse_strategy,
    role_axes,
    role_links,
)
from .rows import pass_times, step_rows, template_make
from .strategies import EP_STRATEGIES, STRATEGIES, _check_remat, plan_memory, train_plan

__all__ = ["STRATEGIES", "EP_STRATEGIES", "Candidate", "SearchResult", "strategy_search",
           "candidates", "template", "BOUNDS", "Nearby", "nearby"]

BOUNDS = ("compute", "memory", "network")


@dataclass(frozen=True)
class Candidate:
    """A strategy with each mesh axis given to one of its roles."""

    mesh: Mesh
    strategy: str
    axes: dict
    zero: int
    microbatches: int

    @property
    def degrees(self) -> dict[str, int]:
        return {r: self.mesh.size(self.axes[r]) if self.axes[r] else 1 for r in ROLES}

    def args(self) -> dict[str, float]:
        """The template's arguments for this candidate."""
        links = role_links(self.mesh, self.axes)
        out = {f"n_{r}": float(d) for r, d in self.degrees.items()}
        out.update({f"k_{r}": float(links[r][0]) for r in ROLES})
        out.update({f"lat_{r}": float(links[r][1]) for r in ROLES})
        out.update({f"lar_{r}": float(allreduce_latency(self.mesh, self.axes[r]))
                    for r in ROLES})
        joint = role_axes(self.axes, JOINT)  # the gradient AllReduce over dp and ep together
        out.update({"k_dp_ep": float(links[JOINT][0]), "lat_dp_ep": float(links[JOINT][1]),
                    "lar_dp_ep": float(allreduce_latency(self.mesh, joint))})
        out["a_ep"] = float(a2a_link(self.mesh, self.axes["ep"]))
        out.update({f"z{i}": float(self.zero >= i) for i in (1, 2, 3)})
        out["n_mb"] = float(self.microbatches)
        return out

    def __str__(self) -> str:
        shape = "x".join(str(a.size) for a in self.mesh.axes)
        axes = "; ".join(f"{r}: {','.join(self.axes[r])}" for r in ROLES if self.axes[r])
        return f"{self.strategy} on {shape} ({axes})"


def candidates(mesh: Mesh, strategies: Sequence[str] = STRATEGIES,
               microbatches: int | None = None) -> list[Candidate]:
    """Every way to give each axis of ``mesh`` to one role of each strategy (every role
    gets at least one axis, and no role mixes DCN with ICI axes: ``sr.all_gather`` would
    add their bandwidths, where a real group waits on DCN); pipelines run ``microbatches``
    (default 4 x stages)."""
    out = []
    for strategy in strategies:
        roles, zero = parse_strategy(strategy)
        for owner in itertools.product(roles, repeat=len(mesh.axes)):
            if set(owner) != set(roles):
                continue
            axes = {r: tuple(a for a, o in zip(mesh.names, owner) if o == r) for r in ROLES}
            if any(_mixes_dcn(mesh, axes[r]) for r in roles):
                continue  # one collective over DCN and ICI axes is not priced faithfully
            Z = mesh.size(axes["pp"]) if axes["pp"] else 1
            m = (microbatches or 4 * Z) if "pp" in roles else 1
            out.append(Candidate(mesh, strategy, axes, zero, m))
    return out


def _mixes_dcn(mesh: Mesh, axes: tuple[str, ...]) -> bool:
    kinds = {mesh[a].kind == "dcn" for a in axes}
    return len(kinds) > 1


def template(model: Any, chip: Any, seq: int, remat: Any, widths: tuple, dtype: str,
             overlap_axes: bool) -> dict[str, sp.Expr]:
    """The step's per-pass terms and per-chip memory as expressions of B (tokens) and the
    template symbols: ``{f,b}_{math,mem,net}`` (net: the slowest role's collectives),
    ``{f,b}_serial`` (all collectives added), ``memory`` (per chip) and ``whole`` (every
    byte of the run, unsharded); under the conventions in force."""
    return _template(model, chip, seq, remat, widths, dtype, overlap_axes, current())


@functools.lru_cache(maxsize=32)
def _template(model: Any, chip: Any, seq: int, remat: Any, widths: tuple, dtype: str,
              overlap_axes: bool, conventions: Any) -> dict[str, sp.Expr]:
    n = {r: SYM[f"n_{r}"] for r in ROLES}
    m, z = SYM["n_mb"], (SYM["z1"], SYM["z2"], SYM["z3"])
    rows = step_rows(model, _B, seq, remat, n, m, z, template_make)
    times = pass_times(rows, chip, dtype, bubble=(m + n["pp"] - 1) / m,
                       overlap_axes=overlap_axes)
    out = {}
    for p, t in times.items():
        # factored: the rows' groups share denominators, and fewer terms compile faster
        out.update({f"{p[0]}_math": sp.factor(t.t_math), f"{p[0]}_mem": sp.factor(t.t_mem),
                    f"{p[0]}_net": t.t_net,
                    f"{p[0]}_serial": t.cost.net_time})  # every collective one after another
    out["memory"] = sum(plan_memory(model, _B, seq, remat, n, z, dict(widths)).values())
    one = {r: 1 for r in ROLES}
    out["whole"] = sum(plan_memory(model, _B, seq, remat, one, (0, 0, 0), dict(widths)).values())
    return out


@dataclass(frozen=True)
class SearchResult:
    """Per batch (rows) and candidate (columns): ``lower``/``upper`` step seconds (inf where
    the split does not fit or does not divide the batch), ``memory`` per chip, ``bound``
    codes into ``BOUNDS``; ``best`` the chosen column per batch (-1: none), ``why`` the
    answer where none is chosen."""

    model: Any
    batch: np.ndarray
    candidates: tuple[Candidate, ...]
    lower: np.ndarray
    upper: np.ndarray
    memory: np.ndarray
    bound: np.ndarray
    best: np.ndarray
    why: tuple[str, ...]

    @property
    def points(self) -> int:
        return self.lower.size

    def choice(self, i: int) -> dict[str, Any]:
        """Row ``i``'s answer: candidate, lower, upper, bound (or the reason none fits)."""
        j = int(self.best[i])
        if j < 0:
            return {"batch": int(self.batch[i]), "candidate": None, "why": self.why[i]}
        return {"batch": int(self.batch[i]), "candidate": self.candidates[j],
                "lower": float(self.lower[i, j]), "upper": float(self.upper[i, j]),
                "bound": BOUNDS[self.bound[i, j]], "memory": float(self.memory[i, j])}

    def __str__(self) -> str:
        meshes = {"x".join(str(a.size) for a in c.mesh.axes) for c in self.candidates}
        chip = self.candidates[0].mesh.chip.name
        lines = [f"{self.model.name} on {chip} {', '.join(sorted(meshes))}, "
                 f"{len(self.candidates)} splits x {len(self.batch)} batches:"]
        for i in range(len(self.batch)):
            c = self.choice(i)
            head = f"  {fmt_si(c['batch'])} tokens: "
            if c["candidate"] is None:
                lines.append(head + c["why"])
            else:
                lines.append(head + f"{c['candidate']}: {fmt_si(c['lower'], 's')} .. "
                             f"{fmt_si(c['upper'], 's')} ({c['bound']}-bound)")
        return "\n".join(lines)


def strategy_search(model: Transformer | str, meshes: Mesh | Sequence[Mesh], *, batch_tokens: Any,
                    seq: int = 4096, strategies: Sequence[str] | None = None,
                    remat: Any = "full", widths: Mapping[str, Any] | None = None,
                    microbatches: int | None = None, dtype: str = "bf16",
                    overlap_axes: bool = True) -> SearchResult:
    """The fastest fitting split per batch (module docstring); arguments as ``train_plan``.

    ``batch_tokens``: one batch or an array of them, each a whole number of sequences.
    ``strategies``: default :data:`STRATEGIES`, and :data:`EP_STRATEGIES` for a mixture of
    experts (``ep`` on a dense model fails).

    >>> import symroof as sr
    >>> res = strategy_search("llama-3.1-70b", sr.mesh("tpu-v5p", "4x4x4"),
    ...                       batch_tokens=[2**20, 2**22])
    >>> print(res)
    llama-3.1-70b on tpu-v5p 4x4x4, 42 splits x 2 batches:
      1.05 M tokens: zero3 on 4x4x4 (fsdp: X,Y,Z): 20.5 s .. 26.6 s (compute-bound)
      4.19 M tokens: does not fit: needs 7.56 TB = 79 chips; the smallest slice with them is 4x4x8
    """
    from ..models import model as _model

    model = _model(model) if isinstance(model, str) else model
    if strategies is None:
        strategies = STRATEGIES + (EP_STRATEGIES if model.moe is not None else ())
    for s in strategies:
        check_experts(model, parse_strategy(s)[0], s)
    meshes = [meshes] if isinstance(meshes, Mesh) else list(meshes)
    if not meshes or not all(isinstance(m, Mesh) for m in meshes):
        raise TypeError(f"strategy_search() needs a Mesh or a list of them, got {meshes!r}")
    chip = meshes[0].chip
    if any(m.chip != chip for m in meshes):
        raise ValueError("strategy_search(): every mesh must be of the same chip")
    batch = np.atleast_1d(np.asarray(batch_tokens, dtype=np.int64))
    if batch.ndim != 1 or not (batch > 0).all() or (batch % seq).any():
        bad = batch[(batch <= 0) | (batch % seq != 0)]
        raise ValueError(f"batch_tokens must be positive whole numbers of sequences of "
                         f"seq = {seq} tokens; got {bad[:3].tolist()}")
    return _search(model, tuple(meshes), batch, seq, tuple(strategies), _check_remat(remat),
                   tuple(sorted((widths or {}).items())), microbatches, dtype, overlap_axes)


def _search(model: Any, meshes: tuple, batch: np.ndarray, seq: int, strategies: tuple,
            remat: Any, widths: tuple, microbatches: Any, dtype: str,
            overlap_axes: bool) -> SearchResult:
    """``strategy_search`` on checked arguments (``batch`` in tokens, any integers)."""
    chip = meshes[0].chip
    cands, args = _table(meshes, strategies, microbatches)
    exprs = template(model, chip, seq, remat, widths, dtype, overlap_axes)
    names = {s.name for s in free_symbols(exprs)}
    values = {k: v[None, :] for k, v in args.items() if k in names}
    out = evaluate(exprs, B=batch[:, None].astype(float), **values)
    return _choose(model, chip, batch, cands, out, args)


@dataclass(frozen=True)
class Nearby:
    """What would work where a batch gets no split: the nearest whole-sequence batches
    below and above that get one (``SearchResult.choice`` dicts, or None), and the
    cheapest ``uneven`` split of the batch itself: its data shards differ by a token, the
    step is priced as the batch padded to ``padded`` tokens (``choice`` of that batch on
    that split), ``idle`` the padding's share of the step."""

    below: dict | None
    above: dict | None
    uneven: dict | None


def nearby(model: Transformer | str, meshes: Mesh | Sequence[Mesh], *, batch_tokens: int,
           **kwargs: Any) -> Nearby:
    """The nearest batches with a plan, and an uneven split of this one (:class:`Nearby`);
    arguments as :func:`strategy_search`.

    >>> import symroof as sr
    >>> near = nearby("llama-3.1-70b", sr.mesh("tpu-v5p", "16x20x28"), batch_tokens=2**22)
    >>> near.below["batch"] // 4096, near.above["batch"] // 4096
    (1022, 1025)
    >>> print(near.below["candidate"])          # 448 data shards of 9,344 tokens, TP 20
    fsdp+tp on 16x20x28 (fsdp: X,Z; tp: Y)
    >>> u = near.uneven                          # 560 shards, some a token short
    >>> print(u["candidate"], u["padded"] - u["batch"])
    fsdp+tp on 16x20x28 (fsdp: Y,Z; tp: X) 96
    """
    from ..models import model as _model

    model = _model(model) if isinstance(model, str) else model
    res = strategy_search(model, meshes, batch_tokens=batch_tokens, **kwargs)
    seq = kwargs.get("seq", 4096)
    B = int(res.batch[0])
    cands = res.candidates
    shards = [c.degrees["dp"] * c.degrees["fsdp"] * c.degrees["ep"] * c.microbatches
              for c in cands]
    steps = sorted({math.lcm(w, seq) for w in shards})
    tries = sorted({b for k in steps for b in (B // k * k, -(-B // k) * k) if 0 < b != B})
    out = {"below": None, "above": None}
    if tries:
        near = strategy_search(model, meshes, batch_tokens=tries, **kwargs)
        had = [near.choice(i) for i in range(len(tries)) if near.best[i] >= 0]
        out["below"] = max((c for c in had if c["batch"] < B), key=lambda c: c["batch"],
                           default=None)
        out["above"] = min((c for c in had if c["batch"] > B), key=lambda c: c["batch"],
                           default=None)
    return Nearby(**out, uneven=_uneven(model, res, B, shards, kwargs))


def _uneven(model: Any, res: SearchResult, B: int, shards: list[int], kwargs: dict) -> Any:
    """The cheapest split of ``B`` tokens into data shards that differ by a token."""
    padded = sorted({-(-B // w) * w for w in shards} - {B})
    if not padded:
        return None
    args = dict(seq=4096, strategies=None, remat="full", widths=None, microbatches=None,
                dtype="bf16", overlap_axes=True) | kwargs
    strategies = args["strategies"] or (STRATEGIES + (EP_STRATEGIES if model.moe is not None
                                                      else ()))
    out = _search(model, tuple(dict.fromkeys(c.mesh for c in res.candidates)),
                  np.array(padded, dtype=np.int64), args["seq"], tuple(strategies),
                  _check_remat(args["remat"]), tuple(sorted((args["widths"] or {}).items())),
                  args["microbatches"], args["dtype"], args["overlap_axes"])
    row = {b: i for i, b in enumerate(padded)}
    at = [row.get(-(-B // w) * w) for w in shards]  # each split's padded batch's row
    best = min(((out.lower[i, j], j) for j, i in enumerate(at)
                if i is not None and np.isfinite(out.lower[i, j])), default=None)
    if best is None:
        return None
    j = best[1]
    i = at[j]
    p = int(out.batch[i])
    return {"batch": B, "padded": p, "shards": shards[j], "candidate": out.candidates[j],
            "lower": float(out.lower[i, j]), "upper": float(out.upper[i, j]),
            "bound": BOUNDS[out.bound[i, j]], "memory": float(out.memory[i, j]),
            "idle": (p - B) / p}


@functools.lru_cache(maxsize=64)
def _table(meshes: tuple, strategies: tuple, microbatches: Any) -> tuple[tuple, dict]:
    """The candidates of ``meshes`` and their template arguments, one array per symbol."""
    cands = tuple(c for m in meshes for c in candidates(m, strategies, microbatches))
    if not cands:
        shapes = ", ".join(mesh_text(m) for m in meshes)
        raise ValueError(f"no split of {shapes} serves {', '.join(strategies)}: each role "
                         "needs an axis of its own, and none may mix DCN and ICI axes")
    rows = [c.args() for c in cands]
    return cands, {k: np.array([r[k] for r in rows]) for k in rows[0]}


def _choose(model: Any, chip: Any, batch: np.ndarray, cands: tuple, out: dict,
            args: dict) -> SearchResult:
    # the time rule per pass (symroof.timerule); the upper bound adds every collective
    (lo_f, _, at_f), (lo_b, _, at_b) = (combine([out[f"{p}_{t}"] for t in ("math", "mem", "net")],
                                                NUMPY) for p in "fb")
    lower = lo_f + lo_b
    upper = sum(combine([out[f"{p}_{t}"] for t in ("math", "mem", "serial")], NUMPY,
                        index=False)[1] for p in "fb")
    bound = np.where(lo_b >= lo_f, at_b, at_f)
    fits = out["memory"] <= float(chip.hbm_bytes)
    width = (args["n_dp"] * args["n_fsdp"] * args["n_ep"] * args["n_mb"]).astype(np.int64)
    E = int(model.moe.E) if model.moe is not None else 1
    shape_ok = ((args["n_tp"] <= float(model.H)) & (args["n_pp"] <= float(model.L))
                & (E % args["n_ep"].astype(np.int64) == 0))
    ok = fits & (batch[:, None] % width[None, :] == 0) & shape_ok[None, :]
    timed = np.where(ok, lower, np.inf)
    fastest = timed.min(1, keepdims=True)
    near = ok & (timed <= fastest * (1 + 1e-9))  # ties (ZeRO-1 vs 2): the smaller memory
    best = np.where(ok.any(1), np.where(near, out["memory"], np.inf).argmin(1), -1)
    whole = np.broadcast_to(out["whole"], lower.shape)[:, 0]  # the same for every split
    why = [""] * len(batch)
    for i in np.flatnonzero(~ok.any(1)):  # the batches that get no split, not the splits
        why[i] = _why(chip, bool((fits[i] & shape_ok).any()), float(whole[i]))
    return SearchResult(model, batch, cands, np.where(ok, lower, np.inf),
                        np.where(ok, upper, np.inf), out["memory"], bound, best, tuple(why))


def _why(chip: Any, some_fit: bool, total: float) -> str:
    """Why no split is chosen: none divides the batch, or none fits (and what would)."""
    if some_fit:
        return "no split that fits divides the batch by its data degree (x microbatches)"
    need = min_chips(total, chip)
    where = (f"the smallest slice with them is {need.slice}" if need.slice
             else "no slice on record has them")
    return f"does not fit: needs {fmt_si(total, 'B')} = {need.chips} chips; {where}"


def plan_of(result: SearchResult, i: int, **kwargs: Any) -> Any:
    """The ``train_plan`` of row ``i``'s choice (for a closer look)."""
    j = int(result.best[i])
    if j < 0:
        raise ValueError(result.why[i])
    c = result.candidates[j]
    return train_plan(result.model, c.mesh, c.strategy, batch_tokens=int(result.batch[i]),
                      microbatches=c.microbatches if c.axes["pp"] else None,
                      **{r: c.axes[r] or None for r in ROLES}, **kwargs)
