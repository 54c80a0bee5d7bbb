"""Servers that tests start for real: one place for how they are launched, probed and stopped.

Every server is a `ServerProcess`: a command started in a process group of its own, its output in a
log file, a readiness probe waited on with a deadline (a failure quotes the log's tail), and a stop
that ends the whole group (SIGTERM, then SIGKILL), so nothing it spawned outlives the test. Ports are
chosen free at run time. `logs_kept_on_failure` prints where the logs are, and their tails, when a
test that used the servers failed; the files stay under pytest's temporary folder.

This module holds the shared machinery and the Spark standalone cluster (a master and one worker
on 127.0.0.1, from the installed pyspark's classes); each other server has a module of its own in
this package (a Hive metastore, a Spark Connect server, a Unity Catalog server), built on the same
pieces.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

LOCALHOST = "127.0.0.1"
START_TIMEOUT = 180.0  # seconds; generous, as the test machines are often busy
STOP_TIMEOUT = 20.0


class ServerError(RuntimeError):
    """A server did not start, or died; the message quotes its log."""


def free_ports(count: int) -> list[int]:
    """`count` distinct ports free on 127.0.0.1 right now (held open together, so they differ)."""
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) for _ in range(count)]
        for sock in sockets:
            sock.bind((LOCALHOST, 0))
        return [int(sock.getsockname()[1]) for sock in sockets]


def spark_home() -> Path:
    """The installed pyspark's folder, which holds bin/, jars/ and python/ like a Spark distribution."""
    found = importlib.util.find_spec("pyspark")
    if found is None or found.origin is None:
        raise ServerError("pyspark is not installed")
    return Path(found.origin).parent


def spark_env(conf_dir: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a Spark server: this pyspark, 127.0.0.1, this Python, and an empty
    SPARK_CONF_DIR so no stray spark-env.sh or spark-defaults.conf changes what is tested."""
    conf_dir.mkdir(parents=True, exist_ok=True)
    env = {key: value for key, value in os.environ.items() if not key.startswith(("SPARK_", "PYSPARK_"))}
    env.update(
        {
            "SPARK_HOME": str(spark_home()),
            "SPARK_CONF_DIR": str(conf_dir),
            "SPARK_LOCAL_IP": LOCALHOST,
            "PYSPARK_PYTHON": sys.executable,
        }
    )
    env.update(extra or {})
    return env


def spark_class(main_class: str, *args: str) -> list[str]:
    """A JVM class run by the installed pyspark's bin/spark-class (it execs java, so the pid is the JVM's)."""
    return [str(spark_home() / "bin" / "spark-class"), main_class, *args]


def port_open(port: int) -> bool:
    """Whether something accepts connections on 127.0.0.1:`port`."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(1.0)
        return sock.connect_ex((LOCALHOST, port)) == 0


@contextlib.contextmanager
def silent_server() -> Iterator[int]:
    """A port on 127.0.0.1 that accepts connections and never says a word: a misconfigured address
    (the wrong service, a hung server). Yields the port; closes everything on the way out."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind((LOCALHOST, 0))
    listener.listen(64)  # the kernel completes handshakes up to the backlog without accept()
    try:
        yield int(listener.getsockname()[1])
    finally:
        listener.close()


def http_json(url: str, timeout: float = 5.0) -> Any:
    """The JSON at `url`, or None while the server is not answering (yet)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return json.loads(response.read().decode())
    except (OSError, urllib.error.URLError, ValueError):
        return None


@dataclass
class ServerProcess:
    """One server: `start()`, `wait_until(probe)`, `stop()`; its output goes to `log`."""

    name: str
    command: Sequence[str]
    log: Path
    env: Mapping[str, str] | None = None
    cwd: Path | None = None
    process: subprocess.Popen[bytes] | None = field(default=None, init=False, repr=False)

    def start(self) -> ServerProcess:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as out:
            out.write(f"$ {shlex.join(self.command)}\n".encode())
            out.flush()
            self.process = subprocess.Popen(
                list(self.command),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=None if self.env is None else dict(self.env),
                cwd=self.cwd,
                start_new_session=True,  # its own process group: stop() ends everything it spawned
            )
        return self

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def wait_until(self, probe: Callable[[], bool], what: str, timeout: float = START_TIMEOUT) -> None:
        """Poll `probe` until it holds; fail with the log's tail if the server exits or time runs out."""
        deadline = time.monotonic() + timeout
        while True:
            if probe():
                return
            if not self.running:
                code = None if self.process is None else self.process.returncode
                raise ServerError(f"{self.name} exited ({code}) before {what}\n{self.report()}")
            if time.monotonic() > deadline:
                raise ServerError(f"{self.name}: no {what} within {timeout:.0f}s\n{self.report()}")
            time.sleep(0.5)

    def tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def report(self, lines: int = 40) -> str:
        return f"--- {self.name}: {self.log} (last {lines} lines) ---\n{self.tail(lines)}"

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        """SIGTERM to the process group, SIGKILL to what is left after `timeout` seconds."""
        process = self.process
        if process is None:
            return
        for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 10.0)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, sig)
            try:
                process.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                continue
            if not _group_alive(process.pid):
                break
            time.sleep(1.0)  # children (e.g. executors) may still be on their way out
            if not _group_alive(process.pid):
                break


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def running(*servers: ServerProcess) -> Iterator[tuple[ServerProcess, ...]]:
    """Stops every server on the way out (the last started first), whatever happened."""
    try:
        yield servers
    finally:
        for server in reversed(servers):
            server.stop()


@contextlib.contextmanager
def logs_kept_on_failure(request: pytest.FixtureRequest, servers: Sequence[ServerProcess]) -> Iterator[None]:
    """When a test failed while the servers served it, print their log paths and tails.

    The logs are files under pytest's temporary folder, which pytest keeps for the last runs."""
    failed_before = request.session.testsfailed
    try:
        yield
    finally:
        if request.session.testsfailed > failed_before:
            _to_terminal(request, "\n".join(["", "Server logs, kept:", *(server.report() for server in servers)]))


def _to_terminal(request: pytest.FixtureRequest, text: str) -> None:
    # Output captured during a fixture's teardown is shown only when the teardown itself fails.
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
        print(text, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class StandaloneCluster:
    """A running Spark standalone master with one worker."""

    master: ServerProcess
    worker: ServerProcess
    port: int
    web_port: int
    work_dir: Path

    @property
    def url(self) -> str:
        return f"spark://{LOCALHOST}:{self.port}"

    @property
    def web_url(self) -> str:
        return f"http://{LOCALHOST}:{self.web_port}"

    @property
    def servers(self) -> tuple[ServerProcess, ServerProcess]:
        return (self.master, self.worker)

    def state(self) -> dict[str, Any]:
        """The master's view (its web UI's /json/): workers, activeapps, completedapps, ..."""
        state = http_json(f"{self.web_url}/json/")
        if not isinstance(state, dict):
            raise ServerError(f"the master's web UI does not answer at {self.web_url}/json/\n{self.master.report()}")
        return state

    def alive_workers(self) -> int:
        state = http_json(f"{self.web_url}/json/")
        if not isinstance(state, dict):
            return 0
        return sum(1 for worker in state.get("workers", []) if worker.get("state") == "ALIVE")

    def report(self) -> str:
        return "\n".join(server.report() for server in self.servers)


@contextlib.contextmanager
def standalone_cluster(folder: Path, cores: int = 1, memory: str = "1g") -> Iterator[StandaloneCluster]:
    """A Spark standalone master and one worker on 127.0.0.1, their logs and the worker's work dir
    (executor logs, app folders) under `folder`; both stopped on the way out."""
    port, web_port, worker_port, worker_web_port = free_ports(4)
    env = spark_env(folder / "conf")
    work_dir = folder / "work"
    work_dir.mkdir(parents=True, exist_ok=True)
    # The master's REST submission server would take the fixed port 6066; nothing here submits through it.
    properties = folder / "conf" / "master.properties"
    properties.write_text("spark.master.rest.enabled false\n")
    master = ServerProcess(
        "spark master",
        spark_class(
            "org.apache.spark.deploy.master.Master",
            *("--host", LOCALHOST, "--port", str(port), "--webui-port", str(web_port)),
            *("--properties-file", str(properties)),
        ),
        folder / "logs" / "master.log",
        env,
        cwd=folder,
    )
    worker = ServerProcess(
        "spark worker",
        spark_class(
            "org.apache.spark.deploy.worker.Worker",
            f"spark://{LOCALHOST}:{port}",
            *("--host", LOCALHOST, "--port", str(worker_port), "--webui-port", str(worker_web_port)),
            *("--cores", str(cores), "--memory", memory, "--work-dir", str(work_dir)),
        ),
        folder / "logs" / "worker.log",
        env,
        cwd=folder,
    )
    cluster = StandaloneCluster(master, worker, port, web_port, work_dir)
    with running(master, worker):
        master.start()
        master.wait_until(lambda: http_json(f"{cluster.web_url}/json/") is not None, "web UI answering")
        worker.start()
        worker.wait_until(lambda: cluster.alive_workers() >= 1, "registration with the master")
        yield cluster
