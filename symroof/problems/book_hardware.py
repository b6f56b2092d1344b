"""The book's problems on rooflines, TPUs and sharding, as templates.

Seed 0 is the book's own parameters, from "How to Scale Your Model" at scaling-book commit
0819a7d (ch. 1 roofline.md, ch. 2 tpus.md, ch. 3 sharding.md); ``book_note`` is what the book
answers, its slips named. Other seeds draw real chips and round sizes.
"""

from __future__ import annotations

import random
from typing import Any

import sympy as sp

from ..analysis import critical_batch, crossover, leading, time
from ..cost import Cost
from ..derivation import Derivation
from ..hardware import all_gather, chip, mesh, symbolic_chip
from ..models import model
from ..ops import matmul
from ..parallel.sharding import parse_array
from ..symbols import B, C, D, F, N, V_b, W, X, Y, Z, quantity
from .template import Template, pick

__all__ = ["HARDWARE_TEMPLATES"]

C8 = symbolic_chip().peak("int8")  # the int8 peak, C_int8
P, b_w = quantity("P"), quantity("b_w")  # the table's rule for named quantities
W_1, T_min = quantity("W_1"), quantity("T_min")  # a link's one-way bandwidth, a hop's latency
INT8_CHIPS = ("tpu-v5e", "tpu-v5p", "tpu-v6e", "h100", "h200", "a100", "b200")
GPUS = ("h100", "h200", "a100", "b200", "gb200")
ACTIVE_MODELS = ("llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "mixtral-8x7b",
                 "gemma-2-9b", "llama-2-13b")


# -- ch. 1: rooflines --------------------------------------------------------------------
def _int8(p: dict[str, Any], d: Derivation) -> dict[str, tuple[Any, str]]:
    mm8 = matmul(B, D, F, x_bytes=1, w_bytes=1, out_bytes=1)
    at = {C8: p["C8"], W: p["W"]}
    d.step("bytes: $X$ and $W$ read, $Z$ written, one byte an element", r"\text{bytes}",
           mm8.bytes)
    d.step("OPs: a multiply and an add for each of the $BDF$ products", r"\text{OPs}", mm8.flops)
    ai = d.step("intensity: OPs over bytes", r"\text{AI}", mm8.intensity)
    small = d.step("a small batch", r"\text{AI}", leading(ai, small=B), because=r"$B \ll D, F$")
    b = d.step(r"compute-bound where $2B$ exceeds the int8 ridge $C_\text{int8}/W$", r"B^*",
               crossover(small, C8 / W, B), at=at)
    rec = chip(p["chip"]).replace(hbm_bw=p["W"], note="the problem's HBM bandwidth")
    d.claim(r"$B^* = C_\text{int8}/(2W)$, symroof's critical batch of an int8 matmul",
            b == critical_batch(rec, dtype="int8", x_bytes=1, w_bytes=1))
    d.claim("at $B^*$ the intensity $2B$ equals the ridge", (small / (C8 / W)).subs(
        at).subs(B, b) == 1)
    return {"B^*": (b, "")}


def _draw_int8(rng: random.Random) -> dict[str, Any]:
    name = pick(rng, INT8_CHIPS)
    return {"chip": name, "C8": chip(name).peak("int8"), "W": chip(name).hbm_bw}


def _sheet(p: dict[str, Any], d: Derivation) -> dict[str, tuple[Any, str]]:
    dense = d.step("the dense bf16 peak: half the sheet's figure", "C",
                   sp.nsimplify(p["sheet"]) / 2)
    b = d.step(r"$B^* = C/W$ for a bf16 matmul with $B \ll D, F$", r"B^*",
               critical_batch(symbolic_chip()), at={C: dense, W: p["W"]})
    rec = chip(p["chip"]).replace(peaks={"bf16": dense}, hbm_bw=p["W"], note="the sheet")
    d.claim("the same as symroof's critical batch of that chip", b == critical_batch(rec))
    return {"B^*": (b, "")}


def _draw_sheet(rng: random.Random) -> dict[str, Any]:
    name = pick(rng, GPUS)
    return {"chip": name, "sheet": 2 * chip(name).peak("bf16"), "W": chip(name).hbm_bw}


# -- ch. 2: TPUs -------------------------------------------------------------------------
def _latency(p: dict[str, Any], d: Derivation) -> dict[str, tuple[Any, str]]:
    at = {P: p["P"], b_w: p["bytes"], N: p["N"], W: p["W"]}
    per_chip = d.step("bytes each chip holds", r"\text{bytes}_\text{chip}", P * b_w / N, at=at)
    t = d.step("each chip reads its share at its HBM bandwidth", r"T_\text{load}",
               P * b_w / (N * W), at=at)
    rec = chip(p["chip"]).replace(hbm_bw=p["W"], note="the problem's HBM bandwidth")
    d.claim("the memory time symroof gives those weight bytes on that chip",
            t == time(Cost(weight_bytes=per_chip), rec).t_mem)
    d.claim("the weights fit in the chips' HBM", per_chip <= chip(p["chip"]).hbm_bytes)
    return {r"T_\text{load}": (t, "s")}


def _draw_latency(rng: random.Random) -> dict[str, Any]:
    name, m = pick(rng, ("tpu-v5e", "tpu-v5p", "tpu-v6e", "tpu-v4p", "h100", "b200")), \
        model(pick(rng, ACTIVE_MODELS))
    width = pick(rng, (1, 2))
    c = chip(name)
    n = 1
    while m.params * width > n * c.hbm_bytes * sp.Rational(3, 4):  # room for a KV cache
        n *= 2
    n *= pick(rng, (1, 2, 4))
    return {"model": m.name, "P": m.params, "dtype": {1: "int8", 2: "bf16"}[width],
            "bytes": width, "N": n, "chip": name, "W": c.hbm_bw}


def _matmul(p: dict[str, Any], d: Derivation) -> dict[str, tuple[Any, str]]:
    sym = time(matmul(B, D, F, x_bytes=1, w_bytes=1, out_bytes=1), symbolic_chip(), "int8")
    at = {C8: p["C8"], W: p["W"], D: p["D"], F: p["F"]}
    t_math = d.step("the math: $2BDF$ OPs at the int8 peak", r"T_\text{math}", sym.t_math,
                    at=at)
    t_mem = d.step("the bytes: $DF + BD$ read, $BF$ written", r"T_\text{comms}", sym.t_mem,
                   at=at)
    b = d.step(r"compute-bound where $T_\text{math} = T_\text{comms}$", r"B^*",
               crossover(t_math, t_mem, B))
    rec = chip(p["chip"]).replace(hbm_bw=p["W"], peaks={"int8": p["C8"]}, note="the problem")
    d.claim("the exact critical batch symroof solves for these $D$ and $F$",
            b == critical_batch(rec, dtype="int8", x_bytes=1, w_bytes=1, D=p["D"], F=p["F"]))
    d.claim(r"above it $T_\text{math} > T_\text{comms}$", (t_math - t_mem).subs(B, 2 * b) > 0)
    return {"B^*": (b, "")}


def _draw_matmul(rng: random.Random) -> dict[str, Any]:
    name = pick(rng, INT8_CHIPS)
    D_ = pick(rng, (2048, 4096, 8192))
    return {"chip": name, "C8": chip(name).peak("int8"), "W": chip(name).hbm_bw, "D": D_,
            "F": D_ * pick(rng, (2, 4, 8))}


# -- ch. 3: sharding ---------------------------------------------------------------------
def _replicas(p: dict[str, Any], d: Derivation) -> dict[str, tuple[Any, str]]:
    sizes = {X: p["X"], Y: p["Y"], Z: p["Z"]}
    spec = parse_array(f"A[{p['spec']}]")
    split = sp.Mul(*(s for s in sizes if s.name in spec.mesh_axes))
    chips = d.step("chips in the mesh", "N", X * Y * Z, at=sizes)
    share = d.step("each chip holds the fraction of $A$ its sharded axes leave it",
                   r"\text{shard} / \text{copy}", 1 / split, at=sizes)
    ratio = d.step("all chips together, over one copy", r"\text{total} / \text{copy}",
                   X * Y * Z / split, at=sizes)
    m = mesh("tpu-v5p", {"X": p["X"], "Y": p["Y"], "Z": p["Z"]}, custom=True)  # the book's mesh
    d.claim("the replication factor: chips over the chips one copy is spread across",
            ratio == chips * share and ratio * sp.prod(
                m[a].size for a in spec.mesh_axes) == m.n_chips)
    return {r"\text{total} / \text{copy}": (ratio, "")}


def _draw_replicas(rng: random.Random) -> dict[str, Any]:
    spec = pick(rng, ("I_X, J, K", "I_X, J_Y, K", "I_Y, J, K_Z", "I_XZ, J, K", "I, J_Z, K"))
    return {"X": pick(rng, (2, 4, 8)), "Y": pick(rng, (2, 4, 8, 16)), "Z": pick(rng, (2, 4)),
            "spec": spec, "spec_tex": _tex_spec(spec)}


def _tex_spec(spec: str) -> str:
    return ", ".join(f"{d.split('_')[0]}_{{{d.split('_')[1]}}}" if "_" in d else d
                     for d in spec.split(", "))


def _gather(p: dict[str, Any], d: Derivation) -> dict[str, tuple[Any, str]]:
    m = mesh(p["chip"], p["shape"])
    x, y, _ = (m[a].size for a in ("X", "Y", "Z"))
    at = {B: p["B"], D: p["D"], Y: y}
    link = {W_1: m.chip.link_bw, T_min: m["X"].hop_latency, X: x, Y: y}
    v_x = d.step(r"$\text{AllGather}_X$: each $X$-group ends with $\text{bf16}[B, D_Y]$",
                 r"V_b^X", 2 * B * D / Y, at=at)
    tx = d.step(f"round the ring of {x} chips in both directions, at $W_1$ a link and "
                "$T_\\text{min}$ a hop: the larger of the latency floor and the bandwidth term",
                r"T_\text{AG}^X", sp.Max(T_min * X / 2, V_b / (2 * W_1)), at={**link, V_b: v_x})
    v_xy = d.step(r"$\text{AllGather}_{XY}$: each group ends with the whole array",
                  r"V_b^{XY}", 2 * B * D, at=at)
    txy = d.step("over both axes at once: their hops add, and so do their links",
                 r"T_\text{AG}^{XY}", sp.Max(T_min * (X / 2 + Y / 2), V_b / (4 * W_1)),
                 at={**link, V_b: v_xy})
    t_x, t_xy = all_gather(m, v_x, "X"), all_gather(m, v_xy, "XY")
    d.claim(f"symroof's AllGathers on this slice take these times: {t_x.bound}-bound over "
            f"$X$, {t_xy.bound}-bound over $XY$", tx == t_x.time and txy == t_xy.time)
    return {r"T_\text{AG}^X": (tx, "s"), r"T_\text{AG}^{XY}": (txy, "s")}


def _draw_gather(rng: random.Random) -> dict[str, Any]:
    side = pick(rng, (4, 8, 16))
    return {"chip": pick(rng, ("tpu-v4p", "tpu-v5p")), "shape": f"{side}x{side}x{side}",
            "B": pick(rng, (256, 512, 1024, 2048, 4096)), "D": pick(rng, (2048, 4096, 8192))}


def _tiny_gather(p: dict[str, Any], d: Derivation) -> dict[str, tuple[Any, str]]:
    m = mesh(p["chip"], p["shape"])
    axis = m["X"]
    v = d.step(r"the gathered $\text{bf16}[B]$", r"V_b", 2 * B, at={B: p["B"]})
    link = {W_1: m.chip.link_bw, T_min: axis.hop_latency, X: axis.size, V_b: v}
    bw = d.step("its bandwidth term, both directions of the ring at $W_1$ a link",
                r"T_\text{bw}", V_b / (2 * W_1), at=link)
    lat = d.step(f"the latency floor: {axis.size // 2} hops each way round the ring of "
                 f"{axis.size}, $T_\\text{{min}}$ = {shown_time(axis.hop_latency)} a hop",
                 r"T_\text{lat}", T_min * X / 2, at=link)
    t = all_gather(m, v, "X")
    total = d.step(f"the larger of the two: {t.bound}-bound", r"T_\text{AG}", sp.Max(bw, lat))
    d.claim("latency-bound: the floor is the time, far above the bandwidth term, as "
            "symroof's AllGather on this slice has it",
            t.bound == "latency" and total == lat == t.t_lat == t.time and bw < lat / 10
            and bw == t.t_bw)
    return {r"T_\text{AG}": (total, "s")}


def shown_time(seconds: Any) -> str:
    """``1/1000000`` as ``1 us`` for a statement."""
    return f"{float(seconds) * 1e6:g} us"


def _draw_tiny(rng: random.Random) -> dict[str, Any]:
    side = pick(rng, (4, 8, 16))
    return {"chip": pick(rng, ("tpu-v4p", "tpu-v5p")), "shape": f"{side}x{side}x{side}",
            "B": pick(rng, (64, 128, 256, 512))}


HARDWARE_TEMPLATES = [
    Template("rooflines", "int8-matmul", "An int8 matmul",
             r"A matmul $\text{{int8}}[B, D] \cdot \text{{int8}}[D, F] \to "
             r"\text{{int8}}[B, F]$ runs on a {chip} at its int8 peak of {C8} OP/s, with HBM "
             "bandwidth {W} B/s. How many bytes does it move and how many OPs does it do? What "
             "is its arithmetic intensity, and above what batch $B$ is it compute-bound "
             r"($B \ll D, F$)?", _int8,
             {"chip": "tpu-v5e", "C8": 394 * 10**12, "W": 81 * 10**10}, _draw_int8,
             "ch. 1, question 1", "The book: $B > 486 / 2 = 243$ (3.94e14 / 8.1e11 = 486)."),
    Template("rooflines", "gpu-critical-batch", "The critical batch from a GPU's spec sheet",
             "The {chip}'s spec sheet quotes {sheet} bf16 FLOP/s with sparsity, twice the dense "
             "figure, and {W} B/s of HBM bandwidth. Above what batch does a bf16 matmul "
             r"$X[B, D] \cdot W[D, F]$ with $B \ll D, F$ turn compute-bound?", _sheet,
             {"chip": "h100", "sheet": 1979 * 10**12, "W": 335 * 10**10}, _draw_sheet,
             "ch. 1, problem 5", "The book: 1e15 / 3.35e12 = 298; it rounds the dense "
             "989.5e12 FLOP/s up to 1e15, and 298.5 down."),
    Template("tpus", "decode-latency", "A lower bound on decode latency",
             "A {model} model ({P} parameters) in {dtype} is split across {N} {chip} chips, "
             "each with HBM bandwidth {W} B/s. How long does one read of all its parameters "
             "from HBM take, a lower bound on the time of one decode step?", _latency,
             {"model": "200B-parameter", "P": 200 * 10**9, "dtype": "bf16", "bytes": 2, "N": 32,
              "chip": "tpu-v4p", "W": 12 * 10**11}, _draw_latency, "ch. 2, question 1",
             "The book: about 10 ms (400e9 bytes over 32 chips at 1.23e12 B/s; its table "
             "gives the v4p 1.2e12 B/s, 10.4 ms)."),
    Template("tpus", "matmul-latency", "How long an int8 matmul takes",
             r"On one {chip} (int8 peak {C8} OP/s, HBM bandwidth {W} B/s), weights "
             r"$\text{{int8}}[{F}, {D}]$ multiply activations $\text{{int8}}[B, {D}]$. How "
             "long does it take as a function of $B$, and above what batch is it "
             "compute-bound?", _matmul,
             {"chip": "tpu-v5e", "C8": 394 * 10**12, "W": 81 * 10**10, "D": 4096, "F": 16384},
             _draw_matmul, "ch. 2, question 4",
             "The book: $B > 271$; it rounds $2 \\cdot 4096 \\cdot 16384$ = 1.34e8 OPs per "
             "batch row down to 1.3e8, which moves the root from 263 to 271."),
    Template("sharding", "replication", "Bytes of a replicated array",
             "An array $A[{spec_tex}]$ lives on a mesh of axes $X$ = {X}, $Y$ = {Y}, "
             "$Z$ = {Z}. What is the ratio of the bytes $A$ takes over all chips to the "
             "size of one copy?", _replicas,
             {"X": 4, "Y": 8, "Z": 2, "spec": "I_X, J, K", "spec_tex": "I_{X}, J, K"},
             _draw_replicas, "ch. 3, question 1", "The book: $Y \\cdot Z = 16$."),
    Template("sharding", "allgather", "AllGather times on a TPU slice",
             "On a {chip} {shape} slice (axes $X$, $Y$, $Z$), how long does "
             r"$\text{{AllGather}}_X$ of $\text{{bf16}}[B_X, D_Y]$ take with $B$ = {B} and "
             r"$D$ = {D}? How long does $\text{{AllGather}}_{{XY}}$ of the same array take?",
             _gather, {"chip": "tpu-v4p", "shape": "4x4x4", "B": 1024, "D": 4096},
             _draw_gather, "ch. 3, question 2",
             "The book: 23 us and 46 us (46.6, truncated), far above the 4 us latency floor."),
    Template("sharding", "latency-bound", "A latency-bound AllGather",
             r"On a {chip} {shape} slice, how long does $\text{{AllGather}}_X$ of "
             r"$\text{{bf16}}[B_X]$ take with $B$ = {B}, a small array?", _tiny_gather,
             {"chip": "tpu-v4p", "shape": "4x4x4", "B": 128}, _draw_tiny, "ch. 3, question 3",
             "The book: latency-bound, 2 hops of about 1 us: 2 us."),
]
