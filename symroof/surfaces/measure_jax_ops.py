"""The JAX kernels that ``symroof measure --backend jax`` times: one jitted function per row of
the NumPy forward's counter, and the arrays of the shapes each op has in one layer of a run.
JAX is imported inside the functions, only when a measurement runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..numeric import Config
from ..numeric.layers import rope_tables

__all__ = ["kernels", "program"]


def kernels(precision: Any) -> dict[str, Callable]:
    """The twin's ops in jax.numpy (the formulas of symroof.numeric.layers), unjitted."""
    import jax.numpy as jnp
    from jax import lax

    def linear(x, W):  # one 2-D matmul over all B*T rows, as the twin
        y = jnp.matmul(x.reshape(-1, x.shape[-1]), W, precision=precision)
        return y.reshape(*x.shape[:-1], W.shape[-1])  # (B, T, N)

    def rmsnorm(x, w, eps):
        return x / jnp.sqrt(jnp.mean(x * x, axis=-1, keepdims=True) + eps) * w

    def rope(q, k, cos, sin):  # rotate (first half, second half) of every head
        def rotate(x):
            x1, x2 = jnp.split(x, 2, axis=-1)  # (B, T, n, d_h/2) each
            c, s = cos[:, None, :], sin[:, None, :]  # (T, 1, d_h/2)
            return jnp.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)
        return rotate(q), rotate(k)

    def kv_write(cache_k, cache_v, k, v):  # at position 0 of an empty cache
        return (lax.dynamic_update_slice(cache_k, k, (0, 0, 0, 0)),
                lax.dynamic_update_slice(cache_v, v, (0, 0, 0, 0)))

    def scores(q, K):
        B, T, H, d = q.shape
        q = q.reshape(B, T, K.shape[2], H // K.shape[2], d)  # (B, T, G, H/G, d_h)
        return jnp.einsum("btgrd,bsgd->bgrts", q, K, precision=precision)

    def softmax(s, scale):  # causal mask from iota: no array read for it
        T, S = s.shape[-2:]
        keep = jnp.arange(S)[None, :] <= jnp.arange(S - T, S)[:, None]  # (T, S)
        z = jnp.where(keep, s * scale, -jnp.inf)
        e = jnp.exp(z - z.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    def av(p, V):
        o = jnp.einsum("bgrts,bsgd->btgrd", p, V, precision=precision)  # (B, T, G, H/G, d_h)
        return o.reshape(*o.shape[:2], -1)  # (B, T, H*d_h)

    def swiglu(g, u):
        return g / (1 + jnp.exp(-g)) * u

    return {"embed": lambda E, tokens: E[tokens], "norm": rmsnorm, "linear": linear,
            "rope": rope, "kv_write": kv_write, "scores": scores, "softmax": softmax,
            "av": av, "swiglu": swiglu, "residual": lambda x, y: x + y}


def program(cfg: Config, B: int, T: int) -> dict[str, tuple[str, dict, tuple, int]]:
    """op key -> (kernel, its static arguments, NumPy operands, calls per forward): the
    operand shapes each op of forward() has in one layer of a prefill of T tokens."""
    D, F, H, G, d_h, V, L, S = cfg.D, cfg.F, cfg.H, cfg.G, cfg.d_h, cfg.V, cfg.L, T
    rng = np.random.default_rng(0)

    def a(*shape):
        return rng.standard_normal(shape, dtype=np.float32)

    x, eps = a(B, T, D), {"eps": cfg.eps}  # (B, T, D)
    cos, sin = rope_tables(d_h, cfg.rope_theta, 0, T, np.float32)  # (T, d_h/2) each
    cache = np.zeros((B, S, G, d_h), np.float32)  # (B, S, G, d_h)
    probs = np.abs(a(B, G, H // G, T, S))  # (B, G, H/G, T, S)
    return {
        "embed": ("embed", {}, (a(V, D), rng.integers(0, V, (B, T))), 1),
        "attn_norm": ("norm", eps, (x, a(D)), L),
        **{f"attn/{n}_proj": ("linear", {}, (x, a(D, m * d_h)), L)
           for n, m in (("q", H), ("k", G), ("v", G))},
        "attn/rope": ("rope", {}, (a(B, T, H, d_h), a(B, T, G, d_h), cos, sin), L),
        "attn/kv_write": ("kv_write", {}, (cache, cache, a(B, T, G, d_h), a(B, T, G, d_h)), L),
        "attn/scores": ("scores", {}, (a(B, T, H, d_h), a(B, S, G, d_h)), L),
        "attn/softmax": ("softmax", {"scale": 1 / np.sqrt(d_h)}, (a(B, G, H // G, T, S),), L),
        "attn/av": ("av", {}, (probs / probs.sum(-1, keepdims=True), a(B, S, G, d_h)), L),
        "attn/o_proj": ("linear", {}, (a(B, T, H * d_h), a(H * d_h, D)), L),
        "attn/residual": ("residual", {}, (x, a(B, T, D)), L),
        "mlp_norm": ("norm", eps, (x, a(D)), L),
        "mlp/gate": ("linear", {}, (x, a(D, F)), L),
        "mlp/up": ("linear", {}, (x, a(D, F)), L),
        "mlp/swiglu": ("swiglu", {}, (a(B, T, F), a(B, T, F)), L),
        "mlp/down": ("linear", {}, (a(B, T, F), a(F, D)), L),
        "mlp/residual": ("residual", {}, (x, a(B, T, D)), L),
        "final_norm": ("norm", eps, (x, a(D)), 1),
        "lm_head": ("linear", {}, (x, a(D, V)), 1),
    }
