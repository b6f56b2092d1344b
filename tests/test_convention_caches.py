"""Caches keyed by the conventions record: a result computed under one profile is never
returned under another, and a plan keeps the record it was built under.

Each test computes under "symroof", then under another record, and checks the second answer
against the same quantity built without the cache (the record passed straight to the
uncached builder), then that the first answer is unchanged afterwards.
"""

import pytest
import sympy as sp

import symroof as sr
from symroof.conventions import profile, using
from symroof.models.sweep import sweep_step_time
from symroof.parallel import serving_2d
from symroof.parallel.sizing import latency_throughput

LLAMA = sr.model("llama-3.1-8b")


def test_sweep_step_time_reads_the_conventions_it_is_given():
    chip = sr.chip("h100")
    at = {"batch": 1, "context": 2048, "new_tokens": 2048}  # a prefill: attention pairs count
    mine = float(sweep_step_time(LLAMA, chip, **at)["lower"])
    viewer = float(sweep_step_time(LLAMA, chip, **at, conventions="llm-viewer")["lower"])
    step = sr.Step(1, 2048)
    direct = sr.step_time(LLAMA, chip, step, conventions="llm-viewer").whole.lower
    assert viewer == float(direct)
    assert viewer != mine  # all T x S pairs counted: more FLOPs than the causal ones
    with using("llm-viewer"):  # the record in force is the default
        assert float(sweep_step_time(LLAMA, chip, **at)["lower"]) == viewer
    assert float(sweep_step_time(LLAMA, chip, **at)["lower"]) == mine
    assert mine == float(sr.step_time(LLAMA, chip, step).whole.lower)


def test_latency_curve_reads_the_conventions_it_is_given():
    mesh = sr.mesh("tpu-v5e", "4x8")
    model = sr.model("llama-3.1-70b")
    args = {"context": 8192, "batches": [64]}
    mine = float(latency_throughput(model, mesh, **args)["upper"][0])
    book = float(latency_throughput(model, mesh, **args, conventions="book")["upper"][0])
    plan = sr.serve(model, mesh, batch=64, context=8192, conventions="book")
    assert book == pytest.approx(float(plan.time.upper), rel=1e-12)  # float vs exact
    assert book > mine  # the book's rings drop (N - 1)/N: slower collectives, no overlap
    assert float(latency_throughput(model, mesh, **args)["upper"][0]) == mine


def test_serve_keeps_its_conventions():
    mesh = sr.mesh("tpu-v5e", "4x8")
    mine = sr.serve("llama-3.1-70b", mesh, batch=64, context=8192)
    book = sr.serve("llama-3.1-70b", mesh, batch=64, context=8192, conventions="book")
    with using("book"):
        in_force = sr.serve("llama-3.1-70b", mesh, batch=64, context=8192)
        read_later = mine.time  # a plan's time is its own record's, not the one in force
    assert book.conventions == profile("book") == in_force.conventions
    assert mine.conventions == profile("symroof")
    assert book.rows == in_force.rows
    assert book.rows["comm/mlp_allreduce"].net_time > mine.rows["comm/mlp_allreduce"].net_time
    assert read_later == mine.time
    assert str(book).splitlines()[0].endswith("KV bf16, conventions: book:")
    assert str(mine).splitlines()[0].endswith("KV bf16:")
    # time_flops decides the FLOPs a plan's time reads: executed ones exceed useful ones
    executed = sr.serve("llama-3.1-70b", mesh, batch=64, context=8192,
                        conventions=profile("symroof").replace(time_flops="executed"))
    assert executed.time.t_math == executed.cost.flops / mesh.chip.peak("bf16")
    assert mine.time.t_math == mine.cost.useful_flops / mesh.chip.peak("bf16")


def test_ici_threshold_is_cached_per_conventions_record():
    plan = sr.serve("llama-3.1-70b", sr.mesh("tpu-v5e", "4x8"), batch=64, context=8192)
    serving_2d._ici_threshold.cache_clear()
    first = plan.conditions["ici"].threshold
    with using("book"):
        serving_2d.ici_condition(plan)
    info = serving_2d._ici_threshold.cache_info()
    assert (info.misses, info.currsize) == (2, 2)  # one entry per record, none shared
    # F/(B beta) = 28672 / (64 x 8.2e11 / 9e10) (book ch. 7; v5e spec sheet figures)
    assert first == sp.Rational(28672) / (64 * sp.Rational(820 * 10**9, 9 * 10**10))


def test_compiled_table_and_its_disk_copy_are_kept_per_record(monkeypatch, tmp_path):
    from symroof.models import compiled

    monkeypatch.setenv("SYMROOF_CACHE", str(tmp_path))
    tiny, chip = sr.model("tiny"), sr.chip("h100")
    mac = profile("symroof").replace(flops_per_mac=1)  # a MAC counter's FLOPs

    def q_flops(conventions):
        compiled.compiled_table.cache_clear()  # from the disk copy, not this process's
        compiled._fields_source.cache_clear()
        rows, _ = compiled.compiled_table(tiny, chip, conventions=conventions)(2, 1, 8)
        return rows["attn/q_proj"].flops

    macs = 2 * 2 * 1 * 64 * 8 * 8  # q_proj of tiny: L B T D H d_h (L=2, B=2, T=1, D=64, ...)
    assert q_flops(profile("symroof")) == 2 * macs
    assert q_flops(mac) == 1 * macs  # one FLOP a MAC: half
    assert len(list(tmp_path.glob("table-*.json"))) == 2  # one file per record
    assert q_flops(profile("symroof")) == 2 * macs  # read back, unchanged


def _json(capsys, argv):
    from symroof.surfaces.cli import main

    assert main([*argv, "--format", "json"]) == 0
    import json

    return json.loads(capsys.readouterr().out)


MESH_STEP = ["--model", "llama-3.1-70b", "--mesh", "tpu-v5e:4x8", "--context", "8192"]


def test_serve_report_and_solve_on_a_mesh_take_conventions(capsys):
    serve = [[*MESH_STEP, "--batch", "64"], ["--conventions", "book"]]
    mine, book = (_json(capsys, ["serve", *serve[0], *extra]) for extra in ([], serve[1]))
    assert book["conventions"]["name"] == "book" and mine["conventions"]["name"] == "symroof"
    plan = sr.serve("llama-3.1-70b", sr.mesh("tpu-v5e", "4x8"), batch=64, context=8192,
                    conventions="book")
    assert book["t_net_s"] == float(plan.time.t_net) != mine["t_net_s"]
    report = _json(capsys, ["report", "--phase", "decode", *serve[0], *serve[1]])
    assert report["conventions"]["name"] == "book"
    assert report["upper_s"] == pytest.approx(book["upper_s"], rel=1e-12)  # one plan's rows
    ring = ["solve", "t_mem = t_net", "--for", "batch", *MESH_STEP]
    exact, books = (_json(capsys, [*ring, *extra])
                    for extra in ([], ["--convention", "ring_factor=book"]))
    assert books["title"].endswith(", conventions: symroof, ring_factor=book")
    assert books["conventions"]["changed"] == ["ring_factor"]
    assert sp.sympify(books["rhs"]) != sp.sympify(exact["rhs"])  # the rings' (N - 1)/N gone


def test_serve_title_names_a_profile_other_than_symroofs(capsys):
    from symroof.surfaces.cli import main

    argv = ["serve", *MESH_STEP, "--batch", "64"]
    for extra, tail in (([], "bf16 peak"), (["--conventions", "book"], "conventions: book")):
        assert main([*argv, *extra]) == 0
        assert capsys.readouterr().out.splitlines()[0].endswith(tail)


def test_latency_throughput_plot_draws_the_curve_of_its_conventions():
    import matplotlib.pyplot as plt
    import numpy as np

    from symroof.plots import latency_throughput_plot

    mesh, args = sr.mesh("tpu-v5e", "4x8"), {"context": 8192, "batches": [64]}
    fig = latency_throughput_plot("llama-3.1-70b", [mesh], **args, conventions="llm-viewer")
    ax = fig.axes[0]
    assert ax.get_title().endswith("along each curve, conventions: llm-viewer")
    drawn = ax.lines[0].get_ydata()  # ms
    plt.close(fig)
    for cv, shown in (("llm-viewer", True), ("symroof", False)):  # its K, V re-reads: slower
        ms = latency_throughput("llama-3.1-70b", mesh, **args, conventions=cv)["latency"] * 1e3
        assert bool(np.isclose(drawn, ms[0], rtol=1e-12).any()) == shown, cv


def test_a_training_step_reads_the_flops_time_flops_names():
    """``time_flops`` decides training times as it does serving ones, in ``train_plan`` and in
    the search's template alike (before, training times always read executed FLOPs)."""
    mesh, step = sr.mesh("h100", {"X": 8}), sr.TrainStep(8, 4096)
    executed = profile("symroof").replace(time_flops="executed")
    peak = mesh.chip.peak("bf16")
    for conventions, field in ((None, "useful_flops"), (executed, "flops")):
        plan = sr.train_plan(LLAMA, mesh, "fsdp", step=step, conventions=conventions)
        for p, t in plan.time.items():
            assert t.t_math == getattr(plan.step[f"{p}/compute"], field) / peak
        with using(conventions):
            found = sr.strategy_search(LLAMA, mesh, batch_tokens=step.tokens, seq=step.seq,
                                       strategies=("fsdp",))
        assert found.lower[0, 0] == pytest.approx(float(plan.lower), rel=1e-12)
    assert plan.lower > sr.train_plan(LLAMA, mesh, "fsdp", step=step).lower  # causal: useful < all
