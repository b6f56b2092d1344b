"""What would make ``symroof train`` work where it says no: per rejected strategy, the
smallest change that gives it a plan, and per optimizer-state width, the smallest slice.

Every answer here is the search asked again (``sr.strategy_search`` at another batch,
remat, slice or ``optimizer_bytes``; ``sr.min_training_slice`` under each width), never a
formula of its own. The changes are named as the flags that make them. ``args`` is
``train``'s parsed arguments (``tokens``, ``seq``, ``strategy``, ``remat_value``,
``microbatches``, ``dtype_``, ``mesh``).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..conventions import FIELDS, current, using
from ..hardware.mesh import mesh as make_mesh

__all__ = ["strategy_fixes", "optimizer_widths", "optimizer_slices", "narrower_fit",
           "smaller_batches", "SCAN", "batch_flag"]


def _ask(args: argparse.Namespace, model: Any, meshes: Any, strategies: Sequence[str], *,
         tokens: Any = None, remat: Any = None) -> Any:
    """The search of ``train`` asked again, with one thing changed."""
    from ..parallel.search import strategy_search  # NumPy loads for `train` only

    return strategy_search(model, meshes, batch_tokens=args.tokens if tokens is None else
                           tokens, seq=args.seq, strategies=list(strategies),
                           remat=args.remat_value if remat is None else remat,
                           microbatches=args.microbatches, dtype=args.dtype_)


def _working(res: Any, strategies: Sequence[str]) -> dict[str, list[tuple[int, int]]]:
    """strategy -> the (batch row, candidate column) pairs that have a plan in ``res``."""
    out: dict[str, list[tuple[int, int]]] = {s: [] for s in strategies}
    for i, j in zip(*np.nonzero(np.isfinite(res.lower))):
        s = res.candidates[j].strategy
        if s in out:
            out[s].append((int(i), int(j)))
    return out


def _sequences(tokens: int, seq: int) -> str:
    n = tokens // seq
    return f"{n:,} sequence" + ("" if n == 1 else "s")


def batch_flag(args: argparse.Namespace, tokens: int) -> str:
    """A batch of ``tokens`` as the flag the user gave the batch with: ``--batch`` (in
    sequences of ``--seq``) or ``--tokens``.

    >>> import argparse
    >>> batch_flag(argparse.Namespace(sequences=3, seq=1000), 4000)
    '--batch 4'
    >>> batch_flag(argparse.Namespace(sequences=None, seq=1000), 4000)
    '--tokens 4000'
    """
    if getattr(args, "sequences", None) is not None:
        return f"--batch {tokens // args.seq}"
    return f"--tokens {tokens}"


def _chip_text(args: argparse.Namespace) -> str:
    return args.mesh.rpartition(":")[0].strip()


def _state_per_param(model: Any) -> Any:
    """Bytes of training state per parameter under the conventions in force, as
    ``sr.train_memory`` counts them (params, gradients, master copy, moments)."""
    from ..models.training_memory import train_memory

    mem = train_memory(model, 1, 1, "full")
    return sum(mem[k] for k in ("params", "grads", "master", "moments")) / model.params


def optimizer_widths(model: Any) -> list[int]:
    """The ``optimizer_bytes`` values whose training state is narrower than the one in
    force (as ``sr.train_memory`` counts it), the nearest first.

    >>> import symroof as sr
    >>> optimizer_widths(sr.model("tiny"))   # symroof's 12: only the book's 10 is narrower
    [10]
    """
    have = _state_per_param(model)
    widths = {}
    for v in FIELDS["optimizer_bytes"][0]:
        with _with_width(v):
            widths[v] = _state_per_param(model)
    return sorted((v for v, b in widths.items() if b < have), key=lambda v: -widths[v])


def _with_width(width: int) -> Any:
    return using(current().replace(optimizer_bytes=width))


def _flag(width: int) -> str:
    return f"--convention optimizer_bytes={width}"


def narrower_fit(args: argparse.Namespace, model: Any, mesh: Any) -> tuple[str, dict] | None:
    """The nearest narrower optimizer state under which some strategy fits on ``mesh`` at
    the batch asked: (its flag, the search's choice), or None.

    >>> import argparse, symroof as sr
    >>> args = argparse.Namespace(tokens=8 * 4096, seq=4096, strategy="dp", remat_value="full",
    ...                           microbatches=None, dtype_="bf16", mesh="h100:8")
    >>> narrower_fit(args, sr.model("mistral-7b"), sr.mesh("h100", "8"))[0]  # 12 B/param: no
    '--convention optimizer_bytes=10'
    """
    strategies = [args.strategy] if args.strategy else None
    for width in optimizer_widths(model):
        with _with_width(width):
            from ..parallel.search import strategy_search

            res = strategy_search(model, mesh, batch_tokens=args.tokens, seq=args.seq,
                                  strategies=strategies, remat=args.remat_value,
                                  microbatches=args.microbatches, dtype=args.dtype_)
        if res.best[0] >= 0:
            return _flag(width), res.choice(0)
    return None


def optimizer_slices(args: argparse.Namespace, model: Any, chip: Any) -> dict[int, str | None]:
    """The smallest slice of ``chip`` holding the run, per ``optimizer_bytes`` value (as
    ``serve`` lists one per weight dtype), widest first: ``sr.min_training_slice`` under
    each width; None where no slice on record holds it.

    >>> import argparse, symroof as sr
    >>> args = argparse.Namespace(tokens=8 * 4096, seq=4096, remat_value="full")
    >>> optimizer_slices(args, sr.model("llama-3.1-8b"), sr.chip("tpu-v5e"))
    {18: '4x4', 16: '4x4', 12: '2x4', 10: '2x4'}
    """
    from ..parallel.runs import min_training_slice

    out = {}
    for width in sorted(FIELDS["optimizer_bytes"][0], reverse=True):
        with using(current().replace(optimizer_bytes=width)):
            try:
                out[width] = min_training_slice(model, chip, batch_tokens=args.tokens,
                                                seq=args.seq, remat=args.remat_value).slice
            except ValueError:
                out[width] = None
    return out


def _batch_fix(args: argparse.Namespace, model: Any, mesh: Any, res: Any,
               strategies: list[str]) -> dict[str, str]:
    """For strategies whose fitting splits do not divide the batch: the nearest batches,
    below and above, that one of their splits divides."""
    B, seq = args.tokens, args.seq
    widths = {c.degrees["dp"] * c.degrees["fsdp"] * c.degrees["ep"] * c.microbatches
              for c in res.candidates if c.strategy in strategies}
    steps = {math.lcm(w, seq) for w in widths}
    tries = sorted({b for k in steps for b in (B // k * k, -(-B // k) * k) if 0 < b != B})
    if not tries:
        return {}
    near = _ask(args, model, mesh, strategies, tokens=tries)
    out = {}
    for s, pairs in _working(near, strategies).items():
        had = sorted({tries[i] for i, _ in pairs})
        below = [b for b in had if b < B][-1:]
        above = [b for b in had if b > B][:1]
        if below or above:
            out[s] = "a batch that divides: " + " or ".join(
                f"{_sequences(b, seq)} ({batch_flag(args, b)})" for b in below + above)
    return out


#: how many slices above (a strategy that does not fit) or below (one wider than the
#: model) a fix tries, nearest first
NEARBY = 3


def _slices_around(args: argparse.Namespace, mesh: Any, larger: bool) -> list[Any]:
    """The slices of the mesh's chip above (or below) it, nearest first."""
    from ..parallel.inverse import training_slices

    if any(a.kind == "dcn" for a in mesh.axes):
        return []  # slices joined over DCN: which larger shape is meant is the user's call
    n = mesh.n_chips
    shapes = [s for c, s in training_slices(mesh.chip) if (c > n if larger else c < n)]
    return [make_mesh(mesh.chip, s) for s in (shapes if larger else shapes[::-1])]


def _mesh_flag(args: argparse.Namespace, mesh: Any) -> str:
    return f"--mesh {_chip_text(args)}:{'x'.join(str(a.size) for a in mesh.axes)}"


def _on_slices(args: argparse.Namespace, model: Any, meshes: list[Any], words: str) -> list:
    """One try per mesh, nearest first (each searches only the strategies still left)."""
    return [((lambda left, m=m: _ask(args, model, m, left)),
             (lambda res, pairs, m=m: f"{words}: {_mesh_flag(args, m)}")) for m in meshes]


def _first(tries: list[tuple[Callable[[], Any], Callable[[Any, list], str]]],
           strategies: list[str]) -> dict[str, str]:
    """Each strategy's first try (a search, and the words of its answer) that gives it a
    plan; the searches are run only while some strategy is left without one."""
    out: dict[str, str] = {}
    for search, words in tries:
        left = [s for s in strategies if s not in out]
        if not left:
            break
        res = search(left)
        for s, pairs in _working(res, left).items():
            if pairs:
                out[s] = words(res, pairs)
    return out


def _memory_fix(args: argparse.Namespace, model: Any, mesh: Any,
                strategies: list[str]) -> dict[str, str]:
    """For strategies that fit in no split: remat, a narrower optimizer state, a larger
    slice, or a smaller batch on these chips, the first that gives a plan."""
    tries: list = []
    if args.remat_value != "full":
        tries.append((lambda left: _ask(args, model, mesh, left, remat="full"),
                      lambda res, pairs: "fits with --remat full"))
    for width in optimizer_widths(model):
        def search(left: list, width: int = width) -> Any:
            with _with_width(width):
                return _ask(args, model, mesh, left)
        tries.append((search, lambda res, pairs, width=width: f"fits with {_flag(width)}"))
    bigger = _slices_around(args, mesh, larger=True)[:NEARBY]
    tries += _on_slices(args, model, bigger, "fits on a larger slice")
    scan, every = smaller_batches(args)
    if len(scan):
        tries.append((lambda left: _ask(args, model, mesh, left, tokens=scan),
                      lambda res, pairs: "fits here at a smaller batch: " + _largest(
                          args, res, pairs) + (" (the largest that does)" if every else "")))
    out = _first(tries, strategies)
    for s in strategies:
        if s not in out:
            out[s] = _none_fits(args, model, mesh)
    return out


#: the most smaller batches one search tries (every one below the batch up to this many)
SCAN = 4096


def smaller_batches(args: argparse.Namespace) -> tuple[np.ndarray, bool]:
    """The batches below ``--tokens`` a fix tries, in tokens: every whole number of
    sequences where there are at most :data:`SCAN` of them, else a log-spaced sample; and
    whether that is every one.

    >>> import argparse
    >>> smaller_batches(argparse.Namespace(tokens=3 * 1000, seq=1000))
    (array([1000, 2000]), True)
    """
    sequences = args.tokens // args.seq
    every = sequences <= SCAN
    tries = np.arange(1, sequences) if every else np.unique(np.geomspace(
        1, sequences - 1, SCAN).astype(np.int64))
    return tries * args.seq, every


def _largest(args: argparse.Namespace, res: Any, pairs: list) -> str:
    b = int(res.batch[max(i for i, _ in pairs)])
    return f"{_sequences(b, args.seq)} ({batch_flag(args, b)})"


def _none_fits(args: argparse.Namespace, model: Any, mesh: Any) -> str:
    tried = ["--remat full"] if args.remat_value != "full" else []
    tried += [_flag(w) for w in optimizer_widths(model)[-1:]]
    bigger = _slices_around(args, mesh, larger=True)[:NEARBY]
    tried += [f"a larger slice up to {_mesh_flag(args, bigger[-1])}"] if bigger else []
    tried += ["a smaller batch"] if args.tokens > args.seq else []
    return "nothing tried makes it fit (" + ", ".join(tried) + ")" if tried else \
        "nothing smaller to try"


def _wide_fix(args: argparse.Namespace, model: Any, mesh: Any,
              strategies: list[str]) -> dict[str, str]:
    """For strategies whose fitting splits are all wider than the model (TP than its
    heads, PP than its layers): a smaller slice that gives one a plan."""
    smaller = _slices_around(args, mesh, larger=False)[:NEARBY]
    out = _first(_on_slices(args, model, smaller, "works on a smaller slice"), strategies)
    for s in strategies:
        if s not in out:
            out[s] = (f"on no smaller slice either (down to {_mesh_flag(args, smaller[-1])})"
                      if smaller else "no smaller slice to try")
    return out


def strategy_fixes(args: argparse.Namespace, model: Any, mesh: Any, res: Any,
                   excluded: dict[str, str]) -> dict[str, str]:
    """strategy -> the change that gives it a plan (or what was tried), for each rejected
    strategy; ``excluded``: strategy -> "memory", "divides" or "wide" (why it was
    rejected), ``res``: the search that rejected them.

    >>> import argparse, symroof as sr
    >>> args = argparse.Namespace(tokens=8 * 4096, seq=4096, strategy="dp", remat_value="full",
    ...                           microbatches=None, dtype_="bf16", mesh="h100:8")
    >>> m, h100 = sr.model("mistral-7b"), sr.mesh("h100", "8")
    >>> res = sr.strategy_search(m, h100, batch_tokens=8 * 4096, strategies=["dp"])
    >>> strategy_fixes(args, m, h100, res, {"dp": "memory"})
    {'dp': 'fits with --convention optimizer_bytes=10'}
    """
    kinds = {k: [s for s, why in excluded.items() if why == k]
             for k in ("memory", "divides", "wide")}
    out: dict[str, str] = {}
    if kinds["divides"]:
        out |= _batch_fix(args, model, mesh, res, kinds["divides"])
        out |= {s: "no batch next to this one that its fitting splits divide gives it a plan"
                for s in kinds["divides"] if s not in out}
    if kinds["memory"]:
        out |= _memory_fix(args, model, mesh, kinds["memory"])
    if kinds["wide"]:
        out |= _wide_fix(args, model, mesh, kinds["wide"])
    return out

