"""The ops of one decoder step, each written with the counted primitives of an op scope.

Every function takes ``ops`` (an op scope from ``Counter.op`` or the uncounted ``PLAIN``),
declares the operands it reads and writes, and computes with ``ops.<primitive>`` so that
FLOPs come from the arrays it really touches. FLOPs per element are in docs/accounting.md;
the comments below give the count each line executes.
"""

from __future__ import annotations

import math

import numpy as np


def rmsnorm(ops, x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    """y = x / sqrt(mean(x^2) + eps) * w over the last axis: 4D + 2 FLOPs per row of D."""
    D = x.shape[-1]
    ops.read(x, "act")
    ops.read(w, "weight")
    ms = ops.div(ops.sum(ops.mul(x, x)), D)  # square D, sum D - 1, divide by D 1
    rms = ops.sqrt(ops.add(ms, eps))  # add eps 1, sqrt 1
    y = ops.mul(ops.div(x, rms), w)  # divide by rms D, multiply by the weight D
    ops.write(y, "act")
    return y


def linear(ops, x: np.ndarray, W: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """y = x @ W (+ b): 2 FLOPs per multiply-accumulate, 1 per output element for the bias."""
    ops.read(x, "act")
    ops.read(W, "weight")
    # one 2-D GEMM over all B*T rows, not B batched T-row ones (3x faster for small T)
    y = ops.matmul(x.reshape(-1, x.shape[-1]), W).reshape(*x.shape[:-1], W.shape[-1])
    if b is not None:
        ops.read(b, "weight")
        y = ops.add(y, b)
    ops.write(y, "act")
    return y


def residual(ops, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x + y: one add per element; reads two tensors, writes one."""
    ops.read(x, "act")
    ops.read(y, "act")
    out = ops.add(x, y)
    ops.write(out, "act")
    return out


def swiglu(ops, g: np.ndarray, u: np.ndarray) -> np.ndarray:
    """silu(g) * u with silu(g) = g / (1 + exp(-g)): 5 FLOPs per element."""
    ops.read(g, "act")
    ops.read(u, "act")
    a = ops.mul(ops.div(g, ops.add(ops.exp(ops.neg(g)), 1.0)), u)  # neg, exp, add, div, mul
    ops.write(a, "act")
    return a


def rope_tables(d_h: int, theta: float, c: int, T: int, dtype) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin of the rotation angles for positions c .. c+T-1, each (T, d_h/2).

    A constant buffer, built uncounted (a kernel reads it from memory; the rope op counts
    the read).
    """
    inv_freq = theta ** (-np.arange(0, d_h, 2) / d_h)  # (d_h/2,)
    angles = np.outer(np.arange(c, c + T), inv_freq)  # (T, d_h/2)
    return np.cos(angles).astype(dtype), np.sin(angles).astype(dtype)


def _rotate(ops, x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """Rotate the pairs (x1, x2) = (first half, second half) of each head: 3 FLOPs/element."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]  # (B, T, n, d_h/2) each
    cos, sin = cos[:, None, :], sin[:, None, :]  # (T, 1, d_h/2)
    out1 = ops.sub(ops.mul(x1, cos), ops.mul(x2, sin))  # 2 mul + 1 sub per pair
    out2 = ops.add(ops.mul(x2, cos), ops.mul(x1, sin))  # 2 mul + 1 add per pair
    return np.concatenate([out1, out2], axis=-1)  # (B, T, n, d_h)


def rope(ops, q: np.ndarray, k: np.ndarray, cos: np.ndarray, sin: np.ndarray):
    """RoPE on q (B, T, H, d_h) and k (B, T, G, d_h); reads q, k, cos, sin; writes q, k."""
    for x in (q, k, cos, sin):
        ops.read(x, "act")
    q, k = _rotate(ops, q, cos, sin), _rotate(ops, k, cos, sin)
    ops.write(q, "act")
    ops.write(k, "act")
    return q, k


def kv_write(ops, cache_k: np.ndarray, cache_v: np.ndarray, c: int, k: np.ndarray,
             v: np.ndarray) -> None:
    """Store k, v (B, T, G, d_h) at positions c .. c+T-1 of one layer's cache: 0 FLOPs."""
    S = c + k.shape[1]
    ops.read(k, "act")
    ops.read(v, "act")
    cache_k[:, c:S] = k  # (B, T, G, d_h)
    cache_v[:, c:S] = v  # (B, T, G, d_h)
    ops.write(cache_k[:, c:S], "kv")
    ops.write(cache_v[:, c:S], "kv")


def softmax(ops, scores: np.ndarray, keep: np.ndarray, d_h: int) -> np.ndarray:
    """Masked softmax over the last axis (S) of scale * scores: 6S - 2 FLOPs per row.

    ``keep`` (T, S) marks the allowed (query, key) pairs; useful FLOPs count only those,
    6n - 2 per row of n allowed entries. Masked entries get exactly zero weight.
    """
    ops.read(scores, "act")
    z = ops.mul(scores, 1.0 / math.sqrt(d_h), valid=keep)  # scale: S
    z = ops.where(keep, z, -np.inf)  # mask: selection, 0
    m = ops.max(z, valid=keep)  # S - 1
    e = ops.exp(ops.sub(z, m, valid=keep), valid=keep)  # subtract S, exp S
    p = ops.div(e, ops.sum(e, valid=keep), valid=keep)  # sum S - 1, divide S
    ops.write(p, "act")
    return p


def attention_core(scope, q: np.ndarray, K: np.ndarray, V: np.ndarray,
                   keep: np.ndarray) -> np.ndarray:
    """Naive causal GQA attention: scores for all T x S pairs, mask, softmax, times V.

    q (B, T, H, d_h); K, V the cache slices (B, S, G, d_h); query head h reads KV head
    h // (H/G). Returns (B, T, H*d_h).
    """
    B, T, H, d_h = q.shape
    G = K.shape[2]
    with scope("attn/scores") as ops:
        ops.read(q, "act")
        ops.read(K, "kv")
        q = q.reshape(B, T, G, H // G, d_h)  # (B, T, G, H/G, d_h): head h = g*(H/G) + r
        scores = ops.einsum("btgrd,bsgd->bgrts", q, K, valid=keep, valid_dims="ts")
        ops.write(scores, "act")  # (B, G, H/G, T, S)
    with scope("attn/softmax") as ops:
        probs = softmax(ops, scores, keep, d_h)  # (B, G, H/G, T, S)
    with scope("attn/av") as ops:
        ops.read(probs, "act")
        ops.read(V, "kv")
        o = ops.einsum("bgrts,bsgd->btgrd", probs, V, valid=keep, valid_dims="ts")
        o = o.reshape(B, T, H * d_h)  # (B, T, H*d_h)
        ops.write(o, "act")
    return o
