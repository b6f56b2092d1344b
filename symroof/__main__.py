"""``python -m symroof``: the same command line as the ``symroof`` console script."""

import gc


def run() -> int:
    """Run the command line (``symroof.surfaces.cli.main``) and return its exit status.

    The cyclic garbage collector is paused while the command's modules load: importing
    SymPy makes many objects and no garbage, and its passes cost a tenth of a command's
    start-up (``benchmarks/cli_vs_peer.py``); it runs again for the command itself.

    >>> callable(run)
    True
    """
    was = gc.isenabled()
    gc.disable()
    try:
        from .surfaces.cli import main
    finally:
        if was:
            gc.enable()
    return main()


if __name__ == "__main__":
    raise SystemExit(run())
