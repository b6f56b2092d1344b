"""Results kept on disk between runs, keyed by a hash of everything they are made from.

A command line answers in one process, so what a session computes once per (model, chip,
options), such as a compiled per-op table or a model's solved crossovers, would otherwise
be computed again by every command. :func:`kept` keeps such a result as JSON in
:func:`cache_dir`, under a key that hashes its inputs and the text of every symroof module
(a changed formula is a new key, never a stale answer). A missing, unwritable or
unreadable cache only means computing again; an input without a stable text (an object
printed with its address) is never kept.

>>> import os, tempfile
>>> env = {"SYMROOF_CACHE": tempfile.mkdtemp()}
>>> kept("demo", ("answer", 6 * 7), lambda: 42, environ=env)
42
>>> kept("demo", ("answer", 6 * 7), lambda: 0, environ=env)   # read back, not recomputed
42
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["cache_dir", "kept"]


def cache_dir(environ: Mapping[str, str] = os.environ) -> Path | None:
    """Where results are kept: ``$SYMROOF_CACHE`` (``off``: nowhere), else
    ``$XDG_CACHE_HOME/symroof``, else ``~/.cache/symroof``.

    >>> cache_dir({"SYMROOF_CACHE": "off"}) is None, cache_dir({"XDG_CACHE_HOME": "/c"}).parts
    (True, ('/', 'c', 'symroof'))
    """
    given = environ.get("SYMROOF_CACHE")
    if given is not None:
        return None if given.strip().lower() in ("", "off") else Path(given)
    base = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "symroof"


@functools.cache
def _code_hash() -> str:
    """A hash of the text of every symroof module: a changed formula changes every key."""
    digest = hashlib.sha256()
    root = Path(__file__).resolve().parent
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _file(kind: str, key: Any, environ: Mapping[str, str]) -> Path | None:
    folder, described = cache_dir(environ), repr(key)
    if folder is None or " at 0x" in described:  # no cache, or an input without a stable text
        return None
    digest = hashlib.sha256(repr((kind, described, _code_hash())).encode()).hexdigest()
    return folder / f"{kind}-{digest[:32]}.json"


def kept(kind: str, key: Any, build: Callable[[], Any], *,
         environ: Mapping[str, str] = os.environ) -> Any:
    """``build()``'s JSON-able value, read from disk where a run with the same ``kind`` and
    ``key`` (a value whose ``repr`` names every input) kept it, else built and kept."""
    path = _file(kind, key, environ)
    try:
        if path is not None:
            return json.loads(path.read_text(encoding="utf-8"))["value"]
    except (OSError, ValueError, KeyError, TypeError):  # absent, unreadable or not ours
        pass
    value = build()
    if path is not None:
        try:  # written whole, then renamed: a reader never sees half a file
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp",
                                             delete=False, encoding="utf-8") as fh:
                json.dump({"value": value}, fh)
            os.replace(fh.name, path)
        except OSError:  # read-only home, full disk: build again next time
            pass
    return value
