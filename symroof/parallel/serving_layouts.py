"""Serving's layouts as data (book ch. 7, "Distributing Inference"; appendix B): each array
the blocks declare (:meth:`~symroof.models.blocks.Blocks.arrays`: weights, the KV cache,
activations) mapped to its partition over the mesh, and where one row holds an array
otherwise; the blocks say which arrays each row reads and writes
(:meth:`~symroof.models.blocks.Blocks.uses`), so each row's operands follow
(:func:`~symroof.parallel.partition.array_layout`) and
:func:`~symroof.parallel.partition.shard` prices them. The partitions are per token (one per
sequence in a decode step), a heads' dimension carrying d_h: ``H`` is H d_h wide, ``G``
G d_h, ``E`` (H + 2G) d_h. By array (its partition's name):

- ``embed/x`` the residual stream ``x[B, D]``, ``norms/h`` a norm's output ``h``,
  ``norms/y`` a block's output before the residual add ``y``;
- ``attn/Q``, ``attn/k``, ``attn/v`` the new token's heads ``q[B, H]``, ``k``, ``v``
  ``[B, G]`` (under 2-D one array ``qkv[B, E]``, all-reduced together), ``attn/O`` the
  attention's output ``o[B, H]``, ``attn/K``, ``attn/V`` (MLA: ``attn/C_kv``) the cache
  ``KV[B, S, G]``; absorbed MLA's core reads its query and writes its output in the latent,
  ``attn/q_lat`` ``q[B, Hq]`` (Hq = H (kv_rank + d_rope)) and ``attn/o_lat`` ``o[B, Ho]``
  (Ho = H kv_rank); MLA's latents, read whole, ``attn/c`` ``c[B, G]`` and ``attn/q_a``
  ``c_q[B, Q]`` (Q = q_rank);
- ``mlp/u`` the MLP's up (and gate) ``u[B, F2]`` (F2 = 2F when gated), ``mlp/h`` its
  activation ``a[B, F]``; a mixture of experts' router logits ``moe/r`` ``r[B, R]``, its
  experts' up and gate ``moe/m`` (and the shared expert's ``moe/m_s``) ``m[B, M]`` (M = k 2F
  + 2 F_shared, plus 1 for a shared expert's gate), their activations ``a[B, F]``, the
  routing's weights ``moe/w`` ``w[B, k]`` (whole), the experts' outputs before the combine
  ``moe/Y`` ``Y[B, kD]`` and the shared expert's ``moe/y_s`` ``ys[B, D]`` (partial sums,
  as W_down leaves them; the combine writes them into ``y``); RoPE's tables ``attn/cs``
  ``cs[T, d_rot]`` (whole); ``head/logits`` ``logits[B, V]``; each weight ``W[...]``.

**1-D** (``"1d"``): every weight split over every axis A (MLP over F, attention over heads,
the lm_head over V), activations replicated; o_proj and W_down leave ``y[B, D]{U_A}``,
all-reduced before the residual add. The KV cache over KV heads first, on the leading axes
whose sizes multiply to a divisor of G (``h``), and over the batch on the rest (``b``); W_k
and W_v split over ``h`` only. When ``b`` is not empty the queries move from heads to batch
over ``b`` (an AllToAll over ``b``, the chips that share a KV-head shard) and the attention's
output back.

**2-D** (``"2d"``): D over ``d`` (the plan's d_axes), heads and F over the rest ``f``; the
residual stream ``x[B, D_df]`` between blocks. Each norm sums squares over a split D (an
AllReduce of B sums over every axis); the projections read ``h[B, D_d]`` (AllGather over f)
and leave their outputs unreduced over d (one AllReduce over d of q, k, v together, and of
the MLP's gate and up); the KV cache ``[B_d, S, G_f]`` (heads over f, the batch over d), so
the queries reach it by a local slice and the attention's output is gathered over d for
o_proj (the relayout); o_proj and W_down leave ``y[B, D_d]{U_f}``, reduce-scattered over f
into ``x[B, D_df]``. The lm_head gathers the final norm's output over every axis.

Arrays read whole by every chip (norms' gains, the embedding tables, a router, MLA's latent
down-projections and latents) leave their rows replicated: every chip does them in full, as
it does a row that declares no arrays. A row's activation bytes per chip are its share of
each array it reads and writes (:func:`~symroof.parallel.partition.local_act_bytes`: one
held whole is moved whole). A row the blocks do not declare, or an array a layout does not
partition, is refused with its name.

>>> import symroof as sr
>>> lay, sizes = serving_layout(sr.model("llama-3.1-8b"), sr.mesh("tpu-v5e", "4x4"), 16)
>>> print(lay.rule("attn/core").kv, lay.rule("attn/k_proj").weight)   # G = 8: 4 x (4 of B)
KV[B_Y, S, G_X] W[D, G_X]
>>> print(lay.rule("attn/o_proj").writes)    # norms/y as o_proj writes it: partial sums
y[B, D]{U_XY}
"""

from __future__ import annotations

import functools
from typing import Any

import sympy as sp

from ..hardware.mesh import Mesh
from ..symbols import S as _S
from .partition import Layout, array_layout
from .sharding import ArraySpec

__all__ = ["serving_layout", "kv_axes", "d_outputs", "widths"]

Axes = tuple[str, ...]


def _p(name: str, *dims: tuple[str, Axes], unreduced: Axes = ()) -> ArraySpec:
    return ArraySpec(name, tuple(d for d, _ in dims), tuple(tuple(a) for _, a in dims),
                     tuple(unreduced))


def kv_axes(mesh: Mesh, axes: Axes, heads: Any, batch: Any = None,
            ) -> tuple[Axes, Axes, Axes]:
    """How the KV cache splits ``axes``: (over its heads, over the batch, neither): the
    longest leading run whose sizes multiply to a divisor of ``heads``, then the longest
    run of the rest no wider than ``batch`` (a batch may split unevenly, never below one
    sequence a chip); the cache is replicated over what is left (the chips there share a
    cache shard and split its query heads). A symbolic mesh is taken as heads only (at most
    G wide, where the formulas read most simply).

    >>> import symroof as sr
    >>> m = sr.mesh("tpu-v5e", "2x4")
    >>> kv_axes(m, ("X", "Y"), 2, 8), kv_axes(m, ("X", "Y"), 8, 8), kv_axes(m, ("X", "Y"), 1, 2)
    ((('X',), ('Y',), ()), (('X', 'Y'), (), ()), ((), ('X',), ('Y',)))
    """
    if mesh.symbolic:
        return tuple(axes), (), ()

    def run(names: Axes, fits: Any) -> int:
        i = len(names)
        while i and not fits(mesh.size(names[:i])):
            i -= 1
        return i

    i = run(axes, lambda n: (sp.sympify(heads) % n).is_zero is not False)
    rest = tuple(axes[i:])
    j = run(rest, lambda n: batch is None or sp.sympify(n > batch) is not sp.true)
    return tuple(axes[:i]), rest[:j], rest[j:]


def widths(m: Any) -> dict[str, sp.Expr]:
    """Per token, the width of each partition's heads or features dimension (module
    docstring), read from the blocks' arrays (:meth:`~symroof.models.blocks.Blocks.shape`,
    the product past B and T): ``H`` the queries, ``G`` a new key (MLA: the latent),
    ``E`` q, k and v together (absorbed MLA: ``Hq``, ``Ho`` the core's query and output in
    the latent; ``Q`` MLA's query latent), ``F2`` a dense MLP's gate and up (2F when
    gated), ``F`` its activation, and with experts ``M`` the k routed experts' gate and up
    and the shared expert's (its gate's one logit, x . w_shared_gate, too) and ``R`` the
    router's logits (a model without dense layers: ``F``, ``F2`` the routed experts').

    >>> import symroof as sr
    >>> w = widths(sr.model("mixtral-8x7b"))
    >>> w["M"], w["R"]                  # 2 experts' gate and up (F = 14336); 8 logits
    (57344, 8)
    """
    return dict(_widths(m.blocks))


@functools.lru_cache(maxsize=64)
def _widths(blocks: Any) -> tuple[tuple[str, sp.Expr], ...]:
    arrays = blocks.arrays()

    def tok(*paths: str) -> sp.Expr:  # elements per token of the arrays declared
        return sp.Add(*(sp.Mul(*blocks.shape(p)[2:]) for p in paths if p in arrays))

    qkv = tok("attn/Q", "attn/k", "attn/v")
    out = {"H": tok("attn/Q"), "G": tok("attn/k") if "attn/k" in arrays else tok("attn/c"),
           "E": qkv}
    if "attn/q_a" in arrays:  # MLA's query latent
        out["Q"] = tok("attn/q_a")
    if "attn/q_lat" in arrays:  # absorbed MLA: the core's query and output, in the latent
        out |= {"Hq": tok("attn/q_lat"), "Ho": tok("attn/o_lat")}
    dense = "mlp/u" in arrays
    out |= {"F": tok("mlp/h" if dense else "moe/a"), "F2": tok("mlp/u" if dense else "moe/m")}
    if "moe/r" in arrays:
        gate = 1 if "moe/w_shared_gate" in arrays else 0
        out |= {"R": tok("moe/r"), "M": tok("moe/m", "moe/m_s") + gate}
    return tuple(out.items())


def d_outputs(m: Any) -> dict[str, sp.Expr]:
    """Per token, the width of the outputs that contract D that 2-D all-reduces over X
    (:func:`widths`): "attn" q, k, v; "dense" a dense MLP's gate and up; "moe" the experts'.
    Latent attention (MLA) is refused: 2-D does not model it.

    >>> import symroof as sr
    >>> d_outputs(sr.model("mixtral-8x7b"))["moe"]
    57344
    """
    if m.mla is not None:
        raise ValueError(f"layout='2d' models q, k, v projections split over heads; "
                         f"{m.name}'s latent attention (MLA) is not modelled in 2-D")
    w = widths(m)
    return {"attn": w["E"], "dense": w["F2"], **({"moe": w["M"]} if "M" in w else {})}


def _sizes(m: Any, B: Any, S: Any) -> dict[str, Any]:
    return {"B": B, "T": 1, "S": S, "D": m.D, "V": m.V, **widths(m)}  # T: one new token


def serving_layout(m: Any, mesh: Mesh, B: Any, S: Any = None, layout: str = "1d",
                   d_axes: Axes = ()) -> tuple[Layout, dict[str, Any]]:
    """The decode step's layout ``layout`` ("1d" or "2d", D split over ``d_axes``) for model
    ``m`` on ``mesh``, and the sizes of its arrays' dimensions (see the module)."""
    A = mesh.names
    heads = 1 if getattr(m, "mla", None) else m.G
    if layout == "2d":
        d_outputs(m)  # refuses what 2-D does not model (latent attention)
        d = tuple(d_axes)
        f = tuple(a for a in A if a not in d)
        h, rest, r = kv_axes(mesh, f, heads)  # the batch: over d, then what heads leave
        axes = (d, f, h, d + rest, r)
    else:
        h, b, r = kv_axes(mesh, A, heads, B)
        axes = (A, h, b, r)
    sizes = _sizes(m, B, _S if S is None else sp.sympify(S))
    return _layout(m.blocks, layout, axes), sizes


@functools.lru_cache(maxsize=256)
def _layout(blocks: Any, layout: str, axes: tuple) -> Layout:
    """The layout of ``blocks`` under ``layout`` with its axes (d, f, h, b, r under 2-D;
    A, h, b, r under 1-D): built once per model and split (a plan's batch and context only
    size its arrays)."""
    part, at = (_tables_2d if layout == "2d" else _tables_1d)(*axes)
    arrays = blocks.arrays()
    elements = {p: sp.Mul(*blocks.shape(p)) for p, a in arrays.items() if a.kind == "act"}
    return array_layout(f"serve {layout}", blocks.uses(last_only=True), part, at, _NAMES,
                        elements)


#: collectives named apart from their block's: the router's logits, reduced before the
#: experts they choose
_NAMES = {"moe/route": "mlp_router"}


def _tables_1d(A: Axes, h: Axes, b: Axes, r: Axes) -> tuple[dict, dict]:
    """1-D's partitions of the arrays, and where a row holds one otherwise (module)."""
    W = lambda *dims: _p("W", *dims)  # noqa: E731
    x, hh, y = (_p(n, ("B", ()), ("D", ())) for n in ("x", "h", "y"))
    q, o = _p("q", ("B", ()), ("H", A)), _p("o", ("B", ()), ("H", A))
    k, v = (_p(n, ("B", b), ("G", h)) for n in ("k", "v"))
    cache = _p("KV", ("B", b), ("S", ()), ("G", h))
    up, act = _p("u", ("B", ()), ("F2", A)), _p("a", ("B", ()), ("F", A))
    experts, latent = _p("m", ("B", ()), ("M", A)), _p("c", ("B", ()), ("G", ()))
    whole, logits = W(("P", ())), _p("logits", ("B", ()), ("V", A))
    q_lat, o_lat = _p("q", ("B", ()), ("Hq", A)), _p("o", ("B", ()), ("Ho", A))  # MLA's
    part = {"embed/x": x, "norms/h": hh, "norms/y": y, "attn/Q": q, "attn/k": k, "attn/v": v,
            "attn/q_lat": q_lat, "attn/o_lat": o_lat,
            "attn/K": cache, "attn/V": cache, "attn/C_kv": cache, "attn/O": o,
            "attn/q_a": _p("c_q", ("B", ()), ("Q", ())), "attn/c": latent,
            "mlp/u": up, "mlp/h": act,
            "moe/r": _p("r", ("B", ()), ("R", ())), "moe/m": experts, "moe/m_s": experts,
            "moe/a": act, "moe/a_s": act, "head/logits": logits, **_unsplit(),
            "moe/Y": _p("Y", ("B", ()), ("kD", ()), unreduced=A),  # down's partial sums
            "moe/y_s": _p("ys", ("B", ()), ("D", ()), unreduced=A),
            "attn/W_q": W(("D", ()), ("H", A)), "attn/W_qkv": W(("D", ()), ("E", A)),
            "attn/W_k": W(("D", ()), ("G", h)), "attn/W_v": W(("D", ()), ("G", h)),
            "attn/W_o": W(("H", A), ("D", ())), "attn/W_q_b": W(("P", ()), ("H", A)),
            "attn/W_kv_b": W(("H", A)), "head/W_lm": W(("D", ()), ("V", A))}
    for name in ("mlp/W_gate", "mlp/W_up", "mlp/W_gate_up", "moe/W_gate_e", "moe/W_up_e",
                 "moe/W_gate_s", "moe/W_up_s"):
        part[name] = W(("D", ()), ("F2", A))
    for name in ("mlp/W_down", "moe/W_down_e", "moe/W_down_s"):
        part[name] = W(("F", A), ("D", ()))
    for name in _WHOLE:  # read whole by every chip: norms' gains, the embedding, latents
        part[name] = whole
    partial = _p("y", ("B", ()), ("D", ()), unreduced=A)  # o_proj's and W_down's partial sums
    at = {(row, "norms/y"): partial for row in _DOWN}
    at |= {("attn/core", "attn/Q"): _p("q", ("B", b), ("H", h + r)),
           ("attn/core", "attn/O"): _p("o", ("B", b), ("H", h + r)),
           ("attn/core", "attn/q_lat"): _p("q", ("B", b), ("Hq", h + r)),
           ("attn/core", "attn/o_lat"): _p("o", ("B", b), ("Ho", h + r)),
           ("lm_head", "embed/W_embed"): part["head/W_lm"]}  # tied: split as W_lm is
    return part, at


def _tables_2d(d: Axes, f: Axes, h: Axes, b: Axes, r: Axes) -> tuple[dict, dict]:
    """2-D's partitions of the arrays, and where a row holds one otherwise (module)."""
    A = d + f
    W = lambda *dims: _p("W", *dims)  # noqa: E731
    x, y = _p("x", ("B", ()), ("D", A)), _p("y", ("B", ()), ("D", A))
    qkv = _p("qkv", ("B", ()), ("E", f))  # q, k and v: one array, reduced together
    up, experts = _p("u", ("B", ()), ("F2", f)), _p("m", ("B", ()), ("M", f))
    act, router = _p("a", ("B", ()), ("F", f)), _p("r", ("B", ()), ("R", ()))
    cache = _p("KV", ("B", b), ("S", ()), ("G", h))
    part = {"embed/x": x, "norms/h": _p("h", ("B", ()), ("D", d)), "norms/y": y,
            "attn/Q": qkv, "attn/k": qkv, "attn/v": qkv, "attn/K": cache, "attn/V": cache,
            "attn/O": _p("o", ("B", ()), ("H", f)), "mlp/u": up, "mlp/h": act,
            "moe/r": router, "moe/m": experts, "moe/m_s": experts, "moe/a": act,
            "moe/a_s": act, "head/logits": _p("logits", ("B", ()), ("V", A)), **_unsplit(),
            "moe/Y": _p("Y", ("B", ()), ("kD", d), unreduced=f),  # down's partial sums
            "moe/y_s": _p("ys", ("B", ()), ("D", d), unreduced=f),
            "attn/W_o": W(("H", f), ("D", d)), "moe/W_router": W(("D", d), ("R", ())),
            "moe/w_shared_gate": W(("D", d)), "head/W_lm": W(("D", ()), ("V", A))}
    for name in ("attn/W_q", "attn/W_k", "attn/W_v", "attn/W_qkv"):
        part[name] = W(("D", d), ("E", f))
    for name, width in (("mlp/W_gate", "F2"), ("mlp/W_up", "F2"), ("mlp/W_gate_up", "F2"),
                        ("moe/W_gate_e", "M"), ("moe/W_up_e", "M"), ("moe/W_gate_s", "M"),
                        ("moe/W_up_s", "M")):
        part[name] = W(("D", d), (width, f))
    for name in ("mlp/W_down", "moe/W_down_e", "moe/W_down_s"):
        part[name] = W(("F", f), ("D", d))
    for name in _WHOLE:
        part.setdefault(name, W(("P", ())))
    at = {(row, "norms/y"): _p("y", ("B", ()), ("D", d), unreduced=f) for row in _DOWN}
    at |= {(row, "embed/x"): _p("x", ("B", ()), ("D", ())) for row in ("embed", "pos_embed")}
    at |= {(row, "norms/h"): _p("h", ("B", ()), ("D", A))
           for row in ("attn_norm", "mlp_norm", "final_norm")}  # a norm's output, as x is
    at |= {(row, array): qkv.with_unreduced(d) for row, array in (
        ("attn/q_proj", "attn/Q"), ("attn/k_proj", "attn/k"), ("attn/v_proj", "attn/v"),
        ("attn/qkv_proj", "attn/Q"), ("attn/qkv_proj", "attn/k"),
        ("attn/qkv_proj", "attn/v"))}  # the projections' partial sums over d
    at |= {(row, "mlp/u"): up.with_unreduced(d) for row in ("mlp/gate", "mlp/up",
                                                           "mlp/gate_up")}
    # the routed experts' gate and up leave m's partial sums; the shared expert's are
    # reduced with them (m is M wide: both), so its activation finds m already reduced
    at |= {(row, "moe/m"): experts.with_unreduced(d) for row in ("moe/gate", "moe/up")}
    kv_side = _p("qkv", ("B", b), ("E", h + r))  # the queries (and new k, v) as the cache
    at |= {("attn/kv_write", "attn/k"): kv_side, ("attn/kv_write", "attn/v"): kv_side,
           ("attn/core", "attn/Q"): kv_side,
           ("attn/core", "attn/O"): _p("o", ("B", b), ("H", h + r)),
           ("moe/router", "moe/r"): router.with_unreduced(d),
           ("lm_head", "norms/h"): _p("h", ("B", ()), ("D", ())),
           ("lm_head", "embed/W_embed"): part["head/W_lm"]}
    return part, at


#: rows that write the block's output y as partial sums: o_proj and W_down contract a split
#: dimension, a mixture's combine adds its experts' partial sums (``moe/Y``, ``moe/y_s``)
_DOWN = ("attn/o_proj", "mlp/down", "moe/combine")


def _unsplit() -> dict[str, ArraySpec]:
    """Arrays every chip holds whole under both layouts: RoPE's tables, the routing's
    weights (every chip routes every token)."""
    return {"attn/cs": _p("cs", ("T", ()), ("d_rot", ())),
            "moe/w": _p("w", ("B", ()), ("k", ()))}
#: arrays every chip reads whole under both layouts: norms' gains, the embedding tables,
#: the router, MLA's latent down-projections
_WHOLE = ("embed/W_embed", "embed/W_pos", "norms/attn_norm", "norms/mlp_norm",
          "norms/attn_post_norm", "norms/mlp_post_norm", "head/final_norm",
          "attn/q_norm", "attn/k_norm", "attn/q_a_norm", "attn/kv_a_norm", "attn/W_q_a",
          "attn/W_kv_a", "moe/W_router", "moe/b_router", "moe/w_shared_gate")
