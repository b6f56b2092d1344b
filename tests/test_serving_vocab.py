"""Serving's vocab-parallel embedding: the table split over V on every model axis (as the
lm_head's, one table for a tied model), the lookup's partial sums summed once a step by the
change of partition (an AllReduce under 1-D, a ReduceScatter into x[B, D_df] under 2-D). The
layout's bytes per chip of each weight (``weight_bytes``) are the rows' partitions; the
plan's memory (P_bytes / N, the book's) holds the table as the layout does, and differs from
the layout only by the arrays it keeps on fewer than N chips' worth (norm gains, W_k and W_v
where the mesh is wider than G, a router, MLA's latents).

Literal figures come from the released configs: Llama-3.1-8B D = 4096, V = 128,256, L = 32;
Llama-3.1-70B D = 8192, V = 128,256, L = 80, G = 8, d_h = 128, 70,553,706,496 parameters;
GPT-2 D = 768, V = 50,257.
"""

import pytest
import sympy as sp

import symroof as sr
from symroof.models import MODELS
from symroof.parallel.partition import ways
from symroof.parallel.serving_layouts import serving_layout, weight_bytes
from symroof.surfaces.cli import main

MESH = sr.mesh("tpu-v5e", "4x4")
#: biases no row declares: split as the output of the row they are added to
BIAS_OF = {"attn/b_qkv": "attn/qkv_proj", "mlp/b_up": "mlp/up"}


def _weight_ways(m, lay):
    """Each weight array's ways, read from the rows' operands (what the shard prices)."""
    got = {}
    for key, u in m.blocks.uses(last_only=True).items():
        if u.weight is not None:
            got.setdefault(u.weight, set()).add(ways(lay.rule(key).weight, MESH))
    uses = m.blocks.uses()
    for bias, row in BIAS_OF.items():
        key = row if row in uses else "attn/qkv_proj" if row.startswith("attn") else "mlp/gate_up"
        if key in uses:
            out = lay.rule(key).writes
            got[bias] = {MESH.size(out.axes[-1]) if out.axes[-1] else 1}
    return got


CASES = [(n, lay) for n, m in MODELS.items() for lay in ("1d", "2d")
         if not (lay == "2d" and m.mla is not None)]  # 2-D does not model MLA


@pytest.mark.parametrize("name, layout", CASES)
def test_weight_bytes_hold_each_weight_as_the_rows_split_it(name, layout):
    m = MODELS[name]
    lay, _ = serving_layout(m, MESH, 16, layout=layout, d_axes=("X",) if layout == "2d" else ())
    b, found = m.blocks, _weight_ways(m, lay)
    total, local = 0, 0
    for path, a in b.arrays().items():
        if a.kind != "weight":
            continue
        n = sp.Mul(*b.shape(path)) * b.repeats(path)
        w = found.get(path, {1})  # a bias added to y (after the reduction): every chip
        assert len(w) == 1, (path, w)  # every row reading one array reads it in one split
        total += n
        local += n / w.pop()
    assert total == m.params  # every parameter held somewhere, once
    held = weight_bytes(m, MESH, 16, layout, ("X",) if layout == "2d" else ())
    assert sum(held.values()) == local * m.w_bytes
    # the table (and an untied lm_head) over all 16 chips: the share P_bytes / N gives it
    for path in ("embed/W_embed", "head/W_lm"):
        if path in held:
            assert held[path] == sp.Mul(*b.shape(path)) * m.w_bytes / 16, path


@pytest.mark.parametrize("name", [n for n, m in MODELS.items() if m.tied])
@pytest.mark.parametrize("layout", ["1d", "2d"])
def test_a_tied_table_is_split_over_v_once_for_both_rows(name, layout):
    plan = sr.serve(name, MESH, batch=16, context=1024, layout=layout)
    embed, head = (plan.partitions.rule(k).weight for k in ("embed", "lm_head"))
    assert set(embed.axes_of("V")) == set(head.axes_of("V")) == {"X", "Y"}


def test_the_lookup_is_summed_once_a_step():
    mesh = sr.mesh("tpu-v5e", "2x4")  # 8 chips = G: no AllToAll
    plan = sr.serve("llama-3.1-8b", mesh, batch=16, context=2048)
    x = 16 * 4096 * 2  # x[B, D] in bf16, summed over all 8 chips once (not 32 times)
    assert plan.rows["comm/embed_allreduce"] == sr.all_reduce(mesh, x, "XY")
    assert "comm/embed_allreduce" not in plan.layer_comm  # outside the layers
    assert plan.rows["embed"].weight_bytes == sp.Rational(16 * 4096 * 2, 8)  # its rows only
    two = sr.serve("llama-3.1-8b", mesh, batch=16, context=2048, layout="2d")
    assert two.rows["comm/embed_reducescatter"] == sr.reduce_scatter(mesh, x, "XY")
    gpt2 = sr.serve("gpt2", mesh, batch=16, context=1024)  # positions added after the sum
    assert gpt2.rows["comm/pos_embed_allreduce"] == sr.all_reduce(mesh, 16 * 768 * 2, "XY")


def test_70b_layout_holds_more_than_the_memory_by_kv_projections_and_norms():
    # the plan's memory is the book's P_bytes / 16 (the table spread, as the layout holds
    # it); the layout keeps W_k and W_v on 4 chips' worth (G = 8 heads over X = 4; Y
    # replicates them) and the 161 norm gains whole: what the memory does not yet count
    plan = sr.serve("llama-3.1-70b", MESH, batch=8, context=8192)
    P, kv_proj, norms = 70_553_706_496, 2 * 80 * 8192 * 8 * 128, (2 * 80 + 1) * 8192
    assert plan.memory["weights"] == sp.Rational(2 * P, 16)
    held = sum(weight_bytes(plan.model, MESH, 8).values())
    assert held - plan.memory["weights"] == 2 * (
        sp.Rational(kv_proj, 4) - sp.Rational(kv_proj, 16) + norms - sp.Rational(norms, 16))


def test_serve_prints_the_embedding_collective(capsys):
    argv = ["serve", "--model", "llama-3.1-8b", "--mesh", "tpu-v5e:2x4", "--batch", "16",
            "--context", "2048"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "embed_allreduce" in x)
    assert "once a step: the vocab-parallel embedding's partial lookups summed" in line
