"""Sanity warnings for one step: what a table would otherwise compute without a word.

A roofline table answers any batch and context, including ones no chip holds and no model
takes. :func:`step_warnings` says so in words: weights + KV cache larger than the chip's
HBM, a context past the model's maximum position (``Transformer.max_position``), a
crossover (ctx*, where attention FLOPs equal matmul FLOPs; the KV crossover, where the
batch's KV cache weighs as much as the weights) outside the contexts the model takes, and
whatever reading the model's config assumed or could not honour (``Transformer.notes``).

>>> import symroof as sr
>>> step_warnings(sr.model("llama-3.1-8b"), sr.chip("h100"), batch=64, context=2048)
[]
>>> for w in step_warnings(sr.model("llama-3.1-8b"), sr.chip("h100"), batch=64,
...                        context=1_050_000):
...     print(w)
weights 16.1 GB + KV cache 8.81 TB = 8.82 TB, 110x the h100's HBM (80 GB): the step does not
fit on one chip
context 1,050,000 is 918,928 past llama-3.1-8b's maximum of 131,072 positions
"""

from __future__ import annotations

import functools
from fractions import Fraction
from typing import Any

import sympy as sp

from ..cache import kept
from ..conventions import SYMROOF, Conventions, current, using
from ..hardware import Chip
from ..render import fmt_si
from .inference import ctx_star, kv_crossover
from .transformer import Transformer

__all__ = ["step_warnings"]


@functools.lru_cache(maxsize=256)
def _solved(what: str, model: Transformer, batch: int = 1,
            conventions: Conventions = SYMROOF) -> sp.Expr | None:
    """ctx* of the model, or its KV crossover at ``batch`` under ``conventions`` (the KV
    cache's head width is theirs); None where there is no root. Kept on disk
    (:func:`symroof.cache.kept`): solving is most of a warm ``report``'s work."""
    def solve() -> list:
        try:
            with using(conventions):
                root = ctx_star(model) if what == "ctx*" else kv_crossover(model, batch)
        except ValueError:  # e.g. a sliding window caps attention below the matmuls
            return []
        return [int(root.p), int(root.q)] if root.is_Rational else [sp.srepr(root)]

    root = kept("root", (what, model, batch, conventions), solve)
    return None if not root else sp.Rational(*root) if len(root) == 2 else sp.sympify(root[0])


_BY_ID: dict[tuple, tuple] = {}  # (id(model), what, batch, id(conventions)) -> (model, cv, root)


def _root(what: str, model: Transformer, batch: int = 1) -> sp.Expr | None:
    """:func:`_solved` (or, for "weights", the weight bytes), found by the model's identity
    first (hashing a model costs more than a table's numbers)."""
    cv = current()
    key = (id(model), what, batch, id(cv))
    hit = _BY_ID.get(key)
    if hit is None or hit[0] is not model or hit[1] is not cv:
        if len(_BY_ID) >= 4096:
            _BY_ID.clear()
        value = model.params * model.w_bytes if what == "weights" else \
            _solved(what, model, batch, cv)
        if value is not None and value.is_Rational:  # compared at Python's speed
            value = int(value) if value.is_Integer else Fraction(int(value.p), int(value.q))
        hit = _BY_ID[key] = (model, cv, value)
    return hit[2]


def step_warnings(model: Transformer, chip: Chip, batch: int, context: int,
                  kv: Any = None) -> list[str]:
    """Warnings for ``batch`` sequences at ``context`` tokens each (new ones included) of
    ``model`` (numbers in its dimensions) on ``chip``; an empty list when nothing is off.
    ``kv``: the batch's KV-cache bytes at that context where the caller has them (a
    compiled table's whole-model row), else derived here."""
    out = list(model.notes)
    weights = _root("weights", model)  # every parameter stays resident
    if kv is None:
        kv = model.whole(batch, 1, context - 1).kv_bytes  # the batch's cache (windows, MLA...)
    hbm = int(chip.hbm_bytes) if chip.hbm_bytes.is_Integer else chip.hbm_bytes
    if chip.hbm_bytes.is_number and weights + kv > hbm:
        times = float((weights + kv) / hbm)  # Python's division where hbm is an int
        out.append(f"weights {fmt_si(weights, 'B')} + KV cache {fmt_si(kv, 'B')} = "
                   f"{fmt_si(weights + kv, 'B')}, "
                   f"{f'{times:,.0f}' if times >= 100 else f'{times:.3g}'}x "
                   f"the {chip.name}'s HBM ({fmt_si(hbm, 'B')}): the step does not "
                   "fit on one chip")
    top = None if model.max_position is None else int(model.max_position)
    if top is None:
        out.append(f"{model.name}'s maximum context is not known (no max_position): the "
                   "context and the crossovers are not checked against it")
    elif context > top:
        out.append(f"context {context:,} is {context - top:,} past {model.name}'s maximum of "
                   f"{top:,} positions")
    star, kv_star = _root("ctx*", model), _root("kv", model, batch)
    ctx_text = "ctx* (attention FLOPs = matmul FLOPs per token)"
    if star is None:
        out.append(f"{ctx_text} is reached at no context: in {model.name} the matmuls "
                   "outweigh attention at every context")
    elif top is not None and star > top:
        out.append(f"ctx* = {_count(star)} (attention FLOPs = matmul FLOPs per token) is past "
                   f"{model.name}'s maximum context {top:,}: at every context it takes, "
                   "the matmuls outweigh attention")
    kv_text = f"the KV crossover at batch {batch:,} (KV-cache bytes = weight bytes)"
    if kv_star is None:
        out.append(f"{kv_text} is reached at no context: at this batch the weights "
                   "outweigh the KV cache at every context")
    elif top is not None and kv_star > top:
        out.append(f"{kv_text} is at context {_count(kv_star)}, past {model.name}'s maximum "
                   f"{top:,}: at this batch the weights outweigh the KV cache at every "
                   "context it takes")
    elif kv_star < 1:
        out.append(f"{kv_text} is at context {_count(kv_star)}, below one token: at this "
                   "batch the KV cache outweighs the weights at every context")
    return out


def _count(x: Any) -> str:
    """An exact root as a reader wants it: 28,628 or 114,512/3 ~ 38,170.7."""
    whole = Fraction(x).denominator == 1 if isinstance(x, (int, Fraction)) else x.is_Integer
    return f"{int(x):,}" if whole else f"{x} ~ {float(x):,.1f}"
