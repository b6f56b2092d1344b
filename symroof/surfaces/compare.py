"""Side by side: one question asked of several chips, models, meshes or weight dtypes
(``sr.compare``, ``symroof compare``).

A question is a decode step, a prefill, the critical batch, a serving plan or a training
plan; an axis is what varies. Every cell is read from the function that answers the
question alone, never recomputed here: ``sr.roofline_table`` (the totals ``symroof report``
prints), ``sr.critical_batch`` and ``solve_step`` (``symroof critical-batch``, ``symroof
solve``), ``sr.serve`` and ``cost_per_million_tokens`` (``symroof serve``),
``sr.strategy_search`` (``symroof train``). Both tables are data: :data:`AXES` (the setting
field an axis varies and how a value is read) and :data:`QUESTIONS`
(:mod:`symroof.surfaces.compare_questions`: the fields a question reads, its columns and its
answer); a new axis or question is one entry.

>>> c = compare("critical-batch", "chips", ["tpu-v5e", "h100"])
>>> c.cells["tpu-v5e"]["b_star"], c.cells["h100"]["b_star"]
(9850/41, 19780/67)
>>> print(c.to_text().splitlines()[2])
tpu-v5e  240 FLOP/B  240
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import sympy as sp

from ..conventions import as_conventions
from ..hardware import Chip, Mesh, as_chip, mesh
from ..hardware import chip as _chip
from ..models import Transformer, model
from ..parallel.serving import WIDTHS, width
from ..prose import tex_escape
from ..render import fmt_num, fmt_si
from .compare_questions import QUESTIONS, Column, Question, Setting

__all__ = ["Setting", "Axis", "AXES", "Column", "Question", "QUESTIONS", "Comparison",
           "compare"]


def _as_mesh(value: Any) -> Mesh:
    if isinstance(value, Mesh):
        return value
    chip_text, sep, shape = str(value).rpartition(":")
    if not sep:
        raise ValueError(f"mesh {value!r}: write CHIP:SHAPE, e.g. tpu-v5e:4x4 or h100:8")
    return mesh(chip_text.strip(), shape.strip())


def _as_dtype(value: Any) -> str:
    key = str(value).strip().lower()
    width(key, "weights")  # an unknown dtype fails here, naming the known ones
    return key


def _mesh_label(m: Mesh) -> str:
    return f"{m.chip.name}:{'x'.join(str(a.size) for a in m.axes)}"


@dataclass(frozen=True)
class Axis:
    """What varies: the ``Setting`` field it sets, how a value is read (a name, or the
    object itself) and how it is labelled."""

    field: str
    read: Callable[[Any], Any]
    label: Callable[[Any], str]
    what: str
    header: str


#: axis -> its entry; ``compare(question, axis, values)`` sets ``field`` to each value
AXES: dict[str, Axis] = {
    "chips": Axis("chip", lambda v: as_chip(v) if isinstance(v, Chip) else _chip(v),
                  lambda c: c.name, "chip presets (symroof chips)", "chip"),
    "models": Axis("model", lambda v: v if isinstance(v, Transformer) else model(v),
                   lambda m: m.name, "model presets or config.json paths", "model"),
    "meshes": Axis("mesh", _as_mesh, _mesh_label, "CHIP:SHAPE slices", "mesh"),
    "dtypes": Axis("weights", _as_dtype, str, f"weight storage dtypes ({', '.join(WIDTHS)})",
                   "weights"),
}


def _cell(value: Any, unit: str) -> str:
    """A cell as a person reads it: SI prefixes and units, 3 significant figures."""
    if value is None:
        return "-"
    if isinstance(value, (str, bool)):
        return {True: "yes", False: "no"}.get(value, value) if isinstance(value, bool) \
            else value
    value = sp.sympify(value)
    if not value.is_finite:
        return "unbounded" if value == sp.oo else "-"
    if unit == "$":
        return f"${float(value):.3g}"
    return fmt_si(value, unit) if unit else fmt_num(value)


def _json(value: Any) -> Any:
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, float):
        return value
    value = sp.sympify(value)
    if not value.is_finite:
        return None
    return int(value) if value.is_Integer else float(value)


@dataclass(frozen=True)
class Comparison:
    """One question's answers side by side: ``cells[label][column key]`` holds each exact
    value as the API returned it; ``settings[label]`` the setting asked."""

    question: str
    axis: str
    labels: tuple[str, ...]
    columns: tuple[Column, ...]
    cells: dict[str, dict[str, Any]]
    settings: dict[str, Setting] = field(repr=False)
    title: str = ""

    @property
    def plot_label(self) -> str:
        """The plot's value axis: what the plotted columns measure."""
        return QUESTIONS[self.question].plot_label

    @property
    def notes(self) -> list[str]:
        """What an answer rests on or what makes it implausible, per label (a step's
        warnings, a plan that does not fit, the price used)."""
        by_text: dict[str, list[str]] = {}
        for label in self.labels:
            for note in self.cells[label].get("notes", ()):
                by_text.setdefault(note, []).append(label)
        return [f"{', '.join(labels)}: {note}" for note, labels in by_text.items()]

    def rows(self) -> list[list[str]]:
        """The table's text cells, header first."""
        head = [AXES[self.axis].header, *(c.header for c in self.columns)]
        return [head] + [[label, *(_cell(self.cells[label].get(c.key), c.unit)
                                   for c in self.columns)] for label in self.labels]

    def to_text(self) -> str:
        from .cli_format import table

        notes = "".join(f"\nnote: {n}" for n in self.notes)
        return f"{self.title}\n" + table("text", self.rows()) + notes

    __str__ = to_text

    def to_markdown(self) -> str:
        from .cli_format import table

        notes = "".join(f"\n- {n}" for n in self.notes)
        return f"**{self.title}**\n\n" + table("markdown", self.rows()) + (
            "\n" + notes if notes else "")

    _repr_markdown_ = to_markdown

    def to_latex(self) -> str:
        """A booktabs tabular in a ``center`` block (no float: it stays under its text)."""
        rows = self.rows()
        esc = lambda r: " & ".join(tex_escape(c) for c in r) + r" \\"  # noqa: E731
        lines = [r"\begin{center}", r"\small", tex_escape(self.title) + r"\\[4pt]",
                 r"\begin{tabular}{l" + "r" * (len(rows[0]) - 1) + "}", r"\toprule",
                 esc(rows[0]), r"\midrule", *map(esc, rows[1:]), r"\bottomrule",
                 r"\end{tabular}"]
        lines += [r"\par\footnotesize " + tex_escape(n) for n in self.notes]
        return "\n".join(lines + [r"\end{center}"])

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: numbers as numbers (exact ones also as strings), oo as null."""
        def exact(v: Any) -> Any:
            return str(v) if isinstance(v, sp.Basic) and not v.is_Integer else None

        return {"question": self.question, "axis": self.axis, "title": self.title,
                "columns": {c.key: {"header": c.header, "unit": c.unit}
                            for c in self.columns},
                "rows": {label: {**{c.key: _json(self.cells[label].get(c.key))
                                    for c in self.columns},
                                 **{f"{c.key}_exact": exact(self.cells[label].get(c.key))
                                    for c in self.columns
                                    if exact(self.cells[label].get(c.key)) is not None}}
                         for label in self.labels},
                "notes": self.notes,
                "conventions": self.settings[self.labels[0]].conventions.as_dict()}

    def to_json(self) -> str:
        from .cli_args import dumps

        return dumps(self.as_dict())

    def plot(self, path: Any = None) -> Any:
        """One bar chart of the plotted columns (:func:`symroof.plots.compare_plot`)."""
        from ..plots.compare import compare_plot

        return compare_plot(self, path=path)


def _title(question: str, axis: str, base: Setting) -> str:
    parts = [f"{QUESTIONS[question].name}, {axis} side by side"]
    if base.model is not None and axis != "models":
        parts.append(base.model.name)
    if base.chip is not None and axis != "chips":
        parts.append(f"on {base.chip.name}")
    if base.mesh is not None and axis != "meshes":
        parts.append(f"on {_mesh_label(base.mesh)}")
    if base.batch is not None:
        parts.append(f"batch {base.batch:,}")
    if base.context is not None:
        parts.append(f"{'sequence' if question == 'train' else 'context'} {base.context:,}")
    if axis != "dtypes" and "weights" in QUESTIONS[question].reads:
        parts.append(f"weights {base.weights}")
    if base.kv is not None:
        parts.append(f"KV {base.kv}")
    parts.append(f"{base.dtype} peak")
    return ", ".join(parts) + base.conventions.title_part


def compare(question: str, axis: str, values: Sequence[Any], **setting: Any) -> Comparison:
    """Ask ``question`` (a key of :data:`QUESTIONS`) once per value of ``axis`` (a key of
    :data:`AXES`); ``setting``: the other :class:`Setting` fields (names are read as the
    axes read them: ``model="llama-3.1-70b"``, ``chip="h100"``, ``mesh="tpu-v5e:4x4"``;
    ``conventions="book"``, a profile name or record, puts every answer under it and the
    title names it).

    >>> c = compare("decode", "chips", ["h100", "b200"], model="llama-3.1-8b", batch=64,
    ...             context=8192)
    >>> import symroof as sr
    >>> t = sr.roofline_table(sr.model("llama-3.1-8b"), sr.chip("b200"), batch=64,
    ...                       new_tokens=1, cached=8191)
    >>> c.cells["b200"]["lower"] == t.bounds[0]
    True
    """
    if question not in QUESTIONS:
        raise ValueError(f"unknown question {question!r}; questions: {', '.join(QUESTIONS)}")
    if axis not in AXES:
        raise ValueError(f"unknown axis {axis!r}; axes: {', '.join(AXES)}")
    q, ax = QUESTIONS[question], AXES[axis]
    if ax.field not in q.reads:
        raise ValueError(f"{question} does not depend on {axis} ({ax.field}); it reads "
                         f"{', '.join(q.reads)}")
    values = list(values)
    if len(values) < 2:
        raise ValueError(f"compare needs two or more {axis} ({ax.what}), got {values!r}")
    unknown = set(setting) - {f for f in Setting.__dataclass_fields__}
    if unknown:
        raise ValueError(f"unknown setting(s) {sorted(unknown)}; settings: "
                         f"{', '.join(Setting.__dataclass_fields__)}")
    readers = {a.field: a.read for a in AXES.values()} | {"conventions": as_conventions}
    base = Setting(**{k: readers[k](v) if k in readers and v is not None else v
                      for k, v in setting.items()})
    if ax.field in setting and setting[ax.field] is not None:
        raise ValueError(f"{ax.field} is the axis ({axis}): give it once, in the {axis}")
    if axis == "chips" and base.mesh is not None or axis == "meshes" and base.chip is not None:
        raise ValueError("compare chips on their own (--chips, no --mesh) or meshes (--meshes, "
                         "no --chip)")
    for need in q.needs:
        if getattr(base, need) is None and ax.field != need:
            raise ValueError(f"{question} needs --{need}")
    settings = {}
    for v in values:
        s = replace(base, **{ax.field: ax.read(v)})
        label = ax.label(getattr(s, ax.field))
        if label in settings:
            raise ValueError(f"{axis}: {label!r} is given twice")
        settings[label] = s
    cells = {label: q.ask(s) for label, s in settings.items()}
    used = tuple(c for c in q.columns if any(cells[x].get(c.key) is not None for x in cells))
    return Comparison(question, axis, tuple(settings), used, cells, settings,
                      _title(question, axis, base))

