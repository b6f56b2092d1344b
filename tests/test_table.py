"""Per-op tables two ways: the compiled table (symbolic rows built once, evaluated as Python
integers) against the exact rows substituted one configuration at a time. Every count is
equal exactly, and so is every float (each is the exact value rounded once)."""

import math
from fractions import Fraction

import pytest
import sympy as sp

import symroof as sr
from symroof.models import MODELS, group
from symroof.models.compiled import compiled_table
from symroof.models.table import RooflineTable

H100 = sr.chip("h100")
LLAMA = sr.model("llama-3.1-8b")
THIRD = H100.replace(peaks={"bf16": sp.Rational(989 * 10**12, 3)}, note="test: a Rational peak")

#: (model, chip, dtype, batch, new tokens, cached, groups, attention, lm_head on last only)
CASES = [
    (LLAMA, H100, "bf16", 64, 1, 2047, False, "fused", True),
    (LLAMA, H100, "fp8", 1, 2048, 0, True, "naive", False),
    (sr.model("tiny"), "tpu-v5e", "int8", 3, 7, 5, False, "naive", True),
    (sr.model("llama-2-7b"), "b200", "bf16", 8, 4, 100, True, "fused", True),
    (sr.model("mistral-7b"), H100, "bf16", 2, 1, 4095, False, "fused", True),
    (sr.model("mistral-7b"), H100, "bf16", 3, 7, 9000, True, "naive", True),  # past the window
    (LLAMA.replace(w_bytes=0.5, kv_bytes=1), H100, "bf16", 5, 3, 9, False, "fused", True),
    (sr.model("tiny").replace(act_bytes=Fraction(3, 4)), THIRD, "bf16", 1, 5, 0, False,
     "naive", False),
]


@pytest.mark.parametrize("case", CASES, ids=range(len(CASES)))
def test_compiled_table_equals_the_exact_rows(case):
    model, chip, dtype, b, t, c, groups, attention, last_only = case
    fast = sr.roofline_table(model, chip, batch=b, new_tokens=t, cached=c, dtype=dtype,
                             groups=groups, attention=attention, last_only=last_only)
    rows = model.ops(b, t, c, last_only=last_only, attention=attention)
    slow = RooflineTable(rows=group(rows) if groups else rows, chip=chip, dtype=dtype,
                         whole=model.whole(b, t, c, last_only=last_only), notes=fast.notes)
    assert "_step" in vars(fast) and "_step" not in vars(slow)  # two paths, not one twice
    assert fast.numbers == slow.numbers and fast == slow  # exact counts, floats bit for bit
    assert fast.rows == slow.rows and fast.whole == slow.whole  # built on demand
    assert fast._body() == slow._body() and fast._summary() == slow._summary()
    assert {**fast.as_dict(), "warnings": []} == slow.as_dict()  # warnings need the model
    assert fast.per_op_sum == slow.per_op_sum == sum(tb.lower for tb in slow.times.values())


def test_numbers_are_the_times_of_the_exact_rows():
    table = sr.roofline_table(LLAMA, H100, batch=64, new_tokens=1, cached=2047)
    for name, tb in table.times.items():
        v = table.numbers[name]
        assert (v.t_math, v.t_mem, v.lower, v.bound) == \
            (float(tb.t_math), float(tb.t_mem), float(tb.lower), tb.bound)
        assert v.bytes == table.rows[name].bytes


def test_compiled_once_per_model_chip_dtype_attention():
    first = compiled_table(LLAMA, H100, "bf16", "fused", True, False)
    assert compiled_table(LLAMA, H100, "bf16", "fused", True, False) is first
    assert compiled_table(LLAMA, H100, "fp8", "fused", True, False) is not first
    assert "def _table(B, T, S):" in first.source and "/ 989000000000000" in first.source


def test_what_the_fast_path_cannot_take_still_fails_loudly():
    with pytest.raises(ValueError, match="still symbolic"):
        sr.roofline_table(sr.Transformer(), H100, batch=1, new_tokens=1)
    with pytest.raises(ValueError, match="needs a chip with numbers"):
        sr.roofline_table(LLAMA, sr.symbolic_chip(), batch=1, new_tokens=1)
    with pytest.raises(ValueError, match="batch must be a positive integer"):
        sr.roofline_table(LLAMA, H100, batch=0, new_tokens=1)
    with pytest.raises(ValueError, match="no peak for dtype 'fp4'"):
        sr.roofline_table(LLAMA, H100, batch=1, new_tokens=1, dtype="fp4")
    with pytest.raises(ValueError, match="attention must be one of"):
        sr.roofline_table(LLAMA, H100, batch=1, new_tokens=1, attention="flash")


def test_tables_are_immutable():
    table = sr.roofline_table(LLAMA, H100, batch=1, new_tokens=1)
    with pytest.raises(AttributeError, match="immutable"):
        table.title = "changed"
    assert repr(table) == "<RooflineTable '': 18 rows on h100, bf16>"


@pytest.mark.parametrize("name", MODELS)
def test_every_preset_compiles_to_its_exact_rows(name):
    """Windows (Min, Max), mixtures of experts and the rest: compiled, not the slow path."""
    model = sr.model(name)
    for attention in ("fused", "naive"):
        for b, t, c in ((3, 1, 5000), (2, 64, 0)):
            fast = sr.roofline_table(model, H100, batch=b, new_tokens=t, cached=c,
                                     attention=attention)
            rows = model.ops(b, t, c, last_only=True, attention=attention)
            slow = RooflineTable(rows=rows, chip=H100, whole=model.whole(b, t, c))
            assert "rows" not in vars(fast) and fast.numbers == slow.numbers, (attention, b, t)


@pytest.mark.parametrize("case", CASES, ids=range(len(CASES)))
def test_as_dict_holds_the_numbers(case):
    """as_dict()'s rows and total are the table's numbers, field by field (counts exactly),
    with each intensity the exact ratio of counted FLOPs to bytes."""
    model, chip, dtype, b, t, c, groups, attention, last_only = case
    table = sr.roofline_table(model, chip, batch=b, new_tokens=t, cached=c, dtype=dtype,
                              groups=groups, attention=attention, last_only=last_only)
    d = table.as_dict()
    assert list(d["rows"]) == list(table.numbers)
    for name, v, out in [*((n, v, d["rows"][n]) for n, v in table.numbers.items()),
                         ("total", table._total, d["total"])]:
        assert (out["flops"], out["useful_flops"], out["weight_bytes"], out["act_bytes"],
                out["kv_bytes"]) == (v.flops, v.useful_flops, v.weight_bytes, v.act_bytes,
                                     v.kv_bytes), name
        assert all(type(out[k]) is int for k in ("flops", "useful_flops", "weight_bytes",
                                                  "act_bytes", "kv_bytes")), name
        assert (out["t_math_s"], out["t_mem_s"], out["t_lower_s"], out["t_upper_s"],
                out["bound"]) == (v.t_math, v.t_mem, v.lower, v.upper, v.bound), name
        if v.bytes:
            ratio = Fraction(v.useful_flops) / Fraction(v.bytes)
            assert Fraction(out["intensity_exact"]) == ratio, name
            assert out["intensity"] == float(ratio) or math.isclose(
                out["intensity"], float(ratio), rel_tol=1e-15), name
