"""A model cut into pipeline stages: what each stage runs and holds, read off the blocks.

The layers are split in order as evenly as whole layers allow, so a stage holds at most
ceil(L/Z) of them; the first stage also runs the embedding (and learned positions), the
last the head (final norm, lm_head, a logit softcap) and the loss. The last is the slowest
and the fullest: its layers are the model's last (a mixture of experts' after dense first
layers, the heaviest) and the lm_head is heavier than the embedding's gather. A plan with
stages reads these (:mod:`symroof.parallel.train_rows`: ``stage_shares``, ``stage_state``).

>>> from symroof.models import model
>>> model("deepseek-v3").blocks.last_stage(16)     # 61 layers: 13 stages of 4, 3 of 3
{'all': 4, 'moe': 4, 'dense': 0}
"""

from __future__ import annotations

from typing import Any

import sympy as sp

__all__ = ["Stages"]


class Stages:
    """The pipeline-stage views of :class:`~symroof.models.blocks.Blocks` (a mixin: it
    reads the blocks' own fields and methods)."""

    def ends(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The forward rows before the layers (the embedding's and the positions') and
        after them (the head's): a pipeline's first stage and its last run them.

        >>> from symroof.models import model
        >>> model("gemma-2-9b").blocks.ends()
        (('embed',), ('final_norm', 'lm_head', 'logit_softcap'))
        """
        first = self.embedding.uses() | self.positions.uses()
        return tuple(first), tuple(self.head.uses(self.embedding.tied))

    def layers_of(self, key: str) -> str:
        """Which layers the forward or backward row ``key`` (no pass prefix) runs in:
        ``"moe"`` (the experts' rows), ``"dense"`` (the dense MLP's, on the layers before
        the experts') or ``"all"`` (attention, norms, residual sums: every layer).

        >>> from symroof.models import model
        >>> b = model("deepseek-v3").blocks
        >>> [b.layers_of(k) for k in ("moe/gate", "mlp/gate_up_sum", "mlp/residual")]
        ['moe', 'dense', 'all']
        """
        if key.startswith("moe/"):
            return "moe"
        return "dense" if key.startswith("mlp/") and key not in self.residual.uses() else "all"

    def last_stage(self, Z: Any) -> dict[str, Any]:
        """The layers of the slowest of Z pipeline stages, the last: the layers split in
        order as evenly as whole layers allow, it holds ceil(L/Z) of them (the most a
        stage holds) and the head; ``all`` its layers, ``moe`` those with experts (the
        model's last ones, after dense first layers: the heaviest), ``dense`` the rest.

        >>> from symroof.models import model
        >>> model("deepseek-v3").blocks.last_stage(1), model("deepseek-v3").blocks.last_stage(4)
        ({'all': 61, 'moe': 58, 'dense': 3}, {'all': 16, 'moe': 16, 'dense': 0})
        """
        per = sp.ceiling(sp.sympify(self.L) / Z)
        moe = sp.Min(per, self.moe_layers)
        return {"all": per, "moe": moe, "dense": per - moe}

    def stage_params(self, Z: Any) -> dict[str, sp.Expr]:
        """The parameters the last of Z pipeline stages holds, by part (:meth:`params`'
        keys): its layers' share of each layer part (:meth:`last_stage`: ceil(L/Z)
        layers), their norms and the final one, the lm_head (a tied one's matrix too, from
        two stages on: the last stage multiplies by it), the embedding and positions with
        one stage only (they are the first stage's). One stage holds :meth:`params`.

        >>> from symroof.models import model
        >>> b = model("llama-3.1-70b").blocks
        >>> last = b.stage_params(8)                 # 10 of the 80 layers, and the head
        >>> last["attention"] * 8 == b.params()["attention"], last["embedding"], last["lm_head"]
        (True, 0, 1050673152)
        """
        s, stage, first = self.stream, self.last_stage(Z), sp.Max(0, 2 - sp.sympify(Z))
        per = self.attention.params(s)
        per |= self.mlp.params(s) if self.dense_layers != 0 else {}
        per |= self.experts.params(s) if self.experts is not None else {}
        whole = self.params()
        out = {k: first * v for k, v in whole.items() if k in ("embedding", "positions")}
        for k, v in per.items():
            out[k] = stage["dense" if k == "mlp" else "all" if k == "attention" else "moe"] * v
        out["norms"] = (self.residual.norms * stage["all"] + 1) * self.residual.norm.params(s.D)
        tied = self.embedding.V * s.D if self.embedding.tied else 0
        return out | {"lm_head": whole["lm_head"] + (1 - first) * tied}
