"""Record the ATen overloads a Python script calls, with the shapes and dtypes of their tensor inputs.

The script runs in this process as `python SCRIPT ARGS` would run it (`runpy.run_path` with
`run_name="__main__"`, `sys.argv = [SCRIPT, *ARGS]`, the script's directory first on `sys.path`)
under a `torch.utils._python_dispatch.TorchDispatchMode`. The mode sees each call below autograd, so
CompositeImplicitAutograd ops arrive already decomposed (`F.linear` is recorded as `t` and `addmm`),
backward ops are recorded when `.backward()` runs them, and an op's own inner calls are not recorded
twice. The script's `print`s go to stderr (Python's `sys.stdout` is redirected; output written by C
code to file descriptor 1 is not), so that the report owns stdout. Its exit status and exception are
kept in the recording; the calls made before an exception (or Ctrl-C) are kept too.

A signature is the tuple of `(shape, dtype)` of the call's tensor inputs in schema order, tensors in
lists included, `out=` tensors excluded: for an MPSGraph-backed op, each distinct one compiles and
caches one more graph."""

from __future__ import annotations

import contextlib
import json
import os
import runpy
import sys
import traceback
from dataclasses import dataclass

from mpsgen.errors import MpsgenError

INSTALL_HINT = "pip install 'mpsgen[trace]'"
FORMAT = "mpsgen-trace/1"

Signature = tuple[tuple[tuple[int, ...], str], ...]


@dataclass(frozen=True)
class Call:
    """Calls of one overload with one input signature."""

    overload: str  # `aten::mish.default`, `aten::add_.Tensor`, `aten::mish.out`
    signature: Signature
    count: int
    devices: tuple[str, ...]  # device types of its tensor inputs (`cpu`, `mps`)


@dataclass(frozen=True)
class ScriptRun:
    path: str  # as given on the command line
    args: tuple[str, ...]
    exit_status: int  # 0, the SystemExit code, or 1 when it raised
    exception: str | None = None  # `ValueError: boom (train.py:12)`, None when it did not raise
    traceback: str | None = None  # the script's traceback as Python prints it (not saved)


@dataclass(frozen=True)
class Recording:
    script: ScriptRun
    calls: tuple[Call, ...]
    torch_version: str


def import_torch():
    """torch, or a one-line error saying how to get it (exit 2)."""
    try:
        import torch
        from torch.utils._python_dispatch import TorchDispatchMode  # noqa: F401
    except ImportError as exc:
        raise MpsgenError(f"mpsgen trace needs torch ({exc})", hint=f"install it with: {INSTALL_HINT}") from None
    return torch


def overload_name(func) -> str:
    """`aten::mish.default` for torch.ops.aten.mish.default."""
    schema = func._schema
    return f"{schema.name}.{schema.overload_name or 'default'}"


def _recorder_class(torch):
    from torch.utils._python_dispatch import TorchDispatchMode

    Tensor = torch.Tensor

    class Recorder(TorchDispatchMode):
        """Counts calls per (overload, signature); does nothing else to them."""

        def __init__(self):
            super().__init__()
            self.counts: dict = {}
            self._outs: dict = {}

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            outs = self._outs.get(func)
            if outs is None:
                outs = self._outs[func] = frozenset(a.name for a in func._schema.arguments if a.is_out)
            sig = []
            devices = set()
            for value in (*args, *(v for k, v in kwargs.items() if k not in outs)):
                if isinstance(value, Tensor):
                    sig.append((tuple(value.shape), value.dtype))
                    devices.add(value.device.type)
                elif isinstance(value, (list, tuple)):
                    for item in value:
                        if isinstance(item, Tensor):
                            sig.append((tuple(item.shape), item.dtype))
                            devices.add(item.device.type)
            key = (func, tuple(sig))
            slot = self.counts.get(key)
            if slot is None:
                self.counts[key] = [1, devices]
            else:
                slot[0] += 1
                slot[1].update(devices)
            return func(*args, **kwargs)

        def calls(self) -> tuple[Call, ...]:
            out = []
            for (func, sig), (count, devices) in self.counts.items():
                signature = tuple((tuple(int(d) for d in shape), str(dtype).removeprefix("torch.")) for shape, dtype in sig)
                out.append(Call(overload_name(func), signature, count, tuple(sorted(devices))))
            return tuple(sorted(out, key=lambda c: (c.overload, c.signature)))

    return Recorder


def record_script(path: str, args: tuple[str, ...]) -> Recording:
    """Run the script under the recorder; never raises for what the script does."""
    torch = import_torch()
    if not os.path.isfile(path):
        raise MpsgenError(f"{path}: no such file", hint="name the Python script to trace")
    recorder = _recorder_class(torch)()
    full = os.path.abspath(path)
    saved_argv, saved_path = sys.argv, sys.path[:]
    sys.argv = [path, *args]
    sys.path.insert(0, os.path.dirname(full))
    status, exception, text = 0, None, None
    try:
        with contextlib.redirect_stdout(sys.stderr), recorder:
            runpy.run_path(path, run_name="__main__")
    except SystemExit as exc:
        status, exception = _exit_status(exc.code)
    except (Exception, KeyboardInterrupt) as exc:
        status = 130 if isinstance(exc, KeyboardInterrupt) else 1
        exception = _exception_line(exc, full)
        text = _script_traceback(exc)
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path
        sys.stdout.flush()
    run = ScriptRun(path, tuple(args), status, exception, text)
    return Recording(run, recorder.calls(), torch.__version__)


def _exit_status(code) -> tuple[int, str | None]:
    if code is None:
        return 0, None
    if isinstance(code, int):
        return code, None
    return 1, f"SystemExit: {code}"


def _script_traceback(exc: BaseException) -> str:
    """The traceback as Python prints it for the script, without mpsgen's and runpy's frames."""
    tb = exc.__traceback__
    while tb is not None and (tb.tb_frame.f_code.co_filename == __file__
                              or tb.tb_frame.f_code.co_filename.startswith("<frozen runpy>")):
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb))


def _exception_line(exc: BaseException, script: str) -> str:
    """`Type: message (file:line)`, the line being the script's last frame in the traceback."""
    frames = traceback.extract_tb(exc.__traceback__)
    mine = [f for f in frames if os.path.abspath(f.filename) == script]
    where = (mine or frames[-1:] or [None])[-1]
    message = " ".join(str(exc).split())
    head = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    return f"{head} ({os.path.basename(where.filename)}:{where.lineno})" if where else head


# --------------------------------------------------------------------------------------------------
# Saved recordings (--save, --ops-file)
# --------------------------------------------------------------------------------------------------


def recording_to_json(recording: Recording) -> dict:
    run = recording.script
    return {
        "format": FORMAT,
        "torch": recording.torch_version,
        "script": {"path": run.path, "args": list(run.args), "exit_status": run.exit_status, "exception": run.exception},
        "calls": [
            {"overload": c.overload, "inputs": [[list(shape), dtype] for shape, dtype in c.signature],
             "count": c.count, "devices": list(c.devices)}
            for c in recording.calls
        ],
    }


def save_recording(recording: Recording, path: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(recording_to_json(recording), handle, indent=1)
            handle.write("\n")
    except OSError as exc:
        raise MpsgenError(f"--save {path}: {exc.strerror}", hint="pick a writable path") from None


def load_recording(path: str) -> Recording:
    """A recording written by `--save`; anything else is one line naming the file (exit 2)."""
    hint = "pass a file written by `mpsgen trace --save`"
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except OSError as exc:
        raise MpsgenError(f"{path}: {exc.strerror}", hint=hint) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        line = getattr(exc, "lineno", None)
        where = f"{path}:{line}" if line else path
        raise MpsgenError(f"{where}: not JSON ({getattr(exc, 'msg', exc)})", hint=hint) from None
    try:
        if data.get("format") != FORMAT:
            raise ValueError(f"format is {data.get('format')!r}, expected {FORMAT!r}")
        script = data["script"]
        run = ScriptRun(str(script["path"]), tuple(str(a) for a in script["args"]), int(script["exit_status"]),
                        script["exception"] if script["exception"] is None else str(script["exception"]))
        calls = []
        for i, item in enumerate(data["calls"]):
            overload = item["overload"]
            if not isinstance(overload, str) or "::" not in overload:
                raise ValueError(f"calls[{i}].overload is {overload!r}, expected like 'aten::mish.default'")
            signature = tuple((tuple(int(d) for d in shape), str(dtype)) for shape, dtype in item["inputs"])
            count = int(item["count"])
            if count < 1:
                raise ValueError(f"calls[{i}].count is {count}")
            calls.append(Call(overload, signature, count, tuple(str(d) for d in item["devices"])))
        return Recording(run, tuple(calls), str(data["torch"]))
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        what = f"missing {exc}" if isinstance(exc, KeyError) else str(exc)
        raise MpsgenError(f"{path}: not an mpsgen trace recording ({what})", hint=hint) from None
