"""The per-chip rows of a training step: the model's own training rows
(:func:`symroof.train_ops`) sharded by the plan's roles, and the collectives each role's
partition of the weights, gradients and activations needs, as ``dict[str, Cost]``.

Counting conventions of training plans (stated once, here):

- **B counts tokens** (book ch. 5): the global batch is B tokens, B/seq sequences. X is the
  data degree (dp x fsdp), Y the tensor degree, Z the pipeline stages, Z_e the expert
  degree (ep; 1 without it), N = X Y Z Z_e chips, N_mb microbatches (1 without a pipeline).
  The batch is split over X Z_e: one chip's data shard is B/(X Z_e) tokens, run as N_mb
  microbatches.
- **Compute** is the step's rows, each row shared out by the forward-row key it comes
  from (``fwd/attn/q_proj``, ``bwd/attn/q_proj/dx`` and ``recompute/attn/q_proj`` all
  read ``attn/q_proj``): every row is computed on the chip's tokens; TP splits the rows
  of attention (heads), the MLP and experts (F), the lm_head and the loss (vocabulary),
  and leaves D-wide rows whole on every TP rank (norms, residual adds, gradient sums,
  embeddings, routing: :func:`tp_splits`); a pipeline stage runs 1/Z of every row (the
  average stage); EP holds 1/Z_e of the routed experts' weights (:func:`ep_splits`).
  Weights are read once per microbatch; Adam runs once on the chip's shard of the
  optimizer state (over Y Z, and the fsdp axes from ZeRO-1 on). The forward pass is the
  ``fwd/`` rows; the backward pass the ``bwd/``, ``recompute/`` and ``optimizer/`` rows.
- **Weights** of one layer are its forward rows' weight reads (every matrix and norm gain;
  with experts, every expert, taken as read: B k >= E), per chip as TP and EP split them;
  the embedding, final norm and lm_head (the rest of the parameters, over TP) are spread
  over the L layers, each layer's collectives moving its share.
- **Collectives** follow from the partitions: ZeRO-3 (FSDP) AllGathers each layer's
  weights forward and again backward (per microbatch) and every ZeRO level
  ReduceScatters their gradients (ZeRO-1/2 then gather the updated weights); DP
  AllReduces the gradient shard; TP AllGathers each block's input [B/(X Z_e), D] and
  ReduceScatters its output (attention and MLP blocks; dOut and dIn backward) and, D
  being split between blocks, AllReduces each D-wide norm's sums of squares (one per
  token); a rerun forward (remat "full") repeats TP's collectives; EP sends two AllToAlls
  per MoE layer and AllReduces the gradients of the weights it replicates; a pipeline
  sends each microbatch's activations N_mb + Z - 2 hops per pass (book ch. 12).
- **The layer the conditions are solved from** is the conventions' ``condition_layer``
  (:func:`condition_rows`): ``"model"``, one whole layer of these rows (attention and MLP,
  each weight matrix its own collectives; no recompute, no optimizer), or
  ``"mlp_block"``, the book's one MLP block (:mod:`symroof.parallel.book_block`).

>>> import symroof as sr
>>> from symroof.symbols import B, D, F, X
>>> mesh = sr.mesh(sr.symbolic_chip(), {"X": X})
>>> rows = sr.train_plan(sr.Transformer(), mesh, "fsdp", batch_tokens=B).layer
>>> rows["forward/fsdp/all-gather attn/q_proj"].V                 # W_q[D, H d_h], all of it
2*D*H*d_h
>>> [k.split(" ")[1] for k in rows if k.startswith("forward/fsdp")]   # every matrix
['attn/q_proj', 'attn/k_proj', 'attn/v_proj', 'attn/o_proj', 'mlp/gate', 'mlp/up', 'mlp/down']
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from ..analysis import TimeBound, time
from ..conventions import current
from ..cost import Cost
from .book_block import Make, mlp_block_rows, routed_params
from .layout import SYM
from .train_rows import _at, _b, _d_norm, ep_splits, forward_key, tp_splits, train_rows

__all__ = ["step_rows", "layer_rows", "condition_rows", "pass_times", "template_make"]

def _compute(rows: dict, n: dict, b: Any, m: Any, z1: Any, own: Any) -> dict[str, Cost]:
    """Per pass, every row's share on one chip (module docstring), summed: ``fwd/`` rows
    forward, the rest (backward, recompute, optimizer) backward. Rows that shard alike are
    added first and scaled once (a few terms, not one per row: the search compiles them);
    ``own``: the share of the parameters whose optimizer state the chip's EP shard holds."""
    Y, Z, Ze, m = (sp.sympify(v) for v in (n["tp"], n["pp"], n["ep"], m))  # exact, no floats
    groups: dict[tuple, list[Cost]] = {}
    for key, c in rows.items():
        p = "forward" if key.startswith("fwd/") else "backward"
        fk = forward_key(key)
        kind = "optimizer" if key.startswith("optimizer/") else (tp_splits(fk), ep_splits(fk))
        groups.setdefault((p, kind), []).append(c)
    out = {"forward": Cost(), "backward": Cost()}
    for (p, kind), costs in groups.items():
        c = sum(costs, Cost())
        if kind == "optimizer":  # once a step, on the chip's shard of the optimizer state
            # (1 + z1 (f - 1)) is f^z1 for a flag z1 in {0, 1}, without a power to evaluate
            out[p] += _at(c, b, own / (Y * Z * (1 + z1 * (n["fsdp"] - 1))), 1)
        else:  # every microbatch; TP splits or repeats it; EP holds 1/Z_e of the experts
            split, experts = kind
            out[p] += _at(c, b, m / (Z * (Y if split else 1)), 1 / Ze if experts else 1)
    return out


def _layer_keys(rows: dict) -> list[str]:
    """The forward-row keys of the layers (every row ``fwd/`` holds L layers of)."""
    outside = ("embed", "pos_embed", "final_norm", "lm_head", "logit_softcap", "loss")
    return [k[4:] for k in rows if k.startswith("fwd/") and k[4:] not in outside]


def _weights(model: Any, rows: dict, n: dict) -> dict[str, Any]:
    """Weight bytes: per forward-row key of the layers, one layer's as one chip holds it
    (TP and EP split), and ``"rest"``: the embedding, final norm and lm_head over TP."""
    out: dict[str, Any] = {}
    whole = sp.Integer(0)
    n = {r: sp.sympify(v) for r, v in n.items()}
    for k in _layer_keys(rows):
        w = sp.sympify(rows[f"fwd/{k}"].weight_bytes).xreplace({_b: 0}) / model.L
        if w != 0:
            whole += w
            out[k] = w / ((n["tp"] if tp_splits(k) else 1) * (n["ep"] if ep_splits(k) else 1))
    out["rest"] = (model.params * model.w_bytes - model.L * whole) / n["tp"]
    return out


def _blocks(keys: list[str]) -> int:
    """Blocks a layer's input is gathered for under TP: attention and the MLP (or MoE)."""
    return len({"mlp" if k.startswith("moe/") else k.split("/")[0] for k in keys if "/" in k})


def _own(model: Any, Ze: Any) -> Any:
    """The share of the parameters one chip's EP shard holds: the routed experts / Z_e."""
    P_e = routed_params(model)
    return 1 if P_e == 0 else (model.params - P_e + P_e / Ze) / model.params


def _put(rows: dict, key: str, cost: Any) -> None:
    if cost is not None:
        rows[key] = cost


def step_rows(model: Any, B: Any, seq: Any, remat: Any, n: dict, m: Any, z: tuple,
              make: Make) -> dict[str, Cost]:
    """The whole step, per chip, forward and backward (module docstring)."""
    rows, _ = train_rows(model, seq, remat)
    n, m = {r: sp.sympify(v) for r, v in n.items()}, sp.sympify(m)
    X, Y, Z, Ze, f = n["dp"] * n["fsdp"], n["tp"], n["pp"], n["ep"], n["fsdp"]
    z1, _, z3 = z
    out = _compute(rows, n, B / (seq * X * Ze * m), m, z1, _own(model, Ze))
    w = _weights(model, rows, n)
    # one layer's weights, the embedding, final norm and head spread over the L layers
    layer = sum(v for k, v in w.items() if k != "rest") + w["rest"] / model.L
    lz = model.L / Z  # layers per stage
    act = model.act_bytes * B * model.D / (X * Ze * m)  # one microbatch's [B/(X Z_e), D]
    tokens = act / model.D  # one value per token (a norm's sum of squares)
    keys = _layer_keys(rows)
    blocks, norms = _blocks(keys), sum(map(_d_norm, keys))
    rerun = 2 if remat == "full" or isinstance(remat, int) else 1  # remat reruns TP, EP comms
    step: dict[str, Cost] = {"forward/compute": out["forward"]}
    _put(step, "forward/fsdp/all-gather weights", make("all-gather", "fsdp", layer, lz * m * z3))
    _put(step, "forward/tp/all-gather activations", make("all-gather", "tp", act, blocks * lz * m))
    _put(step, "forward/tp/reduce-scatter activations",
         make("reduce-scatter", "tp", act, blocks * lz * m))
    _put(step, "forward/tp/all-reduce norm statistics",
         make("all-reduce", "tp", tokens, norms * lz * m))
    _put(step, "forward/pp/send activations", make("send", "pp", act / Y, m + Z - 2))
    step["backward/compute"] = out["backward"]
    _put(step, "backward/fsdp/all-gather weights",
         make("all-gather", "fsdp", layer, lz * (m * z3 + z1 - z3)))
    _put(step, "backward/fsdp/reduce-scatter grads", make("reduce-scatter", "fsdp", layer, lz * z1))
    _put(step, "backward/dp/all-reduce grads", make("all-reduce", "dp", layer / f, lz))
    for kind in ("all-gather", "reduce-scatter"):
        _put(step, f"backward/tp/{kind} activations",
             make(kind, "tp", act, blocks * lz * m * rerun))
    _put(step, "backward/tp/all-reduce norm statistics",
         make("all-reduce", "tp", tokens, norms * lz * m * rerun))
    _put(step, "backward/pp/send gradients", make("send", "pp", act / Y, m + Z - 2))
    if model.moe is not None:
        shared = sum(v for k, v in w.items() if k != "rest" and not ep_splits(k))
        _ep_rows(step, act * Ze * sp.Min(model.moe.k, Ze), model.moe_layers / Z * m,
                 (shared + w["rest"] / model.L) / f, lz, rerun, make)
    return step


def _ep_rows(rows: dict, tokens: Any, blocks: Any, rest: Any, lz: Any, rerun: int,
             make: Make) -> None:
    """EP's rows of the step: two AllToAlls of an EP group's token copies (``tokens`` bytes)
    per MoE layer of the stage and microbatch (``blocks``), forward and backward (rerun
    under remat); and the AllReduce of the gradients of the weights EP replicates (``rest``
    bytes of one layer's shard, the embedding and head spread over the layers), once per
    layer of the stage."""
    _put(rows, "forward/ep/all-to-all tokens", make("all-to-all", "ep", tokens, 2 * blocks))
    _put(rows, "backward/ep/all-to-all tokens",
         make("all-to-all", "ep", tokens, 2 * blocks * rerun))
    _put(rows, "backward/ep/all-reduce grads", make("all-reduce", "ep", rest, lz))


def layer_rows(model: Any, B: Any, seq: Any, n: dict, z: tuple,
               make: Make) -> dict[str, Cost]:
    """One whole layer of the model's training rows at ``B`` tokens in sequences of
    ``seq``, per chip, forward and backward (no recompute, no optimizer, no pipeline): each
    weight matrix gathered (ZeRO-3) forward and again backward, its gradient
    reduce-scattered (ZeRO; ZeRO-1/2 then gather the updated weights) or all-reduced (DP);
    TP's gather of each block's input and scatter of its output (dOut and dIn backward)
    and an AllReduce of each D-wide norm's sums of squares each way; EP's two AllToAlls
    per MoE block each way. Norm gains (D-vectors) are left out of the collectives."""
    rows, _ = train_rows(model, seq, "none")
    n = {r: sp.sympify(v) for r, v in n.items()}
    X, Ze, f = n["dp"] * n["fsdp"], n["ep"], n["fsdp"]
    z1, _, z3 = z
    n1 = {**n, "pp": 1}
    keys = _layer_keys(rows)
    per_layer = {k: c * (1 / model.L) for k, c in rows.items()
                 if k.startswith(("fwd/", "bwd/")) and forward_key(k) in keys}
    out = _compute(per_layer, n1, B / (seq * X * Ze), 1, z1, 1)
    act = model.act_bytes * B * model.D / (X * Ze)  # [B/(X Z_e), D]
    layer: dict[str, Cost] = {"forward/compute": out["forward"]}
    weights = {k: w for k, w in _weights(model, rows, n1).items()
               if k != "rest" and not _d_norm(k)}
    blocks = sorted({"mlp" if k.startswith("moe/") else k.split("/")[0]
                     for k in keys if "/" in k})
    for k, w in weights.items():
        _put(layer, f"forward/fsdp/all-gather {k}", make("all-gather", "fsdp", w, z3))
    for block in blocks:
        _put(layer, f"forward/tp/all-gather {block} in", make("all-gather", "tp", act, 1))
        _put(layer, f"forward/tp/reduce-scatter {block} out",
             make("reduce-scatter", "tp", act, 1))
    for k in filter(_d_norm, keys):
        _put(layer, f"forward/tp/all-reduce {k} statistics",
             make("all-reduce", "tp", act / model.D, 1))
    ep = model.moe is not None
    tokens = act * Ze * sp.Min(model.moe.k, Ze) if ep else 0  # [B/X, D, min(k, Z_e)]
    if ep:
        for what in ("in", "out"):
            _put(layer, f"forward/ep/all-to-all moe {what}", make("all-to-all", "ep", tokens, 1))
    layer["backward/compute"] = out["backward"]
    for k, w in weights.items():
        _put(layer, f"backward/fsdp/all-gather {k}", make("all-gather", "fsdp", w, z3))
        _put(layer, f"backward/fsdp/reduce-scatter {k} grad", make("reduce-scatter", "fsdp", w, z1))
        _put(layer, f"backward/fsdp/all-gather {k} (updated)",
             make("all-gather", "fsdp", w, z1 - z3))
        _put(layer, f"backward/dp/all-reduce {k} grad", make("all-reduce", "dp", w / f, 1))
    for block in blocks:
        _put(layer, f"backward/tp/all-gather {block} dout", make("all-gather", "tp", act, 1))
        _put(layer, f"backward/tp/reduce-scatter {block} din",
             make("reduce-scatter", "tp", act, 1))
    for k in filter(_d_norm, keys):
        _put(layer, f"backward/tp/all-reduce {k} statistics",
             make("all-reduce", "tp", act / model.D, 1))
    if ep:
        for what in ("dout", "din"):
            _put(layer, f"backward/ep/all-to-all moe {what}", make("all-to-all", "ep", tokens, 1))
    return layer


def condition_rows(model: Any, B: Any, seq: Any, n: dict, z: tuple,
                   make: Make) -> dict[str, Cost]:
    """The layer a plan's conditions are solved from, by the conventions in force
    (``condition_layer``): one whole layer of the model (:func:`layer_rows`) or the book's
    MLP block (:func:`~symroof.parallel.book_block.mlp_block_rows`)."""
    if current().condition_layer == "mlp_block":
        return mlp_block_rows(model, B, n, z, make)
    return layer_rows(model, B, seq, n, z, make)


def template_make(kind: str, role: str, V: Any, count: Any) -> Cost:
    """A collective in template form: count x max(lat, V k) (an AllReduce: max(lar, 2 V k);
    an AllToAll's k is ``a_<role>``), with the role's k and latencies left as symbols (see
    :mod:`symroof.parallel.layout`)."""
    if kind == "all-reduce":  # its own latency floor (lar: NCCL's tree may be lower)
        return Cost(net_time=count * sp.Max(SYM[f"lar_{role}"], 2 * V * SYM[f"k_{role}"],
                                            evaluate=False))
    k = SYM[f"a_{role}"] if kind == "all-to-all" else SYM[f"k_{role}"]
    lat = SYM[f"lat_{role}"]
    return Cost(net_time=count * sp.Max(lat, V * k, evaluate=False))  # (no ordering)


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
        symbolic = not all(sp.sympify(t).is_number for t in terms)  # a template: no ordering
        t_net = ((sp.Max(*terms, evaluate=not symbolic) if overlap_axes else sp.Add(*terms))
                 if terms else sp.Integer(0))
        t = time(compute, chip, dtype)
        cost = sum((c for k, c in rows.items() if k.startswith(p + "/")), Cost())
        out[p] = TimeBound(t_math=t.t_math * bubble, t_mem=t.t_mem * bubble, t_net=t_net,
                           cost=cost, chip=t.chip, dtype=dtype)
    return out
