"""The warm engine, end to end with real processes: it starts on the first command, serves two at once, gives
the same output, colours, prompts and exit codes as a command run in-process, refuses a client without its
token, cancels exactly the jobs of a command interrupted or killed in it and serves on (the statement in
flight is reported, the re-run converges, a command beside it finishes),
survives being SIGKILLed, is replaced when delta-sync's version or the settings change, and stops when idle.

One project for the whole story: each engine start costs a JVM start (~15-20 s), each in-process run one more.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

V1 = {
    "a.yaml": "table: e.a\ncolumns:\n  - name: id\n    type: bigint\n  - name: v\n    type: string\n",
    "b.yaml": "table: e.b\ncolumns:\n  - name: id\n    type: bigint\n  - name: n\n    type: int\n",
}
V2 = {
    "a.yaml": V1["a.yaml"] + "  - name: w\n    type: string\n  - name: x\n    type: int\ncomment: A\nchecks:\n"
    "  id_pos: id > 0\nproperties:\n  team: t1\n",
    "b.yaml": V1["b.yaml"] + "  - name: m\n    type: double\ncomment: B\nchecks:\n  n_pos: n >= 0\n"
    "properties:\n  team: t2\n",
}
OLD_VERSION = "0.0.0-old"
# A client whose delta-sync says it is another version: the engine it starts is of that version.
OLD_CLIENT = (
    f"import sys, delta_sync.version; delta_sync.version.__version__ = {OLD_VERSION!r}; sys.argv[0] = 'delta-sync'; "
    "from delta_sync.cli.launch import main; main()"
)


def environ(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DELTA_SYNC_NO_ENGINE", "CI", "DELTA_SYNC_HOME")}
    return {**env, "COLUMNS": "120", "DELTA_SYNC_ENGINE_IDLE": "300", **extra}


def start(args: list[str], cwd: Path, stdin: str | None = None, **extra: str) -> subprocess.Popen[str]:
    command = [sys.executable, "-c", OLD_CLIENT] if extra.pop("old", "") else [sys.executable, "-m", "delta_sync"]
    return subprocess.Popen(
        [*command, *args],
        cwd=cwd,
        env=environ(**extra),
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def run(args: list[str], cwd: Path, stdin: str | None = None, **extra: str) -> subprocess.CompletedProcess[str]:
    process = start(args, cwd, stdin, **extra)
    out, err = process.communicate(stdin, timeout=600)
    return subprocess.CompletedProcess(args, process.returncode, out, err)


SPINNER = re.compile(r"\x1b\[\?25l.*?\x1b\[\?25h(\r?\n)?", re.S)  # a status spinner, from show to hide


def shown(result: subprocess.CompletedProcess[str]) -> tuple[int, str, str]:
    """Exit code, stdout and stderr without the progress spinner (its frames differ run to run)."""
    return result.returncode, result.stdout, SPINNER.sub("", result.stderr)


def state(root: Path) -> dict[str, object] | None:
    path = root / ".delta-sync" / "local" / "engine" / "engine.json"
    return json.loads(path.read_text()) if path.exists() else None


def status(root: Path) -> dict[str, object]:
    done = run(["engine", "status", "--format", "json"], root)
    assert done.returncode == 0, done.stderr
    found: dict[str, object] = json.loads(done.stdout)
    return found


def gone(pid: int, timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        stat = Path(f"/proc/{pid}/stat")
        if stat.exists() and stat.read_text().split(") ", 1)[1].startswith("Z"):
            return True
        time.sleep(0.2)
    return False


def memory(root: Path) -> dict[str, float]:
    """The engine's figures: gateways lent, the objects in them, jobs running, heap and resident memory."""
    found = status(root)["memory"]
    assert isinstance(found, dict)
    return found


def jobs(root: Path) -> int:
    """Spark jobs running in the engine, whoever started them."""
    return int(memory(root)["active_jobs"])


def wait_for(check: Callable[[], bool], timeout: float = 120) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.3)
    return False


def write(root: Path, files: dict[str, str]) -> None:
    specs = root / "specs"
    specs.mkdir(exist_ok=True)
    for name, text in files.items():
        (specs / name).write_text(text)


@pytest.fixture
def project(tmp_path: Path):  # type: ignore[no-untyped-def]
    write(tmp_path, V1)
    yield tmp_path
    found = state(tmp_path)
    if found is not None:  # never leave an engine behind a failed test
        for pid in (found["pid"], found["jvm_pid"]):
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(str(pid)), signal.SIGKILL)


def test_the_engine_serves_commands_as_they_run_in_process(project: Path) -> None:
    root = project
    # In-process, as on CI: the golden output. No engine is started.
    golden_plan = run(["plan", "specs", "--detailed-exitcode"], root, CI="true", FORCE_COLOR="1")
    assert golden_plan.returncode == 2, golden_plan.stderr
    golden_prompt = run(["--no-engine", "apply", "specs"], root, stdin="n\n", FORCE_COLOR="1")
    assert state(root) is None
    assert "No engine is running" in run(["engine", "status"], root).stdout

    # The first command starts the engine; output, colours and exit code are the in-process ones.
    first = run(["plan", "specs", "--detailed-exitcode"], root, FORCE_COLOR="1")
    assert "Starting the delta-sync engine" in first.stderr
    assert shown(first) == shown(golden_plan)
    assert "\x1b[" in first.stdout  # coloured, as in-process with FORCE_COLOR
    engine = status(root)
    assert engine["running"] is True
    assert engine["served"] == 1
    pid, jvm_pid = int(str(engine["pid"])), int(str(engine["jvm_pid"]))

    # A prompt answered through the engine, as in-process.
    prompt = run(["apply", "specs"], root, stdin="n\n", FORCE_COLOR="1")
    assert shown(prompt) == shown(golden_prompt)

    # Two commands at once share the catalog (in-process, Derby would refuse the second).
    both = [start(["plan", "specs", "--detailed-exitcode"], root), start(["sql", "SELECT 1 AS one"], root)]
    results = [(*p.communicate(timeout=300), p.returncode) for p in both]
    assert results[0][2] == 2, results[0]
    assert "create table e.a" in results[0][0], results[0]
    assert results[1][2] == 0, results[1]
    assert "one" in results[1][0], results[1]

    # In-process while the engine holds the catalog: one sentence that says how.
    refused = run(["--no-engine", "plan", "specs"], root)
    assert refused.returncode == 1
    assert "held by the delta-sync engine" in refused.stderr
    assert "Traceback" not in refused.stderr

    # The engine's door: a client without the token learns nothing, and its JVM wants its own secret.
    found = state(root)
    assert found is not None
    assert oct((root / ".delta-sync" / "local" / "engine" / "engine.json").stat().st_mode & 0o777) == oct(0o600)
    with socket.create_connection(("127.0.0.1", int(str(found["port"]))), timeout=10) as sock:
        sock.sendall(json.dumps({"op": "lease", "token": "guess", "version": "x", "settings": "y"}).encode() + b"\n")
        answer = json.loads(sock.makefile("rb").readline())
    assert answer["ok"] is False
    assert "token" in answer["error"]
    assert "gateway" not in answer
    assert status(root)["stopping"] is False

    # Apply through the engine, then a re-plan is empty.
    applied = run(["apply", "specs", "--yes"], root)
    assert applied.returncode == 0, applied.stderr
    assert run(["plan", "specs", "--detailed-exitcode"], root).returncode == 0

    # Ctrl-C cancels exactly its own work: a query running beside it finishes with its answer.
    endless = "SELECT count(*) AS n FROM range(10000000000000) a WHERE a.id % 7 = 3"
    finite = "SELECT count(*) AS n FROM range(2000000000) a WHERE a.id % 7 = 3"  # a few seconds
    beside = start(["sql", finite, "--format", "json"], root)
    interrupted = start(["sql", endless], root)
    assert wait_for(lambda: jobs(root) >= 2), "the two queries never ran at once"
    os.killpg(interrupted.pid, signal.SIGINT)  # what Ctrl-C at a terminal does
    out, err = interrupted.communicate(timeout=120)
    assert interrupted.returncode == 130, err
    assert "Interrupted." in err
    assert "Traceback" not in err + out
    beside_out, beside_err = beside.communicate(timeout=600)
    assert beside.returncode == 0, beside_err
    assert json.loads(beside_out)["rows"] == [{"n": 285714286}]
    assert wait_for(lambda: jobs(root) == 0, 60), "the interrupted query's job runs on in the engine"

    # A command SIGKILLed mid-apply harms no other: the query beside it finishes; then a query SIGKILLed while its
    # job runs has that job cancelled (it would run for hours); the engine serves on throughout.
    write(root, V2)
    beside = start(["sql", finite, "--format", "json"], root)
    apply = start(["apply", "specs", "--yes", "--parallel", "1", "--allow", "breaking"], root)
    assert apply.stderr is not None
    for line in apply.stderr:
        if line.startswith("✓"):
            os.killpg(apply.pid, signal.SIGKILL)
            break
    apply.wait(timeout=60)
    assert apply.returncode == -signal.SIGKILL, "apply finished before the kill"
    beside_out, beside_err = beside.communicate(timeout=600)
    assert beside.returncode == 0, beside_err
    assert json.loads(beside_out)["rows"] == [{"n": 285714286}]
    killed_query = start(["sql", endless], root)
    assert wait_for(lambda: jobs(root) >= 1), "the query never started its job"
    os.killpg(killed_query.pid, signal.SIGKILL)
    killed_query.wait(timeout=60)
    assert wait_for(lambda: jobs(root) == 0, 60), "a dead command's job runs on in the engine"
    served_on = status(root)
    assert (served_on["pid"], served_on["jvm_pid"], served_on["stopping"]) == (pid, jvm_pid, False)
    assert served_on["died"] == 2
    # The first command after a death names it: the query started after the apply's death named the apply.
    assert killed_query.stderr is not None
    assert "The earlier command `delta-sync apply specs" in killed_query.stderr.read()
    report = json.loads((root / ".delta-sync" / "local" / "engine" / "killed.json").read_text())
    assert [r["command"].split()[1] for r in report] == ["sql"]
    rerun = run(["apply", "specs", "--yes", "--allow", "breaking"], root)
    assert rerun.returncode == 0, rerun.stderr
    assert "The earlier command `delta-sync sql" in rerun.stderr
    assert run(["plan", "specs", "--detailed-exitcode"], root).returncode == 0
    # Every command's gateway, with the objects in it, went with its lease (status itself takes none).
    assert wait_for(lambda: memory(root)["gateways"] == 0, 30)
    assert status(root)["pid"] == pid

    # `engine stop`, then an engine of another version: the next command replaces it.
    stopped = run(["engine", "stop"], root)
    assert stopped.returncode == 0
    assert "Stopped the engine" in stopped.stdout
    old = run(["plan", "specs", "--detailed-exitcode"], root, old="1")
    assert old.returncode == 0, old.stderr
    assert str(status(root)["version"]).startswith(OLD_VERSION + "+")
    new = run(["plan", "specs", "--detailed-exitcode"], root, DELTA_SYNC_ENGINE_IDLE="120")
    assert new.returncode == 0, new.stderr
    assert "Restarting the delta-sync engine" in new.stderr
    replaced = status(root)
    assert not str(replaced["version"]).startswith(OLD_VERSION)

    # SIGKILL of the engine itself: the next command starts a new one.
    os.kill(int(str(replaced["pid"])), signal.SIGKILL)
    # Another idle time is another setting too: this engine is new whatever happened to the last one.
    after = run(["plan", "specs", "--detailed-exitcode"], root, DELTA_SYNC_ENGINE_IDLE="10")
    assert after.returncode == 0, after.stderr
    assert "Starting the delta-sync engine" in after.stderr
    last = status(root)
    assert last["pid"] != replaced["pid"]

    # Idle for its idle time: it stops by itself, JVM and all.
    assert gone(int(str(last["pid"])), 240)  # its JVM may first write the class archive (once)
    assert gone(int(str(last["jvm_pid"])), 60)
    assert state(root) is None
    assert run(["engine", "stop"], root).stdout.startswith("No engine was running")
