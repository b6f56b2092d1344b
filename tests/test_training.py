"""Training step rows and training memory, symbolically: 6ND, the attention term, the book's
per-token form, remat policies, memory by part."""

import pytest
import sympy as sp

import symroof as sr
from symroof.cost import Cost
from symroof.models import saved_activations
from symroof.models.training import ATTENTION_MATMUL_KEYS, MATMUL_KEYS
from symroof.symbols import B, D, F, G, H, L, S, V, d_h

M = sr.Transformer()
TOKENS = B * S


def flops(rows, keys, field="flops"):
    return sum(getattr(rows[k], field) for k in keys)


def matmul_keys():
    """The weight matmuls of a step: forward, dX and dW."""
    return [f"fwd/{k}" for k in MATMUL_KEYS] + [f"bwd/{k}/{d}" for k in MATMUL_KEYS
                                                for d in ("dx", "dw")]


def test_six_n_d_comes_out_of_the_rows():
    rows = sr.train_ops(M, B, S)
    fwd = flops(rows, [f"fwd/{k}" for k in MATMUL_KEYS])
    assert sp.expand(fwd - 2 * TOKENS * M.matmul_params) == 0
    assert sp.expand(flops(rows, matmul_keys()) - 6 * TOKENS * M.matmul_params) == 0
    # the attention core's six matmuls beside it: the book's 12 B T^2 N H per layer
    assert sp.expand(flops(rows, ATTENTION_MATMUL_KEYS) - 12 * B * L * H * S**2 * d_h) == 0
    useful = flops(rows, ATTENTION_MATMUL_KEYS, "useful_flops")
    assert sp.expand(useful - 6 * B * L * H * S * (S + 1) * d_h) == 0


def test_train_flops_per_token_exactly_and_to_leading_order():
    rows = sr.train_ops(M, B, S)
    per_token = sum(c.flops for c in rows.values()) / TOKENS
    exact = (6 * M.matmul_params + 12 * L * H * d_h * S  # 6N per token + attention
             + L * (37 * D + 17 * F + 6 * (H + G) * d_h + 11 * H * S - 3 * H + 8)
             + 16 * D + 7 * V + 7                          # norms, softmax, rope, SwiGLU, loss
             + (14 * M.params - (2 * L + 1) * D) / TOKENS)  # Adam, once per step
    assert sp.expand(per_token - exact) == 0
    # book_formulas 5.2 (N -> H, K -> G, H -> d_h): per layer 18DF + 12D(N+K)H + 12 T N H,
    # plus 6DV for the unembedding
    book = L * (18 * D * F + 12 * D * (H + G) * d_h + 12 * S * H * d_h) + 6 * D * V
    k = sp.Symbol("k", positive=True)
    grow = {D: k * D, F: k * F, d_h: k * d_h, V: k * V, S: k * S, B: k * B}
    assert sp.cancel(sp.limit((per_token / book).subs(grow, simultaneous=True), k, sp.oo)) == 1


def test_backward_matmuls_cost_twice_the_forward():
    rows = sr.train_ops(M, B, S)
    for key in MATMUL_KEYS:
        fwd = rows[f"fwd/{key}"].flops
        assert rows[f"bwd/{key}/dx"].flops == rows[f"bwd/{key}/dw"].flops == fwd


def test_full_remat_costs_eight_n_d_in_the_layers():
    rows = sr.train_ops(M, B, S, "full")
    layer_mm = M.matmul_params - D * V
    recomputed = [f"recompute/{k}" for k in MATMUL_KEYS if f"recompute/{k}" in rows]
    mm = flops(rows, matmul_keys() + recomputed)
    assert sp.expand(mm - 8 * TOKENS * layer_mm - 6 * TOKENS * D * V) == 0
    forward_layer = [k for k in rows if k.startswith("fwd/")
                     and k not in ("fwd/embed", "fwd/final_norm", "fwd/lm_head", "fwd/loss")]
    assert [k.replace("recompute/", "fwd/") for k in rows if k.startswith("recompute/")] \
        == forward_layer


def test_selective_policies_recompute_what_they_drop():
    none, sel, mm = (sr.train_ops(M, B, S, r) for r in ("none", "selective", "matmul_outputs"))
    assert [k for k in sel if k.startswith("recompute/")] == ["recompute/attn/scores",
                                                            "recompute/attn/softmax"]
    # matmul_outputs reruns the two attention matmuls: the book's 4 B T^2 N H per layer
    extra = flops(mm, ["recompute/attn/scores", "recompute/attn/av"])
    assert sp.expand(extra - 4 * B * L * H * S**2 * d_h) == 0
    assert not any(k.startswith("recompute/") for k in none)
    assert set(sel) - set(none) == {"recompute/attn/scores", "recompute/attn/softmax"}


def test_fused_attention_recomputes_scores_in_its_backward():
    rows = sr.train_ops(M, B, S, attention="fused")
    assert "bwd/attn/core" in rows and "fwd/attn/scores" not in rows
    assert sp.expand(flops(rows, matmul_keys()) - 6 * TOKENS * M.matmul_params) == 0
    fused = rows["fwd/attn/core"].flops + rows["bwd/attn/core"].flops
    naive = flops(sr.train_ops(M, B, S), ATTENTION_MATMUL_KEYS, "useful_flops")
    ratio = sp.limit(sp.limit(fused / naive, d_h, sp.oo), S, sp.oo)
    assert ratio == sp.Rational(14, 12)  # forward 4 + backward 10 (5 matmuls) vs 12
    assert "attn/softmax" not in saved_activations(M, B, S, attention="fused")


def test_optimizer_row_and_widths():
    rows = sr.train_ops(M, B, S, grad_bytes=4, moment_bytes=4, master_bytes=4)
    P = M.params
    assert rows["optimizer/adam"] == Cost(flops=14 * P,
                                          weight_bytes=P * (4 + 4 + 4 + 4   # read master, g, m, v
                                                            + 4 + 4 + 4 + 2))  # write m, v, both
    assert rows["bwd/mlp/down/dw"].weight_bytes == L * D * F * 4   # gradients at grad_bytes
    assert rows["bwd/mlp/down/dx"].weight_bytes == L * D * F * 2   # reads W at w_bytes


def test_one_spelling_of_train_ops():
    # sr.train_ops(model, ...) is the one name: a method on Transformer was a second
    # spelling, and an import circle (transformer -> training -> transformer)
    assert not hasattr(M, "train_ops") and not hasattr(sr.Transformer, "from_hf_config")


def test_memory_parts_and_the_books_ten_bytes():
    mem = sr.train_memory(M, B, S)
    assert list(mem) == ["params", "grads", "master", "moments", "activations"]
    assert mem["activations"] == sum(saved_activations(M, B, S).values())
    assert sp.simplify((mem["params"] + mem["grads"] + mem["moments"]) / M.params) == 12
    book = sr.train_memory(M, B, S, grad_bytes=0)
    assert sp.simplify(sum(v for k, v in book.items() if k != "activations") / M.params) == 10
    mixed = sr.train_memory(M, B, S, master_bytes=4)   # 2 + 2 + 4 + 8 = 16 B/param
    assert sp.simplify(sum(v for k, v in mixed.items() if k != "activations") / M.params) == 16


def test_saved_activations_match_the_books_counts():
    per_layer_token = {k: v / (L * TOKENS * 2) for k, v in saved_activations(M, B, S).items()
                       if k not in ("final_input", "final_norm", "lm_head", "loss")}
    softmax = per_layer_token.pop("attn/softmax")
    assert softmax == H * S                             # the S x S matrix the book leaves out
    mha = {G: H, F: 4 * D, d_h: D / H}                 # book 5.5: about 20 D per token, layer
    assert sp.simplify(sum(per_layer_token.values()).subs(mha)) == 20 * D
    full = saved_activations(M, B, S, "full")
    assert full["layer_input"] == 2 * B * S * D * L     # block remat: 2 B T D L bytes
    kept = saved_activations(M, B, S, "matmul_outputs")
    assert set(kept) - {"final_input", "final_norm", "lm_head", "loss"} == {
        "layer_input", "attn/q_proj", "attn/k_proj", "attn/v_proj", "attn/o_proj",
        "mlp/gate", "mlp/up"}
    assert "attn/softmax" not in saved_activations(M, B, S, "selective")


@pytest.mark.parametrize("call, message", [
    (lambda: sr.train_ops(M, B, S, "some"), "unknown remat policy 'some'; known: none, selective"),
    (lambda: sr.train_memory(M, B, S, "fulll"), "unknown remat policy 'fulll'"),
    (lambda: sr.train_ops(M, 0, S), "batch must be a positive integer .* got 0"),
    (lambda: sr.train_memory(M, B, -4), "seq must be a positive integer .* got -4"),
    (lambda: saved_activations(M, B, 0), "seq must be a positive integer .* got 0"),
    (lambda: sr.train_ops(M, B, S, attention="flash"), "attention must be one of"),
    (lambda: sr.train_memory(M, B, S, grad_bytes=-2), "grad_bytes must be a non-negative"),
    (lambda: sr.train_memory(M, B, S, n_moments=1.5), "n_moments must be a non-negative"),
    (lambda: sr.train_ops(M, B, S, moment_bytes=0), "moment_bytes must be a positive"),
])
def test_bad_input_is_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_totals_are_sums_of_rows_at_numbers():
    tiny = sr.model("tiny")
    rows = sr.train_ops(tiny, 4, 16, "matmul_outputs")
    total = sum(rows.values())
    assert total.flops == sum(c.flops for c in rows.values())
    assert all(c.flops.is_Integer and c.act_bytes.is_Integer for c in rows.values())
