"""The bridge: symroof's sharded-matmul plans against what XLA's partitioner emits.

This is the one module of ``symroof.xla`` that imports the rest of symroof, and only to read
a :class:`~symroof.parallel.matmul.ShardedMatmul` (its mesh, notation, sizes and predicted
collectives). The oracle itself (``hlo``, ``oracle``, ``compare``) never sees a formula.

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

from ..parallel.matmul import ShardedMatmul
from .compare import OracleReport, compare
from .oracle import MatmulCase, compile_matmuls

__all__ = ["check_matmuls", "matmul_case_of"]

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
