"""Hand-written backward of every op of the decoder, and the loss, with counted primitives.

Each function takes an op scope ``ops`` (``Counter.op`` or ``PLAIN``), declares what it
reads and writes, and computes with ``ops.<primitive>``; the comments give the count each
line executes (docs/accounting.md, "Backward"). Gradients of parameters are written as
kind ``"grad"``, everything else as ``"act"``. Where a tensor fed several ops, each
backward returns its own contribution and ``grad_sum`` adds them.
"""

from __future__ import annotations

import math

import numpy as np


def linear_dx(ops, dy: np.ndarray, W: np.ndarray) -> np.ndarray:
    """dx = dy @ W^T: 2 FLOPs per multiply-accumulate; reads dy and W, writes dx."""
    ops.read(dy, "act")
    ops.read(W, "weight")
    dx = ops.matmul(dy.reshape(-1, dy.shape[-1]), W.T).reshape(*dy.shape[:-1], W.shape[0])
    ops.write(dx, "act")
    return dx


def linear_dw(ops, x: np.ndarray, dy: np.ndarray, bias: bool = False):
    """dW = x^T @ dy (and db = sum of dy's rows: n - 1 adds per column); reads x and dy."""
    ops.read(x, "act")
    ops.read(dy, "act")
    x2, dy2 = x.reshape(-1, x.shape[-1]), dy.reshape(-1, dy.shape[-1])  # (n, d_in), (n, d_out)
    dW = ops.matmul(x2.T, dy2)  # (d_in, d_out)
    ops.write(dW, "grad")
    if not bias:
        return dW
    db = ops.sum(dy2, axis=0).reshape(-1)  # (d_out,)
    ops.write(db, "grad")
    return dW, db


def grad_sum(ops, *grads: np.ndarray) -> np.ndarray:
    """The sum of k gradient contributions: k - 1 adds per element; reads k, writes one."""
    for g in grads:
        ops.read(g, "act")
    out = grads[0]
    for g in grads[1:]:
        out = ops.add(out, g)
    ops.write(out, "act")
    return out


def rmsnorm_backward(ops, x: np.ndarray, w: np.ndarray, dy: np.ndarray, eps: float):
    """dx = (g - xhat * mean(g * xhat)) / r with g = dy * w; dw = sum over rows of dy * xhat.

    9D + 2 FLOPs per row, plus (2n - 1) D for dw over n rows. Reads x, w, dy; writes dx, dw.
    """
    D = x.shape[-1]
    ops.read(x, "act")
    ops.read(w, "weight")
    ops.read(dy, "act")
    ms = ops.div(ops.sum(ops.mul(x, x)), D)  # recompute r: square D, sum D - 1, /D 1
    r = ops.sqrt(ops.add(ms, eps))  # add eps 1, sqrt 1
    xhat = ops.div(x, r)  # D
    g = ops.mul(dy, w)  # D
    proj = ops.div(ops.sum(ops.mul(g, xhat)), D)  # multiply D, sum D - 1, /D 1
    dx = ops.div(ops.sub(g, ops.mul(xhat, proj)), r)  # multiply D, subtract D, divide D
    dw = ops.sum(ops.mul(dy, xhat).reshape(-1, D), axis=0).reshape(D)  # nD, (n - 1) D
    ops.write(dx, "act")
    ops.write(dw, "grad")
    return dx, dw


def swiglu_backward(ops, g: np.ndarray, u: np.ndarray, da: np.ndarray):
    """Of a = silu(g) * u: du = da * silu(g), dg = da * u * sig * (1 + g * (1 - sig)).

    12 FLOPs per element; reads g, u, da; writes dg, du.
    """
    for x in (g, u, da):
        ops.read(x, "act")
    sig = ops.recip(ops.add(ops.exp(ops.neg(g)), 1.0))  # neg, exp, add, recip: 4
    du = ops.mul(da, ops.mul(g, sig))  # silu 1, du 1
    dsilu = ops.mul(sig, ops.add(ops.mul(g, ops.sub(1.0, sig)), 1.0))  # sub, mul, add, mul: 4
    dg = ops.mul(ops.mul(da, u), dsilu)  # 2
    ops.write(dg, "act")
    ops.write(du, "act")
    return dg, du


def rope_backward(ops, dq: np.ndarray, dk: np.ndarray, cos: np.ndarray, sin: np.ndarray):
    """The inverse rotation of the rotated dims (the first r = 2 cos.shape[-1]) of dq
    (B, T, H, d_h) and dk (B, T, G, d_h): 3 FLOPs per rotated element; reads those parts of
    dq, dk and cos, sin; writes them; the other dims pass through."""
    r = 2 * cos.shape[-1]
    parts = [dq[..., :r], dk[..., :r]]
    for x in (*parts, cos, sin):
        ops.read(x, "act")
    out = []
    for d in parts:
        half = r // 2
        d1, d2 = d[..., :half], d[..., half:]  # (B, T, n, r/2) each
        c, s = cos[:, None, :], sin[:, None, :]  # (T, 1, r/2)
        x1 = ops.add(ops.mul(d1, c), ops.mul(d2, s))  # 2 mul + 1 add per pair
        x2 = ops.sub(ops.mul(d2, c), ops.mul(d1, s))  # 2 mul + 1 sub per pair
        out.append(np.concatenate([x1, x2], axis=-1))  # (B, T, n, r)
    for d in out:
        ops.write(d, "act")
    return tuple(np.concatenate([o, d[..., r:]], axis=-1)  # (B, T, n, d_h)
                 for o, d in zip(out, (dq, dk)))


def softmax_backward(ops, p: np.ndarray, dp: np.ndarray, keep: np.ndarray, d_h: int,
                     s: np.ndarray | None = None, cap: float | None = None):
    """dz = scale * p * (dp - sum(dp * p)) over each row of S: 5S - 1 FLOPs (useful: over
    the kept entries). Reads p and dp, writes the gradient of the raw scores. With a
    softcap (Gemma-2) it also reads the raw scores s and multiplies by the cap's slope
    1 - tanh(scale * s / cap)^2: 6S more."""
    ops.read(p, "act")
    ops.read(dp, "act")
    scale = 1.0 / math.sqrt(d_h)
    dot = ops.sum(ops.mul(dp, p, valid=keep), valid=keep)  # S, S - 1
    dz = ops.mul(ops.sub(dp, dot, valid=keep), p, valid=keep)  # S, S
    if cap is not None:
        ops.read(s, "act")
        t = ops.tanh(ops.div(ops.mul(s, scale, valid=keep), cap, valid=keep), valid=keep)  # 3S
        slope = ops.sub(1.0, ops.mul(t, t, valid=keep), valid=keep)  # 2S
        dz = ops.mul(dz, slope, valid=keep)  # S
    dz = ops.mul(dz, scale, valid=keep)  # scale: S
    ops.write(dz, "act")
    return dz


def attention_grad(ops, spec: str, a: np.ndarray, b: np.ndarray, keep: np.ndarray):
    """One gradient matmul of the attention core (an einsum over the (t, s) pairs; useful
    FLOPs count the kept pairs); reads a and b, writes the result."""
    ops.read(a, "act")
    ops.read(b, "act")
    out = ops.einsum(spec, a, b, valid=keep, valid_dims="ts")
    ops.write(out, "act")
    return out


def embedding_backward(ops, dE: np.ndarray, tokens: np.ndarray, dx: np.ndarray,
                       accumulate: bool, scale: float | None = None) -> None:
    """Scatter-add the rows of dx (B, T, D) into dE (V, D) at the tokens: one add per
    element. ``accumulate``: dE already holds the tied lm_head's gradient and is read.
    ``scale`` (Gemma's sqrt(D)): dx is multiplied by it first, one multiply per element."""
    ops.read(dx, "act")
    if accumulate:
        ops.read(dE, "grad")
    if scale is not None:
        dx = ops.mul(dx, scale)
    ops.scatter_add(dE, tokens.reshape(-1), dx.reshape(-1, dx.shape[-1]))
    ops.write(dE, "grad")


def cross_entropy(ops, logits: np.ndarray, targets: np.ndarray):
    """Mean softmax cross-entropy over the n = B*T rows of V logits: 4V + 1 per row, then
    n - 1 adds and a divide. Reads the logits; writes the logsumexp per row and the loss."""
    V = logits.shape[-1]
    z = logits.reshape(-1, V)  # (n, V)
    n = z.shape[0]
    ops.read(z, "act")
    m = ops.max(z)  # V - 1
    lse = ops.add(m, ops.log(ops.sum(ops.exp(ops.sub(z, m)))))  # V, V, V - 1, log 1, add 1
    picked = z[np.arange(n), targets.reshape(-1)][:, None]  # (n, 1): gather, 0
    loss = ops.div(ops.sum(ops.sub(lse, picked), axis=0), n)  # 1 per row; n - 1, 1
    ops.write(lse, "act")
    ops.write(loss, "act")
    return float(loss[0, 0]), lse


def cross_entropy_backward(ops, logits: np.ndarray, lse: np.ndarray, targets: np.ndarray):
    """d(loss)/d(logits) = (softmax - onehot) / n: 3V + 1 per row; reads the logits and the
    logsumexp, writes the gradient (B, T, V)."""
    V = logits.shape[-1]
    z = logits.reshape(-1, V)  # (n, V)
    n = z.shape[0]
    ops.read(z, "act")
    ops.read(lse, "act")
    p = ops.exp(ops.sub(z, lse))  # V, V
    rows, cols = np.arange(n), targets.reshape(-1)
    p[rows, cols] = ops.sub(p[rows, cols], 1.0)  # 1 per row
    dz = ops.mul(p, 1.0 / n)  # V
    ops.write(dz, "act")
    return dz.reshape(logits.shape)
