"""The ``symroof`` command: roofline answers in a terminal (``symroof --help``).

>>> main(["critical-batch", "--chip", "tpu-v5e"])
critical batch of X[B,D] @ W[D,F] on tpu-v5e at the bf16 peak (x_bytes=2, w_bytes=2, out_bytes=2)
  B* = 9850/41 = 240.2439
  formula: B* = (C/W) * w_bytes / 2   (regime B << D, F, where intensity ~ 2B / w_bytes)
  C = 197 TFLOP/s, W = 820 GB/s, C/W = 9850/41 = 240.24 FLOP/B
0
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from .. import __version__
from ..analysis import critical_batch
from ..hardware import CHIPS, chip, dtype_bytes
from ..models import MODELS, model
from ..models.check import check
from ..models.table import roofline_table
from ..ops import matmul
from ..render import fmt_si
from ..symbols import B
from .cli_format import (
    WIDTHS,
    critical_batch_text,
    network_data,
    network_text,
    num,
    report_title,
    report_widths,
    roofs,
    table,
)
from .notes import LatexError, build_notes

__all__ = ["main", "build_parser"]

EXAMPLES = """examples:
  symroof chips                                    chip presets, figures and sources
  symroof models                                   model presets
  symroof critical-batch --chip b200 --dtype fp8   batch where a matmul turns compute-bound
  symroof report --model llama-3.1-8b --chip h100 --phase decode --batch 64 --context 2048
  symroof report --model config.json --chip h100 --phase prefill --batch 1 --context 2048
  symroof check --model tiny --batch 4 --new-tokens 16 --cached 0
  symroof notes --out notes                        lecture notes (LaTeX, PDF with pdflatex)
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line on stderr, exit 2, no usage dump
        self.exit(2, f"symroof: error: {message} (see '{self.prog} --help')\n")


def _number(kind: type, ok: Any, what: str):
    """An argparse type: text read as ``kind`` for which ``ok(value)`` holds, or a clear error."""
    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or not ok(value):
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
        return int(value) if kind is float and value.is_integer() else value
    return parse


_POSITIVE = _number(int, lambda v: v >= 1, "a positive integer")
_WIDTH = _number(float, lambda v: 0 < v < float("inf"), "a positive number of bytes")


def _model(name: str):  # a preset, a config.json, or a Hugging Face snapshot folder
    return model(os.path.join(name, "config.json") if os.path.isdir(name) else name)


def _dtype(args: argparse.Namespace) -> str:  # --dtype as given, lower case; bf16 if absent
    return (args.dtype or "bf16").strip().lower()


def _emit(args: argparse.Namespace, data: Any, rows: list[list[str]], extra: str = "") -> int:
    """Print ``data`` as JSON, or ``rows`` (header first) as Markdown or aligned text."""
    print(json.dumps(data, indent=2) if args.format == "json" else
          table(args.format, rows, extra))
    return 0


# -- commands ---------------------------------------------------------------------------
def cmd_chips(args: argparse.Namespace) -> int:
    chips = [chip(n) for n in args.names] if args.names else list(CHIPS.values())
    data = {c.name: {"peaks": {d: num(v) for d, v in c.peaks.items()},
                     "hbm_bw": num(c.hbm_bw), "hbm_bytes": num(c.hbm_bytes),
                     "link_bw": num(c.link_bw),
                     "ridge": {d: float(c.critical_intensity(d)) for d in c.peaks},
                     "ridge_exact": {d: str(c.critical_intensity(d)) for d in c.peaks},
                     "network": network_data(c.network), "sources": dict(c.sources)}
            for c in chips}
    rows = [["chip", "peaks FLOP/s (dense)", "HBM B/s", "HBM bytes", "link B/s", "ridge bf16",
             "network"]]
    rows += [[c.name, ", ".join(f"{d} {fmt_si(v)}" for d, v in c.peaks.items()),
              fmt_si(c.hbm_bw), fmt_si(c.hbm_bytes), fmt_si(c.link_bw),
              f"{float(c.critical_intensity('bf16')):.4g}" if "bf16" in c.peaks else "-",
              network_text(c.network)] for c in chips]
    bullet = "- " if args.format == "markdown" else "  "
    return _emit(args, data, rows, "\n\nsources:\n" + "\n".join(
        f"{bullet}{c.name} {key}: {src}" for c in chips for key, src in c.sources.items()))


def cmd_models(args: argparse.Namespace) -> int:
    ms = [_model(n) for n in args.names] if args.names else list(MODELS.values())
    dims = ("D", "F", "L", "H", "G", "d_h", "V")
    data = {m.name: {**{d: int(getattr(m, d)) for d in dims}, "tied": m.tied,
                     "qkv_bias": m.qkv_bias, "params": int(m.params), "source": m.source}
            for m in ms}
    rows = [["model", *dims, "tied", "params", "source"]]
    rows += [[m.name, *(str(getattr(m, d)) for d in dims), "yes" if m.tied else "no",
              f"{int(m.params):,} ({fmt_si(m.params)})", m.source] for m in ms]
    return _emit(args, data, rows)


def cmd_critical_batch(args: argparse.Namespace) -> int:
    if (args.d is None) != (args.f is None):
        raise ValueError("--d and --f go together (the exact root; neither: B << D, F)")
    c, dtype = chip(args.chip), _dtype(args)
    ridge = c.critical_intensity(dtype)
    xb = args.x_bytes or dtype_bytes(dtype)
    wb, ob = args.w_bytes or dtype_bytes(dtype), args.out_bytes or xb
    value = critical_batch(c, dtype=dtype, x_bytes=xb, w_bytes=wb, out_bytes=ob,
                           D=args.d, F=args.f)
    formula = ("B* = (C/W) * w_bytes / 2   (regime B << D, F, where intensity ~ 2B / w_bytes)"
               if args.d is None else "exact root in B of intensity = C/W, intensity = "
               + str(matmul(B, args.d, args.f, x_bytes=xb, w_bytes=wb, out_bytes=ob).intensity))
    if args.format == "json":
        return _emit(args, {"chip": c.name, "dtype": dtype, "x_bytes": xb, "w_bytes": wb,
                            "out_bytes": ob, "D": args.d, "F": args.f,
                            "critical_batch": num(value), "critical_batch_exact": str(value),
                            "ridge": float(ridge), "ridge_exact": str(ridge),
                            "formula": formula}, [[]])
    shown = f"{value} = {float(value):.4f}" if value.is_finite else (
        "none: the matmul stays memory-bound at every batch (intensity tends to "
        f"{float(2 * args.d * args.f / (xb * args.d + ob * args.f)):.4g} < C/W)")
    head = (f"critical batch of X[B,D] @ W[D,F] on {c.name} at the {dtype} peak "
            f"(x_bytes={xb}, w_bytes={wb}, out_bytes={ob})"
            + (f", D={args.d}, F={args.f}" if args.d else ""))
    print(critical_batch_text(args.format, head, shown, formula,
                              roofs(c.peak(dtype), c.hbm_bw, ridge)))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    c, dtype = chip(args.chip), _dtype(args)
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
    t = roofline_table(m, c, batch=args.batch, new_tokens=T, cached=cached, dtype=dtype,
                       groups=args.groups, attention=args.attention,
                       title=report_title(args.model, args.phase, args.batch, S, T, cached,
                                          args.attention, dtype, used, from_dtype))
    query = {"model": args.model, "params": int(m.params), "chip": c.name,
             "phase": args.phase, "batch": args.batch, "context": S, "new_tokens": T,
             "cached": cached, "attention": args.attention, "groups": args.groups,
             "dtype": dtype, **used}
    print({"text": t.to_text, "markdown": t.to_markdown, "latex": t.to_latex,
           "json": lambda: json.dumps({"query": query, **t.as_dict()}, indent=2)}[args.format]())
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    report = check(_model(args.model), args.batch, args.new_tokens, args.cached,
                   last_only=args.last_only)
    print({"text": report.__str__, "markdown": report._repr_markdown_,
           "json": lambda: json.dumps(report.as_dict(), indent=2)}[args.format]())
    return 0 if report.ok else 1


def cmd_notes(args: argparse.Namespace) -> int:
    notes = build_notes(args.out, scripts=args.scripts, pdf=not args.no_pdf)
    print(f"wrote {notes.tex}: {len(notes.sections)} section(s), {len(notes.figures)} "
          f"figure(s) in {notes.tex.parent / 'figures'}" + (notes.replaced and "; replaced "
          f"characters pdflatex cannot typeset by '?': {''.join(notes.replaced)}" or ""))
    print(f"compiled {notes.pdf}" if notes.pdf else f"no PDF: {notes.pdf_note}")
    return 0


def _measure() -> Any:  # lazy: only `symroof measure` pays for importing it
    if importlib.util.find_spec("symroof.surfaces.measure") is None:
        raise ValueError("'symroof measure' needs symroof.surfaces.measure, which this "
                         "installation does not have")
    return importlib.import_module("symroof.surfaces.measure")


# -- parser -----------------------------------------------------------------------------
def build_parser(with_measure: bool = False) -> argparse.ArgumentParser:
    """The argument parser; ``with_measure`` imports symroof.surfaces.measure for its options."""
    p = _Parser(prog="symroof", description="symroof: symbolic rooflines of matmuls and "
                "transformers on accelerator chips.", epilog=EXAMPLES,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"symroof {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    def command(name: str, run: Any, text: str, formats: Sequence[str] = (),
                on_chip: bool = False) -> Any:
        c = sub.add_parser(name, help=text, description=text)
        c.set_defaults(run=run)
        if formats:
            c.add_argument("--format", choices=formats, default=formats[0],
                           help="output format (default: %(default)s)")
        if on_chip:
            c.add_argument("--chip", required=True, help=f"one of: {', '.join(CHIPS)}")
            c.add_argument("--dtype", help="whose peak FLOP/s and byte widths: bf16 (default), "
                           "fp16, fp8, int8 or fp32, as the chip has (see: symroof chips)")
        return c

    for name, run, what in (("chips", cmd_chips, "chip presets: peak FLOP/s per dtype, HBM "
                             "bandwidth and capacity, link bandwidth, and each figure's source"),
                            ("models", cmd_models, "model presets: dimensions, parameters, "
                             "source (or NAMES that are paths to Hugging Face config.json)")):
        c = command(name, run, what, ("text", "markdown", "json"))
        c.add_argument("names", nargs="*", metavar="NAME", help="show only these")
    c = command("critical-batch", cmd_critical_batch, "the batch B at which X[B,D] @ W[D,F] "
                "turns compute-bound: its intensity reaches the chip's peak / HBM bandwidth",
                ("text", "markdown", "json"), on_chip=True)
    for flag, what in (("x", "activations X"), ("w", "weights W"), ("out", "output Z")):
        c.add_argument(f"--{flag}-bytes", type=_WIDTH, metavar="N", help=f"bytes per element "
                       f"of {what} (default: " + ("as --x-bytes)" if flag == "out" else
                                                 "the dtype's, 1 for int8 and fp8, 2 for bf16)"))
    c.add_argument("--d", type=_POSITIVE, help="with --f: the exact root for these widths")
    c.add_argument("--f", type=_POSITIVE, help="with --d (default: the B << D, F regime)")
    c = command("report", cmd_report, "per-op roofline table of one forward step: FLOPs, "
                "bytes by kind, intensity, bound and time of each op, with totals, both time "
                "bounds and the bottleneck (useful FLOPs; lm_head on the last position)",
                ("text", "markdown", "latex", "json"), on_chip=True)
    c.add_argument("--model", required=True, help=f"one of: {', '.join(MODELS)}; or a path "
                   "to a Hugging Face config.json (or its folder)")
    c.add_argument("--phase", required=True, choices=("prefill", "decode"))
    c.add_argument("--batch", required=True, type=_POSITIVE, metavar="B",
                   help="sequences in the batch")
    c.add_argument("--context", required=True, type=_POSITIVE, metavar="S", help="tokens each "
                   "sequence attends to, new ones included (prefill: the prompt length)")
    c.add_argument("--new-tokens", type=_POSITIVE, metavar="T", help="decode only: new tokens "
                   "per sequence (default 1); the cache holds S - T tokens")
    c.add_argument("--groups", action="store_true", help="merge rows into op groups")
    c.add_argument("--attention", choices=("fused", "naive"), default="fused",
                   help="fused (FlashAttention-style) or naive (scores through memory)")
    for flag, what in (("w", "weight"), ("act", "activation"), ("kv", "KV-cache")):
        c.add_argument(f"--{flag}-bytes", type=_WIDTH, metavar="N", help=f"bytes per {what} "
                       "element (default: --dtype's width if given, 1 for int8 and fp8; "
                       "else the model's, 2)")
    c = command("check", cmd_check, "run the counted NumPy model and compare every op's "
                "FLOPs and bytes with the symbolic formulas, exactly (exit 1 on a mismatch)",
                ("text", "markdown", "json"))
    c.add_argument("--model", default="tiny", help="a small model or config (default: "
                   "%(default)s); the NumPy run must fit in 2 GiB of float64 arrays")
    c.add_argument("--batch", type=_POSITIVE, default=2, metavar="B",
                   help="sequences in the batch (default: %(default)s)")
    c.add_argument("--new-tokens", type=_POSITIVE, default=4, metavar="T",
                   help="new tokens per sequence, counted (default: %(default)s)")
    c.add_argument("--cached", type=_number(int, lambda v: v >= 0, "a non-negative integer"),
                   default=0, metavar="N", help="tokens already in the cache, run first and "
                   "not counted (default: %(default)s)")
    c.add_argument("--last-only", action="store_true", help="lm_head on the last position")
    c = command("notes", cmd_notes, "write lecture notes (LaTeX) from the derivation scripts, "
                "with their tables and figures; compile to PDF if pdflatex is on the PATH")
    c.add_argument("--out", default="notes", help="output folder (default: notes)")
    c.add_argument("--no-pdf", action="store_true", help="write notes.tex only")
    c.add_argument("--scripts", help="folder of NN_name.py scripts (default: the shipped ones)")
    c = command("measure", lambda args: _measure().run_cli(args), "measure this machine's "
                "roofs, then time the NumPy transformer op by op against them")
    if with_measure:
        _measure().add_arguments(c)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (0 ok, 1 check failed, 2 error)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        args = build_parser(with_measure=argv[:1] == ["measure"]).parse_args(argv)
        if args.command is None:
            build_parser().print_help()
            return 0
        return args.run(args)
    except BrokenPipeError:  # e.g. `symroof chips | head`: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (ValueError, TypeError, OSError, LatexError) as err:
        print(f"symroof: error: {err}", file=sys.stderr)
        return 1 if isinstance(err, LatexError) else 2
    except KeyboardInterrupt:
        return 130
