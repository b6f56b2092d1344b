"""Hand-written backward of the dense families' ops (LayerNorm, GELU and the other
activations gated or not, softcapping, learned positions), with counted primitives.

As in :mod:`symroof.numeric.backward`: each function takes an op scope ``ops``, declares
what it reads and writes, computes with ``ops.<primitive>``; the comments give the count
each line executes. Gradients of parameters are kind ``"grad"``.
"""

from __future__ import annotations

import math

import numpy as np

from .backward import rmsnorm_backward

_C = math.sqrt(2.0 / math.pi)  # gelu_tanh's constant


def layernorm_backward(ops, x: np.ndarray, w: np.ndarray, dy: np.ndarray, eps: float):
    """Of y = xhat * w + b: dx = (g - mean(g) - xhat * mean(g * xhat)) / std, g = dy * w;
    dw = sum of dy * xhat, db = sum of dy over the rows. Reads x, w, dy; writes dx, dw, db."""
    D = x.shape[-1]
    ops.read(x, "act")
    ops.read(w, "weight")
    ops.read(dy, "act")
    mu = ops.div(ops.sum(x), D)  # sum D - 1, divide 1
    xc = ops.sub(x, mu)  # D
    var = ops.div(ops.sum(ops.mul(xc, xc)), D)  # square D, sum D - 1, divide 1
    std = ops.sqrt(ops.add(var, eps))  # add eps 1, sqrt 1
    xhat = ops.div(xc, std)  # D
    g = ops.mul(dy, w)  # D
    mean_g = ops.div(ops.sum(g), D)  # D - 1, 1
    mean_gx = ops.div(ops.sum(ops.mul(g, xhat)), D)  # D, D - 1, 1
    dx = ops.div(ops.sub(ops.sub(g, mean_g), ops.mul(xhat, mean_gx)), std)  # 4 D
    rows = dy.reshape(-1, D)  # (n, D)
    dw = ops.sum(ops.mul(dy, xhat).reshape(-1, D), axis=0).reshape(D)  # n D, (n - 1) D
    db = ops.sum(rows, axis=0).reshape(D)  # (n - 1) D
    ops.write(dx, "act")
    ops.write(dw, "grad")
    ops.write(db, "grad")
    return dx, dw, db


def norm_backward(ops, p: dict, name: str, x: np.ndarray, dy: np.ndarray, eps: float):
    """RMSNorm's or (where ``p`` holds ``name + '_b'``) LayerNorm's backward; returns dx and
    the parameter gradients by name."""
    if name + "_b" in p:
        dx, dw, db = layernorm_backward(ops, x, p[name], dy, eps)
        return dx, {name: dw, name + "_b": db}
    dx, dw = rmsnorm_backward(ops, x, p[name], dy, eps)
    return dx, {name: dw}


def act_grad(ops, x: np.ndarray, act: str, value: bool):
    """(act(x) or None, act'(x)) elementwise: silu 8 (+ 1 for the value), gelu 10 (+ 1),
    gelu_tanh 16 (+ 1) FLOPs per element."""
    if act == "silu":
        sig = ops.recip(ops.add(ops.exp(ops.neg(x)), 1.0))  # neg, exp, add, recip: 4
        a = ops.mul(x, sig) if value else None  # 1
        d = ops.mul(sig, ops.add(ops.mul(x, ops.sub(1.0, sig)), 1.0))  # sub, mul, add, mul: 4
        return a, d
    if act == "gelu":
        cdf = ops.mul(ops.add(ops.erf(ops.mul(x, 1.0 / math.sqrt(2.0))), 1.0), 0.5)  # 4
        a = ops.mul(x, cdf) if value else None  # 1
        pdf = ops.mul(ops.exp(ops.mul(ops.mul(x, x), -0.5)), 1.0 / math.sqrt(2 * math.pi))  # 4
        return a, ops.add(cdf, ops.mul(x, pdf))  # mul, add: 2
    x2 = ops.mul(x, x)  # 1
    inner = ops.add(x, ops.mul(ops.mul(x2, x), 0.044715))  # x^3, times 0.044715, add: 3
    t = ops.tanh(ops.mul(inner, _C))  # 2
    half = ops.mul(ops.add(t, 1.0), 0.5)  # 2
    a = ops.mul(x, half) if value else None  # 1
    sech2 = ops.sub(1.0, ops.mul(t, t))  # 2
    dinner = ops.add(ops.mul(x2, 3 * 0.044715), 1.0)  # 2
    slope = ops.mul(ops.mul(ops.mul(x, sech2), dinner), 0.5 * _C)  # 3
    return a, ops.add(half, slope)  # 1


def activation_backward(ops, act: str, g: np.ndarray, u: np.ndarray | None, da: np.ndarray):
    """Of a = act(g) * u: (dg, du), du = da * act(g), dg = da * u * act'(g) (3 FLOPs per
    element on top of ``act_grad``); of a = act(g) (``u`` None): dg = da * act'(g) (1)."""
    for x in (g, da) if u is None else (g, u, da):
        ops.read(x, "act")
    a, d = act_grad(ops, g, act, value=u is not None)
    if u is None:
        dg = ops.mul(da, d)  # 1
        ops.write(dg, "act")
        return dg, None
    du = ops.mul(da, a)  # 1
    dg = ops.mul(ops.mul(da, u), d)  # 2
    ops.write(dg, "act")
    ops.write(du, "act")
    return dg, du


def softcap_backward(ops, z: np.ndarray, dz: np.ndarray, cap: float) -> np.ndarray:
    """Of z = cap * tanh(x / cap), from the capped z: dx = dz * (1 - (z / cap)^2), 4 FLOPs
    per element; reads z and dz, writes dx."""
    ops.read(z, "act")
    ops.read(dz, "act")
    t = ops.div(z, cap)  # 1
    dx = ops.mul(dz, ops.sub(1.0, ops.mul(t, t)))  # mul, sub, mul: 3
    ops.write(dx, "act")
    return dx


def pos_embed_backward(ops, dx: np.ndarray, rows: int) -> np.ndarray:
    """The learned positions' gradient: dx (B, T, D) summed over the batch into the first T
    of ``rows`` positions ((B - 1) T D adds); reads dx, writes the T rows it sums."""
    ops.read(dx, "act")
    d = ops.sum(dx, axis=0)[0]  # (T, D)
    ops.write(d, "grad")
    out = np.zeros((rows, dx.shape[-1]), dtype=dx.dtype)  # (P, D): unused positions stay 0
    out[: d.shape[0]] = d
    return out
