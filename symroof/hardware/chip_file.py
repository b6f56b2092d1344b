r"""JSON chip records: one loader for ``sr.chip("mychip.json")`` and the CLI's ``--chip``.

A record has ``name``, an optional ``base`` (a preset whose figures and network it starts
from), ``peaks`` {dtype: [value, source]}, ``hbm_bw``, ``hbm_bytes``, ``link_bw`` (each
[value, source]); without ``base`` every figure is required. A record whose peaks cannot be
true together warns (:class:`ChipWarning`), naming the fields: a lower-precision peak below a
higher-precision one (fp4 under fp8), or a base's peak left over beside a same-width
neighbour that was overridden (fp16 kept from the base when bf16 was changed).

>>> import json, pathlib, tempfile, warnings
>>> import symroof as sr
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> path = folder / "faster.json"
>>> _ = path.write_text(json.dumps({"base": "b200", "peaks": {
...     "bf16": [5e15, "a guess"], "fp8": [1e16, "a guess"]}}))
>>> with warnings.catch_warnings(record=True) as seen:
...     warnings.simplefilter("always")
...     c = sr.chip(str(path))          # the same as read_chip_file(path, Chip, chip)
>>> c.name, c.peak("fp8")
('faster', 10000000000000000)
>>> (warning,) = seen
>>> print(str(warning.message).replace("; ", "\n  "))
chip file 'faster.json' has peaks that cannot all be true:
  peaks.int8 4.5 PFLOP/s < peaks.bf16 5 PFLOP/s (a narrower format below a wider one)
  peaks.fp4 9 PFLOP/s < peaks.fp8 10 PFLOP/s (a narrower format below a wider one)
  peaks.fp16 2.25 PFLOP/s is left over from b200 beside overridden peaks.bf16 5 PFLOP/s
  peaks.int8 4.5 PFLOP/s is left over from b200 beside overridden peaks.fp8 10 PFLOP/s
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import sympy as sp

__all__ = ["read_chip_file", "peak_warnings", "ChipWarning", "PRECISION"]

#: precision rank of each peak's dtype: a higher rank is a narrower format, whose peak is
#: at least that of every lower rank on real silicon (fp32 < bf16 = fp16 < fp8 = int8 < fp4)
PRECISION: dict[str, int] = {"fp64": 0, "fp32": 1, "tf32": 2, "bf16": 3, "fp16": 3, "fp8": 4,
                             "int8": 4, "fp6": 4, "fp4": 5, "int4": 5}
_KNOWN = ("name", "base", "peaks", "hbm_bw", "hbm_bytes", "link_bw")


class ChipWarning(UserWarning):
    """A chip record whose figures cannot all be true (it still loads)."""


def _si(value: Any) -> str:
    from ..render import fmt_si

    return fmt_si(value, "FLOP/s")


def peak_warnings(peaks: dict[str, Any], overridden: Iterable[str] = (),
                  base: str | None = None) -> list[str]:
    """What is inconsistent in ``peaks`` (dtype -> FLOP/s): each lower-precision peak below a
    higher-precision one, and each peak kept from ``base`` beside a same-rank dtype in
    ``overridden`` whose value now differs.

    >>> peak_warnings({"bf16": 10**15, "fp8": 5 * 10**14})
    ['peaks.fp8 500 TFLOP/s < peaks.bf16 1 PFLOP/s (a narrower format below a wider one)']
    >>> peak_warnings({"bf16": 10**15, "fp16": 10**15, "fp8": 2 * 10**15})
    []
    """
    out = []
    ranked = [(d, v) for d, v in peaks.items() if d in PRECISION]
    for low, v_low in ranked:
        above = [(d, v) for d, v in ranked if PRECISION[d] < PRECISION[low]
                 and sp.sympify(v_low < v) == sp.true]
        if above:
            high, v_high = max(above, key=lambda dv: dv[1])
            out.append(f"peaks.{low} {_si(v_low)} < peaks.{high} {_si(v_high)} (a narrower "
                       "format below a wider one)")
    changed = set(overridden)
    if base is not None and changed:
        for kept, v in ranked:
            if kept in changed:
                continue
            twins = [d for d, w in ranked if d in changed and PRECISION[d] == PRECISION[kept]
                     and w != v]
            if twins:
                out.append(f"peaks.{kept} {_si(v)} is left over from {base} beside "
                           "overridden " + ", ".join(f"peaks.{d} {_si(peaks[d])}" for d in twins))
    return out


def _figure(value: Any, where: str) -> tuple[Any, str]:
    """A record's ``[value, "source"]`` pair, checked."""
    if not (isinstance(value, list) and len(value) == 2 and isinstance(value[1], str)
            and value[1].strip() and isinstance(value[0], (int, float))
            and not isinstance(value[0], bool)):
        raise ValueError(f"{where} must be [number, \"its source\"], got {json.dumps(value)}")
    return value[0], value[1]


def read_chip_file(path: str | Path, Chip: Any, chip: Any) -> Any:
    """The ``Chip`` of a JSON record (module docstring), made with ``Chip`` (the record type)
    and ``chip`` (the preset lookup, for ``base``), which :func:`symroof.hardware.chip`
    passes in; bad records fail in one line naming the file and the field, inconsistent
    peaks warn.

    >>> import symroof as sr
    >>> sr.chip("docs/example-chip.json").critical_intensity("fp8")
    40000/67
    """
    from .chips import RECORDS

    presets = [r["name"] for r in RECORDS]
    path = Path(path)
    where = f"chip file '{path.name}'"
    if not path.is_file():
        raise ValueError(f"chip file not found: '{path}'")
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"{where} is not valid JSON: {err}") from None
    if not isinstance(record, dict):
        raise ValueError(f"{where} must hold one JSON object (a chip record), got a "
                         f"{type(record).__name__}")
    unknown = sorted(set(record) - set(_KNOWN))
    if unknown:
        raise ValueError(f"{where}: unknown field(s) {', '.join(unknown)}; fields are "
                         f"{', '.join(_KNOWN)}")
    name = record.get("name", path.stem)
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"{where}: name must be a non-empty string, got {json.dumps(name)}")
    figures = {k: _figure(record[k], f"{where}: {k}") for k in _KNOWN[3:] if k in record}
    if not isinstance(record.get("peaks", {}), dict):
        raise ValueError(f"{where}: peaks must be {{dtype: [number, \"its source\"]}}, got "
                         f"{json.dumps(record['peaks'])}")
    peaks = {d: _figure(v, f"{where}: peaks.{d}") for d, v in record.get("peaks", {}).items()}
    base = record.get("base")
    try:
        if base is None:
            missing = [k for k in _KNOWN[2:] if k not in record]
            if missing:
                raise ValueError(f"needs {', '.join(missing)} (or a \"base\" preset to start "
                                 f"from: {', '.join(presets)})")
            out = Chip(name, {d: v for d, (v, _) in peaks.items()},
                       sources={**{f"peaks.{d}": s for d, (_, s) in peaks.items()},
                                **{k: s for k, (_, s) in figures.items()}},
                       **{k: v for k, (v, _) in figures.items()})
        else:
            if not isinstance(base, str):
                raise ValueError(f"base must be a preset name ({', '.join(presets)}), got "
                                 f"{json.dumps(base)}")
            out = chip(base).replace(name=name)
            for d, (value, source) in peaks.items():
                out = out.replace(peaks={d: value}, note=source)
            for k, (value, source) in figures.items():
                out = out.replace(**{k: value}, note=source)
    except ValueError as err:
        raise ValueError(f"{where}: {str(err).replace(f'Chip {name!r}: ', '')}") from None
    found = peak_warnings(dict(out.peaks), {d.strip().lower() for d in peaks},
                          base and chip(base).name)
    if found:
        warnings.warn(f"{where} has peaks that cannot all be true: " + "; ".join(found),
                      ChipWarning, stacklevel=2)
    return out
