"""The decode grid: time bounds of one model on one chip over arrays of batch and context,
derived and compiled once, then evaluated at NumPy speed.

>>> import numpy as np, symroof as sr
>>> t = sweep_step_time(sr.model("llama-3.1-8b"), sr.chip("h100"),
...                     batch=np.arange(1, 1001)[:, None], context=np.arange(1, 1001))
>>> t["lower"].shape
(1000, 1000)
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..conventions import Conventions, as_conventions
from ..evaluate import _finish, evaluate, free_symbols
from ..symbols import B as _B
from ..symbols import S as _S
from .inference import StepTime, step_time

__all__ = ["sweep_step_time"]


@functools.lru_cache(maxsize=64)
def _symbolic_step(model: Any, chip: Any, new_tokens: int, dtype: str,
                   attention: str, conventions: Conventions) -> StepTime:
    return step_time(model, chip, _B, new_tokens, _S - new_tokens, dtype=dtype,
                     attention=attention, conventions=conventions)


def sweep_step_time(model: Any, chip: Any, batch: Any, context: Any, *, new_tokens: int = 1,
                    dtype: str = "bf16", attention: str = "fused",
                    per_op: bool = False, conventions: Any = None) -> dict[str, np.ndarray]:
    """Time bounds of one forward step over arrays of ``batch`` and ``context`` (S, new
    tokens included), broadcast together: pass ``batch[:, None]`` and ``context[None, :]``
    for a grid. Returns the whole-model ``t_math``, ``t_mem``, ``t_net``, ``lower``,
    ``upper`` (seconds); with ``per_op=True`` also ``per_op_sum`` and ``ratio`` (the
    per-group view of :func:`symroof.step_time`). The symbolic step is derived and compiled
    once per (model, chip, new_tokens, dtype, attention, conventions); ``conventions`` (a
    profile name or record; default the one in force) as in :func:`symroof.step_time`.

    >>> import numpy as np, symroof as sr
    >>> t = sweep_step_time(sr.model("llama-3.1-8b"), sr.chip("h100"),
    ...                     batch=np.array([1, 64]), context=2048)   # = sr.step_time(..., 2047)
    >>> [round(float(x) * 1e3, 2) for x in t["lower"]]
    [4.56, 9.61]
    >>> sweep_step_time(sr.model("llama-3.1-8b"), sr.chip("h100"), batch=1, context=0)
    Traceback (most recent call last):
    ...
    ValueError: context must be >= new_tokens (1) everywhere, got 0
    """
    if isinstance(new_tokens, bool) or not isinstance(new_tokens, int) or new_tokens < 1:
        raise ValueError(f"new_tokens must be a positive integer, got {new_tokens!r}")
    B, S = np.asarray(batch, dtype=np.float64), np.asarray(context, dtype=np.float64)
    if B.size and not (B >= 1).all():
        raise ValueError(f"batch must be >= 1 everywhere, got {B.min():g}")
    if S.size and not (S >= new_tokens).all():
        raise ValueError(f"context must be >= new_tokens ({new_tokens}) everywhere, "
                         f"got {S.min():g}")
    st = _symbolic_step(model, chip, new_tokens, dtype, attention,
                        as_conventions(conventions))
    obj = st if per_op else st.whole
    values = {_B: B, _S: S}
    free = set(free_symbols(obj))
    extra = free - {_B, _S}
    if extra:
        raise ValueError(f"the step still has free symbols {sorted(s.name for s in extra)}: "
                         "give a model and chip with numbers (or use evaluate())")
    out = evaluate(obj, {s: v for s, v in values.items() if s in free})
    if per_op:
        out = {**out["whole"], "per_op_sum": out["per_op_sum"], "ratio": out["ratio"]}
    return _finish(out, np.broadcast_shapes(B.shape, S.shape))
