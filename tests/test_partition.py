"""Sharding as data: each change of partition and the collective the book prices it with.

Expected values come from "How to Scale Your Model" ch. 3 (book_formulas.md sections 2-4):
V is the bytes one group holds (after an AllGather, before a reduction, an AllToAll's whole
array); on a wrapped ring T_AG = T_RS = V/W_ici, T_AR = 2V/W_ici, T_A2A = V/(4 W_ici), and
gathering over several axes adds their bandwidths, V/(n_axes W_ici). W_ici = 2 W_1 with the
one-way link W_1 of the ch. 2 table (v5e, v4p: 4.5e10 B/s).
"""

from fractions import Fraction

import pytest

import symroof as sr
from symroof.cost import Cost
from symroof.parallel.partition import Layout, operands, redistribute, shard
from symroof.symbols import B, D, F

W_ICI = 2 * 45 * 10**9                    # v5e and v4p: 2 x the 4.5e10 one-way link (ch. 2)
torus = sr.mesh("tpu-v5e", "16x16")       # both axes wrap (16 wide)
sym = sr.mesh(sr.symbolic_chip(), {"X": 4, "Y": 4, "Z": 4})
SIZES = {"B": B, "D": D, "F": F}


def one(steps):
    (key, c), = steps.items()
    return key, c


def test_allgather_of_a_sharded_array_counts_the_other_axes_share():
    # ch. 3: AllGather_X of bf16 [B_X, D_Y] has V = 2BD/Y
    key, c = one(redistribute("[B_X, D_Y]", "[B, D_Y]", sym, SIZES))
    assert key == "AllGather_X [B_X, D_Y] -> [B, D_Y]"
    assert (c.kind, c.axes, c.V) == ("all-gather", ("X",), 2 * B * D / 4)


def test_partial_sums_reduce_scatter_into_a_split_and_all_reduce_into_a_replica():
    # case 3: C[I, K]{U_X} -> ReduceScatter_X to C[I, K_X] (V/W_ici), AllReduce_X (2V/W_ici)
    sizes = {"B": 4096, "F": 8192}
    V = 2 * 4096 * 8192
    _, rs = one(redistribute("[B, F]{U_X}", "[B, F_X]", torus, sizes))
    _, ar = one(redistribute("[B, F]{U_X}", "[B, F]", torus, sizes))
    assert (rs.kind, rs.V, rs.t_bw) == ("reduce-scatter", V, Fraction(V, W_ICI))
    assert (ar.kind, ar.V, ar.t_bw) == ("all-reduce", V, Fraction(2 * V, W_ICI))


def test_ch3_question2_all_reduce_ignores_the_other_axes_shards():
    # ch. 3 Q2: AllReduce_Z of bf16 [B_X, D_Y]{U_Z}, B = 1024, D = 4096 on a v4p 4x4x4:
    # V = 2BD/(XY), 2V/W_ici
    v4p = sr.mesh("tpu-v4p", "4x4x4")
    _, c = one(redistribute("[B_X, D_Y]{U_Z}", "[B_X, D_Y]", v4p, {"B": 1024, "D": 4096}))
    assert c.V == 2 * 1024 * 4096 // 16 and c.t_bw == Fraction(2 * c.V, W_ICI)


def test_an_axis_moving_between_dimensions_is_one_all_to_all():
    key, c = one(redistribute("x[B_X, D]", "x[B, D_X]", torus, {"B": 4096, "D": 8192}))
    assert key == "AllToAll_X x[B_X, D] -> x[B, D_X]"
    V = 2 * 4096 * 8192  # the group's whole array: [B, D] bf16
    assert (c.V, c.t_bw) == (V, Fraction(V, 4 * W_ICI))


def test_a_dimension_split_over_two_axes_is_gathered_in_one_collective():
    # ch. 3 "AllGather over multiple axes": V / (2 W_ici) on a 2-axis torus; gathering X
    # then Y takes V/(Y W_ici) + V/W_ici: 2 + 2/Y = 2.125 times as long (Y = 16)
    V = 2 * 8192 * 8192
    key, c = one(redistribute("W[D_XY, F]", "W[D, F]", torus, {"D": 8192, "F": 8192}))
    assert key == "AllGather_XY W[D_XY, F] -> W[D, F]"
    assert (c.axes, c.V, c.t_bw) == (("X", "Y"), V, Fraction(V, 2 * W_ICI))
    chain = Fraction(V, 16 * W_ICI) + Fraction(V, W_ICI)
    assert chain / c.t_bw == 2 + Fraction(2, 16)


def test_slices_are_free_and_done_before_a_gather():
    assert redistribute("x[B, D]", "x[B_Y, D_X]", torus, {"B": 64, "D": 128}) == {}
    # [B_X, D] -> [B_Y, D]: slice Y first, then gather X of the smaller [B_XY, D]
    key, c = one(redistribute("x[B_X, D]", "x[B_Y, D]", torus, {"B": 64, "D": 128}))
    assert key == "AllGather_X x[B_XY, D] -> x[B_Y, D]" and c.V == 2 * 64 * 128 // 16


def test_several_changes_in_the_books_order():
    # partial over X and Y into [B_X, F]: ReduceScatter_X into B, AllReduce_Y on the shard
    steps = redistribute("[B, F]{U_XY}", "[B_X, F]", sym, SIZES)
    assert list(steps) == ["ReduceScatter_X [B, F]{U_XY} -> [B_X, F]{U_Y}",
                           "AllReduce_Y [B_X, F]{U_Y} -> [B_X, F]"]
    assert [c.V for c in steps.values()] == [2 * B * F, 2 * B * F / 4]


@pytest.mark.parametrize("src, dst, says", [
    ("x[B, D]", "x[B, F]", "the dimensions differ"),
    ("x[B, D]", "x[B, D]{U_X}", "partial sums over X cannot be made"),
    ("x[B_Q, D]", "x[B, D]", "'Q' is not in this mesh"),
    ("x[B_X, D]{U_X}", "x[B, D]", "both splits a dimension and holds partial sums"),
])
def test_bad_redistributions_say_what_was_asked(src, dst, says):
    with pytest.raises(ValueError, match=says):
        redistribute(src, dst, sym, SIZES)


def test_shard_divides_rows_by_their_operands_and_inserts_collectives():
    m = sr.mesh("tpu-v5e", {"X": 4}, custom=True)
    rows = {"norm": Cost(flops=4 * 8 * 16, act_bytes=2 * 2 * 8 * 16),
            "up": Cost(flops=2 * 8 * 16 * 64, weight_bytes=2 * 16 * 64, act_bytes=2 * 8 * 80),
            "down": Cost(flops=2 * 8 * 64 * 16, weight_bytes=2 * 64 * 16),
            "add": Cost(flops=8 * 16)}
    lay = Layout("1d", (("norm", operands("x[B, D]", "h[B, D]", sums="D")),
                        ("up", operands("h[B, D]", "u[B, F_X]", "W[D, F_X]")),
                        ("down", operands("u[B, F_X]", "y[B, D]{U_X}", "W[F_X, D]")),
                        ("add", operands(("x[B, D]", "y[B, D]"), "x[B, D]", block="mlp",
                                         repeats=3))))
    out = shard(rows, lay, m, {"B": 8, "D": 16, "F": 64})
    assert list(out) == ["norm", "up", "down", "comm/mlp_allreduce", "add"]
    assert out["norm"] == rows["norm"]                       # replicated: every chip
    # each chip reads h[B, D] whole and writes its quarter of u[B, F_X]: 2 (8 16 + 8 64 / 4)
    assert out["up"] == Cost(flops=2 * 8 * 16 * 64 // 4, weight_bytes=2 * 16 * 64 // 4,
                             act_bytes=2 * (8 * 16 + 8 * 64 // 4))
    ar = sr.all_reduce(m, 2 * 8 * 16, "X")                   # [B, D] bf16 partial sums
    assert out["comm/mlp_allreduce"] == 3 * ar                # once per repeat (layer)
    assert sum(out.values(), Cost()).flops == sum(c.flops for c in out.values())


def test_a_norm_over_a_split_dimension_all_reduces_its_sums_of_squares():
    m = sr.mesh("tpu-v5e", "4x2", custom=True)
    lay = Layout("2d", (("*", operands("x[B, D_XY]", "h[B, D_XY]", sums="D")),))
    out = shard({"attn_norm": Cost(flops=8 * 128)}, lay, m, {"B": 8, "D": 128})
    assert out["comm/attn_norm_allreduce"] == sr.all_reduce(m, 2 * 8, "XY")   # B sums


def test_a_row_no_rule_matches_is_refused_naming_it():
    lay = Layout("toy", (("mlp/*", operands()),))
    with pytest.raises(ValueError, match=r"layout 'toy' has no rule for row 'embed'; its "
                                         r"patterns: mlp/\*"):
        shard({"embed": Cost()}, lay, sym)


def test_unreduced_axes_read_and_print_in_the_books_notation():
    from symroof.parallel.sharding import parse_array

    spec = parse_array("C[I_Y, K]{U_X}")
    assert (spec.axes, spec.unreduced, str(spec)) == ((("Y",), ()), ("X",), "C[I_Y, K]{U_X}")
    assert str(parse_array("C[I, K]{U_{pod,data}}")) == "C[I, K]{U_{pod,data}}"


# -- serving's layouts on the mechanism, family by family ------------------------------------
def _serve(model, shape, batch, layout="1d"):
    return sr.serve(model, sr.mesh("tpu-v5e", shape), sr.Step(batch, context=1024),
                    layout=layout)


def test_every_presets_rows_name_their_arrays_and_both_layouts_partition_them():
    """Each row of a decode step (and of a prefill) is declared by its block, every array
    it names is one the blocks declare, and both serving layouts partition each of them
    (a missing one is refused when the layout is built or the row looked up)."""
    from symroof.models import MODELS
    from symroof.parallel.serving_layouts import serving_layout

    mesh = sr.mesh("tpu-v5e", "4x4")
    for name in MODELS:
        m = sr.model(name)
        uses, arrays = m.blocks.uses(), m.blocks.arrays()
        keys = [*m.ops(16, 1, 1023, last_only=True, attention="fused"), *m.ops(2, 64, 0)]
        assert [k for k in keys if k not in uses] == [], name
        named = {p for k in keys for p in (*uses[k].reads, uses[k].writes, uses[k].weight,
                                           uses[k].kv) if p is not None}
        assert sorted(named - set(arrays)) == [], name
        for layout in ("1d",) if m.mla is not None else ("1d", "2d"):
            lay, _ = serving_layout(m, mesh, 16, 1024, layout, ("X",))
            for k in keys:
                lay.rule(k)


def test_a_row_no_block_declares_is_refused_by_name():
    from symroof.parallel.serving_layouts import serving_layout

    lay, _ = serving_layout(sr.model("llama-3.1-8b"), sr.mesh("tpu-v5e", "2x2"), 8, 128)
    with pytest.raises(ValueError, match="no rule for row 'attn/extra'"):
        lay.rule("attn/extra")


def test_a_layout_reads_the_partition_of_the_array_a_row_names():
    # the same array (the norm's output h) read by q_proj and by the MLP's up: one partition
    # under 1-D (replicated), and under 2-D read as [B, D_X] by both, while the norms write it
    # [B, D_XY] (their own partition of it); o_proj and W_down write the block's output y as
    # partial sums (1-D over every axis, 2-D over the F axes)
    from symroof.parallel.serving_layouts import serving_layout

    m, mesh = sr.model("llama-3.1-8b"), sr.mesh("tpu-v5e", "4x4")
    one, _ = serving_layout(m, mesh, 16, 1024, "1d")
    two, _ = serving_layout(m, mesh, 16, 1024, "2d", ("X",))
    assert str(one.rule("attn/o_proj").writes) == "y[B, D]{U_XY}"
    assert one.rule("attn/q_proj").reads == one.rule("mlp/up").reads
    assert str(two.rule("mlp/up").reads[0]) == str(two.rule("attn/q_proj").reads[0]) == \
        "h[B, D_X]"
    assert str(two.rule("mlp_norm").writes) == "h[B, D_XY]"
    assert str(two.rule("mlp/down").writes) == "y[B, D_X]{U_Y}"


def test_latent_attention_moves_its_queries_to_the_batch_over_every_axis():
    # DeepSeek-V3 (MLA, absorbed): one latent cache shared by all 128 heads splits over the
    # batch only; the core's queries, in the latent ([q_nope W_UK, q_rope]: kv_lora_rank 512
    # + qk_rope_head_dim 64 per head, its config.json), go from [B, H_XY] to [B_XY, H] and
    # its output, in the latent (512 per head, before W_UV), back: two AllToAlls a layer,
    # each V = the group's whole bf16 array
    plan = _serve("deepseek-v3", "4x4", 16)
    comm = plan.layer_comm
    q, o = comm["comm/attn_alltoall"], comm["comm/attn_alltoall_o"]
    assert (q[0], q[1].axes, q[1].V) == (1, ("X", "Y"), 16 * 128 * (512 + 64) * 2)
    assert (o[0], o[1].axes, o[1].V) == (1, ("X", "Y"), 16 * 128 * 512 * 2)


def test_2d_post_norms_and_a_rope_less_attention():
    # Gemma-2's post-attention and post-MLP norms sum squares over a split D too: an
    # AllReduce of the B = 16 bf16 sums over every axis, each layer
    gemma = _serve("gemma-2-9b", "4x4", 16, "2d")
    for key in ("comm/attn_post_norm_allreduce", "comm/mlp_post_norm_allreduce"):
        times, c = gemma.layer_comm[key]
        assert (times, c.kind, c.axes, c.V) == (1, "all-reduce", ("X", "Y"), 16 * 2)
    # GPT-2 has no rope: nothing reads its q, k, v whole, so their partial sums over X are
    # reduce-scattered straight into the cache's batch split [B_X, E_Y] (half an AllReduce),
    # E = (H + 2G) d_h = 3 x 768 (its config.json)
    gpt2 = _serve("gpt2", "4x4", 16, "2d")
    times, c = gpt2.layer_comm["comm/attn_reducescatter"]
    assert (c.kind, c.axes, c.V) == ("reduce-scatter", ("X",), 16 * 3 * 768 * 2 // 4)


def test_2d_reduces_a_shared_experts_gate_and_up_with_the_routed_ones_once():
    # Qwen1.5-MoE-A2.7B (its config.json: 4 of 60 experts of 1408, a shared expert of 5632
    # with a sigmoid gate): under 2-D the D-contracting outputs of an MoE layer, k 2F + 2F_s
    # + 1 = 22529 per token, are all-reduced over X once a layer (bf16, split 4 ways over Y)
    plan = _serve("qwen1.5-moe-a2.7b", "4x4", 16, "2d")
    (times, ar), = [v for k, v in plan.layer_comm.items() if k == "comm/mlp_allreduce"]
    assert (times, ar.axes, ar.V) == (1, ("X",), 16 * (4 * 2 * 1408 + 2 * 5632 + 1) * 2 // 4)
    assert plan.rows["comm/mlp_allreduce"] == 24 * ar
