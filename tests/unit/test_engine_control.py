"""The warm engine's pure parts, with real sockets on 127.0.0.1 and no JVM.

`delta_sync.processes.daemon.Control` (token check, leases, idle time, stop, draining, status, the report of a
command that died holding its lease) runs in a thread with a recording `stop` and a recording lender (the JVM
side: gateways lent and taken back, jobs cancelled by tag); the command side
(`delta_sync.spark.engine_*`) and the entry point's choice of forwarding (`delta_sync.cli.launch`) are called directly.
The engine with Spark, and the preloaded process's forks, are tested end to end in tests/spark/test_engine.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import stat
import struct
import subprocess
import sys
import threading
import time
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import pytest

from delta_sync.cli import launch
from delta_sync.model.errors import CatalogError, SetupError
from delta_sync.processes import daemon
from delta_sync.spark import engine_borrow, engine_control, engine_identity
from delta_sync.version import __version__

VERSION = f"{__version__}+0123456789ab"
SETTINGS = "settings-key-0001"
GATEWAY: dict[str, Any] = {"port": 25333, "secret": "gateway-secret"}
JVM_PID = 4321
ALTER = "ALTER TABLE main.sales.orders ADD COLUMNS (note STRING)"


class Lender:
    """Records what the engine asks of the JVM side."""

    def __init__(self) -> None:
        self.lent = 0
        self.cancelled: list[list[str]] = []
        self.taken_back: list[tuple[int, list[str]]] = []
        self.settled: list[bool] = []  # for each take_back: whether it waited for a statement in flight
        self.landing = threading.Event()  # a settling take_back returns once this is set (the statement landed)
        self.landing.set()
        self.fail_lend = False

    def lend(self) -> tuple[dict[str, Any], int]:
        if self.fail_lend:
            raise RuntimeError("py4j is gone")
        self.lent += 1
        return dict(GATEWAY), self.lent

    def cancel(self, tags: list[str]) -> None:
        self.cancelled.append(tags)

    def take_back(self, handle: int, tags: list[str], settle: bool) -> None:
        self.settled.append(settle)
        if settle:
            self.landing.wait(30)
        self.taken_back.append((handle, tags))

    def figures(self) -> dict[str, Any]:
        return {"gateways": self.lent - len(self.taken_back), "gateway_objects": 0, "heap_used_mb": 1.0}


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Engine:
    control: daemon.Control
    clock: Clock
    home: Path
    stops: list[bool] = field(default_factory=list)
    lender: Lender = field(default_factory=Lender)

    def state(self, *, port: int | None = None, pid: int | None = None) -> engine_control.EngineState:
        return engine_control.EngineState(
            pid=os.getpid() if pid is None else pid,
            jvm_pid=JVM_PID if pid is None else pid,
            port=self.control.port if port is None else port,
            token=self.control.token,
            version=VERSION,
            settings=SETTINGS,
            started=self.control.started,
            idle=self.control.idle,
        )

    def ask(self, message: dict[str, Any], token: str | None = None) -> dict[str, Any]:
        sock, reader, answer = engine_control.request(self.state(), message, token)
        reader.close()
        sock.close()
        return answer

    def status(self) -> dict[str, Any]:
        return self.ask({"op": "status"})

    def lease(
        self,
        pid: int = 4242,
        command: str = "delta-sync apply --env dev",
        *,
        version: str = VERSION,
        settings: str = SETTINGS,
    ) -> tuple[socket.socket, IO[bytes], dict[str, Any]]:
        message = {"op": "lease", "version": version, "settings": settings, "pid": pid, "command": command}
        return engine_control.request(self.state(), message)

    def borrow(self, pid: int = 4242, command: str = "delta-sync apply --env dev") -> engine_control.Lease:
        sock, reader, answer = self.lease(pid, command)
        assert answer["ok"] is True
        return engine_control.Lease(sock, reader, answer, self.state())


def eventually(check: Callable[[], bool], timeout: float = 3.0) -> bool:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def few_ticks() -> None:
    """Long enough for the idle watcher (TICK = 0.02 s here) to have looked several times."""
    time.sleep(0.15)


def dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def send_raw(port: int, data: bytes) -> bytes:
    """Send bytes as they are, then read the answer until the engine closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := sock.recv(4096):
            answer += chunk
    return answer


def kill(sock: socket.socket, reader: IO[bytes]) -> None:
    """What SIGKILL does to a command's end of its lease: the connection closes, no "done"."""
    reader.close()
    sock.close()


@pytest.fixture
def start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Engine]]:
    monkeypatch.setattr(daemon, "TICK", 0.02)
    started: list[Engine] = []

    def make(idle: float = 3600.0, real_clock: bool = False) -> Engine:
        clock = Clock()
        stops: list[bool] = []
        lender = Lender()
        control = daemon.Control(
            tmp_path,
            VERSION,
            SETTINGS,
            idle,
            lender,
            JVM_PID,
            lambda: stops.append(False),
            time.monotonic if real_clock else clock,
        )
        engine = Engine(control, clock, tmp_path, stops, lender)
        started.append(engine)
        threading.Thread(target=control.serve, daemon=True).start()
        return engine

    yield make
    for engine in started:
        engine.control.draining = True  # its idle watcher ends
        with contextlib.suppress(OSError):
            engine.control.server.shutdown(socket.SHUT_RDWR)  # wakes the accept loop
        engine.control.server.close()


@pytest.fixture
def engine(start: Callable[..., Engine]) -> Engine:
    made: Engine = start()
    return made


# -- the token -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["lease", "status", "stop"])
def test_a_wrong_token_is_refused_without_the_gateway(engine: Engine, op: str) -> None:
    message = {"op": op, "version": VERSION, "settings": SETTINGS, "pid": 1, "command": "delta-sync plan"}
    answer = engine.ask(message, token="0" * 64)
    assert answer["ok"] is False
    assert "token" in answer["error"]
    assert "gateway" not in answer
    assert GATEWAY["secret"] not in json.dumps(answer)
    status = engine.status()
    assert (status["served"], status["commands"], status["stopping"]) == (0, [], False)


@pytest.mark.parametrize(
    "message",
    [
        {"op": "lease", "version": VERSION, "settings": SETTINGS},
        {"op": "lease", "version": VERSION, "settings": SETTINGS, "token": ""},
        {"op": "lease", "version": VERSION, "settings": SETTINGS, "token": None},
        ["lease"],
        None,
    ],
)
def test_a_missing_token_is_refused(engine: Engine, message: Any) -> None:
    answer = json.loads(send_raw(engine.control.port, json.dumps(message).encode() + b"\n"))
    assert answer["ok"] is False
    assert "token" in answer["error"]
    assert "gateway" not in answer
    assert engine.status()["served"] == 0


def test_the_token_of_another_engine_is_refused(start: Callable[..., Engine]) -> None:
    first, second = start(), start()
    assert first.control.token != second.control.token
    assert len(first.control.token) == 64
    answer = first.ask({"op": "status"}, token=second.control.token)
    assert answer["ok"] is False
    assert "pid" not in answer


@pytest.mark.parametrize("garbage", [b"not json\n", b"\xff\xfe\x00\n", b'{"op": "lease", "tok'])
def test_garbage_is_dropped_and_the_engine_still_answers(engine: Engine, garbage: bytes) -> None:
    assert send_raw(engine.control.port, garbage) == b""  # dropped: no answer at all
    status = engine.status()
    assert status["ok"] is True
    assert status["served"] == 0
    assert engine.stops == []


def test_an_unknown_request_is_named(engine: Engine) -> None:
    answer = engine.ask({"op": "explode"})
    assert answer == {"ok": False, "error": "unknown request 'explode'"}


# -- leases and status -----------------------------------------------------------------------------------


def test_a_lease_lends_the_gateway_and_status_lists_the_command(engine: Engine) -> None:
    engine.clock.now = 1010.0
    sock, reader, answer = engine.lease(pid=4242, command="delta-sync apply --env dev")
    lease = engine_control.Lease(sock, reader, answer, engine.state())
    assert answer == {"ok": True, "gateway": GATEWAY, "pid": os.getpid()}

    engine.clock.now = 1012.5
    status = engine.status()
    assert status["commands"] == [{"pid": 4242, "command": "delta-sync apply --env dev", "seconds": 2.5}]
    assert (status["served"], status["idle_for"], status["stopping"]) == (1, 0.0, False)
    assert (status["pid"], status["jvm_pid"], status["version"]) == (os.getpid(), JVM_PID, VERSION)
    assert (status["home"], status["idle_timeout"]) == (str(engine.home), 3600.0)
    assert "token" not in status

    engine.clock.now = 1050.0
    lease.release()
    lease.release()  # twice is harmless
    assert lease.released
    assert eventually(lambda: engine.status()["commands"] == [])
    engine.clock.now = 1053.0
    status = engine.status()
    assert status["idle_for"] == 3.0  # counted from "done", not from the start
    assert status["served"] == 1
    few_ticks()
    assert engine.stops == []
    assert not engine_control.report_path(engine.home).exists()


def test_two_leases_are_listed_apart(engine: Engine) -> None:
    first = engine.borrow(pid=11, command="delta-sync plan")
    second = engine.borrow(pid=22, command="delta-sync apply")
    status = engine.status()
    assert sorted((c["pid"], c["command"]) for c in status["commands"]) == [
        (11, "delta-sync plan"),
        (22, "delta-sync apply"),
    ]
    assert status["served"] == 2
    first.release()
    assert eventually(lambda: [c["pid"] for c in engine.status()["commands"]] == [22])
    second.release()
    assert eventually(lambda: engine.status()["commands"] == [])


@pytest.mark.parametrize(
    ("version", "settings"),
    [("0.0.1+ffffffffffff", SETTINGS), (VERSION, "other-settings")],
    ids=["version", "settings"],
)
def test_another_version_or_settings_drains_the_engine(engine: Engine, version: str, settings: str) -> None:
    sock, reader, answer = engine.lease(version=version, settings=settings)
    kill(sock, reader)
    assert answer == {"ok": False, "restart": True, "version": VERSION}
    assert engine.status()["stopping"] is True
    _sock, _reader, again = engine.lease()  # the right kind now: refused all the same
    kill(_sock, _reader)
    assert again == {"ok": False, "restart": True, "version": VERSION}
    assert engine.status()["served"] == 0
    assert eventually(lambda: engine.stops == [False])


def test_try_lease_tells_a_lease_from_restart_gone_and_refusal(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["delta-sync", "apply", "--password", "hunter2"])
    lease = engine_borrow._try_lease(engine.state(), VERSION, SETTINGS, lambda s: s.replace("hunter2", "***"))
    assert isinstance(lease, engine_control.Lease)
    assert lease.answer["gateway"] == GATEWAY
    assert engine.status()["commands"][0]["command"] == "delta-sync apply --password ***"
    lease.release()
    assert eventually(lambda: engine.status()["commands"] == [])

    dead = engine.state(port=closed_port())
    assert engine_borrow._try_lease(dead, VERSION, SETTINGS, str) == "gone"
    stranger = engine_control.EngineState(**{**vars_of(engine.state()), "token": "f" * 64})
    with pytest.raises(CatalogError, match="token"):
        engine_borrow._try_lease(stranger, VERSION, SETTINGS, str)
    assert engine_borrow._try_lease(engine.state(), "9.9.9+000000000000", SETTINGS, str) == "restart"
    assert engine_borrow._try_lease(engine.state(), VERSION, SETTINGS, str) == "restart"


def vars_of(state: engine_control.EngineState) -> dict[str, Any]:
    return {name: getattr(state, name) for name in engine_control.EngineState.__slots__}


# -- stop and idle time ----------------------------------------------------------------------------------


def test_stop_without_a_lease_stops_promptly(engine: Engine) -> None:
    answer = engine.ask({"op": "stop"})
    assert answer == {"ok": True, "running": 0}
    assert eventually(lambda: engine.stops == [False], timeout=1.0)
    few_ticks()
    assert engine.stops == [False]  # once


def test_stop_waits_for_the_lease_open(engine: Engine) -> None:
    lease = engine.borrow()
    assert engine.ask({"op": "stop"}) == {"ok": True, "running": 1}
    status = engine.status()
    assert status["stopping"] is True
    assert len(status["commands"]) == 1
    sock, reader, refused = engine.lease()
    kill(sock, reader)
    assert refused == {"ok": False, "restart": True, "version": VERSION}
    few_ticks()
    assert engine.stops == []
    lease.release()
    assert eventually(lambda: engine.stops == [False], timeout=1.0)


def test_idle_time_stops_the_engine(start: Callable[..., Engine]) -> None:
    began = time.monotonic()
    engine = start(idle=0.3, real_clock=True)
    assert eventually(lambda: engine.stops == [False])
    assert time.monotonic() - began >= 0.3
    assert engine.status()["stopping"] is True  # stopping for idleness: a late command goes to a new engine
    _sock, _reader, answer = engine.lease()
    assert answer["ok"] is False
    assert answer["restart"] is True
    assert "gateway" not in answer


def test_an_event_that_is_not_an_object_does_not_strand_the_lease(engine: Engine) -> None:
    sock, reader, answer = engine.lease()
    assert answer["ok"] is True
    sock.sendall(b"[]\n42\n")
    sock.sendall(b'{"op": "done"}\n')
    assert eventually(lambda: engine.status()["commands"] == [])
    assert engine.stops == []
    kill(sock, reader)


def test_idle_time_does_not_count_while_a_lease_is_open(start: Callable[..., Engine]) -> None:
    engine = start(idle=0.3, real_clock=True)
    lease = engine.borrow()
    time.sleep(0.5)
    assert engine.stops == []
    done = time.monotonic()
    lease.release()
    assert eventually(lambda: engine.stops == [False])
    assert time.monotonic() - done >= 0.3  # counted again from the lease's end


def test_idle_time_by_the_clock(engine: Engine) -> None:
    engine.clock.now += 3599.0
    few_ticks()
    assert engine.stops == []
    assert engine.status()["idle_for"] == 3599.0
    engine.clock.now += 1.0
    assert eventually(lambda: engine.stops == [False], timeout=1.0)


def test_idle_time_by_the_clock_with_a_lease_open(engine: Engine) -> None:
    lease = engine.borrow()
    engine.clock.now += 7200.0
    few_ticks()
    assert engine.stops == []
    assert engine.status()["idle_for"] == 0.0
    lease.release()
    assert eventually(lambda: engine.status()["commands"] == [])
    few_ticks()
    assert engine.stops == []  # idle counts from the release
    engine.clock.now += 3600.0
    assert eventually(lambda: engine.stops == [False], timeout=1.0)


# -- a command that dies holding its lease ---------------------------------------------------------------


def test_a_command_killed_in_a_statement_is_reported_and_the_engine_serves_on(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    beside = engine.borrow(pid=7070, command="delta-sync plan")  # a command running beside the one that dies
    sock, reader, answer = engine.lease(pid=5151, command="delta-sync apply --env prod")
    assert answer["ok"] is True
    lease = engine_control.Lease(sock, reader, answer, engine.state())
    monkeypatch.setattr(engine_borrow, "_lease", lease)
    lease.tell("session", "spark-session-5151")
    engine_borrow.statement("running", "SELECT 1")
    engine_borrow.statement("ended", "SELECT 1")
    engine_borrow.statement("ended", "SELECT never started")  # ignored
    engine_borrow.statement("running", ALTER)
    assert eventually(lambda: any(h.running for h in engine.control._held.values()))
    kill(sock, reader)

    path = engine_control.report_path(engine.home)
    assert eventually(path.exists)
    # Its jobs cancelled and its gateway taken back (handle 2: the second lease), the engine not stopped.
    assert eventually(lambda: (2, ["spark-session-5151"]) in engine.lender.taken_back)
    (report,) = json.loads(path.read_text())
    assert (report["pid"], report["command"], report["running"]) == (5151, "delta-sync apply --env prod", [ALTER])
    assert abs(report["at"] - time.time()) < 60
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert eventually(lambda: [c["pid"] for c in engine.status()["commands"]] == [7070])
    status = engine.status()
    assert (status["died"], status["stopping"]) == (1, False)
    few_ticks()
    assert engine.stops == []
    beside.release()  # the one beside it ends as it would have
    assert eventually(lambda: (1, []) in engine.lender.taken_back)
    after = engine.borrow(pid=8080)  # and the engine takes new commands
    after.release()
    assert engine.status()["served"] == 3

    printed: list[str] = []
    monkeypatch.setattr(engine_control, "notify", printed.append)
    engine_control.take_report(engine.home)
    assert len(printed) == 1
    assert "delta-sync apply --env prod" in printed[0]
    assert "5151" in printed[0]
    assert ALTER in printed[0]
    assert "SELECT 1" not in printed[0]
    assert not path.exists()


def test_a_command_killed_in_a_statement_keeps_its_lease_awaited_until_the_statement_lands(
    start: Callable[..., Engine],
) -> None:
    engine = start(idle=0.3, real_clock=True)
    engine.lender.landing.clear()  # the statement's call has not returned yet
    sock, reader, answer = engine.lease(pid=5151, command="delta-sync sql")
    lease = engine_control.Lease(sock, reader, answer, engine.state())
    lease.tell("session", "spark-session-5151")
    lease.tell("running", ALTER)
    assert eventually(lambda: any(h.running for h in engine.control._held.values()))
    killed = time.time()
    kill(sock, reader)

    assert eventually(lambda: engine.status()["awaiting"] != [])
    status = engine.status()
    (awaited,) = status["awaiting"]
    assert (awaited["pid"], awaited["command"]) == (5151, "delta-sync sql")
    (statement,) = awaited["statements"]
    assert statement["sql"] == ALTER
    assert killed - 5 < statement["since"] <= killed + 1
    assert killed - 1 <= awaited["died"] < killed + 5
    assert status["commands"] == []  # not running: awaited
    assert engine.lender.settled == [True]
    time.sleep(0.6)  # twice the idle time: awaited, the engine does not idle out
    assert engine.stops == []

    engine.lender.landing.set()  # the statement's call returns
    assert eventually(lambda: engine.status()["awaiting"] == [])
    assert engine.lender.taken_back == [(1, ["spark-session-5151"])]
    assert eventually(lambda: engine.stops == [False])  # nothing awaited: it idles out as any idle engine


def test_a_command_killed_in_a_read_is_not_awaited(start: Callable[..., Engine]) -> None:
    engine = start(idle=0.3, real_clock=True)
    engine.lender.landing.clear()  # were it awaited, it would be until the end of the test
    sock, reader, answer = engine.lease(pid=6262, command="delta-sync plan")
    lease = engine_control.Lease(sock, reader, answer, engine.state())
    lease.tell("session", "spark-session-6262")
    lease.tell("running", ALTER)
    lease.tell("ended", ALTER)  # its statements done: what runs now is a read
    few_ticks()
    kill(sock, reader)
    assert eventually(lambda: engine.lender.taken_back == [(1, ["spark-session-6262"])])
    assert engine.lender.settled == [False]
    status = engine.status()
    assert (status["commands"], status["awaiting"], status["died"]) == ([], [], 1)
    assert eventually(lambda: engine.stops == [False])


def test_a_command_killed_between_statements_is_reported_without_one(engine: Engine) -> None:
    sock, reader, answer = engine.lease(pid=6161, command="delta-sync plan")
    lease = engine_control.Lease(sock, reader, answer, engine.state())
    lease.tell("running", ALTER)
    lease.tell("ended", ALTER)
    kill(sock, reader)
    path = engine_control.report_path(engine.home)
    assert eventually(path.exists)
    (report,) = json.loads(path.read_text())
    assert (report["pid"], report["command"], report["running"]) == (6161, "delta-sync plan", [])
    assert eventually(lambda: engine.lender.taken_back == [(1, [])])  # it never told a tag: nothing to cancel
    assert engine.stops == []


def test_two_commands_dying_are_both_reported(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    for pid in (1, 2):
        sock, reader, _answer = engine.lease(pid=pid, command=f"delta-sync apply {pid}")
        kill(sock, reader)
        assert eventually(lambda died=pid: engine.status()["died"] == died)  # type: ignore[misc]
    printed: list[str] = []
    monkeypatch.setattr(engine_control, "notify", printed.append)
    engine_control.take_report(engine.home)
    assert ["delta-sync apply 1" in printed[0], "delta-sync apply 2" in printed[1]] == [True, True]


def test_ctrl_c_cancels_the_commands_own_tag_only(engine: Engine) -> None:
    first, second = engine.borrow(pid=1), engine.borrow(pid=2)
    first.tell("session", "spark-session-first")
    first.tell("session", "spark-session-first-apply-thread")
    second.tell("session", "spark-session-second")
    first.tell("session", "")  # no tag: ignored
    first.tell("cancel")
    mine = ["spark-session-first", "spark-session-first-apply-thread"]
    assert eventually(lambda: engine.lender.cancelled == [mine])
    first.release()
    second.release()
    assert eventually(lambda: len(engine.lender.taken_back) == 2)
    assert sorted(engine.lender.taken_back) == [(1, mine), (2, ["spark-session-second"])]
    assert engine.lender.cancelled == [mine]  # the lender itself cancels what a lease left
    assert engine.stops == []


def test_a_gateway_that_cannot_be_opened_refuses_the_lease_and_the_engine_serves_on(engine: Engine) -> None:
    engine.lender.fail_lend = True
    _sock, _reader, answer = engine.lease()
    assert answer["ok"] is False
    assert "gateway" in answer["error"]
    assert engine.status()["commands"] == []
    engine.lender.fail_lend = False
    engine.borrow().release()
    assert engine.stops == []


def test_a_lease_after_done_is_no_report(engine: Engine) -> None:
    lease = engine.borrow()
    lease.tell("running", ALTER)
    lease.release()
    lease.tell("ended", ALTER)  # after release: not sent, no error
    assert eventually(lambda: engine.status()["commands"] == [])
    few_ticks()
    assert engine.stops == []
    assert not engine_control.report_path(engine.home).exists()


def test_take_report_names_the_command_and_the_statement(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    printed: list[str] = []
    monkeypatch.setattr(engine_control, "notify", printed.append)
    at = time.mktime((2025, 3, 4, 5, 6, 7, 0, 0, -1))
    engine_control.write_private(
        engine_control.report_path(tmp_path), {"pid": 777, "command": "delta-sync apply", "running": [ALTER], "at": at}
    )
    engine_control.take_report(tmp_path)
    assert printed == [
        f"The earlier command `delta-sync apply` (pid 777) died at 2025-03-04 05:06:07 while it ran:\n  {ALTER}\n"
        "The engine cancelled its Spark jobs, so that statement either committed in full or not at all; "
        "`delta-sync plan` shows what is left, and re-running the command finishes it."
    ]
    assert not engine_control.report_path(tmp_path).exists()
    engine_control.take_report(tmp_path)
    assert len(printed) == 1  # once


def test_take_report_without_a_statement(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    printed: list[str] = []
    monkeypatch.setattr(engine_control, "notify", printed.append)
    engine_control.write_private(
        engine_control.report_path(tmp_path), {"pid": 9, "command": "delta-sync plan", "running": [], "at": 0}
    )
    engine_control.take_report(tmp_path)
    assert len(printed) == 1
    assert "`delta-sync plan` (pid 9)" in printed[0]
    assert "in the engine, which cancelled its Spark jobs" in printed[0]
    assert "while it ran" not in printed[0]


def test_take_report_with_nothing_to_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    printed: list[str] = []
    monkeypatch.setattr(engine_control, "notify", printed.append)
    engine_control.take_report(tmp_path)
    engine_control.report_path(tmp_path).parent.mkdir(parents=True)
    engine_control.report_path(tmp_path).write_text("{not json")
    engine_control.take_report(tmp_path)
    assert printed == []


# -- files -----------------------------------------------------------------------------------------------


def test_write_private_is_owner_only_and_atomic(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "engine.json"
    old_umask = os.umask(0)
    try:
        engine_control.write_private(path, {"token": "abc"})
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        engine_control.write_private(path, {"token": "def", "n": 2})
    finally:
        os.umask(old_umask)
    assert json.loads(path.read_text()) == {"token": "def", "n": 2}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["engine.json"]  # no partial file left
    # Its folder is the owner's alone whatever the umask (another user could otherwise swap the file).
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_a_folder_others_could_write_is_made_private(tmp_path: Path) -> None:
    folder = tmp_path / "engine"
    folder.mkdir()
    folder.chmod(0o777)
    engine_control.write_private(folder / "engine.json", {"token": "abc"})
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_engine_state_reads_what_publish_wrote(engine: Engine) -> None:
    assert engine_control.EngineState.read(engine.home) is None
    engine.control.publish()
    assert stat.S_IMODE(engine_control.state_path(engine.home).stat().st_mode) == 0o600
    state = engine_control.EngineState.read(engine.home)
    assert state == engine_control.EngineState(
        pid=os.getpid(),
        jvm_pid=JVM_PID,
        port=engine.control.port,
        token=engine.control.token,
        version=VERSION,
        settings=SETTINGS,
        started=engine.control.started,
        idle=3600.0,
    )


@pytest.mark.parametrize(
    "text",
    ["", "garbage", "{", "null", "[1, 2]", '"engine"', '{"pid": 1, "jvm_pid": 2, "port": 3, "token": "t"}'],
)
def test_engine_state_is_none_for_a_bad_file(tmp_path: Path, text: str) -> None:
    engine_control.state_path(tmp_path).parent.mkdir(parents=True)
    engine_control.state_path(tmp_path).write_text(text)
    assert engine_control.EngineState.read(tmp_path) is None


# -- stop_engine and engine_status -----------------------------------------------------------------------


def test_stop_engine_asks_the_engine_and_drops_its_state(engine: Engine) -> None:
    gone = dead_pid()
    lease = engine.borrow()
    engine_control.write_private(engine_control.state_path(engine.home), vars_of(engine.state(pid=gone)))
    waits: list[int] = []
    stopped = engine_control.stop_engine(engine.home, waits.append, timeout=5)
    assert stopped is not None
    assert (stopped.pid, stopped.jvm_pid, stopped.port) == (gone, gone, engine.control.port)
    assert engine.control.draining is True
    assert waits == [1]  # told that one command runs
    assert not engine_control.state_path(engine.home).exists()
    lease.release()
    assert eventually(lambda: engine.stops == [False])


def test_stop_engine_without_an_engine(tmp_path: Path) -> None:
    assert engine_control.stop_engine(tmp_path) is None


def test_stop_engine_when_nothing_answers_drops_the_state(engine: Engine) -> None:
    gone = dead_pid()
    engine_control.write_private(
        engine_control.state_path(engine.home), vars_of(engine.state(port=closed_port(), pid=gone))
    )
    waits: list[int] = []
    stopped = engine_control.stop_engine(engine.home, waits.append, timeout=5)
    assert stopped is not None
    assert stopped.pid == gone
    assert waits == []
    assert not engine_control.state_path(engine.home).exists()
    assert engine.control.draining is False  # another engine's port: this one was not asked


def test_stop_engine_gives_up_on_an_engine_that_stays(engine: Engine) -> None:
    engine.control.publish()  # pid: this process, which does not go away
    with pytest.raises(CatalogError, match=rf"pid {os.getpid()}\) did not stop"):
        engine_control.stop_engine(engine.home, timeout=0.1)
    assert engine.control.draining is True
    assert engine_control.state_path(engine.home).exists()


def test_engine_status_asks_the_engine(engine: Engine) -> None:
    assert engine_control.engine_status(engine.home) is None
    engine.control.publish()
    lease = engine.borrow(pid=31, command="delta-sync apply")
    found = engine_control.engine_status(engine.home)
    assert found is not None
    assert (found["ok"], found["pid"], found["jvm_pid"], found["version"]) == (True, os.getpid(), JVM_PID, VERSION)
    assert [(c["pid"], c["command"]) for c in found["commands"]] == [(31, "delta-sync apply")]
    lease.release()


def test_engine_status_is_none_when_nothing_answers(engine: Engine) -> None:
    engine_control.write_private(engine_control.state_path(engine.home), vars_of(engine.state(port=closed_port())))
    assert engine_control.engine_status(engine.home) is None


def test_request_to_nothing_is_unreachable(engine: Engine) -> None:
    with pytest.raises(engine_control.Unreachable):
        engine_control.request(engine.state(port=closed_port()), {"op": "status"})


def test_alive_and_wait_gone() -> None:
    assert engine_control.alive(os.getpid())
    gone = dead_pid()
    assert not engine_control.alive(gone)
    assert engine_control.wait_gone(gone, 0.1)
    assert not engine_control.wait_gone(os.getpid(), 0.05)
    child = subprocess.Popen(["true"])
    assert eventually(lambda: not engine_control.alive(child.pid))  # exited, not reaped yet: gone all the same
    child.wait()


# -- settings --------------------------------------------------------------------------------------------


@pytest.fixture
def enabled() -> Iterator[None]:
    engine_control.enable(True)
    yield
    engine_control.enable(False)


def test_wanted_is_off_unless_the_command_line_turns_it_on() -> None:
    engine_control.enable(False)
    assert engine_control.wanted("local[*]", {}) is False


@pytest.mark.usefixtures("enabled")
@pytest.mark.parametrize(
    ("master", "environ", "expected"),
    [
        ("local[*]", {}, True),
        ("local", {}, True),
        (" local[2] ", {}, True),
        ("local[*]", {"DELTA_SYNC_NO_ENGINE": "1"}, False),
        ("local[*]", {"DELTA_SYNC_NO_ENGINE": "TRUE"}, False),
        ("local[*]", {"DELTA_SYNC_NO_ENGINE": "0"}, True),
        ("local[*]", {"DELTA_SYNC_NO_ENGINE": ""}, True),
        ("local[*]", {"CI": "true"}, False),
        ("local[*]", {"CI": "true", "DELTA_SYNC_ENGINE": "1"}, True),
        ("local[*]", {"CI": "true", "DELTA_SYNC_ENGINE": "0"}, False),
        ("local[*]", {"CI": "false"}, True),
        ("local[*]", {"CI": "1", "DELTA_SYNC_ENGINE": "yes", "DELTA_SYNC_NO_ENGINE": "1"}, False),
        ("spark://h:7077", {}, False),
        ("yarn", {}, False),
        ("k8s://https://k:6443", {}, False),
    ],
)
def test_wanted(master: str, environ: dict[str, str], expected: bool) -> None:
    assert engine_control.wanted(master, environ) is expected


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("", 600.0), ("  ", 600.0), ("90", 90.0), ("30s", 30.0), ("10m", 600.0), ("1h", 3600.0), ("1.5m", 90.0)],
)
def test_idle_seconds(text: str, seconds: float) -> None:
    assert engine_control.idle_seconds({"DELTA_SYNC_ENGINE_IDLE": text}) == seconds


def test_idle_seconds_default() -> None:
    assert engine_control.idle_seconds({}) == 600.0


@pytest.mark.parametrize("text", ["soon", "10d", "-5", "m", "1h30m"])
def test_idle_seconds_refuses_what_is_not_a_duration(text: str) -> None:
    with pytest.raises(SetupError, match="DELTA_SYNC_ENGINE_IDLE") as caught:
        engine_control.idle_seconds({"DELTA_SYNC_ENGINE_IDLE": text})
    assert f"`{text}`" in str(caught.value)


def test_settings_key_changes_with_what_the_engine_is_started_with() -> None:
    base = engine_identity.settings_key("local[*]", {"a": "1", "b": "2"}, 600.0, {})
    assert len(base) == 16
    assert base == engine_identity.settings_key("local[*]", {"b": "2", "a": "1"}, 600.0, {})
    others = {
        engine_identity.settings_key("local[*]", {"a": "1", "b": "3"}, 600.0, {}),
        engine_identity.settings_key("local[*]", {"a": "1"}, 600.0, {}),
        engine_identity.settings_key("local[2]", {"a": "1", "b": "2"}, 600.0, {}),
        engine_identity.settings_key("local[*]", {"a": "1", "b": "2"}, 60.0, {}),
        engine_identity.settings_key("local[*]", {"a": "1", "b": "2"}, 600.0, {"JAVA_HOME": "/opt/jdk"}),
    }
    assert len(others) == 5
    assert base not in others


def test_engine_version() -> None:
    version = engine_identity.engine_version()
    assert version.startswith(__version__ + "+")
    fingerprint = version.removeprefix(__version__ + "+")
    assert len(fingerprint) == 12
    assert int(fingerprint, 16) >= 0
    assert engine_identity.engine_version() == version


# -- the entry point -------------------------------------------------------------------------------------


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ("DELTA_SYNC_NO_ENGINE", "CI", "DELTA_SYNC_ENGINE"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.mark.parametrize(
    ("args", "environ", "off"),
    [
        (["plan"], {}, False),
        (["plan", "--no-engine"], {}, True),
        (["--no-engine", "plan"], {}, True),
        (["plan"], {"DELTA_SYNC_NO_ENGINE": "1"}, True),
        (["plan"], {"DELTA_SYNC_NO_ENGINE": "no"}, False),
        (["plan"], {"CI": "true"}, True),
        (["plan"], {"CI": "true", "DELTA_SYNC_ENGINE": "1"}, False),
        (["plan"], {"CI": "true", "DELTA_SYNC_ENGINE": "1", "DELTA_SYNC_NO_ENGINE": "1"}, True),
        (["plan"], {"DELTA_SYNC_ENGINE": "1"}, False),
    ],
)
def test_engine_off(clean_env: pytest.MonkeyPatch, args: list[str], environ: dict[str, str], off: bool) -> None:
    for name, value in environ.items():
        clean_env.setenv(name, value)
    assert launch.engine_off(args) is off


@dataclass
class Entry:
    forwarded: list[list[str]]
    ran_here: list[list[str]]
    code: int | None = None


@pytest.fixture
def entry(clean_env: pytest.MonkeyPatch) -> Entry:
    """launch.main with a recording forward() and a stand-in for the CLI (delta_sync.cli.main is not imported)."""
    seen = Entry([], [])

    def forward(args: list[str]) -> int | None:
        seen.forwarded.append(args)
        return seen.code

    cli = types.ModuleType("delta_sync.cli.main")
    clean_env.setattr(cli, "main", lambda: seen.ran_here.append(sys.argv[1:]), raising=False)
    clean_env.setitem(sys.modules, "delta_sync.cli.main", cli)
    clean_env.setattr(launch, "forward", forward)
    return seen


@pytest.mark.parametrize(
    ("args", "forwarded"),
    [
        ([], False),
        (["--version"], False),
        (["--help"], False),
        (["engine", "status"], False),
        (["engine", "stop", "--env", "dev"], False),
        (["plan"], True),
        (["apply", "--env", "dev"], True),
        (["--no-engine", "plan"], False),
        (["plan", "--no-engine"], False),
        (["plan", "--", "--no-engine"], True),
    ],
)
def test_main_forwards_commands_when_the_engine_may_serve(
    entry: Entry, monkeypatch: pytest.MonkeyPatch, args: list[str], forwarded: bool
) -> None:
    monkeypatch.setattr(sys, "argv", ["delta-sync", *args])
    launch.main()
    assert entry.forwarded == ([args] if forwarded else [])
    assert entry.ran_here == [args]  # forward() found no engine (None): the command runs here


def test_main_does_not_forward_on_ci(entry: Entry, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    monkeypatch.setattr(sys, "argv", ["delta-sync", "plan"])
    launch.main()
    assert (entry.forwarded, entry.ran_here) == ([], [["plan"]])


def test_main_exits_with_the_forwarded_command_code(entry: Entry, monkeypatch: pytest.MonkeyPatch) -> None:
    entry.code = 3
    monkeypatch.setattr(sys, "argv", ["delta-sync", "apply", "--env", "dev"])
    with pytest.raises(SystemExit) as caught:
        launch.main()
    assert caught.value.code == 3
    assert entry.forwarded == [["apply", "--env", "dev"]]
    assert entry.ran_here == []


@pytest.mark.parametrize(("replies", "expected"), [([777, 3], 3), ([777, 0], 0), ([777], 70), ([], None)])
def test_forward_hands_the_command_to_the_preloaded_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replies: list[int], expected: int | None
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["/bin/delta-sync", "plan"])
    handlers: list[int] = []
    monkeypatch.setattr(signal, "signal", lambda signum, _handler: handlers.append(signum))
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(engine_identity.prefork_address(tmp_path, engine_identity.engine_version()))
    listener.listen(1)
    got: dict[str, Any] = {}

    def preloaded() -> None:
        conn, _address = listener.accept()
        with conn:
            header, fds, _flags, _from = socket.recv_fds(conn, 4, 3)
            got["fds"] = len(fds)
            for fd in fds:
                os.close(fd)
            (size,) = struct.unpack("!I", header)
            payload = b""
            while len(payload) < size:
                payload += conn.recv(size - len(payload))
            got["order"] = json.loads(payload)
            for reply in replies:
                conn.sendall(struct.pack("!i", reply))

    server = threading.Thread(target=preloaded, daemon=True)
    server.start()
    try:
        assert launch.forward(["plan", "--env", "dev"]) == expected
        server.join(5)
    finally:
        listener.close()
    assert got["fds"] == 3
    assert got["order"]["argv"] == ["/bin/delta-sync", "plan", "--env", "dev"]
    assert got["order"]["cwd"] == os.getcwd()
    assert got["order"]["env"] == dict(os.environ)
    assert handlers == ([signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT] if replies else [])


def test_forward_without_a_preloaded_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert launch.forward(["plan"]) is None


def test_project_root(tmp_path: Path) -> None:
    project = tmp_path / "repo"
    deep = project / "specs" / "sales" / "orders"
    deep.mkdir(parents=True)
    (project / "delta-sync.yaml").write_text("version: 1\n")
    (project / "specs" / "delta-sync.yaml").mkdir()  # a folder of that name is no project file
    assert engine_identity.project_root(deep) == project
    assert engine_identity.project_root(project) == project
    elsewhere = tmp_path / "elsewhere" / "below"
    elsewhere.mkdir(parents=True)
    assert engine_identity.project_root(elsewhere) == elsewhere


def test_prefork_address(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    (tmp_path / "link").symlink_to(one)
    address = engine_identity.prefork_address(one, VERSION)
    assert address.startswith("\0delta-sync-")
    assert len(address) == len("\0delta-sync-") + 32
    assert address == engine_identity.prefork_address(one, VERSION)
    assert address == engine_identity.prefork_address(tmp_path / "link", VERSION)  # the folder, not its spelling
    assert address != engine_identity.prefork_address(two, VERSION)
    assert address != engine_identity.prefork_address(one, f"{__version__}+ba9876543210")


@pytest.mark.parametrize("marker", ["delta-sync.yaml", ".delta-sync"])
def test_the_preloaded_process_finds_the_project_the_command_line_finds(tmp_path: Path, marker: str) -> None:
    from delta_sync.review import environments

    root = tmp_path / "project"
    inner = root / "specs" / "shop"
    inner.mkdir(parents=True)
    if marker.endswith(".yaml"):
        (root / marker).write_text("default_env: local\n")
    else:
        (root / marker).mkdir()
    assert engine_identity.project_root(inner) == environments.project_root(inner) == root.resolve()
    assert engine_identity.project_root(tmp_path) == environments.project_root(tmp_path)


# -- an engine whose starter died ------------------------------------------------------------------------


def _sleeper(*marker: str) -> subprocess.Popen[bytes]:
    """A process whose command line says what it is (the engine's says delta_sync.processes.daemon)."""
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", *marker])


def test_an_engine_a_dead_command_was_starting_is_waited_for_not_doubled(tmp_path: Path) -> None:
    engine = _sleeper("delta_sync.processes.daemon")
    try:
        engine_control.write_private(engine_control.engine_dir(tmp_path) / "starting.json", {"pid": engine.pid})
        state = {"pid": engine.pid, "jvm_pid": 1, "port": 1, "token": "t", "version": VERSION, "settings": SETTINGS}

        def publish() -> None:
            time.sleep(0.3)
            engine_control.write_private(engine_control.state_path(tmp_path), {**state, "started": 0.0, "idle": 1.0})

        threading.Thread(target=publish).start()
        found = engine_borrow._started_by_another(tmp_path)
        assert found is not None
        assert found.pid == engine.pid
        assert not (engine_control.engine_dir(tmp_path) / "starting.json").exists()
    finally:
        engine.kill()
        engine.wait()


@pytest.mark.parametrize("what", ["exited", "not an engine", "no marker", "garbage"])
def test_no_engine_starting_means_none(tmp_path: Path, what: str) -> None:
    marker = engine_control.engine_dir(tmp_path) / "starting.json"
    other = _sleeper()
    try:
        if what == "exited":
            engine_control.write_private(marker, {"pid": dead_pid()})
        elif what == "not an engine":  # a pid reused by another program
            engine_control.write_private(marker, {"pid": other.pid})
        elif what == "garbage":
            engine_control.private_dir(marker.parent)
            marker.write_text("{")
        began = time.monotonic()
        assert engine_borrow._started_by_another(tmp_path) is None
        assert time.monotonic() - began < 5
        assert not marker.exists()
    finally:
        other.kill()
        other.wait()
