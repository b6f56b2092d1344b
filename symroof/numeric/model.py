"""A decoder in NumPy whose every op goes through a counter.

token embedding (+ learned positions) -> L x [norm, attention (GQA with RoPE, or latent
attention; a KV cache; a sliding window on the layers that have one), residual, norm, MLP
(dense, or a mixture of experts), residual] -> final norm -> lm_head. Llama by default; the
config's switches give GPT-2, GPT-NeoX, Gemma, Gemma-2, Phi-3, Mixtral, Qwen2-MoE and
DeepSeek-V3 blocks. float64 by default, so that cached decoding equals full recomputation to
rounding error. The op keys are the rows of the table in docs/accounting.md; per-layer ops
accumulate into one key.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import layers
from .attention import standard
from .config import Config
from .counter import Counter
from .mla import mla
from .mlp import dense, moe
from .params import check_params
from .primitives import PLAIN

#: the rows of a Llama step with the naive core (other families add and rename rows:
#: docs/accounting.md, "Model families")
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
        (Gk, dk), v_dims = cfg.cache_dims  # MLA's absorbed latent has no separate V
        self.k = [np.zeros((batch, S_max, Gk, dk), dtype) for _ in range(cfg.L)]
        self.v = [] if v_dims is None else [np.zeros((batch, S_max, *v_dims), dtype)
                                            for _ in range(cfg.L)]

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
                new = np.zeros((self.batch, S_max) + old.shape[2:], old.dtype)  # (B, S_max, ..)
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


def _layer(scope, p, cfg: Config, x, cache: KVCache, l: int, c: int, tables, mode: str,
           trace: list | None):
    """One decoder layer: attention and MLP blocks with their norms and residuals
    (GPT-NeoX's parallel residual: the MLP reads the layer input, not x + attention)."""
    with scope("attn_norm") as ops:
        h = layers.norm(ops, p, "attn_norm", x, cfg.eps)  # (B, T, D)
    attend = mla if cfg.mla is not None else standard
    o = attend(scope, p, cfg, h, cache, l, c, tables, mode)  # (B, T, H d_v)
    with scope("attn/o_proj") as ops:
        a = layers.linear(ops, o, p["wo"], p.get("bo"))  # (B, T, D)
    if cfg.post_norms:
        with scope("attn/post_norm") as ops:
            a = layers.norm(ops, p, "attn_post_norm", a, cfg.eps)
    with scope("attn/residual") as ops:
        x1 = layers.residual(ops, x, a)
    with scope("mlp_norm") as ops:
        h = layers.norm(ops, p, "mlp_norm", x if cfg.parallel_residual else x1, cfg.eps)
    y = moe(scope, p, cfg, h, trace) if cfg.is_moe(l) else dense(scope, p, cfg, h)
    if cfg.post_norms:
        with scope("mlp/post_norm") as ops:
            y = layers.norm(ops, p, "mlp_post_norm", y, cfg.eps)
    with scope("mlp/residual") as ops:
        return layers.residual(ops, x1, y)


def _embed(scope, params, cfg: Config, tokens, c: int):
    B, T = tokens.shape
    with scope("embed") as ops:
        x = params["embed"][tokens]  # (B, T, D): a gather, 0 FLOPs
        ops.read(x, "weight")
        if cfg.embed_scale:
            x = ops.mul(x, float(np.sqrt(cfg.D)))  # Gemma: sqrt(D)
        ops.write(x, "act")
    if cfg.positions == "learned":
        if c + T > cfg.max_position:
            raise ValueError(f"positions {c} .. {c + T - 1} exceed the {cfg.max_position} "
                             "learned positions")
        with scope("pos_embed") as ops:
            pos = params["pos_embed"][c:c + T]  # (T, D): read once, shared by the batch
            ops.read(pos, "weight")
            ops.read(x, "act")
            x = ops.add(x, pos)
            ops.write(x, "act")
    return x


def forward(params: dict[str, Any], cfg: Config, tokens: Any, cache: KVCache | None = None,
            counter: Counter | None = None, last_only: bool = False, *,
            attention: str = "naive", trace: list | None = None) -> np.ndarray:
    """Logits (B, T', V) for new tokens (B, T); T' = 1 with ``last_only``, else T.

    With a ``cache`` holding c positions, the new tokens sit at positions c .. c+T-1, their K
    and V are written into it, and token i attends to positions 0 .. c+i (S = c + T), or
    the last ``window`` of them in a windowed layer. With a ``counter``, every op adds its
    FLOPs and bytes to ``counter.rows``. ``attention``: "naive" (scores through memory) or
    "flash" (blockwise, online softmax). ``trace``: a list that gets, per MoE layer, the
    number of tokens each expert was routed.

    >>> from symroof.numeric import TINY, Counter, init_params
    >>> params, counter = init_params(TINY), Counter()
    >>> forward(params, TINY, np.zeros((2, 5), dtype=int), counter=counter).shape
    (2, 5, 256)
    >>> counter.rows["attn/q_proj"]["flops"] == TINY.L * 2 * 2*5 * TINY.D * TINY.H*TINY.d_h
    True
    """
    if attention not in ("naive", "flash"):
        raise ValueError(f"attention must be 'naive' or 'flash', got {attention!r}")
    check_params(params, cfg)
    tokens = _check_tokens(tokens, cfg)
    B, T = tokens.shape
    dtype = params["embed"].dtype
    if cache is None:
        cache = KVCache(cfg, B, max_len=T, dtype=dtype)
    _check_cache(cache, cfg, B)
    c = cache.length
    cache.reserve(c + T)
    tables = layers.rope_tables(cfg.rotary, cfg.rope_theta, c, T, dtype)  # (T, r/2) each
    scope = (lambda key: PLAIN) if counter is None else counter.op
    x = _embed(scope, params, cfg, tokens, c)
    for l, p in enumerate(params["layers"]):
        x = _layer(scope, p, cfg, x, cache, l, c, tables, attention, trace)
    cache.length = c + T
    if last_only:
        x = x[:, -1:]  # (B, 1, D)
    with scope("final_norm") as ops:
        x = layers.norm(ops, params, "final_norm", x, cfg.eps)  # (B, T', D)
    W = params["embed"].T if cfg.tied else params["lm_head"]  # (D, V)
    with scope("lm_head") as ops:
        logits = layers.linear(ops, x, W)  # (B, T', V)
    if cfg.final_softcap is not None:
        with scope("logit_softcap") as ops:
            ops.read(logits, "act")
            logits = layers.softcap(ops, logits, cfg.final_softcap)
            ops.write(logits, "act")
    return logits
