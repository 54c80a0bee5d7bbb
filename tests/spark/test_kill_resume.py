"""Fault injection: SIGKILL apply at 10+ points of a multi-table plan; re-runs converge and keep every row.

Every ALTER on Delta is its own commit, so a plan is not atomic. Each run below is killed right after
its first statement completes (so the kill lands at or inside the next statement); the next run re-reads
the tables and continues. The first runs apply one statement at a time, which gives the most kill points;
the later ones apply the three tables at once, so kills also land while other tables' statements are in
flight. One plan serves both (it was two modules with the same set-up, ~12 minutes of CI between them).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

V1 = {
    "a.yaml": "table: k.a\ncolumns:\n  - name: id\n    type: bigint\n  - name: v\n    type: string\n",
    "b.yaml": "table: k.b\ncolumns:\n  - name: id\n    type: bigint\n  - name: n\n    type: int\n",
    "c.yaml": "table: k.c\ncolumns:\n  - name: id\n    type: bigint\n  - name: old\n    type: string\n",
}
V2 = {
    "a.yaml": V1["a.yaml"].replace("table: k.a\n", "table: k.a\ncomment: A\n")
    + "    comment: value\n  - name: extra\n    type: string\nchecks:\n  id_pos: id > 0\nproperties:\n  team: t1\n",
    "b.yaml": V1["b.yaml"].replace("type: int", "type: bigint")
    + "  - name: w\n    type: double\nchecks:\n  n_pos: n >= 0\n  w_ok: w IS NULL OR w >= 0\nproperties:\n  team: t2\n",
    "c.yaml": "table: k.c\ncomment: C\ncolumns:\n  - name: id\n    type: bigint\n    nullable: false\n"
    "  - name: new\n    type: string\n    renamed_from: old\nchecks:\n  id_small: id < 1000000\n",
}
ALLOW = ["--allow", "irreversible,breaking,destructive"]


def cli(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != "DELTA_SYNC_HOME"}
    return subprocess.Popen(
        [sys.executable, "-m", "delta_sync", *args],
        cwd=cwd,
        env={**env, "COLUMNS": "200"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def finish(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    process = cli(args, cwd)
    out, err = process.communicate(timeout=600)
    return subprocess.CompletedProcess(args, process.returncode, out, err)


def write(specs: Path, files: dict[str, str]) -> None:
    shutil.rmtree(specs, ignore_errors=True)
    specs.mkdir()
    for name, text in files.items():
        (specs / name).write_text(text)


def kill_after_first_statement(cwd: Path, parallel: int) -> bool:
    """Run apply and SIGKILL it once a statement has completed; False if it finished first."""
    process = cli(["apply", "specs", "--yes", "--parallel", str(parallel), *ALLOW], cwd)
    assert process.stderr is not None
    for line in process.stderr:
        if line.startswith("✓"):
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=60)
            return True
    process.wait(timeout=600)
    assert process.returncode == 0, process.stdout.read() if process.stdout else ""
    return False


def counts(cwd: Path) -> dict[str, list[object]]:
    query = (
        "SELECT 'a' AS t, count(*) AS n, sum(hash(id)) AS h FROM k.a UNION ALL "
        "SELECT 'b', count(*), sum(hash(id)) FROM k.b UNION ALL SELECT 'c', count(*), sum(hash(id)) FROM k.c"
    )
    done = finish(["sql", query, "--format", "json"], cwd)
    assert done.returncode == 0, done.stderr
    return {row["t"]: [row["n"], row["h"]] for row in json.loads(done.stdout)["rows"]}


SERIAL_KILLS = 9  # then parallel runs: at least one more kill, 10+ in all


def test_sigkilled_apply_resumes_and_converges(tmp_path: Path) -> None:
    specs = tmp_path / "specs"
    write(specs, V1)
    assert finish(["apply", "specs", "--yes"], tmp_path).returncode == 0
    insert = "INSERT INTO k.{t} VALUES (1, {v}), (2, {v}), (3, {v})"
    for table, value in (("a", "'x'"), ("b", "5"), ("c", "'y'")):
        assert finish(["sql", insert.format(t=table, v=value)], tmp_path).returncode == 0
    before = counts(tmp_path)

    write(specs, V2)
    planned = finish(["plan", "specs", "--format", "sql", *ALLOW], tmp_path)
    assert planned.returncode == 0, planned.stderr
    statements = [line for line in planned.stdout.splitlines() if line and not line.startswith("--")]
    # Enough that the parallel runs still have several tables' statements left after the serial kills.
    assert len(statements) >= SERIAL_KILLS + 5, planned.stdout

    for kills in range(1, SERIAL_KILLS + 1):
        assert kill_after_first_statement(tmp_path, parallel=1), f"apply finished after {kills - 1} kills"
    parallel_kills = 0
    while kill_after_first_statement(tmp_path, parallel=4):
        parallel_kills += 1
        assert parallel_kills <= len(statements), "apply made no progress between kills"
    assert parallel_kills >= 1

    replanned = finish(["plan", "specs", "--detailed-exitcode", *ALLOW], tmp_path)
    assert replanned.returncode == 0, replanned.stdout + replanned.stderr
    assert counts(tmp_path) == before
