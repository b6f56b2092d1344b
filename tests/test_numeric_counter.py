"""The counter of symroof.numeric: primitives, exact per-op counts, useful vs executed.

Expected values spell the accounting out (tinygrad test_uops_stats style) and are computed
here from the config numbers; they never come from the symbolic side of symroof.
"""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from symroof.numeric import (
    OP_GROUPS,
    OP_KEYS,
    QUANTITIES,
    TINY,
    Config,
    Counter,
    KVCache,
    forward,
    init_params,
)
from symroof.numeric.primitives import PLAIN, _CountedOp, _PlainOp

ROOT = Path(__file__).resolve().parents[1]
NUMERIC = ROOT / "symroof" / "numeric"


def run(cfg, B, T, c=0, last_only=False, counter=None):
    """Fill a cache with c tokens (uncounted), then run T new tokens counted."""
    counter = Counter() if counter is None else counter
    params, rng = init_params(cfg), np.random.default_rng(1)
    cache = KVCache(cfg, B)
    if c:
        forward(params, cfg, rng.integers(0, cfg.V, (B, c)), cache=cache)
    forward(params, cfg, rng.integers(0, cfg.V, (B, T)), cache=cache, counter=counter,
            last_only=last_only)
    return counter


def table(cfg, B, T, c, last_only, wb=2, ab=2, kvb=2):
    """docs/accounting.md's table, typed in independently (typed from the page, not imported)."""
    D, F, L, H, G, d_h, V = cfg.D, cfg.F, cfg.L, cfg.H, cfg.G, cfg.d_h, cfg.V
    S, T1, bias = c + T, (1 if last_only else T), int(cfg.qkv_bias)
    P = T * c + T * (T + 1) // 2  # allowed (query, key) pairs per sequence and head

    def row(flops=0, useful=None, w=0, kv=0, act=0):
        return {"flops": flops, "useful_flops": flops if useful is None else useful,
                "weight_bytes": w, "kv_bytes": kv, "act_bytes": act}

    def norm(n):  # square D, sum D-1, /D, +eps, sqrt, divide by rms D, weight D
        return row(n * (4 * D + 2), w=D * wb, act=2 * n * D * ab)

    def proj(n, d_in, d_out, b=0):  # 2 per MAC (+ 1 per output for a bias)
        return row(2 * n * d_in * d_out + b * n * d_out, w=(d_in * d_out + b * d_out) * wb,
                   act=n * (d_in + d_out) * ab)

    layer = {
        "attn_norm": norm(B * T),
        "attn/q_proj": proj(B * T, D, H * d_h, bias),
        "attn/k_proj": proj(B * T, D, G * d_h, bias),
        "attn/v_proj": proj(B * T, D, G * d_h, bias),
        "attn/rope": row(3 * B * T * (H + G) * d_h,
                         act=2 * B * T * (H + G) * d_h * ab + T * d_h * ab),  # q, k + cos, sin
        "attn/kv_write": row(0, kv=2 * B * T * G * d_h * kvb, act=2 * B * T * G * d_h * ab),
        "attn/scores": row(2 * B * H * T * S * d_h, 2 * B * H * P * d_h, kv=B * S * G * d_h * kvb,
                           act=B * T * H * d_h * ab + B * H * T * S * ab),
        # scale S, max S-1, subtract S, exp S, sum S-1, divide S = 6S - 2 per row
        "attn/softmax": row(B * H * T * (6 * S - 2), B * H * (6 * P - 2 * T),
                            act=2 * B * H * T * S * ab),
        "attn/av": row(2 * B * H * T * S * d_h, 2 * B * H * P * d_h, kv=B * S * G * d_h * kvb,
                       act=B * H * T * S * ab + B * T * H * d_h * ab),
        "attn/o_proj": proj(B * T, H * d_h, D),
        "attn/residual": row(B * T * D, act=3 * B * T * D * ab),
        "mlp_norm": norm(B * T),
        "mlp/gate": proj(B * T, D, F),
        "mlp/up": proj(B * T, D, F),
        "mlp/swiglu": row(5 * B * T * F, act=3 * B * T * F * ab),
        "mlp/down": proj(B * T, F, D),
        "mlp/residual": row(B * T * D, act=3 * B * T * D * ab),
    }
    rows = {"embed": row(0, w=B * T * D * wb, act=B * T * D * ab)}
    rows.update({key: {q: L * n for q, n in r.items()} for key, r in layer.items()})
    rows["final_norm"] = norm(B * T1)
    rows["lm_head"] = proj(B * T1, D, V)
    return rows


ODD = Config(D=24, F=40, L=3, H=4, G=1, d_h=10, V=50, qkv_bias=True, tied=True)
CASES = [  # (cfg, B, T, c, last_only): prefill, decode, chunked prefill, odd shapes
    (TINY, 2, 7, 0, False),
    (TINY, 3, 1, 6, True),
    (TINY, 1, 4, 5, False),
    (ODD, 2, 3, 4, False),
    (ODD, 2, 5, 0, True),
]


@pytest.mark.parametrize("cfg, B, T, c, last_only", CASES)
def test_every_row_matches_the_table(cfg, B, T, c, last_only):
    counter = run(cfg, B, T, c, last_only, Counter(w_bytes=1, act_bytes=2, kv_bytes=4))
    assert list(counter.rows) == list(OP_KEYS)  # execution order of first appearance
    assert counter.rows == table(cfg, B, T, c, last_only, wb=1, ab=2, kvb=4)


def test_prefill_counts_spelled_out():
    D, F, L, H, G, d_h, V = TINY.D, TINY.F, TINY.L, TINY.H, TINY.G, TINY.d_h, TINY.V
    B, T = 2, 7
    rows = run(TINY, B, T).rows
    assert rows["attn/q_proj"]["flops"] == L * 2 * B*T*D*(H*d_h)  # 2 FLOPs per MAC
    assert rows["attn/q_proj"]["act_bytes"] == L * (B*T*D + B*T*H*d_h) * 2  # read x, write q
    assert rows["attn/k_proj"]["weight_bytes"] == L * D*G*d_h * 2  # GQA: G heads of K
    assert rows["attn/scores"]["flops"] == L * 2 * B*H*T*T*d_h  # every T x S pair, S = T
    assert rows["attn/scores"]["useful_flops"] == L * 2 * B*H*(T*(T+1)//2)*d_h  # causal
    assert rows["attn/softmax"]["flops"] == L * B*H*T*(6*T - 2)  # scale, max, sub, exp, sum, div
    assert rows["attn/kv_write"]["kv_bytes"] == L * 2*B*T*G*d_h * 2  # write K and V
    assert rows["mlp/swiglu"]["flops"] == L * 5*B*T*F  # neg, exp, +1, div, mul
    assert rows["attn_norm"]["flops"] == L * B*T*(4*D + 2)
    assert rows["lm_head"]["flops"] == 2 * B*T*D*V  # every position
    assert rows["embed"]["weight_bytes"] == B*T*D * 2  # only the gathered rows


def test_decode_counts_spelled_out():
    D, L, H, G, d_h, V = TINY.D, TINY.L, TINY.H, TINY.G, TINY.d_h, TINY.V
    B, c = 8, 127
    S = c + 1
    rows = run(TINY, B, 1, c, last_only=True).rows
    assert rows["attn/scores"]["kv_bytes"] == L * B*S*G*d_h * 2  # each sequence reads its K
    assert rows["attn/av"]["flops"] == L * 2 * B*H*S*d_h
    assert rows["attn/softmax"]["flops"] == L * B*H*(6*S - 2)
    assert rows["attn/rope"]["act_bytes"] == L * (2*B*(H + G)*d_h + d_h) * 2  # q,k + cos,sin
    assert rows["lm_head"]["weight_bytes"] == D*V * 2  # read once, shared by the batch
    assert rows["final_norm"]["act_bytes"] == 2*B*D * 2


def test_useful_is_about_half_of_executed_in_prefill():
    B, T = 2, 9
    rows = run(TINY, B, T).rows
    for key in ("attn/scores", "attn/av"):  # executed / useful = T*T / (T*(T+1)/2)
        assert rows[key]["flops"] * (T + 1) == rows[key]["useful_flops"] * 2 * T
    for key in set(OP_KEYS) - {"attn/scores", "attn/softmax", "attn/av"}:
        assert rows[key]["useful_flops"] == rows[key]["flops"], key


def test_useful_equals_executed_in_decode():
    rows = run(TINY, 3, 1, c=10, last_only=True).rows
    assert all(r["useful_flops"] == r["flops"] for r in rows.values())


def test_widths_none_take_the_itemsize():
    B, T = 1, 3
    rows = run(TINY, B, T, counter=Counter(w_bytes=None, act_bytes=None, kv_bytes=None)).rows
    assert rows["attn/q_proj"]["weight_bytes"] == TINY.L * TINY.D * TINY.H * TINY.d_h * 8


def test_totals_groups_and_table():
    counter = run(TINY, 2, 3)
    for q in QUANTITIES:
        assert counter.total(q) == sum(r[q] for r in counter.rows.values())
        assert sum(g[q] for g in counter.merged(OP_GROUPS).values()) == counter.total(q)
    text = str(counter)
    assert text.splitlines()[0].split() == ["op", *QUANTITIES]
    assert text.splitlines()[-1].split()[1] == f"{counter.total('flops'):,}"
    assert "attn/softmax" in text and "Counter(20 ops" in repr(counter)


# ------------------------------------------------------------------ primitives
X = np.arange(24, dtype=float).reshape(2, 3, 4)
ELEMENTWISE = [  # (method, args, expected result)
    ("add", (X, 1.0), X + 1), ("sub", (X, X), X - X), ("mul", (X, 2.0), X * 2),
    ("div", (X, 2.0), X / 2), ("neg", (X,), -X), ("exp", (X,), np.exp(X)),
    ("sqrt", (X,), np.sqrt(X)), ("recip", (X + 1,), 1 / (X + 1)),
]


@pytest.mark.parametrize("name, args, want", ELEMENTWISE)
def test_elementwise_primitive_counts_one_per_output(name, args, want):
    c = Counter()
    with c.op("k") as ops:
        out = getattr(ops, name)(*args)
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(getattr(PLAIN, name)(*args), want)
    assert c.rows["k"]["flops"] == c.rows["k"]["useful_flops"] == 2 * 3 * 4


def test_broadcast_output_is_what_counts():
    c = Counter()
    with c.op("k") as ops:
        ops.add(np.ones((3, 1)), np.ones((1, 5)))  # output 3 x 5
    assert c.rows["k"]["flops"] == 15


def test_reductions_count_n_minus_one_per_output():
    c = Counter()
    with c.op("k") as ops:
        assert ops.sum(X).shape == (2, 3, 1)
        ops.max(X, axis=0)
    assert c.rows["k"]["flops"] == 2 * 3 * (4 - 1) + 3 * 4 * (2 - 1)


def test_selection_is_free():
    c = Counter()
    with c.op("k") as ops:
        ops.where(X > 3, X, 0.0)
    assert c.rows["k"]["flops"] == 0


def test_valid_mask_counts_only_valid_entries():
    keep = np.tril(np.ones((4, 4), bool))  # 10 of 16
    z = np.zeros((2, 3, 4, 4))  # broadcast over 2 x 3
    c = Counter()
    with c.op("ew") as ops:
        ops.exp(z, valid=keep)
    with c.op("red") as ops:
        ops.sum(z, valid=keep)  # rows of 1, 2, 3, 4 valid -> 0 + 1 + 2 + 3
    with c.op("col") as ops:
        ops.max(z, valid=np.ones((2, 1, 1, 1), bool), axis=1)  # a size-1 mask axis
    assert (c.rows["ew"]["flops"], c.rows["ew"]["useful_flops"]) == (6 * 16, 6 * 10)
    assert (c.rows["red"]["flops"], c.rows["red"]["useful_flops"]) == (6 * 4 * 3, 6 * 6)
    assert c.rows["col"]["useful_flops"] == c.rows["col"]["flops"] == 2 * 4 * 4 * (3 - 1)


def test_einsum_rule_equals_matmul_rule():
    a, b = np.ones((2, 3, 5)), np.ones((5, 7))
    c = Counter()
    with c.op("mm") as ops:
        y1 = ops.matmul(a, b)
    with c.op("es") as ops:
        y2 = ops.einsum("btd,dn->btn", a, b)
    np.testing.assert_array_equal(y1, y2)
    assert c.rows["mm"]["flops"] == c.rows["es"]["flops"] == 2 * 2 * 3 * 5 * 7


def test_einsum_useful_counts_valid_pairs():
    q, k = np.ones((1, 4, 3)), np.ones((1, 4, 3))  # (B, T, d), (B, S, d)
    keep = np.tril(np.ones((4, 4), bool))
    c = Counter()
    with c.op("s") as ops:
        ops.einsum("btd,bsd->bts", q, k, valid=keep, valid_dims="ts")
    assert c.rows["s"]["useful_flops"] == 2 * 3 * 10  # 2*d per valid (query, key) pair


def test_bytes_by_kind():
    c = Counter(w_bytes=1, act_bytes=2, kv_bytes=4)
    with c.op("k") as ops:
        ops.read(np.ones(3), "weight")
        ops.read(np.ones(5), "kv")
        ops.write(np.ones(7), "act")
    assert c.rows["k"] == {"flops": 0, "useful_flops": 0, "weight_bytes": 3, "kv_bytes": 20,
                           "act_bytes": 14}


def test_plain_and_counted_have_the_same_primitives():
    def public(cls):
        return {n for n in dir(cls) if not n.startswith("_")}
    assert public(_CountedOp) == public(_PlainOp)


BAD = [  # (callable, exception, text in the message)
    (lambda: Counter(w_bytes=0), ValueError, "w_bytes must be a positive integer or None, got 0"),
    (lambda: Counter(kv_bytes=2.0), ValueError, "kv_bytes"),
    (lambda: Counter().op(""), ValueError, "op key"),
    (lambda: Counter().op("k").read(X, "weights"), ValueError, "'weights'"),
    (lambda: Counter().total("flop"), ValueError, "'flop'"),
    (lambda: Counter().total("flops", ["attn/core"]), KeyError, "attn/core"),
    (lambda: Counter().op("k").exp(X, valid=np.ones(4)), TypeError, "boolean"),
    (lambda: Counter().op("k").exp(X, valid=np.ones(5, bool)), ValueError, "(5,)"),
    (lambda: Counter().op("k").einsum("ij,jk", X[0], X[0].T), ValueError, "explicit"),
    (lambda: Counter().op("k").einsum("ij,ij->ij", X[0], X[0]), ValueError, "contracts nothing"),
    (lambda: Counter().op("k").einsum("ij,jk->ik", X[0], X[0].T, valid=np.ones((3, 3), bool),
                                      valid_dims="iq"), ValueError, "'iq'"),
]


@pytest.mark.parametrize("call, exc, text", BAD)
def test_bad_input_fails_loudly(call, exc, text):
    with pytest.raises(exc) as info:
        call()
    assert text in str(info.value)


# ------------------------------------------------------------------ properties
@st.composite
def steps(draw):
    G, R = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    cfg = Config(D=draw(st.integers(1, 12)), F=draw(st.integers(1, 12)), L=draw(st.integers(1, 2)),
                 H=G * R, G=G, d_h=draw(st.sampled_from([2, 4, 6])), V=draw(st.integers(2, 20)),
                 tied=draw(st.booleans()), qkv_bias=draw(st.booleans()))
    return (cfg, draw(st.integers(1, 3)), draw(st.integers(1, 4)), draw(st.integers(0, 4)),
            draw(st.booleans()))


@settings(max_examples=120, deadline=None)
@given(steps())
def test_counter_properties(step):
    cfg, B, T, c, last_only = step
    counter = run(cfg, B, T, c, last_only)
    for q in QUANTITIES:
        assert counter.total(q) == sum(row[q] for row in counter.rows.values())
    assert all(r["useful_flops"] <= r["flops"] for r in counter.rows.values())
    assert counter.rows == table(cfg, B, T, c, last_only)


# ------------------------------------------------------------------ packaging
def test_numeric_imports_nothing_but_numpy_and_itself():
    for path in sorted(NUMERIC.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:  # relative: must stay inside symroof/numeric
                    assert node.level == 1, f"{path.name} imports from outside numeric/"
                    continue
                names = [node.module or ""]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                assert top != "sympy", f"{path.name} imports {name}"
                if top == "symroof":
                    assert name.startswith("symroof.numeric"), f"{path.name} imports {name}"


def test_numeric_loads_without_sympy():
    """Import symroof.numeric under a stub parent package, so symroof/__init__ never runs."""
    code = (f"import sys, types; pkg = types.ModuleType('symroof'); "
            f"pkg.__path__ = [{str(ROOT / 'symroof')!r}]; sys.modules['symroof'] = pkg; "
            f"import symroof.numeric as n; n.forward(n.init_params(n.TINY), n.TINY, [[1, 2]]); "
            f"assert 'sympy' not in sys.modules, 'sympy was imported'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_overhead_benchmark_runs_small():
    spec = importlib.util.spec_from_file_location("counter_overhead",
                                                  ROOT / "benchmarks" / "counter_overhead.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = module.main("small")
    assert result["ratio"] > 0 and result["counted_s"] > 0 and result["uncounted_s"] > 0
