"""Three conventions that now give one answer on every path: the MoE kv_crossover weighs the
experts the step reads, llm-analysis's naive core executes only the new pairs, and
transcendentals="apart" reaches the elementwise backwards.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import sympy as sp
from test_llm_analysis import _model

import symroof as sr
from symroof.conventions import profile
from symroof.symbols import S


def test_the_moe_kv_crossover_weighs_the_experts_the_whole_cost_reads():
    """Mixtral-8x7B (mistralai/Mixtral-8x7B-v0.1 config.json: D 4096, F 14336, L 32, 8 KV
    heads of 128, E 8, k 2): at batch 64 a balanced decode step reads all min(8, 128) = 8
    experts, so the weight side of the crossover is every matmul weight: the released
    46,702,792,704 parameters less the embedding (32000 x 4096) and the 65 norms of 4096."""
    m = sr.model("mixtral-8x7b")
    root = sr.kv_crossover(m, 64)
    step = m.whole(64, 1, S - 1)  # the whole cost asked directly at that context
    assert step.weight_bytes == 2 * (46_702_792_704 - 32000 * 4096 - 65 * 4096)
    assert step.kv_bytes.subs(S, root) == step.weight_bytes
    kv_per_token = 32 * 2 * 8 * 128 * 2  # L x (K, V) x G x d_h x bf16
    assert root == sp.Rational(step.weight_bytes, 64 * kv_per_token)
    # at batch 1 the step reads k = 2 experts, and so does its crossover
    one = m.whole(1, 1, S - 1)
    assert one.kv_bytes.subs(S, sr.kv_crossover(m, 1)) == one.weight_bytes
    assert one.weight_bytes < step.weight_bytes


def test_llm_analysis_naive_decode_executes_only_the_new_pairs():
    """llm-analysis counts a decode step's attention at seq_len = 1 (analysis.py lines
    894-898: 4 b s^2 h; lines 1632-1635: decode evaluates it at 1, in the 0.2.2 release as at
    d841e40), whatever kernel runs it: its time reads those FLOPs. Llama-3.1-8B at batch 1,
    context 2048: the scores row executes 2 x 32 heads x 1 pair x 128 dims x 32 layers."""
    m = sr.model("llama-3.1-8b")
    t = sr.roofline_table(m, "h100", batch=1, new_tokens=1, cached=2047, attention="naive",
                          conventions="llm-analysis")
    scores = t.numbers["attn/scores"]
    assert scores.flops == scores.useful_flops == 2 * 32 * 1 * 128 * 32  # 262,144
    mine = sr.roofline_table(m, "h100", batch=1, new_tokens=1, cached=2047, attention="naive")
    assert mine.numbers["attn/scores"].flops == 2 * 32 * 2048 * 128 * 32  # 536,870,912
    # the cache is still read (and written back) in full: the bytes do not shrink
    assert scores.kv_bytes == 2 * 32 * 2048 * 8 * 128 * 2
    # llm-analysis 0.2.2 itself (PyPI; LLMAnalysis(ModelConfig(num_layers=32, n_head=32,
    # hidden_dim=4096, num_key_value_heads=8, ...)).get_num_flops_fwd_per_layer_attn(1, 1),
    # the call its decode makes): 83,902,464 a layer, projections and the one new pair
    attn = sum(v.flops for k, v in t.numbers.items() if k.startswith("attn/"))
    assert attn == 32 * 83_902_464


@pytest.mark.parametrize("attention", ["naive", "fused", "flash"])
def test_llm_analysis_decode_flops_do_not_grow_with_the_context_in_any_core(attention):
    """attention_pairs="new": whatever kernel runs the core (the blockwise one's KV blocks
    included), a decode step's FLOPs are the same at context 11 and 4001; its KV bytes grow."""
    m = sr.model("llama-2-7b")
    short, long = (sum(c for k, c in m.ops(1, 1, cached, attention=attention,
                                           conventions="llm-analysis").items()
                       if k.startswith("attn/")) for cached in (10, 4000))
    assert short.flops == long.flops and short.useful_flops == long.useful_flops
    assert long.kv_bytes > short.kv_bytes


def test_llm_analysis_flops_are_its_own_under_a_naive_core_too(tmp_path):
    """llm-analysis's own totals (tests/data/llm_analysis_d841e40.json.gz: Llama-2-7B, 13B,
    70B, batch 1 and 16, prompts of 512 and 2048, 128 generated) under a naive core: every
    prefill and decode step's FLOPs, whole and attention block, exactly."""
    data = json.loads(gzip.decompress(
        (Path(__file__).parent / "data" / "llm_analysis_d841e40.json.gz").read_bytes()))
    models = {name: _model(config, tmp_path / f"{name}.json")  # its configs, as HF's
              for name, config in data["model_configs"].items()}
    seen = set()
    for run in data["runs"]:  # FLOPs depend on neither the widths nor the chip
        key = (run["model"], run["batch"], run["seq_len"])
        if key in seen:
            continue
        seen.add(key)
        m, b, s, n = models[run["model"]], run["batch"], run["seq_len"], \
            run["num_tokens_to_generate"]
        L = data["model_configs"][run["model"]]["num_layers"]
        for phase, T, c in (("prefill", s, 0), ("decode", 1, s + n - 1)):
            t = sr.roofline_table(m, "h100", batch=b, new_tokens=T, cached=c,
                                  attention="naive", conventions="llm-analysis")
            assert t._total.flops == run["summary"][f"{phase}_num_flops_fwd_total"], key
            attn = sum(v.flops for k, v in t.numbers.items() if k.startswith("attn/"))
            assert attn == L * run[phase]["flops_attn_per_layer"], (key, phase)
    assert len(seen) == 12


APART = profile("symroof").replace(transcendentals="apart")


def _left_out(name: str, attention: str) -> dict[str, tuple]:
    """Row -> (executed, useful) FLOPs that transcendentals="apart" takes out of a training
    step of 2 sequences of 16 tokens."""
    from symroof.models.training import train_ops

    m = sr.model(name)
    mine, apart = (train_ops(m, 2, 16, attention=attention, conventions=c)
                   for c in ("symroof", APART))
    return {k: (mine[k].flops - apart[k].flops, mine[k].useful_flops - apart[k].useful_flops)
            for k in mine if mine[k].flops != apart[k].flops}


def test_transcendentals_apart_reaches_the_elementwise_backwards():
    """Llama-3.1-8B (meta-llama/Llama-3.1-8B config.json: L 32, F 14336, V 128256), 32
    tokens: each backward leaves out the exp, sqrt or log it evaluates, as its forward."""
    out = _left_out("llama-3.1-8b", "naive")
    assert out["bwd/mlp/swiglu"] == (32 * 32 * 14336,) * 2  # silu': the sigmoid's exp
    assert out["bwd/attn_norm"] == out["bwd/mlp_norm"] == (32 * 32,) * 2  # a sqrt a row
    assert out["bwd/final_norm"] == (32,) * 2
    assert out["bwd/loss"] == (32 * 128256,) * 2  # softmax - onehot: an exp a logit
    assert out["fwd/loss"] == (32 * (128256 + 1),) * 2  # and the forward's log a row
    assert out["fwd/mlp/swiglu"] == out["bwd/mlp/swiglu"]  # the forward's, as before
    # no transcendental in the matmuls' gradients or a softmax backward without a softcap
    assert not any(k.endswith(("/dx", "/dw")) or k == "bwd/attn/softmax" for k in out)


@pytest.mark.parametrize("attention", ["naive", "fused"])
def test_transcendentals_apart_reaches_the_softcapped_attention_backward(attention):
    """Gemma-2-9B (google/gemma-2-9b config.json: L 42, H 16, GELU-tanh, attention logits
    softcapped): the naive softmax backward recomputes one tanh a score (all 16 x 16
    executed, the 16 x 17 / 2 causal ones useful), FlashAttention's backward one exp and
    one tanh a causal pair, geglu' one tanh an element (F 14336)."""
    out = _left_out("gemma-2-9b", attention)
    pairs, causal = 42 * 2 * 16 * 16 * 16, 42 * 2 * 16 * 16 * 17 // 2
    if attention == "naive":
        assert out["bwd/attn/softmax"] == (pairs, causal)
    else:
        assert out["bwd/attn/core"] == (2 * causal, 2 * causal)
    assert out["bwd/mlp/geglu"] == (42 * 32 * 14336,) * 2


def test_each_backward_op_leaves_out_its_own_transcendentals():
    """The backward ops one by one, over N elements (rows of N for the norms, N x N for the
    softmax): what each evaluates of exp, tanh, erf or sqrt, as the math has it."""
    from symroof.conventions import using
    from symroof.models import backward as bw
    from symroof.models import backward_dense as bd
    from symroof.symbols import N

    ops = {  # op -> transcendentals in it
        "swiglu": (lambda: bw.swiglu_backward(N), N),  # the sigmoid's exp
        "rmsnorm": (lambda: bw.rmsnorm_backward(N, 8), N),  # a sqrt a row
        "layernorm": (lambda: bd.layernorm_backward(N, 8), N),
        "gelu": (lambda: bd.activation_backward("gelu", gated=False, n=N), 2 * N),  # erf, exp
        "gelu_tanh": (lambda: bd.activation_backward("gelu_tanh", gated=True, n=N), N),
        "softmax": (lambda: bw.softmax_backward(N, N), 0),  # p is saved: none
        "softcapped softmax": (lambda: bw.softmax_backward(N, N, softcap=True), N * N),
        "cross_entropy_backward": (lambda: bw.cross_entropy_backward(N, 8), 8 * N),
    }
    for name, (op, n) in ops.items():
        mine = op()
        with using(APART):
            apart = op()
        assert sp.expand(mine.flops - apart.flops - n) == 0, name
