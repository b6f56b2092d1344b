"""Surfaces: the ``symroof`` command (``cli``), lecture notes compiled from the derivations
(``notes``) and the machine's own measured roofline (``measure``). Nothing below imports
from here."""
