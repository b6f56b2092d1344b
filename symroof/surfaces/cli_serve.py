"""``symroof serve`` and ``symroof report --mesh``: one decode step of a model sharded over a
mesh (``sr.serve``: 1-D model parallelism, book ch. 7), per chip.

``serve`` prints the plan: memory per chip and the largest batch, the step's time bounds
with its collectives, tokens/s per chip, and the smallest slice that holds the batch at each
weight dtype (``sr.smallest_slice``); a plan that does not fit says what it needs. ``report
--mesh`` prints the same step's per-chip rows as a roofline table.
"""

from __future__ import annotations

import argparse
from typing import Any

import sympy as sp

from ..conventions import as_conventions
from ..hardware.prices import PRICES
from ..hardware.prices import price as price_on_record
from ..models import OP_GROUPS, group
from ..models.sanity import step_warnings
from ..models.table import RooflineTable
from ..parallel import cost_per_million_tokens, min_chips, serve, smallest_slice
from ..parallel.serving import WIDTHS
from ..render import fmt_si
from .cli_args import (
    SIZE,
    add_chip_options,
    add_mesh_options,
    conventions_named,
    dumps,
    load_model,
    mesh_of,
    usd,
)
from .cli_format import num

__all__ = ["cmd_serve", "add_serve", "report_mesh"]

#: the weight dtypes whose smallest slice ``serve`` lists (fp8 stores as int8, fp4 as int4)
_BY_DTYPE = ("bf16", "int8", "int4")


def _needs(plan: Any) -> tuple[Any, int]:
    """Bytes of the weights and the batch's KV cache, unsharded, and the chips they need."""
    m = plan.model
    total = m.params * m.w_bytes + plan.batch * plan.context * m.kv_bytes_per_token
    return total, int(min_chips(total, plan.mesh.chip).chips)


def _slices(plan: Any, kv: str | None) -> dict[str, str | None]:
    """The smallest slice holding the weights and the batch's KV cache, per weight dtype."""
    out = {}
    for w in _BY_DTYPE:
        try:
            out[w] = smallest_slice(plan.model, plan.mesh.chip, weights=w, kv=kv or plan.kv,
                                    batch=int(plan.batch), context=int(plan.context))
        except ValueError:
            out[w] = None
    return out


def _layout(plan: Any) -> str:
    n, mesh = plan.n, plan.mesh
    cache = plan.partitions.rule("attn/core").kv  # the layout's own partition of the cache
    h, b = (mesh.size(cache.axes_of(d)) if cache.axes_of(d) else 1 for d in ("G", "B"))
    kv = (f"(MLA's latent cache, shared by all heads) over the batch ({b} ways)"
          if plan.model.mla is not None else
          f"over the KV heads ({h} ways)" + (f", then the batch ({b} ways)" if b != 1 else ""))
    return (f"layout: 1-D model parallelism over all {n} chips (MLP weights over F, attention "
            f"over heads, book ch. 7); KV cache {kv}, as {cache}")


def _collectives(plan: Any) -> list[str]:
    L = plan.model.L
    def floor(key: str) -> str:
        return ", latency-bound" if plan.bounds.get(key) == "latency" else ""

    def times(key: str) -> str:  # a layer's collective, or one outside the layers
        if key in plan.layer_comm:
            return f"all {L} layers"
        return ("once a step: the vocab-parallel embedding's partial lookups summed"
                if key.startswith(("comm/embed_", "comm/pos_embed_")) else "once a step")

    return [f"{k.removeprefix('comm/')}: {fmt_si(c.net_bytes, 'B')} sent per chip, "
            f"{fmt_si(c.net_time, 's')} ({times(k)}{floor(k)})"
            for k, c in plan.collectives.items()]


def _fit_line(plan: Any) -> str:
    mem = plan.memory
    text = (f"memory per chip {fmt_si(plan.hbm_used, 'B')} of "
            f"{fmt_si(plan.mesh.chip.hbm_bytes, 'B')} (weights {fmt_si(mem['weights'], 'B')}, "
            f"KV {fmt_si(mem['kv'], 'B')}); largest batch {plan.max_batch}")
    return text if plan.fits else "does not fit: " + text


def _need_line(plan: Any, slices: dict) -> str:
    total, chips = _needs(plan)
    have = slices.get(plan.weights) or slices.get(_dtype_for(plan.model.w_bytes))
    where = (f"the smallest {plan.mesh.chip.name} slice that holds it is {have}" if have else
             f"no {plan.mesh.chip.name} slice on record holds it")
    return (f"it needs at least {chips} chips ({fmt_si(total, 'B')} of weights and KV cache); "
            f"{where} (the weights alone need {plan.min_chips})")


def _requests_line(plan: Any, generated: int) -> str:
    """Requests a second per chip when each generates ``generated`` tokens (book ch. 7)."""
    q, book = (float(plan.requests_per_s_per_chip(generated, form=f)) for f in ("plan", "book"))
    return (f"{q:.3g} requests/s per chip at {generated:,} generated tokens each "
            f"({book:.3g} from the book's form)")


def _dtype_for(w: Any, dtype: str | None = None) -> str | None:
    """A storage dtype name of width ``w`` bytes (``dtype`` first, where it has that width)."""
    if dtype and dtype in WIDTHS and sp.sympify(WIDTHS[dtype]) == w:
        return dtype
    return next((d for d, v in WIDTHS.items() if sp.sympify(v) == w), None)


def cmd_serve(args: argparse.Namespace) -> int:
    model, mesh = load_model(args.model), mesh_of(args.mesh, args)
    dtype = (args.dtype or "bf16").strip().lower()
    plan = serve(model, mesh, batch=args.batch, context=args.context, weights=args.weights,
                 kv=args.kv, compute_dtype=dtype, conventions=args.conventions)
    slices = _slices(plan, args.kv)
    head = (f"{plan.model.name} decode on {mesh.title} ({plan.n} chips): "
            f"batch {args.batch}, context {args.context:,}, weights {plan.weights}, KV "
            f"{plan.kv}, {dtype} peak" + conventions_named(plan.conventions))
    lines = [_fit_line(plan)]
    if plan.fits:
        per_chip = float(plan.tokens_per_s_per_chip)
        lines += [f"step {plan.time}", *_collectives(plan),
                  f"{per_chip:,.0f} tokens/s per chip ({per_chip * plan.n:,.0f} for the slice)",
                  f"the book's form B KV/W + max(2BP/C, P_bytes/W): "
                  f"{fmt_si(plan.book_time, 's')}", _layout(plan)]
        if args.generated:
            lines.insert(-1, _requests_line(plan, args.generated))
        lines += [f"warning: {w}" for w in plan.warnings]
    else:
        lines.append(_need_line(plan, slices))
    sizes = [f"{w}{'/fp8' if w == 'int8' else '/fp4' if w == 'int4' else ''}: "
             f"{s or 'none on record'}" for w, s in slices.items()]
    by = (f"smallest {mesh.chip.name} slice for batch {args.batch} at context "
          f"{args.context:,} (KV {plan.kv}), by weight dtype: " + ", ".join(sizes))
    price = _price(args.price, plan)
    if price is not None and plan.fits:
        lines.append(_price_line(plan, *price))
    if args.format == "json":
        print(dumps({**_serve_data(args, plan, dtype, slices, lines),
                     **_price_data(plan, price)}))
    elif args.format == "markdown":
        print("\n".join([f"**{head}**", "", *(f"- {line}" for line in lines), f"- {by}"]))
    else:
        print("\n  ".join([head, *lines, by]))
    return 0


def _serve_data(args: argparse.Namespace, plan: Any, dtype: str, slices: dict,
                lines: list[str]) -> dict[str, Any]:
    t, total = plan.time, _needs(plan)
    out = {"query": {"model": args.model, "model_name": plan.model.name,
                     "chip": plan.mesh.chip.name, "mesh": plan.mesh.shape_text, "chips": plan.n,
                     "batch": args.batch, "context": args.context, "weights": plan.weights,
                     "kv": plan.kv, "dtype": dtype},
           "conventions": plan.conventions.as_dict(),
           "fits": plan.fits, "max_batch": num(plan.max_batch), "min_chips_weights":
           num(plan.min_chips), "min_chips": int(total[1]), "bytes_needed": num(total[0]),
           "memory_per_chip": {k: num(v) for k, v in plan.memory.items()},
           "hbm_bytes": num(plan.mesh.chip.hbm_bytes), "smallest_slice": slices,
           "lines": lines}
    if plan.fits:
        out.update({"t_math_s": float(t.t_math), "t_mem_s": float(t.t_mem),
                    "t_net_s": float(t.t_net), "lower_s": float(t.lower),
                    "upper_s": float(t.upper), "bound": t.bound,
                    "book_s": float(plan.book_time),
                    "tokens_per_s_per_chip": float(plan.tokens_per_s_per_chip),
                    **({"requests_per_s_per_chip": float(
                        plan.requests_per_s_per_chip(args.generated))} if args.generated
                       else {}),
                    "collectives": {k.removeprefix("comm/"): {
                        "net_bytes": num(c.net_bytes), "t_s": float(c.net_time),
                        "bound": plan.bounds.get(k)}
                        for k, c in plan.collectives.items()},
                    "warnings": list(plan.warnings)})
    return out


def _price(text: str | None, plan: Any) -> tuple[Any, str] | None:
    """``--price``: a number of US dollars per chip-hour (its source: the command line), or
    ``record`` for the price on record for the mesh's chip (``hardware.prices``)."""
    if text is None:
        return None
    if text.strip().lower() == "record":
        p = price_on_record(plan.mesh.chip.name)
        return p.usd_per_chip_hour, p.cited
    try:
        value = usd(text)
    except ValueError as err:
        raise ValueError(f"--price {err} (or 'record': the price on record, for "
                         f"{', '.join(PRICES)})") from None
    return value, "--price on the command line"


def _price_line(plan: Any, usd: Any, source: str) -> str:
    cost = cost_per_million_tokens(plan, usd, source)
    return (f"${float(cost):.3g} per million tokens at ${float(usd):.2f} per chip-hour "
            f"({source})")


def _price_data(plan: Any, price: tuple[Any, str] | None) -> dict[str, Any]:
    if price is None:
        return {}
    cost = cost_per_million_tokens(plan, *price) if plan.fits else None
    return {"price": {"usd_per_chip_hour": float(price[0]), "source": price[1],
                      "usd_per_million_tokens": None if cost is None else float(cost)}}


def add_serve(command: Any) -> None:
    c = command("serve", cmd_serve, "one decode step sharded over a mesh (book ch. 7): memory "
                "per chip, largest batch, time bounds with the collectives, tokens/s per chip, "
                "and the smallest slice by weight dtype", ("text", "markdown", "json"))
    c.add_argument("--model", required=True, help="a preset or a Hugging Face config.json")
    add_mesh_options(c)
    c.add_argument("--batch", required=True, type=SIZE, metavar="B", help="sequences")
    c.add_argument("--context", required=True, type=SIZE, metavar="S", help="tokens each "
                   "sequence attends to, the new one included (8k = 8,192)")
    c.add_argument("--weights", default="bf16", help=f"storage dtype of the weights: "
                   f"{', '.join(WIDTHS)} (default: %(default)s; int4 and fp4 are half a byte)")
    c.add_argument("--kv", help="storage dtype of the KV cache (default: the model's, bf16)")
    c.add_argument("--dtype", help="whose peak FLOP/s: bf16 (default), fp8, int8, ...")
    c.add_argument("--generated", type=SIZE, metavar="N", help="tokens each request "
                   "generates: adds requests/s per chip, B / (T_step N_chips N) (book ch. 7)")
    c.add_argument("--price", metavar="USD_PER_CHIP_HOUR", help="the price of a chip-hour, "
                   "for dollars per million tokens; 'record': the chip's price on record "
                   f"({', '.join(PRICES)}: the book's Feb 2025 list)")
    add_chip_options(c, chip_flag=False)


# -- report --mesh --------------------------------------------------------------------
class _MeshTable(RooflineTable):
    """A roofline table of a sharded step's rows, with the plan's warnings."""

    def __init__(self, rows: dict, chip: Any, dtype: str, title: str, notes: tuple,
                 warnings: tuple, conventions: Any = None) -> None:
        cv = as_conventions(conventions)
        super().__init__(rows, chip, dtype, title=title, notes=notes, conventions=cv,
                         useful=cv.counted == "useful_flops")
        vars(self)["_warnings"] = warnings

    @property
    def warnings(self) -> tuple[str, ...]:
        return self._warnings


def report_mesh(args: argparse.Namespace, model: Any, dtype: str, widths: dict,
                title: Any, query: dict) -> int:
    """``report --mesh``: the per-chip rows of ``sr.serve``'s decode step."""
    if args.phase != "decode":
        raise ValueError("--mesh reports a sharded decode step (sr.serve); a prefill step on "
                         "a mesh is not modelled: use --phase decode, or --chip for one "
                         "chip's prefill")
    if (args.new_tokens or 1) != 1 or args.attention != "fused":
        raise ValueError("--mesh reports one decode step with fused attention (sr.serve): "
                         "drop --new-tokens and --attention naive")
    mesh = mesh_of(args.mesh, args)
    names = {}
    for k, what in (("w_bytes", "weights"), ("kv_bytes", "KV cache")):
        names[k] = _dtype_for(widths[k], dtype)
        if names[k] is None:
            raise ValueError(f"--mesh stores the {what} in a dtype ({', '.join(WIDTHS)}); "
                             f"{k}={widths[k]} is none of them")
    plan = serve(model.replace(act_bytes=widths["act_bytes"]), mesh, batch=args.batch,
                 context=args.context, weights=names["w_bytes"], kv=names["kv_bytes"],
                 compute_dtype=dtype, conventions=args.conventions)
    rows = plan.rows
    if args.groups:
        rows = group(rows, {**OP_GROUPS, "collectives": list(plan.collectives)})
    huge = mesh.chip.replace(hbm_bytes=10**30)  # HBM is checked per chip, below
    warnings = step_warnings(plan.model, huge, args.batch, args.context) + list(plan.warnings)
    slices = _slices(plan, names["kv_bytes"])
    if not plan.fits:
        warnings.insert(0, _fit_line(plan) + "; " + _need_line(plan, slices))
    notes = (_fit_line(plan) if plan.fits else "", *_collectives(plan), _layout(plan))
    t = _MeshTable(rows, mesh.chip, dtype, title(f"decode, per chip of {mesh.title} "
                   f"({plan.n} chips)"), tuple(n for n in notes if n),
                   tuple(warnings), plan.conventions)
    query = {**query, "chip": mesh.chip.name, "mesh": mesh.shape_text, "chips": plan.n}
    print({"text": t.to_text, "markdown": t.to_markdown, "latex": t.to_latex,
           "json": lambda: dumps({"query": query, **t.as_dict(), "fits": plan.fits,
                                  "max_batch": num(plan.max_batch),
                                  "memory_per_chip": {k: num(v) for k, v in
                                                      plan.memory.items()}})}[args.format]())
    return 0

