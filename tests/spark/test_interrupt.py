"""Ctrl-C during apply, as a terminal sends it (SIGINT to the whole process group), one statement at
a time: apply says which statements ran and which did not, exits 130, no py4j traceback; a re-run
finishes the plan. In-process (as on CI) and through the warm engine (as at a terminal), where Ctrl-C
cancels that command's jobs in the engine's JVM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

SPECS = {
    f"t{n}.yaml": f"table: intr.t{n}\ncomment: T{n}\ncolumns:\n  - name: id\n    type: bigint\n    comment: key\n"
    f"  - name: v\n    type: string\n    comment: value\nchecks:\n  id_pos: id > 0\nproperties:\n  team: t{n}\n"
    for n in range(4)
}


PATHS = {
    "in-process": {"CI": "true"},
    "engine": {"DELTA_SYNC_ENGINE": "1", "DELTA_SYNC_ENGINE_IDLE": "120"},
}


def _env(path: str) -> dict[str, str]:
    inherited = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DELTA_SYNC_HOME", "CI", "DELTA_SYNC_NO_ENGINE", "DELTA_SYNC_ENGINE")
    }
    return {**inherited, "COLUMNS": "200", **PATHS[path]}


@pytest.mark.parametrize("path", sorted(PATHS))
def test_ctrl_c_during_apply_reports_what_ran_and_a_rerun_finishes(tmp_path: Path, path: str) -> None:
    (tmp_path / "specs").mkdir()
    for name, text in SPECS.items():
        (tmp_path / "specs" / name).write_text(text)
    apply = subprocess.Popen(
        [sys.executable, "-m", "delta_sync", "apply", "specs", "--yes", "--parallel", "1"],
        cwd=tmp_path,
        env=_env(path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert apply.stderr is not None
    lines = []
    for line in apply.stderr:
        lines.append(line)
        if line.startswith("✓ [2/"):
            os.killpg(apply.pid, signal.SIGINT)  # what Ctrl-C at a terminal does
            break
    stdout, stderr = apply.communicate(timeout=300)
    output = stdout + "".join(lines) + stderr
    assert apply.returncode == 130, output
    assert "Interrupted: apply stopped after" in output
    assert "not applied (" in output
    assert "Run apply again to continue" in output
    for noise in ("Traceback", "reentrant call", "py4j", "Py4J"):
        assert noise not in output, output

    rerun = subprocess.run(
        [sys.executable, "-m", "delta_sync", "apply", "specs", "--yes"],
        cwd=tmp_path,
        env=_env(path),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert "all 4 table(s) match the specs" in rerun.stderr
    if path == "engine":
        stopped = subprocess.run(
            [sys.executable, "-m", "delta_sync", "engine", "stop"],
            cwd=tmp_path,
            env=_env(path),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert "Stopped the engine" in stopped.stdout, stopped.stdout + stopped.stderr
