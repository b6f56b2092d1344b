"""Hardware: chip records (one per accelerator, a source beside every figure), meshes of
chips with their interconnect, and the collectives that run over them.

``chips`` holds the plain data; ``chip`` turns it into ``Chip`` records.

>>> from symroof.hardware import chip
>>> chip("tpu-v5e").critical_intensity()
9850/41
"""

from .chip import CHIPS, DTYPE_BYTES, Chip, as_chip, chip, dtype_bytes, symbolic_chip
from .collectives import (
    KINDS,
    Collective,
    all_gather,
    all_reduce,
    all_to_all,
    collective,
    reduce_scatter,
    send,
)
from .internals import ridge, roof
from .mesh import Axis, Mesh, mesh
from .topology import Level, Switched, Torus

__all__ = ["Chip", "chip", "as_chip", "symbolic_chip", "CHIPS", "DTYPE_BYTES", "dtype_bytes",
           "Torus", "Switched", "Level", "Mesh", "Axis", "mesh", "Collective", "collective",
           "all_gather", "reduce_scatter", "all_reduce", "all_to_all", "KINDS", "send",
           "roof", "ridge"]
