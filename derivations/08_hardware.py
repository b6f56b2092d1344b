r"""Hardware: inside the chips, the roofs they make, and GPU systems at scale.

Claim: a chip's matmul peak is its units at work, cores $\times$ units $\times$ clock
$\times$ FLOPs per unit per cycle (a v5e: $4 \times 1.5\,\text{GHz} \times 32768$, the
sheet's $1.97 \times 10^{14}$ to its rounding). The roof a kernel meets depends on where its
operands come from: from VMEM (22 $\times$ HBM bandwidth) an int8 matmul is compute-bound
above $B = 11$, from host memory over PCIe a bf16 one only above $B \approx 61{,}000$, and on
the VPU a kernel needs only about 3 FLOPs a byte. Across GPU nodes an AllToAll leaves through
each GPU's network card whatever level it is bound for, so over $M$ nodes it takes
$V_b (M - 1) / (M^2 W_\text{node})$; a core level above the 1024-GPU SuperPod makes 4096 to
65,536 H100s one fat tree, where a small AllReduce waits on NCCL's tree, $\log_2$ of the
nodes deep, not on a ring of every GPU; a spine above GB200's 576-GPU scalable units makes
NVIDIA's 9216. A sharded array's per-device shape, bytes and copies follow from its spec.

Source: "How to Scale Your Model", ch. 1 (https://jax-ml.github.io/scaling-book/roofline/),
ch. 2 (https://jax-ml.github.io/scaling-book/tpus/), ch. 3
(https://jax-ml.github.io/scaling-book/sharding/) and ch. 12
(https://jax-ml.github.io/scaling-book/gpus/), read from the book's markdown (tpus.md and
sharding.md at scaling-book commit 0819a7d, gpus.md at 1a55377). Every number is rebuilt from
the chip records and asserted to the book's rounding. Where the book slips the step says so:
the H100 tensor-core clock, the v5p VPU's "around 3", the vector ridge without FMAs, and the
two-node AllToAll's "more than $4\times$".
"""

import sympy as sp

import symroof as sr
from symroof.derivation import Derivation, print_notes
from symroof.hardware.internals import peak_from_units, ridge
from symroof.symbols import V_b

CH1 = "How to Scale Your Model, ch. 1: https://jax-ml.github.io/scaling-book/roofline/"
CH2 = "How to Scale Your Model, ch. 2: https://jax-ml.github.io/scaling-book/tpus/"
CH3 = "How to Scale Your Model, ch. 3: https://jax-ml.github.io/scaling-book/sharding/"
CH12 = "How to Scale Your Model, ch. 12: https://jax-ml.github.io/scaling-book/gpus/"
T = sp.Integer(10**12)
v5e, v5p, v6e = sr.chip("tpu-v5e"), sr.chip("tpu-v5p"), sr.chip("tpu-v6e")
h100, b200 = sr.chip("h100"), sr.chip("b200")

# --- Inside the chips -----------------------------------------------------------------------
units_d = Derivation("A peak is its units at work", source=CH2 + " and " + CH12)
f = v5e.internals
per_mxu = units_d.step("one v5e MXU: a bf16[8,128] @ bf16[128,128] matmul every 8 cycles at "
                       "1.5 GHz", r"C_\text{MXU} / \text{(FLOP/s)}",
                       f["clock"] * f["unit_flops.bf16"])
v5e_peak = units_d.step("4 MXUs: the chip's bf16 peak from its units",
                        r"C_\text{units} / \text{(FLOP/s)}", peak_from_units(v5e))
a100_peak = units_d.step("A100: 108 SMs $\\times$ 4 tensor cores $\\times$ 1.41 GHz "
                         "$\\times$ 512 FLOPs a cycle", r"C^\text{A100}_\text{units}",
                         peak_from_units(sr.chip("a100")))
tc_clock = units_d.step("H100: the clock the sheet's 989 TFLOP/s implies for 132 $\\times$ 4 "
                        "tensor cores of 1024 FLOPs a cycle", r"f_\text{TC} / \text{GHz}",
                        h100.peak() / (132 * 4 * 1024) / 10**9)
cuda = units_d.step("H100 vector FLOP/s without FMAs: 132 $\\times$ 128 CUDA cores at the "
                    "1.98 GHz boost", r"C_\text{vec} / \text{(TFLOP/s)}",
                    h100.internals["vector_alus"] * h100.internals["clock"] / T)
units_d.claim("about 5e13 FLOP/s per MXU and 1.97e14 for the chip (the sheet: 1.97e14, "
              "within 0.2%)", round(float(per_mxu), -12) == 49e12
              and abs(v5e_peak / v5e.peak() - 1) < sp.Rational(1, 400))
units_d.claim("A100: 312 TFLOP/s from its units, the sheet's figure",
              round(float(a100_peak) / 1e12) == 312)
units_d.claim("H100: the tensor cores run at 1.83 GHz, not the table's 1.98 GHz boost (8% "
              "too fast) nor the 1.76 GHz of the book's footnote (4% too slow): a slip, as "
              "NVIDIA publishes no tensor-core clock",
              round(float(tc_clock), 2) == 1.83)
units_d.claim("CUDA cores: H100 16896, B200 18944, a v5p 8192 VPU ALUs (Quiz 1 Q1); vector "
              "FLOP/s 33.5 TFLOP/s with boost (Quiz 1 Q2), half the sheet's 67 (an FMA is 2)",
              (h100.internals["vector_alus"], b200.internals["vector_alus"],
               v5p.internals["vector_alus"]) == (16896, 18944, 8192)
              and round(float(cuda), 1) == 33.5
              and abs(2 * cuda * T / h100.peak("fp32") - 1) < sp.Rational(1, 200))

# --- Roofs ---------------------------------------------------------------------------------
roof_d = Derivation("The roof depends on where the operands come from", source=CH1 + "; " + CH2)
vmem_b = roof_d.step("int8 matmul with its weights in VMEM (22 $\\times$ HBM bandwidth): "
                     "$B^* = C_\\text{int8} / (2 W_\\text{VMEM})$", r"B^*_\text{VMEM}",
                     sr.critical_batch(v5e, dtype="int8", roof="vmem"))
vpu = roof_d.step("the v5p VPU: about 7e12 FLOP/s against 2.8e12 B/s of HBM",
                  r"I^*_\text{VPU}", ridge(v5p, "vpu"))
ch2_v6e = v6e.replace(peaks={"bf16": 9.2e14}, pcie_bw=1.5e10,
                      note="ch. 2 problem 3: 9.2e14 FLOP/s, an assumed 1.5e10 B/s of PCIe")
pcie_b = roof_d.step("a bf16 matmul streamed from host DRAM on a v6e, $B \\ll D$, with the "
                     "problem's 9.2e14 FLOP/s and 1.5e10 B/s", r"B^*_\text{PCIe}",
                     sr.critical_batch(ch2_v6e, roof="pcie"))
pcie_rec = roof_d.step("... with the record's 9.1e14 and a v6e PCIe of 3.2e10 B/s, as in How "
                       "to Scale Your Model",
                       r"B^*_\text{PCIe, record}", sr.critical_batch(v6e, roof="pcie"))
load = sr.time(sr.Cost(host_bytes=10**9),
               v5e.replace(pcie_bw=1.5e10, note="ch. 2's problems: 1.5e10 B/s of PCIe"))
t_load = roof_d.step("8 GB over 8 PCIe links of 1.5e10 B/s (1 GB a link): a host transfer "
                     "as a cost", r"T_\text{host} / \text{ms}", load.t_host * 1000)
vec = roof_d.step("the H100's vector ridge, FMAs counted as 2 FLOPs as the sheet counts them",
                  r"I^*_\text{CUDA}", ridge(h100, "vpu"))
roof_d.claim("from VMEM an int8 matmul needs only $B > 11$ (ch. 2 problem 4)",
             round(float(vmem_b)) == 11)
roof_d.claim("v5p's VPU critical intensity 'is around 3': 2.5 against the table's 2.8e12 B/s "
             "(2.8 against the prose's 2.5e12)", vpu == sp.Rational(5, 2)
             and round(float(vpu)) in (2, 3))
roof_d.claim("a PCIe-bound matmul on v6e needs $B > 61{,}000$ (ch. 2 problem 3); with the "
             "v6e's own 3.2e10 B/s about 28,000", round(float(pcie_b), -3) == 61000
             and round(float(pcie_rec), -3) == 28000)
roof_d.claim("the host load takes about 66 ms (ch. 2 problem 5), and the step is host-bound",
             int(float(t_load)) == 66 and load.bound == "host")
roof_d.claim("the H100's vector ridge is 20; ch. 12 Quiz 1 Q7 says 10, ignoring FMAs",
             vec == 20)

# --- GPU systems at scale -------------------------------------------------------------------
gpu_d = Derivation("GPU systems beyond one SuperPod", source=CH12)
net = h100.network
W_node = net.node_egress
sw = gpu_d.step("an H100 node: 4 NVSwitches of 64 ports of 25 GB/s one way",
                r"W_\text{NVSwitch} / \text{(TB/s)}", h100.internals["nvswitch_bw"] / T)
bis = gpu_d.step("but 8 GPUs of 450 GB/s push only this, the node's bisection bandwidth",
                 r"W_\text{bisection} / \text{(TB/s)}", net.node_bisection / T)
big = sr.mesh("h100", {"X": 2048, "Y": 8})
levels = [(lv.name, lv.degree) for lv in big.levels("XY")]
ar = gpu_d.step("an AllReduce over 16,384 H100s (LLaMA-3's count) in DGX SuperPods under a "
                "core level: twice the AllGather, bound at the leaf",
                r"T_\text{AR}\, W_\text{node} / V_b", sr.all_reduce(big, V_b, "XY").t_bw
                * W_node / V_b)
floor = gpu_d.step("... and its latency floor: NCCL's tree, $2 (7 \\times 0.6 + 11 \\times "
                   "5.0)\\,\\mu$s (7 hops in the node, 11 levels over 2048 nodes), not a ring's "
                   "$2 \\times 16{,}383$ steps",
                   r"T_\text{AR, floor} / \mu\text{s}", sr.all_reduce(big, V_b, "XY").t_lat
                   * 10**6)
ring_floor = sr.all_reduce(big, V_b, "XY", conventions=sr.profile("symroof").replace(
    allreduce_latency="ring")).t_lat
nvl = sr.mesh("gb200", {"R": 128, "G": 72})
M = 64
a2a = gpu_d.step("an AllToAll over 64 nodes: every piece leaving a node crosses its NICs, "
                 "leaf- and spine-bound alike", r"T_\text{A2A}\, W_\text{node} / V_b",
                 sr.all_to_all(sr.mesh("h100", {"N": M, "G": 8}), V_b, "NG").t_bw
                 * W_node / V_b)
node8, two = sr.mesh("h100", {"G": 8}), sr.mesh("h100", {"N": 2, "G": 8})
ratio = gpu_d.step("two nodes against one: the exact AllToAll forms", r"T^{2}_\text{A2A} / "
                   r"T^{1}_\text{A2A}", sr.all_to_all(two, V_b, "NG").t_bw
                   / sr.all_to_all(node8, V_b, "G").t_bw)
ragged = gpu_d.step("a ragged AllToAll (4 of 8 destinations, Pop Quiz 2) against the dense "
                    "one", r"T^{k=4}_\text{A2A} / T_\text{A2A}",
                    sr.all_to_all(node8, V_b, "G", top_k=4).t_bw
                    / sr.all_to_all(node8, V_b, "G").t_bw)
gpu_d.claim("a node's switches could carry 6.4 TB/s, its GPUs 3.6 TB/s, which is also its "
            "bisection bandwidth (Quiz 2)", sw == sp.Rational(32, 5) and bis == sp.Rational(18, 5))
gpu_d.claim("16,384 H100s build: node 8, leaf 32, spine 4, core 16; the AllReduce is "
            r"$2 \cdot 31/32\, V_b / W_\text{node}$ (the book's 413 GB/s leaf bound, twice)",
            big.n_chips == 16384 and levels == [("node", 8), ("leaf", 32), ("spine", 4),
                                                ("core", 16)] and ar == sp.Rational(31, 16))
gpu_d.claim("NCCL's tree floor is $118.4\\,\\mu$s where a flat ring's would be 40 ms (its "
            r"steps inside a node at NCCL's 1.0 $\mu$s network overhead); the book gives no GPU "
            "latency, only that 'a tree (log N hops) lowers latency, not bandwidth cost'",
            floor == sp.Rational(592, 5) and round(float(ring_floor) * 1e3) == 40)
gpu_d.claim("GB200: 128 NVL72 racks, 16 scalable units of 8 under a spine, are NVIDIA's 9216 "
            "GPUs", nvl.n_chips == 9216 and [lv.degree for lv in nvl.levels("RG")]
            == [72, 8, 16])
gpu_d.claim(r"over 64 nodes the AllToAll is $V_b (M - 1)/(M^2 W_\text{node})$, as in How to "
            "Scale Your Model",
            a2a == sp.Rational(M - 1, M**2))
gpu_d.claim(r"the book's 'more than $4\times$ degradation' from one node to two compares "
            r"$V_b/(8 W_\text{GPU})$ with $V_b/(2 W_\text{node})$ ($4.5\times$); the exact "
            r"forms give 18/7, about $2.6\times$", ratio == sp.Rational(18, 7))
gpu_d.claim("the ragged AllToAll is min(k/N, 1) of the dense one: half",
            ragged == sp.Rational(1, 2))

# --- Machines that exist, and arrays on them -------------------------------------------------
exist_d = Derivation("Machines that exist, and sharded arrays on them", source=CH2 + "; " + CH3)
refusals = []
for chip_name, shape in (("h100", {"X": 9}), ("tpu-v5e", "3x5")):
    try:
        sr.mesh(chip_name, shape)
    except ValueError as err:
        refusals.append(str(err))
quiz = sr.shard_array("int8[128, 2048]", "I_XY, J",
                      sr.mesh(sr.symbolic_chip(), {"X": 2, "Y": 8, "Z": 2}))
dev = exist_d.step(r"ch. 3 Pop Quiz: $\text{int8}[128, 2048]$ as $A[I_{XY}, J]$ on X = 2, "
                   "Y = 8, Z = 2: bytes a device", r"\text{bytes}_\text{device}",
                   quiz.device_bytes)
tot = exist_d.step("... and over all 32 devices (2 copies, one per Z-plane)",
                   r"\text{bytes}_\text{total} / \text{KiB}", quiz.total_bytes / 1024)
fp4 = exist_d.step("B200 in fp4 with fp4 weights: the batch where a matmul turns "
                   "compute-bound", r"B^*_\text{fp4}", sr.critical_batch(b200, dtype="fp4"))
exist_d.claim("an H100 mesh of 9 GPUs and a v5e 3x5 slice are refused, naming what can be had "
              "(8 or 16 GPUs; 4x4, 2x4, 4x8)", len(refusals) == 2
              and "8 or 16 GPUs" in refusals[0] and "4x4, 2x4, 4x8" in refusals[1])
exist_d.claim("int8[8, 2048] a device, 16,384 bytes, 512 KiB in all", quiz.device_shape
              == (8, 2048) and dev == 16384 and tot == 512)
exist_d.claim("fp4 doubles fp8's peak, and with fp4 weights $B^*$ stays the bf16 281 (ch. 12 "
              "Quiz 1 Q3)", round(float(fp4)) == 281 and fp4 == sr.critical_batch(b200))

NOTES = [units_d, roof_d, gpu_d, exist_d]
assert all(ok for d in NOTES for _, ok in d.claims)

if __name__ == "__main__":
    print_notes(NOTES)
