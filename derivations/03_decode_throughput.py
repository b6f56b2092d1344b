"""Decode at long context: the KV cache, not the FLOPs, sets the ceiling.

Claim: for Llama-3.1-8B decoding at context S on an H100, one whole-model roofline step takes
max(B F_tok / C, (P_mm b_w + B S KV_tok) / W). Each sequence costs S KV_tok / W of memory time
and F_tok / C of math time; at S = 2048 the first (80 us) is five times the second (16 us), so
the step never turns compute-bound at any batch, and throughput B / t tends to W / (S KV_tok) =
12.5K tokens/s. The batch is capped anyway when weights plus KV caches fill the 80 GB of HBM (B
of about 238, where it reaches 10.1K tokens/s); only below about 390 tokens of context can
batching make decode compute-bound. The attention share of a token's FLOPs passes 1/2 exactly
at ctx*, but the KV read has passed the weight read long before (at S = 114K for B = 1, 1.8K
for B = 64).

Source: seed 003 (demo 4's remark that FLOP shares understate long-context cost: "look at the
bytes"), lecture 1's decode roofline; "How to Scale Your Model", part 7 (inference:
https://jax-ml.github.io/scaling-book/inference/). Conventions: docs/accounting.md.
"""

import os
from pathlib import Path

import sympy as sp

import symroof as sr
from symroof.symbols import B, S

SOURCE = "seed 003, demo 4; How to Scale Your Model, part 7 (inference)"
m, h100 = sr.model("llama-3.1-8b"), sr.chip("h100")
C, W = h100.peak("bf16"), h100.hbm_bw
OUT = Path(os.environ.get("SYMROOF_OUT", "out"))
OUT.mkdir(parents=True, exist_ok=True)

# --- one decode step as one roofline, symbolic in B and S --------------------------------
d = sr.Derivation("Decode throughput: the KV cache sets the ceiling", source=SOURCE)
step = m.whole(B, 1, S - 1)  # B sequences, 1 new token each, S tokens attended
t = sr.time(step, h100)
d.step("math time of a step (useful FLOPs over the bf16 peak)", r"t_\text{math}", t.t_math)
d.step("memory time: the weights once, every sequence's KV cache", r"t_\text{mem}", t.t_mem)
per_seq_mem = d.step("memory time each sequence adds at S = 2048 (s)", r"\partial t_\text{mem}"
                     r"/\partial B", sp.diff(t.t_mem, B).subs(S, 2048))
per_seq_math = d.step("math time each sequence adds at S = 2048 (s)", r"\partial t_\text{math}"
                      r"/\partial B", sp.diff(t.t_math, B).subs(S, 2048))
d.claim("at S = 2048 a sequence's KV read costs about 5x its FLOPs (80 us vs 16 us)",
        round(float(per_seq_mem * 1e6)) == 80 and round(float(per_seq_math * 1e6)) == 16)

# Compute-bound needs t_math = t_mem for some B > 0: no positive root at this context.
try:
    sr.crossover(t.t_math.subs(S, 2048), t.t_mem.subs(S, 2048), B)
    never = False
except ValueError:
    never = True
d.claim("at S = 2048 no batch makes the step compute-bound (t_math = t_mem has no B > 0)",
        never)
# The context below which a large enough batch does become compute-bound: per-sequence
# math = per-sequence memory.
s_flip = d.step("context where a sequence's FLOPs and KV read take equal time",
                r"S_\text{flip}", sr.crossover(sp.diff(t.t_math, B), sp.diff(t.t_mem, B), S))
d.claim("only below ~390 tokens of context can batching make decode compute-bound",
        380 < float(s_flip) < 400)

ceiling = d.step("tokens/s as B grows without bound (memory-bound)", r"\lim_{B\to\infty} B/t",
                 sr.limit(B / t.t_mem, B))
d.claim("the ceiling is W / (S KV_tok): about 12.5K tokens/s at S = 2048",
        sp.simplify(ceiling - W / (S * m.kv_bytes_per_token)) == 0
        and round(float(ceiling.subs(S, 2048)) / 1000, 1) == 12.5)
b_max = d.step("batch that fills 80 GB of HBM with weights and KV caches at S = 2048",
               r"B_\text{HBM}", sr.crossover(m.params * m.w_bytes + B * 2048 * m.kv_bytes_per_token,
                                             h100.hbm_bytes, B))
d.claim("HBM caps the batch near 238 sequences at S = 2048", int(b_max) == 238)
at_cap = d.step("tokens/s at that cap", r"B_\text{HBM} / t",
                b_max / t.lower.subs({S: 2048, B: b_max}))
d.claim("at the cap, ~10.1K tokens/s: ~80% of the ceiling, the weight read is the rest",
        round(float(at_cap) / 1000, 1) == 10.1
        and round(float(at_cap / ceiling.subs(S, 2048)), 1) == 0.8)

# --- FLOP shares understate long context: compare with the bytes ---------------------------
share = d.step("attention share of a decoded token's FLOPs", r"\text{share}(S)",
               m.attn_flops_per_token(S) / m.flops_per_token(S))
star = sr.ctx_star(m)
d.claim("the share is exactly 1/2 at ctx*", share.subs(S, star) == sp.Rational(1, 2))
kv1, kv64 = sr.kv_crossover(m, 1), sr.kv_crossover(m, 64)
d.step("context where B = 64 sequences' KV read equals the weight read", r"S_\text{KV}(64)",
       kv64)
d.claim("for B = 64 the KV read passes the weights at ~1.8K tokens, 16x before ctx* ~ 29K",
        round(float(kv64) / 100) == 18 and float(star / kv64) > 15)

tp_png = OUT / "03_throughput.png"
sr.plots.throughput_plot(m, h100, context=2048, path=tp_png)
share_png = OUT / "03_attention_share.png"
sr.plots.attention_share_plot(["llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b"],
                              path=share_png)

NOTES = [d,
         (tp_png, "Llama-3.1-8B decode tokens/s against batch on an H100 at context 2048: "
                  "memory-bound everywhere, capped by HBM capacity"),
         (share_png, "Share of a decoded token's FLOPs in the attention core against "
                     "context; the dots mark ctx*")]
assert all(ok for _, ok in d.claims) and tp_png.exists() and share_png.exists()

if __name__ == "__main__":
    for item in NOTES:
        print(f"figure: {item[0]} ({item[1]})" if isinstance(item, tuple) else item)
        print()
