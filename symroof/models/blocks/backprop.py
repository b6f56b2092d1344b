"""What every block's training step shares: the backward's widths and row builders
(:class:`Widths`), and a layer's forward as data (:class:`Graph`, one block's piece of it;
:class:`LayerGraph`, a whole layer's).

A block owns its backward rows (``backward``, ``backward_*`` methods: ``dict[str, Cost]``
with the keys of docs/accounting.md, "Backward"; one layer's, the caller multiplies by the
layers it is in) and its piece of the layer graph (``graph``: its ops, the tensors its
backward reads, its matmuls' outputs; ``tensors``: their elements per layer). The per-op
formulas stay in :mod:`symroof.models.backward` and :mod:`symroof.models.backward_dense`.

>>> from symroof.symbols import B, D, F
>>> w = Widths(B, Stream(D, 2, 2, 2), 2)
>>> w.dx(F, D).flops, w.sum(2).flops              # dX of down; a sum of two gradients
(2*B*D*F, B*D)
>>> g = Graph({"attn_norm": (("x",), ("h1",))}, ("x",)) | Graph({}, ("h1",))
>>> LayerGraph.of(g).reads, LayerGraph.of(g).writer
(('x', 'h1'), {'x': 'layer_input', 'h1': 'attn_norm'})
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ...cost import Cost
from .. import backward as bw
from .. import backward_dense as bd
from .. import rows as rw
from .base import Stream, Uses

__all__ = ["Widths", "Graph", "LayerGraph", "gradient_uses"]


class Widths(NamedTuple):
    """A backward's sizes: ``n`` tokens, the stream ``s`` (D, the bytes per element of
    weights and activations), gradients written at ``gb`` bytes per element; the row
    builders every block's backward uses.

    >>> from symroof.symbols import B, D, H, d_h
    >>> Widths(B, Stream(D, 2, 2, 2), 4).dw(D, H * d_h).weight_bytes   # a 4-byte gradient
    4*D*H*d_h
    """

    n: Any
    s: Stream
    gb: Any

    def dx(self, d_in: Any, d_out: Any, count: Any = rw.mac_flops) -> Cost:
        """dX of a weight matmul [n, d_in] @ [d_in, d_out]
        (:func:`~symroof.models.backward.linear_dx`; ``count``: FLOPs of its multiply-adds,
        the lm_head's own under :func:`~symroof.models.rows.lm_head_flops`)."""
        return bw.linear_dx(self.n, d_in, d_out, x_bytes=self.s.ab, w_bytes=self.s.wb,
                            count=count)

    def dw(self, d_in: Any, d_out: Any, bias: bool = False, count: Any = rw.mac_flops) -> Cost:
        """dW (and db) of it (:func:`~symroof.models.backward.linear_dw`)."""
        return bw.linear_dw(self.n, d_in, d_out, x_bytes=self.s.ab, grad_bytes=self.gb,
                            bias=bias, count=count)

    def norm(self, kind: str, rows: Any, d: Any) -> Cost:
        """The backward of a norm of ``kind`` over ``rows`` rows of width d."""
        return bd.norm_backward(kind, rows, d, x_bytes=self.s.ab, w_bytes=self.s.wb,
                                grad_bytes=self.gb)

    def sum(self, k: int, width: Any = None) -> Cost:
        """k gradient contributions to an [n, width] tensor (default width D) summed."""
        return bw.grad_sum(self.n * (self.s.D if width is None else width), k,
                           x_bytes=self.s.ab)


class Graph(NamedTuple):
    """One block's piece of a layer's forward: ``ops`` op key -> (tensors read, tensors
    written), in forward order; ``reads`` the tensors its backward reads; ``matmuls`` its
    weight matmuls' outputs (what ``matmul_outputs`` keeps). Pieces join with ``|``.

    >>> (Graph({"a": ((), ("t",))}, ("t",)) | Graph(matmuls=("t",))).matmuls
    ('t',)
    """

    ops: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
    reads: tuple[str, ...] = ()
    matmuls: tuple[str, ...] = ()

    def __or__(self, other: Graph) -> Graph:
        return Graph(self.ops | other.ops, self.reads + other.reads,
                     self.matmuls + other.matmuls)


class LayerGraph(NamedTuple):
    """One layer's forward as data: ``ops`` op key -> (tensors read, tensors written), in
    forward order; ``writer`` tensor -> the op key it is kept under; ``reads`` the tensors
    the layer's backward reads (docs/accounting.md, "Remat policies"); ``matmuls`` the
    weight matmuls' outputs that ``matmul_outputs`` keeps (with the layer input)."""

    ops: dict[str, tuple[tuple[str, ...], tuple[str, ...]]]
    writer: dict[str, str]
    reads: tuple[str, ...]
    matmuls: tuple[str, ...]

    @classmethod
    def of(cls, g: Graph) -> LayerGraph:
        """The layer its blocks' pieces make: x is the layer's input, every other tensor
        is kept under the op that wrote it; reads and matmuls in forward order, once each."""
        writer = {"x": "layer_input"} | {t: key for key, (_, outs) in g.ops.items()
                                         for t in outs}
        reads = tuple(t for t in dict.fromkeys(g.reads) if t in writer)
        return cls(g.ops, writer, reads, tuple(t for t in writer if t in g.matmuls))


def gradient_uses(forward: Uses, part: str) -> Uses | None:
    """The arrays a weight matmul's gradient row reads and writes, by the forward row's
    declaration (``forward``: X in its first read, Y what it writes, W its weight; each
    gradient partitioned as its array is): ``part`` ``"dx"``, dX = dY W^T, reads dY and
    writes dX; ``"dw"``, dW = X^T dY, reads X and dY (dW is a weight's bytes, not an
    activation's). None: not a weight matmul of one input (no weight, or more reads).

    >>> up = Uses(("norms/h",), "mlp/u", "mlp/W_up")
    >>> gradient_uses(up, "dx").reads, gradient_uses(up, "dx").writes
    (('mlp/u',), 'norms/h')
    >>> gradient_uses(up, "dw").reads, gradient_uses(up, "dw").writes
    (('norms/h', 'mlp/u'), None)
    >>> gradient_uses(Uses(("mlp/u",), "mlp/h"), "dx") is None    # no weight: no matmul
    True
    """
    if forward.weight is None or forward.writes is None or len(forward.reads) != 1:
        return None
    (x,), dy = forward.reads, (forward.writes, *forward.also)
    keep = dict(forward._asdict(), also=(), sums=None)
    if part == "dx":
        return Uses(**{**keep, "reads": dy, "writes": x})
    if part == "dw":
        return Uses(**{**keep, "reads": (x, *dy), "writes": None})
    raise ValueError(f"a gradient row's part is 'dx' or 'dw', not {part!r}")
