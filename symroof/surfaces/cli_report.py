"""``symroof report``: the per-op roofline table of one forward step on one chip
(``sr.roofline_table``), or, with ``--mesh``, of each chip of a sharded decode step
(:func:`symroof.surfaces.cli_serve.report_mesh`).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..models import MODELS
from ..models.table import roofline_table
from .cli_args import SIZE, WIDTH, add_mesh_options, chip_of
from .cli_args import load_model as _model
from .cli_format import WIDTHS, num, report_title, report_widths

__all__ = ["cmd_report", "add_report"]


def _dtype(args: argparse.Namespace) -> str:  # --dtype as given, lower case; bf16 if absent
    return (args.dtype or "bf16").strip().lower()


def cmd_report(args: argparse.Namespace) -> int:
    if (args.chip is None) == (args.mesh is None):
        raise ValueError("report takes --chip CHIP (one chip) or --mesh CHIP:SHAPE (each chip "
                         "of a sharded decode step), one of them")
    dtype = _dtype(args)
    c = chip_of(args) if args.chip else None
    if c is not None:
        c.peak(dtype)  # an unknown dtype fails here, naming the chip's dtypes
    m = _model(args.model)
    widths, from_dtype = report_widths({k: getattr(args, k) for k in WIDTHS}, args.dtype, m)
    m = m.replace(**widths)
    S, T = args.context, args.new_tokens
    if args.phase == "prefill" and T is not None:
        raise ValueError("--new-tokens applies to --phase decode; a prefill step's new tokens "
                         "are the prompt (--context)")
    T = S if args.phase == "prefill" else T or 1
    if T > S:
        raise ValueError(f"--new-tokens ({T}) must not exceed --context ({S}): the context "
                         "counts the new tokens too")
    cached = S - T
    used = {k: num(getattr(m, k)) for k in WIDTHS}
    name = m.name if m.name == args.model.strip().lower() else f"{m.name} ({args.model})"
    query = {"model": args.model, "model_name": m.name, "params": int(m.params),
             "chip": c and c.name,
             "phase": args.phase, "batch": args.batch, "context": S, "new_tokens": T,
             "cached": cached, "attention": args.attention, "groups": args.groups,
             "dtype": dtype, **used}

    def title(phase: str) -> str:
        return report_title(name, phase, args.batch, S, T, cached, args.attention, dtype,
                            used, from_dtype)
    if args.mesh:
        from .cli_serve import report_mesh  # the serving plans load for --mesh only

        return report_mesh(args, m, dtype, widths, title, query)
    t = roofline_table(m, c, batch=args.batch, new_tokens=T, cached=cached, dtype=dtype,
                       groups=args.groups, attention=args.attention, title=title(args.phase),
                       conventions=args.conventions)
    print({"text": t.to_text, "markdown": t.to_markdown, "latex": t.to_latex,
           "json": lambda: json.dumps({"query": query, **t.as_dict()}, indent=2)}[args.format]())
    return 0



def add_report(command: Any) -> None:
    """The ``report`` subcommand's options (``command``: build_parser's adder)."""
    c = command("report", cmd_report, "per-op roofline table of one forward step: FLOPs, "
                "bytes by kind, intensity, bound and time of each op, with totals, both time "
                "bounds and the bottleneck (useful FLOPs; lm_head on the last position)",
                ("text", "markdown", "latex", "json"), on_chip=False)
    add_mesh_options(c, required=False)
    c.add_argument("--model", required=True, help=f"one of: {', '.join(MODELS)}; or a path "
                   "to a Hugging Face config.json (or its folder)")
    c.add_argument("--phase", required=True, choices=("prefill", "decode"))
    c.add_argument("--batch", required=True, type=SIZE, metavar="B",
                   help="sequences in the batch")
    c.add_argument("--context", required=True, type=SIZE, metavar="S", help="tokens each "
                   "sequence attends to, new ones included (prefill: the prompt length); "
                   "8k = 8,192, 128k = 131,072, 1e6 = 1,000,000")
    c.add_argument("--new-tokens", type=SIZE, metavar="T", help="decode only: new tokens "
                   "per sequence (default 1); the cache holds S - T tokens")
    c.add_argument("--groups", action="store_true", help="merge rows into op groups")
    c.add_argument("--attention", choices=("fused", "naive"), default="fused",
                   help="fused (FlashAttention-style) or naive (scores through memory)")
    for flag, what in (("w", "weight"), ("act", "activation"), ("kv", "KV-cache")):
        c.add_argument(f"--{flag}-bytes", f"--{flag}-dtype", dest=f"{flag}_bytes", type=WIDTH,
                       metavar="N", help=f"bytes per {what} element, or its dtype (int4 and "
                       "fp4: half a byte; default: --dtype's width if given, else the "
                       "model's, 2)")
