"""Training memory: what the backward pass keeps (by remat policy), parameters, gradients,
master weights and optimizer moments, as SymPy expressions of bytes.

One training step runs B sequences of S tokens (T = S, nothing cached). The backward pass
reads tensors the forward pass wrote; a remat (rematerialisation) policy keeps some of them
and recomputes the rest from what it kept. Kept tensors are named by the op that wrote them
(the forward row keys of docs/accounting.md); every per-layer key holds all L layers.

| policy | keeps per layer | recomputes in the backward |
|---|---|---|
| ``none`` | every tensor the backward reads | nothing |
| ``selective`` | all but the S x S softmax output (and scores) | scores and softmax (Megatron-LM) |
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
(:func:`~symroof.models.training_graph.layer_graph`), the same rule that gives the table's
rows. The book's "checkpoint after the three big matmuls" (ch. 5 problems: 2 L B (D + 2F)
bytes in bf16) is ``("layer_input", "mlp/gate", "mlp/up")``, the down projection's output
being the next layer's input.

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
from .blocks import LayerGraph
from .training_graph import trainable
from .transformer import ATTENTION_MODES, Transformer

__all__ = ["REMAT_POLICIES", "TENSORS", "saved_activations", "train_memory", "state_bytes",
           "remat_recompute"]

#: policy -> what it keeps (the table in the module docstring).
REMAT_POLICIES: dict[str, str] = {
    "none": "keep every tensor the backward reads; recompute nothing",
    "selective": "keep all but the S x S softmax output; recompute scores and softmax",
    "matmul_outputs": "keep each layer's input and weight-matmul outputs; recompute the rest",
    "full": "keep each layer's input; recompute the whole layer forward",
}

#: every per-layer tensor key a kept-tensor tuple may name (a model has some of them)
TENSORS = ("layer_input", "attn_norm", "attn/q_proj", "attn/k_proj", "attn/v_proj",
           "attn/qkv_proj", "attn/q_norm", "attn/k_norm", "attn/rope", "attn/scores",
           "attn/softmax", "attn/av", "attn/core", "attn/o_proj", "attn/post_norm",
           "attn/residual", "mlp_norm", "mlp/gate", "mlp/up", "mlp/gate_up", "mlp/swiglu",
           "mlp/geglu", "mlp/silu", "mlp/gelu", "mlp/down", "mlp/post_norm")


def _policy(remat: Any, attention: str) -> str | tuple[str, ...]:
    """A policy name, or a tuple of kept tensors checked against :data:`TENSORS`."""
    if attention not in ATTENTION_MODES:
        raise ValueError(f"attention must be one of {', '.join(ATTENTION_MODES)}, got "
                         f"{attention!r}")
    if isinstance(remat, (tuple, list)):
        unknown = [k for k in remat if k not in TENSORS]
        if unknown or not remat:
            raise ValueError(f"remat={','.join(map(str, remat))}: unknown tensor(s) "
                             f"{', '.join(map(str, unknown)) or '(none given)'}; a kept-tensor "
                             f"tuple takes {', '.join(TENSORS)}")
        if "layer_input" not in remat:
            raise ValueError(f"remat={','.join(map(str, remat))} must keep 'layer_input': every "
                             "recomputation starts from it")
        return tuple(dict.fromkeys(remat))
    if remat not in REMAT_POLICIES:
        raise ValueError(f"unknown remat policy {remat!r}; known: {', '.join(REMAT_POLICIES)}, "
                         "or a tuple of kept tensors")
    return remat


def _kept_tensors(g: LayerGraph, m: Transformer, remat: str | tuple[str, ...]
                  ) -> tuple[str, ...]:
    """The tensors a policy (or a tuple of writer keys) keeps per layer."""
    if isinstance(remat, tuple):
        known = set(g.writer.values()) - {"mlp/residual"}
        unknown = [k for k in remat if k not in known]
        if unknown:
            raise ValueError(f"remat={','.join(remat)}: unknown tensor(s) {', '.join(unknown)} "
                             f"for {m.name}; "
                             f"its layers keep {', '.join(k for k in TENSORS if k in known)}")
        return tuple(t for t, key in g.writer.items() if key in remat)
    if remat == "none":
        return g.reads
    if remat == "selective":
        return tuple(t for t in g.reads if t not in ("s", "p"))
    if remat == "matmul_outputs":
        return tuple(t for t in g.writer if t == "x" or t in g.matmuls)
    return ("x",)


def _rerun(g: LayerGraph, kept: tuple[str, ...]) -> tuple[str, ...]:
    """The forward ops to rerun so that every tensor the backward reads exists again, each
    rebuilt from what is kept: the closure over the graph's inputs."""
    out: set[str] = set()

    def rebuild(t: str) -> None:
        key = g.writer[t]
        if t not in kept and key not in out and key != "layer_input":
            out.add(key)
            for source in g.ops[key][0]:
                rebuild(source)

    for t in g.reads:
        rebuild(t)
    return tuple(k for k in g.ops if k in out)


def remat_recompute(remat: str | tuple[str, ...], attention: str = "naive",
                    model: Transformer | None = None) -> tuple[str, ...] | None:
    """The forward row keys a policy reruns in each layer's backward (``None``: all of them)
    for ``model`` (default: the Llama family's layer): each kind of layer's closure over
    its graph (:meth:`Blocks.layer_graphs <symroof.models.blocks.Blocks.layer_graphs>`), in
    forward order. A key rerun in one kind of layer is
    rerun in every layer whose forward has it (the policies treat an attention block, or
    the MLP norm, alike in dense and MoE layers).

    >>> remat_recompute("selective")
    ('attn/scores', 'attn/softmax')
    >>> remat_recompute("selective", "fused")
    ()
    >>> remat_recompute(("layer_input", "mlp/gate", "mlp/up"))[-3:]   # not gate and up
    ('attn/residual', 'mlp_norm', 'mlp/swiglu')
    """
    remat = _policy(remat, attention)
    m = trainable(Transformer() if model is None else model, remat, attention)
    if remat == "full":
        return None
    order: dict[str, None] = {}
    for _, g in m.blocks.layer_graphs(attention):
        order |= dict.fromkeys(_rerun(g, _kept_tensors(g, m, remat)))
    return tuple(order)


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
    the tuple's; the other families' tensors (fused projections' slices, q/k norms, post
    norms, the scores under a softcap, the capped logits) and the MoE and MLA blocks'
    (docs/accounting.md, "Training MoE and MLA") follow the blocks' layer graphs and their
    tensors' sizes (:meth:`~symroof.models.blocks.Blocks.layer_graphs`,
    :meth:`~symroof.models.blocks.Blocks.tensors`), each kind of layer at its count.

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
    m = trainable(model, remat, attention)
    n, size = B * S, m.blocks.tensors(B, S, attention)
    out: dict[str, sp.Expr] = {}
    for layers, g in m.blocks.layer_graphs(attention):
        for t in _kept_tensors(g, m, remat):
            out[g.writer[t]] = out.get(g.writer[t], 0) + layers * size[t] * m.act_bytes
    once = m.blocks.head.tensors(n, m.D, m.V)
    return out | {key: size * m.act_bytes for key, size in once.items()}


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
