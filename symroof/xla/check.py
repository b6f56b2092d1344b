"""The bridge: symroof's sharded-matmul and training plans against what XLA's partitioner
emits.

With ``check_layers`` and ``check_moe``, the only modules of ``symroof.xla`` that import the
rest of symroof, and only to read plans (here a
:class:`~symroof.parallel.matmul.ShardedMatmul`: its mesh, notation, sizes and predicted
collectives). The oracle itself (``hlo``, ``oracle``,
``training``, ``layers``, ``compare``) never sees a formula.

``check_train_layers(plans)`` does the same for the per-layer collectives of training plans
(DP, FSDP, TP, FSDP + TP) against the book's MLP layer's compiled training step; whole
layers (attention and MLP, serving and training) are :mod:`symroof.xla.check_layers`'.

``check_matmuls(plans)`` compiles every plan's matmul in one JAX process and compares XLA's
collectives with the plan symroof chose. Where they differ but XLA's collectives are those
of the *other* valid plan (case 2: gather first, or multiply the shards and reduce), the
report says so in a note rather than failing: both are correct programs, and the note names
which one moves fewer bytes. Element counts are compared, not bytes: the CPU backend may
compute a bf16 matmul in f32 and communicate f32.

>>> import symroof as sr
>>> plan = sr.shard_matmul(sr.mesh("tpu-v5e", "4x2"), "A[I, J_X] @ B[J_X, K] -> [I, K]",
...                        I=64, J=128, K=256)
>>> matmul_case_of(plan).out_spec, plan.predicted()
(((), ()), [{'kind': 'all-reduce', 'axes': ('X',), 'elements_in': 16384, 'elements_out': 16384}])
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from ..hardware.collectives import Collective
from ..parallel.matmul import ShardedMatmul
from .compare import OracleReport, compare
from .oracle import MatmulCase, compile_matmuls
from .training import MlpTrainCase, compile_mlp_train

__all__ = ["check_matmuls", "matmul_case_of", "check_train_layers", "layer_case_of",
           "layer_predicted"]

_DTYPES = {2: "bf16", 4: "f32"}


def matmul_case_of(plan: ShardedMatmul) -> MatmulCase:
    """The oracle's case for ``plan``: mesh shape, per-dimension mesh axes, sizes, dtype."""
    a, b, out = plan.specs
    shape = plan.mesh.shape
    sizes = [plan.sizes[d] for d in (a.dims[0], a.dims[1], b.dims[1])]
    if not all(isinstance(v, int) for v in shape.values()) or not all(
            v.is_Integer for v in sizes):
        raise ValueError(f"{plan.text}: the XLA oracle compiles numbers; give every size "
                         "and mesh axis as an integer")
    width = plan.widths[0]
    if any(w != width for w in plan.widths) or int(width) not in _DTYPES:
        raise ValueError(f"{plan.text}: the oracle compiles one dtype for all three arrays "
                         f"(2 or 4 bytes), got widths {plan.widths}")
    return MatmulCase(dict(shape), a.axes, b.axes, out.axes, *map(int, sizes),
                      _DTYPES[int(width)])


def check_matmuls(plans: Iterable[ShardedMatmul], predictions: Iterable[list] | None = None,
                  ) -> list[OracleReport]:
    """Compile every plan (one JAX process) and compare; ``predictions`` overrides what is
    compared (for planting a wrong one in a test). One report per plan."""
    plans = list(plans)
    results = compile_matmuls([matmul_case_of(p) for p in plans])
    predictions = [None] * len(plans) if predictions is None else list(predictions)
    return [_report(p, r, pred) for p, r, pred in zip(plans, results, predictions)]


def _report(plan: ShardedMatmul, result, predicted: list | None) -> OracleReport:
    name = f"{plan.text} on {plan.mesh!r}"
    report = compare(plan.predicted() if predicted is None else predicted, result, case=name)
    if report.ok or predicted is not None:
        return report
    for strategy, other in plan.alternatives.items():
        if strategy == plan.strategy or other.predicted() == plan.predicted():
            continue
        alt = compare(other.predicted(), result, case=name)
        if alt.ok:
            mine, theirs = plan.cost.net_bytes, other.cost.net_bytes
            note = (f"{name}: XLA chose the {strategy!r} plan ({theirs} bytes sent per chip) "
                    f"where symroof's plan is {plan.strategy!r} ({mine} bytes per chip)")
            return replace(alt, notes=alt.notes + (note,))
    return report


def layer_case_of(plan) -> MlpTrainCase:
    """The oracle's MLP training step for a :class:`~symroof.parallel.strategies.TrainPlan`:
    the book's layer ``In[B_X, D_Y] W_in[D_X, F_Y] W_out[F_Y, D_X]`` with X the data axes
    (dp and fsdp: In's batch), the fsdp axes on the weights' D and the tp axes on F."""
    axes = plan.axes
    if axes.get("pp") or plan.zero in (1, 2):
        raise ValueError(f"{plan.strategy}: the oracle's one-layer step has no pipeline and "
                         "no optimizer step (ZeRO-1/2 gather the updated weights there)")
    if axes.get("ep"):
        raise ValueError(f"{plan.strategy}: the oracle's layer is a dense MLP (no experts to "
                         "split, no AllToAll)")
    data, fsdp, tp = axes["dp"] + axes["fsdp"], axes["fsdp"], axes["tp"]
    m = plan.model
    dims = [plan.batch_tokens, m.D, m.F]
    if not all(getattr(d, "is_Integer", False) for d in dims):
        raise ValueError("the XLA oracle compiles numbers: give the plan a numeric batch and "
                         "model")
    width = int(m.w_bytes)
    if int(m.act_bytes) != width or width not in _DTYPES:
        raise ValueError("the oracle compiles one dtype (2 or 4 bytes) for all arrays")
    return MlpTrainCase(dict(plan.mesh.shape), (data, tp), (fsdp, tp), (tp, fsdp),
                        *map(int, dims), _DTYPES[width])


def layer_predicted(plan) -> list[dict]:
    """The per-layer collectives of ``plan`` (its ``layer`` rows), as the oracle compares
    them: kind, mesh axes, per-device elements in and out."""
    width = plan.model.w_bytes
    out = []
    for key, row in plan.layer.items():
        if isinstance(row, Collective):
            e_in, e_out = row.elements(width)
            out.append({"kind": row.kind, "axes": row.axes, "elements_in": int(e_in),
                        "elements_out": int(e_out), "row": key})
    return out


def check_train_layers(plans: Iterable, predictions: Iterable[list] | None = None,
                       ) -> list[OracleReport]:
    """Compile one layer's training step for every plan (one JAX process) and compare XLA's
    collectives with the plan's per-layer rows; ``predictions`` overrides them where an
    entry is not None (tests; a plan given twice compiles once)."""
    plans = list(plans)
    results = compile_mlp_train([layer_case_of(p) for p in plans])
    predictions = [None] * len(plans) if predictions is None else list(predictions)
    return [compare(layer_predicted(p) if pred is None else pred, r,
                    case=f"{p.strategy} on {p.mesh!r} ({r.name})")
            for p, r, pred in zip(plans, results, predictions)]
