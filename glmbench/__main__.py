"""`python -m glmbench` runs the same command as the `glmbench` console script (`entry`)."""
import sys


def entry() -> int:
    """The console script's entry point: the CLI's main, with a Ctrl-C that comes while the CLI's imports
    are still loading (half a second: NumPy, the cost model) ended as main ends one, exit status 130 and one
    line, not a traceback from inside an import (nothing has been written then)."""
    try:
        from glmbench.cli import main
    except KeyboardInterrupt:
        print("glmbench: interrupted while starting; nothing was run or written", file=sys.stderr)
        return 130
    return main()


if __name__ == "__main__":
    sys.exit(entry())
