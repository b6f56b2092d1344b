"""No text of a figure the notes or the tour make overlaps another, and no legend covers a
text or a bar (:func:`symroof.plots.overlaps.text_overlaps`, run as each figure is saved by
the session's derivations; the tour's figures are checked in tests/test_tour.py)."""

from __future__ import annotations

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from symroof.plots.overlaps import text_overlaps


def test_every_figure_of_the_notes_was_checked(derivations):
    saved = {p.name for p in derivations["figures"].glob("*.png")}
    assert saved and saved <= set(derivations["overlaps"])


def test_no_text_overlaps_in_the_notes_figures(derivations):
    overlaps = derivations["overlaps"]
    # the figures of the plots fixed for overlaps are among them (06's caps once crowded)
    assert {"04_sharded_matmuls.png", "05_memory_by_remat.png",
            "06_latency_throughput.png"} <= set(overlaps)
    # and those fixed for lines through labels (a ridge's line, the 4M batch's line)
    assert {"02_ops_roofline.png", "05_step_time.png"} <= set(overlaps)
    assert {name: found for name, found in overlaps.items() if found} == {}


def test_overlaps_are_found():
    fig = Figure(figsize=(4, 3))
    ax = fig.subplots()
    ax.bar([0, 1], [3, 1])
    ax.text(0.3, 2.0, "a label", fontsize=12)
    ax.text(0.35, 2.0, "on a label", fontsize=12)
    ax.plot([0, 1], [2, 2], label="a long legend entry over the bars")
    ax.text(0.05, 0.5, "under the legend", transform=ax.transAxes, va="center")
    ax.legend(loc="center left")
    assert text_overlaps(fig) == [
        ("a label", "on a label"), ("under the legend", "a long legend entry over the bars"),
        ("legend", "under the legend"), ("legend", "a bar"),  # the first bar, not the second
        # and the legend's line, drawn at the labels' height, runs through both
        ("line 'a long legend entry over the bars'", "a label"),
        ("line 'a long legend entry over the bars'", "on a label")]


def test_slanted_texts_are_compared_by_their_outlines():
    """Two parallel 30-degree labels side by side: their upright boxes overlap, their turned
    rectangles do not; the same two crossing at right angles do."""
    fig = Figure(figsize=(4, 3))
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    parallel = [ax.text(x, 0.3, "a slanted tick label", rotation=30, fontsize=9,
                        transform=ax.transAxes) for x in (0.1, 0.18)]
    boxes = [t.get_window_extent(fig.canvas.get_renderer()) for t in parallel]
    assert boxes[0].overlaps(boxes[1])  # the upright boxes would say "overlap"
    assert text_overlaps(fig) == []
    ax.text(0.3, 0.35, "crossing", rotation=-60, fontsize=9, transform=ax.transAxes)
    assert ("a slanted tick label", "crossing") in text_overlaps(fig)


def test_no_text_overlaps_in_the_measured_roofline():
    """The measured roofline's op labels, roofs and legend (labels once overlapped here),
    for this machine's measurement and for twelve layouts drawn from it: the ops' counted
    FLOPs and bytes under fixed roofs, each op's time its roofline's times a factor of up to
    5 either way (a measurement moves labels onto roofs and leaders through labels, as one
    on a loaded machine did; the drawn layouts make the test the same on every machine)."""
    import dataclasses
    import random

    from symroof.hardware import Chip
    from symroof.plots.measured import measured_figure
    from symroof.surfaces.measure import measure

    result = measure("tiny", repeats=1)
    assert text_overlaps(measured_figure(result)) == []
    C, W, t_call = {"fp32": 100e9, "fp64": 50e9}, 20e9, 1e-6
    chip = Chip("this-machine", C, hbm_bw=W, hbm_bytes=2**34, link_bw=W)
    for seed in range(12):
        rng = random.Random(seed)

        def drawn(op, spread, rng=rng):
            dtype = "fp32" if " fp32 " in op.key else "fp64"
            t_math, t_mem = op.flops / C[dtype], op.bytes / W
            return dataclasses.replace(op, t_math=t_math, t_mem=t_mem, t_overhead=t_call,
                                       measured=(max(t_math, t_mem) + t_call)
                                       * 10 ** rng.uniform(-spread, spread))

        layout = dataclasses.replace(result, chip=chip,
                                     ops=[drawn(op, 0.7) for op in result.ops],
                                     matmuls=[drawn(op, 0.3) for op in result.matmuls])
        assert text_overlaps(measured_figure(layout)) == [], seed


def _labelled(line_y: float, arrow_to: tuple[float, float] | None = None) -> Figure:
    """A tiny figure: one label at (0.4, 0.5) of the axes, a horizontal line at ``line_y``,
    and an annotation whose arrow runs to ``arrow_to`` (axes fractions)."""
    fig = Figure(figsize=(4, 3))
    ax = fig.subplots()
    ax.set(xlim=(0, 1), ylim=(0, 1))
    ax.text(0.4, 0.5, "a label", fontsize=10, va="center")
    ax.plot([0, 1], [line_y, line_y], label="roof")
    if arrow_to is not None:
        ax.annotate("a note", arrow_to, xytext=(0.05, 0.9), arrowprops={"arrowstyle": "->"})
    return fig


def _at_pixel(fig: Figure, y: float) -> float:
    """The data y of the canvas row ``y`` (pixels) in the figure's axes."""
    return fig.axes[0].transData.inverted().transform((0, y))[1]


def test_a_line_through_a_label_is_found_and_one_beside_it_is_not():
    assert text_overlaps(_labelled(0.5)) == [("line 'roof'", "a label")]
    assert text_overlaps(_labelled(0.2)) == []  # well clear of it
    # a line 1 pixel inside the label's box grazes it: within the tolerance (2 pixels by
    # default) it is no crossing, with a tolerance of half a pixel it is one
    fig = _labelled(0.5)
    box = fig.axes[0].texts[0].get_window_extent(FigureCanvasAgg(fig).get_renderer())
    fig.axes[0].lines[0].set_ydata([_at_pixel(fig, box.y1 - 1)] * 2)
    assert text_overlaps(fig) == []
    assert text_overlaps(fig, line_margin=0.5) == [("line 'roof'", "a label")]


def test_a_clipped_line_is_checked_where_it_is_drawn():
    """A line below the view runs through the x tick labels' row only if it is drawn there
    (not clipped to the axes)."""
    fig = _labelled(0.2)
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw_without_rendering()
    ticks = [t for t in fig.axes[0].get_xticklabels() if t.get_text()]
    row = ticks[0].get_window_extent(renderer)
    fig.axes[0].lines[0].set_ydata([_at_pixel(fig, (row.y0 + row.y1) / 2)] * 2)
    assert text_overlaps(fig) == []
    fig.axes[0].lines[0].set_clip_on(False)
    assert {t for _, t in text_overlaps(fig)} == {t.get_text() for t in ticks}


def test_an_arrow_through_a_label_is_found():
    crossing = _labelled(0.2, arrow_to=(0.9, 0.15))  # from the top left through the label
    assert text_overlaps(crossing) == [("arrow of 'a note'", "a label")]
    assert text_overlaps(_labelled(0.2, arrow_to=(0.9, 0.9))) == []  # along the top


def test_a_line_collection_through_a_label_is_found_and_one_beside_it_is_not():
    """vlines and hlines draw LineCollections, not Line2Ds: each of their lines is checked
    (each one apart: no stroke joins one line's end to the next one's start)."""
    crossing = _labelled(0.2)
    crossing.axes[0].vlines([0.45, 0.95], 0, 1, label="ridges")  # the first through the label
    assert text_overlaps(crossing) == [("line 'ridges'", "a label")]
    beside = _labelled(0.2)
    beside.axes[0].vlines([0.05, 0.95], 0, 1, label="ridges")
    beside.axes[0].hlines(0.5, 0.7, 0.9)  # at the label's height, right of it
    assert text_overlaps(beside) == []
