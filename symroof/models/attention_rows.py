"""Attention rows: what a step reads under a sliding window, the attention core in its
three forms (naive, fused, flash), and the per-layer rows of standard (GQA) attention and
of multi-head latent attention.

A step adds T tokens to c cached ones. New token i (position p = c + i) attends to the
positions in (p - W, p] with a window W, else to 0 .. p. So a step reads the keys of
positions max(0, c - W + 1) .. c + T - 1: ``span`` K = T + min(c, W - 1) per sequence; and
the allowed (query, key) pairs per sequence and head are
P = sum_i min(c + i + 1, W) = m c + m (m + 1)/2 + (T - m) W with m = min(T, max(0, W - c)).
Without a window K = S = c + T and P = T c + T (T + 1)/2.

>>> from symroof.symbols import T
>>> context(1, 4095, None)                      # decode at S = 4096
(4096, 4096)
>>> context(1, 10_000, 4096)                    # the window clips it
(4096, 4096)
>>> context(T, 0, 4096)[1].subs(T, 8192)        # prefill 8192: 4096 rows full, 4096 growing
25167872
"""

from __future__ import annotations

from typing import Any, NamedTuple

import sympy as sp

from ..conventions import current
from ..cost import Cost
from . import rows as rw

__all__ = ["Heads", "Pairs", "context", "pairs", "counted_pairs", "softmax_flops", "fused_bytes",
           "blocks", "core", "core_rows", "CORE_MODES", "kv_passes"]

#: forms of the attention core a forward step can take (training takes naive and fused)
CORE_MODES = ("naive", "fused", "flash")


class Heads(NamedTuple):
    """What the core multiplies: H query heads of width d_k, outputs of width d_v; per
    cached position, ``k_elems`` key and ``v_elems`` value elements (every KV head);
    ``shared``: the values are part of the keys (MLA's latent), read once by a fused core."""

    H: Any
    d_k: Any
    d_v: Any
    k_elems: Any
    v_elems: Any
    shared: bool = False


def context(T: Any, c: Any, window: Any) -> tuple[sp.Expr, sp.Expr]:
    """(K, P): keys read per sequence, allowed (query, key) pairs per sequence and head."""
    T, c = sp.sympify(T), sp.sympify(c)
    if window is None:
        return c + T, T * c + T * (T + 1) / 2
    W = window
    m = sp.Min(T, sp.Max(0, W - c))
    return T + sp.Min(c, W - 1), m * c + m * (m + 1) / 2 + (T - m) * W


class Pairs(NamedTuple):
    """What a step's attention core attends, per sequence and head (:func:`counted_pairs`)."""

    K: Any  # keys read
    executed: Any  # (query, key) pairs a naive core evaluates
    useful: Any  # of those, the ones counted as useful
    cached: Any  # cached positions the queries attend (the blockwise kernel's blocks)


def counted_pairs(T: Any, c: Any, window: Any) -> Pairs:
    """Keys read per sequence, and the (query, key) pairs per sequence and head a naive core
    executes and counts as useful, under ``attention_pairs``: "causal" executes all T x K
    and counts :func:`context`'s P; "all" counts every one of the T x K; "new"
    (llm-analysis) executes and counts the T x T pairs of the new tokens only, the c cached
    positions unattended.

    >>> from symroof.conventions import using
    >>> counted_pairs(1, 99, None)                # decode: 100 pairs, all of them useful
    Pairs(K=100, executed=100, useful=100, cached=99)
    >>> with using("llm-analysis"):
    ...     counted_pairs(1, 99, None)   # one pair, the 99 cached keys unattended
    Pairs(K=100, executed=1, useful=1, cached=0)
    """
    K, P = context(T, c, window)
    rule, T = current().attention_pairs, sp.sympify(T)
    if rule == "new":
        return Pairs(K, T ** 2, T ** 2, sp.Integer(0))
    return Pairs(K, T * K, P if rule == "causal" else T * K, sp.sympify(c))


def pairs(T: Any, c: Any, window: Any) -> tuple[sp.Expr, sp.Expr]:
    """(K, P) of :func:`counted_pairs`: keys read, useful pairs per sequence and head.

    >>> from symroof.conventions import using
    >>> with using("llm-viewer"):
    ...     pairs(4, 0, None)
    (4, 16)
    """
    pairs = counted_pairs(T, c, window)
    return pairs.K, pairs.useful


def softmax_flops(rows: Any, elements: Any, useful: Any) -> tuple[Any, Any]:
    """(executed, useful) softmax FLOPs of ``rows`` rows, ``elements`` scores in all,
    ``useful`` of them unmasked: scale, max, subtract, exp, sum, divide, 6n - 2 a row
    (:func:`symroof.ops.softmax`), or ``softmax_flops`` per element.

    >>> from symroof.symbols import B, S
    >>> softmax_flops(B, B * S, B * S)
    (6*B*S - 2*B, 6*B*S - 2*B)
    """
    per = current().softmax_flops
    if per == "exact":  # one exp an element (transcendentals)
        return (6 * elements - 2 * rows - rw.transcendental(elements),
                6 * useful - 2 * rows - rw.transcendental(useful))
    return per * elements, per * useful


def fused_bytes(B: Any, T: Any, K: Any, h: Heads, *, ab: Any, kvb: Any
                ) -> tuple[Any, Any, Any]:
    """(activation, activation written, KV read) bytes of a fused attention core: Q read
    and O written, K and V read once; or (``fused_core="per-query-block"``, LLM-Viewer's
    FlashAttention-2 estimate) K and V of all H heads re-read for each block of d_k query
    rows, O written twice at T x K.

    >>> from symroof.symbols import B, S, d_h, H
    >>> fused_bytes(B, 1, S, Heads(H, d_h, d_h, d_h, d_h), ab=2, kvb=2)
    (4*B*H*d_h, 2*B*H*d_h, 4*B*S*d_h)
    """
    q = B * T * h.H * h.d_k * ab  # Q read
    if current().fused_core == "once":
        reads = h.k_elems + (0 if h.shared else h.v_elems)
        o = B * T * h.H * h.d_v * ab
        return q + o, o, B * K * reads * kvb
    q_blocks = sp.ceiling(sp.sympify(T) / h.d_k)
    o = 2 * B * h.H * T * K * ab
    return q + o, o, q_blocks * B * K * h.H * (h.d_k + h.d_v) * kvb


def _below(N: Any, b: Any) -> sp.Expr:
    """sum over p = 0 .. N-1 of floor(p / b), in closed form."""
    q = sp.floor(N / b)
    return b * q * (q - 1) / 2 + (N - b * q) * q


def blocks(T: Any, c: Any, window: Any, b: Any) -> sp.Expr:
    """Sum over the step's query rows of J, the KV blocks (of b positions, aligned to 0) that
    hold at least one key the row may see: row p spans blocks floor(lo/b) .. floor(p/b).

    >>> blocks(1, 2047, None, 128), blocks(4, 0, None, 2), blocks(1, 9, 4, 4)
    (16, 6, 2)
    """
    T, c, b = sp.sympify(T), sp.sympify(c), sp.sympify(b)
    J = _below(c + T, b) - _below(c, b) + T
    if window is not None:
        J -= _below(sp.Max(0, c + T - window + 1), b) - _below(sp.Max(0, c - window + 1), b)
    return J


def _capped(cap: int, n: Any) -> Any:
    """FLOPs of a softcap (divide, tanh, multiply) over n scores, if there is one."""
    return cap * n - rw.transcendental(n) if cap else 0


def kv_passes() -> int:
    """Times the KV cache crosses memory in a step under the conventions in force
    (``kv_traffic``): 1 read, or 2 (read, and written back at its final length: every pass
    after the first a store); the core rows and the whole-model cost both read it.

    >>> from symroof.conventions import using
    >>> with using("llm-analysis"):
    ...     kv_passes()
    2
    """
    return 1 if current().kv_traffic == "read" else 2


def core(mode: str, B: Any, T: Any, c: Any, h: Heads, *, window: Any, ab: Any, kvb: Any,
         softcap: bool = False, block: Any = 128) -> dict[str, Cost]:
    """The attention core's rows for one layer: naive (scores, softmax, av, the score matrix
    through memory), fused (one row: useful FLOPs of the three, K and V read once) or flash
    (one row: the FLOPs of the blockwise online-softmax kernel the NumPy twin runs).

    >>> from symroof.symbols import B, S, d_h, H
    >>> h = Heads(H, d_h, d_h, d_h, d_h)
    >>> core("fused", B, 1, S - 1, h, window=None, ab=2, kvb=2)["attn/core"].kv_bytes
    4*B*S*d_h
    """
    cv = current()
    K, X, P, seen = counted_pairs(T, c, window)
    H, d_k, d_v = h.H, h.d_k, h.d_v
    n, cap = B * T, (3 if softcap else 0)
    kv_factor = kv_passes()
    kv_stored = kv_factor - 1  # of the passes over the cache, those that write it back
    soft, soft_useful = softmax_flops(B * H * T, B * H * X, B * H * P)
    if mode == "naive":
        q_heads = H if cv.prefill_q_heads == "H" else \
            h.k_elems / d_k + (H - h.k_elems / d_k) * sp.Min(1, c)  # KV heads if c = 0
        scores = B * H * X * ab  # the score (and probability) matrix, at the executed pairs
        k_cache, v_cache = B * K * h.k_elems * kvb, B * K * h.v_elems * kvb
        return {  # scores: reads Q and K, writes s; softmax: s to p; av: reads p and V, writes o
            "attn/scores": Cost(flops=rw.mac_flops(B * H * X * d_k),
                                useful_flops=rw.mac_flops(B * H * P * d_k),
                                kv_bytes=kv_factor * k_cache, kv_store_bytes=kv_stored * k_cache,
                                act_bytes=n * q_heads * d_k * ab + scores,
                                act_store_bytes=scores),
            "attn/softmax": Cost(flops=soft + _capped(cap, B * H * X),
                                 useful_flops=soft_useful + _capped(cap, B * H * P),
                                 act_bytes=2 * scores, act_store_bytes=scores),
            "attn/av": Cost(flops=rw.mac_flops(B * H * X * d_v),
                            useful_flops=rw.mac_flops(B * H * P * d_v),
                            kv_bytes=kv_factor * v_cache, kv_store_bytes=kv_stored * v_cache,
                            act_bytes=scores + n * H * d_v * ab,
                            act_store_bytes=n * H * d_v * ab),
        }
    matmuls = rw.mac_flops(B * H * P * (d_k + d_v))
    if mode == "fused":
        flops = matmuls + soft_useful + _capped(cap, B * H * P)
    else:  # per row: 5n - 2, 3 per extra block (new max, its exp, rescale l), o: d_v (2J - 1)
        J = blocks(T, seen, window, block)
        flops = matmuls + B * H * ((5 + cap) * P - 2 * T + 3 * (J - T) + d_v * (2 * J - T))
    act, written, kv = fused_bytes(B, T, K, h, ab=ab, kvb=kvb)
    return {"attn/core": Cost(flops=flops, kv_bytes=kv_factor * kv, act_bytes=act,
                              act_store_bytes=written, kv_store_bytes=kv_stored * kv)}


def core_rows(a: Any, L: Any, mode: str, B: Any, T: Any, c: Any, s: Any) -> dict[str, Cost]:
    """The core rows of L layers of attention block ``a``: its windowed layers' and its
    global ones' (``s`` the stream: bytes per element).

    >>> from symroof.models import model
    >>> m = model("gemma-2-9b")                    # 21 local, 21 global
    >>> rows = core_rows(m.blocks.attention, m.L, "fused", 1, 1, 8191, m.blocks.stream)
    >>> rows["attn/core"].kv_bytes == 21 * (4096 + 8192) * 2 * 8 * 256 * 2
    True
    """
    kw = dict(ab=s.ab, kvb=s.kvb, softcap=a.softcap is not None, block=a.block)
    local = a.local_layers(L)
    out: dict[str, Cost] = {}
    for layers, window in ((L - local, None), (local, a.window)):
        if layers != 0:
            for key, cost in core(mode, B, T, c, a.heads(), window=window, **kw).items():
                out[key] = out.get(key, Cost()) + layers * cost
    return out


def _into_cache() -> bool:
    """Whether the k and v projections write the cache themselves (``kv_written_by``)."""
    return current().kv_written_by == "projection"


def standard(a: Any, n: Any, T: Any, pos: Any, s: Any) -> dict[str, Cost]:
    """One layer's rows of GQA attention block ``a`` before the core: q/k/v (or one fused
    qkv) projections with their biases, per-head q/k norms (Qwen3), the positions' RoPE on
    the rotated dims, the KV write (the norm before it is the layer's).

    >>> from symroof.models import model
    >>> b = model("pythia-160m").blocks
    >>> list(standard(b.attention, 1, 1, b.positions, b.stream))
    ['attn/qkv_proj', 'attn/rope', 'attn/kv_write']
    """
    D, H, G, d_h, ab, wb, kvb = s.D, a.H, a.G, a.d_h, s.ab, s.wb, s.kvb
    rows = {}
    into_cache = _into_cache()  # k, v written by their projections

    def project(heads: Any, kv_heads: Any) -> Cost:
        cost = rw.linear(n, D, heads * d_h, ab=ab, wb=wb, bias=a.qkv_bias)
        if not into_cache:
            return cost
        moved = n * kv_heads * d_h  # k and v go to the cache, not to activations
        return cost + Cost(act_bytes=-moved * ab, act_store_bytes=-moved * ab,
                           kv_bytes=moved * kvb, kv_store_bytes=moved * kvb)

    if a.fused_qkv:
        rows["attn/qkv_proj"] = project(H + 2 * G, 2 * G)
    else:
        for name, heads in (("q", H), ("k", G), ("v", G)):
            rows[f"attn/{name}_proj"] = project(heads, 0 if name == "q" else G)
    if a.qk_norm:  # Qwen3: an RMSNorm of width d_h on each query head and each key head
        rows["attn/q_norm"] = rw.norm("rms", n * H, d_h, ab=ab, wb=wb)
        rows["attn/k_norm"] = rw.norm("rms", n * G, d_h, ab=ab, wb=wb)
    rows |= pos.rope_row(n, H + G, pos.rotated(d_h), T, s)
    if not into_cache:
        rows["attn/kv_write"] = Cost(kv_bytes=2 * n * G * d_h * kvb,  # reads k, v; writes
                                     kv_store_bytes=2 * n * G * d_h * kvb,  # the cache
                                     act_bytes=2 * n * G * d_h * ab)
    return rows


def standard_heads(a: Any) -> Heads:
    """What the core of GQA attention block ``a`` multiplies."""
    return Heads(a.H, a.d_h, a.d_h, a.G * a.d_h, a.G * a.d_h)


def mla(a: Any, n: Any, T: Any, s: Any) -> dict[str, Cost]:
    """One layer's rows of multi-head latent attention (block ``a``, its record
    ``a.latent``) before the core (docs/accounting.md, "Multi-head latent attention"); the
    rows after it are :func:`mla_after`.

    >>> from symroof.models import model
    >>> b = model("deepseek-v3").blocks
    >>> mla(b.attention, 1, 1, b.stream)["attn/kv_write"].kv_bytes   # 512 + 64, bf16
    1152
    """
    m, D, H, ab, wb, kvb = a.latent, s.D, a.H, s.ab, s.wb, s.kvb
    if _into_cache():
        raise ValueError("convention kv_written_by='projection' applies to GQA attention; MLA "
                         "writes its latent in its own row (use kv_written_by='row')")
    rows = {}
    if m.q_rank is not None:
        rows["attn/q_a_proj"] = rw.linear(n, D, m.q_rank, ab=ab, wb=wb)
        rows["attn/q_a_norm"] = rw.norm("rms", n, m.q_rank, ab=ab, wb=wb)
        rows["attn/q_b_proj"] = rw.linear(n, m.q_rank, H * m.d_qk, ab=ab, wb=wb)
    else:
        rows["attn/q_proj"] = rw.linear(n, D, H * m.d_qk, ab=ab, wb=wb)
    rows["attn/kv_a_proj"] = rw.linear(n, D, m.kv_rank + m.d_rope, ab=ab, wb=wb)
    rows["attn/kv_a_norm"] = rw.norm("rms", n, m.kv_rank, ab=ab, wb=wb)
    rows["attn/rope"] = rw.rope(n, H + 1, m.d_rope, T, ab=ab)  # q's RoPE part, the shared key
    if m.absorb:  # cache the latent and the RoPE key; W_UK folds into the query
        rows["attn/kv_write"] = Cost(kv_bytes=n * m.cache_per_token * kvb,
                                     kv_store_bytes=n * m.cache_per_token * kvb,
                                     act_bytes=n * m.cache_per_token * ab)
        rows["attn/q_absorb"] = Cost(flops=2 * n * H * m.d_nope * m.kv_rank,
                                     weight_bytes=H * m.d_nope * m.kv_rank * wb,
                                     act_bytes=n * H * (m.d_nope + m.kv_rank) * ab,
                                     act_store_bytes=n * H * m.kv_rank * ab)
        return rows
    rows["attn/kv_b_proj"] = rw.linear(n, m.kv_rank, H * (m.d_nope + m.d_v), ab=ab, wb=wb)
    rows["attn/kv_write"] = Cost(  # reads k_nope, the RoPE key once, v; writes per-head k, v
        kv_bytes=n * H * (m.d_qk + m.d_v) * kvb, kv_store_bytes=n * H * (m.d_qk + m.d_v) * kvb,
        act_bytes=n * (H * m.d_nope + m.d_rope + H * m.d_v) * ab)
    return rows


def mla_heads(a: Any) -> Heads:
    """What the core of latent attention block ``a`` multiplies."""
    m = a.latent
    if m.absorb:  # q = [q_nope W_UK, q_rope] against [c_kv, k_rope]; o in the latent
        return Heads(a.H, m.kv_rank + m.d_rope, m.kv_rank, m.cache_per_token, m.kv_rank, True)
    return Heads(a.H, m.d_qk, m.d_v, a.H * m.d_qk, a.H * m.d_v)


def mla_after(a: Any, n: Any, s: Any) -> dict[str, Cost]:
    """The absorbed form's W_UV on the latent output (before o_proj)."""
    m = a.latent
    if not m.absorb:
        return {}
    return {"attn/o_absorb": Cost(flops=2 * n * a.H * m.kv_rank * m.d_v,
                                  weight_bytes=a.H * m.kv_rank * m.d_v * s.wb,
                                  act_bytes=n * a.H * (m.kv_rank + m.d_v) * s.ab,
                                  act_store_bytes=n * a.H * m.d_v * s.ab)}
