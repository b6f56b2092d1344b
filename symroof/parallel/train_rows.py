"""A training step's rows before they are sharded: :func:`symroof.train_ops` (checked op by
op against the NumPy twin) over a symbol for the sequences, or, for a family it refuses,
:func:`rows_without_train_ops`; and the rules, by forward-row key, that say how each row
is shared out (:mod:`symroof.parallel.rows` applies them).

>>> import symroof as sr
>>> rows, exact = train_rows(sr.model("llama-3.1-8b"), 4096, "full")
>>> exact, "recompute/mlp/down" in rows
(True, True)
>>> train_rows(sr.model("mixtral-8x7b"), 4096, "full")[1]     # every preset has them now
True
"""

from __future__ import annotations

import functools
from typing import Any

import sympy as sp

from ..conventions import current
from ..cost import FIELDS, Cost

__all__ = ["train_rows", "rows_at", "rows_without_train_ops", "forward_key", "tp_splits",
           "ep_splits"]

#: the sequences of one microbatch on one chip, while the rows are built (local, replaced)
_b = sp.Dummy("b", positive=True, integer=True)
#: forward-row keys TP leaves whole on every rank (D-wide, or routing); see tp_splits
_TP_WHOLE = ("embed", "pos_embed", "final_norm", "moe/router", "moe/route", "moe/combine")
#: per-head norms (Qwen3's q/k RMSNorm): split with the heads
_PER_HEAD = ("attn/q_norm", "attn/k_norm")


def forward_key(key: str) -> str:
    """The forward row a training row belongs to: its pass and its dX/dW part dropped.

    >>> forward_key("bwd/attn/q_proj/dw"), forward_key("recompute/mlp_norm")
    ('attn/q_proj', 'mlp_norm')
    """
    body = key.split("/", 1)[1] if "/" in key else key
    return body[:-3] if body.endswith(("/dx", "/dw")) else body


def _d_norm(key: str) -> bool:
    """A D-wide norm (not a per-head one)."""
    return key.rsplit("/", 1)[-1].endswith("norm") and key not in _PER_HEAD


def tp_splits(key: str) -> bool:
    """Whether TP splits a forward row's work (heads, F, experts' F, vocabulary) rather
    than repeating it on every rank (D-wide norms, residual adds, gradient sums,
    embeddings, routing).

    >>> [tp_splits(k) for k in ("attn/q_proj", "attn/residual", "mlp_norm", "lm_head")]
    [True, False, False, True]
    """
    last = key.rsplit("/", 1)[-1]
    return not (key in _TP_WHOLE or _d_norm(key) or last == "residual"
                or last.endswith("_sum"))


def ep_splits(key: str) -> bool:
    """Whether EP splits a forward row's weights: the routed experts (``moe/`` rows other
    than routing and shared experts).

    >>> ep_splits("moe/gate"), ep_splits("moe/router"), ep_splits("mlp/gate")
    (True, False, False)
    """
    return key.startswith("moe/") and key not in _TP_WHOLE and "shared" not in key


def rows_without_train_ops(model: Any, sequences: Any, seq: Any, policy: str) -> dict:
    """FALLBACK for a family :func:`symroof.train_ops` refuses (every preset family has
    backward rows now: delete it once none is refused): the forward rows with no KV cache,
    each backward row twice its forward row (dX and dW), the rerun rows of ``policy`` and
    one Adam update.

    >>> import symroof as sr
    >>> rows = rows_without_train_ops(sr.model("mixtral-8x7b"), 1, 4096, "full")
    >>> rows["bwd/moe/gate"].flops == 2 * rows["fwd/moe/gate"].flops
    True
    """
    from ..models import backward as bw
    from ..models.training_memory import remat_recompute

    ops = model.replace(kv_bytes=model.act_bytes).ops(sequences, seq, 0)
    ops.pop("attn/kv_write", None)
    fwd = {k: Cost(flops=c.flops, useful_flops=c.useful_flops, weight_bytes=c.weight_bytes,
                   act_bytes=c.act_bytes + c.kv_bytes) for k, c in ops.items()}
    rerun = remat_recompute(policy)
    layer = [k for k in fwd if k not in ("embed", "pos_embed", "final_norm", "lm_head")]
    return ({f"fwd/{k}": c for k, c in fwd.items()}
            | {f"recompute/{k}": fwd[k] for k in (layer if rerun is None else rerun)}
            | {f"bwd/{k}": 2 * c for k, c in fwd.items()}
            | {"optimizer/adam": bw.adam(model.params, w_bytes=model.w_bytes)})


@functools.lru_cache(maxsize=64)
def _rows(model: Any, seq: Any, policy: str, conventions: Any) -> tuple[dict, bool]:
    from ..models.training import train_ops

    try:
        return train_ops(model, _b, seq, policy, conventions=conventions), True
    except ValueError as err:
        if "training rows" not in str(err):
            raise
        return rows_without_train_ops(model, _b, seq, policy), False


def train_rows(model: Any, seq: Any, remat: Any) -> tuple[dict[str, Cost], bool]:
    """The step's rows over ``_b`` sequences under the conventions in force, and whether
    they are :func:`train_ops`' (False: :func:`rows_without_train_ops`)."""
    policy = "full" if isinstance(remat, int) else remat  # n checkpoints rerun the layers
    return _rows(model, seq, policy, current())


def rows_at(model: Any, seq: Any, remat: Any, sequences: Any) -> dict[str, Cost]:
    """The step's rows (:func:`train_rows`) at ``sequences`` sequences of ``seq`` tokens.

    >>> import symroof as sr
    >>> rows = rows_at(sr.model("llama-3.1-8b"), 4096, "none", 2)
    >>> rows["fwd/mlp/down"] == sr.train_ops(sr.model("llama-3.1-8b"), 2, 4096)["fwd/mlp/down"]
    True
    """
    rows, _ = train_rows(model, seq, remat)
    return {k: _at(c, sp.sympify(sequences), 1, 1) for k, c in rows.items()}


def _at(c: Cost, b: Any, scale: Any, weights: Any) -> Cost:
    """Cost ``c`` at ``b`` sequences, times ``scale`` (its weight bytes times ``weights``)."""
    out = {f: getattr(c, f).xreplace({_b: b}) * scale for f in FIELDS}
    out["weight_bytes"] *= weights
    return Cost(**out)
