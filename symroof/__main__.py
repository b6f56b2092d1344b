"""``python -m symroof``: the same command line as the ``symroof`` console script."""

from .surfaces.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
