"""The warm engine's preloaded process: Python with delta-sync and pyspark imported, forking a copy per command.

Importing delta-sync, typer, rich and pyspark costs a command ~0.9 s before it does anything; a fork of a
process that has done it costs milliseconds. Forked by the engine before its JVM starts (so it holds no JVM
connection and no thread), it serves the commands of one project and installation (`delta_sync.cli.launch`), and
exits when its engine does, once the commands it started have ended.

A copy becomes the command: it takes the caller's stdin, stdout and stderr (received over the socket), working
directory, environment, umask and arguments, then runs the command line as a fresh process would, borrowing
the engine's JVM like any command. It kills itself if the caller dies, so that killing a command kills it.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import socket
import struct
import sys
import threading
import time
from typing import Any

_TICK = 0.2


def preload() -> None:
    """What every command imports, imported once here."""
    import delta_sync.cli.main
    import delta_sync.review.execution
    import delta_sync.review.library
    import delta_sync.review.pipeline
    import delta_sync.spark.catalog
    import delta_sync.specs.spec_files  # noqa: F401
    from delta_sync.spark.quiet import quiet_python_loggers
    from delta_sync.spark.session import import_pyspark

    import_pyspark()
    quiet_python_loggers()


def serve(name: str, engine_pid: int) -> None:
    """Serve until the engine (our parent) is gone and the last command has ended."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(name)
    except OSError:
        return  # another engine of this project already serves it
    listener.listen(16)
    listener.settimeout(_TICK)
    preload()
    running: dict[int, socket.socket] = {}
    while True:
        _reap(running)
        if os.getppid() != engine_pid:
            if listener.fileno() >= 0:
                listener.close()
            if not running:
                return
            time.sleep(_TICK)
            continue
        try:
            conn, _address = listener.accept()
        except (TimeoutError, OSError):
            continue
        conn.settimeout(None)
        with contextlib.suppress(OSError):
            _take(conn, listener, running)


def _reap(running: dict[int, socket.socket]) -> None:
    while running:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = running.pop(pid, None)
        if conn is not None:
            code = os.waitstatus_to_exitcode(status)
            with contextlib.suppress(OSError):
                conn.sendall(struct.pack("!i", code if code >= 0 else 128 - code))
            conn.close()


def _take(conn: socket.socket, listener: socket.socket, running: dict[int, socket.socket]) -> None:
    credentials = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", credentials)
    if uid != os.getuid():
        conn.close()  # another user's process: never served
        return
    header, fds, _flags, _address = socket.recv_fds(conn, 4, 3)
    while len(header) < 4:
        more = conn.recv(4 - len(header))
        if not more:
            raise OSError("the command went away")
        header += more
    (size,) = struct.unpack("!I", header)
    payload = b""
    while len(payload) < size:
        more = conn.recv(size - len(payload))
        if not more:
            raise OSError("the command went away")
        payload += more
    if len(fds) != 3:
        for fd in fds:
            os.close(fd)
        conn.close()
        return
    order = json.loads(payload)
    pid = os.fork()
    if pid == 0:
        listener.close()
        for other in running.values():
            other.close()
        _become(conn, fds, order)  # never returns
    for fd in fds:
        os.close(fd)
    running[pid] = conn
    conn.sendall(struct.pack("!i", pid))


def _become(conn: socket.socket, fds: list[int], order: dict[str, Any]) -> None:
    code = 70
    try:
        for target, fd in zip((0, 1, 2), fds, strict=True):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(order["cwd"])
        os.umask(int(order["umask"]))
        os.environ.clear()
        os.environ.update(order["env"])
        sys.argv = list(order["argv"])
        out_encoding, out_errors, err_encoding = order["encoding"]
        sys.stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)), encoding=out_encoding)
        sys.stdout = _text(1, out_encoding, out_errors)
        sys.stderr = _text(2, err_encoding, "backslashreplace")
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGCHLD):
            signal.signal(signum, signal.SIG_DFL)
        threading.Thread(target=_follow, args=(conn,), daemon=True).start()
        code = _run()
    finally:
        with contextlib.suppress(Exception):
            import atexit

            atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


def _text(fd: int, encoding: str, errors: str) -> io.TextIOWrapper:
    tty = os.isatty(fd)
    raw = io.FileIO(fd, "w", closefd=False)
    return io.TextIOWrapper(
        io.BufferedWriter(raw), encoding=encoding, errors=errors, line_buffering=tty, write_through=tty
    )


def _follow(conn: socket.socket) -> None:
    """The caller's signals, passed on as one byte each; its death (EOF) is ours."""
    while True:
        try:
            data = conn.recv(16)
        except OSError:
            data = b""
        if not data:
            os.kill(os.getpid(), signal.SIGKILL)
        for signum in data:
            os.kill(os.getpid(), signum)


def _run() -> int:
    from delta_sync.cli import console
    from delta_sync.cli import main as cli

    console.fresh_consoles()  # they looked at the preloaded process's own stderr and environment
    try:
        cli.main()
    except SystemExit as exit_:
        code = exit_.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0
