"""Backward rows and kept activations of a mixture-of-experts layer in training, and the
composition of a MoE or MLA model's backward from its blocks (docs/accounting.md,
"Training MoE and MLA"; the NumPy twin: :mod:`symroof.numeric.train_moe`).

n = B*S tokens, routed to k of E experts each; an MoE layer's routing is its loads
(:func:`symroof.models.moe_rows.loads`: the n*k assignments, the experts that got any
token), "balanced" by default or the twin's counts. Per MoE layer, backwards:

- ``moe/combine``: dY = dy*w (n*k*D) and dw = dy . Y (n*k*(2D - 1)); reads dy, Y, w,
  writes dY, dw;
- ``moe/shared/scale`` (Qwen2-MoE's gate y = ys*sigmoid(x . w)): per token the gate
  recomputed (2D + 4), dys = dy*gate (D), d(gate) = dy . ys (2D - 1), dz (3), dx = dz w
  (2D), dw = x^T dz (2D): 9D + 6; reads x, w, ys, dy, writes dys, dx, dw;
- ``moe/shared/...``: the shared expert's gated backward on every token;
- ``moe/down/dx`` ... ``moe/gate_up_sum``: each expert's on its own tokens: FLOPs follow
  the assignments, weight (and gradient) bytes the experts that got a token;
- ``moe/route``: :func:`route_backward_flops` per token; reads the logits and dw, writes
  d(logits); the top-k choice and the routing bias pass no gradient;
- ``moe/router/dx``, ``moe/router/dw``; ``moe/dx_sum`` adds k + 1 (+ 1 shared, + 1 its
  gate) contributions to d(h) per token.

>>> from symroof.models import model
>>> rows = moe_backward(model("mixtral-8x7b"), 1, 1, None, 2)
>>> rows["moe/down/dw"].flops == rows["moe/down/dx"].flops == 2 * 2 * 4096 * 14336
True
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import sympy as sp

from ..cost import Cost
from . import backward as bw
from . import training_memory as tm
from .backward_mla import mla_backward, mla_graph, mla_sizes
from .moe_rows import loads

__all__ = ["route_backward_flops", "moe_backward", "layers_backward", "layer_saved",
           "layer_recompute", "moe_graph", "trainable", "POLICIES"]

#: remat policies a MoE or MLA layer trains under (kept-tensor tuples name Llama tensors)
POLICIES = ("none", "selective", "matmul_outputs", "full")


def route_backward_flops(moe: Any) -> sp.Expr:
    """FLOPs per token of d(logits) from the k weights' gradient: the scores recomputed
    (softmax 5E - 2, sigmoid 4E), the scale (k), the renormalisation (6k - 2: the sum
    k - 1, the k weights k, their product with the gradient k, its sum k - 1, subtract k,
    divide k), then softmax's
    backward s*(ds - sum(ds*s)) (4E - 1) or sigmoid's ds*s*(1 - s) (3E).

    >>> from symroof.models.spec import MoE
    >>> route_backward_flops(MoE(E=8, k=2, F=14336, norm_topk=True))    # 9*8 - 3 + 6*2 - 2
    79
    """
    E, k = moe.E, moe.k
    flops = 9 * E - 3 if moe.router == "softmax" else 7 * E
    flops += k if moe.scale != 1 else 0
    return flops + (6 * k - 2 if moe.norm_topk else 0)


def _gated(n: Any, D: Any, F: Any, ab: Any, wb: Any, gb: Any, read: Any = 1
           ) -> dict[str, Cost]:
    """A gated MLP's backward on n tokens (down, SwiGLU, up, gate, their sum); ``read``
    matrices of each kind (experts with a token) read and their gradients written."""
    def dx(d_in: Any, d_out: Any) -> Cost:
        return Cost(flops=2 * n * d_in * d_out, weight_bytes=read * d_in * d_out * wb,
                    act_bytes=n * (d_in + d_out) * ab)

    def dw(d_in: Any, d_out: Any) -> Cost:
        return Cost(flops=2 * n * d_in * d_out, weight_bytes=read * d_in * d_out * gb,
                    act_bytes=n * (d_in + d_out) * ab)

    return {"down/dx": dx(F, D), "down/dw": dw(F, D),
            "swiglu": bw.swiglu_backward(n * F, x_bytes=ab),
            "up/dx": dx(D, F), "up/dw": dw(D, F), "gate/dx": dx(D, F), "gate/dw": dw(D, F),
            "gate_up_sum": bw.grad_sum(n * D, 2, x_bytes=ab)}


def moe_backward(m: Any, n: Any, L_moe: Any, tokens_per_expert: Any, gb: Any
                 ) -> dict[str, Cost]:
    """Every MoE backward row (module docstring), summed over the L_moe MoE layers; keys
    without ``bwd/``; ``tokens_per_expert`` as :meth:`Transformer.ops` takes it."""
    moe, D, ab, wb = m.moe, m.D, m.act_bytes, m.w_bytes
    E, k, shared = moe.E, moe.k, moe.shared_F != 0
    layers = int(L_moe) if sp.sympify(L_moe).is_Integer else None
    if layers is None and tokens_per_expert not in (None, "balanced", "worst"):
        raise ValueError("per-layer tokens_per_expert needs a number of layers")
    experts = dict.fromkeys(_gated(1, D, moe.F, ab, wb, gb), Cost())
    for assigned, read, _ in loads(n, E, k, layers or 1, tokens_per_expert):
        for key, cost in _gated(assigned, D, moe.F, ab, wb, gb, read).items():
            experts[key] += cost
    scale = 1 if layers else L_moe
    rows = {"moe/combine": L_moe * Cost(flops=n * k * (3 * D - 1),
                                        act_bytes=(n * D + 2 * n * k * D + 2 * n * k) * ab)}
    if moe.shared_gate:  # y = ys * sigmoid(x . w): shared_scale_flops per token
        rows["moe/shared/scale"] = L_moe * Cost(
            flops=n * (9 * D + 6), weight_bytes=D * (wb + gb), act_bytes=5 * n * D * ab)
    if shared:
        rows |= {f"moe/shared/{key}": L_moe * cost
                 for key, cost in _gated(n, D, moe.shared_F, ab, wb, gb).items()}
    rows |= {f"moe/{key}": scale * cost for key, cost in experts.items()}
    rows["moe/route"] = L_moe * Cost(flops=n * route_backward_flops(moe),
                                     act_bytes=n * (2 * E + k) * ab)
    rows["moe/router/dx"] = L_moe * bw.linear_dx(n, D, E, x_bytes=ab, w_bytes=wb)
    rows["moe/router/dw"] = L_moe * bw.linear_dw(n, D, E, x_bytes=ab, grad_bytes=gb)
    parts = k + 1 + (1 if shared else 0) + (1 if moe.shared_gate else 0)
    rows["moe/dx_sum"] = L_moe * bw.grad_sum(n * D, parts, x_bytes=ab)
    return rows


def layers_backward(m: Any, B: Any, S: Any, gb: Any, dense: dict[str, Cost],
                    tokens_per_expert: Any) -> dict[str, Cost]:
    """The backward rows of all L layers of a MoE or MLA model, keys without ``bwd/``:
    ``dense`` is one Llama layer's (training._layer_backward); its MLP rows hold the dense
    layers, its attention rows the GQA layers; MLA and MoE rows come from their blocks.

    >>> from symroof.models import model
    >>> from symroof.models.training import train_ops
    >>> rows = train_ops(model("deepseek-v3"), 1, 8)
    >>> rows["bwd/mlp/down/dx"].flops == 3 * 2 * 8 * 18432 * 7168     # 3 dense layers
    True
    """
    out = {}
    for key, cost in dense.items():
        layers = m.L if key in ("mlp_norm", "mlp/residual") else m.dense_layers
        if not key.startswith("attn") and layers != 0:
            out[key] = layers * cost
    if m.moe is not None:
        out |= moe_backward(m, B * S, m.moe_layers, tokens_per_expert, gb)
    attn = mla_backward(m, B, S, gb) if m.mla is not None else {
        key: cost for key, cost in dense.items() if key.startswith("attn")}
    return out | {key: m.L * cost for key, cost in attn.items()}


def _blocks(m: Any, attention: str) -> list[tuple[Any, dict, tuple, tuple]]:
    """Per kind of layer (dense MLP, MoE): (how many layers, its forward graph: op -> the
    tensors it reads, the tensors its backward reads, its weight matmuls' outputs), every
    tensor named by the op that wrote it, ``layer_input`` the layer's input."""
    if m.mla is not None:
        graph, reads, mm = mla_graph(m)
    else:
        llama = tm._INPUTS if attention == "naive" else tm._FUSED_INPUTS
        graph = {k: v for k, v in llama.items() if not k.startswith("mlp")}
        reads, mm = ([k for k in tm._kept(p, attention) if not k.startswith("mlp")]
                     for p in ("none", "matmul_outputs"))
    out = []
    if m.dense_layers != 0:
        dense = {k: v for k, v in tm._INPUTS.items() if k.startswith("mlp")}
        out.append((m.dense_layers, graph | dense, (*reads, *dense),
                    (*mm, "mlp/gate", "mlp/up")))
    if m.moe is not None:
        moe, moe_reads, moe_mm = moe_graph(m)
        out.append((m.moe_layers, graph | moe, (*reads, *moe_reads), (*mm, *moe_mm)))
    return out


def moe_graph(m: Any) -> tuple[dict, tuple, tuple]:
    """An MoE block's forward graph, the tensors its backward reads, its matmul outputs.

    >>> from symroof.models import model
    >>> moe_graph(model("mixtral-8x7b"))[0]["moe/down"]
    ('moe/swiglu', 'moe/route')
    """
    shared = m.moe.shared_F != 0
    graph = {"mlp_norm": ("attn/residual",), "moe/router": ("mlp_norm",),
             "moe/route": ("moe/router",), "moe/gate": ("mlp_norm", "moe/route"),
             "moe/up": ("mlp_norm", "moe/route"), "moe/swiglu": ("moe/gate", "moe/up"),
             "moe/down": ("moe/swiglu", "moe/route")}
    sh = ("moe/shared/gate", "moe/shared/up", "moe/shared/swiglu") if shared else ()
    if shared:
        graph |= {"moe/shared/gate": ("mlp_norm",), "moe/shared/up": ("mlp_norm",),
                  "moe/shared/swiglu": ("moe/shared/gate", "moe/shared/up")}
    if m.moe.shared_gate:  # its backward reads the shared expert's output
        graph["moe/shared/down"] = ("moe/shared/swiglu",)
        sh += ("moe/shared/down",)
    reads = ("attn/residual", "mlp_norm", "moe/router", "moe/route", "moe/gate", "moe/up",
             "moe/swiglu", "moe/down", *sh)
    return graph, reads, ("moe/router", "moe/gate", "moe/up", "moe/down", *sh[:2])


def _sizes(m: Any, B: Any, S: Any) -> dict[str, Any]:
    """Elements per layer of every tensor a MoE or MLA model's layer may keep."""
    n = B * S
    sizes = tm._per_layer(m, B, S)
    if m.mla is not None:
        sizes = {k: v for k, v in sizes.items() if not k.startswith("attn")}
        sizes |= mla_sizes(m, B, S)
    if m.moe is not None:
        moe, a = m.moe, n * m.moe.k
        sizes |= {"moe/router": n * moe.E, "moe/route": a, "moe/gate": a * moe.F,
                  "moe/up": a * moe.F, "moe/swiglu": a * moe.F, "moe/down": a * m.D}
        sizes |= dict.fromkeys(("moe/shared/gate", "moe/shared/up", "moe/shared/swiglu"),
                               n * moe.shared_F) | {"moe/shared/down": n * m.D}
    return sizes


def _kept(remat: str, reads: tuple, mm: tuple) -> tuple:
    """The tensors a policy keeps, of a layer whose backward reads ``reads``."""
    kept = {"none": reads, "selective": tuple(r for r in reads if r != "attn/softmax"),
            "matmul_outputs": ("layer_input", *mm), "full": ("layer_input",)}[remat]
    return tuple(dict.fromkeys(kept))


def layer_saved(m: Any, B: Any, S: Any, remat: Any, attention: str) -> dict[str, sp.Expr]:
    """Bytes the layers of a MoE or MLA model keep (``saved_activations`` adds what every
    policy keeps outside them), by the op that wrote them: under ``none`` every tensor
    the backward reads (an MoE layer's logits n*E, weights n*k, each expert's gate, up
    and SwiGLU outputs and the experts' outputs: n*k*F three times and n*k*D; the shared
    expert's n*F_s three times, and its output n*D under a gate; MLA's in
    :func:`~symroof.models.backward_mla.mla_sizes`),
    ``selective`` all but the softmax output, ``matmul_outputs`` the layer input and the
    weight matmuls' outputs (an MoE layer's router, gate, up and down, the shared
    expert's gate and up), ``full`` the layer input.

    >>> from symroof.models import model
    >>> layer_saved(model("mixtral-8x7b"), 1, 1, "none", "naive")["moe/down"]  # 32 x 2 x D
    524288
    """
    policy, sizes, out = _check_policy(remat), _sizes(m, B, S), {}
    for layers, _, reads, mm in _blocks(m, attention):
        for key in _kept(policy, tuple(dict.fromkeys(("layer_input", *reads))), mm):
            out[key] = out.get(key, 0) + layers * sizes[key] * m.act_bytes
    return out


def layer_recompute(m: Any, remat: Any, attention: str) -> tuple[str, ...] | None:
    """The forward rows a policy reruns in a MoE or MLA model's layers (``None``: all of
    them): each kind of layer's closure over its graph, in forward order.

    >>> from symroof.models import model
    >>> layer_recompute(model("mixtral-8x7b"), "matmul_outputs", "naive")[-3:]
    ('mlp_norm', 'moe/route', 'moe/swiglu')
    """
    policy = _check_policy(remat)
    if policy == "full":
        return None
    order: dict[str, None] = {}
    for _, graph, reads, mm in _blocks(m, attention):
        kept = _kept(policy, tuple(dict.fromkeys(("layer_input", *reads))), mm)
        order |= dict.fromkeys(tm.rerun_closure(graph, reads, kept))
    return tuple(order)


def _check_policy(remat: Any) -> str:
    if not isinstance(remat, str) or remat not in POLICIES:
        raise ValueError(f"remat={remat!r}: MoE and MLA layers train under "
                         f"{', '.join(POLICIES)} (kept-tensor tuples name the Llama "
                         "layer's tensors)")
    return remat


def trainable(m: Any, remat: Any, attention: str) -> Any:
    """``m`` as its training step runs it (MLA in the naive form), or a ValueError that
    names what the training rows do not cover yet (MLA with a fused core; kept-tensor
    tuples on MoE and MLA layers).

    >>> from symroof.models import model
    >>> trainable(model("deepseek-v3"), "full", "naive").mla.absorb
    False
    >>> trainable(model("deepseek-v3"), "full", "fused")
    Traceback (most recent call last):
    ...
    ValueError: deepseek-v3's latent attention trains with attention='naive', not 'fused'
    """
    if m.moe is None and m.mla is None:
        return m
    _check_policy(remat)
    if m.mla is None:
        return m
    if attention != "naive":
        raise ValueError(f"{m.name}'s latent attention trains with attention='naive', "
                         f"not {attention!r}")
    return m.replace(mla=replace(m.mla, absorb=False))
