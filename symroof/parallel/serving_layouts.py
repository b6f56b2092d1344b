"""Serving's layouts as data (book ch. 7, "Distributing Inference"; appendix B): each row of a
decode step mapped to the partitions of what it reads and writes, its weight and its KV
cache, for :func:`symroof.parallel.partition.shard`. Arrays (one token per sequence; heads'
dimensions carry d_h: ``H`` is H d_h wide, ``G`` G d_h, ``E`` (H + 2G) d_h):

- ``x[B, D]`` the residual stream, ``h[B, D]`` a norm's output, ``q[B, H]``, ``k``, ``v``
  ``[B, G]`` (under 2-D one ``qkv[B, E]``, all-reduced together), ``o[B, H]`` the attention's
  output, ``u[B, F2]`` the MLP's up (and gate: F2 = 2F when gated), ``a[B, F]`` its
  activation, ``y[B, D]`` a block's output before the residual add, ``r[B, R]`` a mixture
  of experts' router logits, ``m[B, M]`` its experts' up and gate (M = k 2F + 2 F_shared, plus
  1 for a shared expert's gate), the KV cache ``[B, S, G]``, ``logits[B, V]``.

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

Rows whose partitions say nothing else (the embedding gather, a router, a combine, MLA's
latent down-projections and their norms) are replicated: every chip does them in full. Any
other row's work and weights split over every axis (``"*"``; no shipped family's row falls
there, a test checks).

>>> import symroof as sr
>>> lay, sizes = serving_layout(sr.model("llama-3.1-8b"), sr.mesh("tpu-v5e", "4x4"), 16)
>>> print(lay.rule("attn/core").kv, lay.rule("attn/k_proj").weight)   # G = 8: 4 x (4 of B)
KV[B_Y, S, G_X] W[D, G_X]
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from ..hardware.mesh import Mesh
from ..symbols import S as _S
from .partition import Layout, Operands
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
    """Per token, the width of each array's heads or features dimension (module docstring):
    ``E`` q, k and v together, ``F2`` a dense MLP's gate and up (2F when gated), and with
    experts ``M`` the k routed experts' gate and up and the shared expert's (its gate's
    one logit too) and ``R`` the router's logits.

    >>> import symroof as sr
    >>> w = widths(sr.model("mixtral-8x7b"))
    >>> w["M"], w["R"]                  # 2 experts' gate and up (F = 14336); 8 logits
    (57344, 8)
    """
    out = {"H": m.H * m.d_h, "G": m.G * m.d_h, "E": (m.H + 2 * m.G) * m.d_h,
           "F": m.F, "F2": (2 if m.gated else 1) * m.F}
    if m.moe is not None:
        moe = m.moe
        out |= {"R": moe.E, "M": moe.k * 2 * moe.F + 2 * moe.shared_F
                + (1 if moe.shared_gate else 0)}
    return {k: sp.sympify(v) for k, v in out.items()}


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
    return {"B": B, "S": S, "D": m.D, "V": m.V, **widths(m)}


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
        rules = _rules_2d(m, d, f, h, d + rest, r)
    else:
        h, b, r = kv_axes(mesh, A, heads, B)
        rules = _rules_1d(m, A, h, b, r)
    sizes = _sizes(m, B, _S if S is None else sp.sympify(S))
    return Layout(f"serve {layout}", rules), sizes


def _ops(reads: tuple = (), writes: ArraySpec | None = None, weight: ArraySpec | None = None,
         kv: ArraySpec | None = None, **kw: Any) -> Operands:
    return Operands(tuple(reads), writes, weight, kv, **kw)


def _counts(m: Any) -> tuple[Any, Any, Any]:
    return m.L, m.dense_layers, m.moe_layers


def _rules_1d(m: Any, A: Axes, h: Axes, b: Axes, r: Axes,
              ) -> tuple[tuple[str, Operands], ...]:
    L, dense, moe = _counts(m)
    x, hh = _p("x", ("B", ()), ("D", ())), _p("h", ("B", ()), ("D", ()))
    q = _p("q", ("B", ()), ("H", A))
    k, v = (_p(n, ("B", b), ("G", h)) for n in ("k", "v"))
    cache = _p("KV", ("B", b), ("S", ()), ("G", h))
    q_kv, o_kv = _p("q", ("B", b), ("H", h + r)), _p("o", ("B", b), ("H", h + r))
    o = _p("o", ("B", ()), ("H", A))
    y = _p("y", ("B", ()), ("D", ()))
    y_part = _p("y", ("B", ()), ("D", ()), unreduced=A)
    u, a = _p("u", ("B", ()), ("F2", A)), _p("a", ("B", ()), ("F", A))
    W = lambda *dims: _p("W", *dims)  # noqa: E731
    split = _ops(weight=W(("P", A)), repeats=L)  # work and weight over every axis
    mlp = lambda n: (  # noqa: E731  (dense or expert MLP rows, n layers of them)
        _ops((hh,), u, W(("D", ()), ("F2", A)), repeats=n),
        _ops((u,), a, repeats=n),
        _ops((a,), y_part, W(("F", A), ("D", ())), repeats=n))
    up, act, down = mlp(dense)
    e_up, e_act, e_down = mlp(moe)
    norm = _ops((x,), hh, sums="D", repeats=L)
    return (
        ("embed", _ops(writes=x, once=True)), ("pos_embed", _ops(writes=x, once=True)),
        ("attn_norm", norm), ("mlp_norm", norm),
        ("attn/q_proj", _ops((hh,), q, W(("D", ()), ("H", A)), repeats=L)),
        ("attn/qkv_proj", _ops((hh,), q, W(("D", ()), ("E", A)), repeats=L)),
        ("attn/k_proj", _ops((hh,), k, W(("D", ()), ("G", h)), repeats=L)),
        ("attn/v_proj", _ops((hh,), v, W(("D", ()), ("G", h)), repeats=L)),
        ("attn/q_norm", _ops((q,), q, repeats=L)), ("attn/k_norm", _ops((k,), k, repeats=L)),
        ("attn/rope", _ops((q,), q, repeats=L)),
        ("attn/kv_write", _ops((k,), kv=cache, repeats=L)),
        ("attn/q_absorb", _ops((), q, W(("H", A)), repeats=L)),
        ("attn/core", _ops((q_kv,), o_kv, kv=cache, repeats=L, block="attn")),
        ("attn/o_absorb", _ops((o,), o, W(("H", A)), repeats=L, block="attn")),
        ("attn/o_proj", _ops((o,), y_part, W(("H", A), ("D", ())), repeats=L, block="attn")),
        ("attn/q_a_norm", _ops(repeats=L)), ("attn/kv_a_norm", _ops(repeats=L)),  # MLA's
        ("attn/q_a_proj", _ops((hh,), weight=W(("D", ()), ("P", ())), repeats=L)),  # latents:
        ("attn/kv_a_proj", _ops((hh,), weight=W(("D", ()), ("P", ())), repeats=L)),  # whole
        ("attn/q_b_proj", _ops(weight=W(("P", ()), ("H", A)), repeats=L)),  # per head
        ("attn/post_norm", _ops((y,), y, repeats=L, block="attn")),
        ("attn/residual", _ops((x, y), x, repeats=L, block="attn")),
        ("mlp/gate", up), ("mlp/up", up), ("mlp/gate_up", up),
        ("mlp/down", down),
        ("mlp/post_norm", _ops((y,), y, repeats=L, block="mlp")),
        ("mlp/residual", _ops((x, y), x, repeats=L, block="mlp")),
        ("mlp/*", act),  # the activation: swiglu, geglu, gelu, silu
        ("moe/router", _ops((hh,), _p("r", ("B", ()), ("R", ())), repeats=moe)),
        ("moe/route", _ops(repeats=moe)), ("moe/combine", _ops(repeats=moe)),
        ("moe/shared/scale", _ops((hh,), weight=W(("D", ())), repeats=moe)),  # its gate
        ("moe/gate", e_up), ("moe/up", e_up), ("moe/shared/gate", e_up),
        ("moe/shared/up", e_up), ("moe/down", e_down), ("moe/shared/down", e_down),
        ("moe/*swiglu", e_act), ("moe/*geglu", e_act), ("moe/*gelu", e_act),
        ("moe/*silu", e_act),
        ("final_norm", _ops((x,), hh, sums="D", once=True)),
        ("lm_head", _ops((hh,), _p("logits", ("B", ()), ("V", A)), W(("D", ()), ("V", A)),
                         once=True)),
        ("logit_softcap", _ops((_p("logits", ("B", ()), ("V", A)),),
                               _p("logits", ("B", ()), ("V", A)), once=True)),
        ("*", split),
    )


def _rules_2d(m: Any, d: Axes, f: Axes, h: Axes, b: Axes, r: Axes,
              ) -> tuple[tuple[str, Operands], ...]:
    L, dense, moe = _counts(m)
    A = d + f
    x = _p("x", ("B", ()), ("D", A))
    hh, h_d = _p("h", ("B", ()), ("D", A)), _p("h", ("B", ()), ("D", d))
    qkv_part = _p("qkv", ("B", ()), ("E", f), unreduced=d)
    qkv = _p("qkv", ("B", ()), ("E", f))
    qkv_kv = _p("qkv", ("B", b), ("E", h + r))
    cache = _p("KV", ("B", b), ("S", ()), ("G", h))
    o_kv, o = _p("o", ("B", b), ("H", h + r)), _p("o", ("B", ()), ("H", f))
    y = _p("y", ("B", ()), ("D", A))
    y_part = _p("y", ("B", ()), ("D", d), unreduced=f)
    W = lambda *dims: _p("W", *dims)  # noqa: E731
    mlp = lambda n, up, width: (  # noqa: E731
        _ops((h_d,), _p(up, ("B", ()), (width, f), unreduced=d),
             W(("D", d), (width, f)), repeats=n, block="mlp"),
        _ops((_p(up, ("B", ()), (width, f)),), _p("a", ("B", ()), ("F", f)), repeats=n,
             block="mlp"),
        _ops((_p("a", ("B", ()), ("F", f)),), y_part, W(("F", f), ("D", d)), repeats=n,
             block="mlp"))
    up, act, down = mlp(dense, "u", "F2")
    e_up, e_act, e_down = mlp(moe, "m", "M")
    norm = _ops((x,), hh, sums="D", repeats=L)
    proj = _ops((h_d,), qkv_part, W(("D", d), ("E", f)), repeats=L, block="attn")
    router = _p("r", ("B", ()), ("R", ()), unreduced=d)
    return (
        ("embed", _ops(writes=_p("x", ("B", ()), ("D", ())), once=True)),
        ("pos_embed", _ops(writes=_p("x", ("B", ()), ("D", ())), once=True)),
        ("attn_norm", norm), ("mlp_norm", norm),
        ("attn/q_proj", proj), ("attn/k_proj", proj), ("attn/v_proj", proj),
        ("attn/qkv_proj", proj),
        ("attn/q_norm", _ops((qkv,), qkv, repeats=L, block="attn")),
        ("attn/k_norm", _ops((qkv,), qkv, repeats=L, block="attn")),
        ("attn/rope", _ops((qkv,), qkv, repeats=L, block="attn")),
        ("attn/kv_write", _ops((qkv_kv,), kv=cache, repeats=L, block="attn")),
        ("attn/core", _ops((qkv_kv,), o_kv, kv=cache, repeats=L, block="attn")),
        ("attn/o_proj", _ops((o,), y_part, W(("H", f), ("D", d)), repeats=L, block="attn")),
        ("attn/post_norm", _ops((y,), y, sums="D", repeats=L, block="attn")),
        ("attn/residual", _ops((x, y), x, repeats=L, block="attn")),
        ("mlp/gate", up), ("mlp/up", up), ("mlp/gate_up", up),
        ("mlp/down", down),
        ("mlp/post_norm", _ops((y,), y, sums="D", repeats=L, block="mlp")),
        ("mlp/residual", _ops((x, y), x, repeats=L, block="mlp")),
        ("mlp/*", act),  # the activation: swiglu, geglu, gelu, silu
        ("moe/router", _ops((h_d,), router, W(("D", d), ("R", ())), repeats=moe, block="mlp")),
        ("moe/route", _ops((router.with_unreduced(()),), repeats=moe, block="mlp_router")),
        ("moe/combine", _ops(repeats=moe)),
        ("moe/shared/scale", _ops((h_d,), weight=W(("D", d)), repeats=moe, block="mlp")),
        ("moe/gate", e_up), ("moe/up", e_up), ("moe/shared/gate", e_up),
        ("moe/shared/up", e_up), ("moe/down", e_down), ("moe/shared/down", e_down),
        ("moe/*swiglu", e_act), ("moe/*geglu", e_act), ("moe/*gelu", e_act),
        ("moe/*silu", e_act),
        ("final_norm", _ops((x,), hh, sums="D", once=True)),
        ("lm_head", _ops((_p("h", ("B", ()), ("D", ())),),
                         _p("logits", ("B", ()), ("V", A)), W(("D", ()), ("V", A)), once=True)),
        ("logit_softcap", _ops((_p("logits", ("B", ()), ("V", A)),),
                               _p("logits", ("B", ()), ("V", A)), once=True)),
        ("*", _ops(weight=W(("P", A)), repeats=L)),
    )
