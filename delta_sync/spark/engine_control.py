"""The warm engine, seen from a command: whether this command uses one (the command line turns it on, the
environment may turn it off), where the engine keeps its files and the state it writes about itself, the
requests a command sends over its socket (a lease, its status, a stop) and the report it leaves when a command
died in it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from delta_sync.model.errors import CatalogError, SetupError

IDLE_DEFAULT = 600.0
ANSWER_TIMEOUT = 10.0
_DURATION = re.compile(r"\s*(?P<n>\d+(?:\.\d+)?)\s*(?P<unit>s|m|h)?\s*")
_TRUE = ("1", "true", "yes", "on")

_enabled = False
_from_cli = False


def notify_stderr(message: str) -> None:
    print(message, file=sys.stderr)


# How a report of the engine (a command that died in it) reaches the user; the CLI prints it in its style.
notify: Callable[[str], None] = notify_stderr


def enable(on: bool) -> None:
    """The command line turns the engine on; the library, spark-submit's driver and the engine itself never
    use one."""
    global _enabled, _from_cli
    _enabled = on
    _from_cli = True


def command_line() -> bool:
    """Whether this process is a `delta-sync` command (not the library, a driver or the engine)."""
    return _from_cli


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in _TRUE


def wanted(master: str, environ: Mapping[str, str] = os.environ) -> bool:
    """Whether this command borrows the engine: a local master, not turned off, and not on CI unless asked."""
    if not _enabled or _truthy(environ.get("DELTA_SYNC_NO_ENGINE")):
        return False
    if _truthy(environ.get("CI")) and not _truthy(environ.get("DELTA_SYNC_ENGINE")):
        return False
    return master.strip().startswith("local")


def idle_seconds(environ: Mapping[str, str] = os.environ) -> float:
    """DELTA_SYNC_ENGINE_IDLE: seconds, or a number with s, m or h (default 10m)."""
    text = environ.get("DELTA_SYNC_ENGINE_IDLE", "").strip()
    if not text:
        return IDLE_DEFAULT
    found = _DURATION.fullmatch(text)
    if found is None:
        raise SetupError(f"DELTA_SYNC_ENGINE_IDLE = `{text}` is not a duration; write seconds (600) or 30s, 10m, 1h")
    return float(found.group("n")) * {"s": 1, "m": 60, "h": 3600}[found.group("unit") or "s"]


def engine_dir(home: Path) -> Path:
    return home / "engine"


def private_dir(folder: Path) -> Path:
    """The engine's folder, its owner's alone whatever the umask: it holds the token and the reports."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    if folder.stat().st_mode & 0o077:
        folder.chmod(0o700)
    return folder


def state_path(home: Path) -> Path:
    return engine_dir(home) / "engine.json"


def report_path(home: Path) -> Path:
    return engine_dir(home) / "killed.json"


@dataclass(frozen=True, slots=True)
class EngineState:
    """What the running engine wrote about itself (owner-only file)."""

    pid: int
    jvm_pid: int
    port: int
    token: str
    version: str
    settings: str
    started: float
    idle: float

    @staticmethod
    def read(home: Path) -> EngineState | None:
        try:
            raw = json.loads(state_path(home).read_text())
            return EngineState(**{k: raw[k] for k in EngineState.__slots__})
        except (OSError, ValueError, KeyError, TypeError):
            return None


def write_private(path: Path, data: Mapping[str, Any] | list[Any]) -> None:
    """Atomically, readable by the owner only: it holds the engine's token."""
    private_dir(path.parent)
    partial = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        json.dump(data, handle)
    os.replace(partial, path)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A child of ours that exited but was not reaped yet is gone too.
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return True


def wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


class Unreachable(Exception):
    """Nothing answers at the state file's port: the engine is gone."""


def request(
    state: EngineState, message: Mapping[str, Any], token: str | None = None
) -> tuple[socket.socket, IO[bytes], dict[str, Any]]:
    """Send one request line; the open socket, its reader and the first answer line."""
    try:
        sock = socket.create_connection(("127.0.0.1", state.port), timeout=ANSWER_TIMEOUT)
    except OSError as exc:
        raise Unreachable(str(exc)) from None
    try:
        payload = {**message, "token": state.token if token is None else token}
        sock.sendall(json.dumps(payload).encode() + b"\n")
        reader = sock.makefile("rb")
        line = reader.readline()
    except OSError as exc:
        sock.close()
        raise Unreachable(str(exc)) from None
    if not line:
        sock.close()
        raise Unreachable("the engine closed the connection")
    sock.settimeout(None)
    return sock, reader, json.loads(line)


class Lease:
    """A command's claim on the engine: open while the command runs; statements in flight are told, so that
    the engine can report them should this process die."""

    def __init__(self, sock: socket.socket, reader: IO[bytes], answer: dict[str, Any], state: EngineState) -> None:
        self._sock = sock
        self._reader = reader
        self.answer = answer
        self.state = state
        self._lock = threading.Lock()
        self.released = False

    def tell(self, event: str, sql: str = "") -> None:
        with self._lock, contextlib.suppress(OSError):
            if not self.released:
                self._sock.sendall(json.dumps({"op": event, "sql": sql}).encode() + b"\n")

    def release(self) -> None:
        with self._lock:
            if self.released:
                return
            self.released = True
            with contextlib.suppress(OSError):
                self._sock.sendall(b'{"op": "done"}\n')
                self._sock.close()


def forget(home: Path, state: EngineState) -> None:
    """An engine that no longer answers: its JVM exits with it (it reads its parent's stdin); wait for the
    JVM so that Derby's lock is free, then drop its state file."""
    wait_gone(state.pid, 30)
    wait_gone(state.jvm_pid, 60)
    current = EngineState.read(home)
    if current is not None and current.pid == state.pid:
        with contextlib.suppress(OSError):
            state_path(home).unlink()


def stop_engine(
    home: Path, on_wait: Callable[[int], None] = lambda _n: None, timeout: float = 3600
) -> EngineState | None:
    """Ask the engine to stop once its running commands end, and wait until it has; the state it had."""
    state = EngineState.read(home)
    if state is None:
        return None
    try:
        sock, _reader, answer = request(state, {"op": "stop"})
        sock.close()
        if answer.get("running"):
            on_wait(int(answer["running"]))
    except Unreachable:
        pass
    if not wait_gone(state.pid, timeout) or not wait_gone(state.jvm_pid, 60):
        raise CatalogError(f"The delta-sync engine (pid {state.pid}) did not stop within {timeout:.0f} s.")
    forget(home, state)
    return state


def engine_status(home: Path) -> dict[str, Any] | None:
    """What the engine says of itself, or None when none runs for this catalog."""
    state = EngineState.read(home)
    if state is None:
        return None
    try:
        sock, _reader, answer = request(state, {"op": "status"})
        sock.close()
    except Unreachable:
        return None
    return answer


def take_report(home: Path) -> None:
    """Print, once, what the engine left about commands that died in it."""
    path = report_path(home)
    try:
        raw = json.loads(path.read_text())
        path.unlink()
    except (OSError, ValueError):
        return
    for entry in raw if isinstance(raw, list) else [raw]:
        if isinstance(entry, dict):
            notify(_died(entry))


def _died(raw: Mapping[str, Any]) -> str:
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(raw.get("at", 0))))
    running = [str(s) for s in raw.get("running", [])]
    what = (
        "while it ran:\n"
        + "\n".join(f"  {sql}" for sql in running)
        + f"\nThe engine cancelled its Spark jobs, so {'that statement' if len(running) == 1 else 'each of those'} "
        "either committed in full or not at all; `delta-sync plan` shows what is left, and re-running the command "
        "finishes it."
        if running
        else "in the engine, which cancelled its Spark jobs; `delta-sync plan` shows where the tables stand."
    )
    return f"The earlier command `{raw.get('command', '?')}` (pid {raw.get('pid', '?')}) died at {when} {what}"


def held_by_engine(home: Path) -> EngineState | None:
    state = EngineState.read(home)
    return state if state is not None and alive(state.pid) else None
