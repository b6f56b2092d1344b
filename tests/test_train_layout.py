"""A training plan's per-layer collectives against the partition mechanism
(``symroof.parallel.partition.redistribute``): each change of partition a role makes (an
FSDP weight gathered, its gradient reduced, TP's block input gathered and output scattered,
a norm's sums of squares reduced) priced by ``redistribute`` is the plan's row, exactly."""

import pytest
import sympy as sp

import symroof as sr
from symroof.parallel.partition import redistribute

TOY = sr.Transformer(D=128, F=512, L=2, H=8, G=8, d_h=16, V=256, name="toy",
                     w_bytes=4, act_bytes=4, kv_bytes=4)
MESH = sr.mesh("tpu-v5e", "4x2")                  # fsdp (or dp) on X, tp on Y
TOKENS = 16 * 8                                    # 16 sequences of 8 tokens
SIZES = {"B": TOKENS, "D": 128, "F": 512, "E": 8 * 16}   # E: the heads' H d_h


def one(src: str, dst: str, width: int = 4):
    """The single collective that turns ``src`` into ``dst``."""
    (c,) = redistribute(src, dst, MESH, SIZES, width).values()
    return c


@pytest.mark.parametrize("row, src, dst", [
    ("forward/fsdp/all-gather mlp/up", "W[D_X, F_Y]", "W[D, F_Y]"),
    ("backward/fsdp/all-gather mlp/down", "W[F_Y, D_X]", "W[F_Y, D]"),
    ("backward/fsdp/reduce-scatter mlp/gate grad", "dW[D, F_Y]{U_X}", "dW[D_X, F_Y]"),
    ("forward/fsdp/all-gather attn/q_proj", "W[D_X, E_Y]", "W[D, E_Y]"),
    ("backward/fsdp/reduce-scatter attn/o_proj grad", "dW[E_Y, D]{U_X}", "dW[E_Y, D_X]"),
    ("forward/tp/all-gather attn in", "x[B_X, D_Y]", "x[B_X, D]"),
    ("forward/tp/reduce-scatter mlp out", "y[B_X, D]{U_Y}", "y[B_X, D_Y]"),
    ("backward/tp/reduce-scatter attn din", "dx[B_X, D]{U_Y}", "dx[B_X, D_Y]"),
    ("forward/tp/all-reduce mlp_norm statistics", "s[B_X]{U_Y}", "s[B_X]"),
])
def test_fsdp_tp_rows_are_the_changes_of_partition(row, src, dst):
    plan = sr.train_plan(TOY, MESH, "fsdp+tp", step=sr.TrainStep(16, 8), fsdp=("X",),
                         tp=("Y",))
    mine, theirs = plan.layer[row], one(src, dst)
    assert (mine.kind, mine.axes, mine.V, mine.net_time) == \
        (theirs.kind, theirs.axes, theirs.V, theirs.net_time)


def test_dp_all_reduces_each_gradient_as_its_partial_sum():
    plan = sr.train_plan(TOY, MESH, "dp+tp", step=sr.TrainStep(16, 8), dp=("X",), tp=("Y",))
    for key, src, dst in (("mlp/up", "dW[D, F_Y]{U_X}", "dW[D, F_Y]"),
                          ("attn/v_proj", "dW[D, E_Y]{U_X}", "dW[D, E_Y]")):
        mine, theirs = plan.layer[f"backward/dp/all-reduce {key} grad"], one(src, dst)
        assert (mine.kind, mine.axes, mine.V, mine.net_time) == \
            (theirs.kind, theirs.axes, theirs.V, theirs.net_time)


def test_a_model_train_ops_refuses_has_no_plan_only_its_error():
    # no fallback rows: train_ops' own refusal (GELU experts) is the rows' and the plan's error
    from symroof.parallel.train_rows import train_rows

    gelu_moe = sr.model("mixtral-8x7b").replace(act="gelu")
    with pytest.raises(ValueError, match="SwiGLU experts"):
        train_rows(gelu_moe, 4096, "full")
    with pytest.raises(ValueError, match="SwiGLU experts; mixtral-8x7b has act='gelu'"):
        sr.train_plan(gelu_moe, MESH, "fsdp", step=sr.TrainStep(16, 4096))


def test_ep_all_to_all_moves_the_token_copies_split_from_batch_to_experts():
    # each token's min(k, Z_e) = 2 copies r[B_X, K, D] sent to their experts' group r[B, K_X, D]
    plan = sr.train_plan("mixtral-8x7b", MESH, "ep+tp", step=sr.TrainStep(16, 8), ep=("X",),
                         tp=("Y",))
    (c,) = redistribute("r[B_X, K, D]", "r[B, K_X, D]", MESH, {"B": TOKENS, "K": 2, "D": 4096},
                        2).values()
    for row in ("forward/ep/all-to-all moe in", "backward/ep/all-to-all moe din"):
        mine = plan.layer[row]
        assert (mine.kind, mine.axes, mine.V, mine.net_time) == (c.kind, c.axes, c.V, c.net_time)


def test_mixed_dp_fsdp_gradients_reduce_in_the_slice_then_over_dcn():
    """The book's pricing of DP over DCN with FSDP inside each slice (ch. 5, "Scaling
    Between Pods"; its summary: T_comms = 8DF/(M W_dcn), each chip's DCN share carrying 1/M
    of the gradient): redistribute's rule for dW[D, F]{U_dp, U_fsdp} -> dW[D_fsdp, F]
    (replicated over dp) is a ReduceScatter over the slice's fsdp axes and one AllReduce of
    the 1/M shard over the slices, not one collective over both. Here with the book's MLP
    block (W_in, W_out), S slices of M = 64 chips, the ring's (S - 1)/S kept."""
    import sympy as sp

    from symroof.hardware.chip import Chip
    from symroof.hardware.topology import Torus

    W_dcn, W_ici, C = (sp.Symbol(n, positive=True) for n in ("W_dcn", "W_ici", "C"))
    torus = Torus(rank=3, pod=(16, 20, 28), host=(2, 2, 1), wrap_rule="cube",
                  hop_latency=sp.Rational(1, 10**6), pcie_bw=16 * 10**9, dcn_bw=W_dcn)
    chip = Chip("sym-tpu", peaks={"bf16": C}, hbm_bw=sp.Symbol("W", positive=True),
                hbm_bytes=96 * 10**9, link_bw=W_ici / 2, network=torus)
    block = sr.profile("symroof").replace(condition_layer="mlp_block")
    D, F, S, M = 128, 512, 4, 64
    model = sr.Transformer(D=D, F=F, L=2, H=8, G=8, d_h=16, V=256, name="toy")
    mesh = sr.mesh(chip, {"S": S, "X": 4, "Y": 4, "Z": 4}, dcn="S")
    layer = sr.train_plan(model, mesh, "dp+fsdp", dp="S", step=sr.TrainStep(4 * 64, 8),
                          conventions=block).layer
    dcn = layer["backward/dp/all-reduce dW_in"].t_bw + \
        layer["backward/dp/all-reduce dW_out"].t_bw      # bandwidth terms (the book's)
    assert dcn == 8 * D * F / (M * W_dcn) * sp.Rational(S - 1, S)
    scatter = layer["backward/fsdp/reduce-scatter dW_in"]
    assert (scatter.axes, scatter.V) == (("X", "Y", "Z"), 2 * D * F)   # the whole bf16 dW
    assert all(set(c.axes) in ({"S"}, {"X", "Y", "Z"}) for k, c in layer.items()
               if k != "forward/compute" and k != "backward/compute")


def test_a_weight_ep_replicates_reduces_its_gradient_over_dp_and_ep_in_one_collective():
    """Attention's weights in a mixture of experts see the batch split over dp and ep:
    dW[D, F]{U_dp, U_fsdp, U_ep} -> dW[D_fsdp, F] is a ReduceScatter over fsdp and ONE
    AllReduce over dp and ep together (redistribute's rule; the book's DP over several
    axes, ch. 5: one AllReduce at the bandwidth of all of them); the experts' (split by
    EP) over dp alone. Mixtral on a v5p 4x4x8: dp over X, ep over Z, fsdp over Y."""
    mix = sr.model("mixtral-8x7b")
    mesh = sr.mesh("tpu-v5p", "4x4x8")
    plan = sr.train_plan(mix, mesh, "dp+fsdp+ep", dp="X", fsdp="Y", ep="Z",
                         batch_tokens=2**22, seq=4096)
    q = plan.layer["backward/dp+ep/all-reduce attn/q_proj grad"]
    # W_q [4096, 32 x 128] bf16, its fsdp shard (4 ways over Y) all-reduced over X and Z
    assert (q.kind, q.axes, q.V) == ("all-reduce", ("X", "Z"), 2 * 4096 * 4096 // 4)
    assert q.net_time == sr.all_reduce(mesh, 2 * 4096 * 4096 // 4, "XZ").net_time
    up = plan.layer["backward/dp/all-reduce moe/up grad"]          # 8 experts, 1 a chip
    assert (up.axes, up.V) == (("X",), 2 * 4096 * 14336 // 4)
    assert not [k for k in plan.step if k.startswith("backward/ep/all-reduce")]


def test_a_pipeline_hop_sends_each_chips_shard_of_the_stage_output():
    """Book ch. 5, "Pipelining" (the summary's T_PP = 2BD (N_mb + N_stages - 2)/(W N_mb)):
    each of N_mb + Z - 2 hops a pass moves a microbatch's [B/N_mb, D] activations, each chip
    its shard of the stage's output as the stage holds it, x[B_dp, D] (dp over X = 4 here;
    TOY's activations are fp32, 4 bytes)."""
    mesh = sr.mesh("tpu-v5e", {"X": 4, "Y": 2}, custom=True)
    plan = sr.train_plan(TOY, mesh, "dp+pp", dp=("X",), pp=("Y",), step=sr.TrainStep(16, 8))
    m, Z, X = plan.microbatches, 2, 4
    for row in ("forward/pp/send activations", "backward/pp/send gradients"):
        assert plan.step[row].net_bytes == (m + Z - 2) * 4 * TOKENS * 128 // (m * X)


def test_a_pipeline_is_timed_on_its_slowest_stage():
    """GPipe's step is N_mb + Z - 1 microbatch times of its slowest stage (book ch. 5,
    "Pipelining"): the last, which holds the head and the loss besides its ceil(L/Z) layers, the
    model's last ones. DeepSeek-V3 (its released config: 61 layers, the first 3 dense,
    first_k_dense_replace = 3): one stage runs everything; with one layer a stage, the last
    runs one of the 58 MoE layers, none of the 3 dense MLPs, the whole head, no embedding."""
    from symroof.parallel.train_rows import stage_shares

    keys = ("attn/o_proj", "mlp/down", "mlp/residual", "moe/down", "lm_head", "loss", "embed")
    one, each = stage_shares(sr.model("deepseek-v3"), 1), stage_shares(sr.model("deepseek-v3"), 61)
    assert [one(k) for k in keys] == [1] * 7
    assert [each(k) for k in keys] == [sp.Rational(1, 61), 0, sp.Rational(1, 61),
                                       sp.Rational(1, 58), 1, 1, 0]
    # 61 layers in 16 stages: 13 of 4 layers and 3 of 3; the slowest holds 4 (all MoE)
    sixteen = stage_shares(sr.model("deepseek-v3"), 16)
    assert (sixteen("attn/o_proj"), sixteen("moe/down")) == (sp.Rational(4, 61),
                                                               sp.Rational(4, 58))
    # a plan says so where it prints its pipeline
    mesh = sr.mesh("tpu-v5e", {"X": 4, "Y": 2}, custom=True)
    plan = sr.train_plan(TOY, mesh, "dp+pp", dp=("X",), pp=("Y",), step=sr.TrainStep(16, 8))
    assert "timed on its slowest stage, the last: 1 of 2 layers and the head" in str(plan)


@pytest.mark.parametrize("name", ["llama-3.1-8b", "qwen3-0.6b"])
def test_tp_forward_is_serving_2d_with_no_d_axes(name):
    """Training's TP role on the Layout mechanism: the 2-D serving layout with D split over
    no axis (heads and F over the TP axis, the stream x[B, D_tp] between blocks), walked
    over one layer's forward rows by ``layer_collectives``, sends exactly the plan's TP
    forward rows: each block's input gathered and output scattered, each D-wide norm's
    sums of squares all-reduced (kind, axes and V alike)."""
    from symroof.parallel.partition import layer_collectives
    from symroof.parallel.serving_layouts import serving_layout

    m, mesh, tokens = sr.model(name), sr.mesh("tpu-v5e", {"Y": 4}, custom=True), 4096
    lay, sizes = serving_layout(m, mesh, tokens, 4096, "2d", ())
    walked = layer_collectives(m.ops(1, 1, 0), lay, mesh, sizes, 2)
    plan = sr.train_plan(m, mesh, "tp", batch_tokens=tokens, seq=4096)
    tp = {k: c for k, c in plan.layer.items() if k.startswith("forward/tp/")}
    assert sorted((c.kind, c.axes, c.V) for _, c in walked.values()) == \
        sorted((c.kind, c.axes, c.V) for c in tp.values())
    assert all(n == 1 for n, _ in walked.values()) and len(tp) == 6


def test_the_last_stage_holds_its_layers_and_the_head():
    """The plan's memory is the stage that holds the most, the last: Llama-3.1-70B (its
    released config: 80 layers, D = 8192, V = 128256, untied) in 8 stages holds 10 layers
    of attention and MLP, their 20 norms and the final one, the whole lm_head (8192 x
    128256) and no embedding; one stage holds every parameter, for every preset."""
    from symroof.models import MODELS

    for m in MODELS.values():
        assert m.blocks.stage_params(1) == m.blocks.params(), m.name
    m = sr.model("llama-3.1-70b")
    whole, last = m.blocks.params(), m.blocks.stage_params(8)
    assert last == {"embedding": 0, "attention": whole["attention"] / 8,
                    "mlp": whole["mlp"] / 8, "norms": 21 * 8192, "lm_head": 8192 * 128256}
    plan = sr.train_plan(m, sr.mesh("tpu-v5p", {"Y": 8}, custom=True), "pp",
                         step=sr.TrainStep(64, 4096))
    assert plan.memory["params"] == 2 * sum(last.values())  # bf16 weights
    # ZeRO-1 gathers the stage's updated weights once a step (over a 2-way fsdp group each
    # chip receives the other half of the stage's bf16 weights), and scatters its grads
    plan = sr.train_plan(m, sr.mesh("tpu-v5p", {"X": 2, "Y": 8}, custom=True), "zero1+pp",
                         fsdp="X", pp="Y", step=sr.TrainStep(64, 4096))
    for row in ("backward/fsdp/all-gather weights", "backward/fsdp/reduce-scatter grads"):
        assert plan.step[row].net_bytes == 2 * sum(last.values()) / 2, row
