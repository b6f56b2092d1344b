"""Problem sets with worked solutions: the book's problems as templates, fresh numbers per seed.

>>> from symroof.problems import problem_set
>>> [p.template.name for p in problem_set("rooflines")]
['int8-matmul', 'gpu-critical-batch']
"""

from __future__ import annotations

from .book_hardware import HARDWARE_TEMPLATES
from .book_models import MODEL_TEMPLATES
from .template import BOOK_SEED, Problem, Template, shown

__all__ = ["Template", "Problem", "BOOK_SEED", "TEMPLATES", "CHAPTERS", "problem_set", "shown"]

#: every shipped template, in the book's order
TEMPLATES: list[Template] = HARDWARE_TEMPLATES + MODEL_TEMPLATES
#: the chapters, in the book's order
CHAPTERS: tuple[str, ...] = tuple(dict.fromkeys(t.chapter for t in TEMPLATES))


def problem_set(chapter: str, seed: int = BOOK_SEED,
                templates: list[Template] | None = None) -> list[Problem]:
    """The problems of ``chapter`` (``"all"``: every chapter) for ``seed`` (0: the book's own
    numbers); ``templates`` replaces the shipped ones (a teacher's own).

    >>> problem_set("nope")
    Traceback (most recent call last):
    ...
    ValueError: --chapter 'nope': the chapters are rooflines, tpus, sharding, ... (or all)
    """
    pool = TEMPLATES if templates is None else list(templates)
    chapters = tuple(dict.fromkeys(t.chapter for t in pool))
    if chapter != "all" and chapter not in chapters:
        raise ValueError(f"--chapter {chapter!r}: the chapters are {', '.join(chapters)} "
                         "(or all)")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"--seed {seed!r}: a whole number, 0 or more (0: the book's numbers)")
    return [Problem(t, seed) for t in pool if chapter in ("all", t.chapter)]
