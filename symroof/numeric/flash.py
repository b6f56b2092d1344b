"""A blockwise attention core with an online softmax (FlashAttention-style), counted.

The kernel loads q, and the keys and values of the positions the step reads, once; then
for each query row it walks the KV blocks (``block`` positions, aligned to position 0)
that hold a key the row may see, skipping the rest, and computes only the allowed entries
(so executed FLOPs are useful ones). The scores never leave the chip: only q, K, V (read)
and o (written) move bytes. Per row of n allowed keys in J blocks (docs/accounting.md):

- per block: scores 2 n_j d_k, scale n_j (softcap 3 n_j), block max n_j - 1, exp(s - m)
  2 n_j, block sum n_j - 1, p V 2 n_j d_v;
- per block after the first: new max 1, correction exp(m_old - m) 2, l = l c + sum 2,
  o = o c + p V 2 d_v;
- at the end: o / l, d_v.

Total 2 n (d_k + d_v) + 5n - 2 + 3 (J - 1) + d_v (2J - 1) (+ 3n with a softcap).
"""

from __future__ import annotations

import numpy as np

from .layers import softcap as _softcap

__all__ = ["flash_core"]


def _row(ops, qi, K, V, lo: int, p: int, start: int, block: int, scale: float,
         cap: float | None) -> np.ndarray:
    """o for one query row (position p) over the keys lo .. p; K, V hold positions
    start .. (on chip)."""
    m = l = o = None
    for j in range(lo // block, p // block + 1):
        a, z = max(lo, j * block) - start, min(p, (j + 1) * block - 1) - start + 1
        s = ops.einsum("bgrd,bsgd->bgrs", qi, K[:, a:z])  # (B, G, H/G, n_j)
        s = ops.mul(s, scale)
        if cap is not None:
            s = _softcap(ops, s, cap)
        m_new = ops.max(s)  # (B, G, H/G, 1)
        if m is not None:
            m_new = ops.maximum(m, m_new)
        e = ops.exp(ops.sub(s, m_new))
        s_sum = ops.sum(e)
        pv = ops.einsum("bgrs,bsgd->bgrd", e, V[:, a:z])  # (B, G, H/G, d_v)
        if m is None:
            l, o = s_sum, pv
        else:
            corr = ops.exp(ops.sub(m, m_new))
            l = ops.add(ops.mul(l, corr), s_sum)
            o = ops.add(ops.mul(o, corr), pv)
        m = m_new
    return ops.div(o, l)


def flash_core(ops, q: np.ndarray, K: np.ndarray, V: np.ndarray | None, c: int,
               window: int | None, block: int, scale: float, cap: float | None = None,
               d_v: int | None = None) -> np.ndarray:
    """Causal (optionally windowed) attention of q (B, T, H, d_k) at positions c .. c+T-1
    over the step's span of keys K (B, K, G, d_k), the last K positions of the cache, and
    values V (B, K, G, d_v); ``V=None``: the values are the first ``d_v`` dims of K (MLA's
    latent), read once with K. Returns (B, T, H*d_v).

    >>> from symroof.numeric import Counter
    >>> q, K = np.ones((1, 3, 2, 4)), np.ones((1, 3, 1, 4))
    >>> c = Counter()
    >>> with c.op("attn/core") as ops:
    ...     o = flash_core(ops, q, K, K, 0, None, 2, 0.5)
    >>> c.rows["attn/core"]["flops"] == 2 * (2*6*8 + 5*6 - 2*3 + 3*1 + 4*(2*4 - 3))
    True
    """
    B, T, H, d_k = q.shape
    G, n_keys = K.shape[2], K.shape[1]
    ops.read(q, "act")
    ops.read(K, "kv")
    if V is None:
        V = K[..., :d_v]  # (B, K, G, d_v): part of what was read
    else:
        ops.read(V, "kv")
    start = c + T - n_keys  # position of the first key held
    q5 = q.reshape(B, T, G, H // G, d_k)  # (B, T, G, H/G, d_k): head h = g*(H/G) + r
    out = np.empty((B, T, G, H // G, V.shape[-1]), dtype=np.result_type(q, V))
    for i in range(T):
        p = c + i
        lo = 0 if window is None else max(0, p - window + 1)
        out[:, i] = _row(ops, q5[:, i], K, V, lo, p, start, block, scale, cap)
    o = out.reshape(B, T, -1)  # (B, T, H*d_v)
    ops.write(o, "act")
    return o
