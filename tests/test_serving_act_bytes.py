"""The arrays a decode row reads and writes, as the blocks declare them and serving's
layouts partition them, checked against the row's own activation bytes: what a per-chip
count of activation bytes by array (each array's local share) would rest on.
"""

import sympy as sp

import symroof as sr
from symroof.models.family_presets import FAMILY_PRESETS
from symroof.parallel.serving_layouts import serving_layout

B, S = 16, 1024

#: rows whose declared reads and writes do not account for their act bytes: what each
#: declaration leaves out (or counts more than the row moves)
NOT_DECLARED = {
    "mlp/gate": "gate and up each write half of u, declared as one array 2F wide",
    "mlp/up": "gate and up each write half of u",
    "moe/gate": "the experts' gate and up are one array m (routed and shared together)",
    "moe/up": "as moe/gate",
    "moe/shared/gate": "as moe/gate",
    "moe/shared/up": "as moe/gate",
    "moe/swiglu": "m holds the routed and the shared experts' gate and up",
    "moe/shared/swiglu": "as moe/swiglu",
    "moe/down": "writes the k experts' outputs (k D a token) before the combine; declares y",
    "moe/shared/down": "DeepSeek-V3 only; cause not yet traced",
    "moe/combine": "declares no arrays",
    "moe/route": "reads the logits; moves more than them, declares no write",
    "moe/shared/scale": "declares h only; the row moves 3x that",
    "attn/qkv_proj": "writes q, k and v; declares q",
    "attn/rope": "rotates q and k (declares q written); partial rotary and MLA rotate a slice",
    "pos_embed": "declares x only; the row moves 2x that (GPT-2)",
    "attn/kv_a_norm": "MLA (DeepSeek-V3): latent rows, not yet traced",
    "attn/kv_a_proj": "as attn/kv_a_norm",
    "attn/kv_write": "MLA as attn/kv_a_norm; 2-D reads k, v as the one array qkv",
    "attn/q_absorb": "as attn/kv_a_norm",
    "attn/o_absorb": "as attn/kv_a_norm",
    "attn/o_proj": "as attn/kv_a_norm (exact for every other family)",
}
#: and under 2-D, where q, k and v are one array qkv[B, E] (reduced together)
NOT_DECLARED_2D = {"attn/q_proj", "attn/k_proj", "attn/v_proj", "attn/q_norm", "attn/k_norm",
                   "attn/core"}


def _plans():
    mesh = sr.mesh("tpu-v5e", "4x4")
    for m in FAMILY_PRESETS:
        for layout in ("1d", "2d"):
            if layout == "2d" and m.mla is not None:
                continue  # 2-D does not model latent attention
            d = ("X",) if layout == "2d" else ()
            lay, sizes = serving_layout(m, mesh, B, S, layout, d)
            yield m, layout, lay, sizes


def _declared(lay, key, sizes):
    """Elements of the whole arrays row ``key`` declares it reads and writes."""
    rule = lay.rule(key)
    arrays = [*rule.reads, *([rule.writes] if rule.writes is not None else [])]
    return sum((sp.Mul(*(sp.sympify(sizes[d]) for d in a.dims)) for a in arrays),
               sp.Integer(0))


def test_every_declared_rows_arrays_account_for_its_act_bytes():
    for m, layout, lay, sizes in _plans():
        ops = m.ops(B, 1, S - 1, last_only=True, attention="fused")
        for key, c in ops.items():
            if key in NOT_DECLARED or (layout == "2d" and key in NOT_DECLARED_2D):
                continue
            rule = lay.rule(key)
            declared = m.act_bytes * rule.repeats * _declared(lay, key, sizes)
            assert declared == c.act_bytes, (m.name, layout, key)


def test_every_listed_exception_is_one():
    # the list stays honest: each row in it is off in at least one family or layout
    off = set()
    for m, _layout, lay, sizes in _plans():
        ops = m.ops(B, 1, S - 1, last_only=True, attention="fused")
        off |= {k for k, c in ops.items()
                if m.act_bytes * lay.rule(k).repeats * _declared(lay, k, sizes) != c.act_bytes}
    assert set(NOT_DECLARED) | NOT_DECLARED_2D <= off
