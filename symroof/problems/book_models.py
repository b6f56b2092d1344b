"""The book's problems on transformers, training, inference and GPUs, as templates.

Seed 0 is the book's own parameters, from "How to Scale Your Model" at scaling-book commit
0819a7d (ch. 4 transformers.md, ch. 5 training.md, ch. 8 applied-inference.md) and gpus.md
at 1a55377 (ch. 12); ``book_note`` is what the book answers, its slips named.
"""

from __future__ import annotations

import math
import random
from typing import Any

import sympy as sp

from ..analysis import critical_batch, crossover
from ..derivation import Derivation
from ..hardware import chip, mesh, symbolic_chip
from ..models import Transformer, model, train_memory
from ..parallel import shard_matmul
from ..parallel.sizing import smallest_slice
from ..symbols import B, C, D, F, G, H, L, S, V, W, X, Y, Z, d_h, quantity
from .template import Template, pick, shown

__all__ = ["MODEL_TEMPLATES"]

W_gpu, W_node = quantity("W_GPU"), quantity("W_node")  # the table's rule for named quantities
DENSE = ("llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "llama-2-7b", "llama-2-13b",
         "mistral-7b")


# -- ch. 4: transformers -----------------------------------------------------------------
def _params(p: dict[str, Any], d: Derivation) -> dict[str, tuple[Any, str]]:
    sym = Transformer(F=4 * D, G=H, kv_bytes=1)  # F = 4D, multi-head, int8 KV
    at = {D: p["D"], L: p["L"], V: p["V"], H: p["D"] // 128, d_h: 128}
    parts = sym.param_breakdown()
    total = d.step("parameters: embedding, $L$ layers (attention, MLP, two norms), final "
                   "norm, lm_head", "P", sym.params, at=at)
    share = d.step(r"attention's share of the layers' matrices, with $H d_h = D$",
                   r"P_\text{attn} / (P_\text{attn} + P_\text{mlp})",
                   sp.simplify((parts["attention"] / (parts["attention"] + parts["mlp"]))
                               .subs(d_h, D / H)))
    kv = d.step("KV cache per token: a key and a value of $G d_h$ in each layer, one byte each",
                r"\text{KV}_\text{tok}", sym.kv_bytes_per_token, at=at)
    m = Transformer(D=p["D"], F=4 * p["D"], L=p["L"], H=p["D"] // 128, G=p["D"] // 128,
                    d_h=128, V=p["V"], kv_bytes=1)
    d.claim("the count of that model's arrays, and its KV bytes",
            total == m.params and kv == m.kv_bytes_per_token)
    d.claim("attention is a quarter of the layers' matrices", share == sp.Rational(1, 4))
    return {"P": (total, ""), r"\text{KV}_\text{tok}": (kv, "B")}


def _draw_params(rng: random.Random) -> dict[str, Any]:
    return {"D": pick(rng, (2048, 4096, 5120, 8192)), "L": pick(rng, (24, 32, 48, 64, 80)),
            "V": pick(rng, (32000, 50304, 128256))}


def _sharded_flops(p: dict[str, Any], d: Derivation) -> dict[str, tuple[Any, str]]:
    sizes = {X: p["X"], Y: p["Y"], Z: p["Z"]}
    m = mesh("tpu-v5p", {"X": p["X"], "Y": p["Y"], "Z": p["Z"]}, custom=True)  # the book's mesh
    plan = shard_matmul(m, "A[B_X, D_Y] @ W[D_Y, F] -> [B_X, F]")
    per_chip = d.step(r"each chip multiplies its $[B/X, D/Y]$ block by $[D/Y, F]$",
                      r"\text{FLOPs}_\text{chip}", 2 * B * D * F / (X * Y), at=sizes)
    total = d.step("over all chips: the $Z$ copies repeat the work", r"\text{FLOPs}",
                   2 * B * D * F * Z, at=sizes)
    d.claim("symroof's sharded matmul does those FLOPs on each chip",
            sp.simplify(plan.cost.flops - per_chip) == 0
            and sp.simplify(per_chip * m.n_chips - total) == 0)
    return {r"\text{FLOPs}_\text{chip}": (per_chip, "FLOP"), r"\text{FLOPs}": (total, "FLOP")}


def _draw_sharded(rng: random.Random) -> dict[str, Any]:
    return {"X": pick(rng, (2, 4, 8)), "Y": pick(rng, (2, 4, 8)), "Z": pick(rng, (2, 4, 8))}


# -- ch. 5: training ---------------------------------------------------------------------
def _llama(p: dict[str, Any], d: Derivation) -> dict[str, tuple[Any, str]]:
    m = model(p["model"])
    dims = {D: m.D, F: m.F, L: m.L, H: m.H, G: m.G, d_h: m.d_h, V: m.V}
    parts = Transformer().param_breakdown()
    ffw = d.step("MLP: up, gate and down projections in each layer", r"P_\text{mlp}",
                 parts["mlp"], at=dims)
    attn = d.step("attention: $Q$, $K$, $V$ and out projections", r"P_\text{attn}",
                  parts["attention"], at=dims)
    vocab = d.step("embedding and lm_head", r"P_\text{vocab}",
                   parts["embedding"] + parts["lm_head"], at=dims)
    total = d.step("with the norms, the whole model", "P", Transformer().params, at=dims)
    d.claim("the released model's parameter count", total == m.params
            and ffw + attn + vocab < total)
    return {"P": (total, "")}


def _draw_llama(rng: random.Random) -> dict[str, Any]:
    return {"model": pick(rng, DENSE)}


def _adam(p: dict[str, Any], d: Derivation) -> dict[str, tuple[Any, str]]:
    m, c = model(p["model"]), chip(p["chip"])
    mem = train_memory(m, B, S, grad_bytes=0)  # bf16 weights, fp32 Adam moments
    state = d.step("bf16 weights and Adam's two fp32 moments: 10 bytes a parameter",
                   r"M_\text{state}", mem["params"] + mem["moments"])
    hbm = f"{float(c.hbm_bytes) / 1e9:g} GB"
    chips = d.step(f"{shown(c.name)} chips that hold it (HBM {hbm} each), before any "
                   "activation", r"N_\text{min}",
                   sp.ceiling(state / c.hbm_bytes))
    d.claim("10 bytes a parameter, and pure data parallelism (a whole copy a chip) fits only "
            "where one chip holds it", state == 10 * m.params
            and (chips == 1) == (state <= c.hbm_bytes))
    return {r"M_\text{state}": (state, "B"), r"N_\text{min}": (chips, "")}


def _draw_adam(rng: random.Random) -> dict[str, Any]:
    return {"model": pick(rng, DENSE), "chip": pick(rng, ("tpu-v5p", "tpu-v5e", "h100",
                                                          "b200", "tpu-v6e"))}


# -- ch. 8: serving ----------------------------------------------------------------------
def _kv(p: dict[str, Any], d: Derivation) -> dict[str, tuple[Any, str]]:
    m, c = model(p["model"]).replace(kv_bytes=1, w_bytes=1), chip(p["chip"])
    per_tok = d.step("KV per token in int8: $2 L G d_h$ bytes", r"\text{KV}_\text{tok}",
                     Transformer(kv_bytes=1).kv_bytes_per_token,
                     at={L: m.L, G: m.G, d_h: m.d_h})
    window = (f" (its sliding window of {m.window} caps what a layer keeps)"
              if m.window is not None and p["context"] > m.window else "")
    kv = d.step(f"the batch's KV cache: {p['batch']} sequences of {p['context']} tokens{window}",
                r"M_\text{KV}",
                B * m.kv_cache_bytes(S), at={B: p["batch"], S: p["context"]})
    total = d.step("with one byte a parameter", "M", kv + m.params)
    chips = d.step(f"{shown(c.name)} chips to hold it", r"N_\text{min}",
                   sp.ceiling(total / c.hbm_bytes))
    shape = smallest_slice(m, c, weights="int8", kv="int8", batch=p["batch"],
                           context=p["context"])
    d.claim(f"the smallest {shown(c.name)} slice that holds it, {shape}, has at least that "
            "many chips",
            math.prod(int(s) for s in shape.split("x")) >= chips
            and per_tok == m.kv_bytes_per_token)
    return {r"\text{KV}_\text{tok}": (per_tok, "B"), "M": (total, "B"),
            r"N_\text{min}": (chips, "")}


def _draw_kv(rng: random.Random) -> dict[str, Any]:
    return {"model": pick(rng, DENSE), "batch": pick(rng, (8, 16, 32, 64)),
            "context": pick(rng, (2048, 4096, 8192, 32768)),
            "chip": pick(rng, ("tpu-v5e", "tpu-v6e", "tpu-v5p", "h100"))}


def _dtypes(p: dict[str, Any], d: Derivation) -> dict[str, tuple[Any, str]]:
    c = chip(p["chip"])
    sym = symbolic_chip()
    at = {C: c.peak("bf16"), W: c.hbm_bw}
    bf16 = d.step("bf16 weights, bf16 FLOPs", r"B^*_\text{bf16}", critical_batch(sym), at=at)
    w8 = d.step("int8 weights, bf16 FLOPs: half the weight bytes", r"B^*_\text{w8}",
                critical_batch(sym, w_bytes=1), at=at)
    both = d.step("int8 weights, int8 FLOPs: the int8 peak", r"B^*_\text{int8}",
                  critical_batch(sym, dtype="int8", x_bytes=1, w_bytes=1),
                  at={sym.peak("int8"): c.peak("int8"), W: c.hbm_bw})
    d.claim("int8 weights halve the bf16 critical batch",
            w8 == bf16 / 2 and bf16 == critical_batch(c)
            and both == critical_batch(c, dtype="int8", x_bytes=1, w_bytes=1))
    return {r"B^*_\text{bf16}": (bf16, ""), r"B^*_\text{w8}": (w8, ""),
            r"B^*_\text{int8}": (both, "")}


def _draw_dtypes(rng: random.Random) -> dict[str, Any]:
    return {"chip": pick(rng, ("tpu-v5e", "tpu-v5p", "tpu-v6e", "h100", "b200", "a100"))}


# -- ch. 12: GPUs ------------------------------------------------------------------------
def _gpu_record(name: str) -> tuple[Any, Any, Any]:
    c = chip(name)
    levels = c.network.levels
    return c.peak("bf16"), levels[0].bw_per_gpu, levels[1].bw_per_gpu * 8  # 8 NICs a node


def _dp(p: dict[str, Any], d: Derivation) -> dict[str, tuple[Any, str]]:
    at = {C: p["C"], W_gpu: p["W_GPU"], W_node: p["W_node"]}
    t_math = 8 * B * D * F / (X * C)  # backward pass: 8BDF/X FLOPs a GPU
    inside = d.step(r"in a node: $8BDF/X$ FLOPs a GPU against the $8DF$ gradient bytes at "
                    r"$W_\text{GPU}$; tokens a GPU", r"(B/X)^*_\text{node}",
                    crossover(t_math, 8 * D * F / W_gpu, B) / X, at=at)
    beyond = d.step(r"beyond it, the same bytes at a node's $W_\text{node}$",
                    r"(B/X)^*_\text{pod}", crossover(t_math, 8 * D * F / W_node, B) / X, at=at)
    d.claim(r"$C / W$ for each level, the slower level asking more tokens",
            inside == sp.Rational(p["C"], p["W_GPU"]) and beyond == sp.Rational(p["C"], p["W_node"])
            and (beyond > inside) == (p["W_node"] < p["W_GPU"]))
    return {r"(B/X)^*_\text{node}": (inside, ""), r"(B/X)^*_\text{pod}": (beyond, "")}


def _draw_gpu(rng: random.Random) -> dict[str, Any]:
    name = pick(rng, ("h100", "h200", "b200", "a100"))
    c, w_gpu, w_node = _gpu_record(name)
    return {"chip": name, "C": c, "W_GPU": w_gpu, "W_node": w_node}


def _tp(p: dict[str, Any], d: Derivation) -> dict[str, tuple[Any, str]]:
    m = model(p["model"])
    at = {C: p["C"], W_gpu: p["W_GPU"], F: m.F}
    y = d.step(r"TP over $Y$ GPUs, forward: $4BDF/Y$ FLOPs against $4BD$ bytes a GPU at "
               r"$W_\text{GPU}$, solved for $Y$", r"Y^*",
               crossover(4 * B * D * F / (Y * C), 4 * B * D / W_gpu, Y), at=at)
    d.claim("comms-bound past $Y^*$: the FLOPs a GPU shrink as $1/Y$, the bytes do not",
            (4 * B * D * F / (Y * C) - 4 * B * D / W_gpu).subs(at).subs(Y, 2 * y) < 0)
    return {r"Y^*": (y, "")}


def _draw_tp(rng: random.Random) -> dict[str, Any]:
    return {**_draw_gpu(rng), "model": pick(rng, DENSE)}


_GPU_BOOK = {"chip": "h100", "C": 990 * 10**12, "W_GPU": 450 * 10**9, "W_node": 400 * 10**9}
MODEL_TEMPLATES = [
    Template("transformers", "parameters", "Parameters and KV cache of a transformer",
             "How many parameters does a model with $D$ = {D}, $F = 4D$, $V$ = {V} and "
             "$L$ = {L} have (multi-head attention, $H d_h = D$ with $d_h$ = 128)? What "
             "fraction of the layers' matrices is attention? How large is its KV cache per "
             "token in int8?", _params, {"D": 4096, "V": 32000, "L": 64}, _draw_params,
             "ch. 4, question 1", "The book: 16e9 parameters, a quarter of them attention, "
             "512 kB a token; it rounds $D$ = 4096 to 4e3 and $F$ to 16e3 (17.4e9 exactly), "
             "and its kB is 1024 bytes (524,288 B)."),
    Template("transformers", "sharded-flops", "FLOPs of a sharded matmul",
             r"How many FLOPs does $A[B_X, D_Y] \cdot_D W[D_Y, F]$ take on a mesh of axes "
             "$X$ = {X}, $Y$ = {Y}, $Z$ = {Z}, over all chips and on each chip?",
             _sharded_flops, {"X": 4, "Y": 8, "Z": 4}, _draw_sharded, "ch. 4, question 2",
             "The book: $2BDF \\cdot Z$ in all, $2BDF/(XY)$ a chip."),
    Template("training", "parameters", "Parameters of a released model",
             "How many parameters does {model} have? Count its MLP (three matrices a layer), "
             "its attention projections and its vocabulary matrices.", _llama,
             {"model": "llama-2-13b"}, _draw_llama, "ch. 5, question 1",
             "The book: 8.5e9 + 4.2e9 + 0.39e9 = 13.1e9; its terms are rounded first "
             "(13.0e9 exactly)."),
    Template("training", "adam-memory", "Weights and optimizer state",
             "Training {model} with Adam, weights in bf16 and the optimizer state in fp32: "
             "how many bytes do the weights and optimizer state take, and how many {chip} "
             "chips hold them before any activation? Can pure data parallelism work?",
             _adam, {"model": "llama-2-13b", "chip": "tpu-v5p"}, _draw_adam,
             "ch. 5, question 2", "The book: (2 + 4 + 4) × 13e9 = 130 GB, more than a v5p's "
             "96 GB: pure data parallelism cannot work."),
    Template("inference", "kv-memory", "KV cache and the smallest slice",
             "Serve {model} at batch {batch} and context {context} with weights and KV cache "
             "in int8. How large is its KV cache per token, how much memory does it need, and "
             "on how many {chip} chips does it fit?", _kv,
             {"model": "llama-3.1-70b", "batch": 32, "context": 8192, "chip": "tpu-v5e"},
             _draw_kv, "ch. 8, questions on LLaMA 3-70B",
             "The book: 160 kB a token (163,840 B), 41.9e9 + 70e9 = 112 GB, 112 / 16 = 7 chips, "
             "a 4x2; it rounds the KV to 160e3 bytes and the parameters to 70e9 (exactly "
             "113.5 GB, 7.1 chips' worth: 8, the same 4x2)."),
    Template("inference", "critical-batches", "Critical batches by dtype",
             "On a {chip}, above what batch is a matmul with $B \\ll D, F$ compute-bound with "
             "bf16 weights and FLOPs, with int8 weights and bf16 FLOPs, and with int8 weights "
             "and int8 FLOPs?", _dtypes, {"chip": "tpu-v5e"}, _draw_dtypes,
             "ch. 8, question on TPU v5e", "The book: 240, 120 and about 240."),
    Template("gpus", "dp-tokens", "Data parallelism on GPUs",
             "A {chip} does {C} bf16 FLOP/s, sends {W_GPU} B/s over NVLink and {W_node} B/s "
             "a GPU beyond its node. Data parallelism over $X$ GPUs: how many tokens does each "
             "GPU need in its batch to stay compute-bound inside one node, and across nodes?",
             _dp, _GPU_BOOK, _draw_gpu, "ch. 12, rooflines for LLM scaling on GPUs",
             "The book: 990e12 / 450e9 = 2200 inside a node, 990e12 / 400e9 = 2475 beyond."),
    Template("gpus", "tp-width", "How wide tensor parallelism goes in a node",
             "{model} ($F$ = its MLP width) trains on {chip} GPUs ({C} bf16 FLOP/s, {W_GPU} B/s "
             "over NVLink). Up to how many GPUs $Y$ of tensor parallelism does a layer stay "
             "compute-bound?", _tp, {**_GPU_BOOK, "model": "llama-3.1-70b"}, _draw_tp,
             "ch. 12, rooflines for LLM scaling on GPUs",
             "The book: $Y < F / 2200$, 13 for $F$ = 28672."),
]
