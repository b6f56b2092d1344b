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
    x1, x2 = x[..., :half], x[..., half:]  # (B, T, n, r/2) each
    cos, sin = cos[:, None, :], sin[:, None, :]  # (T, 1, r/2)
    out1 = ops.sub(ops.mul(x1, cos), ops.mul(x2, sin))  # 2 mul + 1 sub per pair
    out2 = ops.add(ops.mul(x2, cos), ops.mul(x1, sin))  # 2 mul + 1 add per pair
    return np.concatenate([out1, out2], axis=-1)  # (B, T, n, r)


def rope(ops, q: np.ndarray, k: np.ndarray, cos: np.ndarray, sin: np.ndarray):
    """RoPE on the first r = 2 cos.shape[-1] dims of each head of q (B, T, H, d) and
    k (B, T, G, d) (GPT-NeoX rotates a part, Llama all); reads the rotated parts and the
    cos and sin tables, writes the rotated parts; the rest of each head passes through."""
    r = 2 * cos.shape[-1]
    parts = [q[..., :r], k[..., :r]]
    for x in (*parts, cos, sin):
        ops.read(x, "act")
    out = [_rotate(ops, x, cos, sin) for x in parts]
    for x in out:
        ops.write(x, "act")
    if r == q.shape[-1]:
        return out[0], out[1]
    return (np.concatenate([out[0], q[..., r:]], axis=-1),  # (B, T, H, d)
            np.concatenate([out[1], k[..., r:]], axis=-1))  # (B, T, G, d)


def kv_write(ops, cache_k: np.ndarray, cache_v: np.ndarray, c: int, k: np.ndarray,
             v: np.ndarray, read: bool = True) -> None:
    """Store k, v (B, T, G, d_h) at positions c .. c+T-1 of one layer's cache: 0 FLOPs
    (``read=False``: the caller declared what it read)."""
    S = c + k.shape[1]
    if read:
        ops.read(k, "act")
        ops.read(v, "act")
    cache_k[:, c:S] = k  # (B, T, G, d_h)
    cache_v[:, c:S] = v  # (B, T, G, d_h)
    ops.write(cache_k[:, c:S], "kv")
    ops.write(cache_v[:, c:S], "kv")


def softcap(ops, x: np.ndarray, cap: float, valid: np.ndarray | None = None) -> np.ndarray:
    """cap * tanh(x / cap): divide, tanh, multiply, 3 FLOPs per element (Gemma-2)."""
    return ops.mul(ops.tanh(ops.div(x, cap, valid=valid), valid=valid), cap, valid=valid)


def softmax(ops, scores: np.ndarray, keep: np.ndarray, d_h: int, scale: float | None = None,
            cap: float | None = None) -> np.ndarray:
    """Masked softmax over the last axis (S) of scale * scores: 6S - 2 FLOPs per row
    (scale 1/sqrt(d_h) unless given; a softcap adds 3 per score).

    ``keep`` (T, S) marks the allowed (query, key) pairs; useful FLOPs count only those,
    6n - 2 per row of n allowed entries. Masked entries get exactly zero weight.
    """
    ops.read(scores, "act")
    scale = 1.0 / math.sqrt(d_h) if scale is None else scale
    z = ops.mul(scores, scale, valid=keep)  # scale: S
    if cap is not None:
        z = softcap(ops, z, cap, valid=keep)  # 3 S
    z = ops.where(keep, z, -np.inf)  # mask: selection, 0
    m = ops.max(z, valid=keep)  # S - 1
    e = ops.exp(ops.sub(z, m, valid=keep), valid=keep)  # subtract S, exp S
    p = ops.div(e, ops.sum(e, valid=keep), valid=keep)  # sum S - 1, divide S
    ops.write(p, "act")
    return p


def attention_core(scope, q: np.ndarray, K: np.ndarray, V: np.ndarray, keep: np.ndarray,
                   scale: float | None = None, cap: float | None = None) -> np.ndarray:
    """Naive causal GQA attention: scores for all T x S pairs, mask, softmax, times V.

    q (B, T, H, d_k); K (B, S, G, d_k), V (B, S, G, d_v) the cache slices the step reads;
    query head h reads KV head h // (H/G). Returns (B, T, H*d_v).
    """
    B, T, H, d_k = q.shape
    G = K.shape[2]
    with scope("attn/scores") as ops:
        ops.read(q, "act")
        ops.read(K, "kv")
        q = q.reshape(B, T, G, H // G, d_k)  # (B, T, G, H/G, d_k): head h = g*(H/G) + r
        scores = ops.einsum("btgrd,bsgd->bgrts", q, K, valid=keep, valid_dims="ts")
        ops.write(scores, "act")  # (B, G, H/G, T, S)
    with scope("attn/softmax") as ops:
        probs = softmax(ops, scores, keep, d_k, scale, cap)  # (B, G, H/G, T, S)
    with scope("attn/av") as ops:
        ops.read(probs, "act")
        ops.read(V, "kv")
        o = ops.einsum("bgrts,bsgd->btgrd", probs, V, valid=keep, valid_dims="ts")
        o = o.reshape(B, T, -1)  # (B, T, H*d_v)
        ops.write(o, "act")
    return o


def layernorm(ops, x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    """(x - mean) / sqrt(var + eps) * w + b over the last axis: 7D + 2 FLOPs per row."""
    D = x.shape[-1]
    for a, kind in ((x, "act"), (w, "weight"), (b, "weight")):
        ops.read(a, kind)
    mu = ops.div(ops.sum(x), D)  # sum D - 1, divide 1
    xc = ops.sub(x, mu)  # D
    var = ops.div(ops.sum(ops.mul(xc, xc)), D)  # square D, sum D - 1, divide 1
    std = ops.sqrt(ops.add(var, eps))  # add eps 1, sqrt 1
    y = ops.add(ops.mul(ops.div(xc, std), w), b)  # divide D, weight D, bias D
    ops.write(y, "act")
    return y


def norm(ops, p: dict, name: str, x: np.ndarray, eps: float) -> np.ndarray:
    """RMSNorm, or LayerNorm where ``p`` holds the bias ``name + '_b'``."""
    if name + "_b" in p:
        return layernorm(ops, x, p[name], p[name + "_b"], eps)
    return rmsnorm(ops, x, p[name], eps)


def act_fn(ops, x: np.ndarray, act: str) -> np.ndarray:
    """silu x/(1 + exp(-x)) (4), gelu_tanh (9) or gelu with erf (5) FLOPs per element."""
    if act == "silu":
        return ops.div(x, ops.add(ops.exp(ops.neg(x)), 1.0))  # neg, exp, add, div
    if act == "gelu":
        t = ops.add(ops.erf(ops.mul(x, 1.0 / math.sqrt(2.0))), 1.0)  # mul, erf, add
        return ops.mul(ops.mul(x, t), 0.5)  # mul, mul
    cube = ops.mul(ops.mul(x, x), x)  # 2 mul
    inner = ops.add(x, ops.mul(cube, 0.044715))  # mul, add
    t = ops.add(ops.tanh(ops.mul(inner, math.sqrt(2.0 / math.pi))), 1.0)  # mul, tanh, add
    return ops.mul(ops.mul(x, t), 0.5)  # mul, mul


def activation(ops, act: str, g: np.ndarray, u: np.ndarray | None = None) -> np.ndarray:
    """act(g) * u (gated: one more multiply) or act(g); reads its inputs, writes one."""
    for x in (g,) if u is None else (g, u):
        ops.read(x, "act")
    a = act_fn(ops, g, act)
    if u is not None:
        a = ops.mul(a, u)
    ops.write(a, "act")
    return a
