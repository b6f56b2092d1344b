"""A training step's backward is its blocks': every ``bwd/`` row of ``train_ops`` is a row
some block's backward method gives (and every such row is in the step), and a block switch
changes only that block's backward rows, by what a hand count of the switched op says."""

import pytest
import sympy as sp

import symroof as sr
from symroof.models import MODELS, Transformer
from symroof.models.blocks import Widths
from symroof.models.training_graph import trainable
from symroof.symbols import B, D, F, G, H, L, S, d_h

MODELS_TRAINED = {**MODELS, "symbolic": Transformer(),
                  "symbolic-neox": Transformer(norm="layer", gated=False, act="gelu",
                                               fused_qkv=True, parallel_residual=True)}


def _blocks_backward_keys(m: Transformer, batch, seq, mode: str) -> set[str]:
    """The keys each block's own backward method gives, called block by block here (the
    head, the residual's four, the dense MLP where there are dense layers, the experts,
    the attention's three, the positions, the embedding)."""
    b = m.blocks
    w = Widths(batch * seq, b.stream, 2)
    res, att = b.residual, b.attention
    parts = [b.head.backward(b.embedding.V, w), res.backward_mlp_out(w),
             res.backward_mlp_in(w), res.backward_attention_out(w), att.backward_out(w),
             att.backward_core(mode, b.L, batch, seq, b.stream),
             att.backward_in(w, seq, b.positions), res.backward_attention_in(w),
             b.positions.backward(batch, seq, w), b.embedding.backward(w)]
    if b.dense_layers != 0:
        parts.append(b.mlp.backward(w))
    if b.experts is not None:
        parts.append(b.experts.backward(w, b.moe_layers, None))
    return {f"bwd/{key}" for part in parts for key in part}


@pytest.mark.parametrize("name", sorted(MODELS_TRAINED))
def test_the_backward_rows_are_exactly_the_blocks(name):
    m = MODELS_TRAINED[name]
    batch, seq = (B, S) if name.startswith("symbolic") else (1, 8)
    for mode in ("naive",) if m.mla is not None else ("naive", "fused"):
        rows = sr.train_ops(m, batch, seq, attention=mode)
        step = {k for k in rows if k.startswith("bwd/")}
        assert step == _blocks_backward_keys(trainable(m), batch, seq, mode), (name, mode)


def _changed(base: Transformer, **switch) -> tuple[dict, set, set]:
    """(the bwd rows that differ, keys only the switched model has, keys it lost)."""
    before = {k: c for k, c in sr.train_ops(base, B, S).items() if k.startswith("bwd/")}
    after = {k: c for k, c in sr.train_ops(base.replace(**switch), B, S).items()
             if k.startswith("bwd/")}
    differ = {k: after[k] for k in before.keys() & after.keys()
              if sp.expand(after[k].flops - before[k].flops) != 0
              or sp.expand(after[k].act_bytes - before[k].act_bytes) != 0
              or sp.expand(after[k].weight_bytes - before[k].weight_bytes) != 0}
    return differ | {k: after[k] for k in after.keys() - before.keys()}, \
        after.keys() - before.keys(), before.keys() - after.keys()


# RMSNorm backward over r rows of width d, counted by hand (docs/accounting.md, "Backward"):
# per row recompute the rms (d squares, d - 1 adds, divide, add eps, sqrt: 2d + 2), xhat (d),
# g = dy*w (d), mean(g*xhat) (2d), dx = (g - xhat*mean)/r (3d): 9d + 2; dw sums the r rows'
# dy*xhat: r*d multiplies and (r - 1)*d adds. Reads x, dy (and writes dx): 3*r*d elements;
# the weight read and its gradient written: d each (bf16: 2 + 2 bytes).
def _rms_by_hand(r, d):
    return r * (9 * d + 2) + r * d + (r - 1) * d, 4 * d, 3 * r * d * 2


def test_qk_norm_adds_only_the_attention_blocks_two_norm_rows():
    differ, added, lost = _changed(Transformer(), qk_norm=True)
    assert set(differ) == added == {"bwd/attn/q_norm", "bwd/attn/k_norm"} and not lost
    for key, heads in (("bwd/attn/q_norm", H), ("bwd/attn/k_norm", G)):  # per head, width d_h
        flops, wb, ab = _rms_by_hand(B * S * heads, d_h)
        row = differ[key]
        assert (sp.expand(row.flops - L * flops), row.weight_bytes, row.act_bytes) == (
            0, L * wb, L * ab)


def test_post_norms_add_only_the_residuals_two_norm_rows():
    differ, added, lost = _changed(Transformer(), post_norms=True)
    assert set(differ) == added == {"bwd/attn/post_norm", "bwd/mlp/post_norm"} and not lost
    flops, wb, ab = _rms_by_hand(B * S, D)
    for row in differ.values():
        assert sp.expand(row.flops - L * flops) == 0
        assert (row.weight_bytes, row.act_bytes) == (L * wb, L * ab)


def test_ungated_changes_only_the_mlp_blocks_rows():
    """gated=False (act silu): no gate matmul and no sum of two dX; the activation's
    backward is du = da*silu'(u): silu' = sig*(1 + u*(1 - sig)), sig 4 (neg, exp, add,
    recip) + 4 (sub, mul, add, mul), then times da: 9 per element of n*F; reads u, da,
    writes du (3 elements). The up and down rows stay."""
    differ, added, lost = _changed(Transformer(), gated=False)
    assert set(differ) == added == {"bwd/mlp/silu"}
    assert lost == {"bwd/mlp/swiglu", "bwd/mlp/gate/dx", "bwd/mlp/gate/dw",
                    "bwd/mlp/gate_up_sum"}
    row = differ["bwd/mlp/silu"]
    assert (row.flops, row.weight_bytes, row.act_bytes) == (L * 9 * B * S * F, 0,
                                                            L * 3 * B * S * F * 2)


def test_parallel_residual_changes_only_the_residuals_sums():
    """x + attn(ln1 x) + mlp(ln2 x): the MLP's residual sum goes, and the attention's sums
    three gradients (the stream's, the attention norm's, the MLP norm's): 2 adds per
    element of n*D, reading 3 and writing 1."""
    differ, added, lost = _changed(Transformer(), parallel_residual=True)
    assert set(differ) == {"bwd/attn/residual"} and not added
    assert lost == {"bwd/mlp/residual"}
    row = differ["bwd/attn/residual"]
    assert (row.flops, row.act_bytes) == (L * 2 * B * S * D, L * 4 * B * S * D * 2)
