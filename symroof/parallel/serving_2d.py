"""2-D weight-stationary serving (book ch. 7, problem 7 and appendix B; Pope et al. 2022,
"Efficiently Scaling Transformer Inference"): every weight split over D along ``d_axes``
(the book's X) and over F (the MLP) or the heads (attention) along the other axes (YZ);
between blocks the activations are split over D on every axis. One block, per chip:

1. In[B, D_X] = AllGather_YZ(In[B, D_XYZ])
2. Tmp[B, F_YZ]{U_X} = In[B, D_X] *_D W_in[D_X, F_YZ];  Tmp = AllReduce_X(Tmp)
3. Out[B, D_X]{U_YZ} = Tmp *_F W_out[F_YZ, D_X];  Out[B, D_XYZ] = ReduceScatter_YZ(Out)

so T_comms = 2BD/(X W) + 4BF/(YZ W) on a torus with X one axis and YZ two (the book's
form). The layout is data (:mod:`symroof.parallel.serving_layouts`) and its collectives come
from the one sharding mechanism (:mod:`symroof.parallel.partition`). F is the width per
token of every output that contracts D, AllReduced over X before its nonlinearity: the MLP's
gate and up (2F when gated), a mixture of experts' k routed experts' gate and up and its
shared expert's (the router's logits apart, first: they choose the experts); attention's q,
k and v, (H + 2G) d_h. Each norm all-reduces its sums of squares over the split D; the
attention's output is gathered over X for o_proj.

Conditions, solved with ``sr.crossover`` from the MLP block's collectives (bandwidth terms,
each collective's seconds per byte held at the plan's axes, N = X YZ held):

- ``x_opt``: the D degree where the AllGather + ReduceScatter (c_1/X) and the AllReduce
  (c_2 X/N) take equally long, which minimises their sum (d/dX (c_1/X + c_2 X/N) = 0 there):
  X = sqrt(D N/(2F)) on the book's torus;
- ``2d``: the chips N above which 2-D at X_opt, 2 sqrt(c_1 c_2/N), moves less than 1-D's
  AllReduce of [B, D] (c_0, 4BD/(3W) over three axes): N > 4 c_1 c_2/c_0^2 = 18F/D (the
  book's N > 32 (F/D)(3/4)^2; its 81 for F = 4D is an erratum: 72).

Both weigh bandwidth only, as the book does. At a small batch the collectives sit on their
latency floors (hops x T_min), where 2-D gains nothing: on a 16x16 v5e its AllGather and
ReduceScatter over Y and AllReduce over X take as many hops as 1-D's AllReduce over both.

>>> import symroof as sr
>>> plan = sr.serve("llama-3.1-70b", sr.mesh("tpu-v5p", "8x8x8"), batch=64, context=4096,
...                 layout="2d")                  # D over X, F over Y and Z: the book's case
>>> print(plan.conditions["x_opt"])     # sqrt(D N/(2F')), F' = 2F: gate and up
2d: D degree at the optimum: X_opt = 6.047 (plan: 8)
>>> print(plan.conditions["2d"])        # 18 F'/D = 18 x 57344 / 8192
2d beats 1d: N > 126 (plan: 512): holds
"""

from __future__ import annotations

import functools
from typing import Any

import sympy as sp

from ..analysis import crossover
from ..conventions import Conventions, current
from ..hardware.chip import symbolic_chip
from ..hardware.collectives import all_gather
from ..hardware.mesh import Mesh
from ..hardware.mesh import mesh as _mesh
from ..hardware.topology import Switched
from ..symbols import B as _B
from ..symbols import D as _D
from ..symbols import F as _F
from ..symbols import Y as _Y
from .conditions import Condition
from .matmul import shard_matmul
from .partition import layer_collectives
from .serving_layouts import d_outputs, serving_layout

__all__ = ["ici_condition", "LAYOUTS", "split_axes", "d_outputs", "mlp_collectives",
           "layout_conditions"]

#: serving layouts: 1-D model parallelism (activations replicated) and 2-D weight-stationary
LAYOUTS = ("1d", "2d")
_SOURCE = ("book ch. 7 problem 7 and appendix B: T = 2BD/(X W) + 4BF/(YZ W), X_opt = "
           "sqrt(D N/(2F)); 2-D beats 1-D when N > 32 (F/D)(3/4)^2 = 18 F/D (its 81 at "
           "F = 4D is an erratum: 72)")


def split_axes(mesh: Mesh, d_axes: Any) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(axes splitting D, axes splitting F): ``d_axes`` (default the first axis) and the
    rest; each side needs at least one axis."""
    names = mesh.axis_names(d_axes if d_axes is not None else mesh.names[:1])
    rest = tuple(a for a in mesh.names if a not in names)
    if not rest:
        raise ValueError(f"layout='2d' splits D over d_axes={names} and F over the other "
                         f"axes; the mesh's axes are {', '.join(mesh.names)}: none is left "
                         "for F")
    return names, rest


def mlp_collectives(plan: Any, d: tuple, layout: str = "2d") -> dict[str, Any]:
    """One MLP block's collectives of ``plan``'s model on its mesh under ``layout`` (D over
    ``d`` under "2d"), read from that layout's partitions (:mod:`.serving_layouts`):
    ``allgather``, ``allreduce`` (of the experts' gate and up where the model has them) and
    ``reducescatter``; "1d" has only its ``allreduce``.

    >>> import symroof as sr
    >>> plan = sr.serve("llama-3.1-8b", sr.mesh("tpu-v5e", "4x2"), batch=8, context=128)
    >>> for kind, c in mlp_collectives(plan, ("X",)).items():
    ...     print(kind, c.kind, c.axes)
    allgather all-gather ('Y',)
    allreduce all-reduce ('X',)
    reducescatter reduce-scatter ('Y',)
    """
    m = plan.model
    lay, sizes = serving_layout(m, plan.mesh, plan.batch, plan.context, layout, d)
    keys = m.ops(plan.batch, 1, plan.context - 1, last_only=True, attention="fused")
    comm = {k: c for k, (_, c) in layer_collectives(keys, lay, plan.mesh, sizes,
                                                     m.act_bytes).items()}
    out = {kind: comm[f"comm/mlp_{kind}"] for kind in ("allgather", "allreduce",
                                                         "reducescatter")
           if f"comm/mlp_{kind}" in comm}
    if "comm/mlp_allreduce_m" in comm:  # dense and MoE layers: the experts' (the most)
        out["allreduce"] = comm["comm/mlp_allreduce_m"]
    return out


def _coefficients(plan: Any, d: tuple, f: tuple) -> tuple[sp.Expr, sp.Expr, sp.Expr]:
    """(c_0, c_1, c_2): 1-D's MLP AllReduce, 2-D's AllGather + ReduceScatter times X and
    its AllReduce times YZ, bandwidth terms of one MLP block of the plan's model."""
    mesh = plan.mesh
    block = mlp_collectives(plan, d)
    c1 = sp.cancel((block["allgather"].t_bw + block["reducescatter"].t_bw) * mesh.size(d))
    c2 = sp.cancel(block["allreduce"].t_bw * mesh.size(f))
    c0 = mlp_collectives(plan, (), "1d")["allreduce"].t_bw
    return c0, c1, c2


def layout_conditions(plan: Any) -> dict[str, Condition]:
    """``x_opt`` (a 2-D plan) and ``2d`` (where 2-D beats 1-D; D split over the plan's
    d_axes, or the first axis) of a serving plan; none on a mesh of one axis (axes of one
    chip do not count: nothing crosses them)."""
    wide = [a for a in plan.mesh.axes if sp.sympify(a.size) != 1]
    if len(wide) < 2 or plan.model.mla is not None:
        return {}
    d, f = split_axes(plan.mesh, plan.d_axes or None)
    c0, c1, c2 = _coefficients(plan, d, f)
    # local: the variables solved for (the D degree, the chips); neither is in the answers
    x, n = sp.Dummy("X_d", positive=True), sp.Dummy("N_chips", positive=True)
    out = {}
    if plan.layout == "2d":
        x_opt = crossover(c1 / x, c2 * x / plan.n, x)
        out["x_opt"] = Condition("2d: D degree at the optimum", "X_opt", "=", x_opt,
                                 plan.mesh.size(d), _SOURCE)
    n_star = crossover(c0, 2 * sp.sqrt(c1 * c2 / n), n)
    out["2d"] = Condition("2d beats 1d", "N", ">", sp.simplify(n_star), plan.n, _SOURCE)
    return out


_ICI_SOURCE = ("book ch. 7 'Distributing Inference': memory-bound decode turns ICI-bound "
               "when Y > F/(B beta), beta = W_hbm/W_ici")


def ici_condition(plan: Any) -> dict[str, Condition]:
    """``{"ici": Y < F/(B beta)}`` of a decode plan with layers (module docstring): the
    mesh width below which sharding a weight matmul over F keeps it HBM-bound, solved on
    a ring of the plan's chip with its peak, HBM and per-link bandwidth (a TPU's torus, as
    the book has it); on a GPU the ring's W_ici is W_coll, the bandwidth of an AllGather
    over the plan's GPUs as the collectives price it under the conventions' ``gpu_level``
    and ``ring_factor`` (the book's: W_GPU inside an NVLink node, the node's egress W_node
    beyond it, ch. 12; symroof's: the slowest level the group spans, with (N - 1)/N);
    ``{}`` for a model known only by its parameters.

    >>> import symroof as sr
    >>> plan = sr.serve("llama-3.1-70b", sr.mesh("tpu-v5e", "4x8"), batch=64, context=8192)
    >>> print(ici_condition(plan)["ici"])     # F/(B beta) = 28672 / (64 x 8.2e11 / 9e10)
    decode stays HBM-bound: Y < 49.17 (plan: 32): holds
    """
    m, chip = plan.model, plan.mesh.chip
    if not hasattr(m, "F"):
        return {}  # no layers
    link = chip.link_bw  # W_ici = 2 link on a ring; a GPU's is W_coll, the group's
    if isinstance(chip.network, Switched):  # AllGather bandwidth, as the collectives read it
        link = 1 / all_gather(plan.mesh, 1, plan.mesh.names).t_bw / 2  # (gpu_level)
    threshold = _ici_threshold(chip, plan.compute_dtype, m.act_bytes, m.w_bytes, plan.batch,
                               m.D, m.F, link, current())
    return {"ici": Condition("decode stays HBM-bound", "Y", "<", threshold, plan.n,
                             _ICI_SOURCE)}


@functools.lru_cache(maxsize=256)
def _ici_threshold(chip: Any, dtype: str, act_bytes: Any, w_bytes: Any, batch: Any, D: Any,
                   F: Any, link: Any, conventions: Conventions) -> sp.Expr:
    """The Y of ``ici_condition``, solved once per chip, widths, shape and conventions
    record (a plan's conditions are read many times; the ring, the matmul and the solve
    are the same; the ring's time reads ``ring_factor``)."""
    ring_chip = symbolic_chip(f"{chip.name} ring", C=chip.peak(dtype), W=chip.hbm_bw,
                              W_net=link)
    ring = _mesh(ring_chip, {"Y": _Y})
    up = shard_matmul(ring, "X[B, D_Y] @ W[D, F_Y] -> [B, F_Y]", strategy="gather",
                      x_bytes=act_bytes, w_bytes=w_bytes)  # B, D, F the table's symbols
    at = {_B: batch, _D: D, _F: F}
    t_ici, t_hbm = up.t_comms.subs(at), (up.compute.weight_bytes / chip.hbm_bw).subs(at)
    return crossover(t_ici, t_hbm, _Y)
