"""A Llama-family decoder as symbolic costs: parameters, per-op costs of a forward step,
and the whole-model summaries of lecture 1.

Every op of one forward step is a row of an ordered ``dict[str, Cost]`` with a path key
(``"attn/q_proj"``, ``"mlp/down"``); per-layer rows hold all L layers. The conventions,
op by op, are in docs/accounting.md; the NumPy model in :mod:`symroof.numeric` counts the
same rows independently and :func:`symroof.check` compares the two exactly.

>>> from symroof.symbols import B, S
>>> m = Transformer()                   # every dimension a symbol
>>> m.flops_per_token(S)
2*D*V + 4*H*L*S*d_h + 2*L*(3*D*F + 2*D*G*d_h + 2*D*H*d_h)
>>> sorted(m.ops(B, 1, S - 1))[:3]
['attn/av', 'attn/k_proj', 'attn/kv_write']
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import sympy as sp

from .. import ops as op
from ..cost import Cost, as_dimension, as_exact
from ..symbols import D, F, G, H, L, V, d_h

__all__ = ["Transformer", "OP_GROUPS", "group", "ATTENTION_MODES"]

ATTENTION_MODES = ("naive", "fused")

#: Op groups: group name -> the row keys it merges (docs/accounting.md).
OP_GROUPS: dict[str, list[str]] = {
    "embedding": ["embed"],
    "norms": ["attn_norm", "mlp_norm", "final_norm"],
    "attention projections": ["attn/q_proj", "attn/k_proj", "attn/v_proj", "attn/o_proj"],
    "attention core": ["attn/scores", "attn/softmax", "attn/av", "attn/core"],
    "KV write": ["attn/kv_write"],
    "MLP": ["mlp/gate", "mlp/up", "mlp/down"],
    "elementwise": ["attn/rope", "mlp/swiglu", "attn/residual", "mlp/residual"],
    "lm_head": ["lm_head"],
}


def group(rows: dict[str, Cost], groups: dict[str, list[str]] | None = None) -> dict[str, Cost]:
    """Merge rows into groups (sums of their rows; groups with no rows are left out)."""
    groups = OP_GROUPS if groups is None else groups
    known = {k for keys in groups.values() for k in keys}
    unknown = set(rows) - known
    if unknown:
        raise ValueError(f"rows {sorted(unknown)} belong to no group")
    return {name: sum(rows[k] for k in keys if k in rows)
            for name, keys in groups.items() if any(k in rows for k in keys)}


def _nonneg(value: Any, name: str) -> sp.Expr:
    if isinstance(value, (int, sp.Integer)) and not isinstance(value, bool) and value == 0:
        return sp.Integer(0)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    return as_dimension(value, name)


@dataclass(frozen=True)
class Transformer:
    """A Llama-style decoder: RMSNorm, RoPE, GQA attention, SwiGLU MLP, (un)tied embeddings.

    Dimensions default to the table's symbols; byte widths default to 2 (bf16). ``window``
    is a sliding-window length (Mistral-7B-v0.1: 4096): the formulas hold for contexts up to
    it, and a step whose context exceeds it is refused rather than mis-counted.

    >>> m = Transformer(D=4096, F=14336, L=32, H=32, G=8, d_h=128, V=128256)
    >>> m.params
    8030261248
    """

    D: Any = D
    F: Any = F
    L: Any = L
    H: Any = H
    G: Any = G
    d_h: Any = d_h
    V: Any = V
    tied: bool = False
    qkv_bias: bool = False
    window: Any = None
    w_bytes: Any = 2
    act_bytes: Any = 2
    kv_bytes: Any = 2
    name: str = "custom"
    source: str = ""

    def __post_init__(self) -> None:
        for dim in ("D", "F", "L", "H", "G", "d_h", "V"):
            object.__setattr__(self, dim, as_dimension(getattr(self, dim), dim))
        for flag in ("tied", "qkv_bias"):
            if not isinstance(getattr(self, flag), bool):
                raise ValueError(f"{flag} must be True or False, got {getattr(self, flag)!r}")
        if self.window is not None:
            object.__setattr__(self, "window", as_dimension(self.window, "window"))
        for width in ("w_bytes", "act_bytes", "kv_bytes"):
            value = as_exact(getattr(self, width), width)
            if value.is_positive is not True:
                raise ValueError(f"{width} must be a positive number of bytes, got "
                                 f"{getattr(self, width)!r}")
            object.__setattr__(self, width, value)
        ratio = self.H / self.G
        if self.H.is_number and self.G.is_number and not ratio.is_integer:
            raise ValueError(f"H ({self.H}) must be divisible by G ({self.G}): each KV head "
                             "serves H/G query heads")

    def _context(self, S: sp.Expr) -> sp.Expr:
        if self.window is not None and S.is_number and self.window.is_number and S > self.window:
            raise ValueError(f"context {S} (cached + new_tokens) exceeds {self.name}'s sliding "
                             f"window of {self.window} tokens, which symroof does not model")
        return S

    def replace(self, **changes: Any) -> Transformer:
        """A copy with changed fields (``m.replace(w_bytes=1)`` for int8 weights)."""
        return replace(self, **changes)

    def subs(self, mapping: dict | None = None, **kwargs: Any) -> Transformer:
        """Substitute numbers for symbolic dimensions: ``Transformer().subs(D=64, ...)``."""
        from ..cost import _check_substitution

        values = _check_substitution({**(mapping or {}), **kwargs})
        dims = {k: sp.sympify(getattr(self, k)).subs(values)
                for k in ("D", "F", "L", "H", "G", "d_h", "V")}
        return replace(self, **dims)

    # -- parameters ----------------------------------------------------------------------
    @property
    def attn_params_per_layer(self) -> sp.Expr:
        """Wq + Wk + Wv + Wo: D.H.d_h + 2.D.G.d_h + H.d_h.D (+ q/k/v biases)."""
        D, H, G, d_h = self.D, self.H, self.G, self.d_h
        bias = (H + 2 * G) * d_h if self.qkv_bias else 0
        return D * H * d_h + 2 * D * G * d_h + H * d_h * D + bias

    @property
    def mlp_params_per_layer(self) -> sp.Expr:
        """W_gate + W_up + W_down: 3.D.F."""
        return 3 * self.D * self.F

    def param_breakdown(self) -> dict[str, sp.Expr]:
        """Parameters by part; ``params`` is their sum."""
        return {
            "embedding": self.V * self.D,
            "attention": self.L * self.attn_params_per_layer,
            "mlp": self.L * self.mlp_params_per_layer,
            "norms": (2 * self.L + 1) * self.D,
            "lm_head": sp.Integer(0) if self.tied else self.V * self.D,
        }

    @property
    def params(self) -> sp.Expr:
        return sum(self.param_breakdown().values())

    @property
    def matmul_params(self) -> sp.Expr:
        """Parameters a token multiplies by: every layer's matrices and the lm_head (tied or
        not); not the embedding gather, norms or biases."""
        D, H, G, d_h = self.D, self.H, self.G, self.d_h
        per_layer = D * H * d_h + 2 * D * G * d_h + H * d_h * D + self.mlp_params_per_layer
        return self.L * per_layer + self.V * self.D

    @property
    def kv_bytes_per_token(self) -> sp.Expr:
        """K and V of one token in every layer: 2.L.G.d_h x kv_bytes."""
        return 2 * self.L * self.G * self.d_h * self.kv_bytes

    # -- one forward step, op by op -----------------------------------------------------
    def ops(self, batch: Any, new_tokens: Any, cached: Any = 0, last_only: bool = False,
            attention: str = "naive") -> dict[str, Cost]:
        """Costs of every op of one forward step over ``batch`` sequences, each adding
        ``new_tokens`` to ``cached`` ones (S = cached + new_tokens), as ``dict[str, Cost]``.

        >>> from symroof.symbols import B, T
        >>> rows = Transformer().ops(B, T, 0)
        >>> rows["mlp/down"].flops
        2*B*D*F*L*T
        """
        if attention not in ATTENTION_MODES:
            raise ValueError(f"attention must be one of {ATTENTION_MODES}, got {attention!r}")
        B = as_dimension(batch, "batch")
        T = as_dimension(new_tokens, "new_tokens")
        c = _nonneg(cached, "cached")
        S = self._context(c + T)
        D, F, L, H, G, d_h, V = self.D, self.F, self.L, self.H, self.G, self.d_h, self.V
        wb, ab, kvb = self.w_bytes, self.act_bytes, self.kv_bytes
        n = B * T
        pairs = T * c + T * (T + 1) / 2  # allowed (query, key) pairs, causal

        def proj(d_in: Any, d_out: Any, bias: bool = False) -> Cost:
            mm = op.matmul(n, d_in, d_out, x_bytes=ab, w_bytes=wb, out_bytes=ab)
            if not bias:
                return mm
            return mm + Cost(flops=n * d_out, weight_bytes=d_out * wb)

        layer = {
            "attn_norm": op.rmsnorm(n, D, x_bytes=ab, w_bytes=wb),
            "attn/q_proj": proj(D, H * d_h, self.qkv_bias),
            "attn/k_proj": proj(D, G * d_h, self.qkv_bias),
            "attn/v_proj": proj(D, G * d_h, self.qkv_bias),
            "attn/rope": op.rope(n * (H + G) * d_h, table=T * d_h, x_bytes=ab),
            "attn/kv_write": Cost(kv_bytes=2 * n * G * d_h * kvb, act_bytes=2 * n * G * d_h * ab),
        }
        qk = 2 * B * H * T * S * d_h
        useful_qk = 2 * B * H * pairs * d_h
        if attention == "naive":
            layer["attn/scores"] = Cost(flops=qk, useful_flops=useful_qk,
                                        kv_bytes=B * S * G * d_h * kvb,
                                        act_bytes=(n * H * d_h + B * H * T * S) * ab)
            layer["attn/softmax"] = op.softmax(B * H * T, S, useful_elements=B * H * pairs,
                                               x_bytes=ab)
            layer["attn/av"] = Cost(flops=qk, useful_flops=useful_qk,
                                    kv_bytes=B * S * G * d_h * kvb,
                                    act_bytes=(B * H * T * S + n * H * d_h) * ab)
        else:
            useful = 2 * useful_qk + 6 * B * H * pairs - 2 * B * H * T
            layer["attn/core"] = Cost(flops=useful, kv_bytes=2 * B * S * G * d_h * kvb,
                                      act_bytes=2 * n * H * d_h * ab)
        layer |= {
            "attn/o_proj": proj(H * d_h, D),
            "attn/residual": op.add(n * D, x_bytes=ab),
            "mlp_norm": op.rmsnorm(n, D, x_bytes=ab, w_bytes=wb),
            "mlp/gate": proj(D, F),
            "mlp/up": proj(D, F),
            "mlp/swiglu": op.swiglu(n * F, x_bytes=ab),
            "mlp/down": proj(F, D),
            "mlp/residual": op.add(n * D, x_bytes=ab),
        }
        n_out = B if last_only else n
        return {
            "embed": Cost(weight_bytes=n * D * wb, act_bytes=n * D * ab),
            **{key: L * cost for key, cost in layer.items()},
            "final_norm": op.rmsnorm(n_out, D, x_bytes=ab, w_bytes=wb),
            "lm_head": op.matmul(n_out, D, V, x_bytes=ab, w_bytes=wb, out_bytes=ab),
        }

    # -- lecture 1's whole-model summaries ----------------------------------------------
    def attn_flops_per_token(self, S: Any) -> sp.Expr:
        """Attention-core FLOPs of one token attending to S positions: 4.L.H.d_h.S."""
        return 4 * self.L * self.H * self.d_h * sp.sympify(S)

    def flops_per_token(self, S: Any) -> sp.Expr:
        """2 x matmul parameters + attention over a context of S."""
        return 2 * self.matmul_params + self.attn_flops_per_token(S)

    def whole(self, batch: Any, new_tokens: Any, cached: Any = 0) -> Cost:
        """One whole-model roofline cost of a step (lecture 1): useful FLOPs of the matmuls
        (lm_head on every new token) and the causal attention core; bytes of the matmul
        weights and of the KV cache read; activations ignored.

        >>> from symroof.symbols import B, S
        >>> Transformer().whole(B, 1, S - 1).kv_bytes
        4*B*G*L*S*d_h
        """
        B = as_dimension(batch, "batch")
        T = as_dimension(new_tokens, "new_tokens")
        c = _nonneg(cached, "cached")
        self._context(c + T)
        pairs = T * c + T * (T + 1) / 2
        flops = B * (T * 2 * self.matmul_params
                     + self.attn_flops_per_token(1) * pairs)
        return Cost(flops=flops, weight_bytes=self.matmul_params * self.w_bytes,
                    kv_bytes=B * (c + T) * self.kv_bytes_per_token)

    @classmethod
    def from_hf_config(cls, config: Any) -> Transformer:
        """Read a Llama-style Hugging Face ``config.json`` (path or dict); see
        :func:`symroof.models.from_hf_config`."""
        from .presets import from_hf_config

        return from_hf_config(config)
