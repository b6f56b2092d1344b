"""Training's roles as partitions on the one mechanism (:mod:`symroof.parallel.partition`):
each operand's stored partition and the partition it is read in, on a mesh whose axes are
the roles (``dp``, ``fsdp``, ``tp``, ``pp``, ``ep``; a role's degree is its axis' size).
:func:`redistribute` of each pair gives the collectives a training step sends; the plan
(:mod:`symroof.parallel.rows`) says only how often each change happens (per microbatch,
per pass, under which ZeRO level) and prices it on the role's own mesh axes.

The partitions (book ch. 5; a weight ``W[D, F]``: D its input, F the rest of its
elements, TP splitting F where the row's work is split, EP where the experts are):

- **Weights**: stored ``W[D_fsdp, F_tp]`` (ZeRO-3), read ``W[D, F_tp]``: one AllGather
  over the fsdp axes each time a pass reads it. ZeRO-1/2 store ``W[D, F_tp]`` and gather
  the updated shard ``W[D_fsdp, F_tp]`` after the optimizer step (the same move).
- **Gradients**: a partial sum over every axis that splits the batch the weight sees,
  ``dW[D, F_tp]{U_dp, U_fsdp}`` (a weight EP replicates, in a model with experts: over ep
  too), reduced into the optimizer state's partition ``dW[D_fsdp, F_tp]`` by one
  redistribute: a ReduceScatter over fsdp (ZeRO, any level), then ONE AllReduce over the
  rest, dp (and ep) together (the book's DP over several axes at their summed bandwidth,
  ch. 5; its DP over DCN with FSDP inside a slice: each chip's DCN share 1/M of the
  gradient, ch. 5 "Scaling Between Pods").
- **TP's block boundaries**: a block reads its input ``x[B_data, D_tp]`` whole,
  ``x[B_data, D]`` (AllGather), and writes its output as partial sums ``y[B_data, D]{U_tp}``
  scattered back to ``y[B_data, D_tp]`` (ReduceScatter); the batch ``B_data`` is split over
  ``dp``, ``fsdp`` and ``ep``. A D-wide norm's sums of squares of ``x[B_data, D_tp]`` are
  partial over tp, ``s[B_data]{U_tp}``, and all-reduced.
- **EP's dispatch**: the routed copies ``r[B_data, K, D]`` (K = min(k, Z_e) copies of each
  token that leave its group) move their ep split from the batch to the copies,
  ``r[B_dp_fsdp, K_ep, D]``: one AllToAll (and one back to combine).

>>> from symroof.symbols import PLAN
>>> [(kind, role, V) for kind, role, V in weight_moves("gather", True, False)]
[('all-gather', 'fsdp', 1/n_tp)]
>>> [(kind, role, V) for kind, role, V in weight_moves("grad", True, False)]
[('reduce-scatter', 'fsdp', 1/n_tp), ('all-reduce', 'dp', 1/(n_fsdp*n_tp))]
>>> weight_moves("grad", False, False, experts=True)[1][:2]   # attention's, beside experts
('all-reduce', 'dp+ep')
"""

from __future__ import annotations

import functools
from typing import Any

import sympy as sp

from ..symbols import PLAN, PLAN_ROLES
from .partition import local_elements, moves
from .sharding import ArraySpec

__all__ = ["ROLE_AXES", "role_mesh", "weight_partitions", "weight_moves", "activation_moves",
           "at_degrees", "label"]

#: the role mesh's axes: one per role, sized by the role's degree (the template's n_<role>)
ROLE_AXES = PLAN_ROLES
_DATA = ("dp", "fsdp", "ep")  # the axes that split the batch


@functools.lru_cache(maxsize=1)
def role_mesh() -> Any:
    """A symbolic-chip mesh whose axes are the roles, sized ``n_<role>`` (the template's
    symbols): only the kinds, axes and V of its collectives are read.

    >>> role_mesh().names
    ('dp', 'fsdp', 'tp', 'pp', 'ep')
    """
    from ..hardware.chip import symbolic_chip
    from ..hardware.mesh import mesh

    return mesh(symbolic_chip(), {r: PLAN[f"n_{r}"] for r in ROLE_AXES})


def _spec(name: str, dims: tuple, axes: tuple, unreduced: tuple = ()) -> ArraySpec:
    return ArraySpec(name, dims, tuple(tuple(a) for a in axes), tuple(unreduced))


def weight_partitions(tp: bool, ep: bool, experts: bool = False) -> dict[str, ArraySpec]:
    """A weight's partitions: ``stored`` (ZeRO-3), ``read`` (what a pass reads), ``grad``
    (the backward pass' partial sums: over the ep axes too for a weight EP replicates in a
    model with ``experts``) and ``state`` (the optimizer state's shard); ``tp`` and ``ep``:
    whether those roles split the weight.

    >>> {k: str(v) for k, v in weight_partitions(True, False).items()}["grad"]
    'dW[D, F_{tp}]{U_{dp,fsdp}}'
    """
    f = tuple(r for r, on in (("ep", ep), ("tp", tp)) if on)
    dims = ("D", "F")
    partial = ("dp", "fsdp") + (("ep",) if experts and not ep else ())
    return {"stored": _spec("W", dims, (("fsdp",), f)), "read": _spec("W", dims, ((), f)),
            "grad": _spec("dW", dims, ((), f), partial),
            "state": _spec("dW", dims, (("fsdp",), f))}


def _triples(src: ArraySpec, dst: ArraySpec, sizes: dict) -> tuple[tuple[str, str, Any], ...]:
    out = []
    for mv in moves(src, dst, role_mesh(), sizes, 1):
        c = mv.collective
        role = "+".join(c.axes)  # one role's axes, or dp and ep together (JOINT)
        out.append((c.kind, role, sp.sympify(c.V)))
    return tuple(out)


@functools.lru_cache(maxsize=32)
def weight_moves(change: str, tp: bool, ep: bool, experts: bool = False,
                 ) -> tuple[tuple[str, str, Any], ...]:
    """(kind, role, V as a share of the whole weight's bytes) of a weight's change of
    partition: ``"gather"`` (stored to read: ZeRO-3 before each pass, ZeRO-1/2 after the
    update) or ``"grad"`` (gradient partial sums into the optimizer state's partition; a
    role ``"dp+ep"``: one collective over both); ``experts``: the model has experts (a
    weight EP does not split sees the batch split over ep too).

    >>> weight_moves("gather", False, True)
    (('all-gather', 'fsdp', 1/n_ep),)
    """
    p = weight_partitions(tp, ep, experts)
    src, dst = {"gather": ("stored", "read"), "grad": ("grad", "state")}[change]
    return _triples(p[src], p[dst], {"D": 1, "F": 1})


@functools.lru_cache(maxsize=8)
def activation_moves(change: str) -> tuple[tuple[str, str, Any], ...]:
    """(kind, role, V as a share of the global microbatch's bytes: [B, D] tokens by width,
    [B] for norm statistics, [B, K, D] for EP's copies) of TP's and EP's changes of
    partition: ``"in"`` (a block's input gathered), ``"out"`` (its output's partial sums
    scattered), ``"stats"`` (a norm's sums of squares all-reduced), ``"dispatch"`` (EP's
    AllToAll of the routed copies); and a pipeline's ``"hop"``: a stage's output, held as
    between blocks (``x[B_data, D_tp]``), each chip's shard sent to the same chip of the
    next stage (a point-to-point send over pp, V that shard).

    >>> activation_moves("in")
    (('all-gather', 'tp', 1/(n_dp*n_ep*n_fsdp)),)
    >>> activation_moves("dispatch")[0][:2]
    ('all-to-all', 'ep')
    >>> activation_moves("hop")
    (('send', 'pp', 1/(n_dp*n_ep*n_fsdp*n_tp)),)
    """
    bd, x = ("B", "D"), (_DATA, ())
    if change == "hop":  # the stage's output as the chip holds it: one shard each
        shard = local_elements(_spec("x", bd, (_DATA, ("tp",))), {"B": 1, "D": 1}, role_mesh())
        return (("send", "pp", sp.sympify(shard)),)
    pairs = {
        "in": (_spec("x", bd, (_DATA, ("tp",))), _spec("x", bd, x)),
        "out": (_spec("y", bd, x, ("tp",)), _spec("y", bd, (_DATA, ("tp",)))),
        "stats": (_spec("s", ("B",), (_DATA,), ("tp",)), _spec("s", ("B",), (_DATA,))),
        "dispatch": (_spec("r", ("B", "K", "D"), (_DATA, (), ())),
                     _spec("r", ("B", "K", "D"), (("dp", "fsdp"), ("ep",), ()))),
    }
    src, dst = pairs[change]
    return _triples(src, dst, {"B": 1, "D": 1, "K": 1})


def at_degrees(triples: tuple, n: dict, V: Any) -> list[tuple[str, str, Any]]:
    """A change of partition's collectives (:func:`weight_moves`,
    :func:`activation_moves`) for an array of ``V`` bytes at role degrees ``n``:
    (kind, role, bytes).

    >>> at_degrees(activation_moves("in"), {"dp": 1, "fsdp": 4, "tp": 2, "pp": 1, "ep": 1}, 64)
    [('all-gather', 'tp', 16)]
    """
    at = {PLAN[f"n_{r}"]: n[r] for r in ROLE_AXES}
    return [(kind, label(role, n), V * share.xreplace(at)) for kind, role, share in triples]


def label(role: str, n: dict) -> str:
    """A collective's role as a plan names it: of roles joined by '+' those whose degree
    is not 1 (a template's symbolic degrees keep them all; none left: the first).

    >>> label("dp+ep", {"dp": 4, "ep": 1}), label("dp+ep", {"dp": 4, "ep": 2})
    ('dp', 'dp+ep')
    """
    if "+" not in role:
        return role
    parts = role.split("+")
    keep = [r for r in parts if sp.sympify(n[r]) != 1]
    return "+".join(keep or parts[:1])
