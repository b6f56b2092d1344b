"""The per-op ledger: exact FLOPs (executed, useful) and bytes by kind, as Python ints.

The counting conventions live in :mod:`symroof.numeric.primitives`; a ``Counter`` only
opens op scopes (``counter.op(key)``) whose primitives add into ``counter.rows[key]``.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from .primitives import _CountedOp

QUANTITIES = ("flops", "useful_flops", "weight_bytes", "kv_bytes", "act_bytes")
#: byte kind -> the field it adds to. Parameter-shaped arrays (weights, their gradients,
#: Adam's moments, master copies) are weight bytes, each kind at its own width.
_KINDS = {"weight": "weight_bytes", "kv": "kv_bytes", "act": "act_bytes",
          "grad": "weight_bytes", "moment": "weight_bytes", "master": "weight_bytes"}


class Counter:
    """A ledger of exact FLOPs and bytes per op key, filled by counted primitives.

    ``w_bytes``, ``act_bytes``, ``kv_bytes`` are the accounting widths per element (2 = bf16);
    ``None`` takes each array's own ``itemsize``. Training adds the widths of weight
    gradients (``grad_bytes``), optimizer moments (``moment_bytes``) and master weights
    (``master_bytes``). ``rows`` maps op key -> the five quantities in ``QUANTITIES``, in
    order of first appearance; ``saved`` maps a kept activation's key -> its bytes (what a
    training forward keeps for the backward, see ``keep``); ``stored`` maps op key -> the
    activation and KV bytes among its writes (``act_store_bytes``, ``kv_store_bytes``).

    >>> import numpy as np
    >>> c = Counter()
    >>> x, W = np.ones((3, 4)), np.ones((4, 5))
    >>> with c.op("proj") as k:
    ...     k.read(x, "act"); k.read(W, "weight")
    ...     y = k.matmul(x, W)
    ...     k.write(y, "act")
    >>> c.rows["proj"]
    {'flops': 120, 'useful_flops': 120, 'weight_bytes': 40, 'kv_bytes': 0, 'act_bytes': 54}
    """

    def __init__(self, w_bytes: int | None = 2, act_bytes: int | None = 2,
                 kv_bytes: int | None = 2, *, grad_bytes: int | None = 2,
                 moment_bytes: int | None = 4, master_bytes: int | None = 4):
        widths = {"weight": w_bytes, "act": act_bytes, "kv": kv_bytes, "grad": grad_bytes,
                  "moment": moment_bytes, "master": master_bytes}
        names = ("w_bytes", "act_bytes", "kv_bytes", "grad_bytes", "moment_bytes",
                 "master_bytes")
        for name, w in zip(names, widths.values(), strict=True):
            if w is not None and (isinstance(w, bool) or not isinstance(w, int) or w <= 0):
                raise ValueError(f"{name} must be a positive integer or None, got {w!r}")
        self._widths = widths
        self.rows: dict[str, dict[str, int]] = {}
        self.saved: dict[str, int] = {}
        self.stored: dict[str, dict[str, int]] = {}

    def keep(self, key: str, x: np.ndarray) -> None:
        """Record activation ``x`` as kept for the backward pass under ``key`` (act width).

        >>> c = Counter(act_bytes=2)
        >>> c.keep("attn_norm", np.ones((3, 4)))
        >>> c.saved
        {'attn_norm': 24}
        """
        self.saved[key] = self.saved.get(key, 0) + self._bytes(x, "act")

    def _field(self, kind: str) -> str:
        if kind not in _KINDS:
            raise ValueError(f"unknown byte kind {kind!r}; known: {sorted(_KINDS)}")
        return _KINDS[kind]

    def _bytes(self, x: np.ndarray, kind: str) -> int:
        width = self._widths[kind]
        return int(np.size(x)) * (np.asarray(x).itemsize if width is None else width)

    def _sized(self, x: np.ndarray, kind: str) -> tuple[str, int]:
        return self._field(kind), self._bytes(x, kind)

    def op(self, key: str) -> _CountedOp:
        """Open the scope of op ``key``; repeated scopes (one per layer) accumulate."""
        if not isinstance(key, str) or not key:
            raise ValueError(f"op key must be a non-empty string, got {key!r}")
        row = self.rows.setdefault(key, dict.fromkeys(QUANTITIES, 0))
        stored = self.stored.setdefault(key, dict.fromkeys(("act_store_bytes",
                                                             "kv_store_bytes"), 0))
        return _CountedOp(row, self._sized, stored)

    def _check(self, quantity: str, keys: Iterable[str] | None) -> list[str]:
        if quantity not in QUANTITIES:
            raise ValueError(f"unknown quantity {quantity!r}; known: {list(QUANTITIES)}")
        keys = list(self.rows) if keys is None else list(keys)
        missing = [key for key in keys if key not in self.rows]
        if missing:
            raise KeyError(f"no op recorded under {missing}; recorded: {list(self.rows)}")
        return keys

    def total(self, quantity: str, keys: Iterable[str] | None = None) -> int:
        """Sum of ``quantity`` over ``keys`` (default: every row).

        >>> c = Counter()
        >>> with c.op("a") as k:
        ...     _ = k.add(np.ones(3), 1.0)
        >>> c.total("flops"), c.total("useful_flops", ["a"])
        (3, 3)
        """
        return sum(self.rows[key][quantity] for key in self._check(quantity, keys))

    def merged(self, groups: dict[str, list[str]]) -> dict[str, dict[str, int]]:
        """Rows summed into named groups: ``{group: {quantity: int}}``.

        >>> c = Counter()
        >>> for key in ("x", "y"):
        ...     with c.op(key) as k:
        ...         _ = k.exp(np.zeros(2))
        >>> c.merged({"both": ["x", "y"]})["both"]["flops"]
        4
        """
        return {name: {q: self.total(q, keys) for q in QUANTITIES}
                for name, keys in groups.items()}

    def __str__(self) -> str:
        header = ("op",) + QUANTITIES
        body = [(key,) + tuple(f"{row[q]:,}" for q in QUANTITIES)
                for key, row in self.rows.items()]
        body.append(("total",) + tuple(f"{self.total(q):,}" for q in QUANTITIES))
        widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]

        def line(cells: tuple[str, ...]) -> str:
            first = cells[0].ljust(widths[0])
            return "  ".join([first] + [c.rjust(w) for c, w in zip(cells[1:], widths[1:],
                                                                      strict=True)])

        rule = "-" * len(line(header))
        return "\n".join([line(header), rule, *map(line, body[:-1]), rule, line(body[-1])])

    def __repr__(self) -> str:
        return f"Counter({len(self.rows)} ops, flops={self.total('flops'):,})"
