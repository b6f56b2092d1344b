r"""Sharding: meshes, collectives and sharded matmuls.

Claim: on a TPU torus a bandwidth-bound AllGather or ReduceScatter of $V_b$ bytes takes
$V_b / W_\text{ici}$ whatever the axis size ($W_\text{ici} = 2 W_1$, both neighbours of a
ring), an AllReduce twice that and an AllToAll a quarter; an axis without wraparound is a line
and costs $2(X - 1)/X$ as much ($1.5\times$ on an axis of 4, $2\times$ on long ones). Below a
per-shard size of $W_1 T_\text{min}$ (45 kB on a v5e) the hop latency sets the time instead. A
matmul whose contracting dimension is sharded on one operand can gather that operand first or
multiply the shards and reduce the partial sums after; in bf16 the reduce moves fewer bytes
exactly when $D > 2B$, and it stays compute-bound only while $X < D / (2 \alpha)$, with
$\alpha = C / W_\text{ici}$. Chapter 1's two-chip example ($D^*$ = 8755.6 on a v5e) is the case
$X = 2$ of the same formula. On an $8\times$H100 node the same ring formulas hold with
$W_\text{GPU}$ = 450 GB/s; across nodes the leaf level caps AllGathers near 413 GB/s per GPU.

Source: "How to Scale Your Model", ch. 2 (TPUs, https://jax-ml.github.io/scaling-book/tpus/),
ch. 3 (sharded matmuls, https://jax-ml.github.io/scaling-book/sharding/) and the collectives of
ch. 12 (GPUs, https://jax-ml.github.io/scaling-book/gpus/), read from the book's markdown:
sharding.md and tpus.md at scaling-book commits 0819a7d (Feb 2025) and 04d8de5, gpus.md at
1a55377. Every worked number below is rebuilt from the chip records and asserted to the book's
rounding. Where the book slips, the step says so: the unidirectional-ring limit of ch. 3's
summary, the wraparound footnote of ch. 2, the latency and AllReduce parts of ch. 3 question 2,
the comms-bound condition of question 4, and the two-node AllToAll of ch. 12. In the formulas
$V_b$ is the bytes of one group's array (the book's $V$; symroof's $V$ is the vocabulary), $W_1$
the one-way bandwidth of one link and $T_\text{min}$ the per-hop latency.
"""

import os
from pathlib import Path

import sympy as sp

import symroof as sr
from symroof.derivation import Derivation, print_notes
from symroof.symbols import B, D, F, V_b, X, Y, dimension

CH2 = "How to Scale Your Model, ch. 2: https://jax-ml.github.io/scaling-book/tpus/"
CH3 = "How to Scale Your Model, ch. 3: https://jax-ml.github.io/scaling-book/sharding/"
CH12 = "How to Scale Your Model, ch. 12: https://jax-ml.github.io/scaling-book/gpus/"
OUT = Path(os.environ.get("SYMROOF_OUT", "out"))
OUT.mkdir(parents=True, exist_ok=True)

T_min = sp.Symbol("T_min", positive=True)  # per-hop latency floor
chip = sr.symbolic_chip(W_net="W_1")  # peak C, one-way link bandwidth W_1
C, W_1 = chip.peak(), chip.link_bw
W_ici = 2 * W_1  # the book's bidirectional per-axis figure
us = sp.Integer(10**6)  # seconds -> microseconds
GBs = sp.Integer(10**9)  # B/s -> GB/s
US = r" / \text{us}"  # the unit of a time step's left-hand side
BOOK_NAME = {"all-gather": "AllGather", "reduce-scatter": "ReduceScatter",
             "all-reduce": "AllReduce", "all-to-all": "AllToAll"}


def t_us(c):
    """A collective's time in microseconds (float)."""
    return float(c.net_time * us)


def tex_collective(step):
    """One step of a plan in the book's notation: AllGather_X A[I, J_X] -> A[I, J]."""
    c = step.collective
    return (rf"\text{{{BOOK_NAME[c.kind]}}}_{{{''.join(c.axes)}}}\, {tex_spec(step.before)} "
            rf"\to {tex_spec(step.after)}")


def tex_spec(text):
    """Sharding notation as LaTeX: 'A[I, J_X] -> A[I, J]' -> 'A[I, J_X] \\to A[I, J]'."""
    return (text.replace("{", r"\{").replace("}", r"\}").replace("->", r"\to")
            .replace("@", r"\cdot"))


# --- Meshes and wraparound ---------------------------------------------------------------
mesh_d = Derivation("Meshes, wraparound and hops", source=CH2 + " (TPU Networking)")
ring, line = sr.mesh(chip, {"X": X}), sr.mesh(chip, {"X": X}, wrap=False)
mesh_d.step("AllGather bandwidth of a ring axis: both neighbours' links", r"W_\text{ring}",
            ring["X"].bw)
mesh_d.step("of a line (no wraparound): the end chip takes $X - 1$ of $X$ shards through one "
            "link",
            r"W_\text{line}", line["X"].bw)
mesh_d.step("hops to the farthest chip: ring", r"h_\text{ring}", ring["X"].hops)
mesh_d.step("line", r"h_\text{line}", line["X"].hops)
v5e_8x16, v5p_cube, v5p_small = (sr.mesh("tpu-v5e", "8x16"), sr.mesh("tpu-v5p", "4x4x4"),
                                 sr.mesh("tpu-v5p", "2x2x4"))
pod = sr.mesh("tpu-v5p", "16x20x28")
hosts = mesh_d.step("hosts of the v5p superpod 16x20x28 (2x2x1 chips per host)",
                    r"\text{hosts}", pod.n_chips // 4)
pod_flops = mesh_d.step("its bf16 peak (4.59e14 FLOP/s per chip)",
                        r"C_\text{pod} / (10^{18}\,\text{FLOP/s})", pod.peak() / 10**18)
pod_hbm = mesh_d.step("its HBM (96 GB per chip)", r"M_\text{pod} / \text{TB}",
                      pod.hbm_bytes / 10**12)
far_4x4 = mesh_d.step("hops from chip (0, 0) to (3, 3) of a v5e 4x4 (two lines)",
                      r"h_{4\times 4}", sum(a.hops for a in sr.mesh("tpu-v5e", "4x4").axes))
far_16 = mesh_d.step("farthest chip of the full v5e 16x16 torus (two rings)", r"h_{16\times 16}",
                     sum(a.hops for a in sr.mesh("tpu-v5e", "16x16").axes))
mesh_d.claim(r"$W_\text{ring} = W_\text{ici} = 2 W_1$; a line gets $W_1 X/(X - 1)$",
             ring["X"].bw == W_ici and sp.cancel(line["X"].bw - W_1 * X / (X - 1)) == 0)
mesh_d.claim("v5e 8x16 wraps on its 16-axis only (v5e has no optical switches)",
             v5e_8x16.wraps == {"X": False, "Y": True})
mesh_d.claim("v5p 4x4x4 (a whole cube) wraps on every axis; 2x2x4 on none, although one of "
             "its axes is 4 long: the ch. 2 footnote's 'an axis which is a multiple of 4' is "
             "looser than its own 2x2x4 example, and symroof applies the whole-cube rule",
             all(v5p_cube.wraps.values()) and not any(v5p_small.wraps.values()))
mesh_d.claim("the v5p superpod: 8960 chips, 2240 hosts, every axis wrapped",
             pod.n_chips == 8960 and hosts == 2240 and all(pod.wraps.values()))
mesh_d.claim("4.1e18 bf16 FLOP/s (the book's '4e18' uses 4.5e14 per chip) and 860 TB of HBM",
             round(float(pod_flops), 1) == 4.1 and round(float(pod_hbm)) == 860)
mesh_d.claim("(0, 0) -> (3, 3) on a v5e 4x4 is 6 hops (no wraparound); 16 on the 16x16 torus",
             far_4x4 == 6 and far_16 == 16)

# --- The four cases of a sharded matmul -------------------------------------------------
cases_d = Derivation("Sharded matmuls: the four cases and their collectives",
                     source=CH3 + " (Computation With Sharded Arrays)")
sym2 = sr.mesh(chip, {"X": X, "Y": Y})
CASES = [  # (case, text, strategy, the collectives the book's table names)
    ("1: no contracting dim sharded", "A[I_X, J] @ B[J, K_Y] -> [I_X, K_Y]", "gather", []),
    ("2: one operand's contracting dim sharded, gather it", "A[I, J_X] @ B[J, K] -> [I, K]",
     "gather", ["all-gather"]),
    ("2: or slice $B$ locally and reduce the partial sums", "A[I, J_X] @ B[J, K] -> [I, K]",
     "reduce", ["all-reduce"]),
    ("3: both contracting dims on $X$", "A[I, J_X] @ B[J_X, K] -> [I, K]", "gather",
     ["all-reduce"]),
    ("3: and keep the output sharded", "A[I, J_X] @ B[J_X, K] -> [I, K_X]", "gather",
     ["reduce-scatter"]),
    ("4: both free dims on $X$, gather $A$", "A[I_X, J] @ B[J, K_X] -> [I, K_X]", "gather",
     ["all-gather"]),
    ("4: or gather $B$", "A[I_X, J] @ B[J, K_X] -> [I_X, K]", "gather", ["all-gather"]),
]
plans = {}
for case, text, strategy, _ in CASES:
    sm = sr.shard_matmul(sym2, text, strategy=strategy)
    plans[case] = sm
    lhs = " + ".join(rf"T\big({tex_collective(s)}\big)" for s in sm.steps) or r"T_\text{comms}"
    cases_d.step(f"case {case}: ${tex_spec(text)}$; locally ${tex_spec(sm.local)}$", lhs,
                 sm.t_comms)
cases_d.claim("each case needs the collectives How to Scale Your Model names: none; AllGather "
              "(or AllReduce); "
              "AllReduce (or ReduceScatter); AllGather of one operand",
              all([s.collective.kind for s in plans[c].steps] == k for c, _, _, k in CASES))
cases_d.claim(r"an AllGather and a ReduceScatter cost $V_b / W_\text{ici}$, an AllReduce "
              r"$2 V_b / W_\text{ici}$ (case 2: $V_b = 2IJ$ gathered or $2IK$ reduced)",
              plans[CASES[1][0]].t_comms == 2 * dimension("I") * dimension("J") / W_ici)
cases_d.claim("case 1 splits the FLOPs over $X$ and $Y$; case 2 gathered repeats them on "
              "every chip of $X$; case 3 splits them over $X$",
              plans[CASES[0][0]].compute.flops * X * Y == plans[CASES[1][0]].compute.flops
              == plans[CASES[3][0]].compute.flops * X)

# --- Collective times: formulas, then a v4p 4x4x4 ---------------------------------------
coll_d = Derivation("Collective times on a TPU torus", source=CH3 + " (A Deeper Dive into "
                    "TPU Communication Primitives; problems 2 and 3)")
lat = sr.mesh(chip, {"X": X}, hop_latency=T_min)
lat_line = sr.mesh(chip, {"X": X}, wrap=False, hop_latency=T_min)
ag, ar, a2a = (sr.all_gather(lat, V_b, "X"), sr.all_reduce(lat, V_b, "X"),
               sr.all_to_all(lat, V_b, "X"))
coll_d.step("AllGather (= ReduceScatter) of $V_b$ bytes on a ring of $X$ chips", r"T_\text{AG}",
            ag.net_time)
coll_d.step("AllReduce = ReduceScatter + AllGather", r"T_\text{AR}", ar.net_time)
coll_d.step("AllToAll: each piece only goes as far as its destination", r"T_\text{A2A}",
            a2a.net_time)
ag_line = coll_d.step("AllGather on a line (no wraparound)", r"T_\text{AG}^\text{line}",
                      sr.all_gather(lat_line, V_b, "X").net_time)
two = sr.all_gather(sr.mesh(chip, {"X": X, "Y": Y}, hop_latency=T_min), V_b, "XY")
coll_d.step("AllGather over two ring axes at once: their bandwidths add", r"T_\text{AG}^{XY}",
            two.net_time)
coll_d.claim(r"bandwidth-bound: $T_\text{AG} = V_b / W_\text{ici}$, $T_\text{AR} = 2 V_b / "
             r"W_\text{ici}$, $T_\text{A2A} = V_b / (4 W_\text{ici})$, none depending on $X$",
             ag.t_bw == V_b / W_ici and ar.t_bw == 2 * V_b / W_ici
             and a2a.t_bw == V_b / (4 * W_ici))
coll_d.claim(r"the latency floor is $T_\text{min} X/2$ on a ring, $T_\text{min} (X - 1)$ on a "
             r"line, $T_\text{min} (X + Y)/2$ over two axes",
             ag.t_lat == T_min * X / 2 and sr.all_gather(lat_line, V_b, "X").t_lat
             == T_min * (X - 1) and sp.cancel(two.t_lat - T_min * (X + Y) / 2) == 0)
penalty = coll_d.step("line over ring, bandwidth terms", r"T^\text{line} / T^\text{ring}",
                      sp.cancel(sr.all_gather(lat_line, V_b, "X").t_bw / ag.t_bw))
coll_d.claim(r"a line costs $2(X - 1)/X$ of a ring: $1.5\times$ at $X = 4$, tending to "
             r"$2\times$. Erratum: ch. 3's summary writes $(V/W)(X - 1)/X \to V/W_\text{bidi}$; "
             r"with $W$ one-way the limit is $V/W_1 = 2V/W_\text{ici}$",
             sp.cancel(penalty - 2 * (X - 1) / X) == 0
             and penalty.subs(X, 4) == sp.Rational(3, 2) and sr.limit(penalty, X) == 2)
v4p = sr.mesh("tpu-v4p", "4x4x4")
Bq, Dq = 1024, 4096
q_x = sr.all_gather(v4p, 2 * Bq * Dq // 4, "X")  # [B_X, D_Y] -> [B, D_Y]: V = 2BD/Y
q_y = sr.all_gather(v4p, 2 * Bq * Dq // 4, "Y")
q_xy = sr.all_gather(v4p, 2 * Bq * Dq, "XY")
q_z = sr.all_reduce(v4p, 2 * Bq * Dq // 16, "Z")  # [B_X, D_Y]{U_Z}: V = 2BD/(XY)
q3 = sr.all_gather(v4p, 2 * 128, "X")  # bf16[128] over X: 256 bytes
coll_d.step(r"v4p 4x4x4, $\text{AllGather}_X$ of $\text{bf16}[B_X, D_Y]$, $B = 1024$, "
            r"$D = 4096$ ($V_b = 2BD/Y$)",
            r"T_\text{AG}^X" + US, q_x.net_time * us)
coll_d.step(r"$\text{AllGather}_{XY}$ of the same array ($V_b = 2BD$, two axes)",
            r"T_\text{AG}^{XY}" + US, q_xy.net_time * us)
coll_d.step("its latency floor: (2 + 2) hops of 1 us", r"T_\text{lat}^{XY}" + US,
            q_xy.t_lat * us)
coll_d.step(r"$\text{AllReduce}_Z$ of $[B_X, D_Y]\{U_Z\}$ ($V_b = 2BD/(XY)$)",
            r"T_\text{AR}^Z" + US, q_z.net_time * us)
coll_d.step(r"$\text{AllGather}_X$ of $\text{bf16}[128]$: 64 bytes a shard, 2 hops",
            r"T_\text{AG}^\text{tiny}" + US, q3.net_time * us)
coll_d.claim(r"question 2: $\text{AllGather}_X$ and $\text{AllGather}_Y$ take 23 us (23.3)",
             int(t_us(q_x)) == 23 and q_x.net_time == q_y.net_time)
coll_d.claim(r"$\text{AllGather}_{XY}$ takes 46.6 us (the book prints 46, truncated), far "
             "above its 4 us latency floor. Erratum: the revision at 04d8de5 gives the floor as "
             "2 us, with 1/2 us per hop 'in TPU v5e' (the slice is a v4p; ch. 3 says 1 us)",
             int(t_us(q_xy)) == 46 and round(t_us(q_xy), 1) == 46.6
             and q_xy.t_lat * us == 4)
coll_d.claim(r"$\text{AllReduce}_Z$ of $[B_X, D_Y]\{U_Z\}$ takes 11.7 us. Erratum: the Feb "
             r"2025 answer (190 us) forgets that each group holds $2BD/(XY)$ bytes; 04d8de5 asks "
             r"for an '$\text{AllGather}_Z$' of the unreduced array and answers 5.8 us, the cost "
             "of a "
             "ReduceScatter, half an AllReduce",
             round(t_us(q_z), 1) == 11.7 and round(t_us(q_z) / 2, 1) == 5.8)
coll_d.claim(r"question 3: $\text{AllGather}_X$ of $\text{bf16}[128]$ is latency-bound at 2 us",
             q3.bound == "latency" and q3.net_time * us == 2)

# --- No wraparound and latency: a v5e 8x4 -----------------------------------------------
v5e_d = Derivation("No wraparound and the latency-bound regime", source=CH3 + " (pop quiz 2; "
                   "A note on ICI latency)")
v5e_8x4 = sr.mesh("tpu-v5e", {"X": 8, "Y": 4})
E_, F_ = 2048, 8192
pq = sr.all_gather(v5e_8x4, 2 * E_ * F_, "Y")  # [E_Y, F] -> [E, F]
pq_ring = sr.all_gather(sr.mesh("tpu-v5e", {"X": 8, "Y": 4}, wrap=True), 2 * E_ * F_, "Y")
pq2 = sr.all_gather(v5e_8x4, 2 * 256 * 256, "Y")
v5e_d.step(r"a v5e 8x4 ($X$ = 8, $Y$ = 4, no wraparound), $\text{AllGather}_Y$ of "
           r"$\text{bf16}[E_Y, F]$, $E = 2048$, $F = 8192$: a line of 4",
           r"T_\text{AG}^\text{line}" + US, pq.net_time * us)
v5e_d.step(r"the same if $Y$ had wraparound ($V_b / W_\text{ici}$)",
           r"T_\text{AG}^\text{ring}" + US, pq_ring.net_time * us)
v5e_d.step("$E = F = 256$: 32 kB a shard, 3 hops of 1 us", r"T_\text{AG}^\text{small}" + US,
           pq2.net_time * us)
v_star = v5e_d.step("buffer size where the latency floor meets the bandwidth term, ring",
                    r"V^*_\text{ring}", sr.crossover(ag.t_lat, ag.t_bw, V_b))
v_star_line = v5e_d.step("the same on a line", r"V^*_\text{line}",
                         sr.crossover(sr.all_gather(lat_line, V_b, "X").t_lat,
                                      sr.all_gather(lat_line, V_b, "X").t_bw, V_b))
v5e = sr.chip("tpu-v5e")
shard_v5e = v5e_d.step(r"per-shard threshold $V^*/X$ on a v5e: 4.5e10 B/s $\times$ 1 us",
                       r"V^*/X / \text{B}", (v_star / X).subs({W_1: v5e.link_bw,
                                                   T_min: v5e.network.hop_latency}))
knee_16 = sr.all_gather(sr.mesh("tpu-v5e", "16x16"), V_b, "X")
v_16 = v5e_d.step("the knee of a v5e 16x16 AllGather over $X$", r"V^*_{16} / \text{B}",
                  sr.crossover(knee_16.t_lat, knee_16.t_bw, V_b))
v5e_d.claim("pop quiz 2: 560 us without wraparound (559.2); 373 us with it (the book's 377 "
            "rounds $V$ up to 34 MB); the ratio is $2(X - 1)/X = 1.5$",
            round(t_us(pq), -1) == 560 and round(t_us(pq_ring)) == 373
            and pq.net_time / pq_ring.net_time == sp.Rational(3, 2))
v5e_d.claim("$E = F = 256$ is latency-bound: 3 us (32 kB a shard is under 45 kB)",
            pq2.bound == "latency" and pq2.net_time * us == 3 and 256 * 64 * 2 < shard_v5e)
v5e_d.claim(r"$V^* = X W_1 T_\text{min}$ on a ring and on a line alike: the test is per-shard "
            r"bytes $V_b/X$ against $W_1 T_\text{min}$ (ch. 7's appendix says total bytes; its "
            "own example divides)",
            v_star == X * W_1 * T_min and sp.cancel(v_star_line - v_star) == 0)
v5e_d.claim("v5e: 45 kB a shard; 720 kB for a 16-chip ring", shard_v5e == 45000
            and v_16 == 16 * 45000)

# --- GPUs: an 8xH100 node and across nodes ----------------------------------------------
gpu_d = Derivation(r"Collectives on an $8\times$H100 node and across nodes",
                   source=CH12 + " (How Do Collectives Work on GPUs?)")
node, h100 = sr.mesh("h100", {"X": 8}), sr.chip("h100")
W_gpu = h100.link_bw * h100.network.nvlink_ports
W_node = h100.network.node_egress
gpu_d.step(r"$W_\text{GPU}$: 18 NVLink-4 links of 25 GB/s one way", r"W_\text{GPU} / (\text{GB/s})",
           W_gpu / GBs)
per_v = r"\, W_\text{GPU} / V_b"  # times as multiples of V_b / W_GPU
g_ag = gpu_d.step("AllGather of $V_b$ bytes over the node's ring: $(N - 1)/N$ with $N = 8$",
                  r"T_\text{AG}" + per_v, sr.all_gather(node, V_b, "X").t_bw * W_gpu / V_b)
g_sharp = gpu_d.step(r"AllReduce with SHARP (in-switch reduction): exactly "
                     r"$V_b / W_\text{GPU}$",
                     r"T_\text{AR}^\text{SHARP}" + per_v,
                     sr.all_reduce(node, V_b, "X", sharp=True).t_bw * W_gpu / V_b)
g_a2a = gpu_d.step("AllToAll: direct sends, $(N - 1)/N^2$", r"T_\text{A2A}" + per_v,
                   sr.all_to_all(node, V_b, "X").t_bw * W_gpu / V_b)
pq1 = sr.all_gather(node, 2 * 1024 * 16384, "X")
gpu_d.step(r"pop quiz 1: AllGather of $\text{bf16}[B_X, F]$, $B = 1024$, $F = 16384$",
           r"T_\text{AG}" + US, pq1.net_time * us)
su, two_nodes = sr.mesh("h100", {"N": 32, "G": 8}), sr.mesh("h100", {"N": 2, "G": 8})
bw_su = gpu_d.step("AllGather bandwidth over a scalable unit (32 nodes): the least over the "
                   "levels of $D_i W_i / (D_i - 1)$", r"W_\text{SU} / (\text{GB/s})",
                   V_b / sr.all_gather(su, V_b, "NG").t_bw / GBs)
lv_node, lv_leaf = (lv.degree * lv.bw / (lv.degree - 1) / GBs
                    for lv in two_nodes.levels("NG"))
gpu_d.step(r"exactly two nodes: the node level ($D = 8$, $W = W_\text{GPU}$)",
           r"W_\text{node level} / (\text{GB/s})", lv_node)
gpu_d.step(r"and the leaf level ($D = 2$, $W = W_\text{node}$ = 400 GB/s)",
           r"W_\text{leaf level} / (\text{GB/s})", lv_leaf)
a2a_2 = gpu_d.step("AllToAll over two nodes (16 GPUs): $(M - 1)/M^2$ with $M = 2$ nodes",
                   r"T_\text{A2A}^{2\,\text{nodes}}\, W_\text{node} / V_b",
                   sr.all_to_all(two_nodes, V_b, "NG").t_bw * W_node / V_b)
gpu_d.claim(r"$T_\text{AG} = 7 V_b/(8 W_\text{GPU}) \approx V_b / W_\text{GPU}$ as on a TPU "
            r"ring; SHARP gives $V_b / W_\text{GPU}$ exactly; AllToAll $7 V_b/(64 W_\text{GPU}) "
            r"\approx V_b/(8 W_\text{GPU})$, against $V_b/(4 W_\text{ici})$ on a TPU ring",
            g_ag == sp.Rational(7, 8) and g_sharp == 1 and g_a2a == sp.Rational(7, 64)
            and W_gpu == 450 * GBs)
gpu_d.claim("pop quiz 1: 65 us precisely (65.2), 75 us without the 7/8",
            int(t_us(pq1)) == 65 and round(float(2 * 1024 * 16384 / W_gpu * us)) == 75)
gpu_d.claim(r"a scalable unit gathers at 413 GB/s (leaf: 400 GB/s $\times$ 32/31); the node "
            "at 514",
            round(float(bw_su)) == 413 and round(float(lv_node)) == 514)
gpu_d.claim(r"over exactly two nodes the node level binds: $V_b/(514\text{ GB/s})$ against "
            r"$V_b/(800\text{ GB/s})$",
            lv_leaf == 800 and lv_node < lv_leaf)
gpu_d.claim(r"AllToAll over two nodes takes $V_b/(1.6\text{ TB/s})$, $2.6\times$ the node's "
            r"$V_b/(4.1\text{ TB/s})$. The book's '$B/(2 \times 400 \times 10^9)$, a more than "
            r"$4\times$ degradation' drops the $(M - 1)/M = 1/2$ of its own precise formula",
            a2a_2 == sp.Rational(1, 4) and W_node == 400 * GBs
            and round(float(a2a_2 / W_node / (g_a2a / W_gpu)), 1) == 2.6)

# --- Gather first or reduce after --------------------------------------------------------
gr_d = Derivation("Gather the weights first, or reduce the partial sums after",
                  source=CH3 + " (problems 4 and 9)")
sym1 = sr.mesh(chip, {"X": X})
TEXT = "X[B, D] @ W[D_X, F] -> [B, F]"
g_plan = sr.shard_matmul(sym1, TEXT, strategy="gather")
r_plan = sr.shard_matmul(sym1, TEXT, strategy="reduce")
rs_plan = sr.shard_matmul(sym1, "X[B, D] @ W[D_X, F] -> [B, F_X]", strategy="reduce")
fsdp = sr.shard_matmul(sym1, "X[B_X, D] @ W[D_X, F] -> [B_X, F]")
gr_d.step(r"gather: $\text{AllGather}_X\,W[D_X, F]$, then the whole matmul on every chip of "
          "$X$",
          r"T_\text{math}^\text{gather}", g_plan.t_math)
gr_d.step(r"its AllGather moves the $2DF$ bytes of $W$ at $W_\text{ici} = 2 W_1$",
          r"T_\text{comms}^\text{gather}", g_plan.t_comms)
gr_d.step(r"reduce: slice $X$ locally, $X[B, D_X] \cdot W[D_X, F] \to [B, F]\{U_X\}$: $1/X$ "
          "of the FLOPs",
          r"T_\text{math}^\text{reduce}", r_plan.t_math)
gr_d.step(r"then $\text{AllReduce}_X$ of the $2BF$ bytes of partial sums, twice an "
          "AllGather's cost",
          r"T_\text{comms}^\text{reduce}", r_plan.t_comms)
d_bytes = gr_d.step("the reduce moves fewer bytes above", r"D^*_\text{bytes}",
                    sr.crossover(g_plan.t_comms, r_plan.t_comms, D))
d_rs = gr_d.step("the same with a ReduceScatter (output left sharded $[B, F_X]$)",
                 r"D^*_\text{RS}", sr.crossover(g_plan.t_comms, rs_plan.t_comms, D))
d_book = gr_d.step("problem 4: the reduce's comms against the gather's math",
                   r"D^*_\text{book}", sr.crossover(r_plan.t_comms, g_plan.t_math, D))
b_gather = gr_d.step("gather: compute-bound above", r"B^*_\text{gather}", g_plan.crossover(B))
x_reduce = gr_d.step("reduce: compute-bound below", r"X^*_\text{reduce}", r_plan.crossover(X))
x_rs = gr_d.step("with the ReduceScatter", r"X^*_\text{RS}", rs_plan.crossover(X))
b_fsdp = gr_d.step(r"FSDP-style $X[B_X, D] \cdot W[D_X, F]$: compute-bound above",
                   r"B^*_\text{FSDP}",
                   fsdp.crossover(B))
alpha = C / W_ici
v5p = sr.chip("tpu-v5p")
at_v5p = {C: v5p.peak(), W_1: v5p.link_bw}
a_v5p = gr_d.step(r"$\alpha = C / W_\text{ici}$ on a v5p: 4.59e14 / 1.8e11", r"\alpha_\text{v5p}",
                  alpha.subs(at_v5p))
gr_d.claim("reduce-after moves fewer bytes exactly when $D > 2B$ (bf16; $D > B$ when it may "
           "ReduceScatter); in general when the gathered operand outweighs the reduced output, "
           "$M > K$ in problem 9",
           d_bytes == 2 * B and d_rs == B and sp.cancel(g_plan.t_comms / rs_plan.t_comms) == D / B)
gr_d.claim(r"problem 4: the reduce's comms beat the gather's math when $D > 2 \alpha$ = 5100 "
           "on a v5p", sp.cancel(d_book - 2 * alpha) == 0 and a_v5p == 2550
           and d_book.subs(at_v5p) == 5100)
gr_d.claim(r"the reduce plan is compute-bound only for $X < D/(2 \alpha)$ ($X < D/\alpha$ with "
           r"a ReduceScatter): with $D = 8192$ on a v5p, $X < 1.6$, so it is comms-bound on any "
           "mesh",
           sp.cancel(x_reduce - D / (2 * alpha)) == 0 and sp.cancel(x_rs - D / alpha) == 0
           and round(float(x_reduce.subs(at_v5p).subs(D, 8192)), 1) == 1.6)
gr_d.claim(r"the gather plan is compute-bound for $B > \alpha$ (2550 on a v5p). Erratum: the "
           r"book's answer says '$F < C/W_\text{ici}$'; the $2DF$ gathered bytes against $2BDF$ "
           r"FLOPs give $B < \alpha$ (and 04d8de5 writes the gathered bytes as $2BD$)",
           sp.cancel(b_gather - alpha) == 0 and b_gather.subs(at_v5p) == 2550)
gr_d.claim(r"with the batch sharded too (FSDP), $B/X > \alpha$ per chip",
           sp.cancel(b_fsdp - X * alpha) == 0)

# --- Chapter 1's two chips as X = 2 ------------------------------------------------------
two_d = Derivation("Chapter 1's two-chip example is the case $X = 2$",
                   source=CH3 + "; ch. 1 (Network communication rooflines)")
pair = sr.shard_matmul(sr.mesh(chip, {"X": 2}, wrap=False), "X[B, D_X] @ W[D_X, F] -> [B, F]")
two_d.step("two chips, one link each way: each multiplies its half of $D$", r"T_\text{math}",
           pair.t_math)
two_d.step("the $2BF$ bytes of partial sums, AllReduced over the link", r"T_\text{comms}",
           pair.t_comms)
d_pair = two_d.step("compute-bound above", r"D^*", pair.crossover(D))
at_v5e = {C: v5e.peak(), W_1: v5e.link_bw}
d_v5e = two_d.step(r"TPU v5e: 2 $\times$ 1.97e14 / 4.5e10", r"D^*_\text{v5e}", d_pair.subs(at_v5e))
ring_at_2 = two_d.step(r"the ring's $X < D/(2 \alpha)$ solved for $D$ at $X = 2$",
                       r"D^*_\text{ring}",
                       sr.crossover(x_reduce, 2, D))
old = sr.shard_matmul(sr.mesh(v5e, {"X": 2}, wrap=False, hop_latency=0),  # derivation 01's:
                     "X[B, D_X] @ W[D_X, F] -> [B, F]").time                 # no latency
v5e_pair = sr.shard_matmul(sr.mesh("tpu-v5e", {"X": 2}, custom=True),
                           "X[B, D_X] @ W[D_X, F] -> [B, F]")
two_d.claim(r"$T_\text{math} = BDF/C$, $T_\text{comms} = 2BF/W_1$, so $D^* = 2C/W_1$: it "
            "depends on $D$, not $B$",
            pair.t_math == B * D * F / C and pair.t_comms == 2 * B * F / W_1
            and d_pair == 2 * C / W_1)
two_d.claim("v5e: $D^*$ = 78800/9, about 8760 (8755.6, the number of derivation 01, with no "
            "latency)",
            d_v5e == sp.Rational(78800, 9) and d_v5e == sr.crossover(old.t_math, old.t_net, D))
two_d.claim("the $X$-chip ring formula gives the same threshold at $X = 2$ (a ring of two is a "
            "line of two)", sp.cancel(ring_at_2 - d_pair) == 0)
pair_ar = v5e_pair.steps[0].collective
two_d.claim("on the v5e record the bandwidth terms agree; the AllReduce's 2 us latency floor "
            "(1 hop to scatter, 1 to gather) matters only while $2BF$ < 90 kB",
            pair_ar.t_bw == old.t_net and pair_ar.t_lat * us == 2
            and pair_ar.t_lat * v5e.link_bw == 90000)

# --- Figures ------------------------------------------------------------------------------
coll_png = OUT / "04_collectives.png"
sr.plot.collective_plot({
    "v5e 16x16, X (ring of 16)": (sr.mesh("tpu-v5e", "16x16"), "X"),
    "v5e 8x4, Y (line of 4)": (v5e_8x4, "Y"),
    "v5p 4x4x4, XYZ": (v5p_cube, "XYZ"),
    "8xH100 node": (node, "X"),
    "32 H100 nodes (a scalable unit)": (su, "NG")}, path=coll_png)
mm_png = OUT / "04_sharded_matmuls.png"
sr.plot.sharded_matmul_plot(v5p_cube, {
    "gather W first": (TEXT, "gather"), "reduce after": (TEXT, "reduce"),
    "FSDP, X[B_X, D] @ W[D_X, F]": "X[B_X, D] @ W[D_X, F] -> [B_X, F]"},
    sizes={"D": 8192, "F": 32768}, path=mm_png)

NOTES = [mesh_d, cases_d, coll_d, v5e_d, gpu_d,
         (coll_png, "AllGather time against buffer size: flat at the latency floor, then $V_b$ "
                    "over the effective bandwidth; dots mark the knee $V^*$ (per shard "
                    r"$W_1 T_\text{min}$ on a TPU ring). GPU groups pay one NCCL ring step per "
                    "GPU (the h100 record's figure; the book gives none), hence the late knee "
                    "of 256 GPUs"),
         gr_d, two_d,
         (mm_png, r"$X[B, D] \cdot W[D_X, F]$ on a v5p 4x4x4, sharded over $X$ ($D = 8192$, "
                  "$F = 32768$): "
                  "compute (solid) against communication (dashed) time per chip")]
DERIVATIONS = [n for n in NOTES if isinstance(n, Derivation)]
assert all(ok for d in DERIVATIONS for _, ok in d.claims)
assert coll_png.exists() and mm_png.exists()

if __name__ == "__main__":
    print_notes(NOTES)
