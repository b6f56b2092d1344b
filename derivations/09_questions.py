r"""Questions asked backwards: how many chips, how large a model, how fast a request.

Claim: each of the book's inverse questions is one call. A per-chip batch threshold read
backwards gives the chips a batch feeds, $N = B/\text{threshold}$: a 16M-token batch keeps
18,823 v5p chips compute-bound under FSDP, a 4M one only 4934, fewer than a pod. An HBM
budget over the bytes a parameter holds gives the largest model (9.6e9 parameters on a v5p
with Adam); a byte count over HBM gives the chips, fractional and then rounded up to a slice
(21.6 TB: 225 v5p chips, a 256-chip slice). A model known only by its parameters reads its
weights in 10 ms from 32 v4p chips; a prefill at 40% MFU, requests per second per chip, the
decode ICI limit $Y < F/(B \beta)$ and the book's form of the latency/throughput curve come
out of the serving plans in the book's units. Checkpoints kept after the three MLP matmuls are
a tuple of kept tensors, $2 L B (D + 2F)$ bytes; FLOPs per dollar and the MFU of a run from
its chip-hours close the loop on cost.

Source: "How to Scale Your Model" (https://jax-ml.github.io/scaling-book/), read from the
book's markdown at scaling-book commit 0819a7d (Feb 2025): tpus.md (ch. 2), training.md (ch.
5), applied-training.md (ch. 6), inference.md (ch. 7), applied-inference.md (ch. 8). Every
number is one or two symroof calls, asserted to the book's rounding; where the book slips the
claim says so.
"""

import sympy as sp

import symroof as sr
from symroof.derivation import Derivation, print_notes
from symroof.hardware import PRICES as PRICE_TABLE
from symroof.models import saved_activations
from symroof.parallel import ici_condition, latency_throughput
from symroof.parallel.serving import WIDTHS
from symroof.symbols import B, C, D, F, L, M, X, Y, Z

CH2 = "How to Scale Your Model, ch. 2: https://jax-ml.github.io/scaling-book/tpus/"
CH5 = "How to Scale Your Model, ch. 5: https://jax-ml.github.io/scaling-book/training/"
CH6 = ("How to Scale Your Model, ch. 6: "
       "https://jax-ml.github.io/scaling-book/applied-training/")
CH7 = "How to Scale Your Model, ch. 7: https://jax-ml.github.io/scaling-book/inference/"
CH8 = ("How to Scale Your Model, ch. 8: "
       "https://jax-ml.github.io/scaling-book/applied-inference/")
PRICE_SOURCE = PRICE_TABLE["tpu-v5e"].cited  # the prices beside the chip records
BOOK = {"grad_bytes": 0}  # the book's 10 bytes a parameter: bf16 weights, fp32 Adam moments
ms, GB, TB = sp.Integer(1000), sp.Integer(10**9), sp.Integer(10**12)
W_ici = sp.Symbol("W_ici", positive=True)  # the book's bidirectional per-axis ICI figure
llama70, llama13 = sr.model("llama-3.1-70b"), sr.model("llama-2-13b")
v5e_4x4 = sr.mesh("tpu-v5e", "4x4")

# --- Chips for a batch ----------------------------------------------------------------------
batch_d = Derivation("Chips for a batch: a per-chip threshold read backwards",
                     source=CH5 + " (Fully-Sharded Data Parallelism; problems); " + CH6
                     + " (How to shard LLaMA 3-70B for training)")
ring3 = sr.mesh(sr.symbolic_chip(W_net=W_ici / 2), {"X": X, "Y": Y, "Z": Z})
sym_fsdp = sr.train_plan(sr.Transformer(), ring3, "fsdp", batch_tokens=B, seq=4096,
                         conventions="book").conditions["fsdp"]  # the book's MLP block
batch_d.step("FSDP over three wrapped axes: the per-chip batch it needs",
             r"(B/N)_\text{min}", sym_fsdp.threshold)
n_sym = batch_d.step("so a batch of $B$ tokens keeps at most this many chips compute-bound",
                     r"N_\text{max}", sym_fsdp.chips_for(B))
fsdp = sr.train_plan(llama70, sr.mesh("tpu-v5p", "4x4x4"), "fsdp", batch_tokens=2**20,
                     seq=4096, conventions="book").conditions["fsdp"]
n16 = batch_d.step("on a v5p (its threshold 2550/3 = 850), 16e6 tokens",
                   r"N_\text{max}(16\text{M})", fsdp.chips_for(16 * 10**6))
n2 = batch_d.step("2e6 tokens", r"N_\text{max}(2\text{M})", fsdp.chips_for(2 * 10**6))
n4 = batch_d.step(r"LLaMA-3's batch, $4 \times 2^{20}$ tokens", r"N_\text{max}(4\text{M})",
                  fsdp.chips_for(4 * 2**20))
n3 = batch_d.step(r"ch. 5 problem 3: $3 \times 2^{20}$ tokens", r"N_\text{max}(3\text{M})",
                  fsdp.chips_for(3 * 2**20))
batch_d.claim(r"$N_\text{max} = 3 B W_\text{ici}/C$: the threshold $\alpha/3$ read backwards",
              sp.simplify(n_sym - 3 * B * W_ici / C) == 0 and fsdp.threshold == 850)
batch_d.claim("ch. 5: '16e6 / (2550 / 3) = 18,823' chips, and at a 2M batch 'at most "
              r"$\approx$ 2400' (2353)",
              int(n16) == 18823 and int(n2) == 2352 and round(int(n2), -2) == 2400)
batch_d.claim("ch. 6: the 4M batch feeds 4934 chips, not the pod's 8960 (the book: 468 tokens "
              "a chip, below 850); ch. 5 problem 3: 3M tokens feed 3700, not 4096 (the book: "
              r"'850 $\times$ 4096 = 3.48M', slightly above 3M)",
              int(n4) == 4934 and n4 < 8960 and int(n3) == 3700 and n3 < 4096)

# --- The largest model, the chips for its bytes ---------------------------------------------
mem_d = Derivation("The largest model an HBM budget holds, and the chips bytes need",
                   source=CH5 + " (Data Parallelism); " + CH6 + " (Counting parameters and "
                   "FLOPs); " + CH8 + " (Thinking about throughput)")
p_sym = mem_d.step("bf16 weights and two fp32 Adam moments on a chip of $M$ bytes",
                   r"P_\text{max}", sr.max_params(sr.symbolic_chip(), BOOK))
p_v5p = mem_d.step("on a v5p (96 GB)", r"P_\text{max} / 10^9",
                   sr.max_params("tpu-v5p", BOOK) / GB)
need = sr.min_chips(21.6e12, "tpu-v5p")
mem_d.step("ch. 6's 21.6 TB on v5p chips", r"N = M_\text{run}/M_\text{chip}", need.fraction)
mem_d.step("and the smallest slice with them", r"N_\text{slice}", need.slice_chips)
b_tok = sp.Symbol("b", positive=True)
run_sym = sr.min_training_slice(llama70, "tpu-v5p", batch_tokens=b_tok, seq=4096, remat=4,
                                widths=BOOK)
mem_d.step(r"LLaMA-3-70B with 4 checkpoints of width $D$ a layer at $b$ tokens: $10P + 2 D b "
           r"\cdot 4 L$ over 96 GB (coefficients to 4 digits)", r"N",
           run_sym.chips.replace(sp.ceiling, lambda a: sp.ceiling(sp.N(a, 4))))
serve_min = {w: sr.min_chips(llama70.params * WIDTHS[w], "tpu-v5e") for w in
             ("bf16", "int8", "int4")}
mem_d.step("ch. 8: LLaMA-3-70B's weights on v5e chips (16 GB), in bf16, int8 and int4",
           r"N", sp.ImmutableMatrix([[sp.Float(float(n.fraction), 3)
                                      for n in serve_min.values()]]))
mem_d.claim(r"$P_\text{max} = M/10$: ch. 5's 'HBM per device / 10', 9.6e9 on a v5p (the book: "
            "'roughly 9B')", p_sym == M / 10 and p_v5p == sp.Rational(96, 10))
mem_d.claim("ch. 6: '21.6e12 / 96e9 = 225 TPUs', a 256-chip slice (the exact run, 21.7 TB, "
            "needs 226: derivation 05)",
            need.fraction == 225 and need.chips == 225 and need.slice_chips == 256)
mem_d.claim("symbolic in the batch, exact at a number: 4e6 tokens (976 sequences of 4096 and "
            "a bit) need 226 chips",
            run_sym.chips.subs(b_tok, 4 * 10**6) == 226)
mem_d.claim("ch. 8: 8.8, 4.4 and 2.2 chips' worth (8.75, 4.38 and 2.81 in the book, whose int4 "
            "row starts from 45 GB), slices 4x4, 2x4 and 2x2",
            [round(float(n.fraction), 1) for n in serve_min.values()] == [8.8, 4.4, 2.2]
            and [n.slice for n in serve_min.values()] == ["4x4", "2x4", "2x2"])

# --- A model as parameters and KV bytes ------------------------------------------------------
agg_d = Derivation("A model given as parameters and KV bytes a token",
                   source=CH2 + " (question 1); " + CH7 + " (pop quiz)")
load = sr.serve_params(200e9, sr.mesh("tpu-v4p", "2x4x4"))
t_load = agg_d.step("200e9 bf16 parameters over 32 v4p (1.2e12 B/s each): one read of the "
                    "weights", r"T / \text{ms}", load.time.lower * ms)


def quiz(batch):
    """ch. 7's pop quiz: 30e9 int8 parameters, 100 kB of KV a token, 8192 tokens, v5e 4x4."""
    return sr.serve_params(30e9, v5e_4x4, batch=batch, context=8192,
                           kv_bytes_per_token=100e3, weights="int8", kv="int8")


q4 = agg_d.step("ch. 7's pop quiz at $B = 4$: 30e9 int8 parameters, 100 kB of KV a token, "
                "8192 tokens, v5e 4x4", r"T(4) / \text{ms}", quiz(4).time.lower * ms)
q256 = agg_d.step(r"at $B = 256$, in the general form (the MLP compute-bound)",
                  r"T_\text{step}(256) / \text{ms}", quiz(256).book_time * ms)
agg_d.claim("ch. 2: 'the load takes around 10ms' (10.4 ms, memory-bound)",
            round(float(t_load)) == 10 and load.bound == "memory")
agg_d.claim("ch. 7: 2.5 ms at $B = 4$ (2.54) and 21 ms at $B = 256$ (20.9). The book reads "
            "the v5e's HBM as 8.1e11, the record 8.2e11",
            round(float(q4), 1) == 2.5 and round(float(q256)) == 21)

# --- Serving in the book's units -------------------------------------------------------------
units_d = Derivation("Serving in the units of How to Scale Your Model: prefill, requests, "
                     "the ICI limit",
                     source=CH7 + " (Distributing Inference); " + CH8 + " (What about "
                     "prefill?; Thinking about throughput; Visualizing the Latency Throughput "
                     "Tradeoff)")
pre70 = sr.prefill(70e9, v5e_4x4, prompt=8192, mfu=0.4)
pre = sr.prefill(llama70, v5e_4x4, prompt=8192, mfu=0.4)
units_d.step("prefill of 8192 tokens, 70e9 parameters on a v5e 4x4 at 40% MFU: $2 P T / (N C "
             r"\cdot \text{MFU})$", r"T_\text{prefill} / \text{s}", pre70.book_time)
units_d.step("LLaMA-3-70B's own 70.6e9", r"T_\text{prefill} / \text{s}", pre.book_time)
units_d.step("its counted FLOPs (attention included) at 40% MFU", r"T_\text{TTFT} / \text{s}",
             pre.seconds)
full = sr.serve(llama70, v5e_4x4, batch=42, context=8192)  # bf16: the HBM holds 42 sequences
qps = units_d.step("LLaMA-3-70B in bf16 on a v5e 4x4, its 42 sequences at 8192 tokens, 512 "
                   "generated a request: requests a second per chip (the general form's "
                   "step)", r"\text{QPS}/N", full.requests_per_s_per_chip(512, form="book"))
f16 = llama70.replace(F=16384)  # ch. 7's example width
y7 = units_d.step("the mesh width under which decode stays HBM-bound, $F = 16384$, $B = 32$, "
                  "v5e", r"Y_\text{ICI}",
                  ici_condition(sr.serve(f16, v5e_4x4, batch=32, context=8192))["ici"].threshold)
y8 = units_d.step("LLaMA-3-70B ($F = 28672$) at $B = 64$", r"Y_\text{ICI}",
                  ici_condition(sr.serve(llama70, v5e_4x4, batch=64,
                                         context=8192))["ici"].threshold)
sym_plan = sr.serve(llama70, v5e_4x4, batch=B, context=8192)
y_sym = units_d.step("at any batch", r"Y_\text{ICI}", ici_condition(sym_plan)["ici"].threshold)
curve = latency_throughput(llama70, v5e_4x4, context=8192, batches=[1, 138],
                              weights="int8", kv="int8", form="book")
units_d.step("LLaMA-3-70B int8 on a v5e 4x4 at 8192 tokens, the general form at $B = 1$ and at "
             "the HBM cap 138", r"T / \text{ms}",
             sp.ImmutableMatrix([[sp.Float(float(t) * 1e3, 3) for t in curve["latency"]]]))
units_d.claim("ch. 8: a prefill of 8192 tokens takes 0.91 s (0.92 with 70.6e9 parameters; 0.96 "
              "counting attention's FLOPs), compute-bound",
              round(float(pre70.book_time), 2) == 0.91 and round(float(pre.book_time), 2)
              == 0.92 and round(float(pre.seconds), 2) == 0.96 and pre.time.bound == "compute")
units_d.claim("0.265 requests a second per chip (the book's 0.27 is $43/(0.019 \\times 512 "
              r"\times 16)$: its 43 sequences and the rounded 19 ms step)",
              round(float(qps), 3) == 0.265)
units_d.claim(r"$Y_\text{ICI} = F W_\text{ici}/(B W) = F/(B \beta)$: 56 for ch. 7's example "
              r"and 49 for LLaMA-3-70B at $B = 64$. Erratum: the book takes $\beta = 8$ "
              r"('16384 / (32 $\times$ 8) = 64'); the v5e's is 9.1",
              int(y7) == 56 and int(y8) == 49
              and y_sym == 28672 * 9 * 10**10 / (82 * 10**10 * B))
units_d.claim("ch. 8: 'from 5.5ms with low batch size to 20 ms with very large batches'",
              [round(float(t) * 1e3, 1) for t in curve["latency"]] == [5.5, 20.2])

# --- Checkpoints as kept tensors -------------------------------------------------------------
ckpt_d = Derivation("Checkpoints after the three big matmuls, as kept tensors",
                    source=CH5 + " (problems 2 and 3)")
THREE = ("layer_input", "mlp/gate", "mlp/up")  # the down projection's output is the next input
kept = saved_activations(sr.Transformer(), B, 1, THREE)
per_layer = ckpt_d.step(r"kept per token batch $B$: the layer input and the gate and up "
                        "projections, every layer", r"M_\text{ckpt}",
                        sp.factor(sum(kept[k] for k in THREE)))
at13 = [sum(saved_activations(llama13, n, 1, THREE)[k] for k in THREE) / TB
        for n in (16 * 10**6, 3 * 10**6)]
ckpt_d.step("LLaMA-2-13B at 16e6 and 3e6 tokens", r"M_\text{ckpt} / \text{TB}",
            sp.ImmutableMatrix([[sp.Float(float(v), 3) for v in at13]]))
ckpt_d.claim(r"$2 L B (D + 2F)$, as in How to Scale Your Model; 42 TB at 16M tokens (41.9; "
             r"the Feb 2025 "
             r"answer writes '$B = 16 \times 10^{16}$') and 7.86 TB at 3M (the book: '~7.86e12')",
             per_layer == 2 * L * B * (D + 2 * F) and round(float(at13[0])) == 42
             and round(float(at13[1]), 2) == 7.86)

# --- Cost and utilisation --------------------------------------------------------------------
cost_d = Derivation("FLOPs per dollar and the MFU of a run", source=CH6 + " (Counting "
                    "parameters and FLOPs); " + CH8 + "; prices: " + PRICE_SOURCE)
PRICES = {name: p.usd_per_chip_hour for name, p in PRICE_TABLE.items()}  # USD a chip-hour
per_usd = [sr.flops_per_dollar(name, usd, PRICE_SOURCE) for name, usd in PRICES.items()]
cost_d.step("FLOPs a dollar buys at peak: H100, v5p, v5e", r"\text{FLOPs}/\$ / 10^{17}",
            sp.ImmutableMatrix([[sp.Float(float(v) / 1e17, 2) for v in per_usd]]))
run = sr.training_run(llama70, 15 * 10**12, "tpu-v5p", chips=8960, mfu=1)
u = cost_d.step("LLaMA-3-70B on 15T tokens, if the 8960-chip pod took ch. 6's 3.8e6 s",
                r"\text{MFU}", sr.mfu(run, 8960 * sp.Rational(38, 10) * 10**6 / 3600))
cost_d.claim("FLOPs per dollar: 3.3e17, 3.9e17 and 5.9e17 (the Feb 2025 table omits the 3600 "
             "s of an hour)", [round(float(v) / 1e17, 1) for v in per_usd] == [3.3, 3.9, 5.9])
cost_d.claim("3.8e6 s on the pod is 41% MFU (the book's 40%: its 3.8e6 rounds 3.86e6 down)",
             round(float(u), 2) == 0.41)

NOTES = [batch_d, mem_d, agg_d, units_d, ckpt_d, cost_d]
DERIVATIONS = NOTES
assert all(ok for d in DERIVATIONS for _, ok in d.claims)

if __name__ == "__main__":
    print_notes(NOTES)
