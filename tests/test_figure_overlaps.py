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
        ("legend", "under the legend"), ("legend", "a bar")]  # the first bar, not the second


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
    """The measured roofline's op labels, roofs and legend (labels once overlapped here)."""
    from symroof.plots.measured import measured_figure
    from symroof.surfaces.measure import measure

    assert text_overlaps(measured_figure(measure("tiny", repeats=1))) == []
