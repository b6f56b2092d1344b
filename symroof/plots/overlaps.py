"""Which texts of a figure overlap: every title, axis and tick label, annotation and legend
entry that a draw really renders, as rectangles on the canvas (matplotlib's renderer gives
each text's window extent; a slanted text's rectangle is turned with it), every legend's
frame against the other texts and the bars, and every plotted line (a Line2D, or a line of
a LineCollection: ``vlines``, ``hlines``) and annotation arrow that runs through a text (its
segments on the canvas, clipped as drawn, against the text's rectangle shrunk by a
tolerance); the tests run it on every figure the notes and the tour make, and on the
measured roofline.

>>> from matplotlib.figure import Figure
>>> fig = Figure(figsize=(3, 2))
>>> ax = fig.subplots()
>>> _ = ax.text(0.5, 0.5, "one label"), ax.text(0.52, 0.5, "another label")
>>> text_overlaps(fig)
[('one label', 'another label')]
>>> _ = ax.axhline(0.52, label="roof")    # a line through both labels
>>> text_overlaps(fig)[1:]
[("line 'roof'", 'one label'), ("line 'roof'", 'another label')]
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["text_overlaps"]


def text_overlaps(fig: Any, margin: float = 1.0,
                  line_margin: float = 2.0) -> list[tuple[str, str]]:
    """The pairs of drawn texts of ``fig`` whose outlines overlap by more than ``margin``
    pixels, ``("legend", text)`` or ``("legend", "a bar")`` where a legend's frame
    covers another text or a bar, and ``("line 'label'", text)`` or ``("arrow of 'text'",
    text)`` where a plotted line (a Line2D, or a line of a LineCollection such as ``vlines``
    draws; its label named unless private) or an annotation's arrow runs through a text's
    rectangle shrunk by ``line_margin`` pixels (an arrow is not checked against its own
    text); a tick label outside the view (never drawn)
    is not counted. A slanted text is its own rotated rectangle, not the upright box around
    it (30 degree tick labels' boxes overlap where their letters do not). The figure is laid
    out without rendering (Agg, the figure's own dpi).

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
    drawn: list[tuple[str, Any, np.ndarray, np.ndarray, Text]] = []
    plain_draw = Text.draw

    def draw(self: Text, renderer: Any) -> None:
        plain_draw(self, renderer)
        if self.get_visible() and self.get_text().strip():
            box = Text.get_window_extent(self, renderer)  # an annotation's text, not its arrow
            drawn.append((self.get_text(), box, _outline(self, box, renderer, margin),
                          _outline(self, box, renderer, line_margin), self))

    with mock.patch.object(Text, "draw", draw):
        fig.draw_without_rendering()
    out = []
    for i, (a, box_a, poly_a, *_) in enumerate(drawn):
        for b, box_b, poly_b, *_ in drawn[i + 1:]:
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
        out += [("legend", a) for a, box, poly, *_ in drawn if a not in own
                and frame.overlaps(box) and _convex_overlap(_corners(frame), poly)]
        out += [("legend", "a bar") for bar in ax.patches if bar.get_height() != 0
                and frame.overlaps(bar.get_window_extent(renderer))]
    for name, own, segments, clip in _strokes(fig):
        out += [(name, a) for a, _, _, poly, text in drawn if text is not own
                and _crosses(segments, poly if clip is None else _clipped(poly, clip))]
    return out


def _strokes(fig: Any) -> list[tuple[str, Any, np.ndarray, np.ndarray | None]]:
    """(name, the Text it belongs to or None, segments ``(n, 2, 2)`` on the canvas, clip rectangle's
    corners or None) of every drawn line of the axes (a Line2D, or each line of a
    LineCollection: ``vlines``, ``hlines``) and every annotation's arrow."""
    from matplotlib.collections import LineCollection
    from matplotlib.path import Path

    def named(label: str) -> str:
        return "a line" if label.startswith("_") else f"line {label!r}"

    out = []
    for ax in fig.axes:
        for line in ax.lines:
            if not line.get_visible() or line.get_linestyle() in ("None", "none", "", " ") \
                    or line.get_linewidth() <= 0:
                continue
            out.append((named(line.get_label()), None,
                        line.get_transform().transform_path(line.get_path()), line))
        for lines in ax.collections:  # vlines, hlines, a LineCollection added by hand
            if not isinstance(lines, LineCollection) or not lines.get_visible() \
                    or not (np.asarray(lines.get_linewidths()) > 0).any():
                continue
            transform = lines.get_transform()
            out += [(named(lines.get_label()), None, transform.transform_path(path), lines)
                    for path in lines.get_paths()]
    for text in [t for ax in fig.axes for t in ax.texts] + list(fig.texts):
        arrow = getattr(text, "arrow_patch", None)
        if arrow is not None and arrow.get_visible() and text.get_visible():
            out.append((f"arrow of {text.get_text()!r}", text,
                        arrow.get_transform().transform_path(arrow.get_path()), arrow))
    strokes = []
    for name, own, path, artist in out:
        v = np.asarray(path.vertices, dtype=float)
        if len(v) < 2:
            continue
        keep = np.ones(len(v) - 1, dtype=bool) if path.codes is None else \
            path.codes[1:] != Path.MOVETO
        seg = np.stack([v[:-1], v[1:]], axis=1)[keep]
        seg = seg[np.isfinite(seg).all(axis=(1, 2))]
        box = artist.get_clip_box() if artist.get_clip_on() else None
        strokes.append((name, own, seg, None if box is None else _corners(box)))
    return strokes


def _clipped(poly: np.ndarray, rect: np.ndarray) -> np.ndarray:
    """The convex polygon ``poly`` cut to the upright rectangle ``rect`` (its corners), the
    part of a text where a clipped line can be seen (Sutherland-Hodgman)."""
    (x0, y0), (x1, y1) = rect[0], rect[2]
    for axis, bound, keep_above in ((0, x0, True), (0, x1, False), (1, y0, True),
                                    (1, y1, False)):
        inside = (poly[:, axis] >= bound) if keep_above else (poly[:, axis] <= bound)
        cut = []
        for k in range(len(poly)):
            p, q = poly[k], poly[(k + 1) % len(poly)]
            a, b = inside[k], inside[(k + 1) % len(poly)]
            if a:
                cut.append(p)
            if a != b:
                cut.append(p + (q - p) * (bound - p[axis]) / (q[axis] - p[axis]))
        if len(cut) < 3:
            return np.empty((0, 2))
        poly = np.array(cut)
    return poly


def _crosses(segments: np.ndarray, poly: np.ndarray) -> bool:
    """Whether any segment meets the convex polygon's interior: no axis separates them
    (the separating axis theorem, over the polygon's edge normals and each segment's)."""
    if len(poly) < 3 or not len(segments):
        return False
    lo, hi = poly.min(axis=0), poly.max(axis=0)
    near = (segments.max(axis=1) > lo).all(axis=1) & (segments.min(axis=1) < hi).all(axis=1)
    seg = segments[near]
    if not len(seg):
        return False
    apart = np.zeros(len(seg), dtype=bool)
    for k in range(len(poly)):
        edge = poly[(k + 1) % len(poly)] - poly[k]
        axis = np.array([-edge[1], edge[0]])
        p, s = poly @ axis, seg @ axis
        apart |= (s.max(axis=1) <= p.min()) | (s.min(axis=1) >= p.max())
    d = seg[:, 1] - seg[:, 0]
    normal = np.stack([-d[:, 1], d[:, 0]], axis=1)
    s = np.einsum("ij,ij->i", seg[:, 0], normal)
    p = poly @ normal.T  # (corners, segments)
    apart |= (s <= p.min(axis=0)) | (s >= p.max(axis=0))
    return bool((~apart).any())


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
