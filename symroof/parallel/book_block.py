"""The book's one-MLP-block layer (ch. 5; ch. 12 for a mixture of experts), per chip: the
layer its printed parallelism conditions are solved from, kept as the conventions field
``condition_layer = "mlp_block"`` (the "book" profile); symroof's default solves them from
one whole layer of the model's own training rows (:mod:`symroof.parallel.rows`).

The block is ``In[B,D] W_in[D,F] W_out[F,D]`` (no gate, no attention), weights and
activations in the model's byte widths; B counts tokens, X = dp x fsdp, Y the tensor
degree, Z_e the expert degree. For a mixture of experts it is the book's MoE MLP (ch. 12):
E experts of width F, k per token, no router, no shared expert; so FLOPs grow by k and
weights by E (a dense model is E = k = 1). Forward: 4BkDF/(X Y Z_e) FLOPs; FSDP
AllGathers W_in and W_out (ZeRO-3; E/Z_e experts' worth); TP AllGathers In and
ReduceScatters Out ([B/(X Z_e), D]: the tokens, gathered before routing and scattered
after the k experts' outputs are combined); EP sends each of the B/X tokens of its group
to the chips holding its experts and back, two AllToAlls of [B/X, D, min(k, Z_e)] (one
copy per chip: the book's ragged AllToAll, ch. 12; each TP rank sends every copy, since
each needs all of D). Backward: 8BkDF/(X Y Z_e); ZeRO-3 gathers the weights again and
every ZeRO level ReduceScatters the weight gradients (ZeRO-1/2 then gather the updated
weights: the same bytes as DP's AllReduce); DP AllReduces the gradient shard; TP
AllGathers dOut and ReduceScatters dIn, reusing the forward gather of In (4BD/X; the
book's table writes 8BD/X; the forward pass sets every threshold anyway); EP's two
AllToAlls carry the gradients back.

>>> import symroof as sr
>>> from symroof.symbols import B, D, F, X
>>> mesh = sr.mesh(sr.symbolic_chip(), {"X": X})
>>> rows = sr.train_plan(sr.Transformer(), mesh, "fsdp", batch_tokens=B,
...                      conventions="book").layer
>>> rows["forward/compute"].flops, rows["forward/fsdp/all-gather W_in"].V
(4*B*D*F/X, 2*D*F)
>>> rows["backward/fsdp/reduce-scatter dW_in"].net_time      # V / W_ici, W_ici = 2 W_net
D*F/W_net
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sympy as sp

from ..cost import Cost

__all__ = ["mlp_block_rows", "expert_dims", "routed_params", "Make"]

#: make(kind, role, V, count) -> a Cost with the collective's time, or None (nothing sent)
Make = Callable[[str, str, Any, Any], Any]


def _put(rows: dict, key: str, cost: Any) -> None:
    if cost is not None:
        rows[key] = cost


def expert_dims(model: Any) -> tuple[Any, Any, Any]:
    """(F, E, k) of the book's MLP block: the experts' width, number and top-k of a mixture
    of experts; (F, 1, 1) for a dense model."""
    moe = model.moe
    return (model.F, 1, 1) if moe is None else (moe.F, moe.E, moe.k)


def routed_params(model: Any) -> sp.Expr:
    """Parameters of the routed experts (what ``ep`` splits): L_moe E 3 D F; 0 if dense."""
    if model.moe is None:
        return sp.Integer(0)
    return model.moe_layers * model.moe.E * model.moe.expert_params(model.D)


def mlp_block_rows(model: Any, B: Any, n: dict, z: tuple, make: Make) -> dict[str, Cost]:
    """One layer of the book's MLP, per chip, forward and backward (module docstring)."""
    D, wb, ab = model.D, model.w_bytes, model.act_bytes
    F, E, k = expert_dims(model)
    X, Y, Ze = n["dp"] * n["fsdp"], n["tp"], n["ep"]
    z1, _, z3 = z
    w = wb * E * D * F / (Y * Ze)  # one weight matrix of E/Z_e experts, as the TP shard holds it
    act = ab * B * D / (X * Ze)  # [B/(X Z_e), D] tokens of one data shard
    tokens = ab * B * D * sp.Min(k, Ze) / X  # an EP group's [B/X, D, min(k, Z_e)] copies
    ep = model.moe is not None
    rows: dict[str, Cost] = {}
    rows["forward/compute"] = Cost(flops=4 * B * k * D * F / (X * Y * Ze), weight_bytes=2 * w)
    _put(rows, "forward/fsdp/all-gather W_in", make("all-gather", "fsdp", w, z3))
    _put(rows, "forward/fsdp/all-gather W_out", make("all-gather", "fsdp", w, z3))
    _put(rows, "forward/tp/all-gather In", make("all-gather", "tp", act, 1))
    if ep:
        _put(rows, "forward/ep/all-to-all In", make("all-to-all", "ep", tokens, 1))
        _put(rows, "forward/ep/all-to-all Out", make("all-to-all", "ep", tokens, 1))
    _put(rows, "forward/tp/reduce-scatter Out", make("reduce-scatter", "tp", act, 1))
    rows["backward/compute"] = Cost(flops=8 * B * k * D * F / (X * Y * Ze), weight_bytes=2 * w)
    _put(rows, "backward/tp/all-gather dOut", make("all-gather", "tp", act, 1))
    if ep:
        _put(rows, "backward/ep/all-to-all dOut", make("all-to-all", "ep", tokens, 1))
    for W in ("W_out", "W_in"):
        _put(rows, f"backward/fsdp/all-gather {W}", make("all-gather", "fsdp", w, z3))
        _put(rows, f"backward/fsdp/reduce-scatter d{W}", make("reduce-scatter", "fsdp", w, z1))
        _put(rows, f"backward/fsdp/all-gather {W} (updated)",
             make("all-gather", "fsdp", w, z1 - z3))
        _put(rows, f"backward/dp/all-reduce d{W}", make("all-reduce", "dp", w / n["fsdp"], 1))
    if ep:
        _put(rows, "backward/ep/all-to-all dIn", make("all-to-all", "ep", tokens, 1))
    _put(rows, "backward/tp/reduce-scatter dIn", make("reduce-scatter", "tp", act, 1))
    return rows


