"""``Transformer.whole`` with numbers: its derivation compiled once per model, then evaluated.

``whole(batch, new_tokens, cached)`` derives lecture 1's whole-model cost in SymPy. With
plain integers for the step, that derivation is the same on every call but for the numbers,
so it is done once per (model, lm_head rule, conventions) over the symbols (B, T, S) and
compiled by the exact backend of :mod:`symroof.compiler` (the source kept on disk between
processes, :func:`symroof.cache.kept`, as the tables' is); a call then evaluates Python
integers and builds the ``Cost`` from them. The result is the same exact value as the
derivation's (ints, Rationals), only faster; a symbolic step, or a model with symbols in
it, takes the derivation.

>>> import symroof as sr
>>> m = sr.model("llama-3.1-8b")
>>> fast = whole_numbers(m, 4, 1, 1023, True, None)
>>> fast.kv_bytes == m._whole(4, 1, 1023, True).kv_bytes == 4 * m.kv_cache_bytes(1024)
True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..cache import kept
from ..compiler import exact_source, load
from ..conventions import as_conventions, using
from ..cost import FIELDS, Cost
from ..symbols import B, S, T

__all__ = ["whole_numbers"]

#: (id(model), last_only, id(conventions)) -> (model, conventions, compiled fields or None:
#: not compilable); found by identity (hashing a model or a record costs more than a call)
_COMPILED: dict[tuple, tuple[Any, Any, Callable | None]] = {}


def _compiled(model: Any, last_only: bool, conventions: Any) -> Callable | None:
    """The exact function (B, T, S) -> the whole cost's fields, or None where the model's
    cost holds other symbols than the step's."""
    key = (id(model), last_only, id(conventions))
    hit = _COMPILED.get(key)
    if hit is not None and hit[0] is model and hit[1] is conventions:
        return hit[2]

    def build() -> str:
        with using(conventions):
            cost = model._whole(B, T, S - T, last_only)
        fields = [getattr(cost, name) for name in FIELDS]
        if not set().union(*(f.free_symbols for f in fields)) <= {B, T, S}:
            return ""  # symbols of the model's own: derived on every call
        return exact_source(fields, (B, T, S), sympy=True)

    source = kept("whole", (model, last_only, conventions), build)  # between processes too
    fn = load(source, "_compiled", f"<symroof whole: {model.name}>") if source else None
    if len(_COMPILED) >= 256:
        _COMPILED.clear()
    _COMPILED[key] = (model, conventions, fn)
    return fn


def whole_numbers(model: Any, batch: Any, new_tokens: Any, cached: Any, last_only: bool,
                  conventions: Any) -> Cost | None:
    """The whole cost of a step given as plain ints (batch, new tokens >= 1, cached >= 0)
    from the compiled derivation, or None where that does not apply (other arguments: the
    caller derives, and says what is wrong with them)."""
    if not (type(batch) is int and type(new_tokens) is int and type(cached) is int
            and batch > 0 and new_tokens > 0 and cached >= 0):
        return None
    fn = _compiled(model, last_only, as_conventions(conventions))
    if fn is None:
        return None
    return Cost._of(fn(batch, new_tokens, new_tokens + cached))
