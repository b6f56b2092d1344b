"""``symroof conventions``: the accounting conventions as data. Without arguments it lists
the profiles and every field; with a NAME it shows one profile (its fields, what it changes
and where each change comes from); with ``--diff A,B`` and a step it explains, row by row,
why the two give different numbers (:func:`symroof.compare_conventions`).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..conventions import DOCS, FIELDS, PROFILES, profile
from ..models import MODELS
from ..models.convention_diff import compare_conventions
from .cli_args import SIZE, chip_of
from .cli_args import load_model as _model
from .cli_format import table

__all__ = ["cmd_conventions", "add_conventions"]


def _allowed(name: str) -> str:
    values = FIELDS[name][0]
    return ", ".join("a count per element" if v == "int" else "row keys" if v == "rows"
                     else str(v) for v in values)


def _show(v: Any) -> str:
    return ",".join(v) if isinstance(v, tuple) else str(v)


def _listing(args: argparse.Namespace) -> str:
    names = list(PROFILES)
    if args.format == "json":
        return json.dumps({"profiles": {n: PROFILES[n].as_dict() for n in names},
                           "fields": {f: {"allowed": list(FIELDS[f][0]),
                                          "meaning": FIELDS[f][1], "read_in": FIELDS[f][2]}
                                      for f in FIELDS}}, indent=2)
    rows = [["field", *names, "allowed"]]
    rows += [[f, *(_show(getattr(PROFILES[n], f)) for n in names), _allowed(f)]
             for f in FIELDS]
    return table(args.format, rows, "\n\neach profile's sources: symroof conventions NAME")


def _one(args: argparse.Namespace) -> str:
    cv = profile(args.name).replace(**{f: getattr(args.conventions, f)
                                       for f in args.conventions.changed()})
    if args.format == "json":
        return json.dumps({**cv.as_dict(), "doc": DOCS[cv.name]}, indent=2)
    rows = [["field", "value", "meaning"]]
    rows += [[f, _show(getattr(cv, f)), FIELDS[f][1]] for f in FIELDS]
    return f"{cv}\n\n" + table(args.format, rows) + "\n\n" + DOCS[cv.name]


def _diff(args: argparse.Namespace) -> str:
    return diff_text(args, args.diff, args.phase, "--diff")


def diff_text(args: argparse.Namespace, profiles: str, phase: Any, flag: str = "--conventions"
              ) -> str:
    """Two profiles (``"A,B"``) on the step the arguments give, row by row, as text or JSON
    (``symroof conventions --diff A,B`` and ``symroof compare --conventions A,B``)."""
    pair = [p.strip() for p in profiles.split(",")]
    if len(pair) != 2:
        raise ValueError(f"{flag} wants two profiles, A,B (e.g. symroof,llm-viewer), got "
                         f"{profiles!r}")
    given = {"model": args.model, "chip": args.chip, "phase": phase, "batch": args.batch,
             "context": args.context}
    missing = [f"--{k}" for k, v in given.items() if v is None]
    if missing:
        raise ValueError(f"{flag} needs a step: {', '.join(missing)}")
    S = args.context
    T = S if phase == "prefill" else 1
    d = compare_conventions(_model(args.model), chip_of(args), args.batch, T, S - T, *pair,
                            dtype=(args.dtype or "bf16").strip().lower(),
                            attention=getattr(args, "attention", "fused"))
    if args.format == "json":
        return json.dumps(d.as_dict(), indent=2)
    return str(d)


def cmd_conventions(args: argparse.Namespace) -> int:
    if args.diff is not None:
        print(_diff(args))
    elif args.name is not None:
        print(_one(args))
    else:
        print(_listing(args))
    return 0


def add_conventions(command: Any) -> None:
    """The ``conventions`` subcommand's options (``command``: build_parser's adder)."""
    c = command("conventions", cmd_conventions, "the accounting conventions: list the "
                "profiles and fields, show one profile and its sources, or (--diff A,B) "
                "explain row by row why two give different numbers for one step",
                ("text", "markdown", "json"), on_chip=False)
    c.add_argument("name", nargs="?", metavar="NAME", help=f"a profile to show: "
                   f"{', '.join(PROFILES)}")
    c.add_argument("--diff", metavar="A,B", help="compare two profiles on one step "
                   "(with --model, --chip, --phase, --batch, --context)")
    c.add_argument("--model", help=f"one of: {', '.join(MODELS)}; or a config.json")
    c.add_argument("--phase", choices=("prefill", "decode"))
    c.add_argument("--batch", type=SIZE, metavar="B", help="sequences in the batch")
    c.add_argument("--context", type=SIZE, metavar="S", help="tokens each sequence attends "
                   "to (prefill: the prompt)")
    c.add_argument("--attention", choices=("fused", "naive"), default="fused")
