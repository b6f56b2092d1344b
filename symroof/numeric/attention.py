"""The attention of one layer in the NumPy decoder: q/k/v (or fused qkv) projections, RoPE
on the rotated dims, the KV write, and the core, naive or flash, over the keys the step
reads (all positions, or the sliding window's).

Each function takes ``scope`` (``Counter.op`` or a function returning ``PLAIN``) and opens
the op scopes of docs/accounting.md's rows.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np

from . import layers
from .config import Config
from .flash import flash_core

__all__ = ["step", "core", "standard"]


def step(cfg: Config, l: int, c: int, T: int) -> SimpleNamespace:
    """Which keys layer l reads in a step of T tokens after c cached: the span's first
    position, and ``keep`` (T, span), True where query i may see the key.

    >>> from symroof.numeric import TINY
    >>> at = step(TINY.replace(window=2), 0, 3, 2)     # positions 3, 4 see (p - 2, p]
    >>> at.first, at.keep.astype(int).tolist()
    (2, [[1, 1, 0], [0, 1, 1]])
    """
    S, W = c + T, cfg.layer_window(l)
    first = 0 if W is None else S - T - min(c, W - 1)
    keys = np.arange(first, S)[None, :]  # (1, span): absolute positions
    rows = np.arange(c, S)[:, None]  # (T, 1)
    keep = keys <= rows if W is None else (keys <= rows) & (keys > rows - W)
    return SimpleNamespace(first=first, keep=keep, window=W, c=c)


def core(scope, cfg: Config, mode: str, q: np.ndarray, K: np.ndarray, V: np.ndarray | None,
         at: SimpleNamespace, scale: float, d_v: int) -> np.ndarray:
    """The attention core over the span: naive (three rows) or flash (``attn/core``).
    ``V=None``: the values are K's first d_v dims (MLA's latent)."""
    if mode == "flash":
        with scope("attn/core") as ops:
            return flash_core(ops, q, K, V, at.c, at.window, cfg.attn_block, scale,
                              cfg.attn_softcap, d_v)
    V = K[..., :d_v] if V is None else V
    return layers.attention_core(scope, q, K, V, at.keep, scale, cfg.attn_softcap)


def _qkv(scope, p: dict, cfg: Config, h: np.ndarray):
    """q (B, T, H*d_h), k and v (B, T, G*d_h): three projections or one fused."""
    H, G, d_h = cfg.H, cfg.G, cfg.d_h
    if cfg.fused_qkv:
        with scope("attn/qkv_proj") as ops:
            qkv = layers.linear(ops, h, p["wqkv"], p.get("bqkv"))  # (B, T, (H + 2G) d_h)
        return np.split(qkv, [H * d_h, (H + G) * d_h], axis=-1)  # selection
    out = []
    for name in ("q", "k", "v"):
        with scope(f"attn/{name}_proj") as ops:
            out.append(layers.linear(ops, h, p[f"w{name}"], p.get(f"b{name}")))
    return out


def standard(scope, p: dict, cfg: Config, h: np.ndarray, cache, l: int, c: int, tables,
             mode: str) -> np.ndarray:
    """GQA attention of the normed input h (B, T, D); returns o (B, T, H*d_h) for o_proj."""
    B, T, _ = h.shape
    H, G, d_h, S = cfg.H, cfg.G, cfg.d_h, c + T
    q, k, v = _qkv(scope, p, cfg, h)
    q = q.reshape(B, T, H, d_h)  # (B, T, H, d_h)
    k = k.reshape(B, T, G, d_h)  # (B, T, G, d_h)
    v = v.reshape(B, T, G, d_h)  # (B, T, G, d_h)
    if cfg.qk_norm:  # per head, over its d_h dims, before RoPE (Qwen3)
        with scope("attn/q_norm") as ops:
            q = layers.rmsnorm(ops, q, p["q_norm"], cfg.eps)
        with scope("attn/k_norm") as ops:
            k = layers.rmsnorm(ops, k, p["k_norm"], cfg.eps)
    if cfg.positions == "rope":
        with scope("attn/rope") as ops:
            q, k = layers.rope(ops, q, k, *tables)
    with scope("attn/kv_write") as ops:
        layers.kv_write(ops, cache.k[l], cache.v[l], c, k, v)
    at = step(cfg, l, c, T)
    K, V = cache.k[l][:, at.first:S], cache.v[l][:, at.first:S]  # (B, span, G, d_h)
    return core(scope, cfg, mode, q, K, V, at, 1.0 / math.sqrt(d_h), d_h)
