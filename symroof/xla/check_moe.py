"""The bridge for a mixture of experts: one MoE layer of a :func:`symroof.train_plan` (its
attention and its experts), compiled by XLA under the plan's expert-parallel layout, against
the plan's per-layer collectives (``plan.layer``: the forward rows for the forward pass, all
of them for the training step).

The layout (the plan's roles, :mod:`symroof.parallel.train_layout`): the batch over the data
axes (dp, fsdp, then ep), ``x[b_data, T, D]``; attention and the router replicated over ep
(stored over fsdp); each expert's weights on one ep shard, ``W_gate, W_up[E_ep, D_fsdp, F]``,
``W_down[E_ep, F, D_fsdp]``. The oracle's MoE (``layers``, ``"moe_forward"`` and
``"moe_train"``) dispatches by capacity, as GShard and Switch do: each data shard's tokens
are one of N groups, and each expert has C slots per group in a dense [E, N, C, D] buffer,
moved from the tokens' layout ``[E, N_data, C, D]`` to the experts' ``[E_ep, N_dp_fsdp, C, D]``
(one AllToAll over ep) and back.

**The convention compared.** symroof prices EP's dispatch as the book's ragged AllToAll:
each chip sends its ``B/(X Z_e)`` tokens' ``min(k, Z_e)`` copies of D elements. The dense
buffer holds ``E C`` slots a group whatever the routing; at capacity factor 1,
``C = k n / E`` for n tokens a group, the buffer is ``k n D`` elements a chip, the ragged
count when ``k <= Z_e`` (each of a token's k experts may sit on another chip). The bridge
compiles that capacity and refuses the rest (``k > Z_e``, where the counts differ by design,
or a capacity that is not a whole number of slots).

Not modelled here: TP inside the experts (``ep+tp``). XLA's partitioner (JAX 0.10.2, CPU)
then reduces the experts' partial sums over tp before the combine AllToAll (an AllReduce of
the [E/Z_e, N, C, D] buffer) and computes the router from x split over D (an AllReduce of
the logits), where the plan sends the AllToAll of partial sums and ReduceScatters the
combined output; the comparison of that layout is left to do.

>>> import symroof as sr
>>> from symroof.models import MoE
>>> toy = sr.Transformer(D=64, F=128, L=2, H=4, G=4, d_h=16, V=256, name="toy-moe",
...                      moe=MoE(E=4, k=2, F=128))
>>> plan = sr.train_plan(toy, sr.mesh("tpu-v5e", {"X": 4}, custom=True), "ep",
...                      step=sr.TrainStep(16, 8))
>>> case = moe_case_of(plan)
>>> {k: case.sizes[k] for k in "ENCk"}      # 128 tokens in 4 groups; 2 x 32 / 4 slots
{'E': 4, 'N': 4, 'C': 16, 'k': 2}
>>> case.spec("w_gate"), case.spec("by_expert"), case.spec("by_group")
((('X',), (), ()), (('X',), (), (), ()), ((), ('X',), (), ()))
"""

from __future__ import annotations

import math
from typing import Any

from .check import layer_predicted
from .layers import LayerCase

__all__ = ["moe_case_of", "moe_predicted"]

DTYPES = {2: "bf16", 4: "f32"}


def _refuse(plan: Any, why: str) -> ValueError:
    mesh = ", ".join(f"{a}: {n}" for a, n in plan.mesh.shape.items())
    return ValueError(f"{plan.strategy} on {{{mesh}}} ({plan.model.name}): {why}")


def _check_model(plan: Any) -> None:
    m, moe = plan.model, plan.model.moe
    if moe is None:
        raise _refuse(plan, "the oracle's MoE layer needs a mixture of experts (model.moe)")
    plain = (moe.shared_F == 0 and moe.router == "softmax" and not moe.router_bias
             and not moe.norm_topk and moe.scale == 1 and moe.groups == 1
             and moe.dense_layers == 0)
    if not plain or set(m.features) - {"moe"} or not m.gated:
        raise _refuse(plan, "the oracle's MoE layer is a Llama layer with top-k of a softmax "
                      "router over SwiGLU experts (no shared expert, router bias, top-k "
                      "normalisation, scale, expert groups or dense layers)")
    if plan.axes.get("pp") or plan.axes.get("tp") or plan.zero in (1, 2):
        raise _refuse(plan, "the oracle's MoE layer has no pipeline, no tensor parallelism "
                      "and no optimizer step (ZeRO-1/2 gather the updated weights there)")
    widths = {int(m.w_bytes), int(m.act_bytes)}
    if len(widths) != 1 or widths.pop() not in DTYPES:
        raise _refuse(plan, "the oracle compiles one dtype (2 or 4 bytes) for all arrays")


def moe_case_of(plan: Any, forward: bool = False) -> LayerCase:
    """The oracle's MoE layer (its training step, or its forward pass if ``forward``) for
    an expert-parallel training plan, at capacity factor 1 (module docstring); refused,
    with the reason, where the oracle's program is not the plan's model or layout."""
    _check_model(plan)
    m, moe, axes = plan.model, plan.model.moe, plan.axes
    dp, fsdp, ep = axes["dp"], axes["fsdp"], axes["ep"]
    data = dp + fsdp + ep
    N = math.prod(plan.mesh.shape[a] for a in data)
    sequences, rest = divmod(int(plan.batch_tokens), int(plan.seq))
    tokens, Ze = int(plan.batch_tokens), math.prod(plan.mesh.shape[a] for a in ep)
    if rest or tokens % N:
        raise _refuse(plan, f"the batch is not whole sequences of {plan.seq} split evenly "
                      f"over {N} data shards")
    E, k = int(moe.E), int(moe.k)
    if k > Ze:
        raise _refuse(plan, f"k = {k} experts a token on Z_e = {Ze} chips: the plan sends "
                      f"min(k, Z_e) = {Ze} copies a token, the oracle's capacity buffer "
                      f"k = {k} (the counts differ by design)")
    C, over = divmod(k * tokens // N, E)
    if over:
        raise _refuse(plan, f"capacity factor 1 gives k n / E = {k} x {tokens // N} / {E} "
                      "slots an expert, not a whole number")
    sizes = {"b": sequences, "T": int(plan.seq), "D": int(m.D), "F": int(moe.F),
             "H": int(m.H), "G": int(m.G), "d": int(m.d_h), "E": E, "N": N, "C": C, "k": k}
    heads = (fsdp, (), ())
    specs = {"x": (data, (), ()), "wq": heads, "wk": heads, "wv": heads,
             "wo": ((), (), fsdp), "w_router": (fsdp, ()), "w_gate": (ep, fsdp, ()),
             "w_up": (ep, fsdp, ()), "w_down": (ep, (), fsdp),
             "by_expert": (ep, dp + fsdp, (), ()), "by_group": ((), data, (), ())}
    if forward:
        specs["x_out"] = specs["x"]
    kind = "moe_forward" if forward else "moe_train"
    return LayerCase(kind, dict(plan.mesh.shape), sizes, specs,
                     DTYPES[int(m.w_bytes)], label=f"train {plan.strategy} {m.name}")


def moe_predicted(plan: Any, forward: bool = False) -> list[dict]:
    """The plan's per-layer collectives (:func:`~symroof.xla.check.layer_predicted`), the
    forward pass' alone if ``forward``."""
    return [p for p in layer_predicted(plan)
            if not forward or p["row"].startswith("forward/")]
