"""The norm block: RMSNorm (a weight of width d) or LayerNorm (a weight and a bias).

>>> from symroof.symbols import B, D
>>> Norm("layer").params(D), Norm().row(B, D, Stream(D, 2, 2, 2)).flops
(2*D, B*(4*D + 2))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...cost import Cost
from ...numeric.spec import NormSpec
from .. import rows as rw
from .base import Array, Stream

__all__ = ["Norm"]


@dataclass(frozen=True)
class Norm:
    """A norm over the last axis: ``kind`` "rms" (x / rms(x) * w) or "layer" (LayerNorm,
    (x - mean) / std * w + b).

    >>> Norm("batch")
    Traceback (most recent call last):
    ...
    ValueError: norm must be one of ('rms', 'layer'), got 'batch'
    """

    FIELDS = {"kind": "norm"}

    kind: str = "rms"

    def __post_init__(self) -> None:
        if self.kind not in rw.NORMS:
            raise ValueError(f"norm must be one of {rw.NORMS}, got {self.kind!r}")

    def params(self, d: Any) -> Any:
        """Its parameters over a width d: d (RMSNorm) or 2 d (LayerNorm's bias too).

        >>> from symroof.symbols import d_h
        >>> Norm().params(d_h)
        d_h
        """
        return d if self.kind == "rms" else 2 * d

    def row(self, n: Any, d: Any, s: Stream) -> Cost:
        """One norm over n rows of width d (:func:`symroof.models.rows.norm`).

        >>> from symroof.symbols import B, D
        >>> Norm("layer").row(B, D, Stream(D, 1, 2, 2)).weight_bytes
        2*D
        """
        return rw.norm(self.kind, n, d, ab=s.ab, wb=s.wb)

    def arrays(self, name: str, dim: str) -> dict[str, Array]:
        """Its weight (and bias) over the dimension ``dim``.

        >>> list(Norm("layer").arrays("attn_norm", "D"))
        ['attn_norm', 'attn_norm_b']
        """
        out = {name: Array((dim,))}
        return out | ({f"{name}_b": Array((dim,))} if self.kind == "layer" else {})

    def twin(self) -> NormSpec:
        """The NumPy twin's spec of it.

        >>> Norm("layer").twin()
        NormSpec(norm='layer')
        """
        return NormSpec(self.kind)

    def backward(self, rows: Any, d: Any, w: Any) -> Cost:
        """Its backward over ``rows`` rows of width d at the step's widths ``w``
        (:class:`~symroof.models.blocks.Widths`;
        :func:`~symroof.models.backward_dense.norm_backward`).

        >>> from symroof.symbols import B, D
        >>> from symroof.models.blocks import Widths
        >>> Norm().backward(B, D, Widths(B, Stream(D, 2, 2, 2), 2)).flops   # 9D + 2 a row; dw
        B*(9*D + 2) + D*(2*B - 1)
        """
        return w.norm(self.kind, rows, d)
