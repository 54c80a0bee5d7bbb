"""delta-sync's command line in real processes, on the path a user's command takes.

Two paths, and a CLI test module states which it takes (the `cli_path` fixture, or `Cli(root, path)`):
- ENGINE: as at a terminal. The first command of a project starts the warm engine; the others borrow its
  JVM. The project's engine is stopped when its test ends (`Cli.close`), so none outlives a test.
- IN_PROCESS: as on CI (`CI=true`): every command starts Spark in its own process.

A module whose tests hold for both paths parametrises over PATHS; its tests then run once each way. A long story
(kills and resumes) may instead take some steps one way and the rest the other (`Cli.use`), as a user who runs
one command at a terminal and the next in a CI job would.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

ENGINE = "engine"
IN_PROCESS = "in-process"
PATHS = (ENGINE, IN_PROCESS)
# Variables of the test run's own environment that would choose the path for the command.
_CHOOSERS = ("DELTA_SYNC_NO_ENGINE", "DELTA_SYNC_ENGINE", "CI", "DELTA_SYNC_HOME")


def environ(path: str, extra: Mapping[str, str | None] | None = None) -> dict[str, str]:
    """The command's environment: the test run's, the path chosen, then `extra` (None removes a variable)."""
    env = {k: v for k, v in os.environ.items() if k not in _CHOOSERS}
    env["COLUMNS"] = "200"
    if path == IN_PROCESS:
        env["CI"] = "true"
    else:
        # Long enough for a loaded machine between two commands, short enough that a stray engine goes away.
        env.setdefault("DELTA_SYNC_ENGINE_IDLE", "300")
    for key, value in (extra or {}).items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


class Cli:
    """One project folder and the path its commands take."""

    def __init__(self, root: Path, path: str, env: str = "local") -> None:
        assert path in PATHS, path
        self.root = root
        self.path = path
        self.env = env
        self.homes: set[Path] = set()  # catalog folders given to commands by DELTA_SYNC_HOME

    def use(self, path: str) -> None:
        """Take the other path from the next command on; leaving the engine stops it (its catalog is free)."""
        assert path in PATHS, path
        if self.path == ENGINE and path != ENGINE:
            self.close()
        self.path = path

    def start(
        self, args: list[str], cwd: Path | None = None, env: Mapping[str, str | None] | None = None, stdin: bool = False
    ) -> subprocess.Popen[str]:
        if env and env.get("DELTA_SYNC_HOME"):
            self.homes.add(Path(str(env["DELTA_SYNC_HOME"])))
        return subprocess.Popen(
            [sys.executable, "-m", "delta_sync", *args],
            cwd=cwd or self.root,
            env=environ(self.path, env),
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )

    def run(
        self,
        args: list[str],
        cwd: Path | None = None,
        env: Mapping[str, str | None] | None = None,
        stdin: str | None = None,
        timeout: float = 600,
    ) -> subprocess.CompletedProcess[str]:
        process = self.start(args, cwd, env, stdin is not None)
        try:
            out, err = process.communicate(stdin, timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            raise
        return subprocess.CompletedProcess(args, process.returncode, out, err)

    def engine(self, env: str | None = None) -> dict[str, object] | None:
        """The engine's state file for an environment of this project, if one runs."""
        path = self.root / ".delta-sync" / (env or self.env) / "engine" / "engine.json"
        try:
            found: dict[str, object] = json.loads(path.read_text())
        except (OSError, ValueError):
            return None
        return found

    def close(self) -> None:
        """Stop every engine of this project: its environments' and those of the homes its commands were given."""
        homes = self.root / ".delta-sync"
        stop_engines(*(homes.iterdir() if homes.is_dir() else ()), *self.homes)


def stop_engines(*homes: Path) -> None:
    """Stop the engines of these catalog folders: asked to (SIGTERM: they drain and stop), killed if they do not."""
    for home in homes:
        try:
            found = json.loads((home / "engine" / "engine.json").read_text())
        except (OSError, ValueError):
            continue
        with contextlib.suppress(ProcessLookupError, TypeError, ValueError):
            os.kill(int(found["pid"]), signal.SIGTERM)
        if not _wait_gone(found.get("jvm_pid"), 60):
            for pid in (found.get("pid"), found.get("jvm_pid")):
                with contextlib.suppress(ProcessLookupError, TypeError, ValueError):
                    os.kill(int(str(pid)), signal.SIGKILL)
            _wait_gone(found.get("jvm_pid"), 30)
        _wait_gone(found.get("pid"), 30)


def _wait_gone(pid: object, timeout: float) -> bool:
    try:
        number = int(str(pid))
    except ValueError:
        return True
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(number, 0)
        except ProcessLookupError:
            return True
        stat = Path(f"/proc/{number}/stat")
        with contextlib.suppress(OSError, IndexError):
            if stat.read_text().rsplit(") ", 1)[1].startswith("Z"):
                return True
        time.sleep(0.1)
    return False
