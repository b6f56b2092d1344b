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
   - XLA's all-reduce (full result) where the prediction has a reduce-scatter over the same
     axes from the same input: XLA then slices its copy; the minimum was the reduce-scatter.
   - One collective over several axes against a chain of the same kind over disjoint axes
     whose union is those axes and whose element counts chain (all-gather over X then Y, in
     either order, for one all-gather over (X, Y); likewise reduce-scatter and all-reduce), in
     either direction. The data that arrive are the same; the cost differs (a chain runs one
     axis at a time), so a note, not a silent match.
4. What is left is a disagreement: same kind and axes with other counts ("wrong element
   count"), a prediction with no partner ("missing"), an XLA collective with none
   ("unexpected"). Each line names the case.

>>> p = [{"kind": "reduce-scatter", "axes": ("X",), "elements_in": 16384, "elements_out": 4096}]
>>> o = [{"kind": "all-reduce", "axes": ("X",), "elements_in": 16384, "elements_out": 16384}]
>>> print(compare(p, o, case="C[M, N_X]"))  # doctest: +NORMALIZE_WHITESPACE
C[M, N_X]: OK (0 of 1 predicted collectives matched exactly, 1 note)
  note: C[M, N_X]: XLA chose all-reduce where the minimum is reduce-scatter over (X)
  (16384 elements vs 4096 elements per device)
"""

from __future__ import annotations

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
    return _Rec(
        kind,
        None if axes is None else frozenset(axes),
        int(_get(item, "elements_in")),
        int(_get(item, "elements_out")),
        shown,
    )


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

    for p in list(preds):  # 1. exact matches
        if p in obs:
            preds.remove(p)
            obs.remove(p)
            matched += 1
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
    return OracleReport(case, tuple(disagreements), tuple(notes), matched, n_pred)
