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

Every dense family trains: its block switches (norm, activation, gating, fused projections,
biases, positions, partial RoPE, parallel residual, post norms, embedding scale, softcaps,
q/k norms, sliding windows) each add or change the rows of one function below
(:mod:`symroof.models.backward_dense` has their ops); MoE layers (:mod:`backward_moe`:
router, routing, experts, shared experts) and MLA (:mod:`backward_mla`, the naive form)
bring their blocks' rows, and a model mixes them (DeepSeek: MLA, dense first layers, then
MoE). What is not covered yet is refused, naming it
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
from . import attention_rows as ar
from . import backward as bw
from . import backward_dense as bd
from . import backward_mla as bmla
from . import backward_moe as bmoe
from . import rows as rw
from .training_graph import trainable
from .training_memory import REMAT_POLICIES, _policy, remat_recompute
from .transformer import Transformer

__all__ = ["train_ops", "REMAT_POLICIES", "MATMUL_KEYS", "ATTENTION_MATMUL_KEYS", "matmul_keys"]

#: Forward weight-matmul rows: 6ND counts them (forward, dX, dW).
MATMUL_KEYS = ("attn/q_proj", "attn/k_proj", "attn/v_proj", "attn/o_proj", "mlp/gate",
               "mlp/up", "mlp/down", "lm_head")
#: The naive attention core's matmul rows, forward and backward.
ATTENTION_MATMUL_KEYS = ("fwd/attn/scores", "fwd/attn/av", "bwd/attn/av/dp", "bwd/attn/av/dv",
                         "bwd/attn/scores/dq", "bwd/attn/scores/dk")


def matmul_keys(model: Transformer) -> tuple[str, ...]:
    """The forward weight-matmul rows of ``model`` (fused or not, gated or not): 6ND counts
    them, forward, dX and dW (:data:`MATMUL_KEYS` is the Llama family's).

    >>> matmul_keys(Transformer()) == MATMUL_KEYS
    True
    >>> matmul_keys(Transformer(fused_qkv=True, fused_gate_up=True))[:3]
    ('attn/qkv_proj', 'attn/o_proj', 'mlp/gate_up')
    """
    attn = ("attn/qkv_proj",) if model.fused_qkv else ("attn/q_proj", "attn/k_proj",
                                                       "attn/v_proj")
    mlp = ("mlp/up",) if not model.gated else ("mlp/gate_up",) if model.fused_gate_up else \
        ("mlp/gate", "mlp/up")
    return (*attn, "attn/o_proj", *mlp, "mlp/down", "lm_head")


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


class _Widths:
    """A layer's sizes and the backward's row builders at the step's widths."""

    def __init__(self, m: Transformer, n: Any, gb: Any):
        self.m, self.n, self.gb = m, n, gb

    def dx(self, d_in: Any, d_out: Any) -> Cost:
        return bw.linear_dx(self.n, d_in, d_out, x_bytes=self.m.act_bytes,
                            w_bytes=self.m.w_bytes)

    def dw(self, d_in: Any, d_out: Any, bias: bool = False) -> Cost:
        return bw.linear_dw(self.n, d_in, d_out, x_bytes=self.m.act_bytes, grad_bytes=self.gb,
                            bias=bias)

    def norm(self, kind: str, rows: Any, d: Any) -> Cost:
        return bd.norm_backward(kind, rows, d, x_bytes=self.m.act_bytes,
                                w_bytes=self.m.w_bytes, grad_bytes=self.gb)

    def sum(self, k: int) -> Cost:
        return bw.grad_sum(self.n * self.m.D, k, x_bytes=self.m.act_bytes)


def _mlp_backward(m: Transformer, w: _Widths) -> dict[str, Cost]:
    """One layer's MLP backward rows, from the residual down to the MLP norm."""
    D, F, n, bias = m.D, m.F, w.n, m.mlp_bias
    rows = {"mlp/post_norm": w.norm(m.norm, n, D)} if m.post_norms else {}
    rows |= {"mlp/down/dx": w.dx(F, D), "mlp/down/dw": w.dw(F, D, bias),
             f"mlp/{rw.act_key(m.act, m.gated)}": bd.activation_backward(
                 m.act, gated=m.gated, n=n * F, x_bytes=m.act_bytes)}
    if not m.gated:
        rows |= {"mlp/up/dx": w.dx(D, F), "mlp/up/dw": w.dw(D, F, bias)}
    elif m.fused_gate_up:
        rows |= {"mlp/gate_up/dx": w.dx(D, 2 * F), "mlp/gate_up/dw": w.dw(D, 2 * F, bias)}
    else:
        rows |= {"mlp/up/dx": w.dx(D, F), "mlp/up/dw": w.dw(D, F, bias),
                 "mlp/gate/dx": w.dx(D, F), "mlp/gate/dw": w.dw(D, F, bias),
                 "mlp/gate_up_sum": w.sum(2)}
    rows["mlp_norm"] = w.norm(m.norm, n, D)
    if not m.parallel_residual:  # (parallel: the MLP norm's gradient meets x's below)
        rows["mlp/residual"] = w.sum(2)
    return rows


def _attention_out_backward(m: Transformer, w: _Widths) -> dict[str, Cost]:
    """The attention block's rows after its core: the post norm and o_proj."""
    rows = {"attn/post_norm": w.norm(m.norm, w.n, m.D)} if m.post_norms else {}
    return rows | {"attn/o_proj/dx": w.dx(m.H * m.d_h, m.D),
                   "attn/o_proj/dw": w.dw(m.H * m.d_h, m.D, m.o_bias)}


def _core_backward(m: Transformer, B: Any, S: Any, attention: str) -> dict[str, Cost]:
    """The attention core's backward rows of all L layers, windowed and global ones apart
    (a window changes the allowed pairs; the naive core still executes all S^2)."""
    H, G, d_h, ab, cap = m.H, m.G, m.d_h, m.act_bytes, m.attn_softcap is not None
    out: dict[str, Cost] = {}
    for layers, window in ((m.L - m.local_layers, None), (m.local_layers, m.window)):
        if layers == 0:
            continue
        pairs = ar.pairs(S, 0, window)[1]  # causal (in the window), or all S^2 (conventions)
        if attention == "naive":
            core = bw.attention_matmul_backward(B, S, S, H, G, d_h, pairs=pairs, x_bytes=ab)
            rows = {"attn/av/dp": core, "attn/av/dv": core,
                    "attn/softmax": bw.softmax_backward(B * H * S, S, x_bytes=ab,
                                                        useful_elements=B * H * pairs,
                                                        softcap=cap),
                    "attn/scores/dq": core, "attn/scores/dk": core}
        else:
            rows = {"attn/core": bw.flash_attention_backward(B, S, S, H, G, d_h, pairs=pairs,
                                                             x_bytes=ab, softcap=cap)}
        for key, cost in rows.items():
            out[key] = out.get(key, Cost()) + layers * cost
    return out


def _attention_in_backward(m: Transformer, w: _Widths, S: Any) -> dict[str, Cost]:
    """The attention block's rows before its core: RoPE, the q/k norms, the projections,
    the norm and the residual stream's sum."""
    D, H, G, d_h, n = m.D, m.H, m.G, m.d_h, w.n
    rows = {}
    if m.positions == "rope":
        rows["attn/rope"] = rw.rope(n, H + G, m.rotary, S, ab=m.act_bytes)
    if m.qk_norm:
        rows |= {"attn/q_norm": w.norm("rms", n * H, d_h), "attn/k_norm": w.norm("rms", n * G,
                                                                                   d_h)}
    if m.fused_qkv:
        rows |= {"attn/qkv_proj/dx": w.dx(D, (H + 2 * G) * d_h),
                 "attn/qkv_proj/dw": w.dw(D, (H + 2 * G) * d_h, m.qkv_bias)}
    else:
        for name, width in (("v", G), ("k", G), ("q", H)):
            rows[f"attn/{name}_proj/dx"] = w.dx(D, width * d_h)
            rows[f"attn/{name}_proj/dw"] = w.dw(D, width * d_h, m.qkv_bias)
        rows["attn/qkv_sum"] = w.sum(3)
    return rows | {"attn_norm": w.norm(m.norm, n, D),
                   "attn/residual": w.sum(3 if m.parallel_residual else 2)}


def _head_backward(m: Transformer, B: Any, S: Any, gb: Any) -> dict[str, Cost]:
    """The loss, the final softcap, lm_head and the final norm, backwards."""
    n, ab = B * S, m.act_bytes
    rows = {"bwd/loss": bw.cross_entropy_backward(n, m.V, x_bytes=ab)}
    if m.final_softcap is not None:
        rows["bwd/logit_softcap"] = bd.softcap_backward(n * m.V, x_bytes=ab)
    return rows | {
        "bwd/lm_head/dx": bw.linear_dx(n, m.D, m.V, x_bytes=ab, w_bytes=m.w_bytes),
        "bwd/lm_head/dw": bw.linear_dw(n, m.D, m.V, x_bytes=ab, grad_bytes=gb),
        "bwd/final_norm": bd.norm_backward(m.norm, n, m.D, x_bytes=ab, w_bytes=m.w_bytes,
                                           grad_bytes=gb),
    }


def _embedding_backward(m: Transformer, B: Any, S: Any, gb: Any) -> dict[str, Cost]:
    """Learned positions' gradient (GPT-2), then the embedding's scatter-add."""
    ab, n = m.act_bytes, B * S
    rows = {"bwd/pos_embed": bd.pos_embed_backward(B, S, m.D, x_bytes=ab, grad_bytes=gb)} \
        if m.positions == "learned" else {}
    return rows | {"bwd/embed": bw.embedding_backward(n, m.D, m.V, x_bytes=ab, grad_bytes=gb,
                                                      accumulate=m.tied,
                                                      scaled=m.embed_scale)}


def _layers_backward(m: Transformer, B: Any, S: Any, attention: str, w: _Widths,
                     tokens_per_expert: Any) -> dict[str, Cost]:
    """The backward rows of all L layers, keys without ``bwd/``, block by block: the MLP
    (dense rows hold the dense layers, the MLP norm's and the residual's all L; MoE rows
    the MoE layers), then attention (GQA: its core's rows hold the windowed and the global
    layers; MLA: its naive form)."""
    dense = m.L if m.moe is None else m.dense_layers
    rows = {key: layers * cost for key, cost in _mlp_backward(m, w).items()
            if (layers := m.L if key in ("mlp_norm", "mlp/residual") else dense) != 0}
    if m.moe is not None:
        rows |= bmoe.moe_backward(m, w.n, m.moe_layers, tokens_per_expert, w.gb)
    if m.mla is not None:
        return rows | {key: m.L * cost for key, cost in bmla.mla_backward(m, B, S, w.gb).items()}
    rows |= {key: m.L * cost for key, cost in _attention_out_backward(m, w).items()}
    rows |= _core_backward(m, B, S, attention)
    return rows | {key: m.L * cost for key, cost in _attention_in_backward(m, w, S).items()}


_OUTSIDE = ("embed", "pos_embed", "final_norm", "lm_head", "logit_softcap")


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
    layer_keys = [k for k in fwd if k not in _OUTSIDE]
    recompute = remat_recompute(remat, attention, m)
    rows = {f"fwd/{key}": cost for key, cost in fwd.items()}
    rows["fwd/loss"] = bw.cross_entropy(n, m.V, x_bytes=m.act_bytes)
    rows |= _head_backward(m, B, S, gb)
    rows |= {f"recompute/{key}": fwd[key]
             for key in (layer_keys if recompute is None else recompute)}
    layers = _layers_backward(m, B, S, attention, _Widths(m, n, gb), tokens_per_expert)
    rows |= {f"bwd/{key}": cost for key, cost in layers.items()}
    rows |= _embedding_backward(m, B, S, gb)
    rows["optimizer/adam"] = bw.adam(m.params, w_bytes=m.w_bytes, grad_bytes=gb,
                                     moment_bytes=moment_bytes, master_bytes=master_bytes)
    return rows
