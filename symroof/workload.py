"""The workload, named once: what one step of a model runs.

- :class:`Step`: one forward step (inference) over ``batch`` sequences, each adding
  ``new_tokens`` to ``cached`` ones, so that each attends to a context of
  S = cached + new_tokens. Give ``context`` instead of ``cached`` when that is what you know
  (decode at context 2048 is ``Step(64, context=2048)``: one new token on 2047 cached).
  Prefill of a prompt of T tokens is ``Step(batch, new_tokens=T)``.
- :class:`TrainStep`: one training step over ``sequences`` sequences of ``seq`` tokens; the
  global batch in tokens (the book's B) is ``tokens``.

``batch`` always counts sequences, in the Python API and on the command line (``--batch``);
tokens are ``new_tokens`` per sequence, or a training step's ``tokens``.

>>> import symroof as sr
>>> step = sr.Step(64, context=2048)
>>> step.batch, step.new_tokens, step.cached, step.context
(64, 1, 2047, 2048)
>>> print(step)
batch 64, context 2,048 (1 new token on 2,047 cached)
>>> print(sr.TrainStep(1024, 4096))
1,024 sequences of 4,096 tokens (4,194,304 tokens)
>>> sr.TrainStep.from_tokens(4 * 2**20, 4096).sequences
1024
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sympy as sp

from .cost import as_dimension

__all__ = ["Step", "TrainStep", "as_step"]


def _count(value: Any, name: str, *, zero: bool = False) -> sp.Expr:
    """A positive (or, with ``zero``, non-negative) whole number or a symbol."""
    if zero and isinstance(value, (int, sp.Integer)) and not isinstance(value, bool) \
            and value == 0:
        return sp.Integer(0)
    if zero and isinstance(value, int) and not isinstance(value, bool) and value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    return as_dimension(value, name)


def _fmt(x: sp.Expr) -> str:
    return f"{int(x):,}" if x.is_Integer else str(x)


@dataclass(frozen=True, init=False)
class Step:
    """One forward step: ``batch`` sequences, ``new_tokens`` each (default 1, a decode
    step), after ``cached`` tokens, so a context of ``context`` = cached + new_tokens.

    >>> from symroof.symbols import B, S
    >>> Step(B, context=S).cached
    S - 1
    >>> Step(1, new_tokens=2048).phase                   # a prompt, nothing cached
    'prefill'
    >>> Step(8, context=100, cached=50)
    Traceback (most recent call last):
    ...
    ValueError: give cached or context, not both (context = cached + new_tokens)
    """

    batch: sp.Expr
    new_tokens: sp.Expr
    cached: sp.Expr

    def __init__(self, batch: Any, new_tokens: Any = 1, cached: Any = None, *,
                 context: Any = None) -> None:
        B = _count(batch, "batch")
        T = _count(new_tokens, "new_tokens")
        if cached is not None and context is not None:
            raise ValueError("give cached or context, not both (context = cached + "
                             "new_tokens)")
        if context is not None:
            S = _count(context, "context")
            c = S - T
            if c.is_negative:
                raise ValueError(f"context {_fmt(S)} is shorter than the {_fmt(T)} new "
                                 "tokens it includes")
        else:
            c = _count(0 if cached is None else cached, "cached", zero=True)
        object.__setattr__(self, "batch", B)
        object.__setattr__(self, "new_tokens", T)
        object.__setattr__(self, "cached", c)

    @property
    def context(self) -> sp.Expr:
        """S: the tokens each sequence attends to, the new ones included."""
        return self.cached + self.new_tokens

    @property
    def tokens(self) -> sp.Expr:
        """New tokens in the whole step, batch x new_tokens."""
        return self.batch * self.new_tokens

    @property
    def phase(self) -> str:
        """'decode' (one new token per sequence), 'prefill' (a prompt, nothing cached) or
        'extend' (several new tokens on a cache)."""
        if self.new_tokens == 1:
            return "decode"
        return "prefill" if self.cached == 0 else "extend"

    def __iter__(self):  # (batch, new_tokens, cached): the positional form of the rows
        return iter((self.batch, self.new_tokens, self.cached))

    def __str__(self) -> str:
        T, c = self.new_tokens, self.cached
        if self.phase == "prefill":
            return f"batch {_fmt(self.batch)}, prompt {_fmt(T)} tokens"
        new = "1 new token" if T == 1 else f"{_fmt(T)} new tokens"
        return f"batch {_fmt(self.batch)}, context {_fmt(self.context)} ({new} on " \
               f"{_fmt(c)} cached)"


@dataclass(frozen=True, init=False)
class TrainStep:
    """One training step: ``sequences`` sequences of ``seq`` tokens; ``tokens`` is the
    global batch in tokens (the book's B).

    >>> from symroof.symbols import B, S
    >>> TrainStep(B, S).tokens
    B*S
    >>> TrainStep.from_tokens(10**6, 4096)
    Traceback (most recent call last):
    ...
    ValueError: 1,000,000 tokens is not a whole number of sequences of 4,096 tokens ...
    """

    sequences: sp.Expr
    seq: sp.Expr

    def __init__(self, sequences: Any, seq: Any = 4096) -> None:
        object.__setattr__(self, "sequences", _count(sequences, "sequences"))
        object.__setattr__(self, "seq", _count(seq, "seq"))

    @classmethod
    def from_tokens(cls, tokens: Any, seq: Any = 4096) -> TrainStep:
        """The step of a global batch of ``tokens`` tokens in whole sequences of ``seq``."""
        n, s = _count(tokens, "tokens"), _count(seq, "seq")
        q = n / s
        if q.is_number and not q.is_integer:
            lo, hi = int(q) * s, (int(q) + 1) * s
            raise ValueError(f"{_fmt(n)} tokens is not a whole number of sequences of "
                             f"{_fmt(s)} tokens (nearest: {_fmt(lo)} = {int(q):,} sequences "
                             f"or {_fmt(hi)} = {int(q) + 1:,})")
        return cls(q, s)

    @property
    def tokens(self) -> sp.Expr:
        """The global batch in tokens, sequences x seq."""
        return self.sequences * self.seq

    def __str__(self) -> str:
        return (f"{_fmt(self.sequences)} sequences of {_fmt(self.seq)} tokens "
                f"({_fmt(self.tokens)} tokens)")


def as_step(step: Any, new_tokens: Any = None, cached: Any = 0) -> Step:
    """A :class:`Step` from a Step, or from the positional ``(batch, new_tokens, cached)``
    that the row builders also take.

    >>> as_step(Step(4, 16)) == as_step(4, 16, 0)
    True
    """
    if isinstance(step, Step):
        if new_tokens is not None or (cached is not None and cached != 0):
            raise ValueError("a Step already says its new_tokens and cached tokens")
        return step
    if new_tokens is None:
        raise ValueError("a step needs new_tokens (or pass a sr.Step)")
    return Step(step, new_tokens, cached)
