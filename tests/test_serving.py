"""Serving on a mesh (book ch. 7 and 8): memory, the largest batch, the sharded decode step
with its collectives, sizing, and the curve of latency against throughput.

Literal figures come from outside symroof: parameter counts of the released checkpoints
(Llama-3.1-8B 8,030,261,248; Llama-3.1-70B 70,553,706,496), their config.json (L, G, d_h)
and the book's ch. 8 table of smallest v5e topologies for LLaMA-3-70B.
"""

import numpy as np
import pytest
import sympy as sp

import symroof as sr
from symroof.parallel import cost_per_million_tokens, latency_throughput
from symroof.parallel.sizing import kv_evictions, moe_critical_batch, prefill_decode_ratio

P8, P70 = 8_030_261_248, 70_553_706_496
KV8 = 2 * 32 * 8 * 128  # elements per token: K and V, L = 32 layers, G = 8, d_h = 128
KV70 = 2 * 80 * 8 * 128  # L = 80


@pytest.mark.parametrize("weights, kv, wb, kvb", [("bf16", "bf16", 2, 2), ("int8", "fp8", 1, 1),
                                                 ("int4", "bf16", sp.Rational(1, 2), 2)])
def test_memory_and_largest_batch_follow_the_book(weights, kv, wb, kvb):
    mesh = sr.mesh("tpu-v5e", "4x4")
    plan = sr.serve("llama-3.1-70b", mesh, batch=8, context=8192, weights=weights, kv=kv)
    hbm = 16 * 10**9
    assert plan.memory["weights"] == sp.Integer(P70) * wb / 16
    assert plan.memory["kv"] == sp.Rational(8 * 8192 * KV70 * kvb, 16)  # 16 <= G x B ways
    assert plan.max_batch == int((16 * hbm - P70 * wb) // (8192 * KV70 * kvb))


def test_smallest_v5e_topologies_for_llama3_70b_match_the_book():
    # book ch. 8: bf16 4x4, int8 4x2, int4 2x2
    got = [sr.smallest_slice("llama-3.1-70b", "tpu-v5e", weights=w)
           for w in ("bf16", "int8", "int4")]
    assert got == ["4x4", "2x4", "2x2"]


def test_decode_step_collectives_two_allreduces_per_layer():
    mesh = sr.mesh("tpu-v5e", "2x4")  # 8 chips = G: the KV cache splits over heads only
    plan = sr.serve("llama-3.1-8b", mesh, batch=16, context=2048)
    ar = sr.all_reduce(mesh, 16 * 4096 * 2, "XY")
    assert plan.collectives["comm/attn_allreduce"].net_time == 32 * ar.net_time
    assert set(plan.collectives) == {"comm/attn_allreduce", "comm/mlp_allreduce"}
    wider = sr.serve("llama-3.1-8b", sr.mesh("tpu-v5e", "4x4"), batch=16, context=2048)
    assert "comm/attn_alltoall" in wider.collectives  # 16 > G: queries to batch sharding


def test_per_chip_flops_and_throughput():
    one = sr.serve("llama-3.1-8b", sr.mesh("tpu-v5e", "1x1"), batch=4, context=1024)
    four = sr.serve("llama-3.1-8b", sr.mesh("tpu-v5e", "2x2"), batch=4, context=1024)
    assert four.rows["mlp/down"].flops * 4 == one.rows["mlp/down"].flops
    assert four.tokens_per_s_per_chip == 4 / (four.time.lower * 4)
    # the book's general form is never below the fully overlapped bound of one chip
    assert one.book_time >= one.time.lower - one.time.t_net


def test_does_not_fit_says_what_it_needs():
    plan = sr.serve("llama-3.1-70b", sr.mesh("tpu-v5e", "2x2"), batch=1, context=1024)
    assert plan.fits is False and plan.max_batch == 0
    assert plan.min_chips == -(-P70 * 2 // (16 * 10**9))
    assert "DOES NOT FIT: the weights alone need at least 9 chips" in str(plan)
    with pytest.raises(ValueError, match="needs .* GB, more than the largest"):
        sr.smallest_slice("llama-3.1-405b", "tpu-v5e", batch=10**4, context=10**6)


def test_decode_never_turns_compute_bound_at_long_context_and_says_so():
    from symroof.symbols import B
    plan = sr.serve("llama-3.1-8b", sr.mesh("tpu-v5e", "2x2"), batch=B, context=4096)
    with pytest.raises(ValueError, match="right side is larger for every positive B"):
        plan.crossover("math", "mem", B)


def test_latency_throughput_curve_matches_single_plans():
    mesh = sr.mesh("tpu-v5e", "2x2")
    batches, contexts = np.array([1, 8, 64])[:, None], np.array([1024, 4096])[None, :]
    c = latency_throughput("llama-3.1-8b", mesh, context=contexts, batches=batches)
    for i, b in enumerate((1, 8, 64)):
        for j, s in enumerate((1024, 4096)):
            exact = float(sr.serve("llama-3.1-8b", mesh, batch=b, context=s).time.lower)
            assert c["latency"][i, j] == pytest.approx(exact, rel=1e-12)
    assert (np.diff(c["tokens_per_s_per_chip"][:, 0]) > 0).all()  # throughput grows with B
    assert c["fits"][2, 1] == (64 <= c["max_batch"][0, 1])


def test_sizing_formulas():
    assert kv_evictions(32, 1000, 200) == 32 * 1200 // 200   # B (P + G) / G, ch. 8
    assert prefill_decode_ratio(0.2, 0.02, batch=64, generated=512) == sp.Rational(5, 4)
    assert moe_critical_batch("tpu-v5e", experts=8, top_k=2) == 4 * sr.critical_batch("tpu-v5e")
    with pytest.raises(ValueError, match="top_k must be between 1 and experts"):
        moe_critical_batch("tpu-v5e", experts=8, top_k=9)


@pytest.mark.parametrize("kwargs, message", [
    ({"weights": "int3"}, "unknown weights dtype 'int3'"),
    ({"kv": "q4"}, "unknown KV dtype 'q4'"),
    ({"batch": 0}, "batch must be a positive integer"),
])
def test_bad_input(kwargs, message):
    args = {"batch": 4, "context": 1024, **kwargs}
    with pytest.raises(ValueError, match=message):
        sr.serve("llama-3.1-8b", sr.mesh("tpu-v5e", "2x2"), **args)


def test_cost_needs_a_source():
    plan = sr.serve("llama-3.1-8b", sr.mesh("tpu-v5e", "2x2"), batch=64, context=2048)
    with pytest.raises(ValueError, match="source"):
        cost_per_million_tokens(plan, 1.2, "")
    per_m = cost_per_million_tokens(plan, 1.2, "book ch. 8")
    assert per_m == sp.Rational(12, 10) * 4 * plan.time.lower / (3600 * 64) * 10**6


def test_families_shard_their_own_rows():
    mesh = sr.mesh("tpu-v5e", "4x4")
    one = sr.serve("mixtral-8x7b", sr.mesh("tpu-v5e", "1x1"), batch=8, context=1024)
    many = sr.serve("mixtral-8x7b", mesh, batch=8, context=1024)
    for key in ("moe/gate", "moe/down", "attn/q_proj", "lm_head"):
        assert many.rows[key].flops * 16 == one.rows[key].flops, key
    for key in ("moe/router", "attn_norm", "mlp/residual"):
        assert many.rows[key] == one.rows[key], key
    # a latent (MLA) cache is shared by all heads: it splits over the batch, not the heads
    ds = sr.serve("deepseek-v3", sr.mesh("tpu-v5p", "4x4x4"), batch=64, context=4096,
                  weights="int8")
    assert ds.memory["kv"] == 64 * ds.model.kv_cache_bytes(4096) / 64


def test_sliding_windows_cap_the_kv_cache():
    plan = sr.serve("mistral-7b", sr.mesh("tpu-v5e", "2x2"), batch=4, context=32768)
    assert plan.memory["kv"] == 4 * 4096 * plan.model.kv_bytes_per_token / 4


# -- 2-D weight-stationary (book ch. 7 problem 7, appendix B; §7.4) ----------------------------
def _sym_mesh():
    from symroof.symbols import X, Y, Z
    W_ici = sp.Symbol("W_ici", positive=True)
    return sr.mesh(sr.symbolic_chip(W_net=W_ici / 2), {"X": X, "Y": Y, "Z": Z}), W_ici


def test_2d_comms_optimum_and_crossover_are_the_books():
    """The book's MLP (W_in[D, F], no gate) on a 3-axis torus, D over X, F over Y Z: per layer
    T = 2BD/(X W) + 4BF/(YZ W); X_opt = sqrt(D N/(2F)) minimises it; there T = 2B sqrt(8DF/N)/W,
    below 1-D's 4BD/(3W) once N > 18F/D: 72 at F = 4D (the book prints 128 (3/4)^2 = 81)."""
    from symroof.symbols import B, D, F, S, X, Y, Z
    mesh, W = _sym_mesh()
    book = sr.Transformer(gated=False)
    p = sr.serve(book, mesh, batch=B, context=S, layout="2d")
    mlp = {k: p.rows[f"comm/mlp_{k}"].net_time / book.L
           for k in ("allgather", "allreduce", "reducescatter")}
    T = sum(mlp.values())
    assert sp.simplify(T - (2 * B * D / (X * W) + 4 * B * F / (Y * Z * W))) == 0
    N = sp.Symbol("N", positive=True)
    x_opt = p.conditions["x_opt"].threshold.subs(Y, N / (X * Z))  # N = X Y Z held
    assert sp.simplify(x_opt - sp.sqrt(D * N / (2 * F))) == 0
    T_N = T.subs(Y, N / (X * Z))  # N held: YZ = N/X
    assert sp.simplify(sp.diff(T_N, X).subs(X, x_opt)) == 0  # calculus: the minimum
    assert sp.simplify(T_N.subs(X, x_opt) - 2 * B * sp.sqrt(8 * D * F / N) / W) == 0
    one = sr.serve(book, mesh, batch=B, context=S)
    assert sp.simplify(one.rows["comm/mlp_allreduce"].net_time / book.L
                       - 4 * B * D / (3 * W)) == 0
    n_star = p.conditions["2d"].threshold
    assert n_star == 18 * F / D and one.conditions["2d"].threshold == n_star
    # F = 4D: 18 x 4 = 128 (3/4)^2 = 72, where the book's arithmetic prints "= 81"
    assert n_star.subs(F, 4 * D) == 72 == 128 * sp.Rational(3, 4)**2


def test_2d_gated_mlps_allreduce_gate_and_up():
    from symroof.symbols import B, D, F, S, X, Y, Z
    mesh, _ = _sym_mesh()
    p = sr.serve(sr.Transformer(), mesh, batch=B, context=S, layout="2d")  # SwiGLU
    assert sp.simplify(p.conditions["x_opt"].threshold - sp.sqrt(D * X * Y * Z / (4 * F))) == 0
    assert p.conditions["2d"].threshold == 36 * F / D


def test_2d_changes_the_collectives_and_the_rows_on_split_activations():
    """Mixtral on a v5p 4x4x4, D over X, Y (16) and heads and F over Z (4). The matmuls, the
    attention and the KV write are 1-D's per chip in FLOPs, weights and KV; the norms and
    residual adds work on x[B, D_XYZ], 1/64 of 1-D's replicated rows; 1-D splits W_k, W_v
    over KV heads on X only (4 of G = 8, the leading axes that divide G), 2-D over D_XY and
    heads_Z: 16 times less.
    Per layer, 2-D all-reduces the experts' gate and up over XY and, apart, the router's
    logits (they pick the experts, so they are reduced first)."""
    mesh = sr.mesh("tpu-v5p", "4x4x4")
    one = sr.serve("mixtral-8x7b", mesh, batch=64, context=2048)
    assert one == sr.serve("mixtral-8x7b", mesh, batch=64, context=2048, layout="1d")
    two = sr.serve("mixtral-8x7b", mesh, batch=64, context=2048, layout="2d", d_axes="XY")
    assert two.d_axes == ("X", "Y") and two.memory == one.memory
    for key in ("attn/q_proj", "attn/kv_write", "attn/core", "attn/o_proj", "moe/gate",
                "moe/up", "moe/down", "lm_head"):
        a, b = two.rows[key], one.rows[key]
        assert (a.flops, a.weight_bytes, a.kv_bytes) == (b.flops, b.weight_bytes, b.kv_bytes)
    # ... but not their activation bytes: each chip moves its share of the arrays it holds.
    # q_proj, by hand (Mixtral: D = 4096, H d_h = 32 x 128 = 4096, 32 layers, bf16, B = 64):
    # 1-D reads h[B, D] whole and writes q[B, H_XYZ] (1/64); 2-D reads h[B, D_XY] (1/16)
    # and writes its partial sums of q[B, H_Z] (1/4)
    assert one.rows["attn/q_proj"].act_bytes == 2 * 32 * (64 * 4096 + 64 * 4096 // 64)
    assert two.rows["attn/q_proj"].act_bytes == 2 * 32 * (64 * 4096 // 16 + 64 * 4096 // 4)
    for key in ("attn_norm", "attn/residual", "mlp_norm", "mlp/residual", "final_norm"):
        assert two.rows[key].flops * 64 == one.rows[key].flops, key
    assert two.rows["attn/k_proj"].weight_bytes * 16 == one.rows["attn/k_proj"].weight_bytes
    blocks = {f"comm/{b}_{k}" for b in ("attn", "mlp") for k in
              ("allgather", "allreduce", "reducescatter")}
    assert set(two.collectives) == blocks | {
        "comm/attn_norm_allreduce", "comm/mlp_norm_allreduce",   # B sums of squares
        "comm/attn_allgather_o",                                   # o[B_XY, H_Z] -> [B, H_Z]
        "comm/mlp_router_allreduce",
        "comm/final_norm_allreduce", "comm/lm_head_allgather"}    # once: h[B, D_XYZ] -> [B, D]
    experts = sr.all_reduce(mesh, 64 * (2 * 2 * 14336) * 2 // 4, "XY")  # k = 2 gate + up
    router = sr.all_reduce(mesh, 64 * 8 * 2, "XY")                       # E = 8 logits
    assert two.rows["comm/mlp_allreduce"] == 32 * experts
    assert two.rows["comm/mlp_router_allreduce"] == 32 * router
    assert "2-D (D over X,Y)" in str(two) and "2-D" not in str(one)


@pytest.mark.parametrize("mesh, kwargs, message", [
    ("2x2", {"layout": "3d"}, "layout must be one of 1d, 2d, got '3d'"),
    ("2x2", {"d_axes": "X"}, "d_axes='X' splits D under layout='2d'"),
    ({"X": 4}, {"layout": "2d"}, "none is left for F"),
    ("2x2", {"layout": "2d", "d_axes": "XY"}, "none is left for F"),
])
def test_bad_layouts(mesh, kwargs, message):
    with pytest.raises(ValueError, match=message):
        # a 1-D line of 4 v5e chips is not a slice shape: modelled as a hypothetical
        sr.serve("llama-3.1-8b", sr.mesh("tpu-v5e", mesh, custom=True), batch=4, context=1024,
                 **kwargs)


def test_2d_refuses_latent_attention():
    with pytest.raises(ValueError, match="latent attention"):
        sr.serve("deepseek-v3", sr.mesh("tpu-v5p", "4x4x4"), batch=4, context=1024,
                 layout="2d")
