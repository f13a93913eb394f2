"""mpsgen: native Metal operators for PyTorch's MPS backend, generated and migrated."""

import _signal  # the C module: `signal` would import enum first, a slow import to be interrupted in
import os as _os
import sys as _sys

__version__ = "0.1.0"


def _interrupted_while_starting(signum, frame):  # pragma: no cover - timing
    _os.write(2, b"mpsgen: interrupted; nothing was written\n")
    _os._exit(130)


# The console script (and `python -m mpsgen`): until mpsgen.console takes over, Ctrl-C while Python
# imports mpsgen ends the run with its one line (nothing has been read or written yet). Programs that
# merely import mpsgen keep their own handler.
if _os.path.basename(_sys.argv[0] if _sys.argv else "") in ("mpsgen", "mpsgen.exe", "__main__.py") \
        and _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:
    _signal.signal(_signal.SIGINT, _interrupted_while_starting)
