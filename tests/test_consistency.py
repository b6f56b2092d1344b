"""One question, one answer: the same question asked through every surface that can answer
it (the command line's solve, report and serve; Python's crossover, serving plans, roofline
tables and step times) gets the same number, exactly where it is exact."""

import contextlib
import io
import json

import pytest
import sympy as sp

import symroof as sr
from symroof.surfaces.cli import main
from symroof.surfaces.solve import solve_step
from symroof.symbols import B

M70 = sr.model("llama-3.1-70b")
M8 = sr.model("llama-3.1-8b")
H100 = sr.chip("h100")


def cli_json(argv: str) -> dict:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv.split())
    assert status == 0, err.getvalue()
    return json.loads(out.getvalue())


def rows_time(model, step, chip):
    """The step's rows summed and timed by the one time rule (what the report totals)."""
    rows = model.ops(step, last_only=True, attention="fused")
    return sr.time(sum(rows.values(), sr.Cost()), chip, useful=True)


@pytest.mark.parametrize("context", [128, 1024])
def test_compute_bound_batch_of_a_decode_step_is_one_number(context):
    """The issue's case: Llama-3.1-70B decoding on H100s; before, solve said 323 (963 at
    context 1024) and a serving plan 498.8 (no root at 1024)."""
    t = rows_time(M70, sr.Step(B, context=context), H100)
    by_crossover = sr.crossover(t.t_math, t.t_mem, B)
    plan = sr.serve(M70, sr.mesh("h100", "1"), sr.Step(B, context=context))
    by_plan = plan.crossover("math", "mem", B)
    by_solve = solve_step("t_math = t_mem", "batch", M70, chip=H100, context=context).root
    cli = cli_json(f"solve t_math=t_mem --for batch --model llama-3.1-70b --chip h100 "
                   f"--context {context} --format json")
    assert by_crossover == by_plan == by_solve == sp.Rational(cli["root_exact"])
    # the report at the batches either side of the root: memory-bound below, compute above
    for batch, bound in ((int(by_solve), "memory"), (int(by_solve) + 1, "compute")):
        table = sr.roofline_table(M70, H100, sr.Step(batch, context=context))
        total = table.as_dict()["total"]
        assert total["t_math_s"] == pytest.approx(float(t.t_math.subs(B, batch)), rel=1e-12)
        assert total["t_mem_s"] == pytest.approx(float(t.t_mem.subs(B, batch)), rel=1e-12)
        assert ("compute" if total["t_math_s"] > total["t_mem_s"] else "memory") == bound


def test_on_eight_chips_solve_and_the_serving_plan_agree():
    """Eight chips is another question (norms and residuals repeat on every chip): solve
    --mesh asks it of the same serving plan."""
    plan = sr.serve(M70, sr.mesh("h100", "8"), sr.Step(B, context=128))
    cli = cli_json("solve t_math=t_mem --for batch --model llama-3.1-70b --mesh h100:8 "
                   "--context 128 --format json")
    assert plan.crossover("math", "mem", B) == sp.Rational(cli["root_exact"])
    # 498.8 while every row's activation bytes were divided by all the chips its operands
    # split over; each chip reads a replicated input (h[B, D] into q, k, v, gate, up) whole
    assert round(float(sp.Rational(cli["root_exact"])), 1) == 648.4


def test_prefill_per_op_and_whole_model_bounds_share_one_lm_head_rule():
    """Before: a per-op lower bound of 30 ms beside a whole-model bound of 32.2 ms (the
    lm_head on every prompt token in one, on the last in the other)."""
    step = sr.Step(1, new_tokens=2048)
    report = cli_json("report --model llama-3.1-8b --chip h100 --phase prefill --batch 1 "
                      "--context 2048 --format json")
    whole = sr.time(M8.whole(step, last_only=True), H100, useful=True)
    st = sr.step_time(M8, H100, step)
    assert st.whole.lower == whole.lower
    assert report["whole_model_lower_s"] == pytest.approx(float(whole.lower), rel=1e-12)
    totals = rows_time(M8, step, H100)
    assert report["lower_s"] == pytest.approx(float(totals.lower), rel=1e-12)
    # one rule: the whole-model bound (weights + KV only) is below the rows' totals, which
    # are below the per-op sum (unfused kernels one after another)
    assert float(whole.lower) <= report["lower_s"] <= report["per_op_sum_s"]
    assert report["per_op_sum_s"] == pytest.approx(float(st.per_op_sum), rel=1e-12)


def test_solve_reads_the_report_s_totals():
    """solve's quantities at numbers are the report's totals."""
    q = cli_json("solve t_lower=1/100 --for batch --model llama-3.1-8b --chip h100 "
                 "--context 4096 --format json")
    root = sp.Rational(q["root_exact"])
    t = rows_time(M8, sr.Step(B, context=4096), H100)
    assert t.lower.subs(B, root) == sp.Rational(1, 100)
    assert sr.crossover(t.lower, sp.Rational(1, 100), B) == root


def test_a_serving_plan_s_time_is_the_time_rule_of_its_rows():
    plan = sr.serve(M70, sr.mesh("tpu-v5e", "2x4"), sr.Step(32, context=4096), weights="int8")
    direct = sr.time(sum(plan.rows.values(), sr.Cost()), plan.mesh, useful=True, per_chip=True)
    assert (plan.time.lower, plan.time.upper) == (direct.lower, direct.upper)
    assert plan.tokens_per_s_per_chip == 32 / (plan.time.lower * 8)
    assert "per chip of tpu-v5e 2x4" in str(plan)


def test_a_whole_model_cost_on_a_mesh_is_refused_or_spread():
    """Before: sr.time(cost, mesh) timed a 70B int8 decode step on a v5e 2x4 with one chip's
    figures (137 ms, where the slice takes 17 ms)."""
    mesh = sr.mesh("tpu-v5e", "2x4")
    cost = M70.replace(w_bytes=1).whole(sr.Step(1, context=2048))
    with pytest.raises(ValueError, match="one chip's share or the whole work"):
        sr.time(cost, mesh)
    one = sr.time(cost, sr.chip("tpu-v5e"))
    spread = sr.time(cost, mesh, per_chip=False)
    assert spread.lower == one.lower / 8 and "spread evenly over 8 chips" in str(spread)
    # memory-bound: 70.6e9 int8 matmul weights at 8.2e11 B/s (the v5e sheet), 86 ms on one
    # chip, 10.7 ms over eight; the KV cache of one sequence at 2048 adds 0.16 ms to one chip
    assert round(float(one.lower) * 1e3) == 86 and round(float(spread.lower) * 1e3, 1) == 10.7


def test_the_workload_spellings_are_one_step():
    step = sr.Step(64, context=2048)
    assert M8.ops(step) == M8.ops(64, 1, 2047)
    assert M8.whole(step) == M8.whole(64, 1, 2047)
    assert sr.roofline_table(M8, H100, step).numbers == sr.roofline_table(
        M8, H100, batch=64, new_tokens=1, cached=2047).numbers
    train = sr.TrainStep.from_tokens(2**20, 4096)
    assert (train.sequences, train.tokens) == (256, 2**20)
    assert sr.train_ops(M8, train) == sr.train_ops(M8, 256, 4096)
    plan = sr.train_plan(M8, sr.mesh("tpu-v5p", "4x4x4"), "fsdp", step=train)
    assert plan == sr.train_plan(M8, sr.mesh("tpu-v5p", "4x4x4"), "fsdp", batch_tokens=2**20)


def test_batch_counts_sequences_on_every_command():
    """train's --batch counts sequences as report's and serve's do; --tokens is the book's
    B (the global batch in tokens)."""
    by_tokens = cli_json("train --model llama-3.1-8b --mesh tpu-v5p:4x4x4 --tokens 1M "
                         "--format json")
    by_sequences = cli_json("train --model llama-3.1-8b --mesh tpu-v5p:4x4x4 --batch 256 "
                            "--format json")
    assert by_tokens == by_sequences and by_tokens["query"]["batch_tokens"] == 2**20


def test_compare_conventions_from_the_command_line_is_the_python_answer():
    """symroof compare --conventions A,B and symroof conventions --diff A,B print what
    sr.compare_conventions finds."""
    step = "--model llama-3.1-8b --chip h100 --phase decode --batch 1 --context 2048"
    by_compare = cli_json(f"compare --conventions symroof,llm-viewer {step} --format json")
    by_diff = cli_json(f"conventions --diff symroof,llm-viewer {step} --format json")
    d = sr.compare_conventions(M8, H100, sr.Step(1, context=2048), "symroof", "llm-viewer")
    assert by_compare == by_diff == json.loads(json.dumps(d.as_dict()))
    assert d.explained


@pytest.mark.parametrize("remat", ["none", "full"])
def test_training_flops_of_one_step_are_one_number(remat):
    """One training step's FLOPs from ``train_ops``' rows (checked op by op by the NumPy
    twin), from a one-chip ``train_plan`` and from ``training_run``: one exact number.
    Before, the plan retyped B (2 P_active + 4 L H d_h seq) (every seq^2 pair) and the run
    counted 6 P tokens."""
    step = sr.TrainStep(8, 4096)
    total = sum(c.flops for c in sr.train_ops(M8, step, remat=remat).values())
    one = sr.train_plan(M8, sr.mesh("h100", {"X": 1}, custom=True), "dp", step=step,
                        remat=remat)
    assert one.flops == total
    if remat == "none":  # a run counts no recompute
        run = sr.training_run(M8, step.tokens, "h100", chips=1, mfu=1, seq=step.seq,
                              batch_tokens=step.tokens)
        assert run.flops == total


@pytest.mark.parametrize("profile", ["symroof", "book"])
def test_train_from_the_command_line_is_the_python_plan(profile):
    """``symroof train --conventions`` plans what ``sr.train_plan(conventions=...)`` plans:
    the same condition (the book's 850 = alpha/3 from its MLP block, book ch. 5, under
    "book") and the same step bounds."""
    data = cli_json(f"train --model llama-3.1-70b --mesh tpu-v5p:4x4x4 --tokens 1M "
                    f"--strategy fsdp --fsdp XYZ --conventions {profile} --format json")
    plan = sr.train_plan(M70, sr.mesh("tpu-v5p", "4x4x4"), "fsdp", batch_tokens=2**20,
                         seq=4096, conventions=profile)
    (row,) = data["strategies"]
    (fsdp,) = row["conditions"]
    assert fsdp["threshold_exact"] == str(plan.conditions["fsdp"].threshold)
    assert (fsdp["threshold_exact"] == "850") == (profile == "book")
    assert row["lower_s"] == float(plan.lower) and row["upper_s"] == float(plan.upper)
    assert data["query"]["conventions"]["name"] == profile
