"""The arrays each serving row reads and writes, as the blocks declare them (with the share
of each a row moves) and serving's layouts partition them, against the row's own
activation bytes: what each chip's activation bytes (its share of each array) rest on.
"""

import sympy as sp

import symroof as sr
from symroof.models.family_presets import FAMILY_PRESETS
from symroof.parallel.partition import local_act_bytes
from symroof.parallel.serving_layouts import serving_layout
from symroof.symbols import B as _B
from symroof.symbols import T as _T

B, S = 16, 1024


def _plans():
    mesh = sr.mesh("tpu-v5e", "4x4")
    for m in FAMILY_PRESETS:
        for layout in ("1d", "2d"):
            if layout == "2d" and m.mla is not None:
                continue  # 2-D does not model latent attention
            d = ("X",) if layout == "2d" else ()
            lay, sizes = serving_layout(m, mesh, B, S, layout, d)
            yield m, layout, lay, sizes


def test_every_rows_declared_arrays_account_for_its_act_bytes_decode_and_prefill():
    # every row of every family, 1-D and 2-D, one new token (decode) and 64 (a prefill
    # chunk, the lm_head on each sequence's last position, as the plans run it)
    for m, layout, lay, _ in _plans():
        for T in (1, 64):
            for key, c in m.ops(B, T, S - T, last_only=True, attention="fused").items():
                rule = lay.rule(key)
                moved = sp.Add(*(e for _, e in rule.moved)).xreplace({_B: B, _T: T})
                assert m.act_bytes * rule.repeats * moved == c.act_bytes, (m.name, layout, T, key)
                # and the arrays it writes (after its reads) are the row's stores
                stored = sp.Add(*(e for _, e in rule.moved[len(rule.reads):]))
                assert m.act_bytes * rule.repeats * stored.xreplace({_B: B, _T: T}) == \
                    c.act_store_bytes, (m.name, layout, T, key)


def test_a_row_that_reads_an_array_whole_moves_it_whole_on_every_chip():
    # Llama-3.1-8B (its config.json: D = 4096, F = 14336, 32 layers), bf16, B = 16, 1-D
    # tensor parallelism over X = 4: mlp/up reads h[B, D] whole and writes its F = 14336
    # columns of u split four ways, ab (B D + B F / 4) a layer
    m = sr.model("llama-3.1-8b")
    plan = sr.serve(m, sr.mesh("h100", {"X": 4}, custom=True), batch=16, context=1024)
    assert plan.rows["mlp/up"].act_bytes == 32 * 2 * (16 * 4096 + 16 * 14336 // 4)
    assert plan.rows["mlp/up"].act_store_bytes == 32 * 2 * 16 * 14336 // 4   # its quarter of u
    # the residual add reads x and y and writes x, all replicated: every chip all of it
    assert plan.rows["mlp/residual"].act_bytes == 32 * 2 * 3 * 16 * 4096


def test_a_convention_that_counts_no_activation_traffic_leaves_none_per_chip():
    # the rows' own count under the profile is split by the same shares: none stays none
    mesh = sr.mesh("tpu-v5e", "2x2")
    plan = sr.serve("llama-3.1-8b", mesh, batch=8, context=512,
                    conventions=sr.profile("symroof").replace(activation_traffic="none"))
    assert all(c.act_bytes == 0 for k, c in plan.rows.items() if not k.startswith("comm/"))


def test_declarations_that_do_not_add_up_split_the_rows_count_in_proportion():
    from symroof.parallel.partition import operands

    up = operands("h[B, D]", "u[B, F_X]", "W[D, F_X]")
    mesh = sr.mesh(sr.symbolic_chip(), {"X": 4})
    sizes = {"B": 2, "D": 4, "F": 8}
    # declared: 2 (B D + B F) = 48 bytes, 2 (8 + 16 / 4) = 24 per chip; a row counting
    # 96 (twice the declarations) is split the same way: 48 per chip
    assert local_act_bytes(up, 48, mesh, sizes) == 24
    assert local_act_bytes(up, 96, mesh, sizes) == 48
