r"""Decode at long context: the KV cache, not the FLOPs, sets the ceiling.

Claim: for Llama-3.1-8B decoding at context $S$ on an H100, one whole-model roofline step of $B$
sequences takes $\max(B F_\text{tok} / C, (P_\text{mm} b_w + B S\, \text{KV}_\text{tok}) / W)$,
where $F_\text{tok} = 2 P_\text{mm} + 4 L H d_h S$ are the FLOPs of a token, $P_\text{mm}$ the
parameters a token multiplies by, $b_w$ the bytes of a weight and $\text{KV}_\text{tok}$ the KV
bytes of a token. Each sequence costs $S\, \text{KV}_\text{tok} / W$ of memory time and
$F_\text{tok} / C$ of math time; at $S = 2048$ the first (80 $\mu$s) is five times the second
(16 $\mu$s), so the step never turns compute-bound at any batch, and the throughput $B / t$
tends to $W / (S\, \text{KV}_\text{tok})$ = 12.5K tokens/s. The batch is capped anyway when
weights plus KV caches fill the 80 GB of HBM ($B$ of about 238, where it reaches 10.1K
tokens/s); only below about 390 tokens of context can batching make decode compute-bound. The
attention share of a token's FLOPs passes 1/2 exactly at $\text{ctx}^*$, but the KV read has
passed the weight read long before (at $S$ = 114K for $B = 1$, 1.8K for $B = 64$).

Source: seed 003 (demo 4's remark that FLOP shares understate long-context cost: "look at the
bytes"), lecture 1's decode roofline; "How to Scale Your Model", part 7 (inference:
https://jax-ml.github.io/scaling-book/inference/). Conventions: docs/accounting.md.
"""

import os
from pathlib import Path

import sympy as sp

import symroof as sr
from symroof.derivation import Derivation, print_notes
from symroof.symbols import B, C, H, L, M, S, W, d_h

SOURCE = "seed 003, demo 4; How to Scale Your Model, part 7 (inference)"
m, h100 = sr.model("llama-3.1-8b"), sr.chip("h100")
OUT = Path(os.environ.get("SYMROOF_OUT", "out"))
OUT.mkdir(parents=True, exist_ok=True)

# Named quantities: the model's matmul parameters, all parameters, bytes per weight, KV bytes
# per token; then the figures of Llama-3.1-8B on an H100 to substitute.
P_mm, P, b_w = sp.symbols("P_mm P b_w", positive=True)
KV = sp.Symbol("KV_tok", positive=True)
LLAMA_H100 = {P_mm: m.matmul_params, P: m.params, b_w: m.w_bytes, KV: m.kv_bytes_per_token,
              L: m.L, H: m.H, d_h: m.d_h, C: h100.peak("bf16"), W: h100.hbm_bw,
              M: h100.hbm_bytes}
AT_2048 = {**LLAMA_H100, S: 2048}

# --- one decode step as one roofline, symbolic in B and S --------------------------------
d = Derivation("Decode throughput: the KV cache sets the ceiling", source=SOURCE)
f_tok = 2 * P_mm + 4 * L * H * d_h * S  # useful FLOPs of one token at context S
t_math = d.step("math time of a step: $B$ tokens of $2 P_\\text{mm} + 4 L H d_h S$ useful FLOPs "
                "at the bf16 peak $C$", r"t_\text{math}", B * f_tok / C)
t_mem = d.step("memory time: the weights once, then every sequence's KV cache",
               r"t_\text{mem}", (P_mm * b_w + B * S * KV) / W)
step = sr.time(m.whole(B, 1, S - 1), h100)  # B sequences, 1 new token each, S tokens attended
d.claim("for Llama-3.1-8B on an H100 both are the whole-model roofline's times",
        sp.expand(t_math.subs(LLAMA_H100) - step.t_math) == 0
        and sp.expand(t_mem.subs(LLAMA_H100) - step.t_mem) == 0)
per_seq_mem = d.step(r"memory time each sequence adds, at $S = 2048$ (s)",
                     r"\partial t_\text{mem} / \partial B", sp.diff(t_mem, B), at=AT_2048)
per_seq_math = d.step(r"math time each sequence adds, at $S = 2048$ (s)",
                      r"\partial t_\text{math} / \partial B", sp.diff(t_math, B), at=AT_2048)
d.claim(r"at $S = 2048$ a sequence's KV read costs about 5 times its FLOPs (80 $\mu$s against "
        r"16 $\mu$s)",
        round(float(per_seq_mem * 1e6)) == 80 and round(float(per_seq_math * 1e6)) == 16)

# Compute-bound needs t_math = t_mem for some B > 0: no positive root at this context.
try:
    sr.crossover(step.t_math.subs(S, 2048), step.t_mem.subs(S, 2048), B)
    never = False
except ValueError:
    never = True
d.claim(r"at $S = 2048$ no batch makes the step compute-bound ($t_\text{math} = t_\text{mem}$ "
        r"has no root $B > 0$)", never)
# The context below which a large enough batch does become compute-bound: per-sequence
# math = per-sequence memory.
s_flip = d.step("context where a sequence's FLOPs and its KV read take equal time",
                r"S_\text{flip}", sr.crossover(sp.diff(t_math, B), sp.diff(t_mem, B), S),
                at=LLAMA_H100)
d.claim("only below about 390 tokens of context can batching make decode compute-bound",
        380 < float(s_flip) < 400
        and s_flip == sr.crossover(sp.diff(step.t_math, B), sp.diff(step.t_mem, B), S))

ceiling = d.step("tokens/s as the batch grows without bound (memory-bound)",
                 r"\lim_{B\to\infty} B/t", sr.limit(B / t_mem, B), at=LLAMA_H100)
d.claim(r"the ceiling is $W / (S\, \text{KV}_\text{tok})$: about 12.5K tokens/s at $S = 2048$",
        sp.simplify(ceiling - h100.hbm_bw / (S * m.kv_bytes_per_token)) == 0
        and round(float(ceiling.subs(S, 2048)) / 1000, 1) == 12.5)
b_max = d.step(r"the batch whose weights and KV caches fill the $M$ = 80 GB of HBM, at "
               "$S = 2048$", r"B_\text{HBM}", sr.crossover(P * b_w + B * S * KV, M, B),
               at=AT_2048)
d.claim("HBM caps the batch near 238 sequences at $S = 2048$", int(b_max) == 238)
at_cap = d.step(r"tokens/s at that cap: $B / t$ at $B = B_\text{HBM}$", r"B_\text{HBM} / t",
                B / t_mem, at={**AT_2048, B: b_max})
d.claim("at the cap, about 10.1K tokens/s: 80% of the ceiling, the weight read is the rest",
        at_cap == b_max / step.lower.subs({S: 2048, B: b_max})
        and round(float(at_cap) / 1000, 1) == 10.1
        and round(float(at_cap / ceiling.subs(S, 2048)), 1) == 0.8)

# --- FLOP shares understate long context: compare with the bytes ---------------------------
share = d.step("attention share of a decoded token's FLOPs", r"\text{share}(S)",
               4 * L * H * d_h * S / f_tok)
star = sr.ctx_star(m)
d.claim(r"the share is exactly 1/2 at $\text{ctx}^*$",
        share.subs(LLAMA_H100).subs(S, star) == sp.Rational(1, 2)
        and sp.cancel(share.subs(LLAMA_H100) - m.attn_flops_per_token(S) / m.flops_per_token(S))
        == 0)
s_kv = d.step("context where $B$ sequences' KV read equals the weight read", r"S_\text{KV}(B)",
              sr.crossover(B * S * KV, P_mm * b_w, S))
kv64 = d.step("at $B = 64$", r"S_\text{KV}(64)", s_kv, at={**LLAMA_H100, B: 64})
d.claim(r"for $B = 64$ the KV read passes the weights at about 1.8K tokens, 16 times before "
        r"$\text{ctx}^* \approx$ 29K",
        kv64 == sr.kv_crossover(m, 64) and round(float(kv64) / 100) == 18
        and float(star / kv64) > 15)

tp_png = OUT / "03_throughput.png"
sr.plot.throughput_plot(m, h100, context=2048, path=tp_png)
share_png = OUT / "03_attention_share.png"
sr.plot.attention_share_plot(["llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b"],
                              path=share_png)

NOTES = [d,
         (tp_png, "Llama-3.1-8B decode throughput against the batch on an H100 at context "
                  "2048: memory-bound everywhere, and capped at $B \\approx 238$ by HBM "
                  "capacity, short of the $W / (S\\, \\text{KV}_\\text{tok})$ = 12.5K tokens/s "
                  "ceiling"),
         (share_png, r"Share of a decoded token's FLOPs spent in the attention core against the "
                     r"context $S$; the dots mark $\text{ctx}^*$, where it reaches 1/2")]
assert all(ok for _, ok in d.claims) and tp_png.exists() and share_png.exists()

if __name__ == "__main__":
    print_notes(NOTES)
