"""mpsgen: native Metal operators for PyTorch's MPS backend, generated and migrated."""

import _signal  # the C module: `signal` would import enum first, a slow import to be interrupted in
import os as _os
import sys as _sys

__version__ = "0.1.0"


def _interrupted_while_starting(signum, frame):  # pragma: no cover - timing
    _os.write(2, b"mpsgen: interrupted; nothing was written\n")
    _os._exit(130)


def _stage(name: str) -> None:
    """A test hook, inert unless MPSGEN_TEST_STAGES names an inherited socket's descriptor: the run
    writes `name` and a newline to it when it reaches that stage (`package`, `console`, `cli`,
    `command`, `working`), and at the stage MPSGEN_TEST_PAUSE names it then waits there for one
    byte (or the socket's end). tests/test_mistakes.py interrupts a run at each stage so, with no
    guessed delay."""
    fd = _os.environ.get("MPSGEN_TEST_STAGES")
    if not fd:
        return
    try:
        _os.write(int(fd), name.encode("ascii") + b"\n")
        if _os.environ.get("MPSGEN_TEST_PAUSE") == name:
            _os.read(int(fd), 1)
    except (OSError, ValueError):
        pass  # not a socket this process holds: the hook stays inert


# The console script (and `python -m mpsgen`): until mpsgen.console takes over, Ctrl-C while Python
# imports mpsgen ends the run with its one line (nothing has been read or written yet). Programs that
# merely import mpsgen keep their own handler.
if _os.path.basename(_sys.argv[0] if _sys.argv else "") in ("mpsgen", "mpsgen.exe", "__main__.py") \
        and _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:
    _signal.signal(_signal.SIGINT, _interrupted_while_starting)
    _stage("package")
