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
import warnings
from collections.abc import Sequence
from typing import Any, NoReturn

from .. import __version__
from ..analysis import critical_batch
from ..hardware import CHIPS, dtype_bytes
from ..hardware.chip_file import ChipWarning
from ..hardware.internals import ROOFS
from ..hardware.internals import roof as roof_of
from ..models import MODELS
from ..ops import matmul
from ..render import fmt_si
from ..symbols import B
from .cli_args import (
    SIZE,
    WIDTH,
    add_chip_options,
    add_conventions_options,
    arg_type,
    chip_of,
    conventions_of,
    load_chip,
    size,
)
from .cli_args import load_model as _model
from .cli_format import (
    WIDTHS,
    critical_batch_text,
    model_structure,
    network_data,
    network_text,
    num,
    roofs,
    table,
)
from .cli_problems import add_handout_options

__all__ = ["main", "build_parser"]

EXAMPLES = """examples:
  symroof chips --sources                          chip presets, figures and sources
  symroof models                                   model presets
  symroof critical-batch --chip b200 --dtype fp8   batch where a matmul turns compute-bound
  symroof report --model llama-3.1-8b --chip h100 --phase decode --batch 64 --context 2048
  symroof report --model config.json --chip h100 --phase prefill --batch 1 --context 2048
  symroof report --model llama-3.1-70b --mesh tpu-v5e:4x4 --phase decode --batch 32 --context 8k
  symroof train --model llama-3.1-70b --mesh tpu-v5p:16x16x16 --tokens 4M --seq 4096
  symroof serve --model llama-3.1-70b --mesh tpu-v5e:4x4 --batch 32 --context 8k
  symroof solve "t_math = t_mem" --for batch --model llama-3.1-8b --chip h100 --context 4096
  symroof check --model tiny --batch 4 --new-tokens 16 --cached 0
  symroof compare --chips h100,tpu-v5e,b200 --model llama-3.1-70b --batch 64 --context 8k
  symroof notes --out notes                        lecture notes (LaTeX, PDF with pdflatex)
  symroof problems --chapter sharding --seed 2027  a problem sheet and its worked solutions
  symroof notes --audience students --chapters 1,4 a handout of chapters 1 and 4
"""


#: commands whose numbers follow --conventions (the others refuse any but symroof's)
_APPLY_CONVENTIONS = ("report", "conventions", "chips", "models", "train", "serve", "solve",
                      "compare")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line on stderr, exit 2, no usage dump
        self.exit(2, f"symroof: error: {message} (see '{self.prog} --help')\n")


def _dtype(args: argparse.Namespace) -> str:  # --dtype as given, lower case; bf16 if absent
    return (args.dtype or "bf16").strip().lower()


def _emit(args: argparse.Namespace, data: Any, rows: list[list[str]], extra: str = "") -> int:
    """Print ``data`` as JSON, or ``rows`` (header first) as Markdown or aligned text."""
    print(json.dumps(data, indent=2) if args.format == "json" else
          table(args.format, rows, extra))
    return 0


# -- commands ---------------------------------------------------------------------------
def cmd_chips(args: argparse.Namespace) -> int:
    chips = [load_chip(n) for n in args.names] if args.names else list(CHIPS.values())
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
    if not args.sources:
        return _emit(args, data, rows, "\n\nthe source of every figure: symroof chips "
                     "--sources")
    return _emit(args, data, rows, "\n\nsources:\n" + "\n".join(
        f"{bullet}{c.name} {key}: {src}" for c in chips for key, src in c.sources.items()))


def cmd_models(args: argparse.Namespace) -> int:
    ms = [_model(n) for n in args.names] if args.names else list(MODELS.values())
    dims = ("D", "F", "L", "H", "G", "d_h", "V")
    data = {m.name: {**{d: int(getattr(m, d)) for d in dims}, "tied": m.tied,
                     "qkv_bias": m.qkv_bias, "params": int(m.params),
                     "active_params": int(m.active_params), **model_structure(m),
                     "max_position": num(m.max_position) if m.max_position else None,
                     **{w: num(getattr(m, w)) for w in WIDTHS}, "notes": list(m.notes),
                     "source": m.source}
            for m in ms}
    rows = [["model", *dims, "tied", "params", "active", "attention", "MLP", "max context",
             "family", "source"]]
    rows += [[m.name, *(str(getattr(m, d)) for d in dims), "yes" if m.tied else "no",
              f"{int(m.params):,} ({fmt_si(m.params)})", fmt_si(m.active_params),
              *(model_structure(m)[k] for k in ("attention", "mlp")),
              f"{int(m.max_position):,}" if m.max_position else "?",
              model_structure(m)["family"], m.source] for m in ms]
    notes = [f"{m.name}: {note}" for m in ms for note in m.notes]
    return _emit(args, data, rows, "".join(f"\nnote: {n}" for n in notes))


def cmd_critical_batch(args: argparse.Namespace) -> int:
    if (args.d is None) != (args.f is None):
        raise ValueError("--d and --f go together (the exact root; neither: B << D, F)")
    c, dtype = chip_of(args), _dtype(args)
    compute, feed = roof_of(c, args.roof, dtype)  # the level's peak and bandwidth
    ridge = compute / feed
    xb = args.x_bytes or dtype_bytes(dtype)
    wb, ob = args.w_bytes or dtype_bytes(dtype), args.out_bytes or xb
    value = critical_batch(c, dtype=dtype, x_bytes=xb, w_bytes=wb, out_bytes=ob,
                           D=args.d, F=args.f, roof=args.roof)
    formula = ("B* = (C/W) * w_bytes / 2   (regime B << D, F, where intensity ~ 2B / w_bytes)"
               if args.d is None else "exact root in B of intensity = C/W, intensity = "
               + str(matmul(B, args.d, args.f, x_bytes=xb, w_bytes=wb, out_bytes=ob).intensity))
    if args.format == "json":
        return _emit(args, {"chip": c.name, "dtype": dtype, "x_bytes": num(xb),
                            "w_bytes": num(wb), "out_bytes": num(ob), "D": args.d, "F": args.f,
                            "roof": args.roof,
                            "critical_batch": num(value), "critical_batch_exact": str(value),
                            "ridge": float(ridge), "ridge_exact": str(ridge),
                            "formula": formula}, [[]])
    shown = f"{value} = {float(value):.4f}" if value.is_finite else (
        "none: the matmul stays memory-bound at every batch (intensity tends to "
        f"{float(2 * args.d * args.f / (xb * args.d + ob * args.f)):.4g} < C/W)")
    head = (f"critical batch of X[B,D] @ W[D,F] on {c.name} at the {dtype} peak "
            f"(x_bytes={xb}, w_bytes={wb}, out_bytes={ob})"
            + (f", D={args.d}, F={args.f}" if args.d else "")
            + (f", against its {args.roof.upper()} roof" if args.roof != "hbm" else ""))
    print(critical_batch_text(args.format, head, shown, formula, roofs(compute, feed, ridge)))
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from ..models.check import check  # the NumPy twin loads for this command only

    report = check(_model(args.model), args.batch, args.new_tokens, args.cached,
                   last_only=args.last_only)
    print({"text": report.__str__, "markdown": report._repr_markdown_,
           "json": lambda: json.dumps(report.as_dict(), indent=2)}[args.format]())
    return 0 if report.ok else 1


def cmd_notes(args: argparse.Namespace) -> int:
    from .notes import build_notes  # lazy: only `symroof notes` pays for it

    notes = build_notes(args.out, scripts=args.scripts, pdf=not args.no_pdf,
                        audience=args.audience, title=args.title, author=args.author,
                        date=args.date, chapters=args.chapters)
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
#: the commands with a module of their own: name -> (module, the function adding its options)
_FAMILIES = {"report": ("cli_report", "add_report"), "train": ("cli_train", "add_train"),
             "serve": ("cli_serve", "add_serve"), "solve": ("cli_solve", "add_solve"),
             "problems": ("cli_problems", "add_problems"),
             "compare": ("cli_compare", "add_compare"),
             "conventions": ("cli_conventions", "add_conventions")}


def build_parser(with_measure: bool = False, only: str | None = None
                 ) -> argparse.ArgumentParser:
    """The argument parser; ``with_measure`` imports symroof.surfaces.measure for its options.
    ``only``, the command about to run: of the commands with a module of their own, only its
    module is imported (a ``report`` does not load the training plans); anything else (None,
    ``--help``, a misspelt command): every command, so that help and errors list them all.

    >>> names = build_parser(only="report")._subparsers._group_actions[0].choices
    >>> "report" in names, "train" in names
    (True, False)
    """
    p = _Parser(prog="symroof", description="symroof: symbolic rooflines of matmuls and "
                "transformers on accelerator chips.", epilog=EXAMPLES,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"symroof {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    def command(name: str, run: Any, text: str, formats: Sequence[str] = (),
                on_chip: bool | None = None) -> Any:
        """A subcommand; ``on_chip`` adds --chip (required if True) and --dtype."""
        c = sub.add_parser(name, help=text, description=text)
        c.set_defaults(run=run)
        add_conventions_options(c)
        if formats:
            c.add_argument("--format", choices=formats, default=formats[0],
                           help="output format (default: %(default)s)")
        if on_chip is not None:
            add_chip_options(c, required=on_chip)
            c.add_argument("--dtype", help="whose peak FLOP/s and byte widths: bf16 (default), "
                           "fp16, fp8, int8 or fp32, as the chip has (see: symroof chips)")
        return c

    for name, run, what in (("chips", cmd_chips, "chip presets: peak FLOP/s per dtype, HBM "
                             "bandwidth and capacity, link bandwidth, network (--sources: and "
                             "each figure's source)"),
                            ("models", cmd_models, "model presets: dimensions, parameters, "
                             "source (or NAMES that are paths to Hugging Face config.json)")):
        c = command(name, run, what, ("text", "markdown", "json"))
        c.add_argument("names", nargs="*", metavar="NAME", help="show only these (or "
                       "paths: a config.json for models, a JSON chip record for chips)")
        if name == "chips":
            c.add_argument("--sources", action="store_true", help="list the source of every "
                           "figure (JSON always has them)")
    c = command("critical-batch", cmd_critical_batch, "the batch B at which X[B,D] @ W[D,F] "
                "turns compute-bound: its intensity reaches the chip's peak / HBM bandwidth",
                ("text", "markdown", "json"), on_chip=True)
    for flag, what in (("x", "activations X"), ("w", "weights W"), ("out", "output Z")):
        c.add_argument(f"--{flag}-bytes", type=WIDTH, metavar="N", help=f"bytes per element "
                       f"of {what}, or a dtype such as int4 (default: " + (
                           "as --x-bytes)" if flag == "out" else
                           "the dtype's, 1 for int8 and fp8, 2 for bf16)"))
    c.add_argument("--d", type=SIZE, help="with --f: the exact root for these widths")
    c.add_argument("--f", type=SIZE, help="with --d (default: the B << D, F regime)")
    c.add_argument("--roof", choices=list(ROOFS), default="hbm", help="the level W is read "
                   "off: " + "; ".join(f"{k}: {v}" for k, v in ROOFS.items()))
    for name, (module, add) in _FAMILIES.items():
        if only not in _FAMILIES or only == name:  # --help, a typo: every command
            getattr(importlib.import_module(f".{module}", __package__), add)(command)
    c = command("check", cmd_check, "run the counted NumPy model and compare every op's "
                "FLOPs and bytes with the symbolic formulas, exactly (exit 1 on a mismatch)",
                ("text", "markdown", "json"))
    c.add_argument("--model", default="tiny", help="a small model or config (default: "
                   "%(default)s); the NumPy run must fit in 2 GiB of float64 arrays")
    c.add_argument("--batch", type=SIZE, default=2, metavar="B",
                   help="sequences in the batch (default: %(default)s)")
    c.add_argument("--new-tokens", type=SIZE, default=4, metavar="T",
                   help="new tokens per sequence, counted (default: %(default)s)")
    c.add_argument("--cached", type=arg_type(size, 0), default=0, metavar="N",
                   help="tokens already in the cache, run first and not counted (default: "
                   "%(default)s)")
    c.add_argument("--last-only", action="store_true", help="lm_head on the last position")
    c = command("notes", cmd_notes, "write lecture notes (LaTeX) from the derivation scripts, "
                "with their tables and figures; compile to PDF if pdflatex is on the PATH")
    c.add_argument("--out", default="notes", help="output folder (default: notes)")
    c.add_argument("--no-pdf", action="store_true", help="write notes.tex only")
    c.add_argument("--scripts", help="folder of NN_name.py scripts (default: the shipped ones)")
    add_handout_options(c)
    c = command("measure", lambda args: _measure().run_cli(args), "measure this machine's "
                "roofs, then time the NumPy transformer op by op against them")
    if with_measure:
        _measure().add_arguments(c)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (0 ok, 1 check failed, 2 error)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("always", ChipWarning)
        warnings.showwarning = _warn_line
        return _main(argv)


def _warn_line(message: Any, category: Any, *_: Any, **__: Any) -> None:
    """A warning as one line on stderr, in the form of the errors."""
    print(f"symroof: warning: {message}", file=sys.stderr)


def _main(argv: list[str]) -> int:
    try:
        args = build_parser(with_measure=argv[:1] == ["measure"],
                            only=argv[0] if argv else None).parse_args(argv)
        if args.command is None:
            build_parser().print_help()
            return 0
        if args.command == "compare" and "," in (args.conventions or ""):
            return args.run(args)  # compare --conventions A,B: two profiles side by side
        args.conventions = conventions_of(args, args.command in _APPLY_CONVENTIONS)
        return args.run(args)
    except BrokenPipeError:  # e.g. `symroof chips | head`: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (ValueError, TypeError, OSError, RuntimeError) as err:
        notes = sys.modules.get(f"{__package__}.notes")  # loaded by the commands that compile
        latex = notes is not None and isinstance(err, notes.LatexError)  # pdflatex failed
        if isinstance(err, RuntimeError) and not latex:
            raise
        print(f"symroof: error: {err}", file=sys.stderr)
        return 1 if latex else 2
    except KeyboardInterrupt:
        return 130
