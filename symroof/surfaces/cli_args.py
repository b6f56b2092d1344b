"""What the ``symroof`` commands share in their arguments: sizes (``128k``, ``1e6``, ``4M``),
byte widths (a number, or a storage dtype: ``int4`` is half a byte), chips (a preset, a JSON
record with a source beside each figure, or a preset with figures overridden on the command
line) and meshes (``CHIP:SHAPE``). Each reader fails with one line naming what was given.

>>> size("128k"), size("1e6"), size("4M"), size("4096")
(131072, 1000000, 4194304, 4096)
>>> width("int4"), width("fp8"), width("1.5")
(1/2, 1, 3/2)
>>> print(mesh_of("tpu-v5e:32x8"))
Traceback (most recent call last):
...
ValueError: --mesh 'tpu-v5e:32x8': a 32x8 slice does not fit one tpu-v5e pod (16x16); ...
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
from fractions import Fraction
from typing import Any

import sympy as sp

from ..conventions import PROFILES, Conventions, as_conventions, parse_assignment, profile
from ..hardware import CHIPS, Chip, chip, mesh
from ..hardware.chip import STORAGE_BYTES as WIDTHS  # their one home
from ..hardware.mesh import CUSTOM_HINT
from ..models import model

__all__ = ["size", "width", "arg_type", "SIZE", "WIDTH", "load_model", "load_chip",
           "add_chip_options", "chip_of", "add_mesh_options", "mesh_of", "dumps",
           "OVERRIDE", "usd", "add_conventions_options", "conventions_of",
           "conventions_named"]

#: sizes take binary suffixes, as contexts are quoted (128k = 131,072, 4M = 4 x 2^20)
_SUFFIX = {"": 1, "k": 2**10, "K": 2**10, "M": 2**20, "G": 2**30}
_SIZE = re.compile(r"(\d*\.?\d+(?:[eE][+-]?\d+)?)([kKMG]?)")
#: the largest size a flag takes: NumPy's int64 holds its products with small factors
_LARGEST = 2**62
#: the source of a figure given by a flag
OVERRIDE = "command-line override"
#: flag -> the chip figure it sets (``--peak`` sets the peak of ``--dtype``)
_FIGURES = {"peak": "peaks", "hbm_bw": "hbm_bw", "hbm_bytes": "hbm_bytes", "link_bw": "link_bw"}


def size(text: str, minimum: int = 1) -> int:
    """A count written as ``4096``, ``8k`` (8,192), ``4M`` (4 x 2^20) or ``1e6``; at least
    ``minimum``."""
    match = _SIZE.fullmatch(text.strip().replace("_", "").replace(",", ""))
    value = Fraction(match[1]) * _SUFFIX[match[2]] if match else None
    if value is None or value.denominator != 1 or value < minimum:
        what = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise ValueError(f"must be {what}, got {text!r} (write 4096, 8k = 8,192, "
                         "4M = 4,194,304 or 1e6)")
    if value > _LARGEST:  # sizes reach NumPy's int64 arrays (the searches, the sweeps)
        raise ValueError(f"must be at most 2^62 = {_LARGEST:.3g}, got {text!r}")
    return int(value)


def width(text: str) -> Any:
    """Bytes per element: a positive number, or a storage dtype (``int4``, ``fp4``: 1/2)."""
    key = text.strip().lower()
    if key in WIDTHS:
        return sp.sympify(WIDTHS[key])
    try:
        value = sp.Rational(key)
    except (TypeError, ValueError):
        value = None
    if value is None or not value.is_positive:
        raise ValueError(f"must be a positive number of bytes or a dtype "
                         f"({', '.join(WIDTHS)}), got {text!r}")
    return int(value) if value.is_Integer else value


def _positive(text: str) -> float | None:
    """``text`` as a finite positive float, or None."""
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) and number > 0 else None


def usd(text: str) -> Any:
    """A price in US dollars (per chip-hour), exact through its shortest decimal.

    >>> usd("1.2"), usd("10.8")
    (6/5, 54/5)
    """
    number = _positive(text)
    if number is None:
        raise ValueError(f"must be a positive number of US dollars per chip-hour, got "
                         f"{text!r}")
    return sp.Rational(repr(number))


def arg_type(read: Any, *args: Any) -> Any:
    """``read`` as an argparse type: its ValueError becomes argparse's one-line error."""
    def parse(text: str) -> Any:
        try:
            return read(text, *args)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None
    return parse


SIZE, WIDTH = arg_type(size), arg_type(width)


def load_model(name: str) -> Any:
    """A preset, a ``config.json``, or a Hugging Face snapshot folder."""
    return model(os.path.join(name, "config.json") if os.path.isdir(name) else name)


def load_chip(text: str, overrides: dict[str, str] | None = None, dtype: str = "bf16") -> Chip:
    """A preset or a JSON chip file (``mychip.json``), with ``overrides`` ({"hbm_bw":
    "6.7e12", "peak": "2e15", ...}: the flag's text) applied, each sourced as a
    command-line override; the chip is then named for them."""
    c = chip(text)  # a preset, or a JSON chip record (read_chip_file)
    given = {k: v for k, v in (overrides or {}).items() if v is not None}
    for flag, value in given.items():
        number = _positive(value)
        if number is None:
            raise ValueError(f"--{flag.replace('_', '-')} must be a positive number, got "
                             f"{value!r}")
        change = {"peaks": {dtype: number}} if flag == "peak" else {_FIGURES[flag]: number}
        c = c.replace(**change, note=OVERRIDE)
    if given:
        flags = ", ".join(f"--{k.replace('_', '-')} {v}" for k, v in given.items())
        c = c.replace(name=f"{c.name} ({flags})")
    return c


def add_chip_options(parser: argparse.ArgumentParser, required: bool = True,
                     chip_flag: bool = True) -> None:
    """``--chip`` (unless ``chip_flag`` is False: the chip comes with ``--mesh``) and the
    overrides of its figures."""
    if chip_flag:
        parser.add_argument("--chip", required=required, help=f"one of: {', '.join(CHIPS)}; "
                            "or a JSON chip record (mychip.json, see docs/cli.md)")
    group = parser.add_argument_group("chip figures overridden (sourced as 'command-line "
                                      "override')")
    for flag, what in (("peak", "peak FLOP/s at --dtype (bf16 unless given)"),
                       ("hbm-bw", "HBM bandwidth, bytes/s"), ("hbm-bytes", "HBM capacity, "
                       "bytes"), ("link-bw", "one link's bandwidth one way, bytes/s")):
        group.add_argument(f"--{flag}", metavar="X", help=what)


def chip_of(args: argparse.Namespace, text: str | None = None) -> Chip:
    """The chip the arguments name (``text``: the chip part of ``--mesh``)."""
    overrides = {k: getattr(args, k, None) for k in _FIGURES}
    return load_chip(text or args.chip, overrides, (getattr(args, "dtype", None) or "bf16")
                     .strip().lower())


def add_mesh_options(parser: argparse.ArgumentParser, required: bool = True) -> None:
    parser.add_argument("--mesh", required=required, metavar="CHIP:SHAPE", help="a slice: "
                        "tpu-v5p:16x16x16, tpu-v5e:4x4, h100:8, h100:16x8 (axes X, Y, Z, ... "
                        "in order; on GPUs the last axis is inside a node); CHIP may be a "
                        "JSON chip record")
    parser.add_argument("--dcn", metavar="AXES", help="mesh axes that join slices over the "
                        "data-center network (TPU), e.g. --mesh tpu-v5p:16x16x16x2 --dcn W")


def mesh_of(text: str, args: argparse.Namespace | None = None) -> Any:
    """``CHIP:SHAPE`` as a mesh; the chip read as ``chip_of`` reads it."""
    chip_text, sep, shape = text.rpartition(":")
    if not sep or not chip_text.strip() or not shape.strip():
        raise ValueError(f"--mesh {text!r}: write CHIP:SHAPE, e.g. tpu-v5p:16x16x16, "
                         "tpu-v5e:4x4, h100:8 or h100:16x8")
    c = chip_of(args, chip_text.strip()) if args is not None else load_chip(chip_text.strip())
    dcn = tuple(getattr(args, "dcn", None) or ())
    try:
        return mesh(c, shape.strip(), dcn=dcn)
    except ValueError as err:
        raise ValueError(f"--mesh {text!r}: " + str(err).replace("dcn=(...)", "--dcn AXES")
                         .replace("dcn= is", "--dcn is").replace(" " + CUSTOM_HINT, "")
                         .replace(" or a dict {'X': 4, ...}", "")) from None


def add_conventions_options(parser: argparse.ArgumentParser) -> None:
    """``--conventions NAME`` and ``--convention FIELD=VALUE`` (repeatable): the accounting
    conventions of every cost the command builds (see ``symroof conventions``)."""
    parser.add_argument("--conventions", metavar="NAME", default="symroof",
                        help=f"accounting conventions: {', '.join(PROFILES)} (default: "
                        "%(default)s; symroof conventions lists every field)")
    parser.add_argument("--convention", action="append", metavar="FIELD=VALUE", default=[],
                        help="change one field of --conventions (repeatable), e.g. "
                        "--convention softmax_flops=5")


def conventions_of(args: argparse.Namespace, applied: bool = True) -> Conventions:
    """The conventions the arguments name: the profile, then each ``--convention`` change.
    A command that does not apply conventions (``applied`` False) refuses any but symroof's.

    >>> ns = argparse.Namespace(conventions="llm-viewer", convention=["softmax_flops=6"],
    ...                         command="report")
    >>> print(conventions_of(ns))
    conventions: llm-viewer, softmax_flops=6
    >>> conventions_of(argparse.Namespace(conventions="x", convention=[], command="report"))
    Traceback (most recent call last):
    ...
    ValueError: --conventions 'x': unknown conventions 'x'; profiles are symroof, book, ...
    """
    name = getattr(args, "conventions", None) or "symroof"
    try:
        cv = profile(name)
    except ValueError as err:
        raise ValueError(f"--conventions {name!r}: {err}") from None
    changes = dict(parse_assignment(text) for text in getattr(args, "convention", None) or ())
    cv = cv.replace(**changes)
    if not applied and cv != profile("symroof"):
        raise ValueError(f"symroof {args.command} does not apply --conventions yet (its numbers "
                         f"are symroof's); conventions apply to: report, serve, solve, compare, "
                         "train, conventions")
    return cv


def _finite(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    return x


def dumps(data: Any) -> str:
    """JSON with NaN and infinities as null (strict JSON readers reject them)."""
    return json.dumps(_finite(data), indent=2)


def conventions_named(conventions: Any) -> str:
    """``, conventions: NAME[, field=value]`` for a title line; empty for symroof's own.

    >>> conventions_named("book"), conventions_named(None)
    (', conventions: book', '')
    """
    return as_conventions(conventions).title_part
