"""The `delta-sync` command's entry point: light, so that a command the warm engine serves starts in milliseconds.

When a warm engine runs for this project, a preloaded process of it (`delta_sync.processes.prefork`: Python with
delta-sync and pyspark already imported) forks a copy of itself for this command. That copy takes this process's
terminal (stdin, stdout and stderr are passed over the socket), working directory, environment, umask and
arguments, runs the command line exactly as it would run here, and this process exits with its exit code.
Signals sent here (Ctrl-C) are passed on; should this process die, the copy dies with it. When no engine runs,
or it is turned off, the command runs in this process.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import struct
import sys
from pathlib import Path

_TRUE = ("1", "true", "yes", "on")
_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in _TRUE


def engine_off(args: list[str]) -> bool:
    if "--no-engine" in args or _truthy(os.environ.get("DELTA_SYNC_NO_ENGINE")):
        return True
    return _truthy(os.environ.get("CI")) and not _truthy(os.environ.get("DELTA_SYNC_ENGINE"))


def forward(args: list[str]) -> int | None:
    """Run the command in the engine's preloaded process; its exit code, or None if none serves this project."""
    from delta_sync.spark.engine_identity import engine_version, prefork_address, project_root

    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(prefork_address(project_root(Path.cwd()), engine_version()))
        credentials = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except OSError:
        return None
    # The socket's name can be computed by anyone: only a process of our own user gets our terminal and environment.
    if struct.unpack("3i", credentials)[1] != os.getuid():
        conn.close()
        return None
    umask = os.umask(0)
    os.umask(umask)
    order = json.dumps(
        {
            "argv": [sys.argv[0], *args],
            "cwd": os.getcwd(),
            "env": dict(os.environ),
            "umask": umask,
            "encoding": [sys.stdout.encoding, sys.stdout.errors, sys.stderr.encoding],
        }
    ).encode()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    try:
        socket.send_fds(conn, [struct.pack("!I", len(order))], [0, 1, 2])
        conn.sendall(order)
        pid = _read(conn, 4)
    except OSError:
        return None  # it went away before taking the command: nothing ran, so run it here
    if pid is None:
        return None

    def pass_on(signum: int, _frame: object) -> None:
        with contextlib.suppress(OSError):
            conn.sendall(bytes([signum]))

    for signum in _FORWARDED:
        signal.signal(signum, pass_on)
    status = _read(conn, 4)
    # The preloaded process reports the copy's end; without a report it vanished (it dies with its engine).
    return 70 if status is None else struct.unpack("!i", status)[0]


def _read(conn: socket.socket, size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        try:
            chunk = conn.recv(size - len(data))
        except InterruptedError:
            continue
        except OSError:
            return None
        if not chunk:
            return None
        data += chunk
    return data


def main() -> None:
    args = sys.argv[1:]
    end = args.index("--") if "--" in args else len(args)
    command = next((a for a in args[:end] if not a.startswith("-")), None)
    # doctor checks this process's own Java and environment, never the engine's copy of them.
    if command not in (None, "engine", "doctor") and not engine_off(args[:end]):
        code = forward(args)
        if code is not None:
            sys.exit(code)
    from delta_sync.cli.main import main as run_here

    run_here()
