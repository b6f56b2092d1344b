"""``symroof compare``: one question (decode step, prefill, critical batch, serving plan,
training plan) asked of several chips, models, meshes or weight dtypes, side by side
(``sr.compare``): one table, and one plot with ``--plot``.

The axis flags come from :data:`symroof.surfaces.compare.AXES` (``--chips``, ``--models``,
``--meshes``, ``--dtypes``) and the questions from its ``QUESTIONS``: an axis added there is
a flag here.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..hardware.prices import PRICES
from ..parallel.serving import WIDTHS
from .cli_args import SIZE, arg_type, load_chip, load_model, mesh_of, usd
from .compare import AXES, QUESTIONS, compare

__all__ = ["cmd_compare", "add_compare"]


def _values(flag: str, text: str) -> list[str]:
    values = [v.strip() for v in text.split(",") if v.strip()]
    if len(values) < 2:
        raise ValueError(f"--{flag} {text!r}: give two or more, separated by commas (e.g. "
                         f"--chips h100,tpu-v5e,b200)")
    return values


def _read(flag: str, value: str) -> Any:
    """A value as the other commands read it (presets, config.json, chip records)."""
    try:
        if flag in ("model", "models"):
            return load_model(value)
        if flag in ("chip", "chips"):
            return load_chip(value)
        if flag in ("mesh", "meshes"):
            return mesh_of(value)
    except ValueError as err:
        raise ValueError(f"--{flag} {value!r}: {err}") from None
    return value


def _conventions(args: argparse.Namespace) -> int:
    """``--conventions A,B``: one step's rows under two profiles side by side, with the fields
    that account for each difference (``sr.compare_conventions``, as ``symroof conventions
    --diff A,B`` prints it)."""
    from .cli_conventions import diff_text

    if args.question not in ("decode", "prefill"):
        raise ValueError(f"--conventions A,B compares one step's rows: use --question decode "
                         f"or prefill (this is {args.question})")
    given = [f"--{a}" for a in AXES if getattr(args, a) is not None]
    if given:
        raise ValueError(f"--conventions A,B is the thing compared: drop {', '.join(given)}")
    print(diff_text(args, args.conventions, args.question))
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    if isinstance(args.conventions, str) and "," in args.conventions:
        return _conventions(args)
    given = [a for a in AXES if getattr(args, a) is not None]
    if len(given) != 1:
        raise ValueError("compare varies one thing: give one of "
                         + ", ".join(f"--{a}" for a in AXES)
                         + (f" (got {', '.join('--' + a for a in given)})" if given else ""))
    axis = given[0]
    values = [_read(axis, v) for v in _values(axis, getattr(args, axis))]
    setting = {k: _read(k, getattr(args, k)) for k in ("model", "chip", "mesh")
               if getattr(args, k) is not None}
    setting.update(batch=args.batch, context=args.context, kv=args.kv,
                   dtype=(args.dtype or "bf16").strip().lower(), conventions=args.conventions)
    if args.weights is not None:
        setting["weights"] = args.weights.strip().lower()
    if args.price is not None:
        if args.question != "serve":
            raise ValueError(f"--price prices a serving plan's tokens: use --question serve "
                             f"(this is {args.question})")
        setting.update(price=args.price, price_source="command line (--price)")
    result = compare(args.question, axis, values, **setting)
    print({"text": result.to_text, "markdown": result.to_markdown, "latex": result.to_latex,
           "json": result.to_json}[args.format]())
    if args.plot:
        Path(args.plot).parent.mkdir(parents=True, exist_ok=True)
        result.plot(args.plot)
        print(f"wrote {args.plot}")
    return 0


def add_compare(command: Any) -> None:
    """The ``compare`` subcommand's options (``command``: build_parser's adder)."""
    c = command("compare", cmd_compare, "one question side by side for several chips, "
                "models, meshes or weight dtypes: one table (--format) and one plot (--plot)",
                ("text", "markdown", "latex", "json"))
    for axis, entry in AXES.items():
        c.add_argument(f"--{axis}", metavar="A,B,...", help=f"compare these {entry.what}, "
                       "comma-separated")
    c.add_argument("--question", "--phase", dest="question", choices=tuple(QUESTIONS),
                   default="decode", help="what is asked of each: " + "; ".join(
                       f"{k}: {q.what}" for k, q in QUESTIONS.items())
                   + " (default: %(default)s)")
    c.add_argument("--model", help="the model (unless --models)")
    c.add_argument("--chip", help="the chip (unless --chips); a preset or a JSON record")
    c.add_argument("--mesh", metavar="CHIP:SHAPE", help="the slice (unless --meshes): serve "
                   "and train need one; decode on a mesh is sr.serve's per-chip step")
    c.add_argument("--batch", type=SIZE, metavar="B", help="sequences (train: sequences "
                   "per step, of --context tokens each)")
    c.add_argument("--context", type=SIZE, metavar="S", help="tokens each sequence attends "
                   "to, the new one included (train: the sequence length); 8k = 8,192")
    c.add_argument("--weights", help=f"storage dtype of the weights (unless --dtypes): "
                   f"{', '.join(WIDTHS)} (default: bf16)")
    c.add_argument("--kv", help="storage dtype of the KV cache (default: the model's, bf16)")
    c.add_argument("--dtype", help="whose peak FLOP/s: bf16 (default), fp8, int8, ...")
    c.add_argument("--price", type=arg_type(usd), metavar="USD_PER_CHIP_HOUR", help="serve: the "
                   "price of a chip-hour, for $ per million tokens (default: the price on "
                   f"record, for {', '.join(PRICES)})")
    c.add_argument("--plot", metavar="PATH", help="also draw the comparison (PNG or SVG)")
