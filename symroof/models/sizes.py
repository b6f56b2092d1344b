"""What a :class:`~symroof.models.Transformer` weighs and costs as a whole: parameters
(total, by part, multiplied by a token, activated), the KV cache, and lecture 1's
whole-model roofline. A mixin: the transformer's fields are its input.

>>> from symroof.models import Transformer
>>> from symroof.symbols import S
>>> Transformer().attn_flops_per_token(S)
4*H*L*S*d_h
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from ..conventions import using
from ..cost import Cost, as_dimension
from ..workload import as_step
from . import attention_rows as ar
from . import rows as rw
from .compiled_whole import whole_numbers

__all__ = ["Sizes"]


class Sizes:
    """Parameters, KV cache and whole-model costs, from the transformer's fields."""

    # -- layer kinds ---------------------------------------------------------------------
    @property
    def local_layers(self) -> sp.Expr:
        """Layers that attend within the sliding window (``window_pattern`` repeated)."""
        return self.blocks.attention.local_layers(self.L)

    @property
    def moe_layers(self) -> sp.Expr:
        """Layers whose MLP is the mixture of experts."""
        return self.blocks.moe_layers

    @property
    def dense_layers(self) -> sp.Expr:
        """Layers with a dense MLP of width F."""
        return self.blocks.dense_layers

    @property
    def rotary(self) -> sp.Expr:
        """Dims of a head that RoPE rotates (``rotary_dim``, default d_h)."""
        return self.d_h if self.rotary_dim is None else self.rotary_dim

    # -- parameters ----------------------------------------------------------------------
    @property
    def attn_params_per_layer(self) -> sp.Expr:
        """Wq + Wk + Wv + Wo: D.H.d_h + 2.D.G.d_h + H.d_h.D (+ biases); MLA's own."""
        return self.blocks.attention.params(self.blocks.stream)["attention"]

    @property
    def mlp_params_per_layer(self) -> sp.Expr:
        """A dense MLP: W_gate + W_up + W_down, 3.D.F (ungated 2.D.F; + biases)."""
        return self.blocks.mlp.params(self.blocks.stream)["mlp"]

    def param_breakdown(self) -> dict[str, sp.Expr]:
        """Parameters by part, each block's (:meth:`symroof.models.blocks.Blocks.params`);
        ``params`` is their sum.

        >>> from symroof.models import model
        >>> model("mixtral-8x7b").param_breakdown()["experts"]
        45097156608
        """
        return self.blocks.params()

    @property
    def params(self) -> sp.Expr:
        return sum(self.param_breakdown().values())

    @property
    def active_params(self) -> sp.Expr:
        """Parameters a token uses: all of them but the routed experts it skips (k of E).

        >>> from symroof.models import model
        >>> model("mixtral-8x7b").active_params
        12879925248
        """
        if self.moe is None:
            return self.params
        return self.params - self.moe_layers * self.blocks.experts.skipped_params(
            self.blocks.stream)

    def busiest_expert(self, batch: Any, new_tokens: Any, tokens_per_expert: Any = None
                       ) -> sp.Expr:
        """Tokens the busiest routed expert of an MoE layer takes in a step of n = B T
        tokens: n k / E balanced, n at worst (every token picks it), or the largest of the
        counts given (which is what bounds an expert-parallel chip's work).

        >>> from symroof.models import model
        >>> m = model("mixtral-8x7b")
        >>> m.busiest_expert(64, 1), m.busiest_expert(64, 1, "worst")
        (16, 64)
        """
        from .moe_rows import loads

        if self.moe is None:
            raise ValueError(f"{self.name} has no mixture of experts")
        n = as_dimension(batch, "batch") * as_dimension(new_tokens, "new_tokens")
        layers = int(self.moe_layers) if self.moe_layers.is_Integer else 1
        return sp.Max(*(busiest for _, _, busiest in loads(n, self.moe.E, self.moe.k, layers,
                                                           tokens_per_expert)))

    @property
    def matmul_params(self) -> sp.Expr:
        """Parameters a token multiplies by: every layer's matrices (the router, k routed
        experts and the shared one of an MoE layer) and the lm_head (tied or not); not the
        embedding gather, norms or biases."""
        return self.blocks.matmul_params()

    # -- KV cache and attention ----------------------------------------------------------
    def _cached(self) -> tuple[sp.Expr, sp.Expr, sp.Expr]:
        """Per layer: (K and V elements cached per position, FLOPs per (query, key) pair
        of the two attention matmuls, 2 H (d_k + d_v))."""
        h = self.blocks.attention.heads()
        elems = h.k_elems + (0 if h.shared else h.v_elems)
        return elems, 2 * h.H * (h.d_k + h.d_v), h

    @property
    def kv_bytes_per_token(self) -> sp.Expr:
        """K and V of one token in every layer: 2.L.G.d_h x kv_bytes (MLA absorbed:
        L (kv_rank + d_rope) kv_bytes); a window caps how many tokens a layer keeps."""
        return self.L * self._cached()[0] * self.kv_bytes

    def kv_cache_bytes(self, S: Any) -> sp.Expr:
        """The KV cache one sequence reads at context S: S x ``kv_bytes_per_token``, with a
        windowed layer's part capped at its window.

        >>> from symroof.models import model
        >>> m = model("mistral-7b")
        >>> m.kv_cache_bytes(32768) == 4096 * m.kv_bytes_per_token
        True
        """
        S, per = sp.sympify(S), self.kv_bytes_per_token / self.L
        local = self.local_layers
        clipped = 0 if local == 0 else local * per * sp.Min(S, self.window)
        return (self.L - local) * per * S + clipped

    def attn_flops_per_token(self, S: Any) -> sp.Expr:
        """Attention-core FLOPs of one token attending to S positions: 4.L.H.d_h.S (a
        windowed layer attends to min(S, window))."""
        S = sp.sympify(S)
        per = self._cached()[1]
        local = self.local_layers
        clipped = 0 if local == 0 else local * per * sp.Min(S, self.window)
        return (self.L - local) * per * S + clipped

    def flops_per_token(self, S: Any) -> sp.Expr:
        """2 x matmul parameters + attention over a context of S."""
        return 2 * self.matmul_params + self.attn_flops_per_token(S)

    def whole(self, batch: Any, new_tokens: Any = None, cached: Any = 0,
              last_only: bool = False, conventions: Any = None) -> Cost:
        """One whole-model roofline cost of a step (lecture 1): useful FLOPs of the matmuls
        (an MoE token's k experts) and the causal attention core; bytes of the matmul weights
        (every expert a balanced step reaches) and of the KV cache read; activations ignored.
        The lm_head runs on every new token (lecture 1's formula), or with ``last_only`` on
        the last position of each sequence, the rule of the per-op rows
        (``ops(..., last_only=True)``): a table and ``step_time`` use one rule for both.

        >>> from symroof.symbols import B, S
        >>> from symroof.models import Transformer
        >>> Transformer().whole(B, 1, S - 1).kv_bytes
        4*B*G*L*S*d_h

        ``conventions`` (default: those in force) count it as they count the rows'
        contractions: FLOPs per multiply-add (``flops_per_mac``, the lm_head's
        ``lm_head_flops_per_mac``), the attention pairs, ``kv_traffic`` (the cache read, or
        read and written back) and ``head_dim``; so its FLOPs are the useful FLOPs of the
        matmul and attention-core rows, its bytes their weights and the naive core's KV
        reads, and the other fields (elementwise FLOPs, activations, the fused core's
        re-reads) add to the per-op sum only:

        >>> m = Transformer()
        >>> (m.whole(B, S, 0, conventions="book").flops - m.whole(B, S, 0).flops).factor()
        2*B*H*L*S*d_h*(S - 1)
        """
        fast = whole_numbers(self, batch, new_tokens, cached, last_only, conventions)
        if fast is not None:  # plain ints: the derivation compiled once (compiled_whole)
            return fast
        with using(conventions):
            return self._whole(batch, new_tokens, cached, last_only)

    def _whole(self, batch: Any, new_tokens: Any, cached: Any, last_only: bool) -> Cost:
        # the head width the conventions in force count (head_dim), as the per-op rows do
        return self._counted()._whole_of(batch, new_tokens, cached, last_only)

    def _whole_of(self, batch: Any, new_tokens: Any, cached: Any, last_only: bool) -> Cost:
        B, T, c = as_step(batch, new_tokens, cached)  # batch may be a Step
        elems, per_pair, _ = self._cached()
        head = self.V * self.D  # the lm_head's matrix, on B T rows or (last_only) on B
        macs, cache = B * T * (self.matmul_params - head), 0  # cache: one pass over it
        local = self.local_layers
        for layers, window in ((self.L - local, None), (local, self.window)):
            if layers != 0:
                K, P = ar.pairs(T, c, window)  # causal, or all (attention_pairs)
                macs += layers * B * per_pair * P / 2
                cache += layers * B * K * elems * self.kv_bytes
        weights = self.matmul_params
        if self.moe is not None:  # a balanced step reads min(E, n k) experts, not k
            reached = sp.Min(self.moe.E, B * T * self.moe.k) - self.moe.k
            weights += self.moe_layers * reached * self.moe.expert_params(self.D)
        # FLOPs per multiply-add as the rows count them (flops_per_mac, lm_head_flops_per_mac)
        flops = rw.mac_flops(macs) + rw.lm_head_flops((B if last_only else B * T) * head)
        passes = ar.kv_passes()  # kv_traffic: read, or read and written back (a store)
        return Cost(flops=flops, weight_bytes=weights * self.w_bytes, kv_bytes=passes * cache,
                    kv_store_bytes=(passes - 1) * cache)
