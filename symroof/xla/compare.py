"""Compare predicted collectives with the ones XLA emitted, case by case.

A prediction is any object or dict with `kind` (HLO spelling: "all-gather", "reduce-scatter",
"all-reduce", "all-to-all", "collective-permute"), `axes` (tuple of mesh-axis names) and
`elements_in` / `elements_out` (per-device element counts of operands / results).

Rules, in the order they are applied:

1. Match: same kind, same *set* of axes (a group is a set of devices, so ("Y", "X") == ("X",
   "Y")), same element counts. Order-insensitive.
2. Dtype: element counts are compared, never bytes, because the CPU backend may upcast bf16
   to f32 before a reduction or a gather (a bf16 matmul gives an `f32[64,256] all-reduce`).
3. Valid alternatives become notes, not disagreements:
   - One all-reduce where the prediction has a reduce-scatter then an all-gather of the
     same array over the same axes (an all-reduce is exactly that pair).
   - One collective of a tuple of pieces (XLA's combiner) where the prediction has as many
     collectives of that kind (or reduce-scatters, for an all-reduce) over the same axes
     whose element counts add up. A tuple that no such group explains is compared piece by
     piece (a note says XLA combined them): a layer's gradients may travel in one tuple
     all-reduce of which a plan predicts only some.
   - XLA's all-reduce (full result) where the prediction has a reduce-scatter over the same
     axes from the same input: XLA then slices its copy; the minimum was the reduce-scatter.
   - One collective over several axes against a chain of the same kind over disjoint axes
     whose union is those axes and whose element counts chain (all-gather over X then Y, in
     either order, for one all-gather over (X, Y); likewise reduce-scatter and all-reduce), in
     either direction. The data that arrive are the same; the cost differs (a chain runs one
     axis at a time), so a note, not a silent match.
   - A predicted all-gather identical to one already matched (a weight re-gathered in the
     backward pass, ZeRO-3): one compiled program may keep the first gather's result.
4. What is left is a disagreement: same kind and axes with other counts ("wrong element
   count"), a prediction with no partner ("missing"), an XLA collective with none
   ("unexpected"; also kept as data in ``OracleReport.unexpected``, to be compared in turn).
   Each line names the case.

>>> p = [{"kind": "reduce-scatter", "axes": ("X",), "elements_in": 16384, "elements_out": 4096}]
>>> o = [{"kind": "all-reduce", "axes": ("X",), "elements_in": 16384, "elements_out": 16384}]
>>> print(compare(p, o, case="C[M, N_X]"))  # doctest: +NORMALIZE_WHITESPACE
C[M, N_X]: OK (0 of 1 predicted collectives matched exactly, 1 note)
  note: C[M, N_X]: XLA chose all-reduce where the minimum is reduce-scatter over (X)
  (16384 elements vs 4096 elements per device)
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .hlo import KINDS


@dataclass(frozen=True)
class OracleReport:
    """The verdict of one case: disagreements (fail) and notes (valid alternatives)."""

    case: str
    disagreements: tuple[str, ...]
    notes: tuple[str, ...]
    matched: int
    predicted: int
    #: XLA's collectives (or tuple pieces) that no prediction explains, as dicts of kind,
    #: axes, elements_in and elements_out: what a plan would have to add
    unexpected: tuple[dict, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.disagreements

    def __str__(self) -> str:
        verdict = "OK" if self.ok else f"{len(self.disagreements)} disagreement(s)"
        head = (
            f"{self.case}: {verdict} ({self.matched} of {self.predicted} predicted collectives"
            f" matched exactly, {len(self.notes)} note{'s' * (len(self.notes) != 1)})"
        )
        return "\n".join(
            [head, *(f"  - {d}" for d in self.disagreements), *(f"  note: {n}" for n in self.notes)]
        )


@dataclass(frozen=True)
class _Rec:
    kind: str
    axes: frozenset[str] | None
    elements_in: int
    elements_out: int
    shown: str = field(compare=False)  # axes as given, for messages
    pieces: int = field(default=1, compare=False)  # operands of a tuple collective
    parts: tuple[tuple[int, int], ...] = field(default=(), compare=False)  # their counts

    def split(self) -> list[_Rec]:
        """A tuple all-gather, reduce-scatter or all-reduce as one record per piece (an
        all-to-all's pieces are one per peer of a single exchange: never split)."""
        if self.pieces == 1 or self.kind == "all-to-all" or len(self.parts) != self.pieces:
            return [self]
        return [_Rec(self.kind, self.axes, i, o, self.shown) for i, o in self.parts]

    def as_dict(self) -> dict:
        return {"kind": self.kind, "axes": None if self.axes is None else tuple(sorted(
            self.axes)), "elements_in": self.elements_in, "elements_out": self.elements_out}

    def __str__(self) -> str:
        return f"{self.kind} over {self.shown} ({self.elements_in} -> {self.elements_out} elements)"


def _get(item: Any, name: str, default: Any = None) -> Any:
    return item.get(name, default) if isinstance(item, dict) else getattr(item, name, default)


def _rec(item: Any, side: str) -> _Rec:
    kind, axes = _get(item, "kind"), _get(item, "axes")
    if kind not in KINDS:
        raise ValueError(f"{side} kind {kind!r} is not one of {KINDS}")
    if axes is not None and (isinstance(axes, str) or not all(isinstance(a, str) for a in axes)):
        raise TypeError(f"{side} axes must be a tuple of mesh-axis names, got {axes!r}")
    if axes is None:
        shown = f"groups {_get(item, 'groups')} ({_get(item, 'note')})"
    else:
        shown = f"({', '.join(axes)})"
    ins = [math.prod(s) for s in _get(item, "operand_shapes", None) or ()]
    outs = [math.prod(s) for s in _get(item, "result_shapes", None) or ()]
    return _Rec(
        kind,
        None if axes is None else frozenset(axes),
        int(_get(item, "elements_in")),
        int(_get(item, "elements_out")),
        shown,
        len(_get(item, "operand_shapes", None) or (1,)),
        tuple(zip(ins, outs)) if len(ins) == len(outs) else (),
    )


def _fused_all_reduce(o: _Rec, preds: list[_Rec]) -> tuple[_Rec, _Rec] | None:
    """A predicted reduce-scatter and all-gather that together are the all-reduce ``o``."""
    for rs in preds:
        if rs.kind == "reduce-scatter" and rs.axes == o.axes and rs.elements_in == o.elements_in:
            for ag in preds:
                if (ag.kind == "all-gather" and ag.axes == o.axes
                        and ag.elements_in == rs.elements_out
                        and ag.elements_out == o.elements_out):
                    return rs, ag
    return None


def _combined(o: _Rec, preds: list[_Rec]) -> list[_Rec] | None:
    """``o.pieces`` predictions over o's axes whose inputs add up to o's (XLA's combiner)."""
    kinds = {o.kind} | ({"reduce-scatter"} if o.kind == "all-reduce" else set())
    pool = [p for p in preds if p.kind in kinds and p.axes == o.axes]
    for group in itertools.combinations(pool, o.pieces):
        if sum(p.elements_in for p in group) == o.elements_in:
            return list(group)
    return None


def _chain(whole: _Rec, pool: list[_Rec]) -> list[_Rec] | None:
    """Records of `pool` that do `whole` step by step over disjoint axes, or None."""

    def extend(done: frozenset[str], count: int, used: list[_Rec]) -> list[_Rec] | None:
        if done == whole.axes and count == whole.elements_out and len(used) > 1:
            return used
        for r in pool:
            if (
                r not in used
                and r.kind == whole.kind
                and r.axes
                and r.elements_in == count
                and r.axes <= whole.axes - done
            ):
                if found := extend(done | r.axes, r.elements_out, [*used, r]):
                    return found
        return None

    if whole.kind not in ("all-gather", "reduce-scatter", "all-reduce") or not whole.axes:
        return None
    return extend(frozenset(), whole.elements_in, [])


def compare(predicted: Iterable[Any], observed: Any, case: str | None = None) -> OracleReport:
    """Check predicted collectives against XLA's, for one case.

    `observed` is an `XlaMatmul` (its case names the report) or a list of `HloCollective`s
    or dicts; `case` overrides the name.
    """
    if case is None:
        case = getattr(observed, "name", "case")
    observed = getattr(observed, "collectives", observed)
    preds = [_rec(p, "predicted") for p in predicted]
    obs = [_rec(o, "observed") for o in observed]
    n_pred, disagreements, notes, matched = len(preds), [], [], 0

    exact: list[_Rec] = []
    matched += _match_exactly(preds, obs, exact)  # 1.
    for o in list(obs):  # 3. an all-reduce for a reduce-scatter + all-gather pair
        if o.kind == "all-reduce" and (pair := _fused_all_reduce(o, preds)):
            notes.append(f"{case}: XLA did the predicted {pair[0]} then {pair[1]} as one "
                         f"all-reduce ({o.elements_in} elements)")
            obs.remove(o)
            preds.remove(pair[0])
            preds.remove(pair[1])
    for o in list(obs):  # 3. one tuple collective for several predicted ones
        if o.pieces > 1 and (group := _combined(o, preds)):
            minimum = ("; the minimum is reduce-scatter" if o.kind == "all-reduce"
                       and any(p.kind == "reduce-scatter" for p in group) else "")
            notes.append(f"{case}: XLA combined the predicted {', '.join(map(str, group))} "
                         f"into one {o.kind} of {o.pieces} pieces over {o.shown}{minimum}")
            obs.remove(o)
            for p in group:
                preds.remove(p)
    for o in list(obs):  # 3. a tuple no group of predictions explains: piece by piece
        if len(pieces := o.split()) > 1:
            notes.append(f"{case}: XLA combined {o.pieces} {o.kind}s over {o.shown} into one "
                         "tuple; compared piece by piece")
            obs.remove(o)
            obs += pieces
    matched += _match_exactly(preds, obs, exact)
    for p in list(preds):  # 3a. all-reduce for reduce-scatter
        for o in obs:
            if (
                p.kind == "reduce-scatter"
                and o.kind == "all-reduce"
                and o.axes == p.axes
                and o.elements_in == p.elements_in == o.elements_out
            ):
                notes.append(
                    f"{case}: XLA chose all-reduce where the minimum is reduce-scatter "
                    f"over {p.shown} ({o.elements_out} elements vs {p.elements_out} "
                    "elements per device)"
                )
                preds.remove(p)
                obs.remove(o)
                break
    for whole_is_predicted, wholes, parts in ((True, preds, obs), (False, obs, preds)):
        for w in list(wholes):  # 3b. one collective over several axes vs a chain
            if steps := _chain(w, parts):
                chain = ", then ".join(map(str, steps))
                notes.append(
                    f"{case}: XLA did the predicted {w} in {len(steps)} steps: {chain}"
                    if whole_is_predicted
                    else f"{case}: XLA did the predicted {len(steps)} steps ({chain}) as one {w}"
                )
                wholes.remove(w)
                for step in steps:
                    parts.remove(step)
    for p in list(preds):  # 3. a repeated gather that one program need not repeat
        if p.kind == "all-gather" and p in exact:
            notes.append(f"{case}: XLA reused the result of the earlier {p} (one compiled "
                         "program keeps the gathered array for the backward pass)")
            preds.remove(p)
    for p in list(preds):  # 4. same kind and axes, other counts
        for o in obs:
            if o.kind == p.kind and o.axes == p.axes:
                disagreements.append(f"{case}: wrong element count: predicted {p}, XLA {o}")
                preds.remove(p)
                obs.remove(o)
                break
    disagreements += [
        f"{case}: missing: predicted {p}, XLA emitted no such collective" for p in preds
    ]
    disagreements += [f"{case}: unexpected: XLA emitted {o}, not predicted" for o in obs]
    return OracleReport(case, tuple(disagreements), tuple(notes), matched, n_pred,
                        tuple(o.as_dict() for o in obs))


def _match_exactly(preds: list[_Rec], obs: list[_Rec], done: list[_Rec]) -> int:
    """Remove every prediction that has an identical observation (rule 1); how many."""
    n = 0
    for p in list(preds):
        if p in obs:
            preds.remove(p)
            obs.remove(p)
            done.append(p)
            n += 1
    return n
