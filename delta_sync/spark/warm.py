"""The warm engine, command side: a command borrows the JVM of a long-lived engine process instead of starting one.

The engine (`delta_sync.processes.daemon`) holds the SparkSession of one local catalog, and with it Derby's lock. A
command asks it for a lease over a local socket (127.0.0.1, a random token in an owner-only state file), then
connects py4j to the engine's JVM with the gateway's own secret and works on a session of its own
(`newSession()`: its own settings, temporary views and current schema; the catalog and the Delta log cache are
shared). Everything else (parsing, planning, rendering, prompts, exit codes) runs in the command's process,
exactly as without the engine: the engine lends a JVM, it runs no delta-sync logic.

The lease stays open for the command's life. The engine stops after an idle time with no lease open, when told
to, or at once when a command dies holding its lease (SIGKILL, a crash): a statement that command had in flight
then ends with the JVM, as it would have in-process, and the engine leaves a report the next command prints.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import hashlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from delta_sync.model.errors import CatalogError, DeltaSyncError, SetupError
from delta_sync.version import __version__

IDLE_DEFAULT = 600.0
START_TIMEOUT = 900.0  # a first run may fetch the jars and build the metastore
ANSWER_TIMEOUT = 10.0
_DURATION = re.compile(r"\s*(?P<n>\d+(?:\.\d+)?)\s*(?P<unit>s|m|h)?\s*")
_TRUE = ("1", "true", "yes", "on")
_JVM_ENV = ("JAVA_", "SPARK_", "HADOOP_", "YARN_", "HIVE_", "AWS_", "AZURE_", "GOOGLE_", "KRB5")
PROJECT_FILE = "delta-sync.yaml"  # project.PROJECT_FILE, not imported: that module is heavy

_enabled = False
_from_cli = False
_lease: Lease | None = None


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


def engine_version() -> str:
    """delta-sync's version, and a fingerprint of the code on both ends of the engine's socket, so that an
    engine from another install (or an edited checkout) is replaced rather than spoken to."""
    digest = hashlib.sha256()
    here = Path(__file__).parent
    for path in sorted(here.glob("*.py")):
        info = path.stat()
        digest.update(f"{path.name}:{info.st_size}:{info.st_mtime_ns};".encode())
    return f"{__version__}+{digest.hexdigest()[:12]}"


def settings_key(master: str, conf: Mapping[str, str], idle: float, environ: Mapping[str, str] = os.environ) -> str:
    """What the engine was started with: another value means another engine."""
    started_with = {
        "master": master,
        "conf": sorted(conf.items()),
        "idle": idle,
        "python": sys.prefix,
        # What the JVM reads from its environment: credentials, Hadoop's and Spark's configuration, Java.
        "env": sorted((k, v) for k, v in environ.items() if k.startswith(_JVM_ENV) or k == "PYSPARK_PYTHON"),
    }
    return hashlib.sha256(json.dumps(started_with, sort_keys=True).encode()).hexdigest()[:16]


def project_root(start: Path) -> Path:
    """api.project_root, without its imports: the nearest folder holding delta-sync.yaml or .delta-sync/,
    else the working directory."""
    here = start.resolve()
    for folder in (here, *here.parents):
        if (folder / PROJECT_FILE).is_file() or (folder / ".delta-sync").is_dir():
            return folder
    return here


def prefork_address(root: Path, version: str) -> str:
    """The preloaded process's socket: in Linux's abstract namespace (no path length limit, nothing left on
    disk), named by project, installation and code version; only our own user is served (SO_PEERCRED)."""
    key = hashlib.sha256(f"{root.resolve()}\0{sys.prefix}\0{version}".encode()).hexdigest()[:32]
    return f"\0delta-sync-{key}"


def engine_dir(home: Path) -> Path:
    return home / "engine"


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


def write_private(path: Path, data: Mapping[str, Any]) -> None:
    """Atomically, readable by the owner only: it holds the engine's token."""
    path.parent.mkdir(parents=True, exist_ok=True)
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

    def tell(self, event: str, sql: str) -> None:
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


def statement(event: str, sql: str) -> None:
    """A statement starts ("running") or ends ("ended") on this command's lease, if it has one."""
    if _lease is not None:
        _lease.tell(event, sql)


@contextlib.contextmanager
def _start_lock(home: Path) -> Iterator[None]:
    """One command at a time decides whether to start an engine; the others then find it running."""
    folder = engine_dir(home)
    folder.mkdir(parents=True, exist_ok=True)
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


def _forget(home: Path, state: EngineState) -> None:
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
    _forget(home, state)
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
    """Print, once, what the engine left when a command died in it."""
    path = report_path(home)
    try:
        raw = json.loads(path.read_text())
        path.unlink()
    except (OSError, ValueError):
        return
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(raw.get("at", 0))))
    running = [str(s) for s in raw.get("running", [])]
    what = (
        "while it ran:\n"
        + "\n".join(f"  {sql}" for sql in running)
        + "\nThe engine stopped with it, so that statement either committed in full or not at all; "
        "`delta-sync plan` shows what is left, and re-running the command finishes it."
        if running
        else "in the engine, which stopped with it; `delta-sync plan` shows where the tables stand."
    )
    notify(f"The earlier command `{raw.get('command', '?')}` (pid {raw.get('pid', '?')}) died at {when} {what}")


def held_by_engine(home: Path) -> EngineState | None:
    state = EngineState.read(home)
    return state if state is not None and alive(state.pid) else None


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
    write_private(
        order,
        {
            "home": str(home),
            "master": master,
            "conf": dict(conf),
            "version": version,
            "settings": settings,
            "idle": idle,
            "prefork": prefork_address(project_root(Path.cwd()), version),
        },
    )
    log_file = home / "logs" / "engine.log"
    log_file.parent.mkdir(parents=True, exist_ok=True)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_GATEWAY_")}
    with log_file.open("ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "delta_sync.processes.daemon", str(order)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # not in the command's process group: a Ctrl-C there is not the engine's
            cwd=home,
            env=environ,
        )
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        state = EngineState.read(home)
        if state is not None and state.pid == process.pid:
            return state
        if process.poll() is not None:
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
        state = EngineState.read(home)
        lease: Lease | str = "gone" if state is None else _try_lease(state, version, settings, redact)
        if lease == "restart" and state is not None:
            on_status("Restarting the delta-sync engine (another version or other Spark settings)...")
            stop_engine(home)
        elif lease == "gone" and state is not None:
            _forget(home, state)
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
    # pyspark's handler cancels every job of the JVM: other commands' too. Ours are this session's.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    root = jvm.org.apache.spark.sql.classic.SparkSession.getDefaultSession().get()
    session = SparkSession(context, jsparkSession=root.newSession())
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
