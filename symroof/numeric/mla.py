"""Multi-head latent attention (DeepSeek-V2/V3) in the NumPy decoder.

Queries: h -> q latent (q_rank) -> RMSNorm -> H heads of d_nope + d_rope (or one direct
projection). Keys and values: h -> [c_kv (kv_rank), k_rope (d_rope)]; c_kv is RMS-normed;
k_rope is one RoPE key shared by the heads. Absorbed form (``absorb``): the cache holds
[c_kv, k_rope] per position; q_nope is multiplied by W_UK (kv_rank x d_nope per head) into
the latent, the scores run against the cached latent, attention x V gives a latent output
that W_UV (kv_rank x d_v per head) maps to each head's value width. Naive form: kv_b_proj
expands the new tokens' c_kv into per-head k_nope and v, which are cached like MHA's.
W_UK and W_UV are the two halves of kv_b_proj's weight, (kv_rank, H, d_nope + d_v).
"""

from __future__ import annotations

import math

import numpy as np

from . import layers
from .attention import core, step
from .config import Config

__all__ = ["mla"]


def _queries(scope, p: dict, cfg: Config, h: np.ndarray) -> np.ndarray:
    a = cfg.mla
    if a.q_rank is None:
        with scope("attn/q_proj") as ops:
            return layers.linear(ops, h, p["wq"])  # (B, T, H (d_nope + d_rope))
    with scope("attn/q_a_proj") as ops:
        cq = layers.linear(ops, h, p["wq_a"])  # (B, T, q_rank)
    with scope("attn/q_a_norm") as ops:
        cq = layers.rmsnorm(ops, cq, p["q_a_norm"], cfg.eps)
    with scope("attn/q_b_proj") as ops:
        return layers.linear(ops, cq, p["wq_b"])


def _absorbed(scope, p, cfg, q_nope, q_pe, ckv, k_pe, cache, l, c, mode):
    a, (B, T, H, _) = cfg.mla, q_nope.shape
    W = p["wkv_b"].reshape(a.kv_rank, H, a.d_nope + a.d_v)  # (kv_rank, H, d_nope + d_v)
    with scope("attn/kv_write") as ops:
        latent = np.concatenate([ckv[:, :, None], k_pe], axis=-1)  # (B, T, 1, kv_rank + d_rope)
        ops.read(ckv, "act")
        ops.read(k_pe, "act")
        cache.k[l][:, c:c + T] = latent
        ops.write(cache.k[l][:, c:c + T], "kv")
    with scope("attn/q_absorb") as ops:
        W_UK = W[:, :, :a.d_nope]  # (kv_rank, H, d_nope)
        ops.read(q_nope, "act")
        ops.read(W_UK, "weight")
        q_lat = ops.einsum("bthd,chd->bthc", q_nope, W_UK)  # (B, T, H, kv_rank)
        ops.write(q_lat, "act")
    at = step(cfg, l, c, T)
    K = cache.k[l][:, at.first:c + T]  # (B, span, 1, kv_rank + d_rope)
    q = np.concatenate([q_lat, q_pe], axis=-1)  # (B, T, H, kv_rank + d_rope): selection
    o = core(scope, cfg, mode, q, K, None, at, 1.0 / math.sqrt(a.d_nope + a.d_rope),
             a.kv_rank)  # (B, T, H kv_rank)
    with scope("attn/o_absorb") as ops:
        W_UV = W[:, :, a.d_nope:]  # (kv_rank, H, d_v)
        ops.read(o, "act")
        ops.read(W_UV, "weight")
        o = ops.einsum("bthc,chv->bthv", o.reshape(B, T, H, a.kv_rank), W_UV)
        o = o.reshape(B, T, H * a.d_v)  # (B, T, H d_v)
        ops.write(o, "act")
    return o


def _expanded(scope, p, cfg, q_nope, q_pe, ckv, k_pe, cache, l, c, mode):
    a, (B, T, H, _) = cfg.mla, q_nope.shape
    with scope("attn/kv_b_proj") as ops:
        kv = layers.linear(ops, ckv, p["wkv_b"]).reshape(B, T, H, a.d_nope + a.d_v)
    k_nope, v = kv[..., :a.d_nope], kv[..., a.d_nope:]  # (B, T, H, d_nope), (B, T, H, d_v)
    with scope("attn/kv_write") as ops:
        for x in (k_nope, k_pe, v):
            ops.read(x, "act")
        k = np.concatenate([k_nope, np.broadcast_to(k_pe, (B, T, H, a.d_rope))], axis=-1)
        layers.kv_write(ops, cache.k[l], cache.v[l], c, k, v, read=False)
    at = step(cfg, l, c, T)
    K, V = cache.k[l][:, at.first:c + T], cache.v[l][:, at.first:c + T]
    q = np.concatenate([q_nope, q_pe], axis=-1)  # (B, T, H, d_nope + d_rope)
    return core(scope, cfg, mode, q, K, V, at, 1.0 / math.sqrt(a.d_nope + a.d_rope), a.d_v)


def mla(scope, p: dict, cfg: Config, h: np.ndarray, cache, l: int, c: int, tables,
        mode: str) -> np.ndarray:
    """Latent attention of the normed input h (B, T, D); returns o (B, T, H*d_v)."""
    a, (B, T, _) = cfg.mla, h.shape
    H = cfg.H
    q = _queries(scope, p, cfg, h).reshape(B, T, H, a.d_nope + a.d_rope)
    with scope("attn/kv_a_proj") as ops:
        ckv_pe = layers.linear(ops, h, p["wkv_a"])  # (B, T, kv_rank + d_rope)
    with scope("attn/kv_a_norm") as ops:
        ckv = layers.rmsnorm(ops, ckv_pe[..., :a.kv_rank], p["kv_a_norm"], cfg.eps)
    q_nope, q_pe = q[..., :a.d_nope], q[..., a.d_nope:]  # (B, T, H, d_nope), (..., d_rope)
    k_pe = ckv_pe[..., a.kv_rank:].reshape(B, T, 1, a.d_rope)  # one key for every head
    with scope("attn/rope") as ops:
        q_pe, k_pe = layers.rope(ops, q_pe, k_pe, *tables)
    form = _absorbed if a.absorb else _expanded
    return form(scope, p, cfg, q_nope, q_pe, ckv, k_pe, cache, l, c, mode)
