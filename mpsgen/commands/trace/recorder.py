"""Record the ATen overloads a Python script calls, with the shapes and dtypes of their tensor inputs.

The script runs in this process as `python SCRIPT ARGS` would run it (`runpy.run_path` with
`run_name="__main__"`, `sys.argv = [SCRIPT, *ARGS]`, the script's directory first on `sys.path`)
under a `torch.utils._python_dispatch.TorchDispatchMode`. The mode sees each call below autograd, so
CompositeImplicitAutograd ops arrive already decomposed (`F.linear` is recorded as `t` and `addmm`) and
backward ops are recorded when `.backward()` runs them; the calls a kernel makes itself are not seen,
except for composite kernels (below). The script's `print`s go to stderr (Python's `sys.stdout` is
redirected; output written by C code to file descriptor 1 is not), so that the report owns stdout.
Its exit status and exception are kept in the recording; the calls made before an exception (or
Ctrl-C) are kept too.

Composite kernels are followed: when the kernel that runs a call on its device is a
CompositeExplicitAutograd one (no kernel of the device's own: `ones`, `ones_like`, `fmod.Scalar`),
the call is recorded and so are the calls that kernel makes (`empty`, `fill_`, `fmod.Tensor`). They
are learnt by running the composite kernel once more on meta tensors under a second mode (no effect on
the script's tensors, results or random state), once per distinct set of arguments (tensors by shape
and dtype, everything else by value), one level deep; a kernel that cannot run on meta is not
followed. The script's own call then runs as usual.

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
    devices: tuple[str, ...]  # device types of its first tensor input (`cpu`, `mps`)


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
    keys = torch._C.DispatchKey
    has_kernel = torch._C._dispatch_has_kernel_for_dispatch_key
    composite_keys = tuple(getattr(keys, name) for name in ("CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional")
                           if hasattr(keys, name))
    device_keys = {name: getattr(keys, key) for name, key in (("cpu", "CPU"), ("cuda", "CUDA"), ("mps", "MPS"))}

    def composite_key(func, device: str):
        """The CompositeExplicitAutograd* key whose kernel runs `func` on `device` (no kernel of the
        device's own), or None."""
        name = func.name()
        own = device_keys.get(device)
        if own is None or has_kernel(name, own):
            return None
        return next((key for key in composite_keys if has_kernel(name, key)), None)

    def signature(func, args, kwargs, outs):
        """(signature, device type of the first tensor input or None)."""
        sig = []
        device = None
        for value in (*args, *(v for k, v in kwargs.items() if k not in outs)):
            if isinstance(value, Tensor):
                sig.append((value.shape, value.dtype))
                if device is None:
                    device = value.device.type
            elif isinstance(value, (list, tuple)):
                for item in value:
                    if isinstance(item, Tensor):
                        sig.append((item.shape, item.dtype))
                        if device is None:
                            device = item.device.type
        return tuple(sig), device

    outs_of: dict = {}

    def outs(func):
        found = outs_of.get(func)
        if found is None:
            found = outs_of[func] = frozenset(a.name for a in func._schema.arguments if a.is_out)
        return found

    def meta(value):
        if isinstance(value, Tensor):
            return value.detach().to("meta")
        if isinstance(value, (list, tuple)):
            return type(value)(meta(v) for v in value)
        if isinstance(value, torch.device):
            return torch.device("meta")
        return value

    def frozen(value):
        if isinstance(value, Tensor):
            return ("tensor", value.shape, value.dtype)
        if isinstance(value, (list, tuple)):
            return tuple(frozen(v) for v in value)
        return value

    def probe_key(func, args, kwargs):
        """What a composite kernel's calls depend on: the tensors' shapes and dtypes and every other
        argument (a factory's size); None when an argument cannot be a key."""
        key = (func, frozen(tuple(args)), tuple(sorted((k, frozen(v)) for k, v in kwargs.items())))
        try:
            hash(key)
        except TypeError:
            return None
        return key

    class Probe(TorchDispatchMode):
        """Runs a composite kernel on meta tensors and counts the ops it calls."""

        def __init__(self, outer):
            super().__init__()
            self.outer = outer
            self.seen: dict = {}

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func is not self.outer:  # a composite kernel calling itself is the same call
                key = (func, signature(func, args, kwargs, outs(func))[0])
                self.seen[key] = self.seen.get(key, 0) + 1
            try:
                return func(*args, **kwargs)
            except (RuntimeError, TypeError):
                # a wrapped number arrives as a Python number, which only some ops take for a
                # Tensor argument: pass it as a 0-dim meta tensor (only meta results depend on it)
                fixed = [torch.tensor(a, device="meta") if isinstance(a, (bool, int, float, complex)) and arg.type.kind() == "TensorType" else a
                         for a, arg in zip(args, func._schema.arguments)]
                return func(*fixed, **kwargs)

    class Recorder(TorchDispatchMode):
        """Counts calls per (overload, signature); does nothing else to them."""

        def __init__(self):
            super().__init__()
            self.counts: dict = {}
            self._composite: dict = {}
            self._inner: dict = {}

        def _count(self, key, n, device):
            slot = self.counts.get(key)
            if slot is None:
                self.counts[key] = [n, {device} if device else set()]
            else:
                slot[0] += n
                if device:
                    slot[1].add(device)

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            sig, device = signature(func, args, kwargs, outs(func))
            key = (func, sig)
            self._count(key, 1, device)
            where = device
            if where is None:  # a factory: the device it is asked for
                requested = kwargs.get("device")
                where = requested.type if isinstance(requested, torch.device) else (str(requested).partition(":")[0] if requested else "cpu")
            ckey = self._composite.get((func, where), False)
            if ckey is False:
                ckey = self._composite[(func, where)] = composite_key(func, where)
            if ckey is not None:  # its composite kernel runs: count what that calls
                pkey = probe_key(func, args, kwargs)
                inner = self._inner.get(pkey, False) if pkey is not None else False
                if inner is False:
                    inner = self._probe(func, ckey, args, kwargs)
                    if pkey is not None:
                        self._inner[pkey] = inner
                for inner_key, n in inner.items():
                    self._count(inner_key, n, device)
            return func(*args, **kwargs)

        @staticmethod
        def _probe(func, ckey, args, kwargs) -> dict:
            """The calls the composite kernel makes for this signature, learnt once on meta
            tensors (no effect on the script's tensors or random state); {} when it cannot run there."""
            probe = Probe(func)
            try:
                margs, mkwargs = meta(tuple(args)), {k: meta(v) for k, v in kwargs.items()}
                with probe:
                    func._op_dk(ckey, *margs, **mkwargs)
            except Exception:  # noqa: BLE001 - a kernel without meta support: not followed
                return {}
            return probe.seen

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
