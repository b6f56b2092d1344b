"""Which texts of a figure overlap: every title, axis and tick label, annotation and legend
entry that a draw really renders, as rectangles on the canvas (matplotlib's renderer gives
each text's window extent; a slanted text's rectangle is turned with it), and every
legend's frame against the other texts and the bars; the tests run it on every figure the
notes and the tour make, and on the measured roofline.

>>> from matplotlib.figure import Figure
>>> fig = Figure(figsize=(3, 2))
>>> ax = fig.subplots()
>>> _ = ax.text(0.5, 0.5, "one label"), ax.text(0.52, 0.5, "another label")
>>> text_overlaps(fig)
[('one label', 'another label')]
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["text_overlaps"]


def text_overlaps(fig: Any, margin: float = 1.0) -> list[tuple[str, str]]:
    """The pairs of drawn texts of ``fig`` whose outlines overlap by more than ``margin``
    pixels, and ``("legend", text)`` or ``("legend", "a bar")`` where a legend's frame
    covers another text or a bar; a tick label outside the view (never drawn) is not
    counted. A slanted text is its own rotated rectangle, not the upright box around it (30
    degree tick labels' boxes overlap where their letters do not). The figure is laid out
    without rendering (Agg, the figure's own dpi).

    >>> from matplotlib.figure import Figure
    >>> fig = Figure()
    >>> _ = fig.subplots().set(title="a title", xlabel="x", ylabel="y")
    >>> text_overlaps(fig)
    []
    >>> ax = Figure(figsize=(3, 2)).subplots()
    >>> _ = [ax.text(x, 0.5, "slanted", rotation=45) for x in (0.2, 0.25, 0.7)]
    >>> text_overlaps(ax.figure)   # the first two cross, the third stands apart
    [('slanted', 'slanted')]
    """
    from unittest import mock

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text

    if fig.canvas is None or not hasattr(fig.canvas, "get_renderer"):
        FigureCanvasAgg(fig)
    drawn: list[tuple[str, Any, np.ndarray]] = []
    plain_draw = Text.draw

    def draw(self: Text, renderer: Any) -> None:
        plain_draw(self, renderer)
        if self.get_visible() and self.get_text().strip():
            box = Text.get_window_extent(self, renderer)  # an annotation's text, not its arrow
            drawn.append((self.get_text(), box, _outline(self, box, renderer, margin)))

    with mock.patch.object(Text, "draw", draw):
        fig.draw_without_rendering()
    out = []
    for i, (a, box_a, poly_a) in enumerate(drawn):
        for b, box_b, poly_b in drawn[i + 1:]:
            if box_a.padded(-margin).overlaps(box_b.padded(-margin)) and \
                    _convex_overlap(poly_a, poly_b):
                out.append((a, b))
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is None or not legend.get_visible():
            continue
        frame = legend.get_window_extent(renderer).padded(-margin)
        own = {t.get_text() for t in legend.get_texts()} | {legend.get_title().get_text()}
        out += [("legend", a) for a, box, poly in drawn if a not in own
                and frame.overlaps(box) and _convex_overlap(_corners(frame), poly)]
        out += [("legend", "a bar") for bar in ax.patches if bar.get_height() != 0
                and frame.overlaps(bar.get_window_extent(renderer))]
    return out


def _corners(box: Any) -> np.ndarray:
    return np.array([(box.x0, box.y0), (box.x1, box.y0), (box.x1, box.y1), (box.x0, box.y1)])


def _outline(text: Any, box: Any, renderer: Any, margin: float) -> np.ndarray:
    """The four corners of ``text``'s rectangle on the canvas, shrunk by ``margin``: its
    upright box, or for a slanted text its unrotated box turned by the angle about the
    centre they share (a rectangle's bounding box has the rectangle's centre)."""
    angle = text.get_rotation()
    if angle % 90 == 0:
        return _corners(box.padded(-margin))
    text.set_rotation(0)
    upright = text.get_window_extent(renderer)
    text.set_rotation(angle)
    w, h = upright.width / 2 - margin, upright.height / 2 - margin
    t = np.radians(angle)
    turn = np.array([[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]])
    centre = np.array([(box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2])
    return centre + np.array([(-w, -h), (w, -h), (w, h), (-w, h)]) @ turn.T


def _convex_overlap(p: np.ndarray, q: np.ndarray) -> bool:
    """Whether two convex polygons' interiors meet: no edge normal of either separates them
    (the separating axis theorem)."""
    for poly in (p, q):
        for k in range(len(poly)):
            edge = poly[(k + 1) % len(poly)] - poly[k]
            axis = np.array([-edge[1], edge[0]])
            a, b = p @ axis, q @ axis
            if a.max() <= b.min() or b.max() <= a.min():
                return False
    return True
