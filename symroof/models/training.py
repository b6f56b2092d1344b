"""One training step as symbolic costs: forward, loss, backward, recomputation, Adam.

A step runs ``batch`` sequences of ``seq`` tokens (T = S = seq, causal, nothing cached). Its
rows, in the order they run (per-layer rows hold all L layers; docs/accounting.md has the
table, the NumPy twin counts the same keys and :func:`symroof.check_training` compares):

- ``fwd/<key>``: the forward rows of :meth:`Transformer.ops` with no KV cache (no
  ``attn/kv_write``; K and V are activations), then ``fwd/loss`` (mean cross-entropy);
- ``bwd/loss``, (``bwd/logit_softcap``), ``bwd/lm_head/dx``, ``bwd/lm_head/dw``,
  ``bwd/final_norm``;
- ``recompute/<key>``: the forward rows the remat policy reruns (training_memory);
- per layer, backwards: (``bwd/mlp/post_norm``), ``bwd/mlp/down/dx`` ... ``bwd/attn_norm``,
  ``bwd/attn/residual`` (a weight matmul's dX and dW one row each; ``*_sum`` rows add
  gradient contributions); the core's rows hold the windowed and the global layers;
- (``bwd/pos_embed``), ``bwd/embed`` (scatter-add) and ``optimizer/adam``.

Where the rows come from: the forward rows are the blocks' (:meth:`Transformer.ops`), the
backward rows too: each block owns its own (``Norm.backward``, ``Residual.backward_*``,
``Attention.backward_out``, ``backward_core``, ``backward_in`` (MLA's:
:mod:`symroof.models.blocks.latent`), ``DenseMLP.backward``, ``Experts.backward``,
``Head.backward``, ``Learned.backward``, ``Embedding.backward``), and
:meth:`~symroof.models.blocks.Blocks.backward_rows` composes them, each row times the layers
its block is in (dense MLP rows the dense layers, the experts' the MoE layers, the core's
the windowed and the global ones). The per-op formulas are
:mod:`symroof.models.backward` and :mod:`symroof.models.backward_dense`; what the remat
policies rerun follows from the blocks' layer graphs
(:meth:`~symroof.models.blocks.Blocks.layer_graphs`, :mod:`training_memory`). Every family
trains (dense switches, MoE layers with real routing, MLA in its naive form, a model mixing
them: DeepSeek); what is not covered yet is refused, naming it
(:func:`~symroof.models.training_graph.trainable`).

No gradient accumulation across microbatches (one batch per step); a tied embedding's two
gradients meet in ``bwd/embed``. ``attention="fused"`` (FlashAttention: the forward also
writes a logsumexp per query row and head; its backward recomputes scores) is symbolic
only; the NumPy twin runs the naive core.

>>> from symroof.symbols import B, S
>>> rows = train_ops(Transformer(), B, S)
>>> rows["bwd/mlp/down/dw"].flops == rows["fwd/mlp/down"].flops
True
>>> neox = train_ops(Transformer(norm="layer", gated=False, act="gelu", fused_qkv=True,
...                              parallel_residual=True), B, S)
>>> neox["bwd/mlp/gelu"].flops, neox["bwd/attn/residual"].flops   # act' 10 + 1; three summed
(11*B*F*L*S, 2*B*D*L*S)
"""

from __future__ import annotations

from typing import Any

from ..conventions import using
from ..cost import Cost, as_dimension
from ..workload import TrainStep
from . import backward as bw
from .training_graph import trainable
from .training_memory import REMAT_POLICIES, _policy, remat_recompute
from .transformer import Transformer

__all__ = ["train_ops", "REMAT_POLICIES", "MATMUL_KEYS", "ATTENTION_MATMUL_KEYS", "matmul_keys"]

#: The Llama family's forward weight-matmul rows, written out for the derivations (each
#: model's own: :func:`matmul_keys`, read off its blocks).
MATMUL_KEYS = ("attn/q_proj", "attn/k_proj", "attn/v_proj", "attn/o_proj", "mlp/gate",
               "mlp/up", "mlp/down", "lm_head")
#: The naive attention core's matmul rows, forward and backward.
ATTENTION_MATMUL_KEYS = ("fwd/attn/scores", "fwd/attn/av", "bwd/attn/av/dp", "bwd/attn/av/dv",
                         "bwd/attn/scores/dq", "bwd/attn/scores/dk")


def matmul_keys(model: Transformer) -> tuple[str, ...]:
    """The forward weight-matmul rows of ``model``, as its blocks say
    (:meth:`~symroof.models.blocks.Blocks.matmuls`: fused or not, gated or not, MLA's
    projections, the router and the experts): 6ND counts them, forward, dX and dW.

    >>> matmul_keys(Transformer()) == MATMUL_KEYS
    True
    >>> matmul_keys(Transformer(fused_qkv=True, fused_gate_up=True))[:3]
    ('attn/qkv_proj', 'attn/o_proj', 'mlp/gate_up')
    """
    return model.blocks.matmuls()


def _unsupported(model: Transformer, S: Any, remat: Any, attention: str) -> Transformer:
    """The model as its step runs it: what the training rows do not cover yet is named
    (:func:`~symroof.models.training_graph.trainable`), and a sequence longer than a
    model's learned positions is refused."""
    m = trainable(model, remat, attention)
    if m.positions == "learned" and (S - m.max_position).is_positive:
        raise ValueError(f"seq {S} exceeds {m.name}'s {m.max_position} learned positions")
    return m


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


def train_ops(model: Transformer, batch: Any, seq: Any = None, remat: str = "none", *,
              attention: str = "naive", grad_bytes: Any = None, moment_bytes: Any = 4,
              master_bytes: Any = 0, tokens_per_expert: Any = None,
              conventions: Any = None) -> dict[str, Cost]:
    """The rows of one training step (module docstring), as ``dict[str, Cost]``: ``batch``
    a :class:`~symroof.TrainStep`, or sequences with their ``seq``. MoE layers route
    ``tokens_per_expert`` ("balanced" by default, or counts: :meth:`Transformer.ops`);
    MLA trains in its naive form.

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
               tokens_per_expert: Any) -> dict[str, Cost]:
    remat = _policy(remat, attention)
    if isinstance(batch, TrainStep):  # the workload named once: sequences and seq
        if seq is not None:
            raise ValueError("a TrainStep already says its seq")
        batch, seq = batch.sequences, batch.seq
    if seq is None:
        raise ValueError("train_ops() needs a TrainStep (sr.TrainStep(sequences, seq)) or "
                         "batch and seq")
    B, S = as_dimension(batch, "batch"), as_dimension(seq, "seq")
    m, n = _unsupported(model, S, remat, attention), B * S
    gb = m.w_bytes if grad_bytes is None else grad_bytes
    fwd = _forward(m, B, S, attention, tokens_per_expert)
    outside = m.blocks.outside()  # the embedding's, the positions', the head's rows
    layer_keys = [k for k in fwd if k not in outside]
    recompute = remat_recompute(remat, attention, m)
    rows = {f"fwd/{key}": cost for key, cost in fwd.items()}
    rows["fwd/loss"] = bw.cross_entropy(n, m.V, x_bytes=m.act_bytes)
    rows |= m.blocks.backward_rows(B, S, attention, tokens_per_expert, gb, recompute={
        f"recompute/{key}": fwd[key] for key in (layer_keys if recompute is None else recompute)})
    rows["optimizer/adam"] = bw.adam(m.params, w_bytes=m.w_bytes, grad_bytes=gb,
                                     moment_bytes=moment_bytes, master_bytes=master_bytes)
    return rows
