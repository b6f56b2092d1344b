"""The model and network plots: what they draw is checked against numbers computed here
independently, they save as PNG and SVG, labels do not overlap, and matplotlib loads only when
plotting."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import symroof as sr
from symroof.models import group
from symroof.plots import (
    attention_share_plot,
    collective_plot,
    ops_roofline_plot,
    sharded_matmul_plot,
    throughput_plot,
)

ROOT = Path(__file__).resolve().parents[1]
LLAMA, H100 = sr.model("llama-3.1-8b"), sr.chip("h100")


@pytest.fixture(scope="module")
def ops_fig():
    return ops_roofline_plot(LLAMA, H100, context=2048, prefill_batch=1, decode_batch=64)


@pytest.fixture(scope="module")
def tp_fig():
    return throughput_plot(LLAMA, H100, [1, 4, 16, 64, 256, 1024], context=2048)


def test_ops_roofline_places_both_phases_on_the_roof(ops_fig):
    ax = ops_fig.axes[0]
    prefill, decode = ax.collections[:2]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["h100 HBM roof (bf16)", "prefill: B=1, S=2048", "decode: B=64, S=2048"]
    # 8 groups, less the two with no FLOPs (embedding gather, KV write)
    assert len(prefill.get_offsets()) == len(decode.get_offsets()) == 6
    peak, bw = 989e12, 3.35e12
    for x, y in np.vstack([prefill.get_offsets(), decode.get_offsets()]):
        assert y == pytest.approx(min(peak, x * bw))
    # decode MLP at B = 64: 2*64*D*F*3*L FLOPs over 3*L*D*F*2 weight bytes + activations
    mlp = group(LLAMA.ops(64, 1, 2047, last_only=True, attention="fused"))["MLP"]
    assert float(mlp.intensity) == pytest.approx(62.7, abs=0.05)
    assert any(x == pytest.approx(float(mlp.intensity)) for x, _ in decode.get_offsets())
    assert "embedding (prefill), KV write (prefill)" in ops_fig.texts[0].get_text()


def test_ops_roofline_labels_do_not_overlap(ops_fig):
    ax = ops_fig.axes[0]
    renderer = ops_fig.canvas.get_renderer()
    names = "MLP", "norms", "attention core", "LM head"
    boxes = [t.get_window_extent(renderer) for t in ax.texts if any(n in t.get_text()
                                                                    for n in names)]
    assert len(boxes) >= 4
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])


def test_ops_roofline_per_row(tmp_path):
    fig = ops_roofline_plot("tiny", sr.chip("tpu-v5e"), context=16, groups=False,
                            attention="naive", path=tmp_path / "rows.svg")
    names = "\n".join(t.get_text() for t in fig.axes[0].texts)
    assert "attn/scores" in names and "mlp/down" in names
    assert (tmp_path / "rows.svg").read_text().lstrip().startswith(("<?xml", "<svg"))


def test_throughput_against_batch(tp_fig, tmp_path):
    ax = tp_fig.axes[0]
    whole, per_op = ax.get_lines()[:2]
    b, tok_whole = whole.get_data()
    _, tok_per_op = per_op.get_data()
    assert list(b) == [1, 4, 16, 64, 256, 1024]
    assert np.all(np.diff(tok_whole) > 0) and np.all(tok_per_op <= tok_whole * (1 + 1e-12))
    # B = 1: weights (2 P_mm bytes) + KV of 2048 tokens over 3.35e12 B/s, one token per step
    p_mm, kv = float(LLAMA.matmul_params), 2048 * 2 * 32 * 8 * 128 * 2
    assert tok_whole[0] == pytest.approx(3.35e12 / (2 * p_mm + kv), rel=1e-9)
    # HBM full: (80e9 - 2 * params) / (2048 tokens * 131072 B per token)
    b_max = (80e9 - 2 * 8030261248) / (2048 * 131072)
    assert ax.get_lines()[2].get_xdata()[0] == pytest.approx(b_max)
    tp_fig.savefig(tmp_path / "tp.png")
    assert (tmp_path / "tp.png").read_bytes()[:4] == b"\x89PNG"


def test_attention_share_crosses_half_at_ctx_star(tmp_path):
    fig = attention_share_plot(["llama-3.1-8b", "llama-2-7b"], path=tmp_path / "share.png")
    assert (tmp_path / "share.png").read_bytes()[:4] == b"\x89PNG"
    curve, dot = fig.axes[0].get_lines()[:2]
    s, share = curve.get_data()
    assert np.all(np.diff(share) > 0) and share[0] < 0.01 and share[-1] > 0.95
    star = float(sr.ctx_star(LLAMA))
    assert (dot.get_xdata()[0], dot.get_ydata()[0]) == (pytest.approx(star), 0.5)
    assert np.interp(star, s, share) == pytest.approx(0.5, abs=0.01)


@pytest.mark.parametrize("call, message", [
    (lambda: ops_roofline_plot(LLAMA, H100, context=0), "context must be a positive integer"),
    (lambda: throughput_plot(LLAMA, H100, [0, 2]), "batches must be positive integers"),
    (lambda: attention_share_plot([]), "needs at least one model"),
    (lambda: attention_share_plot(["tiny"], contexts=[-1]), "contexts must be positive"),
    (lambda: ops_roofline_plot(LLAMA, H100, dtype="fp4"), "no peak for dtype 'fp4'"),
])
def test_bad_input_is_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_matplotlib_loads_only_when_plotting():
    code = ("import sys, symroof, symroof.surfaces.cli, symroof.surfaces.notes, symroof.plots\n"
            "assert 'matplotlib' not in sys.modules, 'matplotlib imported at import time'")
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr


# -- network plots: collective time against V, sharded matmuls against B ------------------
V5E, V4P, V5P = (sr.mesh("tpu-v5e", "16x16"), sr.mesh("tpu-v4p", "4x4x4"),
                 sr.mesh("tpu-v5p", "4x4x4"))


@pytest.fixture(scope="module")
def coll_fig():
    return collective_plot({"v5e X": (V5E, "X"), "v4p XYZ": (V4P, "XYZ")},
                           kinds=("all-gather", "all-to-all"))


def test_collective_plot_curves_and_knees(coll_fig, tmp_path):
    ax = coll_fig.axes[0]
    curves = [ln for ln in ax.get_lines() if len(ln.get_xdata()) > 1]
    dots = [ln for ln in ax.get_lines() if len(ln.get_xdata()) == 1]
    assert [ln.get_label() for ln in curves] == [
        "v5e X: all-gather, V / 90 GB/s, knee 720 kB",
        "v5e X: all-to-all, V / 360 GB/s, knee 2.88 MB",
        "v4p XYZ: all-gather, V / 270 GB/s, knee 1.62 MB",
        "v4p XYZ: all-to-all, V / 5.76 TB/s, knee 34.6 MB"]  # V max(X_i)/(4 N W_ici)
    assert [ln.get_linestyle() for ln in curves] == ["-", ":", "-", ":"]
    # by hand: a ring of 16 has 8 hops of 1 us; AllGather V / (2 x 4.5e10), AllToAll a quarter
    v, t = curves[0].get_data()
    assert t[-1] == pytest.approx(v[-1] / 9e10) and t[0] == pytest.approx(8e-6)
    assert curves[1].get_ydata()[-1] == pytest.approx(v[-1] / (4 * 9e10))
    # v4p 4x4x4 over three axes: 2 + 2 + 2 hops, bandwidths add (3 x 9e10)
    knees = [(ln.get_xdata()[0], ln.get_ydata()[0]) for ln in dots]
    assert knees[0] == (pytest.approx(16 * 4.5e10 * 1e-6), pytest.approx(8e-6))
    assert knees[2] == (pytest.approx(6e-6 * 3 * 9e10), pytest.approx(6e-6))
    assert knees[1][0] == pytest.approx(4 * knees[0][0])  # AllToAll: 4x later
    coll_fig.savefig(tmp_path / "coll.png")
    assert (tmp_path / "coll.png").read_bytes()[:4] == b"\x89PNG"


def test_collective_plot_legend_covers_no_curve(coll_fig):
    ax = coll_fig.axes[0]
    renderer = coll_fig.canvas.get_renderer()
    box = ax.get_legend().get_window_extent(renderer)
    for line in ax.get_lines():
        for x, y in ax.transData.transform(line.get_xydata()):
            assert not box.contains(x, y), line.get_label()


@pytest.fixture(scope="module")
def mm_fig():
    text = "X[B, D] @ W[D_X, F] -> [B, F]"
    return sharded_matmul_plot(V5P, {"gather": (text, "gather"), "reduce": (text, "reduce"),
                                     "FSDP": "X[B_X, D] @ W[D_X, F] -> [B_X, F]",
                                     "local": "X[B_X, D] @ W[D, F_Y] -> [B_X, F_Y]"},
                               sizes={"D": 8192, "F": 32768})


def test_sharded_matmul_plot_times_and_crossovers(mm_fig):
    ax = mm_fig.axes[0]
    D, F, C, W_ici = 8192, 32768, 459e12, 2 * 90e9
    gather_math, gather_comms = ax.get_lines()[:2]
    b = gather_math.get_xdata()
    assert gather_math.get_ydata() == pytest.approx(2 * b * D * F / C)
    assert gather_comms.get_ydata() == pytest.approx(np.full(b.shape, 2 * D * F / W_ici))
    dots = [ln for ln in ax.get_lines() if len(ln.get_xdata()) == 1]
    # gather: 2BDF/C = 2DF/W_ici at B = C/W_ici; FSDP: B/X = C/W_ici
    assert [d.get_xdata()[0] for d in dots] == [pytest.approx(C / W_ici),
                                                pytest.approx(4 * C / W_ici)]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["gather: AllGather_X, B* = 2,550",
                      "reduce: AllReduce_X, comms-bound throughout",
                      "FSDP: AllGather_X, B* = 10,200 (compute time as 'reduce'; "
                      "communication time as 'gather')",
                      "local: no communication",
                      "solid: compute time per chip", "dashed: communication time"]
    # a curve two cases share is drawn once: no two lines lie on one path (their colours
    # would blend and their dashes merge)
    paths = [ln.get_xydata().tobytes() for ln in ax.get_lines() if len(ln.get_xdata()) > 1]
    assert len(paths) == len(set(paths))


def test_sharded_matmul_plot_against_d(tmp_path):
    # the reduce plan turns compute-bound at D = 2 X C / W_ici (X < D / (2 alpha))
    fig = sharded_matmul_plot(V5P, [("X[B, D] @ W[D_X, F] -> [B, F]", "reduce")], var="D",
                              values=np.geomspace(1e3, 1e6, 50), sizes={"B": 4096, "F": 8192},
                              path=tmp_path / "d.svg")
    dot = [ln for ln in fig.axes[0].get_lines() if len(ln.get_xdata()) == 1][0]
    assert dot.get_xdata()[0] == pytest.approx(2 * 4 * 459e12 / 180e9)
    assert (tmp_path / "d.svg").read_text().lstrip().startswith(("<?xml", "<svg"))


@pytest.mark.parametrize("call, message", [
    (lambda: collective_plot([]), "at least one"),
    (lambda: collective_plot([V5E]), "a \\(mesh, axes\\) pair"),
    (lambda: collective_plot([(V5E, "X")], kinds=("broadcast",)), "unknown collective"),
    (lambda: collective_plot([(V5E, "Q")]), "mesh axis 'Q' is not in this mesh"),
    (lambda: collective_plot([(V5E, "X")], sizes=[0, 1]), "sizes must be positive"),
    (lambda: collective_plot([(sr.mesh(sr.symbolic_chip(), "4"), "X")]), "symbolic in"),
    (lambda: sharded_matmul_plot(V5P, []), "at least one matmul"),
    (lambda: sharded_matmul_plot(V5P, "X[B, D] @ W[D_X, F] -> [B, F]"), "give sizes for D, F"),
    (lambda: sharded_matmul_plot(V5P, "X[B, D] @ W[D_X, F] -> [B, F]", sizes={"B": 2}),
     "leave it out of sizes"),
    (lambda: sharded_matmul_plot(V5P, [("X[B, D] @ W[D_X, F] -> [B, F]", "fast")]),
     "strategy of"),
])
def test_network_plots_name_bad_input(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_latency_throughput_plot_marks_each_hbm_cap(tmp_path):
    import symroof as sr
    from symroof.plots import latency_throughput_plot

    meshes = [sr.mesh("tpu-v5e", "4x4"), sr.mesh("tpu-v5e", "2x2")]
    path = tmp_path / "lt.png"
    fig = latency_throughput_plot("llama-3.1-70b", meshes, context=8192, weights="int8",
                                  path=path)
    ax = fig.axes[0]
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    cap = int(sr.serve("llama-3.1-70b", meshes[0], batch=1, context=8192,
                       weights="int8").max_batch)
    # each cap is named in the legend, beside its slice, not in text that can crowd
    assert texts[:2] == [f"tpu-v5e 4x4 (16 chips): HBM full at B={cap}",  # holds int8 weights
                         "tpu-v5e 2x2 (4 chips): the weights alone do not fit"]  # 64 < 70.6 GB
    assert len(ax.texts) == 0
    assert path.stat().st_size > 10_000


def test_multi_chip_roofline_colours_ridges_and_points():
    """One colour per chip (HBM and network roof alike), each ridge marked at (C/W, C), and
    the points on the roof named by ``against``, which the legend states."""
    from symroof.plots import roofline_plot

    chips = [sr.chip("h100"), sr.chip("tpu-v5e")]
    fig = roofline_plot(chips, {"B=64": sr.matmul(64, 4096, 4096), "dot": 0.5}, network=True,
                        against="tpu-v5e")
    ax = fig.axes[0]
    lines = {line.get_label(): line for line in ax.get_lines()}
    for chip in chips:
        mine = [ln for label, ln in lines.items() if label.startswith(chip.name)]
        assert len(mine) == 2 and len({ln.get_color() for ln in mine}) == 1  # HBM + network
        ridge, peak = float(chip.critical_intensity()), float(chip.peak())
        assert any(ln.get_marker() == "D" and ln.get_xdata()[0] == pytest.approx(ridge)
                   and ln.get_ydata()[0] == pytest.approx(peak) for ln in ax.get_lines())
    assert "tpu-v5e HBM roof: peak 197 TFLOP/s, ridge 240 FLOP/B" in lines
    dots = [ln for ln in ax.get_lines() if ln.get_marker() == "o"]
    v5e_roof = lines["tpu-v5e HBM roof: peak 197 TFLOP/s, ridge 240 FLOP/B"].get_color()
    assert all(ln.get_color() == v5e_roof for ln in dots)
    for ln in dots:  # on the v5e's roof: min(C, I W)
        x = ln.get_xdata()[0]
        assert ln.get_ydata()[0] == pytest.approx(min(197e12, x * 8.2e11))
    assert fig.legends[0].get_texts()[-1].get_text() == "ops, on the tpu-v5e roof"
    assert ax.get_yaxis().get_major_formatter()(1e15, 0) == "1,000"  # TFLOP/s, plainly
    with pytest.raises(ValueError, match="against='h200' is not one of the chips plotted"):
        roofline_plot(chips, {"dot": 0.5}, against="h200")


def test_measured_plot_labels_sit_next_to_their_points():
    """Every op of the measured plot is named once, in a label anchored right of its
    cluster's rightmost point or left of its leftmost, at the cluster's middle, moved at most
    a few lines up or down and 50 points out, with a leader line when moved."""
    from symroof.plots.measured import measured_figure
    from symroof.surfaces.measure import measure

    result = measure("tiny", repeats=1)
    ax = measured_figure(result).axes[0]
    ops = {op.key: (op.flops / op.bytes, op.flops / op.measured) for op in result.ops
           if op.flops > 0 and op.bytes > 0}
    labels = [t for t in ax.texts if hasattr(t, "xyann")]
    named = [name for t in labels for name in t.get_text().split("\n")]
    assert sorted(named) == sorted(ops)
    for t in labels:
        xs, ys = zip(*(ops[name] for name in t.get_text().split("\n")))
        right = t.get_horizontalalignment() == "left"  # the text starts right of the points
        assert t.xy[0] == pytest.approx(max(xs) if right else min(xs))
        assert t.xy[1] == pytest.approx(float(np.exp(np.mean(np.log(ys)))))
        out = t.xyann[0] if right else -t.xyann[0]  # points away from the cluster
        assert out in (5, 25, 50) and abs(t.xyann[1]) <= 60
        assert (t.arrow_patch is not None) == ((out, t.xyann[1]) != (5, 0))


def test_op_groups_are_named_in_words_on_the_figures():
    """Every op group a figure labels reads as words (no code name such as lm_head): the
    conventions plot's ticks and the ops roofline's point labels."""
    from symroof.models.table_render import in_words
    from symroof.models.transformer import OP_GROUPS
    from symroof.plots import conventions_plot

    assert [g for g in OP_GROUPS if "_" in in_words(g)] == []
    fig = conventions_plot("tiny", "h100", batch=1, context=64, profiles=("symroof",))
    ticks = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert "LM head" in ticks and not any("_" in t for t in ticks)
    ops = ops_roofline_plot("tiny", H100, context=64)
    names = [n for t in ops.axes[0].texts for n in t.get_text().split("\n")]
    assert "LM head" in names and not any("lm_head" in n for n in names)
