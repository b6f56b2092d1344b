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

``matmul_outputs`` is JAX's ``dots_with_no_batch_dims_saveable`` and the book's "keep only
the big matmul outputs": the two attention matmuls (scores, attention x V) and every
elementwise op are recomputed. Outside the layers every policy keeps the final norm's input
and output, the logits and the loss's logsumexp per token. A layer rerun by ``full`` holds
its intermediates only while that layer's backward runs; they are not counted here.

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
from .transformer import ATTENTION_MODES, Transformer

__all__ = ["REMAT_POLICIES", "saved_activations", "train_memory", "remat_recompute"]

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


def _policy(remat: Any, attention: str) -> str:
    if remat not in REMAT_POLICIES:
        raise ValueError(f"unknown remat policy {remat!r}; known: {list(REMAT_POLICIES)}")
    if attention not in ATTENTION_MODES:
        raise ValueError(f"attention must be one of {ATTENTION_MODES}, got {attention!r}")
    return remat


def _fused(keys: tuple[str, ...]) -> tuple[str, ...]:
    """Fused attention keeps no S x S tensor: its core writes o and the logsumexp."""
    out = ["attn/core" if k == "attn/av" else k for k in keys if k not in _CORE[:2]]
    return tuple(dict.fromkeys(out))


def remat_recompute(remat: str, attention: str = "naive") -> tuple[str, ...] | None:
    """The forward row keys a policy reruns in each layer's backward (``None``: all of them).

    >>> remat_recompute("selective")
    ('attn/scores', 'attn/softmax')
    >>> remat_recompute("selective", "fused")
    ()
    """
    keys = _RECOMPUTE[_policy(remat, attention)]
    return keys if keys is None or attention == "naive" else _fused(keys)


def saved_activations(model: Transformer, batch: Any, seq: Any, remat: str = "none", *,
                      attention: str = "naive") -> dict[str, sp.Expr]:
    """Bytes the backward pass keeps from the forward pass, by the op that wrote them.

    n = B*S tokens; per layer (each row holds L layers): ``layer_input`` n*D,
    ``attn_norm`` n*D, ``attn/q_proj`` n*H*d_h, ``attn/k_proj`` and ``attn/v_proj``
    n*G*d_h, ``attn/rope`` (q and k) n*(H + G)*d_h, ``attn/softmax`` B*H*S^2, ``attn/av``
    n*H*d_h (fused: ``attn/core``, o and the logsumexp, n*H*(d_h + 1)), ``attn/o_proj``,
    ``attn/residual``, ``mlp_norm`` n*D, ``mlp/gate``, ``mlp/up``, ``mlp/swiglu`` n*F; once:
    ``final_input`` and ``final_norm`` n*D, ``lm_head`` (logits) n*V, ``loss`` (logsumexp)
    n; all times ``act_bytes``. Which rows appear is the policy's (module docstring).

    >>> from symroof.symbols import B, S
    >>> sa = saved_activations(Transformer(), B, S)
    >>> sa["attn/softmax"], sa["mlp/gate"]
    (2*B*H*L*S**2, 2*B*F*L*S)
    """
    remat = _policy(remat, attention)
    B, S = as_dimension(batch, "batch"), as_dimension(seq, "seq")
    m = model
    n, D, F, H, G, d_h = B * S, m.D, m.F, m.H, m.G, m.d_h
    per_layer = {
        "layer_input": n * D, "attn_norm": n * D, "attn/q_proj": n * H * d_h,
        "attn/k_proj": n * G * d_h, "attn/v_proj": n * G * d_h,
        "attn/rope": n * (H + G) * d_h, "attn/softmax": B * H * S**2, "attn/av": n * H * d_h,
        "attn/core": n * H * (d_h + 1), "attn/o_proj": n * D, "attn/residual": n * D,
        "mlp_norm": n * D, "mlp/gate": n * F, "mlp/up": n * F, "mlp/swiglu": n * F,
    }
    kept = _KEPT[remat] if attention == "naive" else _fused(_KEPT[remat])
    out = {key: m.L * per_layer[key] * m.act_bytes for key in kept}
    once = {"final_input": n * D, "final_norm": n * D, "lm_head": n * m.V, "loss": n}
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


def train_memory(model: Transformer, batch: Any, seq: Any, remat: str = "none", *,
                 param_bytes: Any = 2, grad_bytes: Any = None, master_bytes: Any = None,
                 moment_bytes: Any = 4, n_moments: int = 2,
                 attention: str = "naive", conventions: Any = None) -> dict[str, sp.Expr]:
    """Bytes of one training step's state, whole model, unsharded: ``params``, ``grads``,
    ``master`` (fp32 master weights, 0 by default), ``moments`` (Adam's two) and
    ``activations`` (the sum of :func:`saved_activations`).

    With P = ``model.params``: params P*param_bytes, grads P*grad_bytes, master
    P*master_bytes, moments n_moments*P*moment_bytes. Gradient and master widths left out
    come from the conventions' ``optimizer_bytes``: symroof's counts bf16 gradients (12
    bytes per parameter); the book's 10 bytes per parameter (bf16 weights, fp32 moments, no
    gradients or master copy) is ``conventions="book"`` (or ``grad_bytes=0``).

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
    if isinstance(n_moments, bool) or not isinstance(n_moments, int) or n_moments < 0:
        raise ValueError(f"n_moments must be a non-negative integer, got {n_moments!r}")
    P = model.params
    return {
        "params": P * _bytes(param_bytes, "param_bytes"),
        "grads": P * _bytes(grad_bytes, "grad_bytes"),
        "master": P * _bytes(master_bytes, "master_bytes"),
        "moments": n_moments * P * _bytes(moment_bytes, "moment_bytes"),
        "activations": sum(saved_activations(model, B, S, remat,
                                             attention=attention).values()),
    }
