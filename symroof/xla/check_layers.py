"""The bridge for whole layers: one layer of a :func:`symroof.serve` plan's decode step, or
of a :func:`symroof.train_plan`'s training step (attention and MLP), compiled by XLA under
the plan's layout, against the plan's per-layer collectives. ``check_layers(plans)``
compiles every plan, serving and training mixed, in one JAX process.

A serving plan's layout is data (``plan.partitions``, :mod:`symroof.parallel.serving_layouts`),
and the oracle's decode layer (``layers.LayerCase``) reads its shardings from it: x, the
weights and the KV cache as the layout partitions them, and the intermediates held where the
layout puts them (the norm's output as the projections read it, the queries as projected and
as the attention reads them in the cache's layout, the attention's output as o_proj reads it),
so that XLA's partitioner prices the plan's layout, not one it prefers. Under ``"1d"``: heads
and F over every axis, the cache's KV heads over the leading axes that divide G and its batch
over the rest; under ``"2d"``: x[B, D_XYZ] between blocks, every weight over D along the
plan's ``d_axes`` and over heads or F along the rest, the cache [B_X, S, G_YZ].

Predictions come from the plan's ``layer_comm`` (one layer's collectives and how often a
layer sends each: the ``comm/*`` rows hold them L times over), elements per device. The
model must be dense, gated (SwiGLU) and numeric, with one width for weights, activations
and KV (2 or 4 bytes).

Training plans: the whole layer is sharded as the plan's roles say (``x[b_X, T, D_Y]``, X
the data axes, Y the tp axes; W_q, W_k, W_v [D_fsdp, heads_tp, d_h], W_o [heads_tp, d_h,
D_fsdp], W_gate, W_up [D_fsdp, F_tp], W_down [F_tp, D_fsdp]) and compared with
``plan.layer``, one whole layer of the model's training rows (attention and MLP); what XLA
sends beyond it comes back as ``OracleReport.unexpected``. A mixture of experts' plan
(expert parallelism: ``ep``, ``dp+ep``, ``fsdp+ep``) compiles the oracle's MoE layer
instead, dispatched by capacity (:mod:`symroof.xla.check_moe`).

The attention shares each KV head among its H/G query heads by repeating it (``gqa=
"repeat"``, Hugging Face Llama's ``repeat_kv``). With the queries reshaped to
[.., G, H/G, ..] instead (``"grouped"``) XLA's partitioner carries o_proj's head split
back onto that 5-D array; where a mesh axis splits the heads across the G | H/G boundary
(G = 2 on a 4x2 mesh: X's 4 over G's 2 and H/G's 4) it cannot move it in one AllToAll and
gathers the attention output instead (tests/test_xla_layers.py asserts both).

>>> import symroof as sr
>>> toy = sr.Transformer(D=128, F=256, L=2, H=8, G=8, d_h=16, V=256, name="toy")
>>> plan = sr.serve(toy, sr.mesh("tpu-v5e", {"X": 4}, custom=True), sr.Step(8, context=64))
>>> [(p["kind"], p["axes"], p["elements_in"]) for p in serve_predicted(plan)]
[('all-reduce', ('X',), 1024), ('all-reduce', ('X',), 1024)]
>>> serve_case_of(plan).spec("k_cache")
((), (), ('X',), ())
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..parallel.serving import ServePlan
from .check import layer_case_of, layer_predicted
from .check_moe import moe_case_of, moe_predicted
from .compare import OracleReport, compare
from .layers import LayerCase, compile_layers

__all__ = ["serve_case_of", "serve_predicted", "train_layer_case_of", "check_layers"]

#: the oracle's dtype for a byte width (one width for every array)
DTYPES = {2: "bf16", 4: "f32"}


def _refuse(plan: ServePlan, why: str) -> ValueError:
    return ValueError(f"{plan.model.name} on {plan.mesh!r} (layout {plan.layout!r}): {why}")


def _axes(spec: Any, *dims: str) -> tuple[tuple[str, ...], ...]:
    """The mesh axes of ``spec``'s dimensions ``dims`` ("" for a dimension of the oracle's
    array that the partition does not have: d_h, the new token's 1)."""
    return tuple(spec.axes_of(d) if d else () for d in dims)


def serve_case_of(plan: ServePlan) -> LayerCase:
    """The oracle's decode layer for ``plan``: its sizes, mesh and the shardings the plan's
    layout gives each array (``plan.partitions``, read, never retyped), with the
    intermediates held where the layout puts them: the norm's output as the projections
    read it, the queries as projected and as the attention reads them, and the attention's
    output as o_proj reads it."""
    m = plan.model
    if m.moe is not None or m.mla is not None or not m.gated:
        raise _refuse(plan, "the oracle's decode layer is a dense gated (SwiGLU) MLP with "
                      "GQA attention (no experts, no latent attention)")
    sizes = {"B": plan.batch, "S": plan.context, "D": m.D, "F": m.F, "H": m.H, "G": m.G,
             "d": m.d_h}
    if not all(getattr(v, "is_Integer", isinstance(v, int)) for v in sizes.values()) or \
            not all(isinstance(s, int) for s in plan.mesh.shape.values()):
        raise _refuse(plan, "the XLA oracle compiles numbers: give the batch, context, model "
                      "and mesh as integers")
    widths = {int(m.w_bytes), int(m.act_bytes), int(m.kv_bytes)}
    if len(widths) != 1 or (width := widths.pop()) not in DTYPES:
        raise _refuse(plan, "the oracle compiles one dtype (2 or 4 bytes) for weights, "
                      "activations and KV cache")
    rule = plan.partitions.rule
    q_proj, core, o_proj = rule("attn/q_proj"), rule("attn/core"), rule("attn/o_proj")
    up, down = rule("mlp/up"), rule("mlp/down")
    x, (q,), (o,) = rule("attn_norm").reads[0], core.reads, o_proj.reads
    heads, projected = q.dims[1], q_proj.writes.dims[1]  # H, or E (q, k, v as one array)
    cache = _axes(core.kv, "B", "S", "G", "")
    specs = {"x": _axes(x, "B", "D"), "x_out": _axes(x, "B", "D"),
             "h": _axes(q_proj.reads[0], "B", "D"),
             "wq": _axes(q_proj.weight, "D", q_proj.weight.dims[1], ""),
             "wk": _axes(rule("attn/k_proj").weight, "D", rule("attn/k_proj").weight.dims[1],
                         ""),
             "wv": _axes(rule("attn/v_proj").weight, "D", rule("attn/v_proj").weight.dims[1],
                         ""),
             "wo": _axes(o_proj.weight, "H", "", "D"),
             "w_gate": _axes(rule("mlp/gate").weight, "D", "F2"),
             "w_up": _axes(up.weight, "D", "F2"), "w_down": _axes(down.weight, "F", "D"),
             "k_cache": cache, "v_cache": cache,
             "q_proj": _axes(q_proj.writes, "B", "", projected, ""),
             "q": _axes(q, "B", "", heads, ""), "o": _axes(o, "B", "H", "")}
    return LayerCase("decode", dict(plan.mesh.shape), {k: int(v) for k, v in sizes.items()},
                     specs, DTYPES[width], label=f"serve {plan.layout} {m.name}")


def serve_predicted(plan: ServePlan) -> list[dict]:
    """One layer's collectives of ``plan`` (``plan.layer_comm``, each as often as a layer
    sends it): kind, mesh axes, per-device elements in and out, and the row's key."""
    out = []
    for key, (times, c) in plan.layer_comm.items():
        e_in, e_out = c.elements(plan.model.act_bytes)
        out += [{"kind": c.kind, "axes": c.axes, "elements_in": int(e_in),
                 "elements_out": int(e_out), "row": key}] * int(times)
    return out


def train_layer_case_of(plan: Any) -> LayerCase:
    """The oracle's training step of one whole layer for a training plan (module docstring);
    refused, with the reason, where :func:`~symroof.xla.check.layer_case_of` refuses.

    >>> import symroof as sr
    >>> toy = sr.Transformer(D=128, F=512, L=2, H=8, G=8, d_h=16, V=256, name="toy")
    >>> plan = sr.train_plan(toy, sr.mesh("tpu-v5e", "4x2"), "fsdp+tp", fsdp=("X",),
    ...                      tp=("Y",), step=sr.TrainStep(16, 8))
    >>> case = train_layer_case_of(plan)
    >>> case.spec("x"), case.spec("wo")          # x[b_X, T, D_Y], W_o[H_Y, d_h, D_X]
    ((('X',), (), ('Y',)), (('Y',), (), ('X',)))
    """
    mlp = layer_case_of(plan)  # pipelines, ZeRO-1/2 and experts refused there
    (data, tp), fsdp = mlp.x_spec, mlp.w_in_spec[0]
    m = plan.model
    if m.features:
        raise ValueError(f"{plan.strategy}: the oracle's training layer is a Llama layer "
                         f"(RMSNorm, GQA, SwiGLU); {m.name} has {', '.join(m.features)}")
    sequences, rest = divmod(int(plan.batch_tokens), int(plan.seq))
    if rest:
        raise ValueError(f"{plan.strategy}: the batch is not whole sequences of {plan.seq}")
    sizes = {"b": sequences, "T": int(plan.seq), "D": mlp.D, "F": mlp.F, "H": int(m.H),
             "G": int(m.G), "d": int(m.d_h)}
    heads = (fsdp, tp, ())
    specs = {"x": (data, (), tp), "wq": heads, "wk": heads, "wv": heads, "wo": (tp, (), fsdp),
             "w_gate": mlp.w_in_spec, "w_up": mlp.w_in_spec, "w_down": mlp.w_out_spec}
    return LayerCase("train", mlp.mesh_shape, sizes, specs, mlp.dtype,
                     label=f"train {plan.strategy} {m.name}")


def _case_and_predicted(plan: Any) -> tuple[LayerCase, list[dict]]:
    if isinstance(plan, ServePlan):
        return serve_case_of(plan), serve_predicted(plan)
    if plan.model.moe is not None:  # a mixture of experts' layer (symroof.xla.check_moe)
        return moe_case_of(plan), moe_predicted(plan)
    return train_layer_case_of(plan), layer_predicted(plan)


def check_layers(plans: Iterable[Any], predictions: Iterable[list] | None = None,
                 cases: Iterable[LayerCase | None] | None = None) -> list[OracleReport]:
    """Compile one layer per plan (serving or training, one JAX process) and compare XLA's
    collectives with the plan's per-layer ones; ``predictions`` overrides them where an entry
    is not None (for planting a wrong one in a test; a plan given twice compiles once), and
    ``cases`` the compiled program (a MoE layer's forward pass alone,
    ``check_moe.moe_case_of(plan, forward=True)``; the grouped GQA formulation). One
    report per plan.

    >>> import symroof as sr
    >>> toy = sr.Transformer(D=128, F=256, L=2, H=8, G=8, d_h=16, V=256, name="toy")
    >>> plan = sr.serve(toy, sr.mesh("tpu-v5e", "4x2"), sr.Step(8, context=64))
    >>> [report] = check_layers([plan])   # doctest: +SKIP
    >>> report.ok, report.matched         # doctest: +SKIP
    (True, 2)

    (Skipped here because it starts JAX; tests/test_xla_layers.py checks this plan and
    the others, serving, training and MoE, in one process.)
    """
    plans = list(plans)
    own, predicted = zip(*map(_case_and_predicted, plans)) if plans else ((), ())
    cases = [None] * len(plans) if cases is None else list(cases)
    results = compile_layers([o if c is None else c for c, o in zip(cases, own)])
    predictions = [None] * len(plans) if predictions is None else list(predictions)
    return [compare(mine if pred is None else pred, r)
            for r, mine, pred in zip(results, predicted, predictions)]
