"""One training step as symbolic costs: forward, loss, backward, recomputation, Adam.

A step runs ``batch`` sequences of ``seq`` tokens (T = S = seq, causal, nothing cached). Its
rows, in the order they run (per-layer rows hold all L layers; docs/accounting.md has the
table, the NumPy twin counts the same keys and :func:`symroof.check_training` compares):

- ``fwd/<key>``: the forward rows of :meth:`Transformer.ops` with no KV cache (no
  ``attn/kv_write``; K and V are activations), then ``fwd/loss`` (mean cross-entropy);
- ``bwd/loss``, ``bwd/lm_head/dx``, ``bwd/lm_head/dw``, ``bwd/final_norm``;
- ``recompute/<key>``: the forward rows the remat policy reruns (training_memory);
- per layer, backwards: ``bwd/mlp/down/dx`` ... ``bwd/attn_norm``, ``bwd/attn/residual``
  (a weight matmul's dX and dW one row each; ``*_sum`` rows add gradient contributions);
- ``bwd/embed`` (scatter-add) and ``optimizer/adam``.

No gradient accumulation across microbatches (one batch per step); a tied embedding's two
gradients meet in ``bwd/embed``. ``attention="fused"`` (FlashAttention: the forward also
writes a logsumexp per query row and head; its backward recomputes scores) is symbolic
only; the NumPy twin runs the naive core.

>>> from symroof.symbols import B, S
>>> rows = train_ops(Transformer(), B, S)
>>> rows["bwd/mlp/down/dw"].flops == rows["fwd/mlp/down"].flops
True
"""

from __future__ import annotations

from typing import Any

from .. import ops as op
from ..conventions import using
from ..cost import Cost, as_dimension
from ..workload import TrainStep
from . import attention_rows as ar
from . import backward as bw
from . import backward_moe
from .training_memory import REMAT_POLICIES, _policy, layer_recompute, remat_recompute
from .transformer import Transformer

__all__ = ["train_ops", "REMAT_POLICIES", "MATMUL_KEYS", "ATTENTION_MATMUL_KEYS"]

#: Forward weight-matmul rows: 6ND counts them (forward, dX, dW).
MATMUL_KEYS = ("attn/q_proj", "attn/k_proj", "attn/v_proj", "attn/o_proj", "mlp/gate",
               "mlp/up", "mlp/down", "lm_head")
#: The naive attention core's matmul rows, forward and backward.
ATTENTION_MATMUL_KEYS = ("fwd/attn/scores", "fwd/attn/av", "bwd/attn/av/dp", "bwd/attn/av/dv",
                         "bwd/attn/scores/dq", "bwd/attn/scores/dk")


#: family features the training rows cover beyond the Llama family's (backward_moe)
_TRAINED = ("moe", "mla")


def _llama_family(model: Transformer, S: Any) -> None:
    """Training rows cover the Llama family, MoE and MLA (no backward for GPT-2, NeoX,
    Gemma, Phi-3 blocks yet); a sliding window only while the sequence fits in it."""
    untrained = [f for f in model.features if f not in _TRAINED]
    if untrained:
        raise ValueError(f"training rows cover MoE, MLA and the Llama family only; "
                         f"{model.name} has {', '.join(untrained)}")
    if model.window is not None and (S - model.window).is_positive:
        raise ValueError(f"training rows attend to the whole sequence; seq {S} exceeds "
                         f"{model.name}'s sliding window of {model.window}")


def _forward(model: Transformer, B: Any, S: Any, attention: str,
             tokens_per_expert: Any = None) -> dict[str, Cost]:
    """The forward rows with no KV cache: K and V are activations, nothing is written to a
    cache; a fused core also writes its logsumexp (B*S*H) for the backward."""
    rows = model.replace(kv_bytes=model.act_bytes).ops(B, S, 0, attention=attention,
                                                       tokens_per_expert=tokens_per_expert)
    rows.pop("attn/kv_write", None)  # (absent where the projections write the cache)
    out = {key: Cost(flops=c.flops, useful_flops=c.useful_flops, weight_bytes=c.weight_bytes,
                     act_bytes=c.act_bytes + c.kv_bytes) for key, c in rows.items()}
    if attention == "fused":
        out["attn/core"] += Cost(act_bytes=model.L * B * S * model.H * model.act_bytes)
    return out


def _layer_backward(m: Transformer, B: Any, S: Any, attention: str, gb: Any) -> dict[str, Cost]:
    """One layer's backward rows (per layer; the caller multiplies by L)."""
    D, F, H, G, d_h, ab, wb = m.D, m.F, m.H, m.G, m.d_h, m.act_bytes, m.w_bytes
    n, pairs = B * S, ar.pairs(S, 0, None)[1]  # causal S (S + 1)/2, or all S^2 (conventions)

    def dx(d_in: Any, d_out: Any) -> Cost:
        return bw.linear_dx(n, d_in, d_out, x_bytes=ab, w_bytes=wb)

    def dw(d_in: Any, d_out: Any, bias: bool = False) -> Cost:
        return bw.linear_dw(n, d_in, d_out, x_bytes=ab, grad_bytes=gb, bias=bias)

    norm = bw.rmsnorm_backward(n, D, x_bytes=ab, w_bytes=wb, grad_bytes=gb)
    rows = {
        "mlp/down/dx": dx(F, D), "mlp/down/dw": dw(F, D),
        "mlp/swiglu": bw.swiglu_backward(n * F, x_bytes=ab),
        "mlp/up/dx": dx(D, F), "mlp/up/dw": dw(D, F),
        "mlp/gate/dx": dx(D, F), "mlp/gate/dw": dw(D, F),
        "mlp/gate_up_sum": bw.grad_sum(n * D, 2, x_bytes=ab),
        "mlp_norm": norm, "mlp/residual": bw.grad_sum(n * D, 2, x_bytes=ab),
        "attn/o_proj/dx": dx(H * d_h, D), "attn/o_proj/dw": dw(H * d_h, D),
    }
    if attention == "naive":
        core = bw.attention_matmul_backward(B, S, S, H, G, d_h, pairs=pairs, x_bytes=ab)
        rows |= {"attn/av/dp": core, "attn/av/dv": core,
                 "attn/softmax": bw.softmax_backward(B * H * S, S, useful_elements=B * H * pairs,
                                                     x_bytes=ab),
                 "attn/scores/dq": core, "attn/scores/dk": core}
    else:
        rows["attn/core"] = bw.flash_attention_backward(B, S, S, H, G, d_h, pairs=pairs,
                                                        x_bytes=ab)
    rows["attn/rope"] = op.rope(n * (H + G) * d_h, table=S * d_h, x_bytes=ab)
    for name, width in (("v", G), ("k", G), ("q", H)):
        rows[f"attn/{name}_proj/dx"] = dx(D, width * d_h)
        rows[f"attn/{name}_proj/dw"] = dw(D, width * d_h, m.qkv_bias)
    return rows | {"attn/qkv_sum": bw.grad_sum(n * D, 3, x_bytes=ab), "attn_norm": norm,
                   "attn/residual": bw.grad_sum(n * D, 2, x_bytes=ab)}


def train_ops(model: Transformer, batch: Any, seq: Any = None, remat: str = "none", *,
              attention: str = "naive", grad_bytes: Any = None, moment_bytes: Any = 4,
              master_bytes: Any = 0, tokens_per_expert: Any = None,
              conventions: Any = None) -> dict[str, Cost]:
    """The rows of one training step (module docstring), as ``dict[str, Cost]``: ``batch``
    a :class:`~symroof.TrainStep`, or sequences with their ``seq``. MoE layers route
    ``tokens_per_expert`` ("balanced" by default, or counts: :meth:`Transformer.ops`);
    MLA trains in its naive form (backward_moe, backward_mla).

    Weight matmuls cost 2*n*P_mm forward and 4*n*P_mm backward (n = B*S tokens, P_mm =
    ``model.matmul_params``): 6*n*P_mm, the 6ND rule. The naive attention core's six matmuls
    execute 12*B*L*H*S^2*d_h (useful: 6*B*L*H*S*(S + 1)*d_h). Gradients are written at
    ``grad_bytes`` (default ``model.w_bytes``); Adam's moments at ``moment_bytes``; a master
    copy at ``master_bytes`` (0: none). Remat policies: :data:`REMAT_POLICIES`.

    >>> from symroof.symbols import B, S
    >>> m = Transformer()
    >>> rows = train_ops(m, B, S, "full")
    >>> rows["recompute/mlp/down"] == rows["fwd/mlp/down"]
    True
    >>> mm = sum(rows[f"{p}/{k}{d}"].flops for k in MATMUL_KEYS for p, d in
    ...          (("fwd", ""), ("bwd", "/dx"), ("bwd", "/dw")))
    >>> (mm - 6 * B*S * m.matmul_params).expand()
    0
    >>> train_ops(m, B, S, conventions="book")["fwd/attn/scores"].useful_flops  # all S^2
    2*B*H*L*S**2*d_h
    """
    with using(conventions):
        return _train_ops(model, batch, seq, remat, attention, grad_bytes, moment_bytes,
                          master_bytes, tokens_per_expert)


def _train_ops(model: Transformer, batch: Any, seq: Any, remat: str, attention: str,
               grad_bytes: Any, moment_bytes: Any, master_bytes: Any,
               tokens_per_expert: Any = None) -> dict[str, Cost]:
    remat = _policy(remat, attention)
    if isinstance(batch, TrainStep):  # the workload named once: sequences and seq
        if seq is not None:
            raise ValueError("a TrainStep already says its seq")
        batch, seq = batch.sequences, batch.seq
    if seq is None:
        raise ValueError("train_ops() needs a TrainStep (sr.TrainStep(sequences, seq)) or "
                         "batch and seq")
    B, S = as_dimension(batch, "batch"), as_dimension(seq, "seq")
    _llama_family(model, S)
    m, n = backward_moe.trainable(model, remat, attention), B * S
    ab, gb = m.act_bytes, m.w_bytes if grad_bytes is None else grad_bytes
    fwd = _forward(m, B, S, attention, tokens_per_expert)
    layer_keys = [k for k in fwd if k not in ("embed", "final_norm", "lm_head")]
    recompute = (layer_recompute(m, remat, attention)
                 if m.moe is not None or m.mla is not None else remat_recompute(remat, attention))
    rows = {f"fwd/{key}": cost for key, cost in fwd.items()}
    rows |= {
        "fwd/loss": bw.cross_entropy(n, m.V, x_bytes=ab),
        "bwd/loss": bw.cross_entropy_backward(n, m.V, x_bytes=ab),
        "bwd/lm_head/dx": bw.linear_dx(n, m.D, m.V, x_bytes=ab, w_bytes=m.w_bytes),
        "bwd/lm_head/dw": bw.linear_dw(n, m.D, m.V, x_bytes=ab, grad_bytes=gb),
        "bwd/final_norm": bw.rmsnorm_backward(n, m.D, x_bytes=ab, w_bytes=m.w_bytes,
                                              grad_bytes=gb),
    }
    rows |= {f"recompute/{key}": fwd[key]
             for key in (layer_keys if recompute is None else recompute)}
    layer = _layer_backward(m, B, S, attention, gb)
    rows |= {f"bwd/{key}": cost for key, cost in (
        backward_moe.layers_backward(m, B, S, gb, layer, tokens_per_expert)
        if m.moe is not None or m.mla is not None else
        {key: m.L * cost for key, cost in layer.items()}).items()}
    rows["bwd/embed"] = bw.embedding_backward(n, m.D, m.V, x_bytes=ab, grad_bytes=gb,
                                              accumulate=m.tied)
    rows["optimizer/adam"] = bw.adam(m.params, w_bytes=m.w_bytes, grad_bytes=gb,
                                     moment_bytes=moment_bytes, master_bytes=master_bytes)
    return rows
