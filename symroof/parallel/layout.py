"""Training strategies as roles on mesh axes (book ch. 5), and what each role's axes cost.

A strategy names the roles it uses, joined by ``+``: ``dp`` (pure data parallelism:
weights replicated, gradients AllReduced), ``zero1``/``zero2``/``zero3`` (ZeRO sharding of
the optimizer state / + gradients / + weights; ``fsdp`` is ``zero3``), ``tp`` (Megatron
tensor parallelism), ``pp`` (pipeline stages) and ``ep`` (expert parallelism: a mixture of
experts' experts split over its axes, ``W_in[E_Z, D, F]``; the batch is split over them too,
and every other weight is replicated there, as under ``dp``). Each role runs over some mesh
axes (the book's X for data/FSDP, Y for tensor, Z for stages, Z_e for experts); every mesh
axis serves exactly one role, so the chips are N = X Y Z Z_e. ZeRO roles take their axes
from ``fsdp=``.

A role's collectives are priced by :func:`symroof.hardware.collectives.all_gather` on its
axes, so a TPU torus, a line without wraparound, an NVLink node, the scale-out fat tree and
DCN between slices all come from the mesh. Each role is summarised by two numbers: ``k``,
seconds per byte of an AllGather (= a ReduceScatter; an AllReduce is twice both terms), and
``lat``, its latency floor; a pipeline hop is one point-to-point send along the ``pp`` axes.
The ``ep`` role also has ``a``, seconds per byte of an AllToAll (:func:`a2a_link`).

>>> import symroof as sr
>>> roles, zero = parse_strategy("fsdp+tp")
>>> roles, zero
(('fsdp', 'tp'), 3)
>>> m = sr.mesh("tpu-v5p", "4x4x4")
>>> axes = assign_axes(m, roles, {"tp": "Z"})
>>> axes
{'dp': (), 'fsdp': ('X', 'Y'), 'tp': ('Z',), 'pp': (), 'ep': ()}
>>> role_links(m, axes)["fsdp"]                     # k = 1/(2 W_ici): two axes; 4 hops of 1 us
(1/360000000000, 1/250000)
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import sympy as sp

from ..conventions import Conventions, current
from ..hardware.collectives import all_gather, all_to_all, collective
from ..hardware.mesh import Mesh
from ..symbols import PLAN, PLAN_ROLES

__all__ = ["ROLES", "JOINT", "PARTS", "parse_strategy", "assign_axes", "role_links",
           "a2a_link", "allreduce_latency", "SYM", "role_axes",
           "check_experts", "check_degrees"]

#: the roles, in the order a plan prints them (the template's symbols are named after them)
ROLES = PLAN_ROLES
#: the dp and ep axes as one group: a weight EP replicates has its gradient's partial sums
#: over both (the batch is split over both), reduced in one AllReduce over all of them
JOINT = "dp+ep"
#: strategy parts -> (role, ZeRO level); ``fsdp`` is ZeRO-3
PARTS = {"dp": ("dp", 0), "zero1": ("fsdp", 1), "zero2": ("fsdp", 2), "zero3": ("fsdp", 3),
         "fsdp": ("fsdp", 3), "tp": ("tp", 0), "pp": ("pp", 0), "ep": ("ep", 0)}


#: the template's symbols (declared in the symbol table: ``symroof.symbols.PLAN``)
SYM = PLAN


def parse_strategy(strategy: str) -> tuple[tuple[str, ...], int]:
    """``"zero1+tp+pp"`` -> (roles in ``ROLES`` order, ZeRO level); unknown or repeated
    parts fail naming them."""
    if not isinstance(strategy, str) or not strategy.strip():
        raise ValueError(f"strategy must be a name such as 'fsdp+tp', got {strategy!r}")
    parts = [p.strip().lower() for p in strategy.split("+")]
    roles, zero = [], 0
    for part in parts:
        if part not in PARTS:
            raise ValueError(f"unknown strategy part {part!r} in {strategy!r}; known parts: "
                             f"{', '.join(PARTS)} (joined by '+')")
        role, level = PARTS[part]
        if role in roles:
            raise ValueError(f"strategy {strategy!r} names the {role} role twice")
        roles.append(role)
        zero = max(zero, level)
    return tuple(r for r in ROLES if r in roles), zero


def check_experts(model: Any, roles: tuple[str, ...], strategy: str) -> None:
    """``ep`` splits the experts of a mixture of experts: refuse it on a dense model."""
    if "ep" in roles and model.moe is None:
        raise ValueError(f"strategy {strategy!r}: ep (expert parallelism) splits the experts "
                         f"of a mixture of experts, and {model.name} is dense (no moe)")


def check_degrees(model: Any, n: dict) -> None:
    """TP splits query heads (Y <= H); a pipeline stage holds at least one layer (Z <= L);
    EP gives each chip a whole number of experts (Z_e divides E)."""
    for role, limit, what in (("tp", model.H, "query heads (Megatron splits heads)"),
                              ("pp", model.L, "layers (a stage holds at least one)")):
        over = sp.sympify(n[role] > limit)
        if over == sp.true:
            raise ValueError(f"{role} degree {n[role]} exceeds {model.name}'s {limit} {what}")
    E, Ze = sp.sympify(model.moe.E if model.moe is not None else 1), sp.sympify(n["ep"])
    if E.is_Integer and Ze.is_Integer and E % Ze:
        raise ValueError(f"ep degree {Ze} does not divide {model.name}'s {E} experts (each "
                         "chip holds a whole number of them)")


def _names(axes: Any) -> str:
    """Axes as the user wrote them: "XY" or ("X", "Y") both read X, Y."""
    return ", ".join(axes) if isinstance(axes, (tuple, list)) else str(axes)


def mesh_text(mesh: Mesh) -> str:
    """A mesh in words, as titles print it: ``tpu-v5p 4x4x4``."""
    return f"{mesh.chip.name} {'x'.join(str(a.size) for a in mesh.axes)}"


def assign_axes(mesh: Mesh, roles: tuple[str, ...],
                given: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """Mesh axes per role. ``given`` maps roles to axes ("X", ("X", "Y") or "XY"); a single
    role left out gets every axis the others do not use. Every axis serves one role."""
    for role, axes in given.items():
        if axes is not None and role not in roles:
            raise ValueError(f"axes {_names(axes)} given for {role}, but the strategy's "
                             f"roles are {', '.join(roles)}")
    out = {r: () for r in ROLES}
    for role in roles:
        if given.get(role) is not None:
            out[role] = mesh.axis_names(given[role])  # fails naming an unknown axis
    used = [a for r in roles for a in out[r]]
    twice = sorted({a for a in used if used.count(a) > 1})
    if twice:
        owners = "; ".join(f"{r}: {', '.join(out[r])}" for r in roles if set(out[r]) & set(twice))
        raise ValueError(f"mesh axis {', '.join(twice)} is given to two roles ({owners}); "
                         "give each axis to one role")
    missing = [r for r in roles if not out[r]]
    rest = tuple(a for a in mesh.names if a not in used)
    if len(missing) == 1 and rest:
        out[missing[0]] = rest
    elif missing:
        names = ", ".join(f"{r}=(...)" for r in missing)
        raise ValueError(f"the strategy needs axes for {', '.join(missing)}: pass {names} "
                         f"(mesh axes: {', '.join(mesh.names)})")
    left = [a for a in mesh.names if a not in {x for r in roles for x in out[r]}]
    if left:
        raise ValueError(f"mesh axis {', '.join(left)} serves no role; give it to one of "
                         f"{', '.join(roles)}")
    return out


@functools.lru_cache(maxsize=512)
def _link(mesh: Mesh, axes: tuple[str, ...], role: str,
          _cv: Conventions) -> tuple[sp.Expr, sp.Expr]:
    """(seconds per byte, latency floor) of one role's collectives on ``axes``, cached per
    conventions record (its ring factor and GPU switch level change them)."""
    if mesh.size(axes) == 1:
        return sp.Integer(0), sp.Integer(0)
    if role != "pp":
        v = sp.Dummy("v_link", positive=True)  # local: a buffer size, divided out at once
        ag = all_gather(mesh, v, axes)
        return sp.cancel(ag.t_bw / v), ag.t_lat
    # a pipeline hop is a send to the next stage over one link, one way; the slowest axis
    # of the stage axes sets it (a GPU across nodes: its own NIC's share)
    ks, lats = [], []
    for name in axes:
        axis = mesh[name]
        if axis.kind == "scale-out":
            bw = min(lv.bw_per_gpu for lv in mesh.levels((name,)))
        else:
            bw = axis.link_bw
        ks.append(1 / bw)
        lats.append(axis.hop_latency)
    return sp.Max(*ks), sp.Max(*lats)


def role_axes(axes: Mapping[str, tuple[str, ...]], role: str) -> tuple[str, ...]:
    """The mesh axes of ``role``, a role or roles joined by '+' (``JOINT``: dp's and ep's).

    >>> role_axes({"dp": ("X",), "ep": ("Z",)}, "dp+ep")
    ('X', 'Z')
    """
    return tuple(a for r in role.split("+") for a in axes.get(r, ()))


def role_links(mesh: Mesh, axes: Mapping[str, tuple[str, ...]]) -> dict[str, tuple]:
    """Per role, (k, lat) on ``mesh``: k = AllGather seconds per byte (an AllGather of V
    bytes takes max(lat, V k)); for ``pp`` one hop's seconds per byte. A role without
    axes gets (0, 0); ``JOINT`` ("dp+ep"): the dp and ep axes together."""
    out = {r: _link(mesh, tuple(axes.get(r, ())), r, current()) if axes.get(r) else
           (sp.Integer(0), sp.Integer(0)) for r in ROLES}
    both = role_axes(axes, JOINT)  # one collective over the dp and ep axes
    out[JOINT] = _link(mesh, both, JOINT, current()) if both else (sp.Integer(0),) * 2
    return out


def a2a_link(mesh: Mesh, axes: tuple[str, ...]) -> sp.Expr:
    """Seconds per byte of an AllToAll over ``axes`` (its bandwidth term; 0 without axes):
    V/(4 W_ici) on a wrapped ring, the scale-out levels' V (d - 1) m/(n^2 w) on a GPU system
    (:func:`symroof.hardware.collectives.all_to_all`).

    >>> import symroof as sr
    >>> a2a_link(sr.mesh("tpu-v5p", "4x4x4"), ("Z",))     # 1 / (4 W_ici), W_ici = 1.8e11
    1/720000000000
    """
    return _a2a_link(mesh, tuple(axes), current())


@functools.lru_cache(maxsize=512)
def _a2a_link(mesh: Mesh, axes: tuple[str, ...], _cv: Conventions) -> sp.Expr:
    if not axes or mesh.size(axes) == 1:
        return sp.Integer(0)
    return all_to_all(mesh, 1, axes).t_bw  # linear in V: the time of one byte


def allreduce_latency(mesh: Mesh, axes: tuple[str, ...]) -> sp.Expr:
    """The latency floor of an AllReduce over ``axes`` (0 without axes): twice a ring's, or
    NCCL's tree's where that is lower (:func:`symroof.hardware.collectives.all_reduce`).

    >>> import symroof as sr
    >>> allreduce_latency(sr.mesh("tpu-v5p", "4x4x4"), ("X", "Y"))   # 2 x 4 hops of 1 us
    1/125000
    """
    return _allreduce_latency(mesh, tuple(axes), current())


@functools.lru_cache(maxsize=512)
def _allreduce_latency(mesh: Mesh, axes: tuple[str, ...], _cv: Conventions) -> sp.Expr:
    if not axes or mesh.size(axes) == 1:
        return sp.Integer(0)
    return collective("all-reduce", mesh, 1, axes).t_lat
