"""The per-chip rows of a training step: compute and every collective, for one layer (the
book's accounting) and for the whole step (the model's), as ``dict[str, Cost]``.

Counting conventions of training plans (stated once, here):

- **B counts tokens** (book ch. 5): the global batch is B tokens, B/seq sequences. X is the
  data degree (dp x fsdp), Y the tensor degree, Z the pipeline stages, Z_e the expert
  degree (ep; 1 without it), N = X Y Z Z_e chips, N_mb microbatches (1 without a pipeline).
  The batch is split over X Z_e: one chip's data shard is B/(X Z_e) tokens.
- **Layer rows** are the book's: one MLP block ``In[B,D] W_in[D,F] W_out[F,D]`` (no gate, no
  attention), weights and activations in the model's byte widths (bf16). Every threshold
  is solved from them. For a mixture of experts the block is the book's MoE MLP (ch. 12):
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
- **Step rows** are the whole model: forward FLOPs 2 x active params x tokens plus
  attention's 4 L H d_h seq per token (the full seq x seq scores, as the book counts),
  backward twice that, so 6 P_active tokens + 12 L H d_h seq tokens in all; remat reruns
  the forward ("full" or n checkpoints per layer), the score matmul ("selective") or both
  attention matmuls ("matmul_outputs") in the backward, and a rerun forward repeats its TP
  and EP collectives. A chip holds the routed experts / Z_e and every other weight whole
  (P_own = P - P_e + P_e/Z_e); weight collectives move P_own x w_bytes / L per layer; TP
  gathers and scatters [B/(X Z_e), D] twice per layer (attention and MLP blocks); EP sends
  two AllToAlls per MoE layer and AllReduces the gradients of the weights it replicates
  (like DP); ZeRO-3 under a pipeline re-gathers weights for every microbatch; a pipeline
  sends each microbatch's activations N_mb + Z - 2 hops per pass (book ch. 12). Each chip
  reads its weight shard from HBM once per microbatch per pass (activation traffic is not
  counted; every expert is taken as read: B k >= E).

>>> import symroof as sr
>>> from symroof.symbols import B, D, F, X
>>> mesh = sr.mesh(sr.symbolic_chip(), {"X": X})
>>> rows = sr.train_plan(sr.Transformer(), mesh, "fsdp", batch_tokens=B).layer
>>> rows["forward/compute"].flops, rows["forward/fsdp/all-gather W_in"].V
(4*B*D*F/X, 2*D*F)
>>> rows["backward/fsdp/reduce-scatter dW_in"].net_time      # V / W_ici, W_ici = 2 W_net
D*F/W_net
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sympy as sp

from ..analysis import TimeBound, time
from ..cost import Cost
from .layout import SYM

__all__ = ["layer_rows", "step_rows", "pass_times", "template_make", "recompute_flops",
           "expert_dims", "routed_params"]

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


def layer_rows(model: Any, B: Any, n: dict, z: tuple, make: Make) -> dict[str, Cost]:
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


def recompute_flops(model: Any, seq: Any, remat: Any) -> sp.Expr:
    """Backward-pass recompute FLOPs per token under ``remat`` (module docstring)."""
    attn = model.L * model.H * model.d_h * seq  # one attention matmul's FLOPs per token / 2
    if remat == "full" or isinstance(remat, int):
        # the layers rerun; the embedding gather and the lm_head (V x D each) do not
        outside = model.V * model.D * (1 if model.tied else 2)
        return 2 * (model.active_params - outside) + 4 * attn
    return {"none": 0, "selective": 2 * attn, "matmul_outputs": 4 * attn}[remat]


def step_rows(model: Any, B: Any, seq: Any, remat: Any, n: dict, m: Any, z: tuple,
              make: Make) -> dict[str, Cost]:
    """The whole step, per chip, forward and backward (module docstring)."""
    P, L, D, wb, ab = model.params, model.L, model.D, model.w_bytes, model.act_bytes
    X, Y, Z, Ze = n["dp"] * n["fsdp"], n["tp"], n["pp"], n["ep"]
    N = X * Y * Z * Ze
    z1, _, z3 = z
    P_e = routed_params(model)
    own = P - P_e + P_e / Ze  # the parameters one chip's EP shard holds (all, if dense)
    fwd = B * (2 * model.active_params + 4 * L * model.H * model.d_h * seq)
    shard = own * wb / (Y * Z)  # the weight bytes one chip reads per microbatch
    w = own * wb / (L * Y)  # one layer's weights, as the TP shard holds it
    lz = L / Z  # layers per stage
    act = ab * B * D / (X * Ze * m)  # one microbatch's [B/(X Z_e), D] activations
    rerun = 2 if remat == "full" or isinstance(remat, int) else 1  # remat reruns TP, EP comms
    rows: dict[str, Cost] = {}
    rows["forward/compute"] = Cost(flops=fwd / N, weight_bytes=shard * m)
    _put(rows, "forward/fsdp/all-gather weights", make("all-gather", "fsdp", w, lz * m * z3))
    _put(rows, "forward/tp/all-gather activations", make("all-gather", "tp", act, 2 * lz * m))
    _put(rows, "forward/tp/reduce-scatter activations",
         make("reduce-scatter", "tp", act, 2 * lz * m))
    _put(rows, "forward/pp/send activations", make("send", "pp", act / Y, m + Z - 2))
    back = 2 * fwd + B * recompute_flops(model, seq, remat)
    rows["backward/compute"] = Cost(flops=back / N, weight_bytes=shard * m)
    _put(rows, "backward/fsdp/all-gather weights",
         make("all-gather", "fsdp", w, lz * (m * z3 + z1 - z3)))
    _put(rows, "backward/fsdp/reduce-scatter grads", make("reduce-scatter", "fsdp", w, lz * z1))
    _put(rows, "backward/dp/all-reduce grads", make("all-reduce", "dp", w / n["fsdp"], lz))
    _put(rows, "backward/tp/all-gather activations",
         make("all-gather", "tp", act, 2 * lz * m * rerun))
    _put(rows, "backward/tp/reduce-scatter activations",
         make("reduce-scatter", "tp", act, 2 * lz * m * rerun))
    _put(rows, "backward/pp/send gradients", make("send", "pp", act / Y, m + Z - 2))
    if model.moe is not None:
        tokens = act * Ze * sp.Min(model.moe.k, Ze)  # an EP group's [B/(X m), D, min(k, Z_e)]
        _ep_rows(rows, tokens, model.moe_layers / Z * m, (P - P_e) * wb / (L * Y * n["fsdp"]),
                 lz, rerun, make)
    return rows


def _ep_rows(rows: dict, tokens: Any, blocks: Any, rest: Any, lz: Any, rerun: int,
             make: Make) -> None:
    """EP's rows of the step: two AllToAlls of an EP group's token copies (``tokens`` bytes)
    per MoE layer of the stage and microbatch (``blocks``), forward and backward (rerun
    under remat); and the AllReduce of the gradients of the weights EP replicates (``rest``
    bytes of one layer's shard), once per layer of the stage."""
    _put(rows, "forward/ep/all-to-all tokens", make("all-to-all", "ep", tokens, 2 * blocks))
    _put(rows, "backward/ep/all-to-all tokens",
         make("all-to-all", "ep", tokens, 2 * blocks * rerun))
    _put(rows, "backward/ep/all-reduce grads", make("all-reduce", "ep", rest, lz))


def template_make(kind: str, role: str, V: Any, count: Any) -> Cost:
    """A collective in template form: count x max(lat, V k) (twice for an AllReduce; an
    AllToAll's k is ``a_<role>``), with the role's k and lat left as symbols (see
    :mod:`symroof.parallel.layout`)."""
    mult = 2 if kind == "all-reduce" else 1
    k = SYM[f"a_{role}"] if kind == "all-to-all" else SYM[f"k_{role}"]
    lat = SYM[f"lat_{role}"]
    return Cost(net_time=count * mult * sp.Max(lat, V * k))


def pass_times(rows: dict[str, Cost], chip: Any, dtype: str = "bf16", *, bubble: Any = 1,
               overlap_axes: bool = True) -> dict[str, TimeBound]:
    """Per pass, the time bounds of its rows: ``sr.time`` of its compute (t_math and t_mem
    stretched by the pipeline ``bubble`` factor) and t_net of its collectives: the slowest
    role's sum where roles on different axes overlap, else the sum of all."""
    out = {}
    for p in dict.fromkeys(key.split("/")[0] for key in rows):
        compute = rows[f"{p}/compute"]
        by_role: dict[str, Any] = {}
        for key, cost in rows.items():
            part, role = key.split("/")[:2]
            if part == p and role != "compute":
                by_role[role] = by_role.get(role, 0) + cost.net_time
        terms = list(by_role.values())
        t_net = (sp.Max(*terms) if overlap_axes else sp.Add(*terms)) if terms else sp.Integer(0)
        t = time(compute, chip, dtype)
        cost = sum((c for k, c in rows.items() if k.startswith(p + "/")), Cost())
        out[p] = TimeBound(t_math=t.t_math * bubble, t_mem=t.t_mem * bubble, t_net=t_net,
                           cost=cost, chip=t.chip, dtype=dtype)
    return out
