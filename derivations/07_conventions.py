r"""Conventions: why calculators give different numbers for the same step, field by field.

Claim: one decode step (batch 1, context 2048) and one prefill (2048 tokens) of Llama-3-8B's
layers (Llama-3.1-8B: the same blocks) on an H100 differ between symroof, the book ("How to
Scale Your Model"), LLM-Viewer and llm-analysis only through the accounting conventions each
uses; switching the differing fields one at a time from symroof's to a peer's accounts for
every row's FLOPs and bytes, with nothing left over. LLM-Viewer's lm_head (one FLOP a
multiply-add) halves that row; its fused attention re-reads K and V of all 32 query heads,
four times the 8 KV heads' bytes in decode; llm-analysis's all-pairs prefill attention
doubles the core's FLOPs. The H100's ridge point is 295 FLOP/B in symroof's and
llm-analysis's records, 322 in LLM-Viewer's (its 3.072e12 B/s) and 291 to 299 in the
book's printed figures.

Source: hahnyuan/LLM-Viewer model_analyzer.py and hardwares/hardware_params.py at 472f71f;
cli99/llm-analysis llm_analysis/analysis.py and gpu_configs/h100-sxm-80gb.json at d841e40;
"How to Scale Your Model", ch. 1 and 12 (https://jax-ml.github.io/scaling-book/). Each
profile's fields and the lines they come from: ``symroof conventions NAME``.
"""

import os
from pathlib import Path

import sympy as sp

import symroof as sr
from symroof.derivation import Derivation, print_notes
from symroof.symbols import B, S

SOURCE = ("LLM-Viewer model_analyzer.py at 472f71f; llm-analysis analysis.py at d841e40; "
          "How to Scale Your Model, ch. 1 and 12")
m, h100 = sr.model("llama-3.1-8b"), sr.chip("h100")
OUT = Path(os.environ.get("SYMROOF_OUT", "out"))
OUT.mkdir(parents=True, exist_ok=True)
PEERS = ("book", "llm-viewer", "llm-analysis")
STEPS = {"decode": (1, 1, 2047), "prefill": (1, 2048, 0)}  # (batch, new tokens, cached)

# --- one step under each profile -----------------------------------------------------------
d = Derivation("One step, four conventions", source=SOURCE)
diffs = {(phase, p): sr.compare_conventions(m, h100, *step, "symroof", p)
         for phase, step in STEPS.items() for p in PEERS}
for phase in STEPS:
    ours = diffs[(phase, PEERS[0])]
    ms = [ours.time(ours.a)] + [diffs[(phase, p)].time(diffs[(phase, p)].b) for p in PEERS]
    d.step(f"{phase}: the per-op sum of lower bounds under the profiles symroof, book, "
           "llm-viewer and llm-analysis, in milliseconds", r"t_\text{" + phase + "}",
           sp.ImmutableMatrix([[round(t * 1e3, 3) for t in ms]]))
d.claim("switching the differing fields one at a time from symroof's to each peer's accounts "
        "for every row's FLOPs and bytes, in decode and in prefill: nothing is left",
        all(x.explained for x in diffs.values()))

lv = diffs[("decode", "llm-viewer")]
lm_head = lv.rows["lm_head"]
d.step("LLM-Viewer's lm_head in decode: one FLOP a multiply-add (field "
       "lm_head_flops_per_mac) against symroof's two", r"\text{FLOPs}_\text{lm\_head} "
       r"(\text{LLM-Viewer} / \text{symroof})", sp.Rational(lm_head.b.flops, lm_head.a.flops))
core = lv.rows["attn/core"]
d.step("its fused core's KV bytes in decode (field fused_core: K and V of all H heads)",
       r"\text{KV}_\text{core} (\text{LLM-Viewer} / \text{symroof})",
       sp.Rational(core.b.kv_bytes, core.a.kv_bytes))
soft = d.step("and the core's FLOPs, as a formula in B and S (field softmax_flops: 5 an "
              "element, against scale, max, subtract, exp, sum, divide: 6S - 2 a row)",
              r"\Delta \text{FLOPs}_\text{core}", lv.formula("attn/core", "flops"))
d.claim("LLM-Viewer's lm_head is half symroof's, and its decode core reads 4 times the KV "
        "bytes (H/G = 32/8), both from one field each",
        lm_head.fields() == ["lm_head_flops_per_mac"] and 2 * lm_head.b.flops == lm_head.a.flops
        and core.b.kv_bytes == 4 * core.a.kv_bytes and "fused_core" in core.fields())
d.claim("the core's FLOPs differ by $H L (2 - S)$ a sequence: the softmax count alone",
        sp.expand(soft - 32 * 32 * B * (2 - S)) == 0)
la = diffs[("prefill", "llm-analysis")].rows["attn/core"]
d.step("llm-analysis's prefill core FLOPs against symroof's (fields attention_pairs, "
       "softmax_flops: all $T \\times S$ pairs, no softmax)",
       r"\text{FLOPs}_\text{core} (\text{llm-analysis} / \text{symroof})",
       sp.Rational(la.b.flops, la.a.flops))
d.claim("llm-analysis's prefill core costs 1.98 times symroof's: all $2048 \\times 2048$ "
        r"pairs at $4 d_h = 512$ FLOPs against the causal $2048 \cdot 2049 / 2$ at $512 + 6$ "
        "(the softmax)",
        round(float(sp.Rational(la.b.flops, la.a.flops)), 2) == 1.98
        and round(2 * 2048 / 2049 * 512 / 518, 2) == 1.98 and "attention_pairs" in la.fields())

# --- the H100's ridge in five records -------------------------------------------------------
r = Derivation("The H100's ridge point, record by record", source=SOURCE)
RIDGES = {
    "symroof": h100.critical_intensity("bf16"),
    "llm-analysis": sr.chip("llm-analysis/h100-sxm-80gb").critical_intensity("fp16"),
    "LLM-Viewer": sr.chip("llm-viewer/nvidia-h100").critical_intensity("fp16"),
    # the book prints C as 9.89e14 and as 1e15, W as 3.35e12 and as 3.4e12 (ch. 1 and 12)
    "book, 9.89e14 / 3.4e12": sp.Rational(989 * 10**12, 34 * 10**11),
    "book, 1e15 / 3.35e12": sp.Rational(10**15, 335 * 10**10),
}
r.step("C/W in the records of symroof, llm-analysis and LLM-Viewer, then two pairs of figures "
       "printed in How to Scale Your Model (FLOP/B)",
       r"C / W", sp.ImmutableMatrix([[round(float(v), 1) for v in RIDGES.values()]]))
r.claim("the records give 291 to 322 FLOP/B for one chip: LLM-Viewer's 3.072e12 B/s puts its "
        "ridge 9% above the datasheet's",
        round(float(min(RIDGES.values()))) == 291 and round(float(max(RIDGES.values()))) == 322
        and round(float(RIDGES["LLM-Viewer"] / RIDGES["symroof"]), 2) == 1.09)

png = OUT / "07_conventions.png"
sr.plot.conventions_plot(m, h100, batch=1, context=2048, phase="decode", path=png)

NOTES = [d, r, (png, "Llama-3-8B decode (batch 1, context 2048) on an H100: each op group's "
                     "time under four sets of conventions: symroof, the book, LLM-Viewer and "
                     "llm-analysis")]

if __name__ == "__main__":
    print_notes(NOTES)
