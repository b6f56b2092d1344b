"""The exact check: the counted NumPy model against the symbolic formulas, op by op."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import symroof as sr
from symroof.cost import Cost

TINY = sr.model("tiny")


@pytest.mark.parametrize("batch, new_tokens, cached, last_only", [
    (1, 128, 0, False),   # the lecture's prefill
    (8, 1, 127, True),    # the lecture's decode
    (2, 5, 3, False),     # a chunk of new tokens on top of a cache
    (3, 1, 0, True),      # first token
])
def test_tiny_prefill_and_decode(batch, new_tokens, cached, last_only):
    report = sr.check(TINY, batch, new_tokens, cached, last_only=last_only)
    assert report.ok, str(report)
    assert len(report.rows) == 20  # every op of the naive forward


@pytest.mark.parametrize("variant", [
    dict(G=8),                         # MHA: G = H
    dict(G=1),                         # MQA
    dict(d_h=12),                      # d_h != D / H
    dict(tied=True),                   # tied embeddings
    dict(qkv_bias=True),               # Qwen2-style q/k/v biases
    dict(w_bytes=1, kv_bytes=1),       # int8 weights and KV cache, bf16 activations
])
def test_variants(variant):
    report = sr.check(TINY.replace(**variant), 2, 3, 4)
    assert report.ok, str(report)


def test_a_wrong_formula_is_caught(monkeypatch):
    ops = sr.Transformer.ops

    def off_by_one(self, *args, **kwargs):
        rows = ops(self, *args, **kwargs)
        rows["mlp/swiglu"] = rows["mlp/swiglu"] + Cost(flops=1)
        return rows

    monkeypatch.setattr(sr.Transformer, "ops", off_by_one)
    report = sr.check(TINY, 1, 2, 0)
    assert not report.ok
    assert [(m.op, m.quantity) for m in report.mismatches] == [
        ("mlp/swiglu", "flops"), ("mlp/swiglu", "useful_flops")]
    assert "MISMATCH" in str(report)


def test_check_needs_numbers():
    with pytest.raises(ValueError, match="needs numbers for every dimension; D = D"):
        sr.check(sr.Transformer(), 1, 1, 0)
    with pytest.raises(ValueError, match="cached must be a non-negative integer, got -1"):
        sr.check(TINY, 1, 1, -1)
    with pytest.raises(ValueError, match="batch must be a positive integer"):
        sr.check(TINY, 0, 1, 0)


@st.composite
def configs(draw):
    G = draw(st.integers(1, 3))
    H = G * draw(st.integers(1, 3))
    return sr.Transformer(
        D=draw(st.integers(1, 12)), F=draw(st.integers(1, 16)), L=draw(st.integers(1, 2)),
        H=H, G=G, d_h=2 * draw(st.integers(1, 3)), V=draw(st.integers(2, 20)),
        tied=draw(st.booleans()), qkv_bias=draw(st.booleans()),
        w_bytes=draw(st.sampled_from([1, 2, 4])), act_bytes=draw(st.sampled_from([1, 2, 4])),
        kv_bytes=draw(st.sampled_from([1, 2, 4])), name="random")  # each width on its own


@settings(max_examples=120, deadline=None)
@given(model=configs(), batch=st.integers(1, 3), new_tokens=st.integers(1, 5),
       cached=st.integers(0, 6), last_only=st.booleans())
def test_random_configs_phases_and_cache_lengths(model, batch, new_tokens, cached, last_only):
    report = sr.check(model, batch, new_tokens, cached, last_only=last_only)
    assert report.ok, str(report)


def test_report_renders_in_notebooks_and_as_dict():
    report = sr.check(TINY, 1, 2, 1)
    md = report._repr_markdown_()
    assert md.splitlines()[2] == ("| op | flops | useful_flops | weight_bytes | kv_bytes | "
                                  "act_bytes | verdict |")
    assert "| `lm_head` |" in md and md.endswith("All equal.")
    assert report.as_dict()["ok"] is True


def test_too_big_runs_are_refused_before_they_start():
    with pytest.raises(ValueError, match=r"would need about \d+\.\d GiB in float64"):
        sr.check(sr.model("llama-3.1-8b"), 1, 1, 0)
    with pytest.raises(ValueError, match="GiB"):
        sr.check(TINY, 64, 2048, 0)


def test_the_check_compares_with_the_accounting_the_twin_runs():
    # the twin executes symroof's own conventions; a profile in force (LLM-Viewer's norms at
    # 7 FLOPs an element, the book's optimizer bytes) is no reason for a mismatch
    from symroof.conventions import using

    for name in ("llm-viewer", "book", "llm-analysis"):
        with using(name):
            assert sr.check(sr.model("tiny"), batch=2, new_tokens=3, cached=4).ok, name
            assert sr.check_training(sr.model("tiny"), batch=1, seq=4, remat="full").ok, name
