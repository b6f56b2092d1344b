r"""Inference: decode reads the weights and the KV caches, and the batch is the knob.

Claim: a decode step is a memory-bound roofline until the batch passes $B_\text{crit} = C b_w /
(2W)$ (240 on a v5e in bf16, 120 with int8 weights and bf16 FLOPs); below it the step is the
bytes of the weights and of every sequence's KV cache over the slice's HBM bandwidth. For
LLaMA-3-70B in int8 at 8K context a v5e 4x2 steps in 17 ms at batch 32 and a 4x4 in half that;
fewer KV heads (GQA) shrink the cache by $H/G$ and raise the largest batch with it; int4 fits
the model on a 2x2, but every dtype leaves room for the same 42 sequences, so a bigger slice,
not a smaller one, serves more requests per chip. An MoE needs $E/k$ times the batch. Model
parallelism turns decode ICI-bound only beyond $Y = F/(B \beta)$, $\beta =
W_\text{hbm}/W_\text{ici}$; 2-D weight-stationary sharding beats 1-D above $N = 18 F/D$ chips.
Prefill at batch 1 is compute-bound, so disaggregated serving needs about 3 prefill servers per
decode server; a million decoded tokens cost from \$32 at batch 1 to under \$1 near the HBM cap on
the book's Feb 2025 v5e price.

Source: "How to Scale Your Model", ch. 7 (inference, https://jax-ml.github.io/scaling-book/
inference/) and ch. 8 (serving LLaMA 3, https://jax-ml.github.io/scaling-book/applied-
inference/), read from inference.md and applied-inference.md at scaling-book commit 0819a7d
(Feb 2025). Every worked number is rebuilt from the model presets and the chip records and
asserted to the book's rounding. The v5e record's HBM bandwidth is 8.2e11 B/s (the book's
ch. 1 and ch. 7 figure; some ch. 8 answers use 8.1e11). Where the book slips the claim says so:
the factor 2 of the KV cache, its LLaMA-3 KV sizes, the ch. 8 table of smallest slices and the
requests per chip built on it, the $\alpha$ of the ICI bound, the latency test of ch. 7's appendix
and the 2-D weight-stationary threshold.
"""

import os
from pathlib import Path

import sympy as sp

import symroof as sr
from symroof.derivation import Derivation, print_notes
from symroof.hardware import PRICES as PRICE_TABLE
from symroof.parallel.serving import WIDTHS
from symroof.parallel.sizing import (
    cost_per_million_tokens,
    kv_evictions,
    moe_critical_batch,
    prefill_decode_ratio,
    smallest_slice,
)
from symroof.symbols import B, C, D, F, G, H, L, M, N, S, V_b, W, X, Y, Z, d_h

CH7 = "How to Scale Your Model, ch. 7: https://jax-ml.github.io/scaling-book/inference/"
CH8 = ("How to Scale Your Model, ch. 8: "
       "https://jax-ml.github.io/scaling-book/applied-inference/")
OUT = Path(os.environ.get("SYMROOF_OUT", "out"))
OUT.mkdir(parents=True, exist_ok=True)

# Named quantities of the book's formulas (N is the number of chips, as in ch. 5 and ch. 8).
P = sp.Symbol("P", positive=True)  # parameters
b_w, b_kv = sp.Symbol("b_w", positive=True), sp.Symbol("b_kv", positive=True)  # bytes each
KV = sp.Symbol("KV_tok", positive=True)  # KV-cache bytes of one token, all layers
n_p, n_g = sp.symbols("n_p n_g", positive=True)  # prompt and generated tokens (the book's P, G)
n_dec = sp.Symbol("n_dec", positive=True)  # tokens generated per request (median)
T_step = sp.Symbol("T_step", positive=True)  # seconds a decode step takes
kappa, nu = sp.symbols("kappa nu", positive=True)  # KV bytes and chips per byte of a weight
alpha_s, beta_s = sp.symbols("alpha beta", positive=True)  # C/W_ici and W/W_ici
E, k = sp.symbols("E k", positive=True, integer=True)  # experts, experts per token
MFU, price = sp.symbols("MFU p_chip", positive=True)  # FLOP utilisation, $ per chip-hour
W_ici = sp.Symbol("W_ici", positive=True)  # the book's bidirectional per-axis ICI figure

v5e = sr.chip("tpu-v5e")
at_v5e = {C: v5e.peak(), W: v5e.hbm_bw, M: v5e.hbm_bytes,
          W_ici: 2 * v5e.link_bw}  # both neighbours' links, 4.5e10 B/s each way
ms, us = sp.Integer(1000), sp.Integer(10**6)
GB = sp.Integer(10**9)
llama70, llama13 = sr.model("llama-3.1-70b"), sr.model("llama-2-13b")
CTX = 8192
# the prices on record beside the chip records (symroof.hardware.prices: the book's ch. 8
# table, Google Cloud, Feb 2025), USD per chip-hour as exact decimals
PRICES = {name: sp.Rational(str(p.usd_per_chip_hour)) for name, p in
          PRICE_TABLE.items()}
PRICE_SOURCE = PRICE_TABLE["tpu-v5e"].cited


def v5e_slice(shape):
    return sr.mesh("tpu-v5e", shape)


def row(values, digits):
    """A table row of readable numbers (the exact values are asserted, not printed): whole
    numbers from 100 up, ``digits`` significant digits below."""
    return [sp.Integer(round(float(v))) if abs(v) >= 100 else sp.Float(float(v), digits)
            for v in values]


def table(labels, rows):
    r"""A matrix with its row labels as the left-hand side: [B; T/ms; ...] = [[...]]."""
    return r"\begin{matrix} " + r" \\ ".join(labels) + r" \end{matrix}", sp.ImmutableMatrix(rows)


# --- The decode step: formulas, then the book's numbers ----------------------------------
step_d = Derivation("The decode step: weights and KV caches over HBM bandwidth",
                    source=CH7 + " (Theoretical estimates for LLM latency and throughput); "
                    + CH8 + " (What's the LLaMA Serving Story?)")
t_min = step_d.step("small batch: every matmul and the attention memory-bound; the weights are "
                    "read once, each of $B$ sequences reads its $S$ tokens of KV cache, $N$ chips "
                    "share the bytes", r"T_\text{min}", (B * S * KV + P * b_w) / (N * W))
mlp_math, mlp_mem = 2 * B * P / (N * C), P * b_w / (N * W)
t_book = step_d.step("the general form of How to Scale Your Model: attention never "
                     "compute-bound, the MLP a "
                     "roofline of its own, the two not overlapped", r"T_\text{step}",
                     B * S * KV / (N * W) + sp.Max(mlp_math, mlp_mem))
b_crit = step_d.step("the MLP turns compute-bound above", r"B_\text{crit}",
                     sr.crossover(mlp_math, mlp_mem, B))
quiz = {P: 30 * GB, b_w: 1, KV: 100_000, S: CTX, N: 16, **at_v5e}  # ch. 7 pop quiz
q4 = step_d.step("pop quiz: 30e9 int8 parameters, 100 kB of KV a token, 8192 tokens, v5e 4x4, "
                 "$B = 4$", r"T_\text{min}(4) / \text{ms}", t_min.subs(quiz).subs(B, 4) * ms)
q256 = step_d.step(r"$B = 256$ (past $B_\text{crit}$ = 120: the MLP is compute-bound)",
                   r"T_\text{step}(256) / \text{ms}", t_book.subs(quiz).subs(B, 256) * ms)
step_d.claim(r"$B_\text{crit} = C b_w / (2W)$, the critical batch of one matmul: weight-bound "
             "thresholds do not care whether the weights are one matrix or a whole model",
             b_crit == C * b_w / (2 * W))
step_d.claim("pop quiz: 2.5 ms at $B = 4$ (2.54) and 21 ms at $B = 256$ (20.9)",
             round(float(q4), 1) == 2.5 and round(float(q256)) == 21)

# LLaMA-3-70B at batch 32 and 8K context, int8 weights and KV (ch. 8's first questions)
BATCHES = [1, 8, 16, 32, 64, 120, 240]


def int8_plan(shape, batch, context=CTX):
    return sr.serve(llama70, v5e_slice(shape), batch=batch, context=context, weights="int8",
                    kv="int8")


p8 = int8_plan("2x4", 32)
int8_16 = {b: int8_plan("4x4", b) for b in BATCHES + [138]}  # 138: the HBM cap at 8192
book16 = {b: plan.book_time for b, plan in int8_16.items()}
total = step_d.step("LLaMA-3-70B, int8 weights and KV, $B = 32$ at 8192 tokens: weights plus "
                    "KV caches", r"M_\text{used} / \text{GB}", p8.hbm_used * p8.n / GB)
book8 = step_d.step("the general form on a v5e 2x4 (the book's 4x2)", r"T_\text{step}^{2\times"
                    r" 4} / \text{ms}", p8.book_time * ms)
plan8 = step_d.step("symroof's per-op plan (1-D model parallel, its AllReduces, activations "
                    "replicated), perfect overlap", r"T^{2\times 4} / \text{ms}",
                    p8.time.lower * ms)
tps8 = step_d.step("tokens per second per chip from the general form", r"B / (N T_\text{step})",
                   32 / (p8.n * p8.book_time))
step_d.step("on a 4x4: the general form", r"T_\text{step}^{4\times 4} / \text{ms}",
            book16[32] * ms)
step_d.step("and the plan, where the AllToAlls of KV sharding over the batch appear "
            "(16 chips > 8 KV heads)", r"T^{4\times 4} / \text{ms}",
            int8_16[32].time.lower * ms)
book_row = [book16[b] * ms for b in BATCHES]
plan_row = [int8_16[b].time.lower * ms for b in BATCHES]
tps_row = [int8_16[b].tokens_per_s_per_chip for b in BATCHES]
step_d.step("the same on a 4x4 against the batch: the general form, the plan (ms), tokens/s "
            "per chip (plan); beyond $B = 138$ it does not fit",
            *table([r"B", r"T_\text{step} / \text{ms}", r"T / \text{ms}",
                    r"\text{tokens/s/chip}"],
                   [BATCHES, row(book_row, 3), row(plan_row, 3), row(tps_row, 3)]))
step_d.claim("$B = 32$ needs 113.5 GB (the book's 112 GB takes 70e9 parameters and 160 kB a "
             "token): 7.1 chips' worth, so a 2x4 holds it, tightly",
             round(float(total), 1) == 113.5 and p8.fits and 7 < total / 16 < 7.5)
step_d.claim(r"17 ms a step on the 2x4 (17.3), memory-bound: $B = 32 < B_\text{crit}$ = 120; "
             "231 tokens/s "
             "per chip (the book's 235 divides by the rounded 17 ms); the per-op plan adds the "
             "replicated activations (each chip reads them whole) and gives 18.2 ms",
             round(float(book8)) == 17 and round(float(tps8)) == 231
             and round(float(plan8), 1) == 18.2 and p8.bound == "memory")
step_d.claim("a 4x4 halves the general form's step (8.7 ms; the book's 17/2 = 8.5) at the same "
             "tokens/s per chip",
             book16[32] / p8.book_time == sp.Rational(1, 2)
             and round(float(book16[32] * ms), 1) == 8.7)
step_d.claim("throughput per chip grows ever more slowly with the batch while latency grows "
             r"(diminishing returns): $7\times$ from $B = 1$ to 8, $1.4\times$ from 32 to 64",
             round(float(tps_row[1] / tps_row[0])) == 7
             and round(float(tps_row[4] / tps_row[3]), 1) == 1.4)

# --- KV cache and GQA -----------------------------------------------------------------------
kv_d = Derivation("The KV cache and grouped-query attention",
                  source=CH7 + " (What about memory?; Modeling throughput and latency for LLaMA "
                  "2-13B; Tricks); " + CH8)
kv_tok = kv_d.step("KV bytes per token: keys and values of $G$ heads of $d_h$ in each of $L$ "
                   "layers",
                   r"\text{KV}_\text{tok}", sr.Transformer(kv_bytes=b_kv).kv_bytes_per_token)
mha = sr.Transformer(G=H, kv_bytes=b_kv).kv_bytes_per_token
kv_d.step("against multi-head attention ($G = H$)", r"\text{KV}_\text{MHA} / \text{KV}_\text{tok}",
          mha / kv_tok)
gqa13 = llama13.replace(G=8)
seq13 = kv_d.step("LLaMA-2-13B (40 KV heads), bf16, one 8192-token sequence",
                  r"\text{KV}_\text{seq} / \text{GB}", llama13.kv_bytes_per_token * CTX / GB)
seq13g = kv_d.step("the same with 8 KV heads (GQA 1:5)", r"\text{KV}_\text{seq}^\text{GQA} / "
                   r"\text{GB}", gqa13.kv_bytes_per_token * CTX / GB)
B13 = [1, 8, 16, 32, 64, 240]
slice8 = v5e_slice("2x4")


at13 = {P: llama13.params, b_w: 2, S: CTX, N: 8, **at_v5e}  # the book keeps the parameters
t_mha, t_gqa = (t_min.subs({KV: m.kv_bytes_per_token, **at13}) for m in (llama13, gqa13))
kv_d.step(r"$T_\text{min}$ on 8 v5e chips (a 2x4): $B$, LLaMA-2-13B, with GQA (ms), tokens/s of "
          "the "
          "slice with GQA",
          *table([r"B", r"T_\text{MHA} / \text{ms}", r"T_\text{GQA} / \text{ms}",
                  r"B / T_\text{GQA}"],
                 [B13, row([t_mha.subs(B, b) * ms for b in B13], 4),
                  row([t_gqa.subs(B, b) * ms for b in B13], 4),
                  row([b / t_gqa.subs(B, b) for b in B13], 4)]))
fill = (N * M - P * b_w) / (S * KV)  # sequences that fit beside the weights
cap13, cap13g = (kv_d.step(text, label, sp.floor(fill.subs({KV: m.kv_bytes_per_token, **at13})))
                 for text, label, m in (
    ("largest batch on the 2x4 (128 GB of HBM), multi-head", r"B_\text{max}", llama13),
    ("with 8 KV heads (the parameters kept)", r"B_\text{max}^\text{GQA}", gqa13)))
tok70 = kv_d.step("LLaMA-3-70B (8 KV heads), int8 KV", r"\text{KV}_\text{tok}^\text{70B} / "
                  r"\text{byte}", kv_tok.subs({G: 8, L: 80, d_h: 128,
                                            b_kv: 1}))
seq70 = kv_d.step("a 32768-token sequence of it", r"\text{KV}_\text{seq}^\text{70B} / \text{GB}",
                  tok70 * 32768 / GB)
kv_d.claim(r"$\text{KV}_\text{tok} = 2 L G d_h b_\text{kv}$, $H/G$ times smaller than "
           "multi-head. Erratum: ch. 7's "
           "worked answers (in revisions after Feb 2025) count $L K H$ bytes a token, without "
           "the 2 for keys and values, so their batch limits come out twice too large; "
           "ch. 7's own formula and ch. 8 keep the 2, as symroof does",
           kv_tok == 2 * L * G * d_h * b_kv and mha / kv_tok == H / G
           and llama70.kv_bytes_per_token == 2 * 80 * 8 * 128 * 2)
kv_d.claim(r"LLaMA-2-13B: 6.7 GB a sequence, 1.34 GB with GQA ($5\times$ less)",
           round(float(seq13), 1) == 6.7 and round(float(seq13g), 2) == 1.34
           and seq13 / seq13g == 5)
kv_d.claim("the book's tables: 5.0 ms at $B = 1$ (book 4.98, from 32.7 GB), 249 ms at "
           "$B = 240$; with GQA 4.17 ms and 53 ms (book 52.99), 4.5K tokens/s at $B = 240$ (book "
           "4529)",
           round(float(t_mha.subs(B, 1) * ms), 1) == 5.0
           and round(float(t_mha.subs(B, 240) * ms)) == 249
           and round(float(t_gqa.subs(B, 1) * ms), 2) == 4.17
           and round(float(t_gqa.subs(B, 240) * ms)) == 53
           and round(float(240 / t_gqa.subs(B, 240)), -2) == 4500)
kv_d.claim("multi-head fits 15 sequences on 8 chips (the book's 'OOM beyond 16' reads 128 GB "
           "as GiB); GQA fits 75, above the batch of 64 the book serves",
           cap13 == 15 and cap13g == 75
           and sr.serve(llama13, slice8, batch=1, context=CTX).max_batch == 15)
kv_d.claim("LLaMA-3-70B: 163840 B a token in int8 (the book's '160kB', and 327680 in bf16, its "
           "'324kB'); 5.4 GB a 32K sequence (the book's 5.3 multiplies 162e3); 1.3 TB for 240 "
           "such sequences",
           tok70 == 163840 and round(float(seq70), 1) == 5.4
           and round(float(240 * seq70 / 1000), 1) == 1.3)

# --- The smallest slice by dtype ------------------------------------------------------------
size_d = Derivation("The smallest slice by dtype, and why it is not the best one",
                    source=CH8 + " (Thinking about throughput)")
chips = size_d.step("chips whose HBM holds the weights", r"N_\text{min}", P * b_w / M)
b_max = size_d.step("sequences of $S$ tokens that fit beside them", r"B_\text{max}", fill)
qps = size_d.step("requests per second per chip, $n_\\text{dec}$ tokens generated per request",
                  r"\text{QPS}/N", B / (T_step * n_dec * N))
size_d.step(r"with the slice and the KV bytes both proportional to $b_w$ ($N = \nu b_w$, "
            r"$\text{KV}_\text{tok} = \kappa b_w$): $b_w$ cancels", r"B_\text{max}",
            sp.cancel(b_max.subs({N: nu * b_w, KV: kappa * b_w})))
full = size_d.step("a step with HBM full of weights and KV caches", r"T_\text{full}",
                   sp.cancel(t_min.subs(B, b_max)))
DTYPES = ("bf16", "int8", "int4")
smallest = {w: smallest_slice(llama70, "tpu-v5e", weights=w) for w in DTYPES}
doubled = {"bf16": "4x8", "int8": "4x4", "int4": "2x4"}
N_DEC = 512
fits, caps, qps_small, qps_big = {}, {}, {}, {}
for w in DTYPES:
    fits[w] = size_d.step(f"LLaMA-3-70B in {w}: chips for the weights (smallest slice "
                          f"{smallest[w]})", rf"N_\text{{min}}^\text{{{w}}}",
                          chips.subs({P: llama70.params, b_w: WIDTHS[w],
                                      **at_v5e}))
    for shape, out in ((smallest[w], qps_small), (doubled[w], qps_big)):
        n = v5e_slice(shape).n_chips
        cap = sp.floor(fill.subs({N: n, P: llama70.params, b_w: WIDTHS[w], S: CTX,
                                  KV: llama70.kv_bytes_per_token / 2 * WIDTHS[w], **at_v5e}))
        plan = sr.serve(llama70, v5e_slice(shape), batch=cap, context=CTX, weights=w, kv=w)
        assert plan.max_batch == cap and plan.fits  # the formula is the plan's
        caps[w, shape] = cap
        out[w] = plan.requests_per_s_per_chip(N_DEC, form="book")
        assert out[w] == qps.subs({T_step: plan.book_time, n_dec: N_DEC, N: plan.n, B: cap})
t_full = size_d.step("on a v5e", r"T_\text{full} / \text{ms}", full.subs(at_v5e) * ms)
size_d.step("largest batch at 8192 tokens, KV in the weights' dtype, on the smallest slices",
            r"B_\text{max}", caps["bf16", "4x4"])
size_d.step("requests per second per chip at that batch, 512 tokens each (bf16, int8, int4)",
            r"\text{QPS}/N", sp.ImmutableMatrix([row(qps_small.values(), 3)]))
size_d.step("on slices twice as large (4x8, 4x4, 2x4): largest batch", r"B_\text{max}",
            caps["bf16", "4x8"])
size_d.step("and requests per second per chip", r"\text{QPS}/N",
            sp.ImmutableMatrix([row(qps_big.values(), 3)]))
size_d.claim("smallest v5e slices: 4x4 in bf16, 2x4 (the book's 4x2) in int8, 2x2 in int4",
             list(smallest.values()) == ["4x4", "2x4", "2x2"])
size_d.claim("8.8, 4.4 and 2.2 chips' worth of weights (book 8.75, 4.38 and 2.81: its int4 "
             "row takes the weights as 45 GB, not 35)",
             [round(float(fits[w]), 1) for w in DTYPES] == [8.8, 4.4, 2.2])
size_d.claim(r"$B_\text{max}$ does not depend on the dtype: 42 sequences on every smallest slice. "
             "Erratum: the book's table gives 43, 52 and 67; its int8 row leaves 68 GB for "
             "KV (128 - 70 = 58) and its int4 row starts from 45 GB of weights, while its own "
             "next answer uses 43 for all three",
             all(caps[w, smallest[w]] == 42 for w in DTYPES))
size_d.claim("a full step is $M/W$ = 19.5 ms whatever the slice (the book: 19 ms)",
             full == M / W and round(float(t_full), 1) == 19.5)
size_d.claim(r"0.265, 0.53 and 1.06 requests/s per chip (the general form's step at $B = 42$). "
             r"The book's 0.27 is $43/(0.019 \times 512 \times 16)$; its 0.66 and 1.72 use the "
             "table's slipped batches 52 and 67",
             [round(float(q), 2) for q in qps_small.values()] == [0.26, 0.53, 1.06])
gain = [qps_big[w] / qps_small[w] for w in DTYPES]
crit4 = size_d.step(r"$B_\text{crit}$ with int4 weights and bf16 FLOPs",
                    r"B_\text{crit}^\text{int4}",
                    sr.critical_batch(v5e, w_bytes=sp.Rational(1, 2)))
size_d.claim(r"twice the chips fit 138 sequences, not 42: $1.6\times$ the requests per chip in "
             "bf16 and int8, so the smallest slice is not the best (the book's 161 sequences come "
             r"from '186 GB remaining', half of 512 - 140 = 372 GB). In int4 the gain is "
             r"$1.2\times$: 138 sequences pass its $B_\text{crit}$ of 60 and the MLP turns "
             "compute-bound, which the book's 'step time stays the same' leaves out",
             all(caps[w, doubled[w]] == 138 for w in DTYPES)
             and [round(float(g), 1) for g in gain] == [1.6, 1.6, 1.2] and round(crit4) == 60)

# --- Critical batch, quantisation and MoE ---------------------------------------------------
moe_d = Derivation("The critical batch, quantised weights and mixtures of experts",
                   source=CH7 + " (Linear operations; Worked problems, question 5); " + CH8
                   + " (Thinking about throughput)")
sym = sr.symbolic_chip()
crit = moe_d.step(r"$B_\text{crit}$ of one matmul with $b_w$ bytes a weight (bf16 activations and "
                  "FLOPs)",
                  r"B_\text{crit}", sr.critical_batch(sym, w_bytes=b_w))
bf16, w8, i8 = (moe_d.step(text, rf"B_\text{{crit}}^\text{{{name}}}",
                           sr.critical_batch(v5e, **kw)) for text, name, kw in (
    ("v5e, bf16 weights", "bf16", {}),
    ("int8 weights, bf16 FLOPs", "w8", {"w_bytes": 1}),
    ("int8 weights and int8 FLOPs (3.94e14 OP/s)", "int8", {"dtype": "int8"})))
moe = moe_d.step("an MoE layer reads all $E$ experts' weights while a token uses $k$ of them",
                 r"B_\text{crit}^\text{MoE}", moe_critical_batch(sym, experts=E, top_k=k))
moe16 = moe_d.step("ch. 7's MoE, $E = 16$, $k = 2$, on a v5e, bf16", r"B_\text{crit}^\text{MoE}",
                   moe_critical_batch(v5e, experts=16, top_k=2))
moe16_8 = moe_d.step("with int8 weights", r"B_\text{crit}^\text{MoE, w8}",
                     moe.subs({E: 16, k: 2}) * w8 / (C / W))
moe_d.claim(r"the decode step's $B_\text{crit}$ is the matmul's; on a v5e: 240 in bf16, 120 with "
            "int8 weights and bf16 FLOPs, 240 again with int8 FLOPs",
            crit == b_crit and round(float(bf16)) == 240 and round(float(w8)) == 120
            and i8 == bf16)
moe_d.claim(r"an MoE needs $E/k$ times the batch: $8 \times 240$ = 1920 sequences for $E = 16$, "
            r"$k = 2$ (1922), 960 with int8 weights (it assumes $B k \ge E$, so every expert is "
            "used)",
            moe == E / k * C / W and round(float(moe16), -1) == 1920
            and round(float(moe16_8), -1) == 960)

# --- Sharding for decode: where model parallelism turns ICI-bound ---------------------------
ici_d = Derivation("Model parallelism for decode: when does the ICI bind?",
                   source=CH7 + " (Distributing Inference; Appendices B and C, question 7); "
                   + CH8 + " (sharding question)")
chip = sr.symbolic_chip(W_net=W_ici / 2)  # one link each way: a ring axis gathers at W_ici
ring = sr.mesh(chip, {"Y": Y})
up = sr.shard_matmul(ring, "X[B, D_Y] @ W[D, F_Y] -> [B, F_Y]", strategy="gather")
t_ici = ici_d.step(r"$W_\text{in}$ sharded over $F$ on $Y$ chips: gather the activations, "
                   "$V_b = 2BD$",
                   r"T_\text{ICI}", up.t_comms)
t_hbm = ici_d.step("each chip reads its $2DF/Y$ bytes of weights", r"T_\text{HBM}",
                   up.compute.weight_bytes / chip.hbm_bw)
ici_d.step("and does its share of the FLOPs", r"T_\text{math}", up.t_math)
y_ici = ici_d.step("memory-bound decode turns ICI-bound above",
                   r"Y_\text{ICI}", sr.crossover(t_ici, t_hbm, Y))
ici_d.step(r"in the letters of How to Scale Your Model, $\beta = W/W_\text{ici}$", r"Y_\text{ICI}",
           y_ici.subs(W, beta_s * W_ici))
y_math = ici_d.step("compute-bound decode turns ICI-bound above", r"Y_\text{math}",
                    up.crossover(Y))
ici_d.step(r"with $\alpha = C/W_\text{ici}$", r"Y_\text{math}", y_math.subs(C, alpha_s * W_ici))
beta = ici_d.step(r"$\beta$ on a v5e: 8.2e11 / 9e10", r"\beta_\text{v5e}", (W / W_ici).subs(at_v5e))
alpha = ici_d.step(r"$\alpha$ on a v5e: 1.97e14 / 9e10", r"\alpha_\text{v5e}",
                   (C / W_ici).subs(at_v5e))
y_ch7 = ici_d.step("ch. 7's example: $F = 16384$, $B = 32$", r"Y_\text{ICI}",
                   y_ici.subs({F: 16384, B: 32, **at_v5e}))
y_ch8 = ici_d.step("ch. 8: LLaMA-3-70B ($F = 28672$), $B = 64$", r"Y_\text{ICI}",
                   y_ici.subs({F: 28672, B: 64, **at_v5e}))
at_4x8 = {B: 64, D: 8192, F: 28672, Y: 32, **at_v5e}
ici_us = [ici_d.step(text, rf"T_\text{{{name}}} / \text{{us}}", t.subs(at_4x8) * us)
          for text, name, t in (
    ("ch. 8's check of one bf16 matmul on a v5e 4x8: $B = 64$, $D = 8192$, $F = 28672$, "
     "$Y = 32$; the ICI", "ICI", t_ici),
    ("the HBM", "HBM", t_hbm), ("the math", "math", up.t_math))]
ici_d.claim(r"$Y_\text{ICI} = F/(B \beta)$ and $Y_\text{math} = F/\alpha$, the forms of How to "
            "Scale Your Model",
            y_ici.subs(W, beta_s * W_ici) == F / (B * beta_s)
            and y_math.subs(C, alpha_s * W_ici) == F / alpha_s)
ici_d.claim(r"$\beta$ = 9.1 on a v5e (the book: 'around 8'); ch. 7's example gives $Y = 56$ (the "
            r"book's 64 takes $\beta = 8$), ch. 8's gives 49 (the book's 56)",
            round(float(beta), 1) == 9.1 and int(y_ch7) == 56 and int(y_ch8) == 49)
ici_d.claim("on a 4x8 at $B = 64$ the matmul stays HBM-bound: 11.7 us of ICI, 17.9 us of HBM "
            "(the book: 11 and 18, with 8.1e11), 4.8 us of math (the book truncates to 4)",
            [round(float(t), 1) for t in ici_us] == [11.7, 17.9, 4.8])
ici_d.claim(r"the compute-bound limit over two axes is $2F/\alpha$ = 26 on a v5e. Erratum: ch. 8 "
            r"divides by 2550, the v5p's $\alpha$ (22); either way a 4x4 is fine and a 4x8 is not",
            round(float(alpha)) == 2189 and round(float(2 * 28672 / alpha)) == 26
            and 16 < 2 * 28672 / alpha < 32)
# latency-bound collectives (ch. 7, Appendix C): the per-shard test
line8 = sr.mesh("tpu-v5e", {"Y": 8}, custom=True)  # a 1-D line of 8: hypothetical
ag8 = sr.all_gather(line8, V_b, "Y")
v_star = ici_d.step("an AllGather over 8 v5e chips is latency-bound below (bytes)",
                    r"V^*_8", sr.crossover(ag8.t_lat, ag8.t_bw, V_b))
ici_d.claim(r"8-way: 360 kB, i.e. 45 kB a shard; $B = 16$, $D = 8192$ in int8 (131 kB) is "
            r"latency-bound. Erratum: the appendix's takeaway tests total bytes against "
            r"$W_\text{ici}$ $\times$ 1 us; its own example divides by the shards",
            v_star == 360000 and sr.all_gather(line8, 16 * 8192, "Y").bound == "latency")
wide = int8_plan("8x8", 1)
net_ms = ici_d.step("LLaMA-3-70B, int8, $B = 1$ on a v5e 8x8: the collectives (2 AllReduces a "
                    "layer at their hop-latency floor; one sequence cannot split over Y, so the "
                    "chips along Y share a KV-head shard and split its query heads: no "
                    "AllToAll)", r"T_\text{net} / \text{ms}", wide.time.t_net * ms)
mem_ms = ici_d.step("against reading 1/64 of the weights", r"T_\text{mem} / \text{ms}",
                    wide.time.t_mem * ms)
ici_d.claim(r"past 16 chips small-batch decode turns network-bound: on an 8x8 the latency "
            r"floor of the collectives (4.5 ms) is $2.6\times$ the HBM time, where a 4x4's "
            "step is HBM-bound", wide.bound == "network" and round(float(net_ms), 1) == 4.5
            and round(float(net_ms / mem_ms), 1) == 2.6 and int8_16[1].bound == "memory")
# 2-D weight-stationary sharding (ch. 7 question 7, Appendix B)
xyz = sr.mesh(chip, {"X": X, "Y": Y, "Z": Z})
t_2d = ici_d.step(r"2-D weight-stationary $W_\text{in}[D_X, F_{YZ}]$: $\text{AllGather}_{YZ}$, "
                  r"$\text{AllReduce}_X$, $\text{ReduceScatter}_{YZ}$", r"T_\text{2D}",
                  (sr.all_gather(xyz, 2 * B * D / X, "YZ").net_time
                   + sr.all_reduce(xyz, 2 * B * F / (Y * Z), "X").net_time
                   + sr.reduce_scatter(xyz, 2 * B * D / X, "YZ").net_time))
t_1d = ici_d.step("1-D over all three axes: AllGather and ReduceScatter of $[B, D]$",
                  r"T_\text{1D}", (sr.all_gather(xyz, 2 * B * D, "XYZ").net_time
                                   + sr.reduce_scatter(xyz, 2 * B * D, "XYZ").net_time))
t_2d_n = t_2d.subs(Z, N / (X * Y))
x_opt = ici_d.step(r"$N = XYZ$ chips; the $X$ that minimises $T_\text{2D}$", r"X_\text{opt}",
                   sr.crossover(sp.diff(t_2d_n, X), 0, X))
t_2d_opt = ici_d.step("there", r"T_\text{2D}", sp.simplify(t_2d_n.subs(X, x_opt)))
n_2d = ici_d.step("2-D beats 1-D above", r"N^*", sr.crossover(t_1d, t_2d_opt, N))
ici_d.claim(r"$X_\text{opt} = \sqrt{DN/(2F)}$ and $N^* = 18 F/D = 32 (F/D)(3/4)^2$, the book's "
            r"general form. Erratum: for $F = 4D$ that is 72 chips; the book prints "
            r"'$128 (3/4)^2 = 81$'",
            sp.simplify(x_opt - sp.sqrt(D * N / (2 * F))) == 0 and sp.simplify(
                n_2d - 18 * F / D) == 0 and n_2d.subs(F, 4 * D) == 72)

# --- The serving engine: prefill, disaggregation, evictions ---------------------------------
eng_d = Derivation("Prefill, disaggregated serving and KV evictions",
                   source=CH8 + " (What about prefill?); " + CH7
                   + " (Designing an Effective Inference Engine)")
t_pre = eng_d.step("prefill of $n_p$ tokens at batch 1: compute-bound at utilisation MFU",
                   r"T_\text{prefill}", 2 * P * n_p / (N * C * MFU))
ratio = eng_d.step(r"prefill servers per decode server: supply $1/T_\text{prefill}$ each, demand "
                   r"$B$ requests per $n_\text{dec}$ steps", r"n_\text{prefill} / n_\text{decode}",
                   prefill_decode_ratio(t_pre, T_step, batch=B, generated=n_dec))
evict = eng_d.step("KV tokens evicted per decode step: $B/n_g$ requests finish, each with "
                   "$n_p + n_g$ tokens", r"\text{evicted}", kv_evictions(B, n_p, n_g))
pre = eng_d.step("LLaMA-3-70B, 8192 tokens, 16 v5e chips, 40% MFU", r"T_\text{prefill} / \text{s}",
                 sr.prefill(llama70, v5e_slice("4x4"), prompt=CTX, mfu=0.4).book_time)
assert pre == t_pre.subs({P: llama70.params, n_p: CTX, N: 16, MFU: sp.Rational(2, 5),
                          **at_v5e})  # the formula is the plan's
bf16_16 = sr.serve(llama70, v5e_slice("4x4"), batch=32, context=CTX)  # bf16 weights and KV
split = eng_d.step("with decode at $B = 32$ on the bf16 4x4 (its general-form step), "
                   "$n_\\text{dec}$ = 512",
                   r"n_\text{prefill} / n_\text{decode}",
                   prefill_decode_ratio(pre, bf16_16.book_time, batch=32, generated=N_DEC))
ev = eng_d.step("$B = 32$, $n_p$ = 8192, $n_g$ = 4096", r"\text{evicted}",
                kv_evictions(32, CTX, 4096))
eng_d.claim("a prefill of 8192 tokens takes 0.9 s (0.92 with 70.6e9 parameters; the book's "
            "0.91 takes 70e9)", round(float(pre), 2) == 0.92)
eng_d.claim("about 3 prefill servers per decode server (3.3; the book's 3 takes the 19 ms step "
            "of $B = 43$ with $B = 32$)", round(float(split)) == 3)
eng_d.claim("$B (n_p + n_g) / n_g$ = 96 tokens evicted per step",
            evict == B * (n_p + n_g) / n_g and ev == 96)

# --- The latency-throughput trade-off -------------------------------------------------------
lt_d = Derivation("Latency against throughput: the batch is the knob",
                  source=CH8 + " (Visualizing the Latency Throughput Tradeoff)")
ceiling = lt_d.step(r"tokens/s per chip as $B$ grows, in the general form (past $B_\text{crit}$ "
                    "the MLP is compute-bound): each token's FLOPs and its KV reads",
          r"\lim_{B\to\infty} \frac{B}{N T_\text{step}}",
          sp.cancel(sr.limit(B / (N * (B * S * KV / (N * W) + mlp_math)), B)))
lt_mesh = v5e_slice("4x4")
lt2 = int8_plan("4x4", B, context=2048)  # symbolic in B, for the crossover
t1 = lt_d.step("LLaMA-3-70B, int8 weights and KV, v5e 4x4, 8192 tokens: the general form at "
               "$B = 1$", r"T(1) / \text{ms}", book16[1] * ms)
t_cap = lt_d.step(f"at the HBM cap, $B = {int8_16[1].max_batch}$",
                  r"T(B_\text{max}) / \text{ms}", book16[int8_16[1].max_batch] * ms)
per_ms = B / (lt2.n * lt2.book_time) / ms  # tokens per ms per chip
tpc120 = lt_d.step(r"2048 tokens: tokens per ms per chip at $B = 120$, the int8 $B_\text{crit}$",
                   r"\frac{B}{N T}\Big|_{120} \cdot \text{ms}", per_ms.subs(B, 120))
roof = lt_d.step("and the ceiling as $B$ grows (its FLOPs counted on the matmul parameters)",
                 r"\frac{B}{N T}\Big|_{\infty} \cdot \text{ms}",
                 ceiling.subs({S: 2048, KV: lt2.model.kv_bytes_per_token,
                               P: lt2.model.matmul_params, **at_v5e}) / ms)
b2 = lt_d.step("the batch at which latency doubles", r"B_{2\times}",
               sr.crossover(lt2.book_time, 2 * lt2.book_time.subs(B, 1), B))
cheaper = lt_d.step(r"tokens per chip-second there, over $B = 1$'s: "
                    r"$B_{2\times} T(1) / T(B_{2\times})$",
                    r"B_{2\times} / 2", b2 / 2)
lt_d.claim("5.5 ms at batch 1 and 20 ms at the HBM cap (the book: 'from 5.5ms with low batch "
           "size to 20 ms with very large batches')",
           round(float(t1), 1) == 5.5 and round(float(t_cap)) == 20)
lt_d.claim("at 2048 tokens, 0.89 tokens per ms per chip at $B = 120$, under a ceiling of 0.90 "
           "(the book: 'plateaus at around 1 token / ms / chip')",
           round(float(tpc120), 2) == 0.89 and round(float(roof), 2) == 0.90)
lt_d.claim(r"doubling the latency makes tokens $78\times$ cheaper at 2048 tokens ($77.5\times$, "
           r"$B = 155$; the book: 'roughly $100\times$'), and that is the ceiling itself: past "
           r"$B_\text{crit}$ the step grows in proportion to $B$, so no larger batch buys more",
           int(b2) == 155 and round(float(cheaper)) == 78
           and cheaper == roof * ms * lt2.n * lt2.book_time.subs(B, 1))

# --- Cost ------------------------------------------------------------------------------------
cost_d = Derivation("What a token costs", source=CH8 + "; prices: " + PRICE_SOURCE)
flops_usd = cost_d.step("FLOPs a dollar buys at peak", r"\text{FLOPs}/\$", C * 3600 / price)
cost_d.step(r"dollars per decoded token: $N$ chips for $T_\text{step}$ seconds make $B$ tokens",
            r"\$/\text{token}", price * N * T_step / (3600 * B))
floor = cost_d.step("and its floor when compute-bound: $2P$ FLOPs a token at peak",
                    r"\$/\text{token}_\text{min}", 2 * P / flops_usd)
per_chip = {}
for name, usd in PRICES.items():
    value = sr.flops_per_dollar(name, usd, PRICE_SOURCE)
    assert value == flops_usd.subs({C: sr.chip(name).peak(), price: usd})
    per_chip[name] = cost_d.step(f"{name} (\\${float(usd):g} an hour)",
                                 rf"\text{{FLOPs}}/\$_\text{{{name}}}", value, value=value)
usd_plans = [int8_16[1], int8_16[32], int8_16[138], int8_plan("4x4", lt2.max_batch, 2048)]
usd = [cost_per_million_tokens(plan, PRICES["tpu-v5e"], PRICE_SOURCE) for plan in usd_plans]
cost_d.step("LLaMA-3-70B int8 on a v5e 4x4 (plan's step): $B$ = 1, 32, 138 (HBM cap) at 8192 "
            "tokens; 552 (cap) at 2048", r"\$/\text{Mtok}", sp.ImmutableMatrix([row(usd, 3)]))
floor70 = cost_d.step("its compute-bound floor at 100% MFU", r"\$/\text{Mtok}_\text{min}",
                      10**6 * floor.subs({P: llama70.params, C: v5e.peak(),
                                  price: PRICES["tpu-v5e"]}))
cost_d.claim("FLOPs per dollar: H100 3.3e17, v5p 3.9e17, v5e 5.9e17 (the Feb 2025 table "
             "omits the 3600 s an hour: 9.2e13, 1.09e14, 1.64e14, its H100 entry truncated to "
             "9.1e13; later revisions print the v5e as 5.8e17)",
             [round(float(v) / 1e17, 1) for v in per_chip.values()] == [3.3, 3.9, 5.9]
             and round(float(per_chip["tpu-v5e"] / 3600) / 1e14, 2) == 1.64)
cost_d.claim("a million tokens cost $32 at batch 1, $1.6 at 32, $0.92 at the 8K cap and "
             "$0.35 at the 2K cap, against a $0.24 floor: the KV reads, and the activations "
             "every chip reads whole, keep decode above it",
             [round(float(c), 2) for c in usd] == [32.24, 1.64, 0.92, 0.35]
             and round(float(floor70), 2) == 0.24)

# --- Figure ----------------------------------------------------------------------------------
lt_png = OUT / "06_latency_throughput.png"
caps8 = [caps["int8", "2x4"], caps["int8", "4x4"]]  # 42 and 138
sr.plot.latency_throughput_plot(
    llama70, [v5e_slice(s) for s in ("2x4", "4x4")], context=CTX, weights="int8", kv="int8",
    batches=sorted({2**i for i in range(10)} | {c + d for c in caps8 for d in (0, 1)}),
    path=lt_png, title="LLaMA-3-70B decode on TPU v5e, 8192 tokens, int8 weights and KV")

NOTES = [step_d, kv_d, size_d, moe_d, ici_d, eng_d, lt_d,
         (lt_png, "LLaMA-3-70B decode on v5e slices, int8 weights and KV, 8192 tokens: step "
                  "latency (symroof's plan, perfect overlap) against tokens/s per chip for "
                  "batch 1, 2, 4, ...; squares mark the HBM cap, dotted lines go past it. "
                  "Twice the chips nearly halve the latency at each batch, keep the tokens/s "
                  "per chip, and raise the cap from 42 to 138"),
         cost_d]
DERIVATIONS = [n for n in NOTES if isinstance(n, Derivation)]
assert all(ok for d in DERIVATIONS for _, ok in d.claims) and lt_png.exists()

if __name__ == "__main__":
    print_notes(NOTES)
