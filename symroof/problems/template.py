"""Problem templates: a statement with placeholders and a function that derives its solution.

A :class:`Template` is the book's problem in general form: ``statement`` is text with
``{name}`` placeholders (``$...$`` is inline maths, ``1.97e14`` is typeset), ``book`` holds
the book's own parameters (seed 0 reproduces them), ``draw`` picks fresh ones from a seeded
``random.Random`` (real chips and models, round numbers), and ``solve(params, d)`` records
the solution in the :class:`~symroof.derivation.Derivation` ``d`` (the symbolic formula first,
then its value: ``d.step(..., at=...)``; claims asserted) and returns the answers, ``{label:
(value, unit)}``. :class:`Problem` is a template with its parameters for one seed.

>>> import symroof as sr
>>> from symroof.symbols import C, W
>>> def ridge(p, d):
...     chip = sr.chip(p["chip"])
...     b = d.step("the ridge", "B^*", C / W, at={C: chip.peak(), W: chip.hbm_bw})
...     d.claim("$B^*$ is the critical batch", b == sr.critical_batch(chip))
...     return {"B^*": (b, "")}
>>> t = Template("custom", "ridge", "The ridge", "At what batch is a bf16 matmul on a "
...              "{chip} compute-bound?", ridge, book={"chip": "tpu-v5e"},
...              draw=lambda rng: {"chip": rng.choice(["h100", "tpu-v5p"])})
>>> Problem(t, 0).statement, Problem(t, 0).answers["B^*"][0]
('At what batch is a bf16 matmul on a TPU v5e compute-bound?', 9850/41)
>>> Problem(t, 2027).params == Problem(t, 2027).params   # a seed always draws the same
True
"""

from __future__ import annotations

import random
import re
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import sympy as sp

from ..derivation import Derivation
from ..render import number
from ..surfaces.handout_words import product_name

__all__ = ["Template", "Problem", "BOOK_SEED", "shown"]

#: the seed whose parameters are the book's own
BOOK_SEED = 0

Solve = Callable[[dict[str, Any], Derivation], dict[str, tuple[Any, str]]]


#: "a" before a chip or model name read as a letter with a vowel sound (A100, H100, MI300X)
_AN = re.compile(r"\b([Aa]) (?=[AEFHILMNORSX][0-9])")


def articled(text: str) -> str:
    """``text`` with "a" made "an" before a name spoken from a vowel sound: "an H100".

    >>> articled("runs on a A100, a H100 or a B200")
    'runs on an A100, an H100 or a B200'
    """
    return _AN.sub(r"\1n ", text)


def shown(value: Any) -> str:
    """A parameter as a statement prints it: integers as they are, other numbers at up to 4
    significant figures in e-notation past 10^4 (``8.1e11``), chips and models by their
    product names (:func:`~symroof.surfaces.handout_words.product_name`), other names as they are.

    >>> shown(4096), shown(8.1e11), shown(sp.Rational(1, 2)), shown("tpu-v5e"), shown("h100")
    ('4096', '8.1e11', '1/2', 'TPU v5e', 'H100')
    >>> shown("llama-3.1-70b")
    'Llama-3.1-70B'
    """
    if isinstance(value, str):  # a chip or a model as people write it
        return product_name(value)
    if isinstance(value, bool) or not isinstance(value, (int, float, sp.Basic)):
        return str(value)
    exact = sp.nsimplify(value) if isinstance(value, float) else sp.sympify(value)
    if exact.is_Integer and abs(exact) < 10**6:
        return str(int(exact))
    text = number(exact, digits=4, tex=False).replace(" ", "")
    if "e" in text:  # 8.100e11 -> 8.1e11
        mantissa, exponent = text.split("e")
        text = mantissa.rstrip("0").rstrip(".") + "e" + exponent
    elif "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


@dataclass(frozen=True)
class Template:
    """A problem in general form (see the module docstring); ``source`` names the book's
    problem it follows, ``book_note`` what the book answers (and its slips), for seed 0."""

    chapter: str
    name: str
    title: str
    statement: str
    solve: Solve
    book: dict[str, Any]
    draw: Callable[[random.Random], dict[str, Any]] | None = None
    source: str = ""
    book_note: str = ""

    def __post_init__(self) -> None:
        names = {f for _, f, _, _ in string.Formatter().parse(self.statement) if f}
        missing = sorted(names - set(self.book))
        if missing:
            raise ValueError(f"template {self.name!r}: the statement's placeholders "
                             f"{', '.join(missing)} have no value in its book parameters")

    def params(self, seed: int) -> dict[str, Any]:
        """The parameters for ``seed``: the book's for seed 0, else drawn (the same draw for
        the same template and seed, on every machine)."""
        if seed == BOOK_SEED or self.draw is None:
            return dict(self.book)
        drawn = self.draw(random.Random(f"{self.chapter}/{self.name}/{seed}"))
        return {**self.book, **drawn}


@dataclass
class Problem:
    """One template at one seed: its statement, and its solution derived when first asked."""

    template: Template
    seed: int = BOOK_SEED
    params: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        self.params = self.template.params(self.seed)

    @property
    def statement(self) -> str:
        text = self.template.statement.format(**{k: shown(v) for k, v in self.params.items()})
        return articled(text)

    @cached_property
    def _solved(self) -> tuple[Derivation, dict[str, tuple[Any, str]]]:
        d = Derivation(self.template.title)
        answers = self.template.solve(dict(self.params), d)
        return d, answers

    @property
    def solution(self) -> Derivation:
        """The worked solution: the formula, then the number, each claim asserted."""
        return self._solved[0]

    @property
    def answers(self) -> dict[str, tuple[Any, str]]:
        """``{label: (exact value, unit)}``."""
        return self._solved[1]

    def check(self) -> None:
        """Raise ``ValueError`` unless the problem is well-posed: its statement fills, its
        solution derives with every claim holding, and every answer is a finite positive
        real number (or a positive expression of the problem's symbols)."""
        self.statement  # noqa: B018 (a missing placeholder raises here)
        if not all(ok for _, ok in self.solution.claims) or not self.solution.claims:
            raise ValueError(f"{self.template.name} seed {self.seed}: no claim checked")
        for label, (value, _) in self.answers.items():
            v = sp.sympify(value)
            if not v.is_positive or v.is_number and not v.is_finite:
                raise ValueError(f"{self.template.name} seed {self.seed}: answer {label} = "
                                 f"{v} is not a finite positive number")


def pick(rng: random.Random, options: Sequence[Any]) -> Any:
    """One of ``options`` (a helper for ``draw`` functions)."""
    return options[rng.randrange(len(options))]
