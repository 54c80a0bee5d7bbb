"""Fault injection: SIGKILL apply at 10+ points of a multi-table plan; re-runs converge and keep every row.

Every ALTER on Delta is its own commit, so a plan is not atomic. Each run below is killed right after
its first statement completes (so the kill lands at or inside the next statement); the next run re-reads
the tables and continues. The first runs apply one statement at a time, which gives the most kill points;
the later ones apply the three tables at once, so kills also land while other tables' statements are in
flight. One plan serves both (it was two modules with the same set-up, ~12 minutes of CI between them).

Both ways a user's commands go (tests/spark/cli.py), one after the other on the same tables: the first serial
kills in-process, as on CI; the set-up, the other serial kills and the parallel ones through the warm engine (a
command killed in it has its jobs cancelled and its last statement end, in full or not at all; the same engine
serves the next command, which reports the killed one). In-process, each run starts a JVM: four kills there
prove the path, and the engine's cheaper runs give the other kill points.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path

from tests.spark.cli import ENGINE, IN_PROCESS, Cli

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


def write(specs: Path, files: dict[str, str]) -> None:
    shutil.rmtree(specs, ignore_errors=True)
    specs.mkdir()
    for name, text in files.items():
        (specs / name).write_text(text)


def kill_after_first_statement(cli: Cli, parallel: int) -> bool:
    """Run apply and SIGKILL it once a statement has completed; False if it finished first."""
    process = cli.start(["apply", "specs", "--yes", "--parallel", str(parallel), *ALLOW])
    assert process.stderr is not None
    for line in process.stderr:
        if line.startswith("✓"):
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=60)
            return True
    process.wait(timeout=600)
    assert process.returncode == 0, process.stdout.read() if process.stdout else ""
    return False


def counts(cli: Cli) -> dict[str, list[object]]:
    query = (
        "SELECT 'a' AS t, count(*) AS n, sum(hash(id)) AS h FROM k.a UNION ALL "
        "SELECT 'b', count(*), sum(hash(id)) FROM k.b UNION ALL SELECT 'c', count(*), sum(hash(id)) FROM k.c"
    )
    done = cli.run(["sql", query, "--format", "json"])
    assert done.returncode == 0, done.stderr
    return {row["t"]: [row["n"], row["h"]] for row in json.loads(done.stdout)["rows"]}


SERIAL_KILLS_IN_PROCESS = 4
SERIAL_KILLS = 9  # the rest of them through the engine, then parallel runs: at least one more kill, 10+ in all


def test_sigkilled_apply_resumes_and_converges(tmp_path: Path) -> None:
    cli = Cli(tmp_path, ENGINE)
    try:
        _kills(cli)
    finally:
        cli.close()


def _kills(cli: Cli) -> None:
    specs = cli.root / "specs"
    write(specs, V1)
    assert cli.run(["apply", "specs", "--yes"]).returncode == 0
    insert = "INSERT INTO k.{t} VALUES (1, {v}), (2, {v}), (3, {v})"
    for table, value in (("a", "'x'"), ("b", "5"), ("c", "'y'")):
        assert cli.run(["sql", insert.format(t=table, v=value)]).returncode == 0
    before = counts(cli)

    write(specs, V2)
    planned = cli.run(["plan", "specs", "--format", "sql", *ALLOW])
    assert planned.returncode == 0, planned.stderr
    statements = [line for line in planned.stdout.splitlines() if line and not line.startswith("--")]
    # Enough that the parallel runs still have several tables' statements left after the serial kills.
    assert len(statements) >= SERIAL_KILLS + 5, planned.stdout

    cli.use(IN_PROCESS)
    for kills in range(1, SERIAL_KILLS + 1):
        if kills == SERIAL_KILLS_IN_PROCESS + 1:
            cli.use(ENGINE)
        assert kill_after_first_statement(cli, parallel=1), f"apply finished after {kills - 1} kills"
        if kills > SERIAL_KILLS_IN_PROCESS:
            assert cli.engine() is not None, "the engine stopped with a command killed in it"
    parallel_kills = 0
    engines: set[object] = set()
    while kill_after_first_statement(cli, parallel=4):
        parallel_kills += 1
        assert parallel_kills <= len(statements), "apply made no progress between kills"
        state = cli.engine()
        assert state is not None, "the engine stopped with a command killed in it"
        engines.add(state["pid"])
    assert parallel_kills >= 1
    assert len(engines) == 1, "a command killed in the engine stopped it"

    replanned = cli.run(["plan", "specs", "--detailed-exitcode", *ALLOW])
    assert replanned.returncode == 0, replanned.stdout + replanned.stderr
    assert counts(cli) == before
