"""The `mpsgen` console script. It imports nothing before its `try`, so that Ctrl-C at any moment,
even while Python imports click and mpsgen, exits 130 with one line instead of a traceback."""

import sys


def main() -> None:
    try:
        import signal

        from mpsgen import _interrupted_while_starting, _stage

        if signal.getsignal(signal.SIGINT) is _interrupted_while_starting:
            signal.signal(signal.SIGINT, signal.default_int_handler)  # from here on: KeyboardInterrupt
        _stage("console")
        from mpsgen.cli import main as cli

        cli()
    except KeyboardInterrupt:
        try:
            sys.stderr.write("mpsgen: interrupted; nothing was written\n")
            sys.stderr.flush()
        except (KeyboardInterrupt, OSError):
            pass
        sys.exit(130)
