"""Which texts of a figure overlap: every title, axis and tick label, annotation and legend
entry that a draw really renders, as boxes on the canvas (matplotlib's renderer gives each
text's window extent), and every legend's frame against the other texts and the bars; the
tests run it on every figure the notes and the tour make.

>>> from matplotlib.figure import Figure
>>> fig = Figure(figsize=(3, 2))
>>> ax = fig.subplots()
>>> _ = ax.text(0.5, 0.5, "one label"), ax.text(0.52, 0.5, "another label")
>>> text_overlaps(fig)
[('one label', 'another label')]
"""

from __future__ import annotations

from typing import Any

__all__ = ["text_overlaps"]


def text_overlaps(fig: Any, margin: float = 1.0) -> list[tuple[str, str]]:
    """The pairs of drawn texts of ``fig`` whose boxes overlap by more than ``margin``
    pixels each way, and ``("legend", text)`` or ``("legend", "a bar")`` where a legend's
    frame covers another text or a bar; a tick label outside the view (never drawn) is not
    counted, nor a slanted text (its box is not its outline). The figure is laid out without
    rendering (Agg, the figure's own dpi).

    >>> from matplotlib.figure import Figure
    >>> fig = Figure()
    >>> _ = fig.subplots().set(title="a title", xlabel="x", ylabel="y")
    >>> text_overlaps(fig)
    []
    """
    from unittest import mock

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text

    if fig.canvas is None or not hasattr(fig.canvas, "get_renderer"):
        FigureCanvasAgg(fig)
    drawn: list[tuple[str, Any]] = []
    plain_draw = Text.draw

    def draw(self: Text, renderer: Any) -> None:
        plain_draw(self, renderer)
        # a slanted text's box is not its outline (30-degree tick labels' boxes overlap
        # where their letters do not): only upright and quarter-turned texts are compared
        if self.get_visible() and self.get_text().strip() and self.get_rotation() % 90 == 0:
            drawn.append((self.get_text(), self.get_window_extent(renderer)))

    with mock.patch.object(Text, "draw", draw):
        fig.draw_without_rendering()
    out = []
    for i, (a, box_a) in enumerate(drawn):
        inner = box_a.padded(-margin)
        for b, box_b in drawn[i + 1:]:
            if inner.overlaps(box_b.padded(-margin)):
                out.append((a, b))
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is None or not legend.get_visible():
            continue
        frame = legend.get_window_extent(renderer).padded(-margin)
        own = {t.get_text() for t in legend.get_texts()} | {legend.get_title().get_text()}
        out += [("legend", a) for a, box in drawn if a not in own and frame.overlaps(box)]
        out += [("legend", "a bar") for bar in ax.patches if bar.get_height() != 0
                and frame.overlaps(bar.get_window_extent(renderer))]
    return out
