"""The warm engine's process: it holds the SparkSession of one local catalog (and Derby's lock) and lends its JVM
to commands (see `delta_sync.spark.engine_borrow`).

Started by a command as `python -m delta_sync.processes.daemon ORDER.json`, in a session of its own. It answers on
127.0.0.1 to clients that give the token of its owner-only state file, and stops after its idle time with no
command running, or when told to (`delta-sync engine stop`), once the commands running end.

Each lease gets a py4j gateway of its own (`delta_sync.spark.engine_lending`). When a lease ends, that
command's Spark jobs are cancelled, then its gateway goes with every JVM object the command made. A command that
dies holding its lease (SIGKILL, a crash) harms no other: its jobs are cancelled, a report says which statement it
had in flight (the next command prints it), and the engine goes on serving the others. What the engine waits for
then is bounded by what the command was doing:
- a statement in flight (DDL, DML: one Delta commit, or a catalog change in Derby) is awaited, never cut: it lands
  in full or not at all. Meanwhile `engine status` shows it, awaited since when, and the engine does not idle out;
- anything else (reads, probes, queries: their jobs cancelled) is not awaited: the lease ends at once, and its
  gateway closes in the background when its last call has returned.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import os
import secrets
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

from delta_sync.spark import engine_control

TICK = 0.2
# The JVM's native memory over a long life (BENCHMARKS.md, "Memory over 5,000 commands"): Spark's thread pools
# start and end hundreds of threads under a stream of commands, and glibc gives them up to 8 malloc arenas per
# core, each keeping what its threads freed. Two arenas, and the free memory given back every TRIM_MS, bound it.
MALLOC_ARENAS = "2"
TRIM_MS = 10_000


class Lender(Protocol):
    """The JVM side of a lease (`delta_sync.spark.engine_lending.JvmLender`; a fake in the unit tests)."""

    def lend(self) -> tuple[dict[str, Any], int]: ...

    def cancel(self, tags: list[str]) -> None: ...

    def take_back(self, handle: int, tags: list[str], settle: bool) -> None: ...

    def figures(self) -> dict[str, Any]: ...


@dataclass
class Held:
    pid: int
    command: str
    since: float
    running: list[str] = field(default_factory=list)
    started: list[float] = field(default_factory=list)  # when each statement of `running` started (the clock's)
    tags: list[str] = field(default_factory=list)  # its sessions' job tags, as the command told them
    died: float | None = None  # when its end of the lease closed while a statement ran: that statement is awaited


class Control:
    """The engine's front door: token check, leases, idle time and stop. No Spark here: unit-tested alone."""

    def __init__(
        self,
        home: Path,
        version: str,
        settings: str,
        idle: float,
        lender: Lender,
        jvm_pid: int,
        stop: Callable[[], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.home = home
        self.version = version
        self.settings = settings
        self.idle = idle
        self.lender = lender
        self.jvm_pid = jvm_pid
        self.token = secrets.token_hex(32)
        self._stop = stop
        self._clock = clock
        self._lock = threading.Lock()
        self._held: dict[int, Held] = {}
        self._next = 0
        self.draining = False
        self.served = 0
        self.died = 0
        self.started = time.time()
        self.last_active = clock()
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]

    def publish(self) -> None:
        engine_control.write_private(
            engine_control.state_path(self.home),
            {
                "pid": os.getpid(),
                "jvm_pid": self.jvm_pid,
                "port": self.port,
                "token": self.token,
                "version": self.version,
                "settings": self.settings,
                "started": self.started,
                "idle": self.idle,
            },
        )

    def serve(self) -> None:
        threading.Thread(target=self._watch, name="idle", daemon=True).start()
        while True:
            try:
                conn, _address = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _watch(self) -> None:
        while True:
            time.sleep(TICK)
            with self._lock:
                quiet = not self._held and (self.draining or self._clock() - self.last_active >= self.idle)
                if quiet:
                    self.draining = True  # a command arriving while the JVM stops is sent to a new engine
            if quiet:
                self._stop()
                return

    def drain(self) -> None:
        with self._lock:
            self.draining = True

    def status(self) -> dict[str, Any]:
        now, wall = self._clock(), time.time()
        with self._lock:
            commands = [
                {"pid": h.pid, "command": h.command, "seconds": round(now - h.since, 1)}
                for h in self._held.values()
                if h.died is None
            ]
            awaiting = [
                {
                    "pid": h.pid,
                    "command": h.command,
                    "died": round(wall - (now - h.died), 1),
                    "statements": [
                        {"sql": sql, "since": round(wall - (now - started), 1), "seconds": round(now - started, 1)}
                        for sql, started in zip(h.running, h.started, strict=True)
                    ],
                }
                for h in self._held.values()
                if h.died is not None
            ]
            idle_for = 0.0 if self._held else now - self.last_active
        try:
            figures = self.lender.figures()
        except Exception as exc:  # the JVM is going: status still answers
            figures = {"figures": f"unavailable: {type(exc).__name__}"}
        return {
            "ok": True,
            "pid": os.getpid(),
            "jvm_pid": self.jvm_pid,
            "version": self.version,
            "home": str(self.home),
            "started": self.started,
            "uptime": round(time.time() - self.started, 1),
            "idle_for": round(idle_for, 1),
            "idle_timeout": self.idle,
            "stopping": self.draining,
            "served": self.served,
            "died": self.died,
            "commands": commands,
            "awaiting": awaiting,
            "memory": {**figures, "engine_rss_mb": _rss_mb(os.getpid()), "jvm_rss_mb": _rss_mb(self.jvm_pid)},
        }

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(engine_control.ANSWER_TIMEOUT)
            reader = conn.makefile("rb")
            try:
                message = json.loads(reader.readline() or b"null")
            except (OSError, ValueError):
                return
            if not isinstance(message, dict) or not hmac.compare_digest(
                str(message.get("token", "")).encode(), self.token.encode()
            ):
                _log("refused a client without the engine's token")
                _send(conn, {"ok": False, "error": "refused: no valid token"})
                return
            op = message.get("op")
            if op == "status":
                _send(conn, self.status())
            elif op == "stop":
                with self._lock:
                    self.draining = True
                    running = len(self._held)
                _log(f"asked to stop; {running} command(s) running")
                _send(conn, {"ok": True, "running": running})
            elif op == "lease":
                self._lease(conn, reader, message)
            else:
                _send(conn, {"ok": False, "error": f"unknown request {op!r}"})

    def _lease(self, conn: socket.socket, reader: IO[bytes], message: dict[str, Any]) -> None:
        with self._lock:
            if message.get("version") != self.version or message.get("settings") != self.settings:
                self.draining = True  # the next engine is the client's kind; this one goes once idle
                _send(conn, {"ok": False, "restart": True, "version": self.version})
                return
            if self.draining:
                _send(conn, {"ok": False, "restart": True, "version": self.version})
                return
            self._next += 1
            key = self._next
            held = self._held[key] = Held(int(message.get("pid", 0)), str(message.get("command", "")), self._clock())
            self.served += 1
        try:
            gateway, handle = self.lender.lend()
        except Exception as exc:
            with self._lock:
                self._held.pop(key, None)
            _log(f"lease {key}: could not open a gateway: {type(exc).__name__}: {exc}")
            _send(conn, {"ok": False, "error": f"the engine could not open a gateway: {type(exc).__name__}"})
            return
        _log(f"lease {key}: pid {held.pid}: {held.command}")
        _send(conn, {"ok": True, "gateway": gateway, "pid": os.getpid()})
        conn.settimeout(None)
        finished = self._follow(reader, held)
        if finished:
            _log(f"lease {key}: done")
        else:  # told at once: the next command names it, whether or not its last statement has ended yet
            _log(f"lease {key}: pid {held.pid} died holding its lease; running: {held.running}")
            self._report(held)
            with self._lock:
                if held.running:
                    held.died = self._clock()
            if held.died is not None:
                _log(f"lease {key}: awaiting its statement in flight to land in full or not at all")
        # A statement in flight keeps the lease (listed as awaited, no idle stop) until its call has returned; a dead
        # command's reads do not: their jobs are cancelled and the lease ends now.
        try:
            self.lender.take_back(handle, list(held.tags), settle=held.died is not None)
        except Exception as exc:
            _log(f"lease {key}: taking it back failed: {type(exc).__name__}: {exc}")
        if held.died is not None:
            _log(f"lease {key}: its statement in flight has ended")
        with self._lock:
            self._held.pop(key, None)
            self.last_active = self._clock()

    def _follow(self, reader: IO[bytes], held: Held) -> bool:
        """The command's events until it says "done" (True) or its end of the socket closes (False)."""
        try:
            for line in reader:
                event = json.loads(line)
                if not isinstance(event, dict):
                    continue
                op, text = event.get("op"), str(event.get("sql", ""))
                if op == "done":
                    return True
                if op == "session" and text:
                    held.tags.append(text)
                elif op == "cancel" and held.tags:
                    _log(f"pid {held.pid}: interrupted; cancelling its jobs")
                    try:
                        self.lender.cancel(list(held.tags))
                    except Exception as exc:  # its lease's end cancels them again
                        _log(f"pid {held.pid}: cancelling failed: {type(exc).__name__}: {exc}")
                with self._lock:
                    if op == "running":
                        held.running.append(text)
                        held.started.append(self._clock())
                    elif op == "ended" and text in held.running:
                        index = held.running.index(text)
                        del held.running[index], held.started[index]
        except Exception:  # a dead client, garbage on the line, a JVM call that failed: the lease ends
            pass
        return False

    def _report(self, held: Held) -> None:
        """For the next command to print: appended, so that two commands dying at once are both told."""
        path = engine_control.report_path(self.home)
        entry = {"pid": held.pid, "command": held.command, "running": held.running, "at": time.time()}
        with self._lock:
            self.died += 1
            try:
                earlier = json.loads(path.read_text())
            except (OSError, ValueError):
                earlier = []
            reports = earlier if isinstance(earlier, list) else [earlier]
            engine_control.write_private(path, [*reports, entry])


def _rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except (OSError, ValueError, IndexError):
        pass
    return None


def _send(conn: socket.socket, answer: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):
        conn.sendall(json.dumps(answer).encode() + b"\n")


def _log(message: str) -> None:
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} engine {os.getpid()}: {message}", flush=True)


def _fork_prefork(name: str) -> None:
    """Before the JVM and any thread: the preloaded process holds no JVM connection and forks safely."""
    engine = os.getpid()
    if os.fork() == 0:
        try:
            from delta_sync.processes import prefork

            prefork.serve(name, engine)
        finally:
            os._exit(0)


def _masking(conf: dict[str, str], shown: dict[str, str]) -> Callable[[str], str]:
    """The settings the start file shows masked hold secrets: masked in the engine's messages too, and kept off
    its JVM's command line (session.launch_settings)."""
    from delta_sync.specs.settings import REDACTED

    hidden = sorted({value for key, value in conf.items() if value and shown.get(key) != value}, key=len, reverse=True)

    def redact(text: str) -> str:
        for value in hidden:
            text = text.replace(value, REDACTED)
        return text

    return redact


JAVA_OPTIONS = "spark.driver.extraJavaOptions"


def bounded_native_memory(
    conf: dict[str, str], default_options: str, environ: dict[str, str] | os._Environ[str]
) -> dict[str, str]:
    """The project's settings `conf` with the JVM option that gives glibc's free memory back every TRIM_MS, after
    the project's own JVM options, else delta-sync's (`default_options`: the project's replace them); a JVM
    without that option ignores it (Spark's launcher passes -XX:+IgnoreUnrecognizedVMOptions). And
    MALLOC_ARENA_MAX in `environ`, for the JVM about to start. What the user set (either) stays."""
    environ.setdefault("MALLOC_ARENA_MAX", MALLOC_ARENAS)
    options = conf.get(JAVA_OPTIONS, default_options)
    if "TrimNativeHeapInterval" in options:
        return conf
    return {**conf, JAVA_OPTIONS: f"{options} -XX:TrimNativeHeapInterval={TRIM_MS}".strip()}


def main(argv: list[str]) -> int:
    from delta_sync.model.errors import DeltaSyncError
    from delta_sync.spark import session
    from delta_sync.spark.session import LocalCatalog

    order = json.loads(Path(argv[1]).read_text())
    home = Path(order["home"])
    # The start file shows the conf masked; the real one (secrets included) comes through stdin.
    conf = json.loads(sys.stdin.readline()) if order.get("conf_on_stdin") else order["conf"]
    redact = _masking(conf, order["conf"])
    # Commands share the cores: each lease's jobs run in a pool of their own (engine_lending), and the pools take
    # turns, where FIFO would hold every command behind the first one's long job. A mode the project set stays.
    conf = {"spark.scheduler.mode": "FAIR", **conf}
    _log(f"starting: version {order['version']}, idle {order['idle']} s")
    if order.get("prefork"):
        _fork_prefork(str(order["prefork"]))
    # After the fork: the preloaded process needs none of it.
    defaults = session.embedded_catalog_conf(LocalCatalog(home=home)).get(JAVA_OPTIONS, "")
    conf = bounded_native_memory(conf, defaults, os.environ)
    catalog = LocalCatalog(home=home, master=order["master"], conf=conf, redact=redact)
    session.WRITE_CLASS_ARCHIVE = True  # written when this engine stops: nobody waits for it then
    session.holder = "the delta-sync engine"
    try:
        spark = session.get_session(catalog)
        # The Hive client and Derby start now, not in the first command.
        try:
            spark.sql("SHOW DATABASES").collect()
        except Exception as exc:
            # Another Spark on this folder (a notebook) booted Derby first: the sentence, not Hive's stack.
            if session.derby_locked(catalog, exc):
                raise session.locked_error(catalog) from None
            raise
    except DeltaSyncError as exc:
        engine_control.write_private(
            engine_control.engine_dir(home) / "failed.json", {"type": type(exc).__name__, "message": str(exc)}
        )
        _log(f"could not start: {exc}")
        return 1
    from delta_sync.spark import engine_orphans
    from delta_sync.spark.engine_lending import JvmLender

    process = spark.sparkContext._gateway.proc
    stopping = threading.Lock()

    def stop() -> None:
        if not stopping.acquire(blocking=False):
            return
        control.drain()
        with contextlib.suppress(OSError):
            state = engine_control.EngineState.read(home)
            if state is not None and state.pid == os.getpid():
                engine_control.state_path(home).unlink()
        _log("stopping: idle, or asked to")
        session.release()  # stops the session, waits for the JVM (and Derby's lock) to go
        os._exit(0)

    lender = JvmLender(spark)
    control = Control(home, order["version"], order["settings"], float(order["idle"]), lender, process.pid, stop)
    threading.Thread(target=lender.share_forever, args=(_log,), name="share", daemon=True).start()
    orphans = engine_orphans.OrphanServers(spark, process.pid)
    threading.Thread(target=orphans.forever, args=(_log,), name="orphans", daemon=True).start()
    signal.signal(signal.SIGTERM, lambda *_a: stop())
    control.publish()
    _log(f"ready on 127.0.0.1:{control.port} (JVM pid {process.pid})")
    control.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
