"""Prices of a chip-hour, beside the chip records: each with its source and the date it was
quoted, in US dollars as exact decimals (``Fraction("10.8")``; floats never enter a formula).

Prices move; a record says when it was true. The only prices on record are the ones the
book quotes (ch. 8, "What's the LLaMA Serving Story?": Google Cloud, Feb 2025); a chip
without one gets its price from the user (``symroof serve --price``).

>>> PRICES["tpu-v5e"].usd_per_chip_hour, PRICES["tpu-v5e"].date
(Fraction(6, 5), '2025-02')
>>> price("b200")
Traceback (most recent call last):
...
ValueError: no price on record for chip 'b200' (prices: h100, tpu-v5p, tpu-v5e); ...
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

__all__ = ["Price", "PRICES", "price"]

_BOOK_CH8 = ("How to Scale Your Model, ch. 8 'What's the LLaMA Serving Story?' (Google Cloud "
             "list prices), https://jax-ml.github.io/scaling-book/applied-inference/")


@dataclass(frozen=True)
class Price:
    """One chip-hour's price in USD, where it was quoted and when (``YYYY-MM``)."""

    usd_per_chip_hour: Fraction
    source: str
    date: str

    @property
    def cited(self) -> str:
        """Its source and when it was quoted, in one line."""
        return f"{self.source}; quoted {self.date}"

    def __str__(self) -> str:
        return f"${float(self.usd_per_chip_hour):.2f} per chip-hour ({self.cited})"


#: chip name -> its price; the names are chip presets (``symroof chips``)
PRICES: dict[str, Price] = {
    "h100": Price(Fraction("10.8"), _BOOK_CH8, "2025-02"),
    "tpu-v5p": Price(Fraction("4.2"), _BOOK_CH8, "2025-02"),
    "tpu-v5e": Price(Fraction("1.2"), _BOOK_CH8, "2025-02"),
}


def price(chip_name: str) -> Price:
    """The price on record for ``chip_name``; an unknown chip fails naming the priced ones.

    >>> str(price("h100")).split(" (")[0]
    '$10.80 per chip-hour'
    """
    key = chip_name.strip().lower()
    if key not in PRICES:
        raise ValueError(f"no price on record for chip {chip_name!r} (prices: "
                         f"{', '.join(PRICES)}); give one: --price USD_PER_CHIP_HOUR")
    return PRICES[key]
