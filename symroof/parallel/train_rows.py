"""A training step's rows before they are sharded: :func:`symroof.train_ops` (checked op by
op against the NumPy twin) over a symbol for the sequences, and the rules, by forward-row
key, that say how each row is shared out (:mod:`symroof.parallel.rows` applies them). A
model :func:`symroof.train_ops` refuses has no training plan: its error is the plan's.

>>> import symroof as sr
>>> "recompute/mlp/down" in train_rows(sr.model("llama-3.1-8b"), 4096, "full")
True
>>> "bwd/moe/gate/dw" in train_rows(sr.model("mixtral-8x7b"), 4096, "full")
True
"""

from __future__ import annotations

import functools
from typing import Any

import sympy as sp

from ..conventions import current
from ..cost import FIELDS, Cost

__all__ = ["train_rows", "rows_at", "forward_key", "tp_splits", "ep_splits", "stage_shares",
           "stage_state"]

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


def stage_shares(model: Any, Z: Any) -> Any:
    """The share of each forward row's work (by :func:`forward_key`) that the slowest of Z
    pipeline stages runs: the last stage (:meth:`~symroof.models.blocks.Blocks.last_stage`:
    ceil(L/Z) layers, the model's last, so the experts' after DeepSeek's dense first layers),
    which holds the head and the loss too; the embedding's rows run on the first stage
    (on the last only when there is one stage). A pipeline's step waits on its slowest
    stage, so a plan with stages times this one, not the average stage's 1/Z of each row.

    >>> import symroof as sr
    >>> share = stage_shares(sr.model("deepseek-v3"), 4)
    >>> share("attn/o_proj"), share("moe/gate"), share("mlp/gate"), share("lm_head"), share("embed")
    (16/61, 8/29, 0, 1, 0)
    """
    b = model.blocks
    first, last = b.ends()
    stage = b.last_stage(Z)
    total = {"all": sp.sympify(model.L), "moe": b.moe_layers, "dense": b.dense_layers}

    def share(key: str) -> Any:
        if key in last or key == "loss":
            return sp.Integer(1)
        if key in first:  # 1 for a single stage, 0 from two on (the first stage's)
            return sp.Max(0, 2 - sp.sympify(Z))
        kind = b.layers_of(key)
        return stage[kind] / total[kind]

    return share


def stage_state(model: Any, Z: Any, Ze: Any) -> sp.Expr:
    """The share of the model's parameters (and so of its optimizer state) one chip of the
    pipeline's last stage holds before TP and ZeRO split them: the stage's parameters
    (:meth:`~symroof.models.blocks.Blocks.stage_params`), its routed experts over the
    ``Ze`` EP ranks; the plan's memory and its Adam step read it.

    >>> import symroof as sr
    >>> m = sr.model("llama-3.1-70b")
    >>> last = sum(m.blocks.stage_params(8).values())     # 10 of 80 layers and the head
    >>> stage_state(m, 1, 1), stage_state(m, 8, 1) == last / m.params
    (1, True)
    """
    stage = model.blocks.stage_params(Z)  # every parameter where Z = 1
    P_e = sp.sympify(stage.get("experts", 0))  # its routed experts, 1/Z_e of them a chip
    return (sum(stage.values()) - P_e + P_e / Ze) / model.params


@functools.lru_cache(maxsize=64)
def _rows(model: Any, seq: Any, policy: str, conventions: Any) -> dict[str, Cost]:
    from ..models.training import train_ops

    return train_ops(model, _b, seq, policy, conventions=conventions)


def train_rows(model: Any, seq: Any, remat: Any) -> dict[str, Cost]:
    """The step's rows (:func:`symroof.train_ops`) over ``_b`` sequences under the
    conventions in force; ``remat`` a policy, or a number of checkpoints (they rerun the
    layers: "full")."""
    policy = "full" if isinstance(remat, int) else remat  # n checkpoints rerun the layers
    return _rows(model, seq, policy, current())


def rows_at(model: Any, seq: Any, remat: Any, sequences: Any) -> dict[str, Cost]:
    """The step's rows (:func:`train_rows`) at ``sequences`` sequences of ``seq`` tokens.

    >>> import symroof as sr
    >>> rows = rows_at(sr.model("llama-3.1-8b"), 4096, "none", 2)
    >>> rows["fwd/mlp/down"] == sr.train_ops(sr.model("llama-3.1-8b"), 2, 4096)["fwd/mlp/down"]
    True
    """
    rows = train_rows(model, seq, remat)
    return {k: _at(c, sp.sympify(sequences), 1, 1) for k, c in rows.items()}


def _at(c: Cost, b: Any, scale: Any, weights: Any) -> Cost:
    """Cost ``c`` at ``b`` sequences, times ``scale`` (its weight bytes times ``weights``)."""
    out = {f: getattr(c, f).xreplace({_b: b}) * scale for f in FIELDS}
    out["weight_bytes"] *= weights
    return Cost(**out)
