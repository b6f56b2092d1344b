"""What a plan refuses, warns and suggests, tested with numbers from outside the code: a
serve split wider than the heads, MLA's latent cache, latency-bound collectives, the nearest
batches that divide, pipeline sends, and the search agreeing with train_plan on which splits
divide the batch."""

import contextlib
import io
import math
from fractions import Fraction

import pytest

import symroof as sr
from symroof.parallel.strategies import BatchSplitError
from symroof.surfaces.cli import main


def cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(args))
    return status, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("shape, warns", [("4x8", False), ("8x8", True), ("16x16", True)])
def test_serve_warns_where_attention_is_split_past_the_query_heads(shape, warns):
    # Llama-3.1-8B has 32 query heads (its config.json: num_attention_heads = 32)
    plan = sr.serve("llama-3.1-8b", sr.mesh("tpu-v5e", shape), batch=32, context=8192)
    chips = math.prod(int(s) for s in shape.split("x"))
    assert bool(plan.warnings) is warns
    if warns:
        assert f"attention split {chips} ways over llama-3.1-8b's 32 query heads" in \
            plan.warnings[0]
        status, out, _ = cli("serve", "--model", "llama-3.1-8b", "--mesh", f"tpu-v5e:{shape}",
                             "--batch", "32", "--context", "8k")
        assert status == 0 and "\n  warning: attention split" in out


def test_mla_latent_cache_splits_over_the_batch_only():
    # DeepSeek-V3 caches one latent of kv_lora_rank 512 + rope 64 per token and layer
    # (its config.json), shared by all 128 heads: no head split
    m = sr.model("deepseek-v3")
    assert m.kv_bytes_per_token == 61 * (512 + 64) * 2
    for batch in (4, 16):
        plan = sr.serve(m, sr.mesh("tpu-v5p", "2x2x2"), batch=batch, context=1024)
        assert plan.memory["kv"] == batch * m.kv_cache_bytes(1024) / min(8, batch)
    status, out, _ = cli("serve", "--model", "deepseek-v3", "--mesh", "tpu-v5p:2x2x2",
                         "--batch", "4", "--context", "1k", "--weights", "int8")
    assert "KV cache (MLA's latent cache, shared by all heads) over the batch (4 ways)" in out
    assert "KV heads" not in out


def test_serve_collectives_on_the_latency_floor_say_so():
    # Llama-3.1-70B, batch 32 on a v5e 4x4 (no wraparound below 16): each AllReduce of the
    # [32, 8192] bf16 activations is 2 x (3 + 3) hops of the book's 1 us (ch. 3: X - 1 hops
    # without wraparound, axes added, AllReduce twice) = 12 us, far above its bandwidth
    # term; 80 layers: 960 us
    plan = sr.serve("llama-3.1-70b", sr.mesh("tpu-v5e", "4x4"), batch=32, context=8192)
    for key in ("comm/attn_allreduce", "comm/mlp_allreduce"):
        assert plan.rows[key].net_time == 80 * 12 * Fraction(1, 10**6)
        assert plan.bounds[key] == "latency"
    _, out, _ = cli("serve", "--model", "llama-3.1-70b", "--mesh", "tpu-v5e:4x4", "--batch",
                    "32", "--context", "8k")
    assert "attn_allreduce: 78.6 MB sent per chip, 960 us (all 80 layers, latency-bound)" in out
    big = sr.serve("llama-3.1-70b", sr.mesh("tpu-v5e", "4x4"), batch=4096, context=1024)
    assert big.bounds["comm/mlp_allreduce"] == "bandwidth"  # 64 MB a layer: V/W wins


def test_nearest_batches_that_divide():
    # 1,024 sequences of 4,096 over 560 data shards (20 x 28): 560 = 2^4 x 35 and
    # 4096 = 2^12, so a batch of s sequences divides iff 35 | s: 1,015 = 29 x 35 below,
    # 1,050 = 30 x 35 above
    err = BatchSplitError(2**22, 4096, 560, 1)
    assert (err.below, err.above) == (1015 * 4096, 1050 * 4096)
    with pytest.raises(BatchSplitError):
        sr.train_plan("llama-3.1-70b", sr.mesh("tpu-v5p", "16x20x28"), "fsdp+tp",
                      batch_tokens=2**22, fsdp="YZ", tp="X")
    status, out, err_text = cli("train", "--model", "llama-3.1-70b", "--mesh",
                                "tpu-v5p:16x20x28", "--tokens", "4M", "--strategy", "fsdp+tp",
                                "--fsdp", "YZ", "--tp", "X")
    assert status == 2 and out == ""
    assert err_text == (
        "symroof: error: --tokens 4,194,304 (1,024 sequences of --seq 4096) does not "
        "divide over 560 data shards (--fsdp YZ (20 x 28)); the nearest that do: --tokens "
        "4157440 (1,015 sequences) or --tokens 4300800 (1,050 sequences)\n")
    plan = sr.train_plan("llama-3.1-70b", sr.mesh("tpu-v5p", "16x20x28"), "fsdp+tp",
                         batch_tokens=1015 * 4096, fsdp="YZ", tp="X")
    assert plan.degrees["fsdp"] == 560


@pytest.mark.parametrize("microbatches", [1, 8])
def test_pipeline_sends_on_the_critical_path(microbatches):
    # book ch. 5 (pipelining): N_mb + N_stages - 2 hops on the critical path, each of one
    # microbatch's [tokens / m, D] bf16 activations (Llama-3.1-8B: D = 4096)
    Z, tokens = 8, 2**20
    plan = sr.train_plan("llama-3.1-8b", sr.mesh("h100", "8"), "pp", batch_tokens=tokens,
                         microbatches=microbatches)
    row = plan.step["forward/pp/send activations"]
    assert row.net_bytes == (microbatches + Z - 2) * (tokens // microbatches) * 4096 * 2


def test_search_and_train_plan_agree_on_which_splits_divide():
    # seq = 1000 tokens, 2 sequences: 2,000 tokens; a pipeline's data shards times its
    # microbatches (4 x stages) must divide them, which no power of two above 16 does
    model, mesh = sr.model("llama-3.1-8b"), sr.mesh("tpu-v5p", "2x2x2")
    res = sr.strategy_search(model, mesh, batch_tokens=2000, seq=1000,
                             strategies=["zero1+pp", "dp"], remat="full")
    for j, c in enumerate(res.candidates):
        axes = {r: a for r, a in c.axes.items() if a}
        try:
            plan = sr.train_plan(model, mesh, c.strategy, batch_tokens=2000, seq=1000,
                                 microbatches=c.microbatches if c.axes["pp"] else None,
                                 **axes)
        except BatchSplitError:
            assert math.isinf(res.lower[0, j]), c
            continue
        assert math.isfinite(res.lower[0, j]) is bool(plan.fits), c


def test_fractional_widths_in_json():
    status, out, _ = cli("critical-batch", "--chip", "h100", "--x-bytes", "int4", "--w-bytes",
                         "0.5", "--format", "json")
    assert status == 0 and '"x_bytes": 0.5' in out and '"w_bytes": 0.5' in out


def test_a_serve_plan_with_a_symbolic_batch_prints():
    from symroof.symbols import B

    # largest batch: (16 x 16e9 B - 8,030,261,248 x 2 B of weights) over 8192 tokens of
    # 2 x 32 x 8 x 128 x 2 B of K and V each = 223.46
    text = str(sr.serve("llama-3.1-8b", sr.mesh("tpu-v5e", "4x4"), batch=B, context=8192))
    assert "batch B" in text and "tokens/s per chip = " in text and "largest batch 223" in text


def test_report_on_a_mesh_carries_the_same_warning():
    status, out, _ = cli("report", "--model", "llama-3.1-8b", "--mesh", "tpu-v5e:8x8",
                         "--phase", "decode", "--batch", "32", "--context", "8k")
    assert status == 0
    assert "warning: attention split 64 ways over llama-3.1-8b's 32 query heads" in out


def _train_json(*args: str) -> dict:
    status, out, err = cli("train", *args, "--format", "json")
    assert status == 0, err
    import json

    return json.loads(out)


def test_train_names_the_narrower_optimizer_state_that_fits():
    # Mistral-7B has 7,241,732,096 parameters (its released config); an H100 SXM holds
    # 80 GB (NVIDIA's sheet): plain data parallelism keeps the whole training state on each
    # chip, 12 bytes a parameter (bf16 gradients, fp32 moments) is 86.9 GB, too much; the
    # book's 10 bytes a parameter (no gradients kept) is 72.4 GB, which leaves room
    P, hbm = 7_241_732_096, 80 * 10**9
    assert 12 * P > hbm > 10 * P
    flags = ("--model", "mistral-7b", "--mesh", "h100:8", "--batch", "8", "--strategy", "dp")
    out = _train_json(*flags)
    assert out["chosen"] is None
    assert out["excluded"][0]["fix"] == "fits with --convention optimizer_bytes=10"
    assert "on these 8 chips, --convention optimizer_bytes=10 fits: dp" in out["answer"]
    from symroof.conventions import profile, using

    for width in (18, 16, 12, 10):  # each the API's answer under that width
        with using(profile("symroof").replace(optimizer_bytes=width)):
            need = sr.min_training_slice("mistral-7b", "h100", batch_tokens=8 * 4096)
        assert out["slices_by_optimizer_bytes"][str(width)] == need.slice
    again = _train_json(*flags, "--convention", "optimizer_bytes=10")
    assert again["chosen"]["strategy"] == "dp" and again["nearby"] == {}


def test_each_rejected_strategy_names_a_change_that_gives_it_a_plan():
    # Qwen3-0.6B: 16 query heads, 28 layers (its released config); 3 sequences of 1,000
    # tokens on a v5e 4x8 (32 chips): 3,000 tokens do not divide over 32 data shards
    # (lcm(32, 1000) = 4,000 do; under zero1+pp, fsdp X (4) x 4 microbatches a stage x 8
    # stages: lcm(128, 1000) = 16,000); TP over all 32 chips splits 16 heads 32 ways (a 4x4
    # slice's 16 do not)
    base = ("--model", "qwen3-0.6b", "--batch", "3", "--seq", "1000")
    out = _train_json(*base, "--mesh", "tpu-v5e:4x8")
    fixes = {e["strategy"]: (e["why"], e["fix"]) for e in out["excluded"]}
    assert fixes["zero3"] == (
        "no split that fits divides the batch of 3,000 tokens over its data shards",
        "a batch that divides: 4 sequences (--batch 4)")
    assert fixes["tp"] == ("every split that fits has TP wider than the 16 query heads",
                           "works on a smaller slice: --mesh tpu-v5e:4x4")
    assert fixes["pp"][0] == "every split that fits has more pipeline stages than the 28 layers"
    assert out["chosen"] is not None and out["nearby"] == {}  # it divides: no uneven split
    changed = {"zero3": ("--mesh", "tpu-v5e:4x8", "--batch", "4"),
               "tp": ("--mesh", "tpu-v5e:4x4", "--batch", "3")}
    assert fixes["zero1+pp"][1] == "a batch that divides: 16 sequences (--batch 16)"
    for strategy, flags in changed.items():  # each change, made, gives that strategy a plan
        argv = [a for a in base if a not in ("--batch", "3")] + list(flags)
        again = _train_json(*argv, "--strategy", strategy)
        assert again["chosen"]["strategy"] == strategy, strategy


def test_train_does_not_fit_names_a_larger_slice_that_works():
    # the change named, made, gives the strategy a plan
    flags = ("--model", "llama-3.1-8b", "--tokens", "1M", "--strategy", "zero3")
    out = _train_json(*flags, "--mesh", "h100:8")
    assert out["excluded"][0]["fix"] == "fits on a larger slice: --mesh h100:16"
    assert _train_json(*flags, "--mesh", "h100:16")["chosen"]["strategy"] == "zero3"


def test_a_role_wider_than_the_model_names_the_flags_and_a_split_that_works():
    # Qwen3-0.6B has 16 query heads: --fsdp X on a v5p 4x4x8 leaves Y, Z (4 x 8 = 32) to TP
    flags = ("--model", "qwen3-0.6b", "--mesh", "tpu-v5p:4x4x8", "--batch", "32", "--seq",
             "1024", "--strategy", "fsdp+tp")
    status, out, err = cli("train", *flags, "--fsdp", "X")
    assert status == 2 and out == ""
    head, _, split = err.partition("; a split of fsdp+tp that works here: ")
    assert head == ("symroof: error: --fsdp X, tp on the axes left (Y, Z): tp degree 32 "
                    "exceeds qwen3-0.6b's 16 query heads (Megatron splits heads)")
    given = split.split()
    assert given[0::2] == ["--fsdp", "--tp"]
    assert _train_json(*flags, *given)["chosen"]["strategy"] == "fsdp+tp"


def test_a_batch_in_sequences_that_reads_as_tokens_says_so():
    # --batch counts sequences: 64k = 65,536 sequences of 1,024 tokens = 67,108,864 tokens;
    # the same number as --tokens is 65,536 / 1,024 = 64 sequences
    out = _train_json("--model", "tiny", "--mesh", "tpu-v5e:2x2", "--batch", "64k", "--seq",
                      "1024", "--strategy", "zero3")
    assert out["chosen"] is None
    assert out["answer"].endswith(
        "(--batch counts sequences: --batch 65,536 is 67,108,864 tokens of --seq 1024; "
        "--tokens 65536 would be 64 sequences)")


def test_a_split_error_names_the_batch_flag_the_user_typed():
    # --batch 1024 (sequences) is --tokens 4M: the same 560 shards, the same 1,015 and 1,050
    status, out, err = cli("train", "--model", "llama-3.1-70b", "--mesh", "tpu-v5p:16x20x28",
                           "--batch", "1024", "--strategy", "fsdp+tp", "--fsdp", "YZ",
                           "--tp", "X")
    assert status == 2 and out == ""
    assert err == ("symroof: error: --batch 1,024 (4,194,304 tokens of --seq 4096) does not "
                   "divide over 560 data shards (--fsdp YZ (20 x 28)); the nearest that do: "
                   "--batch 1015 or --batch 1050\n")
