r"""Training: the backward pass, rematerialisation, optimizer memory and the parallelism rooflines.

Claim: a training step's weight matmuls cost 6 FLOPs a parameter and token, the $6ND$ rule
(forward 2, $dL/dX$ 2, $dL/dW$ 2), read off the rows of one step and checked op by op against a
NumPy step that counts what it runs; the attention core adds $12 B L H S^2 d_h$ beside it,
$S/(8D)$ of the layers' matmuls. Remat trades that against memory: keeping each layer's input
(block remat) stores $D$ numbers a token and layer instead of about $20D$ and reruns the
forward ($8ND$); Adam in the book's accounting holds 10 bytes a parameter. On a slice every
strategy is a roofline in the per-chip batch: DP and FSDP need $B/N > C/W_\text{ici}$ per axis
(850 on a v5p pod), TP needs $Y < F W_\text{ici}/C$ (11 for LLaMA-3-70B), FSDP + TP at
$X_\text{opt} = \sqrt{2BN/F}$ needs $B/N > \alpha^2/(2F)$ (113; 453 in the revision ch. 6
quotes, which added the $X$ and $Y$ traffic); across pods a slice needs $C/W_\text{dcn}$ =
73,440 tokens. LLaMA-3-70B on 15T tokens takes 45 days (the book: 44) on a v5p pod at 40% MFU
and 40 days on 4096 H100s at 45%; its 4M-token batch is 468 tokens a chip on the pod: too few
for FSDP alone, enough for FSDP + TP. On GPUs the bandwidth is $W_\text{GPU}$ inside a node and
$W_\text{node}$ beyond it, and model parallelism across nodes divides the DP cost.

Source: "How to Scale Your Model", ch. 4 (https://jax-ml.github.io/scaling-book/
transformers/), ch. 5 (https://jax-ml.github.io/scaling-book/training/), ch. 6
(https://jax-ml.github.io/scaling-book/applied-training/) and ch. 12 (https://jax-ml.github.io/
scaling-book/gpus/), read from the book's markdown: transformers.md, training.md and
applied-training.md at scaling-book commit 0819a7d (Feb 2025), training.md at dea4256 and
applied-training.md at 41731a7 where later revisions changed a number, gpus.md at 1a55377.
Every worked number is rebuilt from the model presets and the chip records and asserted to the
book's rounding; where the book slips, the claim says so. In the parallelism sections $B$
counts tokens (the book's ch. 5 convention); in the step's rows $B$ is sequences of $S$ tokens.
The per-layer collectives of these plans are also compared with what XLA's partitioner emits
(``symroof.xla.check_train_layers``, optional: it needs jax; this script does not).
"""

import os
from pathlib import Path

import numpy as np
import sympy as sp

import symroof as sr
from symroof.derivation import Derivation, print_notes
from symroof.models import REMAT_POLICIES, saved_activations
from symroof.models.training import ATTENTION_MATMUL_KEYS, MATMUL_KEYS
from symroof.models.training_memory import remat_recompute
from symroof.symbols import B, C, D, F, G, H, L, N, S, V, V_b, X, Y, Z, d_h

CH4 = "How to Scale Your Model, ch. 4: https://jax-ml.github.io/scaling-book/transformers/"
CH5 = "How to Scale Your Model, ch. 5: https://jax-ml.github.io/scaling-book/training/"
CH6 = ("How to Scale Your Model, ch. 6: "
       "https://jax-ml.github.io/scaling-book/applied-training/")
CH12 = "How to Scale Your Model, ch. 12: https://jax-ml.github.io/scaling-book/gpus/"
OUT = Path(os.environ.get("SYMROOF_OUT", "out"))
OUT.mkdir(parents=True, exist_ok=True)

BOOK = {"grad_bytes": 0}  # the book's 10 bytes a parameter: bf16 weights, fp32 Adam moments
POLICIES = tuple(REMAT_POLICIES)  # none, selective, matmul_outputs, full
ONCE = ("final_input", "final_norm", "lm_head", "loss")  # kept once, not per layer
MHA = {G: H, F: 4 * D, d_h: D / H}  # the book's ch. 4 shape: multi-head, F = 4D, D = H d_h
W_ici = sp.Symbol("W_ici", positive=True)  # the book's bidirectional per-axis ICI figure
GB, TB = sp.Integer(10**9), sp.Integer(10**12)
YEAR = sp.Rational(3652425, 10000) * 86400  # a Gregorian year, seconds
M4 = 4 * 2**20  # LLaMA-3's "4M tokens" batch, as 1024 sequences of 4096

sym = sr.Transformer()  # every dimension a symbol
llama70, llama13, tiny = sr.model("llama-3.1-70b"), sr.model("llama-2-13b"), sr.model("tiny")
v5p, h100, b200 = sr.chip("tpu-v5p"), sr.chip("h100"), sr.chip("b200")
at_v5p = {C: v5p.peak(), W_ici: 2 * v5p.link_bw}  # both neighbours' links of a wrapped axis
dims70 = {D: llama70.D, F: llama70.F, L: llama70.L, H: llama70.H, G: llama70.G,
          d_h: llama70.d_h, V: llama70.V}


def fl(rows, keys, field="flops"):
    """A field summed over some rows: a step's symbolic Costs or a counted breakdown."""
    return sum((getattr(rows[k], field) if hasattr(rows[k], field) else rows[k][field])
               for k in keys)


def rnd(x, digits=3):
    """A readable number for a table: whole from 100 up, else ``digits`` significant."""
    x = float(x)
    return sp.Integer(round(x)) if abs(x) >= 100 else sp.Float(x, digits)


def table(labels, rows):
    r"""A matrix with its row labels as the left-hand side: [a; b; ...] = [[...]]."""
    return (r"\begin{matrix} " + r" \\ ".join(labels) + r" \end{matrix}",
            sp.ImmutableMatrix([[rnd(v) for v in row] for row in rows]))


#: the book's conditions are of its one MLP block: symroof's conventions but that layer
BOOK_LAYER = sr.profile("symroof").replace(condition_layer="mlp_block")


def plan(model, mesh, strategy, batch=B, seq=4096, **kw):
    kw.setdefault("conventions", BOOK_LAYER)
    return sr.train_plan(model, mesh, strategy, batch_tokens=batch, seq=seq, widths=BOOK, **kw)


# --- The backward pass: 6 N D out of the rows -----------------------------------------------
bwd_d = Derivation("The backward pass: $6ND$ out of the rows, attention beside it",
                   source=CH4 + " (Forward and reverse FLOPs; Global FLOPs and Params "
                   "Calculation; Fractional cost of attention)")
rows = sr.train_ops(sym, B, S)  # B sequences of S tokens, no remat
BOOK_ROWS = sr.train_ops(sym, B, S, conventions="book")  # the same, all S^2 pairs useful
n = B * S
FWD = [f"fwd/{k}" for k in MATMUL_KEYS]
BWD = [f"bwd/{k}/{d}" for k in MATMUL_KEYS for d in ("dx", "dw")]
P_mm = sym.matmul_params
bwd_d.step("parameters of the weight matmuls: Q, K, V, O, gate, up and down in each layer, the "
           "unembedding once", r"P_\text{mm}", sp.factor(P_mm))
f_fwd = bwd_d.step("forward: every token through every weight matmul, 2 FLOPs a "
                   "multiply-accumulate", r"\text{FLOPs}^\text{mm}_\text{fwd} / (B S)",
                   sp.factor(fl(rows, FWD) / n))
f_bwd = bwd_d.step(r"backward: $dL/dW = X^\top dL/dY$ and $dL/dX = dL/dY\,W^\top$, $2NPM$ "
                   "FLOPs each",
                   r"\text{FLOPs}^\text{mm}_\text{bwd} / \text{FLOPs}^\text{mm}_\text{fwd}",
                   sp.cancel(fl(rows, BWD) / fl(rows, FWD)))
six = bwd_d.step("so a step's weight matmuls cost", r"\text{FLOPs}^\text{mm} / (B S P_\text{mm})",
                 sp.cancel((fl(rows, FWD) + fl(rows, BWD)) / (n * P_mm)))
attn = bwd_d.step(r"beside them the attention core's six matmuls ($QK^\top$ and $AV$ forward; "
                  r"$dP$, $dV$, $dQ$, $dK$ backward) over all $S \times S$ scores",
                  r"\text{FLOPs}^\text{attn}",
                  sp.factor(fl(rows, ATTENTION_MATMUL_KEYS)))
useful = bwd_d.step("of which a causal mask uses", r"\text{FLOPs}^\text{attn}_\text{useful}",
                    sp.factor(fl(rows, ATTENTION_MATMUL_KEYS, "useful_flops")))
book_attn = bwd_d.step(r"the same count in one call: the rows under the book "
                       "conventions (attention pairs: all), useful FLOPs",
                       r"\text{FLOPs}^\text{attn}_\text{book}",
                       sp.factor(fl(BOOK_ROWS, ATTENTION_MATMUL_KEYS, "useful_flops")))
layer_mm = fl(rows, FWD + BWD) - 6 * n * D * V  # the layers' weight matmuls
share = bwd_d.step("against the layers' weight matmuls, for multi-head attention, $F = 4D$ and "
                   "$D = H d_h$",
                   r"\text{FLOPs}^\text{attn} / \text{FLOPs}^\text{mm}_\text{layers}",
                   sp.cancel((attn / layer_mm).subs(MHA)))
qkvo = fl(rows, [f"{p}/attn/{k}_proj{s}" for k in "qkvo"
                 for p, s in (("fwd", ""), ("bwd", "/dx"), ("bwd", "/dw"))])
s_qkvo = bwd_d.step("the same against the Q, K, V, O projections alone", r"\text{FLOPs}^\text{attn}"
                    r" / \text{FLOPs}^\text{QKVO}", sp.cancel((attn / qkvo).subs(MHA)))
vocab = bwd_d.step("the vocabulary: the unembedding's forward, $dX$ and $dW$",
                   r"\text{FLOPs}^\text{lm\_head}",
                   sp.factor(fl(rows, ["fwd/lm_head", "bwd/lm_head/dx", "bwd/lm_head/dw"])))
embed = bwd_d.step("and the input embedding, a gather whose backward scatter-adds $dL/dx$",
                   r"\text{FLOPs}^\text{embed}", rows["fwd/embed"].flops
                   + rows["bwd/embed"].flops)
per_tok = bwd_d.step("LLaMA-3-70B: $6P$ FLOPs a token ($P$ = 70.55e9, the embedding table "
                     "counted as the book counts it)", r"6 P / 10^{11}", 6 * llama70.params
                     / 10**11)
ms_tok = bwd_d.step("one token's training FLOPs on one v5p (4.59e14 FLOP/s)",
                    r"6 P / C_\text{v5p} / \text{ms}", 6 * llama70.params * 1000 / v5p.peak())
attn70 = bwd_d.step("its attention core at $S = 4096$, per token, against $6P$",
                    r"12 L H d_h S / (6 P)", (attn / n).subs(dims70).subs(S, 4096)
                    / (6 * llama70.params))
bwd_d.claim(r"the weight matmuls cost 2, 4 and 6 $P_\text{mm}$ FLOPs a token forward, backward "
            "and in all: the $6ND$ rule, read off the rows", sp.expand(f_fwd - 2 * P_mm) == 0
            and f_bwd == 2 and six == 6)
bwd_d.claim("attention adds $12 B L H S^2 d_h$ (the book's $12 B T^2 N H$ a layer; a causal "
            "mask uses $S(S + 1)/(2 S^2)$ of it); with $F = 4D$ it passes the layers' matmuls at "
            "$S = 8D$ and the QKVO projections at $S = 2D$",
            attn == 12 * B * L * H * S**2 * d_h and useful == 6 * B * L * H * S * (S + 1) * d_h
            and share == S / (8 * D) and s_qkvo == S / (2 * D))
bwd_d.claim("under the book conventions the useful attention FLOPs are $12 B T^2 N H$ a "
            "layer: symroof's causal count differs by the convention attention_pairs alone",
            book_attn == attn)
bwd_d.claim("the vocabulary costs $6 B S D V$ and the embedding $B S D$ adds. Erratum: ch. 4's "
            "summary table gives $12 BTDV$; its body's $6 BTDV$ is right (the input embedding is "
            "a gather, not a matmul)", vocab == 6 * B * S * D * V and embed == B * S * D)
bwd_d.claim("LLaMA-3-70B: 4.2e11 FLOPs a token (4.23e11), 1 ms a token on one v5p (0.92); "
            "attention at 4096 tokens adds 7.6%",
            round(float(per_tok), 1) == 4.2 and round(float(ms_tok), 2) == 0.92
            and round(float(attn70) * 100, 1) == 7.6)

# The NumPy twin: one counted step of the tiny model under every remat policy
checks = {r: sr.check_training(tiny, batch=2, seq=8, remat=r) for r in POLICIES}
none_rows = checks["none"].counted
counted_mm = fl(none_rows, FWD + BWD)
bwd_d.claim(r"the counted NumPy step (tiny model, $B = 2$, $S = 8$) equals the rows exactly, "
            "every op and every kept tensor, under all four remat policies; its counted weight "
            r"matmuls are $6 B S P_\text{mm} = 6 \times 16 \times 102912$",
            all(c.ok for c in checks.values()) and counted_mm == 6 * 16 * tiny.matmul_params
            and tiny.matmul_params == 102912)

# --- Rematerialisation ----------------------------------------------------------------------
remat_d = Derivation("Rematerialisation: recomputed FLOPs against kept activations",
                     source=CH4 + " (Gradient checkpointing; question 6); " + CH5
                     + " (problem 2); " + CH6)
layer_keys = [k[4:] for k in rows if k.startswith("fwd/")
              and k[4:] not in ("embed", "final_norm", "lm_head", "loss")]
kept, extra, extra_mm = {}, {}, {}
for r in POLICIES:
    sa = saved_activations(sym, B, S, r)
    kept[r] = sum(sa.values())
    keys = remat_recompute(r)
    keys = layer_keys if keys is None else keys
    extra[r] = sum(rows[f"fwd/{k}"].flops for k in keys)
    extra_mm[r] = sum(rows[f"fwd/{k}"].flops for k in keys
                      if f"fwd/{k}" in FWD + ["fwd/attn/scores", "fwd/attn/av"])
    per_layer = sum(v for k, v in sa.items() if k not in ONCE) / (sym.act_bytes * n * L)
    note = " (bf16 numbers a token and layer; multi-head, $F = 4D$)" if r == "none" else ""
    policy = REMAT_POLICIES[r].replace("S x S", r"$S \times S$")
    remat_d.step(f"{r.replace('_', ' ')}: {policy}{note}",
                 rf"M_\text{{{r.replace('_', ' ')}}} / (2 B S L)", sp.cancel(per_layer.subs(MHA)))
    if r != "none":
        remat_d.step("its recomputed matmul FLOPs (weight and attention matmuls)",
                     rf"\text{{FLOPs}}^\text{{re}}_\text{{{r.replace('_', ' ')}}}",
                     sp.factor(extra_mm[r]))
book84 = remat_d.step(r"ch. 4's example, 4M tokens (4e6), $L = 64$, $D = 8192$, every tensor "
                      r"kept (the $S \times S$ scores left out)",
                      r"2 \cdot 20\, B S D L / \text{TB}",
                      2 * 20 * 4 * 10**6 * 8192 * 64 / TB)
remat_d.claim(r"no remat keeps $20D$ numbers a token and layer for a multi-head $F = 4D$ layer "
              r"(the book's 'roughly 20') plus the $S \times S$ softmax, $HS$, which the book "
              "leaves out; 84 TB in ch. 4's example, 4.2 TB with block remat",
              sp.cancel((kept["selective"] - kept["none"]) / (2 * n * L)) == -H * S
              and round(float(book84)) == 84 and round(float(book84 / 20), 1) == 4.2)
remat_d.claim(r"block remat ('full') reruns the layers' forward: $2 B S (P_\text{mm} - D V)$ more "
              "weight FLOPs, so the layers' $6ND$ becomes $8ND$, and the forward attention core "
              "again",
              sp.expand(extra_mm["full"] - 2 * n * (P_mm - D * V)
                        - 4 * B * L * H * S**2 * d_h) == 0)
remat_d.claim("keeping the matmul outputs recomputes the two attention matmuls, "
              "$4 B L H S^2 d_h$ (the book's question 6: $4 B T^2 N H$ a layer), plus the softmax "
              "and the elementwise ops, of order $B H S^2 + B S D$",
              extra_mm["matmul_outputs"] == 4 * B * L * H * S**2 * d_h
              and sp.degree(sp.expand(extra["matmul_outputs"] - extra_mm["matmul_outputs"]), S)
              == 2)
remat_d.claim("it keeps $13D$ a token and layer, not the book's 'closer to 7': the book counts "
              "each of the 7 matmul outputs as $D$ wide, but gate and up are $F = 4D$ wide (and "
              "the down projection's output is the next layer's kept input)",
              sp.cancel((sum(v for k, v in saved_activations(sym, B, S, "matmul_outputs")
                               .items() if k not in ONCE) / (2 * n * L)).subs(MHA)) == 13 * D)
# LLaMA-3-70B at 4M tokens: kept bytes and the step's FLOPs, policy by policy
at70 = {**dims70, B: 1024, S: 4096}
base70 = sum(c.flops.subs(at70) for c in rows.values())  # the step's FLOPs, no remat
kept70 = [kept[r].subs(at70) / TB for r in POLICIES]
cost70 = [(base70 + sp.sympify(extra[r]).subs(at70)) / base70 for r in POLICIES]
remat_d.step("LLaMA-3-70B, 1024 sequences of 4096: kept activations (TB) and step FLOPs over no "
             "remat's, for none, selective, matmul outputs, full",
             *table([r"M_\text{act} / \text{TB}", r"\text{FLOPs} / \text{FLOPs}_\text{none}"],
                    [kept70, cost70]))
remat_d.step("ch. 6's accounting instead: $n$ checkpoints of width $D$ a layer",
             r"M_\text{ckpt}", 2 * D * B * sp.Symbol("n", positive=True) * L)
remat_d.claim(r"for LLaMA-3-70B the $S \times S$ softmax is 65% of what no remat keeps (176 of "
              r"269 TB); block remat keeps 6.7 TB (2.5% of it) for $1.33\times$ the FLOPs; "
              "selective remat drops the softmax for 1.2% more FLOPs",
              round(float((kept70[0] - kept70[1]) / kept70[0]) * 100) == 65
              and round(float(kept70[0])) == 269 and round(float(kept70[3]), 1) == 6.7
              and round(float(cost70[3]), 2) == 1.33 and round(float(cost70[1]), 3) == 1.012)

# --- Optimizer memory -----------------------------------------------------------------------
opt_d = Derivation("Parameters and Adam: 10 bytes a parameter",
                   source=CH5 + " (Data Parallelism); " + CH6 + "; " + CH12 + " (quiz 5)")
P = sp.Symbol("P", positive=True)  # parameters


def per_param(**widths):
    mem = sr.train_memory(sym, B, S, "full", **widths)
    return sp.cancel(sum(v for k, v in mem.items() if k != "activations") / sym.params)


b_book = opt_d.step("bf16 weights, fp32 first and second moments, no gradients counted (the "
                    "book's setting, ``grad_bytes=0``)", r"M_\text{state} / P", per_param(**BOOK))
b_grad = opt_d.step("with bf16 gradients (symroof's default)", r"M_\text{state} / P",
                    per_param())
b_mixed = opt_d.step("and an fp32 master copy (mixed precision)", r"M_\text{state} / P",
                     per_param(master_bytes=4))
opt_d.step("largest model under pure data parallelism: one chip's HBM holds it all",
           r"P_\text{max}", sp.Symbol("M_chip", positive=True) / b_book)
p_v5p = opt_d.step("on a v5p (96 GB)", r"P_\text{max}^\text{v5p} / 10^9", v5p.hbm_bytes
                   / b_book / GB)
state70 = opt_d.step("LLaMA-3-70B's weights and Adam", r"10 P / \text{GB}",
                     10 * llama70.params / GB)
gpu_min = sr.min_training_slice(llama70, "h100", widths=BOOK)
opt_d.step("H100s that hold it (80 GB each)", r"N_\text{min}^\text{H100}", gpu_min.chips)
tp8 = opt_d.step("with 8-way TP and everything else replicated (DP): per GPU",
                 r"10 P / 8 / \text{GB}", 10 * llama70.params / 8 / GB)
opt_d.claim("10, 12 and 16 bytes a parameter; the book's 10 is the setting "
            "``widths={'grad_bytes': 0}`` used below", (b_book, b_grad, b_mixed) == (10, 12, 16))
opt_d.claim("pure DP on a v5p holds at most 9.6e9 parameters (the book: 'about 9B')",
            p_v5p == sp.Rational(48, 5))
opt_d.claim("LLaMA-3-70B: 706 GB (the book's 700 GB takes 70e9), 9 H100s at least, two 8-GPU "
            "nodes (ch. 12 quiz 5); 8-way TP with DP needs 88 GB a GPU (the book: 87.5) and "
            "does not fit in 80",
            round(float(state70)) == 706 and gpu_min.chips == 9 and gpu_min.slice_chips == 16
            and round(float(tp8)) == 88 and tp8 > 80)

# --- The conditions, in the book's letters --------------------------------------------------
cond_d = Derivation("When each strategy stays compute-bound: the formulas of How to Scale "
                    "Your Model",
                    source=CH5 + " (Data Parallelism; Fully-Sharded Data Parallelism; Tensor "
                    "Parallelism; Combining FSDP and Tensor Parallelism; Scaling Across Pods)")
chip = sr.symbolic_chip(W_net=W_ici / 2)  # one link each way: a wrapped axis gathers at W_ici
mesh3 = sr.mesh(chip, {"X": X, "Y": Y, "Z": Z})
mixed = plan(sym, mesh3, "fsdp+tp", fsdp="XY", tp="Z")  # FSDP on two axes, TP on the third
lay = plan(sym, sr.mesh(chip, {"X": X}), "fsdp").layer
t_math = cond_d.step(r"FSDP over one axis of $X$ chips, forward pass of the MLP layer "
                     r"$\text{In}[B_X, D] \cdot W_\text{in}[D_X, F] \cdot W_\text{out}[F, D_X]$ "
                     "of How to Scale Your Model",
                     r"T_\text{math}",
                     lay["forward/compute"].flops / C)
t_comm = cond_d.step(r"its two weight AllGathers ($2DF$ bytes each, at $W_\text{ici}$)",
                     r"T_\text{comms}",
                     lay["forward/fsdp/all-gather W_in"].net_time
                     + lay["forward/fsdp/all-gather W_out"].net_time)
b_fsdp1 = cond_d.step("compute-bound above (DP's backward AllReduces give the same)",
                      r"(B/X)^*", sp.cancel(sr.crossover(t_math, t_comm, B) / X))
lay3 = plan(sym, mesh3, "fsdp").layer  # FSDP over X, Y and Z: N = XYZ chips
fsdp3 = cond_d.step("FSDP over all three axes of a torus ($M_X = 3$): its gathers use the links of "
                    "all three", r"(B/N)^*", sp.cancel(sr.crossover(
                        sp.cancel(lay3["forward/compute"].flops / C),
                        sp.cancel(lay3["forward/fsdp/all-gather W_in"].net_time
                                  + lay3["forward/fsdp/all-gather W_out"].net_time), B)
                        / (X * Y * Z)))
per_role = {"compute": 0, "fsdp": 0, "tp": 0}  # the forward pass of FSDP (X, Y) + TP (Z)
for key, cost in mixed.layer.items():
    if key.startswith("forward/"):
        role = key.split("/")[1]
        per_role[role] += cost.flops / C if role == "compute" else cost.net_time
y_tp = cond_d.step(r"TP over one axis of $Z$ chips: gather $\text{In}$, reduce-scatter "
                   r"$\text{Out}$, against the layer's math; batch-free", r"Z^*",
                   sr.crossover(sp.cancel(per_role["compute"] * Z), sp.cancel(per_role["tp"] * Z),
                                Z))  # both sides times Z: no Z in a denominator to check
x = sp.Symbol("x", positive=True)  # the FSDP degree (the book's X), N/x the TP degree
u = sp.Symbol("u", positive=True)  # x^2
t_m, t_f, t_t = (sp.cancel(per_role[r].subs({Z: N / x, X: x / Y}))
                 for r in ("compute", "fsdp", "tp"))
cond_d.step("FSDP on two axes ($M_X = 2$) and TP on the third, $N$ chips, $x$ of them FSDP: the "
            "forward's FSDP gathers", r"T_\text{FSDP}", t_f)
cond_d.step("its TP gather and reduce-scatter", r"T_\text{TP}", t_t)
cond_d.step("and its math", r"T_\text{math}", t_m)
x_opt = cond_d.step(r"$\max(T_\text{FSDP}, T_\text{TP})$ is least where they meet "
                    r"($T_\text{FSDP}\,x = T_\text{TP}\,x$ is linear in $x^2$)", r"X_\text{opt}",
                    sp.sqrt(sr.crossover(sp.cancel(t_f * x).subs(x**2, u), sp.cancel(t_t * x), u)))
ratio2 = cond_d.step(r"there $T_\text{math} / T_\text{comms}$ grows as $\sqrt{B}$; squared",
                     r"(T_\text{math} / "
                     r"T_\text{FSDP})^2", sp.cancel((t_m / t_f.subs(x, x_opt))**2))
b_mix = cond_d.step("so it is compute-bound above ($X$ and $Y$ traffic overlapping each other: "
                    "the current ch. 5)", r"(B/N)^*_\text{FSDP+TP}", sr.crossover(ratio2, 1, B) / N)
b_old = cond_d.step(r"the Feb 2025 revision adds the two instead, "
                    r"$T_\text{FSDP} + T_\text{TP} = 2 T_\text{FSDP}$",
                    r"(B/N)^*_\text{FSDP+TP, added}", sr.crossover(ratio2 / 4, 1, B) / N)
a_v5p = cond_d.step(r"v5p: $\alpha = C / W_\text{ici}$ = 4.59e14 / 1.8e11", r"\alpha_\text{v5p}",
                    (C / W_ici).subs(at_v5p))
v_fsdp = cond_d.step("FSDP over the three axes of a v5p slice", r"(B/N)^*", fsdp3.subs(
    at_v5p))
v_tp = cond_d.step("TP over one v5p axis for LLaMA-3-70B ($F = 28672$)", r"Y^*",
                   y_tp.subs(at_v5p).subs(F, llama70.F))
v_x = cond_d.step(r"$X_\text{opt}$ for its 4M-token batch on the v5p pod ($N = 8960$)",
                  r"X_\text{opt}",
                  x_opt.subs({B: M4, N: 8960, F: llama70.F}))
v_mix = cond_d.step("FSDP + TP, overlapping (current ch. 5)", r"(B/N)^*_\text{FSDP+TP}",
                    b_mix.subs(at_v5p).subs(F, llama70.F))
v_old = cond_d.step("added (the revision ch. 6 quotes)", r"(B/N)^*_\text{FSDP+TP, added}",
                    b_old.subs(at_v5p).subs(F, llama70.F))
cond_d.claim(r"per-chip batch $B/X > C/W_\text{ici}$ for DP and FSDP alike, $\alpha/M_X$ over "
             r"$M_X$ axes; TP needs $Y < M_Y F W_\text{ici}/C$ (one axis: $F/\alpha$) whatever the "
             "batch",
             b_fsdp1 == C / W_ici and fsdp3 == C / (3 * W_ici)
             and y_tp == F * W_ici / C)
cond_d.claim(r"$X_\text{opt} = \sqrt{(B/F)(M_X/M_Y) N}$ with $M_X/M_Y = 2$ (``sr.train_plan``'s "
             r"conditions solve the same crossovers). Erratum: the later ch. 5's problem 3 writes "
             r"$\sqrt{(F/B)(M_X/M_Y) N}$ and then evaluates $B/F$ (1333); more batch means more "
             "FSDP",
             sp.simplify(x_opt - sp.sqrt(2 * B * N / F)) == 0)
cond_d.claim(r"at $X_\text{opt}$, $B/N > \alpha^2/(M_X M_Y F) = \alpha^2/(2F)$; adding the $X$ "
             r"and $Y$ traffic gives $4 \alpha^2/(M_X M_Y F) = 2 \alpha^2/F$, $4\times$ more. The "
             r"revisions differ by that factor: Feb 2025 (0819a7d) prints '$B/N > 400$' and "
             r"$2 \times 2550^2/F$, dea4256 prints '$B/N > 99$' and $2550^2/(2F)$, for the same "
             "$F = 32768$",
             b_mix == C**2 / (2 * F * W_ici**2)
             and b_old == 4 * b_mix
             and round(float(b_old.subs(at_v5p).subs(F, 32768)), -2) == 400
             and int(b_mix.subs(at_v5p).subs(F, 32768)) == 99)
cond_d.claim(r"v5p: $\alpha$ = 2550, FSDP over three axes needs 850 tokens a chip (7.6M tokens "
             "for the 8960-chip pod); TP for LLaMA-3-70B stops at $Y = 11$ (11.24)",
             a_v5p == 2550 and v_fsdp == 850 and round(850 * 8960 / 1e6, 1) == 7.6
             and round(float(v_tp), 2) == 11.24)
cond_d.claim(r"LLaMA-3-70B at 4M tokens on the pod: $X_\text{opt}$ = 1619 (the book's 1618 takes "
             "$B$ = 4.19e6), so about 2048-way FSDP and 4-way TP; FSDP + TP needs 113 tokens a "
             "chip (113.4), 453 in the revision ch. 6 quotes (453.6: the book's 453); the "
             "batch gives 468, below FSDP's 850 and above both",
             round(float(v_x)) == 1619 and round(float(x_opt.subs({B: 4.19e6, N: 8960,
                                                                    F: llama70.F}))) == 1618
             and round(float(v_mix), 1) == 113.4 and int(v_old) == 453
             and int(M4 / 8960) == 468 and v_mix < v_old < M4 / 8960 < v_fsdp)
ex_x = sp.sqrt(2 * 48 * 1024 * 64 / sp.Integer(32768))  # ch. 5: N = 64, B = 48K, F = 32768
cond_d.claim(r"ch. 5's example, $N = 64$ (4x4x4), $B$ = 48K, $F = 32768$: $X_\text{opt}$ = 13.9 "
             "when 48K is 49152 tokens (13.7 with 48000), so 16-way FSDP and 4-way TP",
             round(float(ex_x), 1) == 13.9)

dcn_d = Derivation("Across pods: data parallelism over DCN", source=CH5 + " (Scaling Across "
                   "Pods); " + CH6)
a_dcn = dcn_d.step(r"a slice of $M$ chips AllReduces its gradients over DCN at $M W_\text{dcn}$ "
                   r"(each chip has its share of its host's NICs), so the slice's batch must "
                   r"exceed $C/W_\text{dcn}$ whatever $M$ is; v5p: 4.59e14 / 6.25e9",
                   r"C / W_\text{dcn}",
                   v5p.peak() / v5p.network.dcn_bw)
two_pods = sr.mesh("tpu-v5p", {"P": 2, "X": 16, "Y": 20, "Z": 28}, dcn="P")
w_dcn2 = V_b / sr.all_gather(two_pods, V_b, "P").t_bw  # a ring of 2 slices: each sends half
b_dcn2 = dcn_d.step("two v5p pods, pure DP across them: a ring of two slices sends half the "
                    "bytes", r"(B / N_\text{slices})^*", v5p.peak() / w_dcn2)
dcn_d.claim("a slice needs 73,440 tokens a step (36,720 with two slices), far below LLaMA-3's "
            "4M. The book evaluates it three ways: 3.8e18/5e13 = 76,000 (Feb 2025), "
            "4.46e14/6.25e9 = 71,360 (dea4256; the table's $C$ is 4.59e14) and '75,000' in the "
            "takeaways", a_dcn == 73440 and b_dcn2 == 36720)

# --- One slice, every strategy: LLaMA-3-70B on a v5p pod -------------------------------------
pod_d = Derivation("LLaMA-3-70B on a v5p pod: one slice, every strategy",
                   source=CH6 + " (How to Shard LLaMA 3-70B for Training); " + CH5)
pod = sr.mesh("tpu-v5p", "16x20x28")
B_POD = 1015 * 4096  # the 4M batch as whole 4096-token sequences that divide over 8960 chips
SPLITS = {  # label: (strategy, the mesh axes of each role)
    "DP": ("dp", {}),
    "ZeRO-1": ("zero1", {}),
    "FSDP": ("fsdp", {}),
    "FSDP+TP": ("fsdp+tp", {"fsdp": "YZ", "tp": "X"}),
    "ZeRO-1+TP+PP": ("zero1+tp+pp", {"fsdp": "Z", "tp": "X", "pp": "Y"}),
}
plans = {k: plan(llama70, pod, s, batch=B_POD, **kw) for k, (s, kw) in SPLITS.items()}
mfu = {k: 6 * llama70.params * B_POD / (pod.n_chips * v5p.peak() * p.lower)
       for k, p in plans.items()}
pod_d.step("the batch: 1015 sequences of 4096 tokens (the book's 4M is 1024 sequences; 1015 is "
           r"a multiple of 35, so it divides over $16 \times 20 \times 28 = 2^8 \times 35$ chips)",
           r"B / N", sp.Rational(B_POD, pod.n_chips))
pod_d.step("DP, ZeRO-1, FSDP (all on $X$, $Y$, $Z$), FSDP on $Y$, $Z$ with TP on $X$, ZeRO-1 on "
           "$Z$ with TP on $X$ and 20 pipeline stages on $Y$ (80 microbatches), remat 'full': "
           "HBM per chip (GB), step time with perfect and with no overlap (s), and the MFU the "
           "first allows",
           *table([r"M / \text{GB}", r"T_\text{lower} / \text{s}", r"T_\text{upper} / \text{s}",
                   r"6 P B / (N C T_\text{lower})"],
                  [[p.memory_total / GB for p in plans.values()],
                   [p.lower for p in plans.values()], [p.upper for p in plans.values()],
                   list(mfu.values())]))
fsdp_c = plans["FSDP"].conditions["fsdp"]
pod_d.claim("Erratum: ch. 6 describes the 4M batch as '1024 sequences of length 8192' (that is "
            "8M tokens); its answers use 1024 sequences of 4096, LLaMA-3's initial length",
            1024 * 8192 == 2 * M4 and 1024 * 4096 == M4)
pod_d.claim("DP and ZeRO-1 do not fit: 706 and 142 GB a chip of 96 (every chip holds the $2P$ "
            "bytes of bf16 weights); sharding the weights too (FSDP) leaves 0.82 GB",
            not plans["DP"].fits and not plans["ZeRO-1"].fits
            and round(float(plans["DP"].memory_total / GB)) == 706
            and round(float(plans["ZeRO-1"].memory_total / GB)) == 142
            and round(float(plans["FSDP"].memory_total / GB), 2) == 0.82)
pod_d.claim(f"FSDP alone is comms-bound; its plan's condition reads ``{fsdp_c}``. And 8960 data "
            "shards split each of the 1015 sequences 9 ways (the book: FSDP without sequence "
            "sharding stops at one chip a sequence)", fsdp_c.holds is False and plans["FSDP"].bound
            == "network" and "split 9 ways" in plans["FSDP"].notes[0])
fsdp_tp_b = plans["FSDP+TP"].time["backward"]
pod_d.claim("FSDP + TP is 16% faster than FSDP (0.66 s a step against 0.78) and balanced: its "
            "backward pass's compute (0.436 s) and collectives (0.438 s) differ by under 1%, the "
            "network just ahead, so the step reads network-bound. TP on a whole 16-chip axis "
            "exceeds $Y < 11.24$ and its forward pass waits on the network. The book's 4-way TP "
            "needs a sub-axis of 4 chips, which a torus slice of whole axes does not have",
            plans["FSDP+TP"].bound == "network" and 16 > v_tp
            and plans["FSDP+TP"].time["forward"].bound == "network"
            and fsdp_tp_b.t_net > fsdp_tp_b.t_math > fsdp_tp_b.t_mem
            and float(fsdp_tp_b.t_net / fsdp_tp_b.t_math) < 1.01
            and abs(float(fsdp_tp_b.t_math) - 0.436) < 0.001
            and abs(float(fsdp_tp_b.t_net) - 0.438) < 0.001
            and abs(float(plans["FSDP+TP"].lower) - 0.66) < 0.01
            and abs(float(plans["FSDP"].lower) - 0.78) < 0.01
            and 0.15 < float(1 - plans["FSDP+TP"].lower / plans["FSDP"].lower) < 0.17)
attn70_tok = 4 * llama70.L * llama70.H * llama70.d_h * 4096  # forward attention, a token
cap = 6 * llama70.params / (8 * llama70.params + 4 * attn70_tok)  # fwd, bwd, rerun fwd
pod_d.claim("at best 65% MFU for FSDP + TP, against 70% if it were compute-bound throughout "
            "(block remat reruns the forward: $6P$ of $8P$ + attention); the book assumes 40% for "
            r"the whole run. The 20-stage pipeline loses $(Z - 1)/(N_\text{mb} + Z - 1)$ = 19/99 "
            "to its bubble", 0.645 < float(mfu["FSDP+TP"]) < 0.66 and 0.695 < float(cap) < 0.705
            and plans["ZeRO-1+TP+PP"].bubble == sp.Rational(19, 99)
            and llama70.blocks.last_stage(20)["all"] == 4 and llama70.L == 80)

# Step time against the per-chip batch: each strategy's plan with B a symbol, its per-pass
# bounds compiled once and evaluated over the whole grid
CURVES = ("FSDP", "FSDP+TP", "ZeRO-1+TP+PP")
sym_plans = {k: plan(llama70, pod, SPLITS[k][0], **SPLITS[k][1]) for k in CURVES}
per_chip = np.geomspace(16, 2**14, 120)
grid = sr.evaluate({k: p.time for k, p in sym_plans.items()}, B=per_chip * pod.n_chips)
t_step = {k: sum(t["lower"] for t in g.values()) for k, g in grid.items()}
t_compute = sum(t["t_math"] for t in grid["FSDP"].values())  # FLOPs only, at peak
fwd_role = {"fsdp": 0, "tp": 0}  # FSDP + TP's forward collectives, per layer, B a symbol
for key, cost in sym_plans["FSDP+TP"].layer.items():
    if key.startswith("forward/") and key.split("/")[1] in fwd_role:
        fwd_role[key.split("/")[1]] += cost.net_time
knee = pod_d.step("FSDP on $Y$, $Z$ with TP on $X$: the forward already waits on TP (16 > 11.24); "
                  "FSDP's weight gathers outgrow TP's activation gathers below",
                  r"(B/N)_\text{knee}",
                  sr.crossover(fwd_role["fsdp"], fwd_role["tp"], B) / pod.n_chips)
flop_time = {k: plans[k].lower / sum(t.t_math for t in plans[k].time.values())
             for k in ("FSDP", "FSDP+TP")}
within = per_chip[np.argmax(t_step["FSDP"] / t_compute < 1.01)]
pod_d.claim("so FSDP + TP on whole axes keeps its step within 22% of its FLOPs (TP's excess, "
            "its norms' AllReduces included, hides under the backward's) down to 56 tokens a "
            r"chip, and FSDP alone within 1% down to about 840; at the batch of How to Scale "
            r"Your Model they take $1.13\times$ and $1.35\times$ their FLOP time",
            knee == 56 and float(max(t_step["FSDP+TP"][per_chip > 60]
                                     / t_compute[per_chip > 60])) < 1.22
            and 820 < within < 860 and abs(float(flop_time["FSDP+TP"]) - 1.13) < 0.01
            and abs(float(flop_time["FSDP"]) - 1.35) < 0.01)


def step_time_figure(path):
    """Step time against tokens a chip on the pod, one curve per strategy (perfect overlap),
    over the time its FLOPs take at peak; below, the ratio of the two."""
    from matplotlib.figure import Figure  # matplotlib loads only for the figures
    from matplotlib.ticker import FuncFormatter, NullLocator

    fig = Figure(figsize=(7.5, 6.2))
    top, low = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    top.plot(per_chip, t_compute, "k--", lw=1, label="FLOPs at peak (remat 'full')")
    for i, (k, t) in enumerate(t_step.items()):
        top.plot(per_chip, t, color=f"C{i}", label=SPLIT_LABELS[k])
        low.plot(per_chip, t / t_compute, color=f"C{i}")
    here = B_POD / pod.n_chips
    for ax in (top, low):
        ax.axvline(here, color="0.5", lw=0.8, ls=":")
        ax.grid(True, alpha=0.3)
    top.text(here / 1.07, 0.03, "the 4M batch:\n464 a chip", fontsize=8, color="0.35",
             ha="right")  # left of its line: the legend sits right of it, clear of every line
    for x_, text, i in ((float(v_fsdp), "FSDP alone: 850", 0),
                        (float(knee), "FSDP = TP gathers: 56", 1)):
        low.axvline(x_, color=f"C{i}", lw=0.8, ls="--")
        low.text(x_ * 1.07, 2.25, text, color=f"C{i}", fontsize=8, va="top")
    top.set(xscale="log", yscale="log", ylabel="step time (s)",
            title="LLaMA-3-70B on a TPU v5p pod (16x20x28, 8960 chips)")
    low.set(xscale="log", ylim=(0.9, 2.3), xlabel="batch per chip (tokens)",
            ylabel="step time / FLOP time")
    plain = FuncFormatter(lambda v, _: f"{v:g}")  # plain tick labels: no mathtext to typeset
    for axis in (top.yaxis, low.xaxis):
        axis.set_major_formatter(plain)
        axis.set_minor_locator(NullLocator())
    top.legend(fontsize=8, loc="lower right")
    fig.subplots_adjust(left=0.1, right=0.97, top=0.95, bottom=0.08, hspace=0.06)
    fig.savefig(path, dpi=100)


SPLIT_LABELS = {"FSDP": "FSDP on X, Y, Z (8960-way)",
                "FSDP+TP": "FSDP on Y, Z (560) + TP on X (16)",
                "ZeRO-1+TP+PP": "ZeRO-1 on Z (28) + TP on X (16) + 20 stages on Y"}
step_png = OUT / "05_step_time.png"
step_time_figure(step_png)


# --- GPUs: inside an NVLink node and beyond it ----------------------------------------------
gpu_d = Derivation("GPUs: inside an NVLink node and beyond it",
                   source=CH12 + " (Rooflines for LLM Scaling on GPUs; quiz 5)")
W_c = sp.Symbol("W_coll", positive=True)  # the book's W_collective
gpu_d.step(r"DP or ZeRO over $X$ GPUs, backward pass: $8BDF/X$ FLOPs a GPU against the weight "
           r"gradients' $8DF$ bytes at the group's AllGather bandwidth $W_\text{coll}$",
           r"(B/X)^*", sr.crossover(8 * B * D * F / (X * C), 8 * D * F / W_c, B) / X)
gpu_d.step("TP over $Y$ GPUs, forward pass: $4BDF/Y$ FLOPs against $4BD$ bytes",
           r"Y^*", sr.crossover(4 * B * D * F / C, 4 * B * D * Y / W_c, Y))  # both sides x Y
W_gpu = h100.link_bw * h100.network.nvlink_ports  # 450 GB/s a GPU, NVLink egress
W_node = h100.network.levels[1].bw_per_gpu * 8  # 400 GB/s a node (8 x 50 GB/s NICs)
C_h = h100.peak()
gpu_d.step(r"H100 (989e12 FLOP/s), as How to Scale Your Model forms it: $C / W_\text{GPU}$ "
           "inside a node",
           r"C / W_\text{GPU}",
           C_h / W_gpu)
gpu_d.step(r"and $C / W_\text{node}$ beyond it", r"C / W_\text{node}", C_h / W_node)
GROUPS = {  # label: (chip, mesh, the group's axes)
    "one node": ("h100", {"X": 8}, "X"),
    "SuperPod": ("h100", {"X": 128, "Y": 8}, "XY"),
    "two nodes": ("h100", {"N": 2, "G": 8}, "NG"),
    "one GPU a node": ("h100", {"P": 8, "X": 16, "Y": 8}, "X"),
    "B200 SuperPod": ("b200", {"X": 128, "Y": 8}, "XY"),
}
W_eff = {k: V_b / sr.all_gather(sr.mesh(c, shape), V_b, axes).t_bw
         for k, (c, shape, axes) in GROUPS.items()}
gpu_d.step(r"$W_\text{coll}$ as symroof's collectives give it (GB/s): an AllGather over one "
           "node, over a 1024-GPU SuperPod (128 nodes), over exactly two nodes, over 16 GPUs one "
           "a node (a B200 SuperPod as the H100's)",
           r"W_\text{coll} / (\text{GB/s})", sp.ImmutableMatrix([[rnd(w / GB, 4) for k, w in
                                                                 W_eff.items() if k[0] != "B"]]))
dp_node, dp_pod, dp_two = (C_h / W_eff[k] for k in ("one node", "SuperPod", "two nodes"))
gpu_d.step("so the per-GPU batch DP and ZeRO need: one node, the SuperPod, two nodes",
           r"(B/N)^*", sp.ImmutableMatrix([[rnd(dp_node, 4), rnd(dp_pod, 4), rnd(dp_two, 4)]]))
y_node = gpu_d.step(r"TP for LLaMA-3-70B ($F = 28672$) in one node (and over two: the same "
                    r"$W_\text{coll}$)",
                    r"Y^*", llama70.F * W_eff["one node"] / C_h)
pp_c = gpu_d.step("ZeRO-1 over 16 nodes while 8-way TP and 8 pipeline stages span 8 nodes: each "
                  "GPU reduces 1/64 of the gradients through its own NIC",
                  r"(B/N)^*_\text{ZeRO-1}", C_h / W_eff["one GPU a node"] / 64)
b2 = gpu_d.step(r"a B200 SuperPod (2250e12 FLOP/s, $W_\text{node}$ unchanged)",
                r"(B/N)^*_\text{B200}",
                b200.peak() / W_eff["B200 SuperPod"])
book_w = {k: V_b / sr.all_gather(sr.mesh("h100", GROUPS[k][1]), V_b, GROUPS[k][2],
                                  conventions="book").t_bw for k in ("one node", "SuperPod")}
book_node, book_pod = (C_h / book_w[k] for k in ("one node", "SuperPod"))
gpu_d.step(r"the same form in one call: the AllGathers under the book conventions "
           "(ring factor: no $(N - 1)/N$), one node and the SuperPod",
           r"(B/N)^*_\text{book}", sp.ImmutableMatrix([[rnd(book_node, 4), rnd(book_pod, 4)]]))
gpu_d.claim("at $C$ = 990e12 the book-form calls give 2200 and 2475 tokens a GPU "
            "(2198 and 2472.5 at the record's 989e12); symroof's 1923 and 2395 differ from them "
            "by the ring's 7/8 and 31/32 and nothing else",
            book_node * 990 / 989 == 2200 and book_pod * 990 / 989 == 2475
            and dp_node == book_node * sp.Rational(7, 8)
            and dp_pod == book_pod * sp.Rational(31, 32))
gpu_d.claim("2200 tokens a GPU in a node and 2475 beyond (990e12 over 450e9 and 400e9; 2198 and "
            "2473 with the record's 989e12) leave out the ring's $(N - 1)/N$: DP needs 1923 "
            "tokens a GPU on a node (7/8) and 2395 on the SuperPod (31/32, the leaf level)",
            round(float(C_h / W_gpu), -2) == 2200 and round(float(C_h / W_node), -1) == 2470
            and dp_node == C_h / W_gpu * sp.Rational(7, 8)
            and dp_pod == C_h / W_node * sp.Rational(31, 32))
gpu_d.claim(r"LLaMA-3 on 16,000 H100s would need about 40M tokens a batch for DP (16000 $\times$ "
            "2473 = 39.6M; it used 16M); ch. 12's quiz 5, question 3, '2,472' tokens a GPU, is the "
            "record's 989e12/400e9", round(16000 * float(C_h / W_node) / 1e6, 1) == 39.6
            and int(C_h / W_node) == 2472)
gpu_d.claim(r"over exactly two nodes the NVLink level binds ($(8/7) W_\text{GPU}$ = 514 GB/s "
            r"against the leaf's $2 W_\text{node}$ = 800 GB/s, as ch. 12's own 2-node AllGather "
            r"answer finds), so DP needs 1923 a GPU, as in one node. Erratum: the book's "
            r"$B/N > \alpha (X - 1)/X$ = 1237 halves the cross-node term and forgets the node "
            "level",
            dp_two == dp_node and round(float(C_h / W_node) / 2) == 1236)
gpu_d.claim(r"TP in a node stops at $Y$ = 14.9 for $F = 28672$ ($(8/7) F W_\text{GPU} / C$); the "
            "book's $F/2200$ gives 13.0 and its quiz answer divides by an unexplained 1995 "
            "(14.4); either way 8-way fits, and a node is 8 GPUs",
            round(float(y_node), 1) == 14.9 and round(28672 / float(C_h / W_gpu), 1) == 13.0)
gpu_d.claim("16-way TP over two nodes is comms-bound (16 > 14.9): the node level binds there "
            "too. Erratum: the book's $F > 2475 (Y - 8)$ ('up to 19-way') counts only the "
            "cross-node traffic", W_eff["two nodes"] == W_eff["one node"] and 16 > y_node)
gpu_d.claim("with model parallelism over 8 nodes the ZeRO-1 reduction needs 290 tokens a GPU "
            "(289.7): 990e12/3200e9 = 309, times the ring's 15/16",
            round(float(pp_c), 1) == 289.7
            and pp_c == C_h / (8 * W_node) * sp.Rational(15, 16))
gpu_d.claim("a B200 SuperPod needs 5449 tokens a GPU beyond a node (the book's 2250e12/400e9 "
            r"= 5625, times 31/32): $2.3\times$ the H100's, since $C$ grew and $W_\text{node}$ "
            "did not",
            b2 == sp.Rational(5625 * 31, 32) and round(float(b2 / dp_pod), 1) == 2.3)

# --- Whole runs -------------------------------------------------------------------------------
run_d = Derivation(r"Whole runs: FLOPs over chips $\times$ peak $\times$ MFU",
                   source=CH6 + " (Counting parameters and FLOPs); " + CH5
                   + " (Fully-Sharded Data Parallelism; Scaling Across Pods); " + CH12
                   + " (quiz 5)")
MFU = sp.Symbol("MFU", positive=True)
n_tok = sp.Symbol("n_tok", positive=True)
run_d.step(r"a run of $n_\text{tok}$ tokens on $N$ chips", r"T_\text{run}",
           6 * P * n_tok / (N * C * MFU))
T15 = 15 * 10**12
pod_run = sr.training_run(llama70, T15, pod, mfu=sp.Rational(2, 5))
one_chip = pod_run.model_flops / v5p.peak() / YEAR
run_d.step("LLaMA-3-70B, 15T tokens", r"6 P n_\text{tok} / 10^{24}", pod_run.model_flops / 10**24)
run_d.step("beside it, attention at 4096 tokens", r"\text{FLOPs}^\text{attn} / 10^{24}",
           pod_run.attention_flops / 10**24)
run_d.step("on one v5p at peak", r"T / \text{years}", one_chip)
run_d.step("on the 8960-chip pod at 40% MFU", r"T / \text{days}", pod_run.days)
ch5 = sr.training_run(llama70, T15, "tpu-v5p", chips=18823, mfu=sp.Rational(1, 2))
run_d.step("ch. 5: a 16M batch over 16e6/850 = 18823 chips (FSDP's limit) at 50% MFU",
           r"T / \text{days}", ch5.days)
ten = sr.training_run(llama70, T15, "tpu-v5p", chips=89600, mfu=sp.Rational(2, 5))
run_d.step("ten pods (89,600 chips), DP over DCN, 40% MFU", r"T / \text{days}", ten.days)
gpu_run = sr.training_run(llama70, T15, "h100", chips=4096, mfu=sp.Rational(9, 20))
run_d.step("ch. 12: 4096 H100s at 45% MFU", r"T / \text{days}", gpu_run.days)
run_d.claim("6.3e24 FLOPs (6.35e24 with $P$ = 70.55e9), 435 years on one chip (438 with it), 44 "
            "days on the pod at 40% (44.7; the book's 3.8e6 s)",
            round(float(pod_run.model_flops) / 1e24, 2) == 6.35 and round(float(one_chip)) == 438
            and int(pod_run.days) == 44 and round(float(pod_run.seconds) / 1e6, 2) == 3.86)
run_d.claim(r"attention adds 7.6% (4.8e23) at 4096 tokens, left out of $6 P n_\text{tok}$",
            round(float(pod_run.attention_flops / pod_run.model_flops) * 100, 1) == 7.6)
run_d.claim("ch. 5's 16M-token batch on 18,823 chips at 50% MFU: about 17 days; DeepSeek-V2's "
            "40M tokens would feed 47,000 chips (47,059), 5 pods",
            round(float(ch5.days)) == 17 and int(40e6 / 850) == 47058 and int(40e6 / 850 / 8960)
            == 5)
run_d.claim("ten pods at 40% MFU take 4.5 days. Erratum: ch. 5's (Feb 2025) 'about 2 days' "
            "is the run at 100% MFU (1.8 days)", round(float(ten.days), 1) == 4.5
            and round(float(ten.days * ten.mfu), 1) == 1.8)
run_d.claim("4096 H100s at 45% MFU: 40 days (40.3; the book's 3.5e6 s)",
            round(float(gpu_run.days)) == 40 and round(float(gpu_run.seconds) / 1e6, 1) == 3.5)

# --- The smallest slice for memory ------------------------------------------------------------
mem_d = Derivation("The smallest slice that holds a run",
                   source=CH6 + " (Counting parameters and FLOPs); " + CH12 + " (quiz 5)")
ckpt_n = {"Feb 2025": 4, "41731a7": 3}  # checkpoints a layer in the two revisions' answers
smallest = {rev: sr.min_training_slice(llama70, "tpu-v5p", batch_tokens=4 * 10**6, seq=4000,
                                       remat=k, widths=BOOK) for rev, k in ckpt_n.items()}
for rev, k in ckpt_n.items():
    s_ = smallest[rev]
    mem_d.step(f"LLaMA-3-70B, 4e6 tokens, {k} checkpoints of width $D$ a layer (ch. 6, {rev}): "
               "$10 P + 2 D B n L$", r"M / \text{TB}", s_.total / TB)
    mem_d.step("v5p chips it needs (96 GB each)", r"N_\text{min}", s_.chips)
twelve = sr.min_training_slice(llama70, "tpu-v5p", batch_tokens=4 * 10**6, seq=4000, remat=12,
                               widths=BOOK)
mem_d.step("with 12 checkpoints a layer, per chip of the pod", r"M / N / \text{GB}",
           twelve.per_chip(8960) / GB)
full_min = sr.min_training_slice(llama70, "tpu-v5p", batch_tokens=M4, seq=4096, remat="full",
                                 widths=BOOK)
mem_d.step(r"symroof's block remat at 1024 $\times$ 4096 tokens (layer inputs, and the logits "
           "once)",
           r"M / \text{TB}", full_min.total / TB)
feb, later = smallest["Feb 2025"], smallest["41731a7"]
mem_d.claim("4 checkpoints: 21.7 TB, 226 chips (the book's 21.6 TB and 225 round down), a "
            "256-chip slice; 2.4 GB a chip on the pod. Erratum: its table writes the "
            r"checkpoints as $2 \times 8192 \times (4 \times 10^6) \times 3 \times 80$ but "
            "evaluates 4 (20.9 TB), as its question asks",
            round(float(feb.total / TB), 1) == 21.7 and feb.chips == 226
            and feb.slice_chips == 256 and round(float(feb.per_chip(8960) / GB), 1) == 2.4
            and round(2 * 8192 * 4e6 * 4 * 80 / 1e12, 1) == 21.0)
mem_d.claim("3 checkpoints (41731a7): 16.4 TB (the book's 16.5), 172 chips (the book's 171 "
            "truncates 171.9), 1.8 GB a chip on the pod; 12 checkpoints give 7.1 GB (the book: "
            "'8GB')", round(float(later.total / TB), 1) == 16.4 and later.chips == 172
            and round(float(later.per_chip(8960) / GB), 1) == 1.8
            and round(float(twelve.per_chip(8960) / GB), 1) == 7.1)
mem_d.claim(r"so small a slice would take $44 \times 8960 / 171$ days, about 2300 days. "
            r"Erratum: the Feb "
            r"2025 answer prints '44 days $\times$ 8960 / 171 = 1752 days', which is 8960/225",
            round(44 * 8960 / 171) == 2305 and round(44 * 8960 / 225) == 1752)
mem_d.claim("block remat as symroof counts it (layer inputs and the 1.1 TB of logits) needs 7.4 "
            "TB: 78 chips, a 128-chip slice",
            round(float(full_min.total / TB), 1) == 7.4 and full_min.chips == 78
            and full_min.slice_chips == 128)

# --- Problems: LLaMA-2-13B on a v5p 16x16x16 --------------------------------------------------
p13_d = Derivation("Problems: LLaMA-2-13B on a v5p 16x16x16", source=CH5 + " (Some Problems "
                   "to Work, questions 1-3)")
cube = sr.mesh("tpu-v5p", "16x16x16")
B13 = 3 * 2**20  # "3M tokens" at 32K: 96 sequences
p13_d.step("parameters: $3 L D F + 4 D N H L + 2 V D$, exactly", r"P / 10^9", llama13.params / GB)
ckpt13 = 2 * L * B * (D + 2 * F)  # three checkpoints a layer, after the three big matmuls
act16 = p13_d.step("16M tokens (16e6), bf16 Adam state, checkpoints after the three big "
                   "matmuls", r"2 L B (D + 2F) / \text{TB}", ckpt13.subs(
                       {L: 40, B: 16 * 10**6, D: 5120, F: llama13.F}) / TB)
fsdp13 = plan(llama13, cube, "fsdp", batch=B13, seq=32768)
p13_d.step(r"$3 \times 2^{20}$ tokens at 32768: sequences, and tokens a chip of 4096",
           r"(B/T,\ B/N)",
           sp.Tuple(B13 // 32768, sp.Rational(B13, 4096)))
tp13 = p13_d.step("TP for $F = 13824$ on one axis", r"Y^*", y_tp.subs(at_v5p).subs(F, llama13.F))
x13 = p13_d.step(r"$X_\text{opt}$, FSDP on two axes ($B$ = 3e6, as the book)", r"X_\text{opt}",
                 x_opt.subs({B: 3 * 10**6, N: 4096, F: llama13.F}))
mix13 = [b.subs(at_v5p).subs(F, llama13.F) for b in (b_mix, b_old)]
step13 = sr.training_run(llama13, B13, cube, mfu=sp.Rational(2, 5))
p13_d.step("one step at 40% MFU", r"T_\text{step} / \text{s}", step13.seconds)
p13_d.claim("13.0e9 parameters (13.02e9). Erratum: the book's 13.1e9 adds rounded terms "
            "(8.5e9 + 4.2e9 + 0.39e9)", round(float(llama13.params / GB), 1) == 13.0)
p13_d.claim("130 GB of weights and Adam; 42 TB of checkpoints (41.9). Erratum: the Feb 2025 "
            r"answer writes '$B = 16 \times 10^{16}$' for 16M tokens (dea4256: 16e6)",
            round(10 * float(llama13.params / GB), -1) == 130 and round(float(act16)) == 42)
p13_d.claim(r"pure DP cannot hold 130 GB in 96; pure FSDP needs 850 $\times$ 4096 = 3.48M "
            "tokens, more "
            "than 3M: comms-bound (and 4096 data shards split each of 96 sequences)",
            B13 / 4096 < v_fsdp and 850 * 4096 == 3481600
            and "96 sequences" in fsdp13.notes[0])
p13_d.claim(r"FSDP + TP needs 235 tokens a chip (dea4256: $2550^2/(2F)$) or 940 (Feb 2025: "
            r"$2 \times 2550^2/F$): compute-bound at 768 in one revision, not in the other; TP "
            "on a whole axis stops at 5.4 < 16, hence the book's 4-chip sub-rings",
            [int(v) for v in mix13] == [235, 940] and mix13[0] < 768 < mix13[1]
            and round(float(tp13), 1) == 5.4)
p13_d.claim(r"$X_\text{opt}$ = 1333 with $B/F$, the answer's own number (its formula's $F/B$ "
            "would give 6.1), so about 1024-way FSDP and 4-way TP; one step at 40% MFU takes "
            "0.33 s (the book's '300ms' takes 3e6 tokens, 13e9 parameters and 4.6e14)",
            int(x13) == 1333 and round(float(sp.sqrt(sp.Rational(13824, 3 * 10**6) * 2 * 4096)),
                                       1) == 6.1
            and round(float(step13.seconds), 2) == 0.33
            and round(6 * 3e6 * 13e9 / (4096 * 4.6e14 * 0.4), 2) == 0.31)

# --- Figure: memory by part against the remat policy ----------------------------------------
PARTS = {  # label: the kept tensors (saved_activations keys) it groups
    "layer inputs": ("layer_input",),
    "norms and residuals": ("attn_norm", "mlp_norm", "attn/residual"),
    "attention: q, k, v, rope, AV, o": ("attn/q_proj", "attn/k_proj", "attn/v_proj",
                                         "attn/rope", "attn/av", "attn/o_proj"),
    "S x S softmax": ("attn/softmax",),
    "MLP: gate, up, SwiGLU": ("mlp/gate", "mlp/up", "mlp/swiglu"),
    "once: final norm, logits": ONCE,
}
kept_pod = {r: saved_activations(llama70, 1024, 4096, r) for r in POLICIES}
state_pod = 10 * llama70.params / pod.n_chips / GB  # weights and Adam, sharded like the rest
parts_pod = {label: [sum(kept_pod[r].get(k, 0) for k in keys) / pod.n_chips / GB
                     for r in POLICIES] for label, keys in PARTS.items()}
per_chip_pod = [state_pod + sum(v[j] for v in parts_pod.values()) for j in range(4)]
remat_d.claim("sharded over the 8960 chips of a v5p pod every policy fits: 30.1 GB a chip "
              "without remat, 0.83 GB with block remat, of 96",
              round(float(per_chip_pod[0]), 1) == 30.1 and round(float(per_chip_pod[3]), 2)
              == 0.83 and max(per_chip_pod) < v5p.hbm_bytes / GB)


def memory_figure(path):
    """Per-chip HBM by part for each remat policy (stacked bars), FLOPs over no remat's on top;
    an inset zooms on block remat's bar."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 4.6))
    ax = fig.subplots()
    inset = ax.inset_axes([0.8, 0.42, 0.17, 0.4])
    x_ = np.arange(len(POLICIES))
    bottom = np.full(len(POLICIES), float(state_pod))
    ax.bar(x_, bottom, 0.6, color="0.3", label="weights + Adam (10 B a parameter)")
    inset.bar(x_[-1:], bottom[-1:], 0.6, color="0.3")
    for i, (label, values) in enumerate(parts_pod.items()):
        values = np.array([float(v) for v in values])
        ax.bar(x_, values, 0.6, bottom=bottom, color=f"C{i}", label=label)
        inset.bar(x_[-1:], values[-1:], 0.6, bottom=bottom[-1:], color=f"C{i}")
        bottom = bottom + values
    for j, cost in enumerate(cost70):
        ax.text(x_[j], bottom[j] + 0.4, f"{bottom[j]:.1f} GB, {float(cost):.2f}x FLOPs",
                ha="center", fontsize=8)
    inset.set(xlim=(2.6, 3.4), ylim=(0, bottom[-1] * 1.1), xticks=[], title="full, zoomed")
    inset.title.set_fontsize(8)
    inset.tick_params(labelsize=7)
    ax.set_xticks(x_, [r.replace("_", " ") for r in POLICIES])
    ax.set(ylabel="HBM per chip (GB; a v5p has 96)", ylim=(0, float(bottom.max()) * 1.1),
           xlabel="remat policy",
           title="LLaMA-3-70B, 1024 x 4096 tokens, everything sharded over a v5p pod")
    handles, labels = ax.get_legend_handles_labels()  # beside the axes: clear of every bar
    ax.legend(handles[::-1], labels[::-1], fontsize=8, loc="upper left",
              bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
    fig.subplots_adjust(left=0.07, right=0.7, top=0.93, bottom=0.11)
    fig.savefig(path, dpi=100)


mem_png = OUT / "05_memory_by_remat.png"
memory_figure(mem_png)

NOTES = [bwd_d, checks["none"], remat_d, opt_d,
         (mem_png, "LLaMA-3-70B with its 4M-token batch (1024 sequences of 4096), every byte "
                   "sharded over the 8960 chips of a v5p pod: HBM per chip by part under each "
                   "remat policy, with the step's FLOPs over no remat's on top. No remat keeps "
                   r"every tensor the backward reads, 65% of it the $S \times S$ softmax; block "
                   "remat ('full') keeps the layer inputs and the logits, for a rerun forward. On "
                   "the whole pod every policy fits in 96 GB"),
         cond_d, dcn_d, pod_d,
         (step_png, "LLaMA-3-70B on the v5p pod: the step time (perfect overlap, remat 'full') "
                    "of three ways to split the mesh, against the batch per chip, and over the "
                    "time its FLOPs take at peak (below). FSDP alone turns comms-bound under "
                    "about 840 tokens a chip (the MLP layer's 850). With TP on the 16-chip axis "
                    r"the forward waits on TP at every batch ($16 > F/\alpha$ = 11.2), "
                    r"$1.13\times$ over the step at the 4M batch, until FSDP's weight gathers "
                    "outgrow TP's below 56 tokens a chip. The pipeline pays its bubble, 19/99, "
                    "everywhere, and is timed on its slowest stage, the last: 4 of the 80 "
                    "layers and the LM head. Dotted: the 4M batch, 464 a chip"),
         gpu_d, run_d, mem_d, p13_d]
DERIVATIONS = [n for n in NOTES if isinstance(n, Derivation)]
assert all(ok for d in DERIVATIONS for _, ok in d.claims)
assert step_png.exists() and mem_png.exists()

if __name__ == "__main__":
    print_notes(NOTES)
