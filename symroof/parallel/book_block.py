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
AllToAlls carry the gradients back. Each collective's kind, role and bytes are a change of
partition of :mod:`symroof.parallel.train_layout` (W_in and W_out as weights TP and EP
split); this module says only how often the block makes it.

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
from .train_layout import activation_moves, at_degrees, weight_moves

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


def _moves(rows: dict, p: str, name: str, moved: list, make: Make) -> None:
    for kind, role, V in moved:
        _put(rows, f"{p}/{role}/{kind} {name}", make(kind, role, V, 1))


def mlp_block_rows(model: Any, B: Any, n: dict, z: tuple, make: Make) -> dict[str, Cost]:
    """One layer of the book's MLP, per chip, forward and backward (module docstring)."""
    D, wb, ab = model.D, model.w_bytes, model.act_bytes
    F, E, k = expert_dims(model)
    X, Y, Ze = n["dp"] * n["fsdp"], n["tp"], n["ep"]
    z1, _, z3 = z
    whole = wb * E * D * F  # one weight matrix of E experts (TP and EP split it)
    gather = at_degrees(weight_moves("gather", True, True), n, whole)
    grads = at_degrees(weight_moves("grad", True, True), n, whole)
    w = whole / (Y * Ze)  # as the chip holds it
    x_in = at_degrees(activation_moves("in"), n, ab * B * D)  # [B/(X Z_e), D] gathered
    y_out = at_degrees(activation_moves("out"), n, ab * B * D)  # its partial sums scattered
    # an EP group's [B/X, D, min(k, Z_e)] copies
    copies = at_degrees(activation_moves("dispatch"), n, ab * B * D * sp.Min(k, Ze))
    ep = model.moe is not None
    rows: dict[str, Cost] = {}
    rows["forward/compute"] = Cost(flops=4 * B * k * D * F / (X * Y * Ze), weight_bytes=2 * w)
    for W in ("W_in", "W_out"):
        for kind, role, V in gather:
            _put(rows, f"forward/{role}/{kind} {W}", make(kind, role, V, z3))
    _moves(rows, "forward", "In", x_in, make)
    if ep:
        _moves(rows, "forward", "In", copies, make)
        _moves(rows, "forward", "Out", copies, make)
    _moves(rows, "forward", "Out", y_out, make)
    rows["backward/compute"] = Cost(flops=8 * B * k * D * F / (X * Y * Ze), weight_bytes=2 * w)
    _moves(rows, "backward", "dOut", x_in, make)
    if ep:
        _moves(rows, "backward", "dOut", copies, make)
    for W in ("W_out", "W_in"):
        for kind, role, V in gather:
            _put(rows, f"backward/{role}/{kind} {W}", make(kind, role, V, z3))
        for kind, role, V in (g for g in grads if g[0] == "reduce-scatter"):
            _put(rows, f"backward/{role}/{kind} d{W}", make(kind, role, V, z1))
        for kind, role, V in gather:  # ZeRO-1/2: the updated shard gathered
            _put(rows, f"backward/{role}/{kind} {W} (updated)", make(kind, role, V, z1 - z3))
        for kind, role, V in (g for g in grads if g[0] != "reduce-scatter"):
            _put(rows, f"backward/{role}/{kind} d{W}", make(kind, role, V, 1))
    if ep:
        _moves(rows, "backward", "dIn", copies, make)
    _moves(rows, "backward", "dIn", y_out, make)
    return rows


