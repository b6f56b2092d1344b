"""Hardware: chip records (one per accelerator, a source beside every figure), meshes of
chips with their interconnect, and the collectives that run over them.

``chips`` holds the plain data; ``chip`` turns it into ``Chip`` records.

>>> from symroof.hardware import chip
>>> chip("tpu-v5e").critical_intensity()
9850/41
"""

from .chip import CHIPS, DTYPE_BYTES, Chip, as_chip, chip, dtype_bytes, symbolic_chip

__all__ = ["Chip", "chip", "as_chip", "symbolic_chip", "CHIPS", "DTYPE_BYTES", "dtype_bytes"]
