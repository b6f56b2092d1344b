"""What every block shares: the residual stream (its width D and the bytes per element of
weights, activations and the KV cache) and the description of an operand array.

A block is a small frozen record of one part of a layer (its own dimensions and switches);
it owns four things, each a method: ``params`` (parameter counts by part), ``rows``
(its forward rows, ``dict[str, Cost]`` with the keys of docs/accounting.md), ``twin``
(the NumPy twin's fields for it, plain values) and ``arrays`` (its operands, each a name
and the dimension names a sharding layout partitions).

>>> from symroof.symbols import D
>>> s = Stream(D, 2, 2, 2)
>>> s.D, s.wb
(D, 2)
>>> print(Array(("D", "H", "d_h")))
[D, H, d_h] weight
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import sympy as sp

from ...cost import as_exact

__all__ = ["Stream", "Array", "KINDS", "fields_of", "from_fields", "cap", "Uses", "plain"]

#: what an operand array holds: a parameter, an activation, or the KV cache
KINDS = ("weight", "act", "kv")


class Stream(NamedTuple):
    """The residual stream every block reads and writes: width D; bytes per element of
    weights (``wb``), activations (``ab``) and the KV cache (``kvb``).

    >>> Stream(4096, 1, 2, 2).wb                 # int8 weights
    1
    """

    D: Any
    wb: Any
    ab: Any
    kvb: Any


class Array(NamedTuple):
    """One operand: its dimension names (the symbols of :mod:`symroof.symbols`, ``B``,
    ``T``, ``S`` for the step) and its kind (``KINDS``)."""

    dims: tuple[str, ...]
    kind: str = "weight"

    def __str__(self) -> str:
        return f"[{', '.join(self.dims)}] {self.kind}"



def fields_of(block: Any, changed: bool = False) -> dict[str, Any]:
    """The :class:`~symroof.models.Transformer` fields a block stands for (its ``FIELDS``:
    block attribute -> model field, nested blocks included); ``changed``: only those that
    differ from the block's defaults (what a family preset says).

    >>> from symroof.models.blocks import Attention
    >>> fields_of(Attention(qk_norm=True), changed=True)
    {'qk_norm': True}
    """
    defaults = {f.name: f.default for f in dataclasses.fields(block)}
    out: dict[str, Any] = {}
    for attr, name in type(block).FIELDS.items():
        value = getattr(block, attr)
        if hasattr(value, "FIELDS"):
            out |= fields_of(value, changed)
        elif not changed or attr not in defaults or value != defaults[attr]:
            out[name] = value
    return out


def from_fields(cls: type, model: Any, **given: Any) -> Any:
    """The block ``cls`` a model's fields describe (the inverse of :func:`fields_of`);
    ``given``: nested blocks, built by the caller."""
    own = {f.name for f in dataclasses.fields(cls)}
    return cls(**{attr: getattr(model, name) for attr, name in cls.FIELDS.items()
                  if attr in own and attr not in given}, **given)


def plain(value: Any, name: str) -> Any:
    """A block's value as the NumPy twin's spec takes it: an int for a whole number, a
    float for another number, None, a bool or a string as it is; a symbol is refused,
    naming the field (the twin runs numbers).

    >>> import sympy as sp
    >>> plain(sp.Integer(4096), "D"), plain(sp.Rational(5, 2), "MoE scale")
    (4096, 2.5)
    >>> from symroof.symbols import D
    >>> plain(D, "D")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: the NumPy twin needs numbers for every dimension; D = D (use model.subs(...) ...
    """
    if value is None or isinstance(value, bool | str | int | float):
        return value
    number = sp.sympify(value)
    if not number.is_number:
        raise ValueError(f"the NumPy twin needs numbers for every dimension; {name} = {value} "
                         "(use model.subs(...) or a preset)")
    return int(number) if number.is_Integer else float(number)


def cap(value: Any, name: str) -> None:
    """Refuse a softcap that is neither None nor a positive number, naming the field.

    >>> cap(-1, "final_softcap")
    Traceback (most recent call last):
    ...
    ValueError: final_softcap must be a positive number or None, got -1
    """
    if value is not None and not as_exact(value, name) > 0:
        raise ValueError(f"{name} must be a positive number or None, got {value!r}")


class Uses(NamedTuple):
    """Which arrays (by path, :meth:`~symroof.models.blocks.Blocks.arrays`) one forward row
    reads, writes, multiplies by (``weight``) and caches (``kv``); ``sums``: a dimension of
    its first read it sums over inside (a norm's mean of squares); ``repeats``: the layers
    the row holds (L, the dense or the MoE layers), ``once``: a row outside the layers (the
    embedding, the head). ``also``: more arrays it writes (a fused qkv_proj's k and v);
    ``part``: (path, share) for an array the row moves only a share of, in each read and
    write of it (gate and up each write half of u; RoPE rotates r of each head's d_h).
    Its activation bytes are what it moves of each: the sum over its reads and writes of
    the array's elements (:meth:`~symroof.models.blocks.Blocks.shape`) times its share.
    A layout partitions the arrays; a row's partitions follow.

    >>> Uses(("norms/h",), "attn/Q", weight="attn/W_q").writes
    'attn/Q'
    >>> from sympy import Rational
    >>> Uses(("norms/h",), "mlp/u", "mlp/W_gate", part=(("mlp/u", Rational(1, 2)),)).share("mlp/u")
    1/2
    """

    reads: tuple[str, ...] = ()
    writes: str | None = None
    weight: str | None = None
    kv: str | None = None
    sums: str | None = None
    repeats: Any = 1
    once: bool = False
    also: tuple[str, ...] = ()
    part: tuple[tuple[str, Any], ...] = ()

    def share(self, path: str) -> Any:
        """The share of array ``path`` the row moves in each read and write of it (1: all)."""
        return next((s for p, s in self.part if p == path), 1)

    def moved(self) -> tuple[str, ...]:
        """The activation arrays it reads and writes, in order (one path per read or write)."""
        return (*self.reads, *(() if self.writes is None else (self.writes,)), *self.also)
