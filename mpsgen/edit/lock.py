"""One mpsgen run per checkout: a lock file `.mpsgen/lock` holding the owner's pid, host and start
time. A lock whose process is gone (same host, pid dead) is stale and taken over."""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path

from mpsgen.errors import MpsgenError

LOCK_DIR = ".mpsgen"
LOCK_NAME = "lock"
# A lock file that cannot be read is a run that died between creating and filling it, unless it
# is younger than this (the owner may be writing it right now).
UNREADABLE_GRACE_SECONDS = 10.0
# In a contributor's checkout the lock must not show up in `git status`.
GITIGNORE = "# written by mpsgen: keep its lock file out of `git status`\nlock\nlock.*\n.gitignore\n"


@dataclass(frozen=True)
class Holder:
    pid: int
    host: str
    started: str

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host}, started {self.started}"


class CheckoutLock:
    """`with CheckoutLock(root):` — raises MpsgenError naming the holder when another run holds it.
    `stale_removed` tells whether a dead run's lock was taken over (for a warning)."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.path = self.root / LOCK_DIR / LOCK_NAME
        self.rel = f"{LOCK_DIR}/{LOCK_NAME}"
        self.stale_removed: Holder | None = None
        self._token: str | None = None
        self._created_dir = False
        self._created_ignore = False

    def __enter__(self) -> CheckoutLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def acquire(self) -> None:
        directory = self.path.parent
        self._created_dir = not directory.exists()
        try:
            directory.mkdir(exist_ok=True)
            ignore = directory / ".gitignore"
            if not ignore.exists():
                ignore.write_text(GITIGNORE, encoding="utf-8")
                self._created_ignore = True
        except OSError as exc:
            raise MpsgenError(f"{LOCK_DIR}: cannot create the lock directory: {exc.strerror}",
                              hint="make the checkout writable") from None
        token = json.dumps({
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        })
        for _ in range(3):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                holder = read_holder(self.path)
                if is_stale(self.path, holder):
                    self._remove_stale(holder)
                    continue
                who = holder.describe() if holder else "a run whose lock file is still being written"
                raise MpsgenError(
                    f"{self.rel}: another mpsgen run ({who}) is changing this checkout",
                    hint=f"wait for it to finish; if that process is gone, delete {self.rel}",
                ) from None
            except OSError as exc:
                raise MpsgenError(f"{self.rel}: cannot create the lock file: {exc.strerror}",
                                  hint="make the checkout writable") from None
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(token + "\n")
                handle.flush()
                os.fsync(handle.fileno())
            self._token = token
            return
        raise MpsgenError(f"{self.rel}: could not take the lock", hint="another run keeps taking it; try again")

    def release(self) -> None:
        """Remove the lock only if it is still ours."""
        if self._token is None:
            return
        try:
            if self.path.read_text(encoding="utf-8").strip() == self._token:
                self.path.unlink()
        except OSError:
            pass
        self._token = None
        # Leave no trace: remove the .gitignore and the directory this run made (if nothing else is in it).
        directory = self.path.parent
        try:
            if self._created_ignore and (directory / ".gitignore").read_text(encoding="utf-8") == GITIGNORE:
                (directory / ".gitignore").unlink()
            if self._created_dir:
                directory.rmdir()
        except OSError:
            pass

    def _remove_stale(self, holder: Holder | None) -> None:
        # Rename first so that two runs taking over the same stale lock cannot delete each other's
        # fresh one: only one rename of the stale file succeeds.
        aside = self.path.with_name(f"{LOCK_NAME}.stale.{os.getpid()}")
        try:
            os.replace(self.path, aside)
        except FileNotFoundError:
            return
        if read_holder(aside) != holder:  # a fresh lock slipped in: put it back
            try:
                os.link(aside, self.path)
            except OSError:
                pass
            aside.unlink(missing_ok=True)
            return
        aside.unlink(missing_ok=True)
        self.stale_removed = holder


def read_holder(path: Path) -> Holder | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Holder(int(data["pid"]), str(data["host"]), str(data["started"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def is_stale(path: Path, holder: Holder | None) -> bool:
    if holder is None:
        try:
            return time.time() - path.stat().st_mtime > UNREADABLE_GRACE_SECONDS
        except OSError:
            return True
    if holder.host != socket.gethostname():
        return False  # cannot see another machine's processes (a shared file system): assume alive
    if holder.pid == os.getpid():
        return True  # a dead run's pid reused by this process
    return not pid_alive(holder.pid)


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    except OSError:
        return False
    return True
