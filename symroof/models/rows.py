"""Small row builders shared by every family: norms, linear layers, activations, the
embedding and its learned positions, RoPE, softcapping. Each returns one :class:`Cost`
following docs/accounting.md (FLOPs per element written where they are counted), with the
activation bytes it writes as ``act_store_bytes`` (the rest of ``act_bytes`` it reads).

>>> from symroof.symbols import B, D, F
>>> norm("layer", B, D, ab=2, wb=2).flops            # LayerNorm: 7D + 2 per row
B*(7*D + 2)
>>> activation("gelu_tanh", gated=True, n=B*F, ab=2).flops   # GeGLU: 9 + 1 per element
10*B*F
"""

from __future__ import annotations

from typing import Any

from .. import ops as op
from ..conventions import current
from ..cost import Cost

__all__ = ["NORMS", "ACTIVATIONS", "norm", "linear", "activation", "act_key", "softcap",
           "embed", "pos_embed", "rope", "mlp_rows", "mac_flops", "residual", "lm_head",
           "lm_head_flops"]

NORMS = ("rms", "layer")
#: FLOPs per element of each activation, as the NumPy twin executes it:
#: silu g/(1 + exp(-g)): neg, exp, add, div;
#: gelu_tanh 0.5 x (1 + tanh(c (x + 0.044715 x^3))): 2 mul (x^3), mul, add, mul, tanh, add,
#: mul, mul; gelu (erf) 0.5 x (1 + erf(x / sqrt 2)): mul, erf, add, mul, mul.
ACTIVATIONS = {"silu": 4, "gelu_tanh": 9, "gelu": 5}


def mac_flops(macs: Any) -> Any:
    """FLOPs of ``macs`` multiply-adds under the conventions in force (``flops_per_mac``).

    >>> from symroof.conventions import profile, using
    >>> from symroof.symbols import B, D
    >>> with using(profile("symroof").replace(flops_per_mac=1)):
    ...     mac_flops(B * D)
    B*D
    """
    return current().flops_per_mac * macs


def transcendental(n: Any) -> Any:
    """FLOPs to leave out for ``n`` exp, tanh, erf or sqrt evaluations: none when the
    conventions count them as FLOPs (symroof's), all n when they keep them apart (XLA's).

    >>> from symroof.conventions import profile, using
    >>> with using(profile("symroof").replace(transcendentals="apart")):
    ...     transcendental(7)
    7
    """
    return 0 if current().transcendentals == "flops" else n


def _per_mac(cost: Cost) -> Cost:
    """A contraction's Cost (counted at 2 FLOPs per multiply-add) under ``flops_per_mac``."""
    macs, useful = cost.flops / 2, cost.useful_flops / 2
    return Cost(flops=mac_flops(macs), useful_flops=mac_flops(useful),
                weight_bytes=cost.weight_bytes, act_bytes=cost.act_bytes,
                kv_bytes=cost.kv_bytes, act_store_bytes=cost.act_store_bytes,
                kv_store_bytes=cost.kv_store_bytes)


def norm(kind: str, rows: Any, d: Any, *, ab: Any, wb: Any) -> Cost:
    """RMSNorm (4d + 2 per row, weight d) or LayerNorm (weight and bias, 2d).

    LayerNorm per row: mean (d - 1 + 1), centre (d), variance (d + d - 1 + 1), + eps, sqrt
    (2), divide (d), weight (d), bias (d): 7d + 2. Reads x and the parameters, writes y.
    The conventions' ``norm_flops`` (a count per element) and ``norm_weights`` apply.

    >>> from symroof.symbols import B, D
    >>> norm("layer", B, D, ab=2, wb=1).weight_bytes
    2*D
    """
    cv = current()
    base = op.rmsnorm(rows, d, x_bytes=ab, w_bytes=wb) if kind == "rms" else \
        Cost(flops=rows * (7 * d + 2), weight_bytes=2 * d * wb, act_bytes=2 * rows * d * ab,
             act_store_bytes=rows * d * ab)
    per = cv.norm_flops
    flops = base.flops - transcendental(rows) if per == "exact" else per * rows * d  # sqrt
    weights = base.weight_bytes if cv.norm_weights == "read" else 0
    return Cost(flops=flops, weight_bytes=weights, act_bytes=base.act_bytes,
                act_store_bytes=base.act_store_bytes)


def linear(n: Any, d_in: Any, d_out: Any, *, ab: Any, wb: Any, bias: bool = False) -> Cost:
    """x[n, d_in] @ W[d_in, d_out] (+ b): 2 n d_in d_out (+ n d_out) FLOPs.

    >>> from symroof.symbols import B, D
    >>> linear(B, D, 3*D, ab=2, wb=2, bias=True).flops
    6*B*D**2 + 3*B*D
    """
    mm = _per_mac(op.matmul(n, d_in, d_out, x_bytes=ab, w_bytes=wb, out_bytes=ab))
    return mm + Cost(flops=n * d_out, weight_bytes=d_out * wb) if bias else mm


def act_key(act: str, gated: bool) -> str:
    """The row name of an MLP's activation: swiglu, geglu, or the plain function's.

    >>> act_key("silu", True), act_key("gelu_tanh", True), act_key("gelu", False)
    ('swiglu', 'geglu', 'gelu')
    """
    if gated:
        return "swiglu" if act == "silu" else "geglu"
    return "silu" if act == "silu" else "gelu"


def activation(act: str, *, gated: bool, n: Any, ab: Any) -> Cost:
    """The activation over n elements; gated: act(g) * u (one more multiply), reads g and
    u, writes one; ungated: reads and writes n.

    >>> from symroof.symbols import B, F
    >>> activation("silu", gated=True, n=B*F, ab=2) == op.swiglu(B*F)
    True
    """
    counted = current().act_flops
    if counted == "exact":  # one exp, tanh or erf an element
        flops = (ACTIVATIONS[act] + (1 if gated else 0)) * n - transcendental(n)
    else:
        flops = counted * n
    return Cost(flops=flops, act_bytes=(3 if gated else 2) * n * ab, act_store_bytes=n * ab)


def residual(n: Any, *, ab: Any) -> Cost:
    """A residual add over n elements: n FLOPs; reads ``residual_reads`` operands (2: the
    stream and the branch), writes one.

    >>> from symroof.symbols import N
    >>> residual(N, ab=2) == op.add(N)
    True
    """
    return Cost(flops=n, act_bytes=(current().residual_reads + 1) * n * ab,
                act_store_bytes=n * ab)


def lm_head(rows: Any, D: Any, V: Any, *, ab: Any, wb: Any) -> Cost:
    """x[rows, D] @ W[D, V]: the logits, under ``lm_head_flops_per_mac`` and ``lm_head_act``
    (LLM-Viewer's one row of D in and one of V out, whatever the batch).

    >>> from symroof.symbols import B, D, V
    >>> lm_head(B, D, V, ab=2, wb=2) == op.matmul(B, D, V)
    True
    """
    n = rows if current().lm_head_act == "positions" else 1  # rows of x in, of logits out
    return Cost(flops=lm_head_flops(rows * D * V), weight_bytes=D * V * wb,
                act_bytes=n * (D + V) * ab, act_store_bytes=n * V * ab)


def lm_head_flops(macs: Any) -> Any:
    """FLOPs of ``macs`` multiply-adds of the lm_head (its forward, its gradients, the
    whole-model cost) under ``lm_head_flops_per_mac`` ("same": ``flops_per_mac``).

    >>> from symroof.conventions import profile, using
    >>> with using("llm-viewer"):
    ...     lm_head_flops(10)
    10
    """
    per = current().lm_head_flops_per_mac
    return mac_flops(macs) if per == "same" else per * macs


def softcap(n: Any, *, ab: Any) -> Cost:
    """cap * tanh(x / cap) over n elements (Gemma-2's logit softcapping): divide, tanh,
    multiply, 3 FLOPs each; reads and writes n.

    >>> from symroof.symbols import B, V
    >>> softcap(B*V, ab=2).act_bytes
    4*B*V
    """
    return Cost(flops=3 * n - transcendental(n), act_bytes=2 * n * ab,  # one tanh each
                act_store_bytes=n * ab)


def embed(n: Any, D: Any, *, ab: Any, wb: Any, scaled: bool = False) -> Cost:
    """Gather n rows of the embedding (weight bytes), write them; Gemma multiplies them by
    sqrt(D): n.D FLOPs.

    >>> from symroof.symbols import B, D
    >>> embed(B, D, ab=2, wb=2, scaled=True).flops
    B*D
    """
    return Cost(flops=n * D if scaled else 0, weight_bytes=n * D * wb, act_bytes=n * D * ab,
                act_store_bytes=n * D * ab)  # every activation byte is the rows written


def pos_embed(n: Any, T: Any, D: Any, *, ab: Any, wb: Any) -> Cost:
    """GPT-2's learned positions: add the T rows of positions c .. c+T-1 (read once, shared
    by the batch) to the n token vectors: n.D adds; reads x, writes x + p.

    >>> from symroof.symbols import B, T, D
    >>> pos_embed(B*T, T, D, ab=2, wb=2).weight_bytes
    2*D*T
    """
    return Cost(flops=n * D, weight_bytes=T * D * wb, act_bytes=2 * n * D * ab,
                act_store_bytes=n * D * ab)


def rope(n: Any, heads: Any, r: Any, T: Any, *, ab: Any) -> Cost:
    """Rotate the first r dims of ``heads`` head vectors per token (q and k heads together):
    3 FLOPs per rotated element; reads and writes the rotated part, plus the cos and sin
    tables (T x r/2 each).

    >>> from symroof.symbols import B, T, H, G, d_h
    >>> rope(B*T, H + G, d_h, T, ab=2) == op.rope(B*T*(H + G)*d_h, table=T*d_h)
    True
    """
    return op.rope(n * heads * r, table=T * r, x_bytes=ab)


def mlp_rows(mlp: Any, n: Any, s: Any) -> dict[str, Cost]:
    """One dense MLP layer's rows (block ``mlp``, stream ``s``) for ``n`` tokens: gate and
    up (or one fused gate_up, or only up when ungated), the activation, down; biases where
    ``mlp.bias``.

    >>> from symroof.models.blocks import DenseMLP, Stream
    >>> list(mlp_rows(DenseMLP(gated=False, act="gelu"), 1, Stream(8, 2, 2, 2)))
    ['mlp/up', 'mlp/gelu', 'mlp/down']
    """
    D, F, ab, wb, bias = s.D, mlp.F, s.ab, s.wb, mlp.bias
    width = F if current().mlp_act_width == "F" else D
    if not mlp.gated:
        rows = {"mlp/up": linear(n, D, F, ab=ab, wb=wb, bias=bias)}
    elif mlp.fused:
        rows = {"mlp/gate_up": linear(n, D, 2 * F, ab=ab, wb=wb, bias=bias)}
    else:
        rows = {"mlp/gate": linear(n, D, F, ab=ab, wb=wb, bias=bias),
                "mlp/up": linear(n, D, F, ab=ab, wb=wb, bias=bias)}
    rows[f"mlp/{act_key(mlp.act, mlp.gated)}"] = activation(mlp.act, gated=mlp.gated,
                                                            n=n * width, ab=ab)
    rows["mlp/down"] = linear(n, F, D, ab=ab, wb=wb, bias=bias)
    return rows
