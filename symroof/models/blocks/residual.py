"""The residual pattern of a layer: where its norms sit and how the two branches join the
stream. Sequential (Llama: x += attn(norm x); x += mlp(norm x)), parallel (GPT-NeoX:
x + attn(ln1 x) + mlp(ln2 x), the same rows), and Gemma-2's sandwich: a norm on each
branch's output too (``post_norms``).

>>> from symroof.symbols import B, D
>>> s = Stream(D, 2, 2, 2)
>>> list(Residual(post_norms=True).after_attention(B, s))
['attn/post_norm', 'attn/residual', 'mlp_norm']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...cost import Cost
from .. import rows as rw
from .base import Array, Stream, Uses
from .norm import Norm

__all__ = ["Residual"]


@dataclass(frozen=True)
class Residual:
    """A layer's norms (``norm``: the kind every norm of the model is) and residual adds.

    >>> Residual(Norm("layer"), post_norms=True).params(Stream(3584, 2, 2, 2))
    {'norms': 28672}
    """

    FIELDS = {"norm": "norm", "parallel": "parallel_residual", "post_norms": "post_norms"}

    norm: Norm = Norm()
    parallel: bool = False
    post_norms: bool = False

    @property
    def norms(self) -> int:
        """Norms in one layer: two before the branches, two more after them (sandwich)."""
        return 4 if self.post_norms else 2

    def params(self, s: Stream) -> dict[str, Any]:
        """One layer's norm weights."""
        return {"norms": self.norms * self.norm.params(s.D)}

    def before_attention(self, n: Any, s: Stream) -> dict[str, Cost]:
        """The norm before attention, ``attn_norm``."""
        return {"attn_norm": self.norm.row(n, s.D, s)}

    def after_attention(self, n: Any, s: Stream) -> dict[str, Cost]:
        """[the attention output's norm], the attention's residual add, the MLP's norm."""
        rows = {"attn/post_norm": self.norm.row(n, s.D, s)} if self.post_norms else {}
        return rows | {"attn/residual": rw.residual(n * s.D, ab=s.ab),
                       "mlp_norm": self.norm.row(n, s.D, s)}

    def after_mlp(self, n: Any, s: Stream) -> dict[str, Cost]:
        """[the MLP output's norm], the MLP's residual add."""
        rows = {"mlp/post_norm": self.norm.row(n, s.D, s)} if self.post_norms else {}
        return rows | {"mlp/residual": rw.residual(n * s.D, ab=s.ab)}

    def arrays(self) -> dict[str, Array]:
        """The weights of its norms (and LayerNorm's biases); a norm's output ``h`` (what
        the branches read) and a branch's output ``y`` (what the residual adds)."""
        names = ["attn_norm", "mlp_norm"] + (["attn_post_norm", "mlp_post_norm"]
                                             if self.post_norms else [])
        out: dict[str, Array] = {}
        for name in names:
            out |= self.norm.arrays(name, "D")
        return out | {"h": Array(("B", "T", "D"), "act"), "y": Array(("B", "T", "D"), "act")}

    def twin(self) -> dict[str, Any]:
        """The twin's ``parallel_residual`` and ``post_norms``."""
        return {"parallel_residual": self.parallel, "post_norms": self.post_norms}

    def uses(self) -> dict[str, Uses]:
        """Per row, its arrays: a norm reads the stream ``embed/x`` (summing squares over D)
        into ``h``; a post-norm normalises the branch's output ``y``; a residual add reads
        the stream and ``y`` into the stream.

        >>> Residual().uses()["attn/residual"].reads
        ('embed/x', 'norms/y')
        """
        x, h, y = "embed/x", "norms/h", "norms/y"
        out = {}
        for branch in ("attn", "mlp"):
            out[f"{branch}_norm"] = Uses((x,), h, f"norms/{branch}_norm", sums="D")
            if self.post_norms:
                out[f"{branch}/post_norm"] = Uses((y,), y, f"norms/{branch}_post_norm", sums="D")
            out[f"{branch}/residual"] = Uses((x, y), x)
        return out
