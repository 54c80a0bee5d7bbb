"""The warm engine, command side: a command borrows the JVM of a long-lived engine process instead of starting one.

The engine (`delta_sync.processes.daemon`) holds the SparkSession of one local catalog, and with it Derby's lock. A
command asks it for a lease over a local socket (127.0.0.1, a random token in an owner-only state file), then
connects py4j to a gateway the engine opened on its JVM for this lease alone (its own port and secret), and
works on a session of its own (`newSession()`: its own settings, temporary views and current schema; the
catalog and the Delta log cache are shared). Everything else (parsing, planning, rendering, prompts, exit
codes) runs in the command's process, exactly as without the engine: the engine lends a JVM, it runs no
delta-sync logic.

The lease stays open for the command's life; the command tells the engine its sessions' job tags. Ctrl-C
asks the engine to cancel those tags' jobs (pyspark's own handler would cancel every job of the JVM: other
commands' too), as in-process Ctrl-C cancels the command's jobs. When the lease ends, normally or because the
command died (SIGKILL, a crash), the engine cancels what is left of its jobs, drops its gateway and goes on
serving the others; for a death it leaves a report the next command prints. The engine stops after an idle
time with no lease open, or when told to.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from delta_sync.model.errors import CatalogError, DeltaSyncError, SetupError
from delta_sync.spark import interrupts
from delta_sync.spark.engine_control import (
    EngineState,
    Lease,
    Unreachable,
    alive,
    engine_dir,
    forget,
    idle_seconds,
    private_dir,
    request,
    stop_engine,
    take_report,
    write_private,
)
from delta_sync.spark.engine_identity import engine_version, prefork_address, project_root, settings_key

START_TIMEOUT = 900.0  # a first run may fetch the jars and build the metastore

_lease: Lease | None = None


def on_engine() -> bool:
    """Whether this command runs on the warm engine's JVM."""
    return _lease is not None


def statement(event: str, sql: str) -> None:
    """A statement starts ("running") or ends ("ended") on this command's lease, if it has one."""
    if _lease is not None:
        _lease.tell(event, sql)


def tag_session(session: Any) -> None:
    """Tell the engine a session of this command (the main one, one per apply thread): Spark tags every job of
    a session with its job tag, and the engine cancels this command's tags, only them."""
    if _lease is not None:
        _lease.tell("session", str(session._jsparkSession.sessionJobTag()))


@contextlib.contextmanager
def _start_lock(home: Path) -> Iterator[None]:
    """One command at a time decides whether to start an engine; the others then find it running."""
    folder = private_dir(engine_dir(home))
    with (folder / "start.lock").open("a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _command_line(redact: Callable[[str], str]) -> str:
    return redact(" ".join(["delta-sync", *sys.argv[1:]]))


def _try_lease(state: EngineState, version: str, settings: str, redact: Callable[[str], str]) -> Lease | str:
    """A lease, or why not: "gone" (nothing answers) or "restart" (another version or settings, or stopping)."""
    try:
        sock, reader, answer = request(
            state,
            {
                "op": "lease",
                "version": version,
                "settings": settings,
                "pid": os.getpid(),
                "command": _command_line(redact),
            },
        )
    except Unreachable:
        return "gone"
    if answer.get("ok"):
        return Lease(sock, reader, answer, state)
    sock.close()
    if answer.get("restart"):
        return "restart"
    raise CatalogError(f"The delta-sync engine refused this command: {answer.get('error', 'no reason given')}")


def _spawn(
    home: Path,
    master: str,
    conf: Mapping[str, str],
    version: str,
    settings: str,
    idle: float,
    redact: Callable[[str], str],
) -> EngineState:
    folder = engine_dir(home)
    failed = folder / "failed.json"
    failed.unlink(missing_ok=True)
    order = folder / "start.json"
    # The Spark settings may hold secrets (`${env:...}` in conf): the file shows them masked, and the engine
    # gets the real ones through its stdin, never through a file, its argv or its environment.
    write_private(
        order,
        {
            "home": str(home),
            "master": master,
            "conf": {key: redact(value) for key, value in conf.items()},
            "conf_on_stdin": True,
            "version": version,
            "settings": settings,
            "idle": idle,
            "prefork": prefork_address(project_root(Path.cwd()), version),
        },
    )
    log_file = home / "logs" / "engine.log"
    log_file.parent.mkdir(parents=True, exist_ok=True)
    # A variable a setting took a secret from (`${env:LAKE_SECRET}`) stays out too: the engine outlives the command
    # by hours, its environment in /proc/<pid>/environ all along, and it has the value through its stdin.
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_GATEWAY_") and redact(v) == v}
    # Owner-only: it names every command the engine served, with its arguments.
    with os.fdopen(os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "ab") as log:
        os.fchmod(log.fileno(), 0o600)
        process = subprocess.Popen(
            [sys.executable, "-m", "delta_sync.processes.daemon", str(order)],
            stdin=subprocess.PIPE,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # not in the command's process group: a Ctrl-C there is not the engine's
            cwd=home,
            env=environ,
        )
    assert process.stdin is not None
    with process.stdin:
        process.stdin.write((json.dumps(dict(conf)) + "\n").encode())
    # Should this command die before the engine is up, the next one waits for this engine instead of starting
    # a second, which would find Derby taken.
    write_private(folder / "starting.json", {"pid": process.pid})
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        state = EngineState.read(home)
        if state is not None and state.pid == process.pid:
            (folder / "starting.json").unlink(missing_ok=True)
            return state
        if process.poll() is not None:
            (folder / "starting.json").unlink(missing_ok=True)
            break
        if time.monotonic() > deadline:
            process.kill()
            raise SetupError(f"The delta-sync engine did not start within {START_TIMEOUT:.0f} s. Details: {log_file}")
        time.sleep(0.05)
    try:
        raw = json.loads(failed.read_text())
    except (OSError, ValueError):
        raise SetupError(
            f"The delta-sync engine exited ({process.returncode}) while starting. Details: {log_file}"
        ) from None
    kinds: dict[str, type[DeltaSyncError]] = {"CatalogError": CatalogError, "SetupError": SetupError}
    raise kinds.get(raw.get("type", ""), SetupError)(redact(str(raw.get("message", ""))))


def _started_by_another(home: Path) -> EngineState | None:
    """An engine a command started and died before it was up: wait for it to be up (its state), or gone."""
    marker = engine_dir(home) / "starting.json"
    try:
        pid = int(json.loads(marker.read_text())["pid"])
    except OSError:
        return None
    except (ValueError, KeyError, TypeError):
        marker.unlink(missing_ok=True)
        return None
    deadline = time.monotonic() + START_TIMEOUT
    while alive(pid) and _is_engine(pid) and time.monotonic() < deadline:
        state = EngineState.read(home)
        if state is not None and state.pid == pid:
            marker.unlink(missing_ok=True)
            return state
        time.sleep(0.05)
    marker.unlink(missing_ok=True)
    return None


def _is_engine(pid: int) -> bool:
    try:
        return b"delta_sync.processes.daemon" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True  # no /proc: trust the pid


def borrow(
    home: Path,
    master: str,
    conf: Mapping[str, str],
    full_conf: Mapping[str, str],
    on_status: Callable[[str], None],
    redact: Callable[[str], str],
) -> Any:
    """A SparkSession of this command on the engine's JVM, the engine started first if none runs."""
    global _lease
    idle = idle_seconds()
    version, settings = engine_version(), settings_key(master, full_conf, idle)
    with _start_lock(home):
        state = EngineState.read(home) or _started_by_another(home)
        lease: Lease | str = "gone" if state is None else _try_lease(state, version, settings, redact)
        if lease == "restart" and state is not None:
            on_status("Restarting the delta-sync engine (another version or other Spark settings)...")
            stop_engine(home)
        elif lease == "gone" and state is not None:
            forget(home, state)
        if not isinstance(lease, Lease):
            take_report(home)
            on_status(f"Starting the delta-sync engine (local catalog in {home})...")
            state = _spawn(home, master, conf, version, settings, idle, redact)
            lease = _try_lease(state, version, settings, redact)
            if not isinstance(lease, Lease):
                raise SetupError(f"The delta-sync engine started but did not take this command ({lease}).")
    take_report(home)
    _lease = lease
    try:
        session = _connect(lease)
    except Exception as exc:
        lease.release()
        raise SetupError(
            f"Could not reach the delta-sync engine's Spark: {exc}. Details: {home / 'logs' / 'engine.log'}"
        ) from None
    return session


def _connect(lease: Lease) -> Any:
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import SparkSession

    from delta_sync.spark.quiet import quiet_python_loggers

    quiet_python_loggers()
    gateway_info = lease.answer["gateway"]
    # launch_gateway connects to a running JVM when these are set; they must not reach our child processes.
    os.environ["PYSPARK_GATEWAY_PORT"] = str(gateway_info["port"])
    os.environ["PYSPARK_GATEWAY_SECRET"] = str(gateway_info["secret"])
    try:
        gateway = launch_gateway()  # type: ignore[no-untyped-call]
    finally:
        os.environ.pop("PYSPARK_GATEWAY_PORT", None)
        os.environ.pop("PYSPARK_GATEWAY_SECRET", None)
    jvm = gateway.jvm
    jsc = jvm.JavaSparkContext.fromSparkContext(jvm.org.apache.spark.SparkContext.getOrCreate())
    context = SparkContext(conf=SparkConf(_jconf=jsc.sc().conf()), gateway=gateway, jsc=jsc)
    sessions = jvm.org.apache.spark.sql.classic.SparkSession
    root = sessions.getDefaultSession().get()
    mine = root.newSession()
    session = SparkSession(context, jsparkSession=mine)
    # pyspark made ours the JVM's default session: a job of another command that runs on the default (a thread
    # without an active session) would carry our tag, and our Ctrl-C would cancel it.
    sessions.setDefaultSession(root)
    lease.tell("session", str(mine.sessionJobTag()))
    # pyspark's handler would cancel every job of the JVM: other commands' too. The engine cancels our tag's.
    interrupts.install(lambda: lease.tell("cancel"))
    import atexit

    atexit.register(_give_back, lease, gateway)
    return session


def _give_back(lease: Lease, gateway: Any) -> None:
    """At exit: the JVM objects this command held are released (the engine outlives us), then the lease."""
    import logging

    logging.disable(logging.CRITICAL)  # py4j logs the sockets it finds closed at exit
    with contextlib.suppress(Exception):
        gc.collect()
        gateway.close()
    lease.release()
