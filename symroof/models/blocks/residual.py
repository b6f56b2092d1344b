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
from ...numeric.spec import ResidualSpec
from .. import rows as rw
from .backprop import Graph, Widths
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

    def twin(self) -> ResidualSpec:
        """The NumPy twin's spec of it (its norm's is the norm's own)."""
        return ResidualSpec(parallel_residual=self.parallel, post_norms=self.post_norms)

    # -- training: one layer's backward rows, backwards, and its pieces of the layer graph
    def backward_mlp_out(self, w: Widths) -> dict[str, Cost]:
        """[the MLP output's norm], the first of a layer's backward rows."""
        return {"mlp/post_norm": self.norm.backward(w.n, w.s.D, w)} if self.post_norms else {}

    def backward_mlp_in(self, w: Widths) -> dict[str, Cost]:
        """The MLP norm and the sum of the residual stream's two gradients (parallel: the
        MLP norm's gradient meets x's at the attention's sum instead).

        >>> from symroof.symbols import B, D
        >>> w = Widths(B, Stream(D, 2, 2, 2), 2)
        >>> list(Residual().backward_mlp_in(w)), list(Residual(parallel=True).backward_mlp_in(w))
        (['mlp_norm', 'mlp/residual'], ['mlp_norm'])
        """
        rows = {"mlp_norm": self.norm.backward(w.n, w.s.D, w)}
        return rows if self.parallel else rows | {"mlp/residual": w.sum(2)}

    def backward_attention_out(self, w: Widths) -> dict[str, Cost]:
        """[the attention output's norm]."""
        return {"attn/post_norm": self.norm.backward(w.n, w.s.D, w)} if self.post_norms \
            else {}

    def backward_attention_in(self, w: Widths) -> dict[str, Cost]:
        """The attention norm and the residual stream's sum: two gradients (parallel: three,
        the MLP norm's too), the last of a layer's backward rows.

        >>> from symroof.symbols import B, D
        >>> w = Widths(B, Stream(D, 2, 2, 2), 2)
        >>> Residual(parallel=True).backward_attention_in(w)["attn/residual"].flops
        2*B*D
        """
        return {"attn_norm": self.norm.backward(w.n, w.s.D, w),
                "attn/residual": w.sum(3 if self.parallel else 2)}

    def graph_attention_in(self) -> Graph:
        """The attention norm: x -> h1 (its backward reads x)."""
        return Graph({"attn_norm": (("x",), ("h1",))}, ("x",))

    def graph_attention_out(self) -> Graph:
        """[the post norm y -> yn (its backward reads y)], the residual add -> x1."""
        if not self.post_norms:
            return Graph({"attn/residual": (("x", "y"), ("x1",))})
        return Graph({"attn/post_norm": (("y",), ("yn",)),
                      "attn/residual": (("x", "yn"), ("x1",))}, ("y",))

    def graph_mlp_in(self) -> Graph:
        """The MLP norm -> h2, of x1 (parallel: of x, the layer input)."""
        x = "x" if self.parallel else "x1"
        return Graph({"mlp_norm": ((x,), ("h2",))}, (x,))

    def graph_mlp_out(self) -> Graph:
        """[the post norm y2 -> y2n: the down projection's output is read, and kept as a
        matmul output], the residual add -> x2, the next layer's input."""
        if not self.post_norms:
            return Graph({"mlp/residual": (("x1", "y2"), ("x2",))})
        return Graph({"mlp/post_norm": (("y2",), ("y2n",)),
                      "mlp/residual": (("x1", "y2n"), ("x2",))}, ("y2",), ("y2",))

    def tensors(self, n: Any, D: Any) -> dict[str, Any]:
        """Elements per layer of the residual stream's tensors (x, h1, y, yn, x1, h2, y2,
        y2n: n*D each)."""
        return dict.fromkeys(("x", "h1", "y", "yn", "x1", "h2", "y2", "y2n"), n * D)

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
