"""Training memory: what the backward pass keeps (by remat policy), parameters, gradients,
master weights and optimizer moments, as SymPy expressions of bytes.

One training step runs B sequences of S tokens (T = S, nothing cached). The backward pass
reads tensors the forward pass wrote; a remat (rematerialisation) policy keeps some of them
and recomputes the rest from what it kept. Kept tensors are named by the op that wrote them
(the forward row keys of docs/accounting.md); every per-layer key holds all L layers.

| policy | keeps per layer | recomputes in the backward |
|---|---|---|
| ``none`` | every tensor the backward reads | nothing |
| ``selective`` | all but the S x S softmax output | scores and softmax (Megatron-LM) |
| ``matmul_outputs`` | the layer input and the outputs of the weight matmuls | the rest |
| ``full`` | the layer input | the whole layer forward |
| a tuple of tensor keys | those tensors | the rest of what the backward reads |

``matmul_outputs`` is JAX's ``dots_with_no_batch_dims_saveable`` and the book's "keep only
the big matmul outputs": the two attention matmuls (scores, attention x V) and every
elementwise op are recomputed. Outside the layers every policy keeps the final norm's input
and output, the logits and the loss's logsumexp per token. A layer rerun by ``full`` holds
its intermediates only while that layer's backward runs; they are not counted here.

A tuple names the kept tensors itself (``layer_input`` among them: every rerun starts from
it); what its backward reruns follows from which forward op reads which tensor
(:data:`_INPUTS`), the same rule that gives the table's rows. The book's "checkpoint after
the three big matmuls" (ch. 5 problems: 2 L B (D + 2F) bytes in bf16) is
``("layer_input", "mlp/gate", "mlp/up")``, the down projection's output being the next
layer's input.

>>> from symroof.symbols import B, S
>>> from symroof.models import Transformer
>>> saved_activations(Transformer(), B, S, "full")["layer_input"]
2*B*D*L*S
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from ..conventions import current, using
from ..cost import as_dimension, as_exact
from .backward_mla import mla_graph, mla_sizes
from .backward_moe import check_policy, moe_graph
from .transformer import ATTENTION_MODES, Transformer

__all__ = ["REMAT_POLICIES", "TENSORS", "saved_activations", "train_memory", "state_bytes",
           "remat_recompute", "layer_recompute"]

#: policy -> what it keeps (the table in the module docstring).
REMAT_POLICIES: dict[str, str] = {
    "none": "keep every tensor the backward reads; recompute nothing",
    "selective": "keep all but the S x S softmax output; recompute scores and softmax",
    "matmul_outputs": "keep each layer's input and weight-matmul outputs; recompute the rest",
    "full": "keep each layer's input; recompute the whole layer forward",
}

_NONE = ("layer_input", "attn_norm", "attn/rope", "attn/v_proj", "attn/softmax", "attn/av",
         "attn/residual", "mlp_norm", "mlp/gate", "mlp/up", "mlp/swiglu")
_KEPT = {
    "none": _NONE,
    "selective": tuple(k for k in _NONE if k != "attn/softmax"),
    "matmul_outputs": ("layer_input", "attn/q_proj", "attn/k_proj", "attn/v_proj",
                       "attn/o_proj", "mlp/gate", "mlp/up"),
    "full": ("layer_input",),
}
_RECOMPUTE = {
    "none": (),
    "selective": ("attn/scores", "attn/softmax"),
    "matmul_outputs": ("attn_norm", "attn/rope", "attn/scores", "attn/softmax", "attn/av",
                       "attn/residual", "mlp_norm", "mlp/swiglu"),
    "full": None,  # every forward row of the layer
}
_CORE = ("attn/scores", "attn/softmax", "attn/av")
#: which tensors each forward op of a layer reads (naive attention), in forward order
_INPUTS = {
    "attn_norm": ("layer_input",), "attn/q_proj": ("attn_norm",),
    "attn/k_proj": ("attn_norm",), "attn/v_proj": ("attn_norm",),
    "attn/rope": ("attn/q_proj", "attn/k_proj"), "attn/scores": ("attn/rope",),
    "attn/softmax": ("attn/scores",), "attn/av": ("attn/softmax", "attn/v_proj"),
    "attn/o_proj": ("attn/av",), "attn/residual": ("layer_input", "attn/o_proj"),
    "mlp_norm": ("attn/residual",), "mlp/gate": ("mlp_norm",), "mlp/up": ("mlp_norm",),
    "mlp/swiglu": ("mlp/gate", "mlp/up"),
}
#: the same with a fused attention core (it reads q, k after RoPE and v; writes o and lse)
_FUSED_INPUTS = {("attn/core" if k == "attn/av" else k):
                 (("attn/rope", "attn/v_proj") if k == "attn/av" else
                  tuple("attn/core" if i == "attn/av" else i for i in v))
                 for k, v in _INPUTS.items() if k not in _CORE[:2]}
#: every per-layer tensor a tuple may keep
TENSORS = ("layer_input",) + tuple(_INPUTS) + ("attn/core",)


def _policy(remat: Any, attention: str) -> str | tuple[str, ...]:
    """A policy name, or a tuple of kept tensors checked against :data:`TENSORS`."""
    if attention not in ATTENTION_MODES:
        raise ValueError(f"attention must be one of {ATTENTION_MODES}, got {attention!r}")
    if isinstance(remat, (tuple, list)):
        unknown = [k for k in remat if k not in TENSORS]
        if unknown or not remat:
            raise ValueError(f"remat={tuple(remat)!r}: unknown tensor(s) {unknown}; a "
                             f"kept-tensor tuple takes {', '.join(TENSORS)}")
        if "layer_input" not in remat:
            raise ValueError(f"remat={tuple(remat)!r} must keep 'layer_input': every "
                             "recomputation starts from it")
        return tuple(dict.fromkeys(remat))
    if remat not in REMAT_POLICIES:
        raise ValueError(f"unknown remat policy {remat!r}; known: {list(REMAT_POLICIES)} or a "
                         "tuple of kept tensors")
    return remat


def _kept(remat: str | tuple[str, ...], attention: str) -> tuple[str, ...]:
    keys = remat if isinstance(remat, tuple) else _KEPT[remat]
    return keys if attention == "naive" else _fused(keys)


def _rerun(kept: tuple[str, ...], attention: str) -> tuple[str, ...]:
    """The forward ops to rerun so that every tensor the backward reads (``none``'s list)
    exists again, each rebuilt from what is kept: the closure over :data:`_INPUTS`."""
    return rerun_closure(_INPUTS if attention == "naive" else _FUSED_INPUTS,
                         _kept("none", attention), kept)


def rerun_closure(graph: dict[str, tuple[str, ...]], reads: tuple[str, ...],
                  kept: tuple[str, ...]) -> tuple[str, ...]:
    """The ops of ``graph`` (op -> the tensors it reads) to rerun so that every tensor in
    ``reads`` exists again, each rebuilt from the ``kept`` ones; in forward order."""
    out: set[str] = set()

    def rebuild(t: str) -> None:
        if t not in kept and t not in out and t in graph:
            out.add(t)
            for source in graph[t]:
                rebuild(source)

    for t in reads:
        rebuild(t)
    return tuple(k for k in graph if k in out)


def _fused(keys: tuple[str, ...]) -> tuple[str, ...]:
    """Fused attention keeps no S x S tensor: its core writes o and the logsumexp."""
    out = ["attn/core" if k == "attn/av" else k for k in keys if k not in _CORE[:2]]
    return tuple(dict.fromkeys(out))


def remat_recompute(remat: str | tuple[str, ...],
                    attention: str = "naive") -> tuple[str, ...] | None:
    """The forward row keys a policy reruns in each layer's backward (``None``: all of them).

    >>> remat_recompute("selective")
    ('attn/scores', 'attn/softmax')
    >>> remat_recompute("selective", "fused")
    ()
    >>> remat_recompute(("layer_input", "mlp/gate", "mlp/up"))[-3:]   # not gate and up
    ('attn/residual', 'mlp_norm', 'mlp/swiglu')
    """
    remat = _policy(remat, attention)
    if isinstance(remat, tuple):
        return _rerun(_kept(remat, attention), attention)
    keys = _RECOMPUTE[remat]
    return keys if keys is None or attention == "naive" else _fused(keys)


def saved_activations(model: Transformer, batch: Any, seq: Any,
                      remat: str | tuple[str, ...] = "none", *,
                      attention: str = "naive") -> dict[str, sp.Expr]:
    """Bytes the backward pass keeps from the forward pass, by the op that wrote them.

    n = B*S tokens; per layer (each row holds L layers): ``layer_input`` n*D,
    ``attn_norm`` n*D, ``attn/q_proj`` n*H*d_h, ``attn/k_proj`` and ``attn/v_proj``
    n*G*d_h, ``attn/rope`` (q and k) n*(H + G)*d_h, ``attn/softmax`` B*H*S^2, ``attn/av``
    n*H*d_h (fused: ``attn/core``, o and the logsumexp, n*H*(d_h + 1)), ``attn/o_proj``,
    ``attn/residual``, ``mlp_norm`` n*D, ``mlp/gate``, ``mlp/up``, ``mlp/swiglu`` n*F; once:
    ``final_input`` and ``final_norm`` n*D, ``lm_head`` (logits) n*V, ``loss`` (logsumexp)
    n; all times ``act_bytes``. Which rows appear is the policy's (module docstring), or
    the tuple's.

    >>> from symroof.symbols import B, S
    >>> sa = saved_activations(Transformer(), B, S)
    >>> sa["attn/softmax"], sa["mlp/gate"]
    (2*B*H*L*S**2, 2*B*F*L*S)
    >>> three = saved_activations(Transformer(), B, S, ("layer_input", "mlp/gate", "mlp/up"))
    >>> sum(v for k, v in three.items() if "/" in k or k == "layer_input").factor()
    2*B*L*S*(D + 2*F)
    """
    remat = _policy(remat, attention)
    B, S = as_dimension(batch, "batch"), as_dimension(seq, "seq")
    m = model
    n, D = B * S, m.D
    if m.moe is not None or m.mla is not None:  # their blocks' tensors (below)
        out = _layer_saved(m, B, S, remat, attention)
    else:
        out = {key: m.L * _per_layer(m, B, S)[key] * m.act_bytes
               for key in _kept(remat, attention)}
    once = {"final_input": n * D, "final_norm": n * D, "lm_head": n * m.V, "loss": n}
    return out | {key: size * m.act_bytes for key, size in once.items()}


def _per_layer(m: Transformer, B: Any, S: Any) -> dict[str, sp.Expr]:
    """Elements of each tensor one Llama layer may keep, by the op that wrote it."""
    n, D, F, H, G, d_h = B * S, m.D, m.F, m.H, m.G, m.d_h
    return {
        "layer_input": n * D, "attn_norm": n * D, "attn/q_proj": n * H * d_h,
        "attn/k_proj": n * G * d_h, "attn/v_proj": n * G * d_h,
        "attn/rope": n * (H + G) * d_h, "attn/softmax": B * H * S**2, "attn/av": n * H * d_h,
        "attn/core": n * H * (d_h + 1), "attn/o_proj": n * D, "attn/residual": n * D,
        "mlp_norm": n * D, "mlp/gate": n * F, "mlp/up": n * F, "mlp/swiglu": n * F,
    }


# -- MoE and MLA layers: each kind of layer from its blocks' graphs ------------------
def _blocks(m: Any, attention: str) -> list[tuple[Any, dict, tuple, tuple]]:
    """Per kind of layer (dense MLP, MoE): (how many layers, its forward graph: op -> the
    tensors it reads, the tensors its backward reads, its weight matmuls' outputs), every
    tensor named by the op that wrote it, ``layer_input`` the layer's input."""
    if m.mla is not None:
        graph, reads, mm = mla_graph(m)
    else:
        llama = _INPUTS if attention == "naive" else _FUSED_INPUTS
        graph = {k: v for k, v in llama.items() if not k.startswith("mlp")}
        reads, mm = ([k for k in _kept(p, attention) if not k.startswith("mlp")]
                     for p in ("none", "matmul_outputs"))
    out = []
    if m.dense_layers != 0:
        dense = {k: v for k, v in _INPUTS.items() if k.startswith("mlp")}
        out.append((m.dense_layers, graph | dense, (*reads, *dense),
                    (*mm, "mlp/gate", "mlp/up")))
    if m.moe is not None:
        moe, moe_reads, moe_mm = moe_graph(m)
        out.append((m.moe_layers, graph | moe, (*reads, *moe_reads), (*mm, *moe_mm)))
    return out


def _sizes(m: Any, B: Any, S: Any) -> dict[str, Any]:
    """Elements per layer of every tensor a MoE or MLA model's layer may keep."""
    n = B * S
    sizes = _per_layer(m, B, S)
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


def _block_kept(remat: str, reads: tuple, mm: tuple) -> tuple:
    """The tensors a policy keeps, of a layer whose backward reads ``reads``."""
    kept = {"none": reads, "selective": tuple(r for r in reads if r != "attn/softmax"),
            "matmul_outputs": ("layer_input", *mm), "full": ("layer_input",)}[remat]
    return tuple(dict.fromkeys(kept))


def _layer_saved(m: Any, B: Any, S: Any, remat: Any, attention: str) -> dict[str, sp.Expr]:
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
    >>> _layer_saved(model("mixtral-8x7b"), 1, 1, "none", "naive")["moe/down"]  # 32 x 2 x D
    524288
    """
    policy, sizes, out = check_policy(remat), _sizes(m, B, S), {}
    for layers, _, reads, mm in _blocks(m, attention):
        for key in _block_kept(policy, tuple(dict.fromkeys(("layer_input", *reads))), mm):
            out[key] = out.get(key, 0) + layers * sizes[key] * m.act_bytes
    return out


def layer_recompute(m: Any, remat: Any, attention: str) -> tuple[str, ...] | None:
    """The forward rows a policy reruns in a MoE or MLA model's layers (``None``: all of
    them): each kind of layer's closure over its graph, in forward order.

    >>> from symroof.models import model
    >>> layer_recompute(model("mixtral-8x7b"), "matmul_outputs", "naive")[-3:]
    ('mlp_norm', 'moe/route', 'moe/swiglu')
    """
    policy = check_policy(remat)
    if policy == "full":
        return None
    order: dict[str, None] = {}
    for _, graph, reads, mm in _blocks(m, attention):
        kept = _block_kept(policy, tuple(dict.fromkeys(("layer_input", *reads))), mm)
        order |= dict.fromkeys(rerun_closure(graph, reads, kept))
    return tuple(order)


def _bytes(value: Any, name: str) -> sp.Expr:
    width = as_exact(value, name)
    if width.is_negative:
        raise ValueError(f"{name} must be a non-negative number of bytes, got {value!r}")
    return width


def state_widths() -> tuple[int, int]:
    """(gradient, master) bytes per parameter of the conventions in force
    (``optimizer_bytes``: 12, 10, 16 or 18 with bf16 weights and fp32 Adam moments).

    >>> state_widths()
    (2, 0)
    """
    return {12: (2, 0), 10: (0, 0), 16: (2, 4), 18: (4, 4)}[current().optimizer_bytes]


def state_bytes(*, param_bytes: Any = 2, grad_bytes: Any = 2, master_bytes: Any = 0,
                moment_bytes: Any = 4, n_moments: int = 2) -> dict[str, sp.Expr]:
    """Bytes per parameter of a training state, by part: ``params``, ``grads``, ``master``,
    ``moments`` (n_moments x moment_bytes); :func:`train_memory` multiplies them by P.

    >>> sum(state_bytes(grad_bytes=0).values())     # the book's 2 + 4 + 4 (ch. 5)
    10
    """
    if isinstance(n_moments, bool) or not isinstance(n_moments, int) or n_moments < 0:
        raise ValueError(f"n_moments must be a non-negative integer, got {n_moments!r}")
    return {"params": _bytes(param_bytes, "param_bytes"),
            "grads": _bytes(grad_bytes, "grad_bytes"),
            "master": _bytes(master_bytes, "master_bytes"),
            "moments": n_moments * _bytes(moment_bytes, "moment_bytes")}


def train_memory(model: Transformer, batch: Any, seq: Any,
                 remat: str | tuple[str, ...] = "none", *, param_bytes: Any = 2,
                 grad_bytes: Any = None, master_bytes: Any = None, moment_bytes: Any = 4,
                 n_moments: int = 2, attention: str = "naive",
                 conventions: Any = None) -> dict[str, sp.Expr]:
    """Bytes of one training step's state, whole model, unsharded: ``params``, ``grads``,
    ``master`` (fp32 master weights, 0 by default), ``moments`` (Adam's two) and
    ``activations`` (the sum of :func:`saved_activations`).

    With P = ``model.params``: params P*param_bytes, grads P*grad_bytes, master
    P*master_bytes, moments n_moments*P*moment_bytes (:func:`state_bytes`). Gradient and
    master widths left out come from the conventions' ``optimizer_bytes``: symroof's counts
    bf16 gradients (12 bytes per parameter); the book's 10 bytes per parameter (bf16
    weights, fp32 moments, no gradients or master copy) is ``conventions="book"`` (or
    ``grad_bytes=0``).

    >>> from symroof.symbols import B, S
    >>> from symroof.models import model
    >>> mem = train_memory(model("llama-3.1-8b"), B, S, "full", grad_bytes=0)
    >>> (mem["params"] + mem["moments"]) / model("llama-3.1-8b").params
    10
    >>> mem["activations"] == 2*B*S*((32 + 2)*4096 + 128256 + 1)  # inputs, final, logits, lse
    True
    >>> book = train_memory(model("llama-3.1-8b"), B, S, "full", conventions="book")
    >>> sum(book[k] for k in ("params", "grads", "master", "moments")) == 10 * 8030261248
    True
    """
    with using(conventions):
        grads, master = state_widths()
    grad_bytes = grads if grad_bytes is None else grad_bytes
    master_bytes = master if master_bytes is None else master_bytes
    B, S = as_dimension(batch, "batch"), as_dimension(seq, "seq")
    per = state_bytes(param_bytes=param_bytes, grad_bytes=grad_bytes,
                      master_bytes=master_bytes, moment_bytes=moment_bytes,
                      n_moments=n_moments)
    P = model.params
    return {key: P * width for key, width in per.items()} | {
        "activations": sum(saved_activations(model, B, S, remat,
                                             attention=attention).values()),
    }
