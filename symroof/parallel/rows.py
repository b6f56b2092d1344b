"""The per-chip rows of a training step: compute and every collective, for one layer (the
book's accounting) and for the whole step (the model's), as ``dict[str, Cost]``.

Counting conventions of training plans (stated once, here):

- **B counts tokens** (book ch. 5): the global batch is B tokens, B/seq sequences. X is the
  data degree (dp x fsdp), Y the tensor degree, Z the pipeline stages, N = X Y Z chips,
  N_mb microbatches (1 without a pipeline).
- **Layer rows** are the book's: one MLP block ``In[B,D] W_in[D,F] W_out[F,D]`` (no gate, no
  attention), weights and activations in the model's byte widths (bf16). Every threshold
  is solved from them. Forward: 4BDF/(XY) FLOPs; FSDP AllGathers W_in and W_out (ZeRO-3);
  TP AllGathers In and ReduceScatters Out ([B/X, D]). Backward: 8BDF/(XY); ZeRO-3 gathers
  the weights again and every ZeRO level ReduceScatters the weight gradients (ZeRO-1/2 then
  gather the updated weights: the same bytes as DP's AllReduce); DP AllReduces the
  gradient shard; TP AllGathers dOut and ReduceScatters dIn, reusing the forward gather of
  In (4BD/X; the book's table writes 8BD/X; the forward pass sets every threshold anyway).
- **Step rows** are the whole model: forward FLOPs 2 x params x tokens plus attention's
  4 L H d_h seq per token (the full seq x seq scores, as the book counts), backward twice
  that, so 6 P tokens + 12 L H d_h seq tokens in all; remat reruns the forward ("full" or
  n checkpoints per layer), the score matmul ("selective") or both attention matmuls
  ("matmul_outputs") in the backward, and a rerun forward repeats its TP collectives.
  Weight collectives move params x w_bytes / L per layer; TP gathers and scatters
  [B/X, D] twice per layer (attention and MLP blocks); ZeRO-3 under a pipeline re-gathers
  weights for every microbatch; a pipeline sends each microbatch's activations
  N_mb + Z - 2 hops per pass (book ch. 12). Each chip reads its weight shard from HBM
  once per microbatch per pass (activation traffic is not counted).

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

__all__ = ["layer_rows", "step_rows", "pass_times", "template_make", "recompute_flops"]

#: make(kind, role, V, count) -> a Cost with the collective's time, or None (nothing sent)
Make = Callable[[str, str, Any, Any], Any]


def _put(rows: dict, key: str, cost: Any) -> None:
    if cost is not None:
        rows[key] = cost


def layer_rows(model: Any, B: Any, n: dict, z: tuple, make: Make) -> dict[str, Cost]:
    """One layer of the book's MLP, per chip, forward and backward (module docstring)."""
    D, F, wb, ab = model.D, model.F, model.w_bytes, model.act_bytes
    X, Y = n["dp"] * n["fsdp"], n["tp"]
    z1, _, z3 = z
    w = wb * D * F / Y  # one weight matrix's bytes, as the TP shard holds it
    act = ab * B * D / X  # [B/X, D] activations of one data shard
    rows: dict[str, Cost] = {}
    rows["forward/compute"] = Cost(flops=4 * B * D * F / (X * Y), weight_bytes=2 * w)
    _put(rows, "forward/fsdp/all-gather W_in", make("all-gather", "fsdp", w, z3))
    _put(rows, "forward/fsdp/all-gather W_out", make("all-gather", "fsdp", w, z3))
    _put(rows, "forward/tp/all-gather In", make("all-gather", "tp", act, 1))
    _put(rows, "forward/tp/reduce-scatter Out", make("reduce-scatter", "tp", act, 1))
    rows["backward/compute"] = Cost(flops=8 * B * D * F / (X * Y), weight_bytes=2 * w)
    _put(rows, "backward/tp/all-gather dOut", make("all-gather", "tp", act, 1))
    for W in ("W_out", "W_in"):
        _put(rows, f"backward/fsdp/all-gather {W}", make("all-gather", "fsdp", w, z3))
        _put(rows, f"backward/fsdp/reduce-scatter d{W}", make("reduce-scatter", "fsdp", w, z1))
        _put(rows, f"backward/fsdp/all-gather {W} (updated)",
             make("all-gather", "fsdp", w, z1 - z3))
        _put(rows, f"backward/dp/all-reduce d{W}", make("all-reduce", "dp", w / n["fsdp"], 1))
    _put(rows, "backward/tp/reduce-scatter dIn", make("reduce-scatter", "tp", act, 1))
    return rows


def recompute_flops(model: Any, seq: Any, remat: Any) -> sp.Expr:
    """Backward-pass recompute FLOPs per token under ``remat`` (module docstring)."""
    attn = model.L * model.H * model.d_h * seq  # one attention matmul's FLOPs per token / 2
    if remat == "full" or isinstance(remat, int):
        return 2 * model.params + 4 * attn
    return {"none": 0, "selective": 2 * attn, "matmul_outputs": 4 * attn}[remat]


def step_rows(model: Any, B: Any, seq: Any, remat: Any, n: dict, m: Any, z: tuple,
              make: Make) -> dict[str, Cost]:
    """The whole step, per chip, forward and backward (module docstring)."""
    P, L, D, wb, ab = model.params, model.L, model.D, model.w_bytes, model.act_bytes
    X, Y, Z = n["dp"] * n["fsdp"], n["tp"], n["pp"]
    N = X * Y * Z
    z1, _, z3 = z
    fwd = B * (2 * P + 4 * L * model.H * model.d_h * seq)
    shard = P * wb / (Y * Z)  # the weight bytes one chip reads per microbatch
    w = P * wb / (L * Y)  # one layer's weights, as the TP shard holds it
    lz = L / Z  # layers per stage
    act = ab * B * D / (X * m)  # one microbatch's [B/X, D] activations
    rows: dict[str, Cost] = {}
    rows["forward/compute"] = Cost(flops=fwd / N, weight_bytes=shard * m)
    _put(rows, "forward/fsdp/all-gather weights", make("all-gather", "fsdp", w, lz * m * z3))
    _put(rows, "forward/tp/all-gather activations", make("all-gather", "tp", act, 2 * lz * m))
    _put(rows, "forward/tp/reduce-scatter activations",
         make("reduce-scatter", "tp", act, 2 * lz * m))
    _put(rows, "forward/pp/send activations", make("send", "pp", act / Y, m + Z - 2))
    back = 2 * fwd + B * recompute_flops(model, seq, remat)
    rerun = 2 if remat == "full" or isinstance(remat, int) else 1  # remat reruns TP comms too
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
    return rows


def template_make(kind: str, role: str, V: Any, count: Any) -> Cost:
    """A collective in template form: count x max(lat, V k) (twice for an AllReduce), with
    the role's k and lat left as symbols (see :mod:`symroof.parallel.layout`)."""
    mult = 2 if kind == "all-reduce" else 1
    k, lat = SYM[f"k_{role}"], SYM[f"lat_{role}"]
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
