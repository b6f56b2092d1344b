"""Derivation scripts that read like lecture notes; installed as ``symroof.derivations``."""
