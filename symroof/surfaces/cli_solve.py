"""``symroof solve``: an equation between named quantities of one step, solved for batch,
context or new tokens under the step's stated assumptions (:mod:`symroof.surfaces.solve`):
the formula with every other quantity substituted, the root exact and in decimal, or why
there is none and the boundary that does exist.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

import sympy as sp

from ..conventions import as_conventions
from ..derivation import tex_escape
from ..hardware import as_chip
from ..render import latex, number, readable
from ..symbols import quantity
from .cli_args import (
    SIZE,
    WIDTH,
    add_chip_options,
    chip_of,
    conventions_named,
    dumps,
    load_model,
    mesh_of,
)
from .cli_format import WIDTHS, num, report_widths
from .solve import QUANTITIES, VARIABLES, VIEWS, solve_step

__all__ = ["cmd_solve", "add_solve"]

#: LaTeX of the quantities that are not plain words (the others print as \text{...})
_TEX = {"t_math": r"t_\text{math}", "t_mem": r"t_\text{mem}", "t_net": r"t_\text{net}",
        "t_lower": r"t_\text{lower}",
        "t_upper": r"t_\text{upper}", "flops": r"\text{FLOPs}", "kv_bytes": r"\text{KV bytes}"}


def _value(x: sp.Expr) -> str:
    """An exact value and its decimal: ``959038/2439 ~ 393.2``."""
    if x.is_Integer:
        return f"{x}"
    return f"{sp.sstr(x)} ~ {float(x):.6g}"


def _approx(e: sp.Expr, unit: str = "") -> str:
    return sp.sstr(e) if e.is_Integer else str(readable(e, unit, 4))


def _head(args: argparse.Namespace, model: Any, chip: Any, dtype: str, var: str,
          used: dict) -> str:
    given = [f"{n.replace('_', ' ')} {v:,}" for n, v in (
        ("batch", args.batch), ("context", args.context), ("new_tokens", args.new_tokens))
        if v is not None and n != var]
    if args.phase == "decode" and args.new_tokens is None and var != "new_tokens":
        given.append("1 new token per sequence")
    where = "" if chip is None else f" on {args.mesh}, per chip of a serving plan ({dtype} " \
        "peak)" if args.mesh else f" on {chip.name} ({dtype} peak)"
    view = "" if args.view == "rows" else ", lecture 1's whole-model roofline (weights + KV)"
    return (f"solve {args.equation.strip()} for {var} ({VARIABLES[var]}): {model.name} "
            f"{args.phase}{where}, {', '.join(given) or 'nothing else given'}, "
            + ", ".join(f"{k}={used[k]}" for k in WIDTHS) + view
            + conventions_named(args.conventions))


def _lines(s: Any) -> list[str]:
    lines = [f"{name} = {sp.sstr(e)}" + ("" if e.is_Integer else
                                         f"  (~ {_approx(e, _side_unit(typed))})")
             for name, e, typed in zip(s.sides, (s.lhs, s.rhs), s.typed)
             if typed.free_symbols]  # a side typed as a number is shown as typed
    if s.root is not None:
        lines.append(f"{s.variable} = {_value(s.root)}: {s.above} for {s.variable} > "
                     f"{float(s.root):.6g}")
        return lines
    lines.append(f"{s.variable}: never, because {s.never}")
    lines += [f"the boundary that exists: {b.variable} = {_value(b.value)}; {b.side} it "
              f"some {s.variable} reaches {s.equation.strip()}, "
              f"{'above' if b.side == 'below' else 'below'} it none does"
              for b in s.boundaries]
    return lines


#: the unit of each quantity, for its readable numbers (the others are counts)
_UNITS = {"t_math": "s", "t_mem": "s", "t_net": "s", "t_lower": "s", "t_upper": "s",
          "ridge": "FLOP/B", "flops": "FLOP", "bytes": "B", "weight_bytes": "B", "kv_bytes": "B",
          "act_bytes": "B", "intensity": "FLOP/B"}
_WORDS = re.compile(r"\b(" + "|".join(sorted(QUANTITIES, key=len, reverse=True))
                    + r")\b|(>|<|/)|(\d+(?:\.\d+)?(?:e[+-]?\d+)?)")


def _tex_reason(reason: str) -> str:
    r"""The reason there is no root, in LaTeX: quantities and numbers as maths, words as text.

    >>> print(_tex_reason("t_mem > t_math at every batch; t_math/t_mem tends to 0.1082"))
    t_\text{mem} > t_\text{math} \text{ at every batch; } t_\text{math} / t_\text{mem} ...
    >>> print(_tex_reason("as batch grows t_math/t_mem tends to 0.1082"))
    \text{as batch grows } t_\text{math} / t_\text{mem} \text{ tends to } 0.108
    """
    out, last = [], 0
    for m in _WORDS.finditer(reason):
        if reason[last:m.start()].strip():
            out.append(rf"\text{{{tex_escape(reason[last:m.start()])}}}")
        name, sign, value = m.groups()
        out.append(_TEX.get(name, rf"\text{{{(name or '').replace('_', ' ')}}}") if name
                   else sign or number(sp.Rational(value)))
        last = m.end()
    if reason[last:].strip():
        out.append(rf"\text{{{tex_escape(reason[last:])}}}")
    return " ".join(out)


def _side_unit(typed: sp.Expr) -> str:
    """The unit of an equation's side: that of its quantities when they share one."""
    units = {_UNITS.get(q.name, "") for q in typed.free_symbols}
    return units.pop() if len(units) == 1 and typed.is_Symbol else ""


def _latex(s: Any) -> str:
    names = {quantity(q): _TEX.get(q, rf"\text{{{q.replace('_', ' ')}}}")
             for q in QUANTITIES}
    rows = [" &= ".join(latex(side, symbol_names=names) for side in s.typed),
            " &= ".join(latex(side, unit=_side_unit(typed))
                        for side, typed in zip((s.lhs, s.rhs), s.typed))]
    if s.root is not None:
        rows.append(rf"{latex(s.symbol)} &= {latex(s.root, exact=True)}" + (
            "" if s.root.is_Integer else rf" \approx {number(s.root, digits=4)}"))
    else:
        rows.append(rf"&\text{{no root in }} {latex(s.symbol)}: {_tex_reason(s.never)}")
        rows += [rf"{latex(VARIABLES[b.variable])} &= {latex(b.value, exact=True)} \approx "
                 rf"{number(b.value, digits=4)} \quad \text{{(a root exists {b.side} it)}}"
                 for b in s.boundaries]
    return "\\begin{aligned}\n" + " \\\\\n".join(rows) + "\n\\end{aligned}"


def cmd_solve(args: argparse.Namespace) -> int:
    model = load_model(args.model)
    dtype = (args.dtype or "bf16").strip().lower()
    if args.chip and args.mesh:
        raise ValueError("give --chip (one chip) or --mesh (one chip's share of a serving "
                         "plan), not both")
    chip = mesh_of(args.mesh, args) if args.mesh else chip_of(args) if args.chip else None
    if chip is not None:
        as_chip(chip).peak(dtype)  # an unknown dtype fails here, naming the chip's dtypes
    widths, _ = report_widths({k: getattr(args, k) for k in WIDTHS}, args.dtype, model)
    model = model.replace(**widths)
    var = args.var.strip().lower().replace("-", "_")
    s = solve_step(args.equation, var, model, chip=chip, dtype=dtype, phase=args.phase,
                   batch=args.batch, context=args.context, new_tokens=args.new_tokens,
                   view=args.view, conventions=args.conventions)
    used = {k: num(getattr(model, k)) for k in WIDTHS}
    head = _head(args, model, chip, dtype, s.variable, used)
    if args.format == "json":
        print(dumps({"query": {"equation": args.equation, "for": s.variable, "model": args.model,
                               "model_name": model.name,
                               "chip": chip and as_chip(chip).name, "mesh": args.mesh,
                               "dtype": dtype, "phase": args.phase, "batch": args.batch,
                               "context": args.context, "new_tokens": args.new_tokens,
                               "view": args.view, **used},
                     "conventions": as_conventions(args.conventions).as_dict(),
                     "title": head, "symbol": str(s.symbol), "lhs": str(s.lhs),
                     "rhs": str(s.rhs), "root": None if s.root is None else float(s.root),
                     "root_exact": None if s.root is None else str(s.root),
                     "above": s.above or None, "never": s.never or None,
                     "boundaries": [{"variable": b.variable, "value": float(b.value),
                                     "value_exact": str(b.value), "side": b.side}
                                    for b in s.boundaries]}))
    elif args.format == "latex":
        print(_latex(s))
    elif args.format == "markdown":
        print("\n".join([f"**{head}**", "", *(f"- `{line}`" for line in _lines(s))]))
    else:
        print("\n  ".join([head, *_lines(s)]))
    return 0


def add_solve(command: Any) -> None:
    c = command("solve", cmd_solve, "solve an equation between quantities of one step (e.g. "
                "'t_math = t_mem') for batch, context or new tokens; quantities: "
                + ", ".join(QUANTITIES), ("text", "markdown", "latex", "json"))
    c.add_argument("equation", help="e.g. 't_math = t_mem', 'kv_bytes = weight_bytes', "
                   "'t_lower = 0.02' (seconds): " + "; ".join(f"{q}: {w}" for q, w in
                                                               QUANTITIES.items()))
    c.add_argument("--for", dest="var", required=True, metavar="VARIABLE",
                   help=f"what to solve for: {', '.join(VARIABLES)} (or new-tokens)")
    c.add_argument("--model", required=True, help="a preset or a Hugging Face config.json")
    add_chip_options(c, required=False)
    c.add_argument("--mesh", metavar="CHIP:SHAPE", help="instead of --chip: one chip's share "
                   "of a decode step served on the slice (the rows of symroof serve, with "
                   "t_net), e.g. h100:8")
    c.add_argument("--dtype", help="whose peak and, when given, byte widths: bf16 (default)")
    c.add_argument("--phase", choices=("decode", "prefill"), default="decode",
                   help="decode (default): new tokens on a cache; prefill: T = S")
    c.add_argument("--view", choices=tuple(VIEWS), default="rows",
                   help="; ".join(f"{k}: {v}" for k, v in VIEWS.items()) + " (default rows)")
    c.add_argument("--batch", type=SIZE, metavar="B", help="sequences (unless solved for)")
    c.add_argument("--context", type=SIZE, metavar="S", help="tokens each sequence attends "
                   "to, new ones included (128k = 131,072)")
    c.add_argument("--new-tokens", type=SIZE, metavar="T", help="decode: new tokens per "
                   "sequence (default 1)")
    for flag, what in (("w", "weight"), ("act", "activation"), ("kv", "KV-cache")):
        c.add_argument(f"--{flag}-bytes", f"--{flag}-dtype", dest=f"{flag}_bytes",
                       type=WIDTH, metavar="N", help=f"bytes per {what} element, or its "
                       "dtype (int4 and fp4: half a byte)")
