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
  embeddings, routing: :func:`tp_splits`); a pipeline's chip runs the slowest stage's
  share of each row (:func:`stage_shares`: the last stage's ceil(L/Z) layers, the head
  and the loss); EP holds 1/Z_e of the routed experts' weights (:func:`ep_splits`).
  Weights are read once per microbatch; Adam runs once on the chip's shard of the
  optimizer state (the last stage's, :func:`stage_state`; over Y, and the fsdp axes from
  ZeRO-1 on; the collectives' weights are the average stage's). The forward pass is the
  ``fwd/`` rows; the backward pass the ``bwd/``, ``recompute/`` and ``optimizer/`` rows.
- **Activation bytes** on a TP rank are its share of each array a row reads and writes
  (:func:`tp_act_bytes`, through :func:`~symroof.parallel.partition.local_act_bytes`, as
  serving's): a projection reads its input h[B, D] whole on every rank and writes 1/Y of
  its heads or F; a weight matmul's dX reads dY and writes dX, its dW reads X and dY. A row
  whose declared arrays do not account for its bytes (:func:`undeclared`: attention's
  score matrix, the loss, the backward of ops that are not weight matmuls) keeps its work's
  split.
- **Weights** of one layer are its forward rows' weight reads (every matrix and norm gain;
  with experts, every expert, taken as read: B k >= E), per chip as TP and EP split them;
  the embedding, final norm and lm_head (the rest of the parameters, over TP) are spread
  over the L layers, each layer's collectives moving its share.
- **Collectives** follow from the partitions (:mod:`symroof.parallel.train_layout`: each
  change of partition's kind, role and bytes come from ``redistribute``; this module says
  how often a step makes it): ZeRO-3 (FSDP) AllGathers each layer's
  weights forward and again backward (per microbatch) and every ZeRO level
  ReduceScatters their gradients (ZeRO-1/2 then gather the updated weights); DP
  AllReduces the gradient shard; TP AllGathers each block's input [B/(X Z_e), D] and
  ReduceScatters its output (attention and MLP blocks; dOut and dIn backward) and, D
  being split between blocks, AllReduces each D-wide norm's sums of squares (one per
  token); a rerun forward (remat "full") repeats TP's collectives; EP sends two AllToAlls
  per MoE layer, and the gradients of the weights it replicates are reduced over dp and
  ep in one AllReduce (row role ``dp+ep``; ``dp`` or ``ep`` where the other's degree is 1,
  and counted in each of its roles' traffic where the axes overlap); a pipeline
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

import dataclasses
import functools
from typing import Any

import sympy as sp

from ..analysis import TimeBound, time
from ..conventions import current
from ..cost import Cost
from ..symbols import B as SYM_B
from ..symbols import T as SYM_T
from .book_block import Make, mlp_block_rows
from .layout import SYM
from .partition import array_layout, local_act_bytes
from .train_layout import ROLE_AXES, activation_moves, at_degrees, label, weight_moves
from .train_rows import (
    _at,
    _b,
    _d_norm,
    ep_splits,
    forward_key,
    stage_shares,
    stage_state,
    tp_splits,
    train_rows,
)

__all__ = ["step_rows", "layer_rows", "condition_rows", "pass_times", "template_make",
           "tp_act_bytes", "train_act_layout", "undeclared"]

def _compute(rows: dict, n: dict, b: Any, m: Any, z1: Any, own: Any, share: Any,
             acts: dict | None = None) -> dict[str, Cost]:
    """Per pass, every row's share on one chip (module docstring), summed: ``fwd/`` rows
    forward, the rest (backward, recompute, optimizer) backward. Rows that shard alike are
    added first and scaled once (a few terms, not one per row: the search compiles them);
    ``own``: the share of the parameters whose optimizer state the chip's pipeline stage
    and EP shard hold (:func:`stage_state`);
    ``share``: a row's share on the pipeline's slowest stage (:func:`stage_shares`);
    ``acts``: a row's activation bytes (and stores) on one TP rank where its declared
    arrays account for them (:func:`tp_act_bytes`); the other rows' are split as their
    work is."""
    Y, Z, Ze, m = (sp.sympify(v) for v in (n["tp"], n["pp"], n["ep"], m))  # exact, no floats
    groups: dict[tuple, list[Cost]] = {}
    local: dict[Any, list[Cost]] = {}
    for key, c in rows.items():
        p = "forward" if key.startswith("fwd/") else "backward"
        fk = forward_key(key)
        if acts and key in acts:  # its arrays' shares, every microbatch, on the stage
            act, store = acts[key]
            local.setdefault((p, share(fk)), []).append(
                Cost(act_bytes=act, act_store_bytes=store))
            c = dataclasses.replace(c, act_bytes=0, act_store_bytes=0)
        kind = "optimizer" if key.startswith("optimizer/") else (tp_splits(fk), ep_splits(fk),
                                                                 share(fk))
        groups.setdefault((p, kind), []).append(c)
    out = {"forward": Cost(), "backward": Cost()}
    for (p, kind), costs in groups.items():
        c = sum(costs, Cost())
        if kind == "optimizer":  # once a step, on the chip's shard of the optimizer state
            # (1 + z1 (f - 1)) is f^z1 for a flag z1 in {0, 1}, without a power to evaluate
            out[p] += _at(c, b, own / (Y * (1 + z1 * (n["fsdp"] - 1))), 1)
        else:  # every microbatch; TP splits or repeats it; EP holds 1/Z_e of the experts
            split, experts, stage = kind
            out[p] += _at(c, b, m * stage / (Y if split else 1), 1 / Ze if experts else 1)
    for (p, stage), costs in local.items():
        out[p] += _at(sum(costs, Cost()), b, m * stage, 1)
    return out


def tp_act_bytes(model: Any, rows: dict, seq: Any, Y: Any) -> dict[str, tuple[Any, Any]]:
    """Row key -> (activation bytes, of them stored) of the step's ``rows`` on one of Y
    tensor-parallel ranks, for each row whose declared arrays account for its activation
    bytes exactly (:func:`train_act_layout`): each array's elements over the ways TP splits
    it (:func:`~symroof.parallel.partition.local_act_bytes`: the replicated input h[B, D]
    of a projection is read whole on every rank). The rows left out (:func:`undeclared`)
    keep the work's split. Y = 1: none (one rank moves all of every row).

    >>> import symroof as sr
    >>> from symroof.parallel.train_rows import _b, train_rows
    >>> m = sr.model("llama-3.1-8b")
    >>> act, _ = tp_act_bytes(m, train_rows(m, 4096, "none"), 4096, 4)["fwd/attn/q_proj"]
    >>> act == _b * 32 * 2 * 4096 * (4096 + 4096 // 4)   # b L ab T (D + H d_h / 4)
    True
    """
    if sp.sympify(Y) == 1:
        return {}
    lay, sizes = train_act_layout(model, seq)
    mesh = _tp_mesh(Y)
    out = {}
    for key, c in rows.items():
        if key in lay.keys and c.act_bytes != 0 and _accounts(lay.rules[key], c, sizes,
                                                              model.act_bytes):
            rule = lay.rules[key]
            act = local_act_bytes(rule, c.act_bytes, mesh, sizes, model.act_bytes)
            store = (local_act_bytes(rule, c.act_store_bytes, mesh, sizes, model.act_bytes,
                                     stores=True) if c.act_store_bytes != 0 else 0)
            out[key] = (act, store)
    return out


@functools.lru_cache(maxsize=256)
def _tp_acts(model: Any, seq: Any, remat: Any, Y: Any, conventions: Any,
             ) -> dict[str, tuple[Any, Any]]:
    """:func:`tp_act_bytes` of the step's rows (:func:`train_rows`) under ``conventions``
    (the ones in force: part of the key), built once per plan shape."""
    return tp_act_bytes(model, train_rows(model, seq, remat), seq, Y)


def undeclared(model: Any, rows: dict, seq: Any) -> list[str]:
    """The keys of the step's ``rows`` with activation bytes that their declared arrays do
    not account for exactly (or that declare none): their bytes are split as their work.

    >>> import symroof as sr
    >>> from symroof.parallel.train_rows import train_rows
    >>> m = sr.model("llama-3.1-8b")
    >>> "fwd/attn/softmax" in undeclared(m, train_rows(m, 4096, "none"), 4096)
    True
    """
    lay, sizes = train_act_layout(model, seq)
    return [k for k, c in rows.items() if c.act_bytes != 0 and not (
        k in lay.keys and _accounts(lay.rules[k], c, sizes, model.act_bytes))]


def _accounts(rule: Any, c: Cost, sizes: dict, width: Any) -> bool:
    """Whether ``rule``'s declared arrays account for row ``c``'s activation bytes exactly
    at ``sizes`` (and its stores, where the row counts them apart: training's forward
    rows do not)."""
    def moved(arrays: Any) -> Any:
        return width * rule.repeats * sp.Add(*(e for _, e in arrays)).xreplace(
            {SYM_B: sizes["B"], SYM_T: sizes["T"]})

    if not rule.moved:
        return False
    return (sp.expand(moved(rule.moved) - c.act_bytes) == 0
            and (c.act_store_bytes == 0
                 or sp.expand(moved(rule.moved[len(rule.reads):]) - c.act_store_bytes) == 0))


class _ActLayout:
    """A training step's activation layout: ``rules`` row key -> Operands, ``keys``."""

    def __init__(self, rules: dict) -> None:
        self.rules, self.keys = rules, frozenset(rules)


def train_act_layout(model: Any, seq: Any) -> tuple[_ActLayout, dict[str, Any]]:
    """The arrays each of a training step's rows reads and writes, as the blocks declare
    them, partitioned as tensor parallelism splits them over the axis ``tp`` (serving's 1-D
    tables: heads, F and the vocabulary split, the residual stream and the norms' outputs
    whole on every rank, o_proj's and W_down's outputs partial sums), and the sizes of the
    step (B the sequences of a microbatch, T = ``seq``). Forward and recompute rows are
    the forward's declarations (:meth:`~symroof.models.blocks.Blocks.uses`); a weight
    matmul's gradient rows ``/dx`` and ``/dw`` the arrays the block's declaration implies
    (:func:`~symroof.models.blocks.backprop.gradient_uses`).

    >>> import symroof as sr
    >>> lay, _ = train_act_layout(sr.model("llama-3.1-8b"), 4096)
    >>> print(*lay.rules["bwd/mlp/down/dx"].reads, lay.rules["bwd/mlp/down/dx"].writes)
    y[B, D]{U_{tp}} a[B, F_{tp}]
    """
    return _train_act_layout(model.blocks, sp.sympify(seq))


@functools.lru_cache(maxsize=64)
def _train_act_layout(blocks: Any, seq: Any) -> tuple[_ActLayout, dict[str, Any]]:
    from ..models.blocks.backprop import gradient_uses
    from .serving_layouts import _tables_1d  # TP's partitions: serving's 1-D over one axis

    part, at = _tables_1d(("tp",), ("tp",), (), ())
    fwd = blocks.uses()
    uses: dict[str, Any] = {}
    for k, u in fwd.items():
        uses[f"fwd/{k}"] = uses[f"recompute/{k}"] = u
        for d in ("dx", "dw"):
            if (g := gradient_uses(u, d)) is not None:
                uses[f"bwd/{k}/{d}"] = g
    at = {(key, array): spec for (row, array), spec in at.items()
          for key in uses if forward_key(key) == row}
    arrays = blocks.arrays()
    elements = {p: sp.Mul(*blocks.shape(p)) for p, a in arrays.items() if a.kind == "act"}
    lay = array_layout("train tp", uses, part, at, elements=elements)
    return _ActLayout(dict(lay.rules)), {"B": _b, "T": seq}


@functools.lru_cache(maxsize=64)
def _tp_mesh(Y: Any) -> Any:
    from ..hardware.chip import symbolic_chip
    from ..hardware.mesh import mesh

    return mesh(symbolic_chip(), {"tp": Y}, custom=True)


def _layer_keys(model: Any, rows: dict) -> list[str]:
    """The forward-row keys of the layers (every row ``fwd/`` holds L layers of): not the
    blocks' rows outside the layers, nor the loss."""
    outside = (*model.blocks.outside(), "loss")
    return [k[4:] for k in rows if k.startswith("fwd/") and k[4:] not in outside]


def _weight_moves(model: Any, rows: dict, n: dict, change: str, keys: Any = None,
                  ) -> dict[tuple[str, str], Any]:
    """(kind, role) -> bytes of one layer's weights' ``change`` of partition, a layer of
    the pipeline's last stage (:func:`_whole_weights`), each weight its own partitions
    (:func:`~symroof.parallel.train_layout.weight_moves`); ``keys``: only those weights."""
    at = {SYM[f"n_{r}"]: n[r] for r in ROLE_AXES}
    experts = model.moe is not None
    terms: dict[tuple[str, str], list[tuple[Any, Any]]] = {}
    for k, (w, tp, ep) in _whole_weights(model, rows, n["pp"]).items():
        if keys is None or k in keys:
            for kind, role, share in weight_moves(change, tp, ep, experts):
                terms.setdefault((kind, label(role, n)), []).append((share.xreplace(at), w))
    out = {}
    for key, pairs in terms.items():  # the share all weights have in common taken out
        common = functools.reduce(sp.gcd, [s for s, _ in pairs])  # (fewer terms to compile)
        common = 1 if common.is_number else common
        out[key] = common * sum(w * (s / common) for s, w in pairs)
    return out


def _whole_weights(model: Any, rows: dict, Z: Any = 1) -> dict[str, tuple[Any, bool, bool]]:
    """A layer's weight bytes, unsharded, per forward-row key of the layers, with whether
    TP and EP split them, on the last of ``Z`` pipeline stages: its weights
    (:func:`stage_shares` of each row's, the rest of its parameters from
    :meth:`~symroof.models.blocks.Blocks.stage_params`) over its layers; ``"rest"``: the
    final norm and lm_head (and, with one stage, the embedding), spread over those layers
    (TP splits them). One stage: the model's weights over its L layers."""
    out: dict[str, tuple[Any, bool, bool]] = {}
    share, layers = stage_shares(model, Z), model.blocks.last_stage(Z)["all"]
    whole = sp.Integer(0)
    for k in _layer_keys(model, rows):
        w = sp.sympify(rows[f"fwd/{k}"].weight_bytes).xreplace({_b: 0}) * share(k) / layers
        if w != 0:
            whole += w
            out[k] = (w, tp_splits(k), ep_splits(k))
    stage = sum(model.blocks.stage_params(Z).values()) * model.w_bytes
    out["rest"] = ((stage - layers * whole) / layers, True, False)
    return out


def _blocks(keys: list[str]) -> int:
    """Blocks a layer's input is gathered for under TP: attention and the MLP (or MoE)."""
    return len({"mlp" if k.startswith("moe/") else k.split("/")[0] for k in keys if "/" in k})


def _reruns_matmuls(model: Any, rows: dict) -> bool:
    """Whether the step's remat reruns a weight matmul (``full``, n checkpoints, or a tuple
    of kept tensors that leaves one out): then TP's and EP's forward collectives run again
    in the backward, for the whole layer; the other named policies rerun none."""
    from ..models.training import matmul_keys

    return any(f"recompute/{k}" in rows for k in matmul_keys(model))


def _put(rows: dict, key: str, cost: Any) -> None:
    if cost is not None:
        rows[key] = cost


def step_rows(model: Any, B: Any, seq: Any, remat: Any, n: dict, m: Any, z: tuple,
              make: Make) -> dict[str, Cost]:
    """The whole step, per chip, forward and backward (module docstring)."""
    rows = train_rows(model, seq, remat)
    n, m = {r: sp.sympify(v) for r, v in n.items()}, sp.sympify(m)
    X, Z, Ze = n["dp"] * n["fsdp"], n["pp"], n["ep"]
    z1, _, z3 = z
    out = _compute(rows, n, B / (seq * X * Ze * m), m, z1, stage_state(model, Z, Ze),
                   stage_shares(model, Z), _tp_acts(model, seq, remat, n["tp"], current()))
    lz = model.blocks.last_stage(Z)["all"]  # the slowest stage's layers, ceil(L/Z)
    mb = model.act_bytes * B / m  # bytes of one value per token of a (global) microbatch
    # a pipeline hop: the stage's output x[B_data, D_tp], one chip's shard of the microbatch
    ((_, _, hop),) = at_degrees(activation_moves("hop"), n, mb * model.D)
    keys = _layer_keys(model, rows)
    blocks, norms = _blocks(keys), sum(map(_d_norm, keys))
    rerun = 2 if _reruns_matmuls(model, rows) else 1  # a rerun forward reruns TP, EP comms
    # the changes of partition (train_layout), each as often as the schedule makes it
    gather = _weight_moves(model, rows, n, "gather")  # ZeRO-3 each pass; ZeRO-1/2 updated
    grads = _weight_moves(model, rows, n, "grad")  # ReduceScatter (ZeRO), AllReduce (dp, ep)
    x_in = at_degrees(activation_moves("in"), n, mb * model.D)  # TP: a block's input
    y_out = at_degrees(activation_moves("out"), n, mb * model.D)  # TP: its output
    stats = at_degrees(activation_moves("stats"), n, mb)  # TP: a D-wide norm's sums of squares
    step: dict[str, Cost] = {"forward/compute": out["forward"]}
    for (kind, role), V in gather.items():
        _put(step, f"forward/{role}/{kind} weights", make(kind, role, V, lz * m * z3))
    for kind, role, V in x_in + y_out:
        _put(step, f"forward/{role}/{kind} activations", make(kind, role, V, blocks * lz * m))
    for kind, role, V in stats:
        _put(step, f"forward/{role}/{kind} norm statistics", make(kind, role, V, norms * lz * m))
    _put(step, "forward/pp/send activations", make("send", "pp", hop, m + Z - 2))
    step["backward/compute"] = out["backward"]
    for (kind, role), V in gather.items():
        _put(step, f"backward/{role}/{kind} weights",
             make(kind, role, V, lz * (m * z3 + z1 - z3)))
    for (kind, role), V in grads.items():  # every ZeRO level scatters; DP reduces its shard
        _put(step, f"backward/{role}/{kind} grads",
             make(kind, role, V, lz * (z1 if kind == "reduce-scatter" else 1)))
    for kind, role, V in x_in + y_out:
        _put(step, f"backward/{role}/{kind} activations",
             make(kind, role, V, blocks * lz * m * rerun))
    for kind, role, V in stats:
        _put(step, f"backward/{role}/{kind} norm statistics",
             make(kind, role, V, norms * lz * m * rerun))
    _put(step, "backward/pp/send gradients", make("send", "pp", hop, m + Z - 2))
    if model.moe is not None:
        ((_, _, tokens),) = at_degrees(activation_moves("dispatch"), n,
                                   mb * model.D * sp.Min(model.moe.k, Ze))
        _ep_rows(step, tokens, model.blocks.last_stage(Z)["moe"] * m, rerun, make)
    return step


def _ep_rows(rows: dict, tokens: Any, blocks: Any, rerun: int, make: Make) -> None:
    """EP's AllToAlls of the step: two of an EP group's token copies (``tokens`` bytes) per
    MoE layer of the stage and microbatch (``blocks``), forward and backward (rerun under
    remat). (The gradients of the weights EP replicates are the grads' rows: one AllReduce
    over dp and ep.)"""
    _put(rows, "forward/ep/all-to-all tokens", make("all-to-all", "ep", tokens, 2 * blocks))
    _put(rows, "backward/ep/all-to-all tokens",
         make("all-to-all", "ep", tokens, 2 * blocks * rerun))


def layer_rows(model: Any, B: Any, seq: Any, n: dict, z: tuple,
               make: Make) -> dict[str, Cost]:
    """One whole layer of the model's training rows at ``B`` tokens in sequences of
    ``seq``, per chip, forward and backward (no recompute, no optimizer, no pipeline): each
    weight matrix gathered (ZeRO-3) forward and again backward, its gradient
    reduce-scattered (ZeRO; ZeRO-1/2 then gather the updated weights) or all-reduced (DP);
    TP's gather of each block's input and scatter of its output (dOut and dIn backward)
    and an AllReduce of each D-wide norm's sums of squares each way; EP's two AllToAlls
    per MoE block each way. Norm gains (D-vectors) are left out of the collectives. The
    layer is the model's layer rows over L: the average layer, which for a model with dense
    first layers is part dense MLP and part MoE block (DeepSeek-V3: 3/61 of the one and
    58/61 of the other)."""
    rows = train_rows(model, seq, "none")
    n = {r: sp.sympify(v) for r, v in n.items()}
    X, Ze = n["dp"] * n["fsdp"], n["ep"]
    z1, _, z3 = z
    n1 = {**n, "pp": 1}
    keys = _layer_keys(model, rows)
    per_layer = {k: c * (1 / model.L) for k, c in rows.items()
                 if k.startswith(("fwd/", "bwd/")) and forward_key(k) in keys}
    acts = {k: (a / model.L, st / model.L)  # (the rows' layers' average, as per_layer)
            for k, (a, st) in _tp_acts(model, seq, "none", n["tp"], current()).items()
            if k in per_layer}
    out = _compute(per_layer, n1, B / (seq * X * Ze), 1, z1, 1, stage_shares(model, 1), acts)
    tok = model.act_bytes * B  # bytes of one value per token of the (global) batch
    layer: dict[str, Cost] = {"forward/compute": out["forward"]}
    experts = model.moe is not None
    weights = {k: (at_degrees(weight_moves("gather", tp, ep), n1, w),
                   at_degrees(weight_moves("grad", tp, ep, experts), n1, w))
               for k, (w, tp, ep) in _whole_weights(model, rows).items()
               if k != "rest" and not _d_norm(k)}  # each matrix's changes of partition
    blocks = sorted({"mlp" if k.startswith("moe/") else k.split("/")[0]
                     for k in keys if "/" in k})
    moved = {c: at_degrees(activation_moves(c), n1, tok * model.D) for c in ("in", "out")}
    stats = at_degrees(activation_moves("stats"), n1, tok)
    for k, (gather, _) in weights.items():
        for kind, role, V in gather:
            _put(layer, f"forward/{role}/{kind} {k}", make(kind, role, V, z3))
    for block in blocks:
        for what in ("in", "out"):
            for kind, role, V in moved[what]:
                _put(layer, f"forward/{role}/{kind} {block} {what}", make(kind, role, V, 1))
    for k in filter(_d_norm, keys):
        for kind, role, V in stats:
            _put(layer, f"forward/{role}/{kind} {k} statistics", make(kind, role, V, 1))
    ep = model.moe is not None
    if ep:  # [B/X, D, min(k, Z_e)] copies each way
        ((a2a, ep_role, tokens),) = at_degrees(activation_moves("dispatch"), n1,
                                           tok * model.D * sp.Min(model.moe.k, Ze))
        for what in ("in", "out"):
            _put(layer, f"forward/{ep_role}/{a2a} moe {what}", make(a2a, ep_role, tokens, 1))
    layer["backward/compute"] = out["backward"]
    for k, (gather, grads) in weights.items():
        for kind, role, V in gather:
            _put(layer, f"backward/{role}/{kind} {k}", make(kind, role, V, z3))
        scatter = [g for g in grads if g[0] == "reduce-scatter"]  # into the state's shard
        for kind, role, V in scatter:
            _put(layer, f"backward/{role}/{kind} {k} grad", make(kind, role, V, z1))
        for kind, role, V in gather:  # ZeRO-1/2: the updated shard gathered
            _put(layer, f"backward/{role}/{kind} {k} (updated)", make(kind, role, V, z1 - z3))
        for kind, role, V in (g for g in grads if g not in scatter):  # DP's AllReduce
            _put(layer, f"backward/{role}/{kind} {k} grad", make(kind, role, V, 1))
    for block in blocks:
        for what, name in (("in", "dout"), ("out", "din")):
            for kind, role, V in moved[what]:
                _put(layer, f"backward/{role}/{kind} {block} {name}", make(kind, role, V, 1))
    for k in filter(_d_norm, keys):
        for kind, role, V in stats:
            _put(layer, f"backward/{role}/{kind} {k} statistics", make(kind, role, V, 1))
    if ep:
        for what in ("dout", "din"):
            _put(layer, f"backward/{ep_role}/{a2a} moe {what}", make(a2a, ep_role, tokens, 1))
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
        every = []  # each collective once (no overlap: their sum)
        for key, cost in rows.items():
            part, role = key.split("/")[:2]
            if part == p and role != "compute":
                every.append(cost.net_time)
                for r in role.split("+"):  # dp+ep: on the dp axes and on the ep axes
                    by_role[r] = by_role.get(r, 0) + cost.net_time
        terms = list(by_role.values())
        symbolic = not all(sp.sympify(t).is_number for t in terms)  # a template: no ordering
        t_net = ((sp.Max(*terms, evaluate=not symbolic) if overlap_axes else sp.Add(*every))
                 if terms else sp.Integer(0))
        t = time(compute, chip, dtype, conventions=current())
        cost = sum((c for k, c in rows.items() if k.startswith(p + "/")), Cost())
        out[p] = TimeBound(t_math=t.t_math * bubble, t_mem=t.t_mem * bubble, t_net=t_net,
                           cost=cost, chip=t.chip, dtype=dtype)
    return out
