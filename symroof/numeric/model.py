"""A Llama-family decoder in NumPy whose every op goes through a counter.

token embedding -> L x [RMSNorm, attention (RoPE, GQA, KV cache), residual, RMSNorm,
SwiGLU MLP, residual] -> final RMSNorm -> lm_head. float64 by default, so that cached
decoding equals full recomputation to rounding error. The op keys are the rows of the table
in docs/accounting.md; per-layer ops accumulate into one key.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import layers
from .config import Config, check_params
from .counter import Counter
from .primitives import PLAIN

OP_KEYS = ("embed", "attn_norm", "attn/q_proj", "attn/k_proj", "attn/v_proj", "attn/rope",
           "attn/kv_write", "attn/scores", "attn/softmax", "attn/av", "attn/o_proj",
           "attn/residual", "mlp_norm", "mlp/gate", "mlp/up", "mlp/swiglu", "mlp/down",
           "mlp/residual", "final_norm", "lm_head")

OP_GROUPS = {
    "embedding": ["embed"],
    "norms": ["attn_norm", "mlp_norm", "final_norm"],
    "attention projections": ["attn/q_proj", "attn/k_proj", "attn/v_proj", "attn/o_proj"],
    "attention core": ["attn/scores", "attn/softmax", "attn/av"],
    "KV write": ["attn/kv_write"],
    "MLP": ["mlp/gate", "mlp/up", "mlp/down"],
    "elementwise": ["attn/rope", "mlp/swiglu", "attn/residual", "mlp/residual"],
    "lm_head": ["lm_head"],
}


class KVCache:
    """Per layer, K and V arrays (B, S_max, G, d_h) and the number of cached positions.

    ``max_len`` is the initial capacity; the arrays grow (uncounted) when a step needs more.

    >>> from symroof.numeric import TINY
    >>> cache = KVCache(TINY, batch=2, max_len=8)
    >>> cache.k[0].shape, cache.length
    ((2, 8, 2, 8), 0)
    """

    def __init__(self, cfg: Config, batch: int, max_len: int | None = None,
                 dtype: Any = np.float64):
        if not isinstance(cfg, Config):
            raise TypeError(f"cfg must be a Config, got {type(cfg).__name__}")
        if isinstance(batch, bool) or not isinstance(batch, int) or batch <= 0:
            raise ValueError(f"batch must be a positive integer, got {batch!r}")
        if max_len is not None and (isinstance(max_len, bool) or not isinstance(max_len, int)
                                    or max_len < 0):
            raise ValueError(f"max_len must be a non-negative integer or None, got {max_len!r}")
        self.cfg, self.batch, self.length = cfg, batch, 0
        S_max = 16 if max_len is None else max_len
        shape = (batch, S_max, cfg.G, cfg.d_h)  # (B, S_max, G, d_h)
        self.k = [np.zeros(shape, dtype) for _ in range(cfg.L)]
        self.v = [np.zeros(shape, dtype) for _ in range(cfg.L)]

    @property
    def capacity(self) -> int:
        """Positions the arrays can hold before they grow."""
        return self.k[0].shape[1]

    def reserve(self, S: int) -> None:
        """Make room for S positions (at least doubling, so growth is amortised)."""
        if S <= self.capacity:
            return
        S_max = max(S, 2 * self.capacity)
        for arrays in (self.k, self.v):
            for l, old in enumerate(arrays):
                new = np.zeros((self.batch, S_max) + old.shape[2:], old.dtype)  # (B, S_max, G, d_h)
                new[:, : self.length] = old[:, : self.length]
                arrays[l] = new


def _check_tokens(tokens: Any, cfg: Config) -> np.ndarray:
    tokens = np.asarray(tokens)
    if tokens.ndim != 2:
        raise ValueError(f"tokens must be a 2-D integer array [B, T], got shape {tokens.shape}")
    if tokens.dtype.kind not in "iu":
        raise ValueError(f"tokens must be integers, got dtype {tokens.dtype}")
    B, T = tokens.shape
    if B < 1 or T < 1:
        raise ValueError(f"tokens must have B >= 1 and T >= 1, got shape {tokens.shape}")
    lo, hi = int(tokens.min()), int(tokens.max())
    if lo < 0 or hi >= cfg.V:
        bad = lo if lo < 0 else hi
        raise ValueError(f"tokens must lie in [0, V) = [0, {cfg.V}), got {bad}")
    return tokens


def _check_cache(cache: Any, cfg: Config, B: int) -> None:
    if not isinstance(cache, KVCache):
        raise TypeError(f"cache must be a KVCache or None, got {type(cache).__name__}")
    if cache.cfg != cfg:
        raise ValueError(f"cache was built for {cache.cfg}, not for {cfg}")
    if cache.batch != B:
        raise ValueError(f"cache batch ({cache.batch}) must equal the tokens' batch B ({B})")


def _attention_block(scope, p, cfg: Config, x, cache: KVCache, l: int, c: int, cos, sin, keep):
    B, T, D = x.shape
    H, G, d_h, S = cfg.H, cfg.G, cfg.d_h, c + T
    with scope("attn_norm") as ops:
        h = layers.rmsnorm(ops, x, p["attn_norm"], cfg.eps)  # (B, T, D)
    with scope("attn/q_proj") as ops:
        q = layers.linear(ops, h, p["wq"], p.get("bq"))  # (B, T, H*d_h)
    with scope("attn/k_proj") as ops:
        k = layers.linear(ops, h, p["wk"], p.get("bk"))  # (B, T, G*d_h)
    with scope("attn/v_proj") as ops:
        v = layers.linear(ops, h, p["wv"], p.get("bv"))  # (B, T, G*d_h)
    q = q.reshape(B, T, H, d_h)  # (B, T, H, d_h)
    k = k.reshape(B, T, G, d_h)  # (B, T, G, d_h)
    v = v.reshape(B, T, G, d_h)  # (B, T, G, d_h)
    with scope("attn/rope") as ops:
        q, k = layers.rope(ops, q, k, cos, sin)
    with scope("attn/kv_write") as ops:
        layers.kv_write(ops, cache.k[l], cache.v[l], c, k, v)
    o = layers.attention_core(scope, q, cache.k[l][:, :S], cache.v[l][:, :S], keep)
    with scope("attn/o_proj") as ops:
        o = layers.linear(ops, o, p["wo"])  # (B, T, D)
    with scope("attn/residual") as ops:
        return layers.residual(ops, x, o)


def _mlp_block(scope, p, cfg: Config, x):
    with scope("mlp_norm") as ops:
        h = layers.rmsnorm(ops, x, p["mlp_norm"], cfg.eps)  # (B, T, D)
    with scope("mlp/gate") as ops:
        g = layers.linear(ops, h, p["w_gate"])  # (B, T, F)
    with scope("mlp/up") as ops:
        u = layers.linear(ops, h, p["w_up"])  # (B, T, F)
    with scope("mlp/swiglu") as ops:
        a = layers.swiglu(ops, g, u)  # (B, T, F)
    with scope("mlp/down") as ops:
        y = layers.linear(ops, a, p["w_down"])  # (B, T, D)
    with scope("mlp/residual") as ops:
        return layers.residual(ops, x, y)


def forward(params: dict[str, Any], cfg: Config, tokens: Any, cache: KVCache | None = None,
            counter: Counter | None = None, last_only: bool = False) -> np.ndarray:
    """Logits (B, T', V) for new tokens (B, T); T' = 1 with ``last_only``, else T.

    With a ``cache`` holding c positions, the new tokens sit at positions c .. c+T-1, their K
    and V are written into it, and token i attends to positions 0 .. c+i (S = c + T). With a
    ``counter``, every op adds its FLOPs and bytes to ``counter.rows``.

    >>> from symroof.numeric import TINY, Counter, init_params
    >>> params, counter = init_params(TINY), Counter()
    >>> forward(params, TINY, np.zeros((2, 5), dtype=int), counter=counter).shape
    (2, 5, 256)
    >>> counter.rows["attn/q_proj"]["flops"] == TINY.L * 2 * 2*5 * TINY.D * TINY.H*TINY.d_h
    True
    """
    check_params(params, cfg)
    tokens = _check_tokens(tokens, cfg)
    B, T = tokens.shape
    dtype = params["embed"].dtype
    if cache is None:
        cache = KVCache(cfg, B, max_len=T, dtype=dtype)
    _check_cache(cache, cfg, B)
    c = cache.length
    S = c + T
    cache.reserve(S)
    cos, sin = layers.rope_tables(cfg.d_h, cfg.rope_theta, c, T, dtype)  # (T, d_h/2) each
    keep = np.arange(S)[None, :] <= np.arange(c, S)[:, None]  # (T, S): token i sees 0..c+i
    scope = (lambda key: PLAIN) if counter is None else counter.op
    with scope("embed") as ops:
        x = params["embed"][tokens]  # (B, T, D): a gather, 0 FLOPs
        ops.read(x, "weight")
        ops.write(x, "act")
    for l, p in enumerate(params["layers"]):
        x = _attention_block(scope, p, cfg, x, cache, l, c, cos, sin, keep)
        x = _mlp_block(scope, p, cfg, x)
    cache.length = S
    if last_only:
        x = x[:, -1:]  # (B, 1, D)
    with scope("final_norm") as ops:
        x = layers.rmsnorm(ops, x, params["final_norm"], cfg.eps)  # (B, T', D)
    W = params["embed"].T if cfg.tied else params["lm_head"]  # (D, V)
    with scope("lm_head") as ops:
        return layers.linear(ops, x, W)  # (B, T', V)
