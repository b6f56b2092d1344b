"""The arrays each serving row reads and writes, as the blocks declare them (with the share
of each a row moves) and serving's layouts partition them, against the row's own
activation bytes: what a per-chip count of activation bytes by array (each array's local
share) rests on.
"""

import sympy as sp

import symroof as sr
from symroof.models.family_presets import FAMILY_PRESETS
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
