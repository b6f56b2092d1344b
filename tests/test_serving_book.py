"""Serving in the book's units: a model given as parameters and KV bytes per token, prefill
at an MFU, requests per second per chip, the decode ICI condition, the book's form of the
latency/throughput curve, FLOPs per dollar and the MFU of a run.

Book numbers from "How to Scale Your Model" (scaling-book commit 0819a7d, Feb 2025):
tpus.md (ch. 2), inference.md (ch. 7), applied-inference.md (ch. 8), applied-training.md
(ch. 6); each is named where it is used. Chip figures from the book's ch. 2 table."""

from __future__ import annotations

import json

import pytest
import sympy as sp

import symroof as sr
from symroof.parallel import latency_throughput
from symroof.symbols import B

V5E_4x4 = sr.mesh("tpu-v5e", "4x4")
PRICE = "book ch. 8, Google Cloud TPU pricing Feb 2025"


def test_params_over_a_mesh_is_the_books_weight_load():
    # ch. 2 question 1: 200e9 bf16 parameters over 32 v4p, "the load takes around 10ms"
    plan = sr.serve_params(200e9, sr.mesh("tpu-v4p", "2x4x4"))
    assert plan.time.t_mem == sp.Rational(400 * 10**9, 32 * 12 * 10**11)  # HBM 1.2e12 B/s
    assert round(float(plan.time.lower) * 1e3) == 10 and plan.bound == "memory"
    assert plan.max_batch == sp.oo and plan.conditions == {}


def test_pop_quiz_from_parameters_and_kv_bytes():
    # ch. 7 pop quiz: 30e9 int8 parameters, 100 kB of KV a token, 8192 tokens, v5e 4x4:
    # "at least ... 2.5 ms" at batch 4, "roughly ... 21ms" at 256 (the general form)
    def quiz(batch):
        return sr.serve_params(30e9, V5E_4x4, batch=batch, context=8192,
                               kv_bytes_per_token=100e3, weights="int8", kv="int8")

    assert round(float(quiz(4).time.lower) * 1e3, 1) == 2.5
    assert round(float(quiz(256).book_time) * 1e3) == 21
    # floor((N HBM - P_bytes) / (S KV_tok)): 16 x 16e9 - 30e9 over 8192 x 1e5
    assert quiz(4).max_batch == (16 * 16 * 10**9 - 30 * 10**9) // (8192 * 10**5)


def test_requests_per_second_per_chip():
    plan = sr.serve("llama-3.1-70b", V5E_4x4, batch=42, context=8192)
    # ch. 8: "43 / (0.019 * 512 * 16) = 0.27" requests/s per chip; at 42 sequences the
    # general form's step gives 0.265
    assert round(float(plan.requests_per_s_per_chip(512, form="book")), 3) == 0.265
    assert plan.requests_per_s_per_chip(512) == plan.tokens_per_s_per_chip / 512
    with pytest.raises(ValueError, match="form must be 'plan' or 'book', got 'median'"):
        plan.requests_per_s_per_chip(512, form="median")
    with pytest.raises(ValueError, match="tokens must be a positive integer"):
        plan.requests_per_s_per_chip(0)


def test_prefill_at_an_mfu():
    # ch. 8: "2 * 70e9 * 8192 / (16 * 1.97e14 * 0.4) = 0.91s"
    assert round(float(sr.prefill(70e9, V5E_4x4, prompt=8192, mfu=0.4).book_time), 2) == 0.91
    p = sr.prefill("llama-3.1-70b", V5E_4x4, prompt=8192, mfu=0.4)
    assert round(float(p.book_time), 2) == 0.92  # 70.6e9 parameters, not 70e9
    assert p.time.bound == "compute"  # ch. 7: prefill matmuls are compute-bound
    assert p.seconds == p.time.t_math / sp.Rational(2, 5)
    assert p.seconds > p.book_time  # the counted FLOPs add attention's
    with pytest.raises(ValueError, match=r"mfu must be in \(0, 1\], got 1.5"):
        sr.prefill("llama-3.1-8b", V5E_4x4, prompt=128, mfu=1.5)


def test_decode_ici_condition_is_the_books_f_over_b_beta():
    # ch. 7: Y > F / (B beta), beta = W_hbm / W_ici; v5e: 8.2e11 over 9e10 (bidi)
    plan = sr.serve("llama-3.1-70b", sr.mesh("tpu-v5e", "4x8"), batch=64, context=8192)
    c = plan.conditions["ici"]
    assert c.threshold == sp.Rational(28672 * 9 * 10**10, 64 * 82 * 10**10)
    assert int(c.threshold) == 49 and c.holds  # 32 chips stay HBM-bound
    sym = sr.serve("llama-3.1-8b", sr.mesh("tpu-v5e", "2x2"), batch=B, context=4096)
    assert sym.conditions["ici"].threshold == sp.Rational(14336 * 9, 82) / B
    assert sr.latex(c, exact=True) == r"Y < \frac{2016}{41}" and sr.latex(c) == "Y < 49.2"


def test_latency_throughput_in_the_books_form():
    curve = latency_throughput("llama-3.1-70b", V5E_4x4, context=8192, batches=[1, 138],
                                  weights="int8", kv="int8", form="book")
    # ch. 8: "from 5.5ms with low batch size to 20 ms with very large batches"
    assert [round(float(t) * 1e3, 1) for t in curve["latency"]] == [5.5, 20.2]
    assert int(curve["max_batch"]) == 138
    with pytest.raises(ValueError, match="form must be 'plan' or 'book'"):
        latency_throughput("llama-3.1-8b", V5E_4x4, context=8, batches=[1], form="x")


def test_flops_per_dollar_and_mfu():
    # ch. 8 (Feb 2025 prices): v5e $1.2 an hour; 1.97e14 x 3600 / 1.2 = 5.9e17 FLOPs/$
    assert round(float(sr.flops_per_dollar("tpu-v5e", 1.2, PRICE)) / 1e17, 1) == 5.9
    with pytest.raises(ValueError, match="a price needs its source"):
        sr.flops_per_dollar("tpu-v5e", 1.2, "")
    run = sr.training_run("llama-3.1-70b", 15 * 10**12, "tpu-v5p", chips=8960,
                          mfu=sp.Rational(2, 5))
    assert sr.mfu(run, 8960 * run.seconds / 3600) == sp.Rational(2, 5)  # the inverse
    # ch. 6: "6.3e24 / (8960 * 4.59e14 * 0.4) = 3.8e6 seconds": 40% back from 3.8e6 s
    assert round(float(sr.mfu(run, 8960 * 3.8e6 / 3600)), 1) == 0.4
    with pytest.raises(ValueError, match="chip_hours must be positive, got -1"):
        sr.mfu(run, -1)
    with pytest.raises(TypeError, match="mfu\\(\\) takes a TrainingRun"):
        sr.mfu(6e24, 10)


def test_the_workload_as_a_step():
    step = sr.serve_params(30e9, V5E_4x4, sr.Step(4, context=8192), kv_bytes_per_token=100e3,
                           weights="int8", kv="int8")
    kw = sr.serve_params(30e9, V5E_4x4, batch=4, context=8192, kv_bytes_per_token=100e3,
                         weights="int8", kv="int8")
    assert step.time.lower == kw.time.lower
    with pytest.raises(ValueError, match="1 new token per sequence.*for a prompt use sr.prefill"):
        sr.serve_params(30e9, V5E_4x4, sr.Step(1, new_tokens=512))
    with pytest.raises(ValueError, match="give a Step or batch= and prompt=, not both"):
        sr.prefill("llama-3.1-8b", V5E_4x4, sr.Step(1, new_tokens=512), prompt=512)
    with pytest.raises(ValueError, match=r"needs a Step \(sr.Step\(batch, new_tokens=T\)\)"):
        sr.prefill("llama-3.1-8b", V5E_4x4)
    # a prompt after a cached prefix attends to more: more FLOPs than the prompt alone
    cold = sr.prefill("llama-3.1-8b", V5E_4x4, sr.Step(1, new_tokens=512))
    warm = sr.prefill("llama-3.1-8b", V5E_4x4, sr.Step(1, new_tokens=512, cached=4096))
    assert warm.seconds > cold.seconds and warm.book_time == cold.book_time


def test_params_and_a_full_model_give_one_book_time():
    m = sr.model("llama-3.1-8b")
    full = sr.serve(m, V5E_4x4, batch=16, context=4096)
    bare = sr.serve_params(m.params, V5E_4x4, batch=16, context=4096,
                           kv_bytes_per_token=m.kv_bytes_per_token)
    # a bare model reads exactly what each chip holds: its weights and KV cache
    assert bare.time.t_mem == full.hbm_used / V5E_4x4.chip.hbm_bw
    assert bare.hbm_used == full.hbm_used and bare.max_batch == full.max_batch


@pytest.mark.parametrize("call, message", [
    (lambda: sr.prefill({}, V5E_4x4, prompt=8), "takes a Transformer, a preset name or a "
                                                "parameter count, got {}"),
    (lambda: sr.serve_params(-1, V5E_4x4), r"params must be positive, got -1"),
    (lambda: sr.serve_params(1e9, "tpu-v5e"), r"takes a Mesh \(sr.mesh\(chip, '4x4'\)\)"),
    (lambda: sr.max_params("tpu-v5p", chips=0), "chips must be a positive integer"),
])
def test_bad_input_names_it(call, message):
    with pytest.raises((ValueError, TypeError), match=message):
        call()


def test_params_plan_is_the_books_formulas_symbolically():
    from symroof.symbols import C, S, W, X

    P, KV = sp.Symbol("P", positive=True), sp.Symbol("KV_tok", positive=True)
    ring = sr.mesh(sr.symbolic_chip(), {"X": X})
    plan = sr.serve_params(P, ring, batch=B, context=S, kv_bytes_per_token=KV)
    # ch. 7: T_min = (B KV_seq + P_bytes) / W_tot; the general form beside it
    assert sp.simplify(plan.time.t_mem - (B * S * KV + 2 * P) / (X * W)) == 0
    assert sp.simplify(plan.book_time - (B * S * KV / (X * W)
                                         + sp.Max(2 * B * P / (X * C), 2 * P / (X * W)))) == 0
    mfu = sp.Symbol("u", positive=True)  # ch. 7: prefill 2 P T / (N C MFU)
    assert sr.prefill(P, ring, prompt=S, batch=B, mfu=mfu).seconds == 2 * B * P * S / (
        X * C * mfu)


def test_a_mesh_axis_of_one_chip_has_no_layout_condition():
    # one H100 node written as {"N": 1, "G": 8}: the 2-D layout needs two axes that carry
    # traffic (this used to fail in crossover); the ICI condition reads W_GPU on a GPU node
    plan = sr.serve("llama-3.1-8b", sr.mesh("h100", {"N": 1, "G": 8}), batch=8, context=4096)
    assert list(plan.conditions) == ["ici"]
    on_tpu = sr.serve("llama-3.1-8b", sr.mesh("tpu-v5e", {"X": 1, "Y": 8}, custom=True), batch=8,
                      context=4096)
    assert list(on_tpu.conditions) == ["ici"]


def test_shard_matmul_takes_numbers_on_a_ring_of_symbolic_size():
    # sizes that are numbers on an axis that is a symbol: divisibility cannot be decided,
    # so it is not refused (it used to fail: 'D = 8192 does not divide over ... (Y devices)')
    from symroof.symbols import Y

    ring = sr.mesh(sr.symbolic_chip(), {"Y": Y})
    mm = sr.shard_matmul(ring, "X[B, D_Y] @ W[D, F_Y] -> [B, F_Y]", strategy="gather",
                         B=64, D=8192, F=28672)
    assert mm.compute.weight_bytes == 2 * 8192 * 28672 / Y
    with pytest.raises(ValueError, match="D = 8192 does not divide"):
        sr.shard_matmul(sr.mesh(sr.symbolic_chip(), {"Y": 3}),
                        "X[B, D_Y] @ W[D, F_Y] -> [B, F_Y]", B=64, D=8192, F=28672)


def test_serve_command_prints_requests_per_chip(capsys):
    from symroof.surfaces.cli import main

    argv = ["serve", "--model", "llama-3.1-70b", "--mesh", "tpu-v5e:4x4", "--batch", "42",
            "--context", "8k", "--generated", "512"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    plan = sr.serve("llama-3.1-70b", V5E_4x4, batch=42, context=8192)
    q, book = (float(plan.requests_per_s_per_chip(512, form=f)) for f in ("plan", "book"))
    assert f"{q:.3g} requests/s per chip at 512 generated tokens each ({book:.3g} from" in text
    assert main([*argv, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["requests_per_s_per_chip"] == q
