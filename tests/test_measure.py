"""symroof.surfaces.measure at the tiny size: the structure of its result and the plot; no timings
are asserted (the machine's speed is what it measures)."""

from __future__ import annotations

import argparse
import math

import numpy as np
import pytest

from symroof.numeric import OP_KEYS
from symroof.surfaces.measure import SIZES, _Stopwatch, add_arguments, measure, run_cli


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = tmp_path_factory.mktemp("measure") / "roofline.png"
    return measure("tiny", repeats=1, plot=str(path))


def test_chip_record_of_the_measured_roofs(tiny):
    chip = tiny.chip
    assert sorted(chip.peaks) == ["fp32", "fp64"]
    for figure in (chip.peak("fp32"), chip.peak("fp64"), chip.hbm_bw):
        assert figure.is_Integer and figure > 0  # exact, as every chip record
    assert chip.sources["peaks.fp64"].startswith("measured by symroof.surfaces.measure (tiny)")
    assert "read + write" in chip.sources["hbm_bw"]
    assert tiny.t_call > 0


def test_every_op_of_the_model_is_timed_and_predicted(tiny):
    assert [op.key for op in tiny.ops] == [k for k in OP_KEYS if k in {o.key for o in tiny.ops}]
    assert {"attn/q_proj", "attn/softmax", "mlp/down", "lm_head"} <= {o.key for o in tiny.ops}
    for op in [*tiny.matmuls, *tiny.ops]:
        assert op.measured > 0 and op.t_overhead > 0
        assert op.predicted == op.roofline + op.t_overhead
        assert op.roofline == max(op.t_math, op.t_mem)
        assert math.isfinite(op.ratio) and op.bound in ("compute", "memory", "overhead")
    mm = {op.key: op for op in tiny.matmuls}
    assert set(mm) == {f"matmul {dt} n={n}" for dt in ("fp32", "fp64")
                       for n in SIZES["tiny"]["matmuls"]}
    op = mm["matmul fp64 n=128"]
    assert (op.flops, op.bytes) == (2 * 128**3, 3 * 128 * 128 * 8)  # float64: 8 B/element
    assert op.t_math == pytest.approx(op.flops / float(tiny.chip.peak("fp64")))


def test_forward_and_table(tiny):
    assert tiny.forward_measured > 0 and tiny.forward_overhead > 0
    assert tiny.forward_predicted == pytest.approx(
        sum(op.roofline for op in tiny.ops) + tiny.forward_overhead)
    table = tiny.table()
    for op in [*tiny.matmuls, *tiny.ops]:
        assert op.key in table
    assert "forward (uncounted)" in table
    assert "GFLOP/s" in tiny.roofs_text()


def test_plot_is_written(tiny):
    with open(tiny.plot_path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_cli_runs_at_tiny_size(tmp_path, capsys):
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--size", "tiny", "--out", str(tmp_path), "--repeats", "1"])
    assert run_cli(args) == 0
    out = capsys.readouterr().out  # from a child with the BLAS threads pinned before NumPy
    assert "roofs of this machine (tiny)" in out and "attn/softmax" in out
    assert "BLAS threads pinned to 1" in out
    assert "overhead" in out
    assert (tmp_path / "roofline_measured.png").exists()


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="size must be one of \\['mid', 'tiny'\\], got 'huge'"):
        measure("huge")
    with pytest.raises(ValueError, match="repeats must be a positive integer, got 0"):
        measure("tiny", repeats=0)


def test_stopwatch_times_each_scope_once():
    watch = _Stopwatch()
    with watch.op("a") as ops:
        ops.add(np.ones(2), 1.0)
    with watch.op("a"):
        pass
    assert set(watch.seconds) == {"a"} and watch.seconds["a"] > 0
    with pytest.raises(RuntimeError, match="opened inside 'b'"):
        with watch.op("b"):
            watch.op("c")


def test_plot_legend_names_the_sizes_it_timed(tiny):
    from symroof.plots.measured import measured_figure

    # (its labels' layout follows this machine's timings, so overlaps are not asserted here:
    # a loaded machine can crowd the points past every place a label may take)
    fig = measured_figure(tiny)
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    sizes = ", ".join(str(n) for n in SIZES["tiny"]["matmuls"])
    assert f"standalone fp64 matmuls (n = {sizes})" in legend  # the sizes it timed
