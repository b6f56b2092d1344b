"""Training strategies on a mesh: the conditions equal the book's formulas symbolically and
its numbers on real chips; per-layer comms equal the book's table; memory shards as each
ZeRO level says; whole runs and the minimum slice; bad input fails naming the value.

The expected values are typed from the book (ch. 5, 6, 12; /work/shared/book_formulas.md
§6, §8.2), never from symroof's code."""

from __future__ import annotations

import math

import pytest
import sympy as sp

import symroof as sr
from symroof.hardware.chip import Chip
from symroof.hardware.topology import Level, Switched, Torus
from symroof.models import MoE, Transformer, train_memory
from symroof.symbols import B, D, F, X, Y, Z

C, W_ici, W_dcn = (sp.Symbol(n, positive=True) for n in ("C", "W_ici", "W_dcn"))
W_GPU, W_node = sp.Symbol("W_GPU", positive=True), sp.Symbol("W_node", positive=True)
ALPHA = C / W_ici
SYM_CHIP = sr.symbolic_chip(W_net=W_ici / 2)  # W_ici: both links of a wrapped axis
MESH3 = sr.mesh(SYM_CHIP, {"X": X, "Y": Y, "Z": Z})
MODEL = Transformer()  # every dimension a symbol
N3 = X * Y * Z


#: the book's layer (its one MLP block) with symroof's other conventions: the book's
#: formulas and table are of that block
BOOK_LAYER = sr.profile("symroof").replace(condition_layer="mlp_block")


def plan(strategy, mesh=MESH3, model=MODEL, batch=B, **kw):
    kw.setdefault("conventions", BOOK_LAYER)
    return sr.train_plan(model, mesh, strategy, batch_tokens=batch, seq=kw.pop("seq", 4096),
                         **kw)


# -- symbolic: the book's formulas --------------------------------------------------------
BOOK = [  # (strategy, axes, condition, the book's threshold)
    ("dp", {}, "dp", ALPHA / 3),  # B/X > alpha / M_X, M_X = 3 (all axes of a 3-D torus)
    ("zero1", {}, "fsdp", ALPHA / 3),
    ("zero2", {}, "fsdp", ALPHA / 3),
    ("fsdp", {}, "fsdp", ALPHA / 3),
    ("tp", {}, "tp", 3 * F * W_ici / C),  # Y < M_Y F W / C
    ("fsdp+tp", {"fsdp": "XY", "tp": "Z"}, "tp", F * W_ici / C),
    ("fsdp+tp", {"fsdp": "XY", "tp": "Z"}, "fsdp+tp", ALPHA**2 / (2 * F)),  # alpha^2/(M_X M_Y F)
    ("fsdp+tp", {"fsdp": "X", "tp": "YZ"}, "fsdp+tp", ALPHA**2 / (2 * F)),
    ("fsdp+tp", {"fsdp": "XY", "tp": "Z"}, "x_opt", sp.sqrt(B / F * 2 * N3)),  # M_X/M_Y = 2
    ("fsdp+tp", {"fsdp": "X", "tp": "YZ"}, "x_opt", sp.sqrt(B / F * N3 / 2)),
    ("dp+tp", {"tp": "Z"}, "dp", ALPHA / 2 / Z),  # per data shard alpha/2, per chip / Z
]


@pytest.mark.parametrize("strategy, axes, name, book", BOOK)
def test_conditions_are_the_books_formulas(strategy, axes, name, book):
    c = plan(strategy, **axes).conditions[name]
    assert sp.simplify(c.threshold - book) == 0, (c.threshold, book)


def test_one_axis_gives_c_over_w_ici():
    c = plan("dp", mesh=sr.mesh(SYM_CHIP, {"X": X})).conditions["dp"]
    assert c.threshold == ALPHA and c.lhs == "B/N"


def test_fsdp_tp_without_overlapping_x_and_y_traffic_is_the_earlier_revision():
    c = plan("fsdp+tp", fsdp="XY", tp="Z", overlap_axes=False).conditions["fsdp+tp"]
    assert sp.simplify(c.threshold - 4 * ALPHA**2 / (2 * F)) == 0  # 4 alpha^2/(M_X M_Y F)


def test_conditions_re_solve_when_the_chip_or_model_change():
    base = plan("tp", tp="Z", mesh=sr.mesh(SYM_CHIP, {"Z": Z})).conditions["tp"].threshold
    faster = sr.symbolic_chip(C=2 * C, W_net=W_ici / 2)
    again = plan("tp", mesh=sr.mesh(faster, {"Z": Z})).conditions["tp"].threshold
    wider = plan("tp", mesh=sr.mesh(SYM_CHIP, {"Z": Z}), model=MODEL.replace(F=2 * F))
    assert again == base / 2 and wider.conditions["tp"].threshold == 2 * base


def test_dcn_condition_is_per_slice_c_over_w_dcn():
    torus = Torus(rank=3, pod=(16, 20, 28), host=(2, 2, 1), wrap_rule="cube",
                  hop_latency=sp.Rational(1, 10**6), pcie_bw=16 * 10**9, dcn_bw=W_dcn)
    chip = Chip("sym-tpu", peaks={"bf16": C}, hbm_bw=sp.Symbol("W", positive=True),
                hbm_bytes=96 * 10**9, link_bw=W_ici / 2, network=torus)
    for S in (2, 8):
        mesh = sr.mesh(chip, {"S": S, "X": 4, "Y": 4, "Z": 4}, dcn="S")
        c = plan("dp+fsdp", mesh=mesh, dp="S").conditions["dcn"]
        # ring of S slices: (S - 1)/S of C/W_dcn tokens per slice; C/W_dcn as S grows
        assert c.threshold == C / W_dcn * sp.Rational(S - 1, S) and c.lhs == "B/slices"
        assert plan("dp+fsdp", mesh=mesh, dp="S").conditions["fsdp"].threshold == ALPHA / 3


def _gpu():
    levels = (Level("node", 8, 1, W_GPU), Level("leaf", 32, 8, W_node / 8),
              Level("spine", 4, 256, W_node / 8))
    net = Switched(nvlink_ports=18, levels=levels, sharp=True, hop_latency=1, pcie_bw=1)
    return Chip("sym-gpu", peaks={"bf16": C}, hbm_bw=sp.Symbol("W", positive=True),
                hbm_bytes=80 * 10**9, link_bw=W_GPU / 18, network=net)


def test_gpu_conditions_inside_a_node_and_beyond():
    gpu = _gpu()
    inside = plan("dp", mesh=sr.mesh(gpu, {"X": 8}, hop_latency=0)).conditions["dp"]
    assert inside.threshold == sp.Rational(7, 8) * C / W_GPU  # (N-1)/N C/W_GPU
    beyond = plan("dp", mesh=sr.mesh(gpu, {"X": 4, "Y": 8}, hop_latency=0)).conditions["dp"]
    # both levels: max((7/8)/W_GPU, (3/4)/W_node) C; the node egress binds when it is slower
    assert beyond.threshold.subs(W_GPU, 100 * W_node) == sp.Rational(3, 4) * C / W_node
    tp = plan("tp", mesh=sr.mesh(gpu, {"Y": 8}, hop_latency=0)).conditions["tp"]
    assert tp.threshold == sp.Rational(8, 7) * F * W_GPU / C  # Y < F W_GPU / C, ring factor


def test_pipeline_bubble_is_gpipes():
    p = plan("zero1+pp", pp="Z", microbatches=16)
    assert p.conditions["bubble"].threshold == (Z - 1) / (16 + Z - 1)
    assert "not in the book" in p.conditions["bubble"].source


COMMS = [  # per layer, W x seconds of collectives, forward and backward (ch. 5 table)
    ("dp", {}, 0, 8 * D * F),
    ("fsdp", {}, 4 * D * F, 8 * D * F),
    ("zero1", {}, 0, 8 * D * F),
    ("tp", {}, 4 * B * D, 4 * B * D),
    ("fsdp+tp", {"fsdp": "X", "tp": "Y"}, 4 * B * D / X + 4 * D * F / Y,
     4 * B * D / X + 8 * D * F / Y),  # backward TP reuses the forward gather of In
]


@pytest.mark.parametrize("strategy, axes, fwd, bwd", COMMS)
def test_layer_comms_are_the_books_table(strategy, axes, fwd, bwd):
    mesh = sr.mesh(SYM_CHIP, {"X": X, "Y": Y} if axes else {"X": X})
    rows = plan(strategy, mesh=mesh, **axes).layer
    for p, book in (("forward", fwd), ("backward", bwd)):
        t = sum((c.net_time for k, c in rows.items()
                 if k.startswith(p) and not k.endswith("compute")), sp.Integer(0))
        assert sp.simplify(t * W_ici - book) == 0, (p, t)
    flops = sum(c.flops for k, c in rows.items() if k.endswith("compute"))
    assert sp.simplify(flops - 12 * B * D * F / mesh.n_chips) == 0  # 4BDF + 8BDF, per chip


# -- numbers: the book's, and where it slips ----------------------------------------------
L70 = sr.model("llama-3.1-70b")  # = LLaMA-3-70B's dimensions (book ch. 6 table)


def test_v5p_ici_thresholds():
    one = plan("fsdp", mesh=sr.mesh("tpu-v5p", {"X": 16}, wrap=True), model=L70,
               batch=2**20)
    assert one.conditions["fsdp"].threshold == 2550  # 4.59e14 / 1.8e11
    three = plan("fsdp", mesh=sr.mesh("tpu-v5p", "4x4x4"), model=L70, batch=2**20)
    assert three.conditions["fsdp"].threshold == 850  # alpha / 3
    tp = plan("fsdp+tp", mesh=sr.mesh("tpu-v5p", "16x16x16"), model=L70, batch=2**22,
              fsdp="YZ", tp="X")
    assert round(float(tp.conditions["tp"].threshold), 2) == 11.24  # F / 2550, "~11"
    assert tp.conditions["tp"].holds is False  # 16-way TP on one axis is comms-bound


def test_llama3_70b_on_a_v5p_pod_fsdp_tp():
    """ch. 6: 4M tokens on 8960 chips, FSDP on two axes, TP on one: X_opt = sqrt(2BN/F)
    = 1618 (the book rounds B to 4.19e6); the minimum batch per chip is alpha^2/(2F) =
    113 in the current ch. 5, 2 alpha^2/F = 453 in the revision ch. 6 quotes."""
    pod = sr.mesh("tpu-v5p", "16x20x28")
    p = plan("fsdp+tp", mesh=pod, model=L70, fsdp="YZ", tp="X")  # B stays a symbol
    x_opt = p.conditions["x_opt"].threshold
    assert round(float(x_opt.subs(B, 4 * 2**20))) == 1619
    assert round(float(x_opt.subs(B, 4.19e6))) == 1618
    assert round(float(p.conditions["fsdp+tp"].threshold), 1) == 113.4
    earlier = plan("fsdp+tp", mesh=pod, model=L70, fsdp="YZ", tp="X", overlap_axes=False)
    assert round(float(earlier.conditions["fsdp+tp"].threshold)) == 454  # book: 453
    fsdp = plan("fsdp", mesh=pod, model=L70).conditions["fsdp"]
    assert fsdp.threshold == 850 and float(4 * 2**20 / 8960) < 850  # 468 < 850: comms-bound


def test_v5p_dcn_uses_the_record_not_the_books_constant():
    mesh = sr.mesh("tpu-v5p", {"S": 10, "X": 16, "Y": 16, "Z": 16}, dcn="S")
    c = plan("dp+fsdp", mesh=mesh, model=L70, batch=10 * 2**22, dp="S").conditions["dcn"]
    # C/W_dcn = 4.59e14 / 6.25e9 = 73,440 (the book evaluates 76,000 and rounds to 75,000)
    assert c.threshold == sp.Rational(73440 * 9, 10) and c.holds


@pytest.mark.parametrize("chip, mesh, expected", [
    ("h100", {"X": 8}, sp.Rational(7, 8) * 989 * 10**12 / (450 * 10**9)),  # book: 2200
    ("h100", {"X": 128, "Y": 8}, sp.Rational(31, 32) * 989 * 10**12 / (400 * 10**9)),  # 2475
    ("b200", {"X": 128, "Y": 8}, sp.Rational(31, 32) * 2250 * 10**12 / (400 * 10**9)),  # 5625
])
def test_gpu_dp_thresholds(chip, mesh, expected):
    c = plan("zero3", mesh=sr.mesh(chip, mesh), model=L70, batch=2**22).conditions["fsdp"]
    assert c.threshold == expected


def test_plan_totals_are_sums_of_parts():
    p = plan("zero1+tp+pp", mesh=sr.mesh("h100", {"X": 16, "Z": 8, "Y": 8}), model=L70,
             batch=2**20, tp="Y", pp="Z")
    assert p.lower == sum(t.lower for t in p.time.values())
    assert p.memory_total == sum(p.memory.values())
    assert p.flops == sum(c.flops for k, c in p.step.items() if k.endswith("compute"))
    assert p.bubble == sp.Rational(7, 32 + 7) and p.bound == "compute"
    # the step's FLOPs are train_ops' rows (checked op by op against the NumPy twin), shared
    # out over the chips; TP repeats the D-wide rows on each of its 8 ranks (one microbatch,
    # one data shard: a norm's gain gradient, n - 1 adds a element, is summed once). A
    # pipeline's step waits on its slowest stage, the last of 8: 10 of the 80 layers, and
    # the final norm, lm_head and loss whole (the embedding is the first stage's); Adam
    # runs on the chip's 1/8 (TP) of the last stage's optimizer state: its 10 layers' and
    # 21 norms' parameters and the lm_head's (D = 8192, V = 128256)
    tp = plan("tp+pp", mesh=sr.mesh("h100", {"Z": 8, "Y": 8}), model=L70, batch=2**15,
              tp="Y", pp="Z", microbatches=1)
    rows = sr.train_ops(L70, 2**15 // 4096, 4096, "full")
    whole = ("attn_norm", "mlp_norm", "final_norm", "attn/residual", "mlp/residual",
             "mlp/gate_up_sum", "attn/qkv_sum", "embed")  # D wide: not split by heads or F
    last, first = ("final_norm", "lm_head", "loss"), ("embed",)

    def flops(where, keys=None):
        return sum(c.flops for k, c in rows.items() if not k.startswith("optimizer/")
                   and where(key := k.split("/", 1)[1].removesuffix("/dx").removesuffix("/dw"))
                   and (keys is None or key in keys))

    layers = flops(lambda k: k not in last + first)  # 80 layers: the stage holds 1/8
    head = flops(lambda k: k in last)
    P = L70.blocks.params()
    last_params = (P["attention"] + P["mlp"]) / 8 + 21 * 8192 + 8192 * 128256
    adam = rows["optimizer/adam"].flops * 8 * last_params / L70.params
    repeated = flops(lambda k: k not in last + first, whole) / 8 + flops(lambda k: k in last,
                                                                         whole)
    assert tp.flops * 8 == layers / 8 + head + adam / 8 + 7 * repeated


@pytest.mark.parametrize("strategy, sharded", [
    ("dp", set()), ("zero1", {"master", "moments", "activations"}),
    ("zero2", {"grads", "master", "moments", "activations"}),
    ("zero3", {"params", "grads", "master", "moments", "activations"}),
])
def test_zero_levels_shard_what_they_say(strategy, sharded):
    widths = {"master_bytes": 4}
    p = plan(strategy, mesh=sr.mesh("tpu-v5p", "4x4x4"), model=L70, batch=2**20, widths=widths)
    whole = train_memory(L70, 2**20 // 4096, 4096, "full", **widths)
    for key, value in whole.items():
        assert p.memory[key] == (value / 64 if key in sharded or key == "activations" else value)


def test_tp_shards_params_and_activations_over_y():
    p = plan("tp", mesh=sr.mesh("tpu-v5p", {"Y": 4}, custom=True), model=L70, batch=2**20)
    whole = train_memory(L70, 256, 4096, "full")
    assert all(p.memory[k] == v / 4 for k, v in whole.items())


def test_whole_runs_book_numbers():
    pod = sr.mesh("tpu-v5p", "16x20x28")
    run = sr.training_run(L70, 15 * 10**12, pod, mfu=0.4)
    assert round(float(run.model_flops) / 1e24, 2) == 6.35  # book: 6.3e24 (70e9 rounded)
    assert round(float(run.days)) == 45  # book: "about 44 days" (3.8e6 s)
    assert round(float(sr.training_run(L70, 15e12, "tpu-v5p", chips=18823, mfu=0.5).days)) == 17
    gpu = sr.training_run(L70, 15 * 10**12, "h100", chips=4096, mfu=0.45)
    assert round(float(gpu.days)) == 40  # ch. 12 quiz: 3.5e6 s, 40 days
    ten = sr.training_run(L70, 15 * 10**12, "tpu-v5p", chips=89600, mfu=0.4)
    assert round(float(ten.days), 1) == 4.5  # the book's "about 2 days" needs ~90% MFU


def test_minimum_slices():
    h100 = sr.min_training_slice(L70, "h100", widths={"grad_bytes": 0})
    assert (h100.chips, h100.slice) == (9, "16")  # 700 GB / 80 GB: 9 GPUs, two nodes
    v5p = sr.min_training_slice(L70, "tpu-v5p", batch_tokens=4 * 10**6, seq=4000, remat=4,
                                widths={"grad_bytes": 0})
    # 10 P + 2 D B 4 L = 21.7 TB: 226 chips (the book's 225 rounds down), a 256-chip slice
    assert v5p.chips == 226 and v5p.slice_chips == 256
    assert round(float(v5p.per_chip(8960)) / 1e9, 1) == 2.4  # book: 2.4 GB per chip
    with pytest.raises(ValueError, match="does not fit: llama-3.1-405b needs"):
        sr.min_training_slice("llama-3.1-405b", "tpu-v5e", batch_tokens=2**22)


# -- rendering and bad input --------------------------------------------------------------
def test_latex_of_conditions():
    assert sr.latex(plan("dp").conditions["dp"]) == r"B/N > \frac{C}{3 W_{ici}}"
    x = plan("fsdp+tp", fsdp="XY", tp="Z").conditions["x_opt"]
    assert sr.latex(x).startswith(r"X_\text{opt} = \frac{\sqrt{2} \sqrt{B}")


@pytest.mark.parametrize("kwargs, message", [
    (dict(strategy="fsdp+tp", tp="Q"), "mesh axis 'Q' is not in this mesh"),
    (dict(strategy="fsdp+tp"), "needs axes for fsdp, tp"),
    (dict(strategy="fsdp+zero1"), "names the fsdp role twice"),
    (dict(strategy="sp"), "unknown strategy part 'sp'"),
    (dict(strategy="fsdp+ep"), "splits the experts of a mixture of experts, and "
                               "llama-3.1-70b is dense"),
    (dict(strategy="fsdp", tp="X"), "axes X given for tp, but"),
    (dict(strategy="dp", batch=3000, seq=1000),
     "batch_tokens = 3000 is not divisible by the data-parallel width 64"),
    (dict(strategy="dp", batch=1000), "not a whole number of sequences"),
    (dict(strategy="dp", microbatches=4), "needs a pipeline"),
    (dict(strategy="dp", remat="some"), "remat must be a policy"),
    (dict(strategy="dp", tp=None, fsdp=None, dp="XY"), "mesh axis Z serves no role"),
    (dict(strategy="fsdp+tp", fsdp="X", tp="YZ", mesh="16x16x16"),
     "tp degree 256 exceeds llama-3.1-70b's 64 query heads"),
    (dict(strategy="pp", mesh="4x4x8", batch=2**22), "pp degree 128 exceeds llama-3.1-70b's 80"),
])
def test_bad_input_names_the_value(kwargs, message):
    kwargs = dict(kwargs)
    strategy, batch = kwargs.pop("strategy"), kwargs.pop("batch", 2**20)
    mesh = sr.mesh("tpu-v5p", kwargs.pop("mesh", "4x4x4"))
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        plan(strategy, mesh=mesh, model=L70, batch=batch, **kwargs)


def test_fewer_sequences_than_data_shards_is_noted():
    p = plan("fsdp", mesh=sr.mesh("tpu-v5p", "4x4x4"), model=L70, batch=16 * 4096)
    assert "sequence/context parallelism" in p.notes[0]
    assert math.isfinite(float(p.lower))


# -- expert parallelism (book ch. 12 "Expert Parallelism"; §5.7, §8.2) ----------------------
E_, k_, F_e = sp.Symbol("E", positive=True, integer=True), sp.Symbol("k", positive=True,
                                                                      integer=True), F
MOE = Transformer(moe=MoE(E=E_, k=k_, F=F_e))  # the book's MoE MLP in symbols


def test_moe_data_parallel_needs_e_over_k_more_tokens():
    # ch. 12: T_math = 8 k B D F/(X C), T_comms = 8 E D F/W -> B/X > (E/k) C/W
    dp = plan("dp", mesh=sr.mesh(SYM_CHIP, {"X": X}), model=MOE).conditions["dp"]
    assert sp.simplify(dp.threshold - E_ / k_ * ALPHA) == 0
    node = plan("zero3", mesh=sr.mesh(_gpu(), {"X": 8}, hop_latency=0), model=MOE)
    assert sp.simplify(node.conditions["fsdp"].threshold
                       - E_ / k_ * sp.Rational(7, 8) * C / W_GPU) == 0  # ring factor 7/8


def test_ep_on_a_torus_is_the_alltoall_against_compute():
    """One wrapped axis of Z_e chips: the forward's two AllToAlls of the [B, D, min(k, Z)]
    token copies, each V/(4 W_ici) (ch. 3), against 4 B k D F/(Z C)."""
    p = plan("ep", mesh=sr.mesh(SYM_CHIP, {"Z": Z}), model=MOE)
    rows = p.layer
    a2a = rows["forward/ep/all-to-all In"]
    assert a2a.kind == "all-to-all" and a2a.V == 2 * B * D * sp.Min(k_, Z)
    fwd = sum(c.net_time for key, c in rows.items() if key.startswith("forward/ep"))
    assert sp.simplify(fwd - B * D * sp.Min(k_, Z) / W_ici) == 0
    assert rows["forward/compute"].flops == 4 * B * k_ * D * F / Z
    c = p.conditions["ep"]
    assert c.lhs == "F" and c.value == F_e
    assert sp.simplify(c.threshold - Z * ALPHA * sp.Min(k_, Z) / (4 * k_)) == 0
    numbers = plan("fsdp+ep", mesh=sr.mesh("tpu-v5p", "4x4x8"), model=sr.model("mixtral-8x7b"),
                   batch=2**22, fsdp="XY", ep="Z").conditions["ep"]
    assert numbers.threshold == 8 * 2550 // 4 and numbers.holds  # Z alpha / 4, k = 2 < Z


def _book_ep(Z, k):
    """ch. 12: T_math = 4 B k D F/(Z C), T_comms = 4 B D (Z - 8)/(W Z) min(8k/Z, 1), so
    compute-bound iff F > alpha (Z - 8) min(8/Z, 1/k), alpha = C/W_node."""
    return C / W_node * (Z - 8) * sp.Min(sp.Rational(8, Z), sp.Rational(1, k))


@pytest.mark.parametrize("Z, k", [(16, 1), (16, 2), (64, 2), (256, 2), (64, 8), (16, 8),
                                  (32, 8)])
def test_gpu_ep_condition_against_the_books_form(Z, k):
    """EP over Z GPUs in Z/8 nodes. The mesh's AllToAll sends one copy of a token to each
    of the min(k, Z) chips holding its experts; across the leaf its (M - 1)/M ring factor
    is the book's (Z - 8)/Z exactly, so with Z >= 8k the thresholds agree. For k > Z/8 the
    book sends a token across the network once per node (min(8k/Z, 1)), the AllToAll once
    per chip: 8k/Z times the book's threshold. The book's "Z >> 8k: F > 8 alpha" is the
    Z -> oo limit of 8 alpha (Z - 8)/Z. The node level (7/8 of V/W_GPU) is left slack:
    W_GPU = 9/8 W_node (450 vs 400 GB/s)."""
    model = Transformer(moe=MoE(E=256, k=k, F=F_e))
    p = plan("ep", mesh=sr.mesh(_gpu(), {"Z": Z}, hop_latency=0), model=model)
    ours = p.conditions["ep"].threshold.subs(W_GPU, sp.Rational(9, 8) * W_node)
    assert ours == 8 * C / W_node * sp.Rational((Z - 8) * min(k, Z), k * Z)
    ratio = sp.Max(1, sp.Rational(8 * k, Z))
    assert sp.simplify(ours - _book_ep(Z, k) * ratio) == 0  # Z >= 8k: the book's own


def test_ep_shards_the_experts_and_the_batch():
    mix = sr.model("mixtral-8x7b")
    mesh = sr.mesh("tpu-v5p", "4x4x8")
    ep = plan("dp+ep", mesh=mesh, model=mix, batch=2**22, dp="XY", ep="Z")
    dp = plan("dp", mesh=mesh, model=mix, batch=2**22)
    experts = 32 * 8 * 3 * 4096 * 14336  # L_moe E 3 D F: the routed experts
    share = sp.Rational(mix.params - experts + experts // 8, mix.params)
    for key in ("params", "grads", "moments"):
        assert ep.memory[key] == share * dp.memory[key]
    assert ep.memory["activations"] == dp.memory["activations"]  # B over X Z_e = 128 both
    # the same tokens per chip: the same forward; backward, Adam runs on EP's share only
    # (14 FLOPs a parameter: symroof.models.backward.adam, counted by the twin)
    assert ep.step["forward/compute"].flops == dp.step["forward/compute"].flops
    assert dp.flops - ep.flops == 14 * mix.params * (1 - share)
    forward = sr.train_ops(mix, 2**22 // 4096, 4096, "full")  # the twin-checked rows
    assert ep.step["forward/compute"].flops * 128 == sum(
        c.flops for k, c in forward.items() if k.startswith("fwd/"))
    a2a = sr.all_to_all(mesh, 2 * 2**22 // 16 * 4096 * 2, "Z")  # [B/X, D, min(k, Z_e)]
    assert ep.step["forward/ep/all-to-all tokens"].net_time == 2 * 32 * a2a.net_time
    # the weights EP replicates see the batch split over dp and ep: their gradients are
    # all-reduced over both in ONE collective, at the bandwidth of all three axes (the
    # book's DP over several axes, ch. 5): per layer W_q, W_o [4096, 32 x 128], W_k, W_v
    # [4096, 8 x 128], the router [4096, 8] and two norm gains; once the embedding and
    # lm_head [32000, 4096] and the final norm (Mixtral's config) (the embedding and head
    # spread over the 32 layers); the experts' (1/8 of them on a chip) over dp alone
    layer = 2 * 4096 * 32 * 128 + 2 * 4096 * 8 * 128 + 4096 * 8 + 2 * 4096
    rest = 2 * 32000 * 4096 + 4096
    assert ep.step["backward/dp+ep/all-reduce grads"].net_time == \
        32 * sr.all_reduce(mesh, 2 * (layer + sp.Rational(rest, 32)), "XYZ").net_time
    assert ep.step["backward/dp/all-reduce grads"].net_time == \
        32 * sr.all_reduce(mesh, 2 * experts // (32 * 8), "XY").net_time
    assert "backward/ep/all-reduce grads" not in ep.step
    assert 32 * layer + rest == mix.params - experts
    assert set(ep.conditions) == {"dp", "ep"}


def test_ep_degree_must_divide_the_experts():
    with pytest.raises(ValueError, match="ep degree 16 does not divide mixtral-8x7b's 8"):
        plan("fsdp+ep", mesh=sr.mesh("tpu-v5p", "4x4x16"), model=sr.model("mixtral-8x7b"),
             batch=2**22, fsdp="XY", ep="Z")
