"""``symroof train``: which parallelism strategy trains a model fastest on a mesh, and why.

Every strategy is searched over every split of the mesh axes into its roles
(``sr.strategy_search``); each strategy's fastest fitting split is planned
(``sr.train_plan``) for its memory per chip and its conditions. ``--strategy`` plans one
strategy (on the axes ``--dp``/``--fsdp``/``--tp``/``--pp`` give, else on its best split).
A model that fits no split says what it would need (``sr.min_training_slice``).
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from ..conventions import current, profile, using
from ..models import REMAT_POLICIES
from ..models.training_memory import TENSORS
from ..parallel.layout import ROLES, assign_axes, parse_strategy
from ..parallel.strategies import STRATEGIES, BatchSplitError, train_plan
from ..render import fmt_si
from .cli_args import SIZE, add_chip_options, add_mesh_options, dumps, load_model, mesh_of
from .cli_format import num, table
from .cli_train_fixes import (
    batch_flag,
    narrower_fit,
    optimizer_slices,
    smaller_batches,
    strategy_fixes,
)

__all__ = ["cmd_train", "add_train"]


def _split(axes: dict) -> str:
    return "; ".join(f"{r}: {','.join(axes[r])}" for r in ROLES if axes[r])


def _plan(args: argparse.Namespace, model: Any, mesh: Any, strategy: str, axes: dict,
          microbatches: Any) -> Any:
    return train_plan(model, mesh, strategy, batch_tokens=args.tokens, seq=args.seq,
                      microbatches=microbatches, remat=args.remat_value, dtype=args.dtype_,
                      **{r: axes.get(r) or None for r in ROLES})


def _row(plan: Any) -> dict[str, Any]:
    """One strategy's answer, for every format."""
    conds = [{"name": c.name, "text": str(c), "lhs": c.lhs, "relation": c.relation,
              "threshold": num(c.threshold), "threshold_exact": str(c.threshold),
              "value": None if c.value is None else num(c.value), "holds": c.holds,
              "source": c.source} for c in plan.conditions.values()]
    return {"strategy": plan.strategy, "split": _split(plan.axes),
            "axes": {r: list(a) for r, a in plan.axes.items() if a}, "degrees": plan.degrees,
            "lower_s": float(plan.lower), "upper_s": float(plan.upper), "bound": plan.bound,
            "memory_bytes": num(plan.memory_total), "fits": plan.fits,
            "conditions": conds, "notes": list(plan.notes), "plan": str(plan)}


def _excluded(res: Any, idx: list[int], model: Any) -> tuple[str, str]:
    """Why no split of one strategy is chosen, as (kind, words): "memory" (none fits),
    "wide" (TP/PP wider than the model, an EP degree that does not divide the experts) or
    "divides" (the batch does not divide over the data shards of any split that fits)."""
    hbm = float(res.candidates[0].mesh.chip.hbm_bytes)
    fits = [j for j in idx if res.memory[0, j] <= hbm]
    if not fits:
        least = min(float(res.memory[0, j]) for j in idx)
        return "memory", (f"does not fit: at least {fmt_si(least, 'B')} per chip, "
                          f"{fmt_si(hbm, 'B')} of HBM")
    moe = getattr(model, "moe", None)
    E = int(moe.E) if moe is not None else 1
    limits = ((f"TP wider than the {model.H} query heads", lambda d: d["tp"] > model.H),
              (f"more pipeline stages than the {model.L} layers", lambda d: d["pp"] > model.L),
              (f"an EP degree that does not divide the {E} experts",
               lambda d: E % d.get("ep", 1) != 0))
    wide = {j: [w for w, bad in limits if bad(res.candidates[j].degrees)] for j in fits}
    if all(wide.values()):
        return "wide", "every split that fits has " + " or ".join(
            dict.fromkeys(w for ws in wide.values() for w in ws))
    pipelined = any(res.candidates[j].microbatches > 1 for j in fits)
    return "divides", (f"no split that fits divides the batch of {int(res.batch[0]):,} tokens "
                       "over its data shards" + (" x microbatches" if pipelined else ""))


def _search(args: argparse.Namespace, model: Any, mesh: Any) -> tuple[list, list, Any]:
    """(rows of the strategies that fit, fastest first; (strategy, why, the change that
    would give it a plan) of the others; the search's answer where nothing fits, else
    None)."""
    from ..parallel.search import strategy_search  # NumPy loads for `train` only

    strategies = [args.strategy] if args.strategy else None  # None: the search's default
    res = strategy_search(model, mesh, batch_tokens=args.tokens, seq=args.seq,
                          strategies=strategies, remat=args.remat_value,
                          microbatches=args.microbatches, dtype=args.dtype_)
    rows, out, kinds = [], [], {}
    for s in dict.fromkeys(c.strategy for c in res.candidates):
        idx = [j for j, c in enumerate(res.candidates) if c.strategy == s]
        ok = [j for j in idx if math.isfinite(res.lower[0, j])]
        if not ok:
            kinds[s], why = _excluded(res, idx, model)
            out.append((s, why))
            continue
        c = res.candidates[min(ok, key=lambda j: (res.lower[0, j], res.memory[0, j]))]
        rows.append(_row(_plan(args, model, mesh, s, c.axes,
                               c.microbatches if c.axes["pp"] else None)))
    best = res.candidates[int(res.best[0])].strategy if res.best[0] >= 0 else None
    rows.sort(key=lambda r: (r["strategy"] != best, r["lower_s"], r["memory_bytes"]))
    fixes = strategy_fixes(args, model, mesh, res, kinds) if kinds else {}
    out = [(s, why, fixes.get(s)) for s, why in out]
    return rows, out, None if rows else res.why[0]


def _need(args: argparse.Namespace, model: Any, mesh: Any) -> str:
    """What a run that fits nowhere on ``mesh`` needs, sharded over every chip, and the
    smaller changes that would make it fit on these chips (remat, a smaller batch)."""
    import numpy as np

    from ..parallel.runs import min_training_slice
    from ..parallel.search import strategy_search

    try:
        need = min_training_slice(model, mesh.chip, batch_tokens=args.tokens, seq=args.seq,
                                  remat=args.remat_value)
        text = (f"needs at least {need.chips} {mesh.chip.name} chips ("
                f"{fmt_si(need.total, 'B')} of weights, optimizer state and activations, "
                f"{fmt_si(mesh.chip.hbm_bytes, 'B')} each): the smallest slice with them is "
                f"{need.slice} ({need.slice_chips} chips)")
    except ValueError as err:  # more than the largest slice on record
        text = str(err).removeprefix("does not fit: ").removeprefix(f"{model.name} ")
    options = {"strategies": [args.strategy] if args.strategy else None,
               "microbatches": args.microbatches, "dtype": args.dtype_}
    if args.remat_value != "full":
        full = strategy_search(model, mesh, batch_tokens=args.tokens, seq=args.seq,
                               remat="full", **options)
        if full.best[0] >= 0:
            return text + f"; on these {mesh.n_chips} chips, --remat full fits: " + _brief(
                full.choice(0))
    narrower = narrower_fit(args, model, mesh)
    if narrower:
        return text + f"; on these {mesh.n_chips} chips, {narrower[0]} fits: " + _brief(
            narrower[1])
    tries, every = smaller_batches(args)
    if not len(tries):
        return text
    smaller = strategy_search(model, mesh, batch_tokens=tries, seq=args.seq,
                              remat=args.remat_value, **options)
    ok = np.flatnonzero(smaller.best >= 0)
    if len(ok):
        c = smaller.choice(int(ok[-1]))
        text += (f"; on these {mesh.n_chips} chips, a batch of "
                 f"{_sequences(c['batch'] // args.seq)} fits"
                 + (" (the largest that does)" if every else "")
                 + f" ({batch_flag(args, c['batch'])}): " + _brief(c))
    return text


def _brief(c: dict) -> str:
    """A search choice in a few words: split, step, memory per chip."""
    return (f"{c['candidate'].strategy} ({_split(c['candidate'].axes)}), "
            f"{fmt_si(c['lower'], 's')} .. {fmt_si(c['upper'], 's')}, "
            f"{fmt_si(c['memory'], 'B')} per chip")


def _nearby(args: argparse.Namespace, model: Any, mesh: Any) -> tuple[list[str], dict]:
    """Where no split divides the batch: the nearest batches that have a plan, and the
    cheapest uneven split of this one (``sr.nearby``)."""
    from ..parallel.search import nearby

    near = nearby(model, mesh, batch_tokens=args.tokens, seq=args.seq,
                  strategies=[args.strategy] if args.strategy else None,
                  remat=args.remat_value, microbatches=args.microbatches, dtype=args.dtype_)
    lines, data = [], {}
    found = [(k, c) for k, c in (("below", near.below), ("above", near.above)) if c]
    if found:
        lines.append("nearest batches with a plan: " + "; ".join(
            f"{_sequences(c['batch'] // args.seq)} ({batch_flag(args, c['batch'])}): {_brief(c)}"
            for _, c in found))
    u = near.uneven
    if u:
        lines.append(f"or split {_sequences(args.tokens // args.seq)} unevenly over "
                     f"{u['shards']:,} data shards ({u['padded'] - u['batch']:,} of them a "
                     f"token short): {u['candidate'].strategy} ({_split(u['candidate'].axes)}),"
                     f" priced as {u['padded']:,} tokens, {fmt_si(u['lower'], 's')} .. "
                     f"{fmt_si(u['upper'], 's')} ({u['idle']:.4%} of the step idle)")
    for key, c in (*found, ("uneven", u)):
        if c:
            data[key] = {"batch_tokens": c["batch"], "strategy": c["candidate"].strategy,
                         "split": _split(c["candidate"].axes), "lower_s": c["lower"],
                         "upper_s": c["upper"], "memory_bytes": c["memory"],
                         **({"padded_tokens": c["padded"], "shards": c["shards"],
                             "idle": c["idle"]} if key == "uneven" else {})}
    return lines, data


def _answer(rows: list, why: str | None, args: argparse.Namespace, model: Any,
            mesh: Any) -> str:
    """The chosen strategy and why, or why there is none."""
    if not rows or not rows[0]["fits"]:
        if why and why.startswith("no split that fits divides"):
            return (f"no strategy chosen: no split that fits divides the batch of "
                    f"{args.tokens:,} tokens over its data shards (x microbatches)")
        if why and not why.startswith("does not fit"):
            return f"no strategy chosen: {why}"
        what = f"with {args.strategy}" if args.strategy else "with any strategy"
        shape = "x".join(str(a.size) for a in mesh.axes)
        return (f"{model.name} does not fit on {mesh.chip.name} {shape} {what}: "
                f"{_need(args, model, mesh)}{_batch_hint(args)}")
    best = rows[0]
    text = (f"chosen: {best['strategy']} ({best['split']}): "
            + ("the only strategy asked for" if args.strategy else
               "the fastest step (lower bound) of the strategies that fit"))
    if len(rows) > 1:
        nxt = rows[1]
        ahead = nxt["lower_s"] / best["lower_s"] - 1
        other = f"{nxt['strategy']} ({nxt['split']})"
        lighter = nxt["memory_bytes"] > best["memory_bytes"]
        text += (f", {ahead:.1%} ahead of {other} at {fmt_si(nxt['lower_s'], 's')}"
                 if ahead > 1e-9 else f", tied with {other}, " + (
                     "which needs more memory" if lighter else "as light in memory: the "
                     "first of the two in the search's order"))
    failing = [c["name"] for c in best["conditions"] if c["holds"] is False]
    return text + (f"; {best['bound']}-bound; " + (
        f"conditions that do not hold: {', '.join(failing)}" if failing else
        "every condition holds" if best["conditions"] else "no conditions"))


def _split_error(err: BatchSplitError, args: argparse.Namespace, mesh: Any,
                 axes: dict) -> str:
    """A batch that does not divide over the data shards of the axes given, in flags."""
    roles, _ = parse_strategy(args.strategy)
    given = assign_axes(mesh, roles, {r: a for r, a in axes.items() if r in roles})
    data = [(r, given[r]) for r in ("dp", "fsdp", "ep") if given[r]]
    where = ", ".join(f"--{r} {''.join(a)} ({' x '.join(str(mesh[x].size) for x in a)})"
                      for r, a in data)
    times = f" x {err.microbatches} microbatches" if err.microbatches != 1 else ""
    near = " or ".join(batch_flag(args, b) + ("" if args.sequences else
                                              f" ({_sequences(b // args.seq)})")
                       for b in (err.below, err.above) if b)
    typed = (f"--batch {args.sequences:,} ({args.tokens:,} tokens" if args.sequences else
             f"--tokens {args.tokens:,} ({_sequences(args.tokens // args.seq)}")
    return (f"{typed} of --seq {args.seq}) does not divide over {err.degree:,} data "
            f"shards{times} ({where}); the nearest that do: {near}")


def _degree_error(err: ValueError, args: argparse.Namespace, model: Any, mesh: Any,
                  axes: dict) -> str:
    """A role wider than the model (TP than its heads, PP than its layers, EP than its
    experts), in flags, with a split of the same strategy that works (the search's)."""
    roles, _ = parse_strategy(args.strategy)
    given = assign_axes(mesh, roles, {r: a for r, a in axes.items() if r in roles})
    typed = " ".join(f"--{r} {''.join(given[r])}" for r in roles if axes.get(r))
    left = "".join(f", {r} on the axes left ({', '.join(given[r])})" for r in roles
                   if given[r] and not axes.get(r))
    text = f"{typed}{left}: {err}"
    from ..parallel.search import strategy_search

    res = strategy_search(model, mesh, batch_tokens=args.tokens, seq=args.seq,
                          strategies=[args.strategy], remat=args.remat_value,
                          microbatches=args.microbatches, dtype=args.dtype_)
    if res.best[0] < 0:
        return (text + f"; no split of {args.strategy} works at this batch (leave out "
                "--dp/--fsdp/--tp/--pp/--ep to see what would)")
    c = res.choice(0)["candidate"]
    return text + f"; a split of {args.strategy} that works here: " + " ".join(
        f"--{r} {''.join(a)}" for r, a in c.axes.items() if a)


def _batch_hint(args: argparse.Namespace) -> str:
    """Where --batch was given: that it counts sequences, and what --tokens of the same
    number would be (the book's batches are in tokens: its 4M is --tokens 4M)."""
    n = getattr(args, "sequences", None)
    if n is None or n % args.seq or n <= args.seq:  # not a batch in tokens either
        return ""
    return (f" (--batch counts sequences: --batch {n:,} is {args.tokens:,} tokens of --seq "
            f"{args.seq}; --tokens {n} would be {_sequences(n // args.seq)})")


def remat_arg(text: str) -> Any:
    """``--remat``: a policy name, N checkpoints per layer, or the tensors each layer keeps
    joined by commas (a tuple, as ``sr.train_plan(remat=...)`` takes it).

    >>> remat_arg("full"), remat_arg("3"), remat_arg("layer_input,mlp/gate,mlp/up")
    ('full', 3, ('layer_input', 'mlp/gate', 'mlp/up'))
    >>> remat_arg("layer_input,mlp/gates")
    Traceback (most recent call last):
    ...
    ValueError: --remat layer_input,mlp/gates: unknown tensor mlp/gates; --remat takes a policy ...
    """
    text = text.strip()
    if text.isdigit():
        return int(text)
    if text in REMAT_POLICIES:
        return text
    names = tuple(t.strip() for t in text.split(",") if t.strip())
    unknown = [t for t in names if t not in TENSORS]
    if unknown or not names:
        what = f"tensor {', '.join(unknown)}" if unknown else "value"
        raise ValueError(f"--remat {text}: unknown {what}"
                         f"; --remat takes a policy ({', '.join(REMAT_POLICIES)}), a number of "
                         f"checkpoints per layer, or kept tensors joined by commas, from: "
                         f"{', '.join(TENSORS)}")
    if "layer_input" not in names:
        raise ValueError(f"--remat {text}: the kept tensors must include layer_input (every "
                         "recomputation starts from it)")
    return names


def _sequences(n: int) -> str:
    return f"{n:,} sequence" + ("" if n == 1 else "s")


def cmd_train(args: argparse.Namespace) -> int:
    """``symroof train`` under the conventions it is given (the plans and the search read
    the record in force)."""
    with using(getattr(args, "conventions", None)):
        return _train(args)


def _train(args: argparse.Namespace) -> int:
    args.dtype_ = (args.dtype or "bf16").strip().lower()
    args.remat_value = remat_arg(args.remat)
    model, mesh = load_model(args.model), mesh_of(args.mesh, args)
    if args.tokens is None:  # --batch counts sequences, as on every command
        args.tokens = args.sequences * args.seq
    if args.tokens % args.seq:
        raise ValueError(f"--tokens {args.tokens:,} is not a whole number of sequences "
                         f"of --seq {args.seq} (4M = 4,194,304 = 1,024 x 4096), or give "
                         "--batch in sequences")
    axes = {r: getattr(args, r) for r in ROLES}
    if any(axes.values()) and not args.strategy:
        raise ValueError("--dp, --fsdp, --tp and --pp give the axes of --strategy's roles: "
                         "add --strategy (e.g. --strategy fsdp+tp --fsdp XY --tp Z)")
    if args.strategy and any(axes.values()):
        try:
            plan = _plan(args, model, mesh, args.strategy, axes, args.microbatches)
        except BatchSplitError as err:
            raise ValueError(_split_error(err, args, mesh, axes)) from None
        except ValueError as err:
            if not str(err).startswith(tuple(f"{r} degree " for r in ROLES)):
                raise
            raise ValueError(_degree_error(err, args, model, mesh, axes)) from None
        rows, excluded, why = [_row(plan)], [], None
    else:
        rows, excluded, why = _search(args, model, mesh)
    shape = "x".join(str(a.size) for a in mesh.axes)
    head = (f"{model.name} on {mesh.chip.name} {shape} ({mesh.n_chips} chips): batch "
            f"{args.tokens:,} tokens ({_sequences(args.tokens // args.seq)} of {args.seq}), "
            f"remat {args.remat}, {args.dtype_} peak")
    if current() != profile("symroof"):
        head += f", conventions: {current().label}"
    answer = _answer(rows, why, args, model, mesh)
    near, near_data = ([], {}) if not answer.startswith("no strategy chosen: no split that "
                                                        "fits divides") else \
        _nearby(args, model, mesh)
    by_width = optimizer_slices(args, model, mesh.chip) if answer.startswith(
        f"{model.name} does not fit") else {}
    if by_width:
        near.append(f"smallest {mesh.chip.name} slice for {_sequences(args.tokens // args.seq)}"
                    f" of {args.seq} (remat {args.remat}), by optimizer state "
                    "(--convention optimizer_bytes=N): " + ", ".join(
                        f"{w} B/param: " + (f"{args.mesh.rpartition(':')[0]}:{s}" if s else
                                            "none on record") for w, s in by_width.items()))
    if args.format == "json":
        print(dumps({"query": {"model": args.model, "model_name": model.name,
                               "chip": mesh.chip.name, "mesh": shape, "chips": mesh.n_chips,
                               "batch_tokens": args.tokens, "seq": args.seq,
                               "remat": args.remat_value, "dtype": args.dtype_,
                               "strategy": args.strategy,
                               "conventions": current().as_dict()},
                     "strategies": rows, "excluded": [{"strategy": s, "why": w, "fix": f}
                                                      for s, w, f in excluded],
                     "chosen": rows[0] if rows and rows[0]["fits"] else None,
                     "answer": answer, "nearby": near_data,
                     "slices_by_optimizer_bytes": {str(w): v for w, v in by_width.items()}}))
        return 0
    md = args.format == "markdown"
    cells = [["strategy", "split", "step", "bound", "memory/chip", "conditions"]]
    cells += [[r["strategy"], r["split"], f"{fmt_si(r['lower_s'], 's')} .. "
               f"{fmt_si(r['upper_s'], 's')}", r["bound"], fmt_si(r["memory_bytes"], "B")
               + ("" if r["fits"] else " (does not fit)"),
               "; ".join(c["text"] for c in r["conditions"]) or "-"] for r in rows]
    lines = [f"**{head}**\n" if md else head]
    if rows:
        lines.append(table(args.format, cells))
    if excluded:
        lines.append(("\n" if md else "") + "no split of this mesh works for:")
        lines += [f"{'- ' if md else '  '}{s}: {w}" + (f"; {f}" if f else "")
                  for s, w, f in excluded]
    lines.append(("\n" if md else "") + answer)
    lines += [f"- {n}" if md else n for n in near]
    if rows and rows[0]["fits"]:
        plan = rows[0]["plan"]
        lines.append(f"```\n{plan}\n```" if md else plan)
    print("\n".join(lines))
    return 0


def add_train(command: Any) -> None:
    """The ``train`` subcommand's options (``command``: build_parser's adder)."""
    c = command("train", cmd_train, "training on a mesh: each strategy's fastest split, its "
                "step-time bounds, memory per chip and conditions, and the strategy chosen",
                ("text", "markdown", "json"))
    c.add_argument("--model", required=True, help="a preset or a Hugging Face config.json")
    add_mesh_options(c)
    batch = c.add_mutually_exclusive_group(required=True)
    batch.add_argument("--tokens", type=SIZE, metavar="TOKENS", help="global batch in tokens, "
                       "whole sequences (4M = 4 x 2^20 = 1024 sequences of 4096; the book's B)")
    batch.add_argument("--batch", dest="sequences", type=SIZE, metavar="SEQUENCES",
                       help="global batch in sequences of --seq tokens (as --batch counts "
                       "sequences on every command)")
    c.add_argument("--seq", type=SIZE, default=4096, metavar="S",
                   help="tokens per sequence (default: %(default)s)")
    c.add_argument("--strategy", help=f"plan this one only, e.g. fsdp+tp (searched: "
                   f"{', '.join(STRATEGIES)}; for a mixture of experts also the ones with "
                   "ep)")
    for role in ROLES:
        c.add_argument(f"--{role}", metavar="AXES", help=f"mesh axes of the {role} role "
                       "(e.g. XY), with --strategy; one role left out takes the rest")
    c.add_argument("--microbatches", type=SIZE, metavar="N", help="pipeline microbatches "
                   "(default: 4 x stages)")
    c.add_argument("--remat", default="full", help=f"{', '.join(REMAT_POLICIES)}, N "
                   "checkpoints per layer, or the tensors each layer keeps joined by commas "
                   "(layer_input,mlp/gate,mlp/up) (default: %(default)s)")
    c.add_argument("--dtype", help="whose peak FLOP/s: bf16 (default), fp8, int8, ...")
    add_chip_options(c, chip_flag=False)
