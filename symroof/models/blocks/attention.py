"""The attention block: grouped-query attention (MHA when G = H, MQA when G = 1) with
optional biases, a fused qkv projection and per-head q/k RMSNorms (Qwen3), or multi-head
latent attention (``latent``, DeepSeek); a sliding window on the layers its pattern marks,
a softcap on the scores (Gemma-2), and the KV block of the flash core.

Its rows are built by :mod:`symroof.models.attention_rows` (the formulas and the
conventions they read); this block says which, and owns the parameters, the twin's fields
and the operand arrays.

>>> from symroof.symbols import B, D, H, G, d_h
>>> a = Attention(qk_norm=True)
>>> a.params(Stream(D, 2, 2, 2))["attention"]
2*D*G*d_h + 2*D*H*d_h + 2*d_h
>>> print(a.arrays()["W_q"])
[D, H, d_h] weight
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sympy as sp

from ...cost import Cost
from ...numeric.spec import AttentionSpec, MLASpec
from ...symbols import G as _G
from ...symbols import H as _H
from ...symbols import d_h as _d_h
from .. import attention_rows as ar
from .. import backward as bw
from .. import rows as rw
from ..spec import MLA
from . import latent
from .backprop import Graph, Widths
from .base import Array, Stream, Uses, cap, plain

__all__ = ["Attention"]


@dataclass(frozen=True)
class Attention:
    """H query heads and G KV heads of width d_h; the switches as
    :class:`~symroof.models.Transformer` names them (``qkv_bias``, ``fused_qkv``,
    ``o_bias``, ``qk_norm``; ``softcap`` its ``attn_softcap``, ``block`` its
    ``attn_block``); ``latent``: an :class:`~symroof.models.MLA` record instead of GQA.

    >>> Attention(H=32, G=8, d_h=128).params(Stream(4096, 2, 2, 2))  # Llama-3.1-8B's
    {'attention': 41943040}
    """

    FIELDS = {"H": "H", "G": "G", "d_h": "d_h", "qkv_bias": "qkv_bias",
              "fused_qkv": "fused_qkv", "o_bias": "o_bias", "qk_norm": "qk_norm",
              "softcap": "attn_softcap", "window": "window",
              "window_pattern": "window_pattern", "block": "attn_block", "latent": "mla"}

    H: Any = _H
    G: Any = _G
    d_h: Any = _d_h
    qkv_bias: bool = False
    fused_qkv: bool = False
    o_bias: bool = False
    qk_norm: bool = False
    softcap: Any = None
    window: Any = None
    window_pattern: tuple[bool, ...] = (True,)
    block: Any = 128
    latent: MLA | None = None

    def __post_init__(self) -> None:
        cap(self.softcap, "attn_softcap")
        H, G = sp.sympify(self.H), sp.sympify(self.G)
        if H.is_number and G.is_number and not (H / G).is_integer:
            raise ValueError(f"H ({H}) must be divisible by G ({G}): each KV head serves H/G "
                             "query heads")
        if self.latent is None:
            return
        if not isinstance(self.latent, MLA):
            raise ValueError(f"mla must be an MLA record or None, got {self.latent!r}")
        if self.qk_norm:
            raise ValueError("qk_norm normalises GQA heads; MLA has its own q and kv norms")
        if self.fused_qkv or self.qkv_bias:
            raise ValueError("MLA has its own q and kv projections: no fused_qkv or qkv_bias")

    def local_layers(self, L: Any) -> sp.Expr:
        """Layers of L that attend within the window (``window_pattern`` repeated).

        >>> Attention(window=4096, window_pattern=(True, False)).local_layers(42)
        21
        """
        if self.window is None:
            return sp.Integer(0)
        p, L = self.window_pattern, sp.sympify(L)
        if L.is_Integer:
            return sp.Integer(sum(p[i % len(p)] for i in range(int(L))))
        return L * sp.Rational(sum(p), len(p))

    def heads(self) -> ar.Heads:
        """What the core multiplies (:class:`~symroof.models.attention_rows.Heads`)."""
        return ar.mla_heads(self) if self.latent is not None else ar.standard_heads(self)

    def matmul_params(self, s: Stream) -> sp.Expr:
        """The matrices a token multiplies by in one layer (no norms, no biases)."""
        if self.latent is not None:
            return self.latent.matmul_params(s.D, self.H)
        return s.D * self.H * self.d_h + 2 * s.D * self.G * self.d_h + self.H * self.d_h * s.D

    def matmuls(self) -> tuple[str, ...]:
        """Its rows that multiply by a weight matrix, as a training step runs them (MLA in
        its naive form: no absorbed W_UK, W_UV): each has a dX and a dW row backward.

        >>> Attention(fused_qkv=True).matmuls()
        ('attn/qkv_proj', 'attn/o_proj')
        """
        if self.latent is not None:
            q = ("q_proj",) if self.latent.q_rank is None else ("q_a_proj", "q_b_proj")
            return tuple(f"attn/{k}" for k in (*q, "kv_a_proj", "kv_b_proj", "o_proj"))
        qkv = ("qkv_proj",) if self.fused_qkv else ("q_proj", "k_proj", "v_proj")
        return tuple(f"attn/{k}" for k in (*qkv, "o_proj"))

    def params(self, s: Stream) -> dict[str, sp.Expr]:
        """One layer's parameters: Wq + Wk + Wv + Wo, D.H.d_h + 2.D.G.d_h + H.d_h.D, the
        biases, the q/k norms' 2 d_h; MLA's own (:meth:`~symroof.models.MLA.params_per_layer`)."""
        o = s.D if self.o_bias else 0
        if self.latent is not None:
            return {"attention": self.latent.params_per_layer(s.D, self.H) + o}
        bias = (self.H + 2 * self.G) * self.d_h if self.qkv_bias else 0
        qk_norms = 2 * self.d_h if self.qk_norm else 0  # one weight of d_h for q, one for k
        return {"attention": self.matmul_params(s) + bias + qk_norms + o}

    def rows(self, n: Any, T: Any, pos: Any, s: Stream) -> dict[str, Cost]:
        """One layer's rows before the core (projections, q/k norms, RoPE, KV write).

        >>> from symroof.models.blocks import Rope
        >>> list(Attention(fused_qkv=True).rows(1, 1, Rope(), Stream(8, 2, 2, 2)))
        ['attn/qkv_proj', 'attn/rope', 'attn/kv_write']
        """
        return ar.mla(self, n, T, s) if self.latent is not None else \
            ar.standard(self, n, T, pos, s)

    def core_rows(self, mode: str, L: Any, B: Any, T: Any, c: Any, s: Stream
                  ) -> dict[str, Cost]:
        """The core's rows over L layers (:func:`~symroof.models.attention_rows.core_rows`)."""
        return ar.core_rows(self, L, mode, B, T, c, s)

    def rows_after(self, n: Any, s: Stream) -> dict[str, Cost]:
        """One layer's rows after the core: MLA's W_UV (absorbed), the output projection."""
        d_o = self.H * (self.latent.d_v if self.latent is not None else self.d_h)
        after = ar.mla_after(self, n, s) if self.latent is not None else {}
        return after | {"attn/o_proj": rw.linear(n, d_o, s.D, ab=s.ab, wb=s.wb,
                                                 bias=self.o_bias)}

    def arrays(self) -> dict[str, Array]:
        """Its weights, the KV cache it reads and writes, the query and output activations.

        >>> from symroof.models import MLA
        >>> print(Attention(latent=MLA(512, 128, 64, 128, q_rank=1536)).arrays()["C_kv"])
        [B, S, kv_rank+d_rope] kv
        """
        out: dict[str, Array] = {}
        if self.latent is not None:
            m = self.latent
            if m.q_rank is not None:
                out |= {"W_q_a": Array(("D", "q_rank")), "q_a_norm": Array(("q_rank",)),
                        "W_q_b": Array(("q_rank", "H", "d_qk"))}
            else:
                out["W_q"] = Array(("D", "H", "d_qk"))
            out |= {"W_kv_a": Array(("D", "kv_rank+d_rope")), "kv_a_norm": Array(("kv_rank",)),
                    "W_kv_b": Array(("kv_rank", "H", "d_nope+d_v")),
                    "W_o": Array(("H", "d_v", "D")),
                    "C_kv": Array(("B", "S", "kv_rank+d_rope"), "kv"),
                    "Q": Array(("B", "T", "H", "d_qk"), "act"),
                    "c": Array(("B", "T", "kv_rank+d_rope"), "act"),
                    "O": Array(("B", "T", "H", "d_v"), "act")}
            if m.q_rank is not None:
                out["q_a"] = Array(("B", "T", "q_rank"), "act")
            if m.absorb:  # the core's query and output in the latent (W_UK, W_UV folded)
                out |= {"q_lat": Array(("B", "T", "H", "kv_rank+d_rope"), "act"),
                        "o_lat": Array(("B", "T", "H", "kv_rank"), "act")}
            out["k"] = Array(("B", "T", "H", "d_nope+d_v"), "act")  # W_kv_b's k_nope and v
            out["cs"] = Array(("T", "d_rot"), "act")  # RoPE's cos and sin tables
            # (the unabsorbed form's, as training runs it)
            return out | ({"b_o": Array(("D",))} if self.o_bias else {})
        if self.fused_qkv:
            out["W_qkv"] = Array(("D", "H+2*G", "d_h"))
        else:
            out |= {"W_q": Array(("D", "H", "d_h")), "W_k": Array(("D", "G", "d_h")),
                    "W_v": Array(("D", "G", "d_h"))}
        if self.qkv_bias:
            out["b_qkv"] = Array(("H+2*G", "d_h"))
        if self.qk_norm:
            out |= {"q_norm": Array(("d_h",)), "k_norm": Array(("d_h",))}
        out["W_o"] = Array(("H", "d_h", "D"))
        if self.o_bias:
            out["b_o"] = Array(("D",))
        return out | {"cs": Array(("T", "d_rot"), "act"),  # RoPE's cos, sin: T x d_rot/2 each
                      "K": Array(("B", "S", "G", "d_h"), "kv"),
                      "V": Array(("B", "S", "G", "d_h"), "kv"),
                      "Q": Array(("B", "T", "H", "d_h"), "act"),
                      "k": Array(("B", "T", "G", "d_h"), "act"),
                      "v": Array(("B", "T", "G", "d_h"), "act"),
                      "O": Array(("B", "T", "H", "d_h"), "act")}

    def twin(self) -> AttentionSpec:
        """The NumPy twin's spec of it (plain numbers; the latent record's as an MLASpec).

        >>> Attention(H=8, G=2, d_h=16, qk_norm=True).twin().qk_norm
        True
        """
        m = self.latent
        mla = None if m is None else MLASpec(
            **{k: plain(getattr(m, k), f"MLA {k}") for k in ("kv_rank", "d_nope", "d_rope",
                                                            "d_v", "q_rank")}, absorb=m.absorb)
        return AttentionSpec(
            **{k: plain(getattr(self, k), k) for k in ("H", "G", "d_h", "window")},
            qkv_bias=self.qkv_bias, fused_qkv=self.fused_qkv, o_bias=self.o_bias,
            qk_norm=self.qk_norm, attn_softcap=plain(self.softcap, "attn_softcap"),
            window_pattern=self.window_pattern, attn_block=plain(self.block, "attn_block"),
            mla=mla)

    # -- training: one layer's backward rows, backwards, and its piece of the layer graph
    def backward_out(self, w: Widths) -> dict[str, Cost]:
        """o_proj's dX and dW (its bias's gradient too), the first of its backward rows."""
        d_o = self.H * (self.latent.d_v if self.latent is not None else self.d_h)
        return {"attn/o_proj/dx": w.dx(d_o, w.s.D), "attn/o_proj/dw": w.dw(d_o, w.s.D,
                                                                           self.o_bias)}

    def backward_core(self, mode: str, L: Any, B: Any, S: Any, s: Stream
                      ) -> dict[str, Cost]:
        """The core's backward rows of L layers, the windowed and the global ones apart (a
        window changes the allowed pairs; the naive core still executes all S^2): naive,
        its four gradient matmuls and the softmax's; fused, FlashAttention-2's one row.

        >>> from symroof.symbols import B, L, S, D, H, d_h
        >>> Attention(G=H).backward_core("naive", L, B, S, Stream(D, 2, 2, 2))[
        ...     "attn/av/dv"].useful_flops          # dV = p^T do on the causal pairs
        B*H*L*S*d_h*(S + 1)
        """
        h, kv_heads = self.heads(), self.H if self.latent is not None else self.G
        cap, local = self.softcap is not None, self.local_layers(L)
        out: dict[str, Cost] = {}
        for layers, window in ((L - local, None), (local, self.window)):
            if layers == 0:
                continue
            pairs = ar.pairs(S, 0, window)[1]  # causal (in the window), or all S^2
            if mode == "naive":
                av = bw.attention_matmul_backward(B, S, S, h.H, kv_heads, h.d_v, pairs=pairs,
                                                  x_bytes=s.ab)
                qk = bw.attention_matmul_backward(B, S, S, h.H, kv_heads, h.d_k, pairs=pairs,
                                                  x_bytes=s.ab)
                rows = {"attn/av/dp": av, "attn/av/dv": av,
                        "attn/softmax": bw.softmax_backward(B * h.H * S, S, x_bytes=s.ab,
                                                            useful_elements=B * h.H * pairs,
                                                            softcap=cap),
                        "attn/scores/dq": qk, "attn/scores/dk": qk}
            else:
                rows = {"attn/core": bw.flash_attention_backward(
                    B, S, S, h.H, kv_heads, h.d_k, pairs=pairs, x_bytes=s.ab, softcap=cap)}
            for key, cost in rows.items():
                out[key] = out.get(key, Cost()) + layers * cost
        return out

    def backward_in(self, w: Widths, S: Any, pos: Any) -> dict[str, Cost]:
        """Its rows from the core's gradients back to h1's: RoPE's inverse rotation (the
        positions', :meth:`~symroof.models.blocks.Rope.rope_row`), the q/k norms, the
        projections' dX and dW and the sum of their dX; latent attention's
        (:func:`symroof.models.blocks.latent.backward_in`).

        >>> from symroof.models.blocks import Rope
        >>> list(Attention(fused_qkv=True).backward_in(Widths(1, Stream(8, 2, 2, 2), 2), 1,
        ...                                            Rope()))
        ['attn/rope', 'attn/qkv_proj/dx', 'attn/qkv_proj/dw']
        """
        if self.latent is not None:
            return latent.backward_in(self, w, S)
        D, H, G, d_h, n = w.s.D, self.H, self.G, self.d_h, w.n
        rows = pos.rope_row(n, H + G, pos.rotated(d_h), S, w.s)
        if self.qk_norm:
            rows |= {"attn/q_norm": w.norm("rms", n * H, d_h),
                     "attn/k_norm": w.norm("rms", n * G, d_h)}
        if self.fused_qkv:
            return rows | {"attn/qkv_proj/dx": w.dx(D, (H + 2 * G) * d_h),
                           "attn/qkv_proj/dw": w.dw(D, (H + 2 * G) * d_h, self.qkv_bias)}
        for name, width in (("v", G), ("k", G), ("q", H)):
            rows[f"attn/{name}_proj/dx"] = w.dx(D, width * d_h)
            rows[f"attn/{name}_proj/dw"] = w.dw(D, width * d_h, self.qkv_bias)
        return rows | {"attn/qkv_sum": w.sum(3)}

    def graph(self, mode: str, pos: Any) -> Graph:
        """Its ops from the norm's output h1 to o_proj's y (tensor names as the NumPy
        twin's: q0 k0 v, qn kn the q/k norms', q k after RoPE, s p the naive core's, o), the
        tensors its backward reads and its matmuls' outputs; latent attention's
        (:func:`symroof.models.blocks.latent.graph`).

        >>> from symroof.models.blocks import Rope
        >>> g = Attention().graph("naive", Rope())
        >>> g.ops["attn/av"], g.reads
        ((('p', 'v'), ('o',)), ('h1', 'q', 'k', 'v', 'p', 'o'))
        """
        if self.latent is not None:
            return latent.graph(self)
        ops: dict = {}
        if self.fused_qkv:
            ops["attn/qkv_proj"] = (("h1",), ("q0", "k0", "v"))
        else:
            ops |= {f"attn/{t}_proj": (("h1",), (t + "0" if t != "v" else "v",)) for t in "qkv"}
        q, k = "q0", "k0"
        if self.qk_norm:
            ops |= {"attn/q_norm": (("q0",), ("qn",)), "attn/k_norm": (("k0",), ("kn",))}
            q, k = "qn", "kn"
        if pos.kind == "rope":
            ops["attn/rope"] = ((q, k), ("q", "k"))
            q, k = "q", "k"
        reads = ["h1", *(("q0", "k0") if self.qk_norm else ()), q, k, "v"]
        if mode == "naive":
            ops |= {"attn/scores": ((q, k), ("s",)), "attn/softmax": (("s",), ("p",)),
                    "attn/av": (("p", "v"), ("o",))}
            reads += ["p", *(("s",) if self.softcap is not None else ())]
        else:  # the fused core writes o and the logsumexp
            ops["attn/core"] = ((q, k, "v"), ("o",))
        ops["attn/o_proj"] = (("o",), ("y",))
        return Graph(ops, (*reads, "o"), ("q0", "k0", "v", "y"))

    def tensors(self, B: Any, S: Any, mode: str) -> dict[str, Any]:
        """Elements per layer of each tensor of its graph (fused: o and the logsumexp)."""
        if self.latent is not None:
            return latent.tensors(self, B, S)
        n, H, G, d_h = B * S, self.H, self.G, self.d_h
        o = n * H * (d_h if mode == "naive" else d_h + 1)
        return dict.fromkeys(("q0", "qn", "q"), n * H * d_h) | \
            dict.fromkeys(("k0", "kn", "k", "v"), n * G * d_h) | \
            dict.fromkeys(("s", "p"), B * H * S**2) | {"o": o}

    def uses(self, rotated: Any = None) -> dict[str, Uses]:
        """Per row it makes, the arrays the row reads and writes (``norms/h`` the norm's
        output in, ``norms/y`` the block's output out; ``Q``, ``k``, ``v`` the new tokens'
        heads, ``O`` the core's output; MLA's ``q_a`` and ``c`` its latents, and absorbed,
        the core's query and output in the latent, ``q_lat`` and ``o_lat``). A fused
        qkv_proj writes ``Q``, ``k`` and ``v``. RoPE reads its tables ``cs`` and rotates,
        in place, the first ``rotated`` dims of each head of q and k (None: all of d_h;
        MLA: the d_rope of each query head and of the latent's shared key).

        >>> Attention(fused_qkv=True).uses()["attn/qkv_proj"].also
        ('attn/k', 'attn/v')
        >>> Attention(d_h=64).uses(16)["attn/rope"].share("attn/Q")   # GPT-NeoX-style 1/4
        1/4
        """
        h, y, Q, k, v, O = "norms/h", "norms/y", "attn/Q", "attn/k", "attn/v", "attn/O"
        core = {"attn/core": Uses((Q,), O, kv="attn/K"), "attn/scores": Uses((Q,), kv="attn/K"),
                "attn/softmax": Uses(), "attn/av": Uses(writes=O, kv="attn/V")}
        r = 1 if rotated is None else sp.sympify(rotated) / self.d_h
        rope = Uses((Q, k, "attn/cs"), Q, also=(k,),
                    part=() if r == 1 else ((Q, r), (k, r)))
        out = {"attn/rope": rope, "attn/o_proj": Uses((O,), y, "attn/W_o")}
        if self.latent is not None:
            c, q_a, kv, m = "attn/c", "attn/q_a", "attn/C_kv", self.latent
            latent = m.kv_rank + m.d_rope
            rot = ((Q, sp.sympify(m.d_rope) / m.d_qk), (c, sp.sympify(m.d_rope) / latent))
            out |= {"attn/q_a_proj": Uses((h,), q_a, "attn/W_q_a"),
                    "attn/q_a_norm": Uses((q_a,), q_a, "attn/q_a_norm", sums="q_rank"),
                    "attn/q_b_proj": Uses((q_a,), Q, "attn/W_q_b"),
                    "attn/q_proj": Uses((h,), Q, "attn/W_q"),
                    "attn/kv_a_proj": Uses((h,), c, "attn/W_kv_a"),
                    "attn/kv_a_norm": Uses((c,), c, "attn/kv_a_norm", sums="kv_rank",
                                           part=((c, sp.sympify(m.kv_rank) / latent),)),
                    "attn/rope": Uses((Q, c, "attn/cs"), Q, also=(c,), part=rot),
                    "attn/kv_write": Uses((c,), kv=kv),
                    "attn/kv_b_proj": Uses((c,), k, "attn/W_kv_b")}
            if self.latent.absorb:  # the core attends in the latent: q_lat in, o_lat out
                q_lat, o_lat = "attn/q_lat", "attn/o_lat"
                # q_absorb turns q's d_nope into kv_rank (its d_rope part is q_lat's as is)
                absorb = ((Q, sp.sympify(m.d_nope) / m.d_qk),
                          (q_lat, sp.sympify(m.kv_rank) / latent))
                return out | {"attn/q_absorb": Uses((Q,), q_lat, "attn/W_kv_b", part=absorb),
                              "attn/core": Uses((q_lat,), o_lat, kv=kv),
                              "attn/scores": Uses((q_lat,), kv=kv), "attn/softmax": Uses(),
                              "attn/av": Uses(writes=o_lat, kv=kv),
                              "attn/o_absorb": Uses((o_lat,), O, "attn/W_kv_b")}
            return out | {key: u._replace(kv=kv) if u.kv else u for key, u in core.items()}
        return out | core | {
            "attn/q_proj": Uses((h,), Q, "attn/W_q"), "attn/k_proj": Uses((h,), k, "attn/W_k"),
            "attn/v_proj": Uses((h,), v, "attn/W_v"),
            "attn/qkv_proj": Uses((h,), Q, "attn/W_qkv", also=(k, v)),
            "attn/q_norm": Uses((Q,), Q, "attn/q_norm", sums="d_h"),
            "attn/k_norm": Uses((k,), k, "attn/k_norm", sums="d_h"),
            "attn/kv_write": Uses((k, v), kv="attn/K")}
