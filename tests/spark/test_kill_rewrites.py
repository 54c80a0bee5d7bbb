"""Fault injection on changes that move data: SIGKILL apply inside a backfill's UPDATE, between that UPDATE and
its ADD CONSTRAINT, and inside a REPLACE TABLE ... AS SELECT; each table is left as it was before the statement
or as after it, never in between, and re-runs converge with every row kept.

One plan over three tables of 300 rows: `b` gets a new NOT NULL column with `backfill:` (ADD COLUMNS, UPDATE,
ADD CONSTRAINT), `p` goes from partitioned to clustered and `r` changes `amount` from string to int (one REPLACE
TABLE ... AS SELECT each). Each apply is SIGKILLed (its process group: Python and the JVM) at its own point;
"inside" a statement is when its first new data file appears under the table's folder (Delta writes the files
before the commit that adds them). After each kill the tables are read by path, through this process's own
Spark session (no metastore: the killed project's Derby catalog stays the CLI's): the row count and a checksum
of the columns the plan keeps (`amount` as a string: '70' before, 70 after) are as before, and each table is in
one of the states the plan goes through."""

from __future__ import annotations

import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from delta_sync.spark.catalog import SparkCatalog
from delta_sync.spark.session import LocalCatalog

ALLOW = ["--allow", "rewrite,breaking,irreversible,destructive"]
ROWS = 300
# The CLI's JVMs live a minute at most: C1 alone compiles enough for them, at a fraction of the CPU (2 cores
# here, shared). Set for the children only: this process's session is the one the other tests share.
JVM_OPTIONS = {"JAVA_TOOL_OPTIONS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"}

V1 = {
    "b.yaml": "table: k.b\ncolumns:\n  - name: id\n    type: bigint\n  - name: v\n    type: string\n",
    "p.yaml": "table: k.p\ncolumns:\n  - name: id\n    type: bigint\n  - name: region\n    type: string\n"
    "  - name: d\n    type: date\npartitioned_by: [d]\n",
    "r.yaml": "table: k.r\ncolumns:\n  - name: id\n    type: bigint\n    nullable: false\n"
    "  - name: amount\n    type: string\n  - name: note\n    type: string\nchecks:\n  id_pos: id > 0\n",
}
V2 = {
    "b.yaml": V1["b.yaml"] + "  - name: region\n    type: string\n    nullable: false\n"
    "    backfill: \"concat('r', id)\"\n",
    "p.yaml": V1["p.yaml"].replace("partitioned_by: [d]", "clustered_by: [region]"),
    "r.yaml": V1["r.yaml"].replace("    type: string\n  - name: note", "    type: int\n  - name: note"),
}
FILL = {
    "b": "SELECT id, IF(id % 5 = 0, NULL, concat('v', id)) FROM range(1, {n})",
    "p": "SELECT id, element_at(array('eu', 'us', 'apac'), CAST(id % 3 + 1 AS int)), "
    "date_add(DATE'2026-01-01', CAST(id % 4 AS int)) FROM range(1, {n})",
    "r": "SELECT id, IF(id % 10 = 0, NULL, CAST(id * 7 AS string)), concat('n', id) FROM range(1, {n})",
}
# The columns each table keeps through the plan, as SQL whose values the plan does not change.
KEPT = {"b": "id, v", "p": "id, region, d", "r": "id, note, CAST(amount AS string)"}


@dataclass(frozen=True)
class KillAt:
    """Where a run is killed: once a new data file is under `table` (inside its statement that writes
    data), or right after the ✓ of a statement whose text holds `done`."""

    what: str
    table: str | None = None
    done: str | None = None
    parallel: int = 1


KILLS = [
    KillAt("inside the backfill's UPDATE", table="b"),
    KillAt("between the backfill's UPDATE and its ADD CONSTRAINT", done="UPDATE `k`.`b`"),
    # With the tables at once, p's REPLACE (and b's ADD CONSTRAINT) run beside r's: the kill lands where they are.
    KillAt("inside the string -> int REPLACE TABLE ... AS SELECT", table="r", parallel=4),
]


def cli(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != "DELTA_SYNC_HOME"}
    return subprocess.Popen(
        [sys.executable, "-m", "delta_sync", *args],
        cwd=cwd,
        env={**env, **JVM_OPTIONS, "COLUMNS": "200"},
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


def data_files(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*.parquet") if "_delta_log" not in p.parts}


def group_gone(pgid: int, timeout: float = 30.0) -> None:
    """Wait until no live process of the group is left (the JVM may outlive its Python parent by a moment)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = False
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            alive = alive or (int(fields[2]) == pgid and fields[0] != "Z")
        if not alive:
            return
        time.sleep(0.1)
    raise AssertionError(f"process group {pgid} still alive {timeout:.0f}s after SIGKILL")


def pump(stream: IO[str] | None, lines: queue.Queue[str | None]) -> None:
    if stream is not None:
        for line in stream:
            lines.put(line)
    lines.put(None)


def kill_at(cwd: Path, warehouse: Path, at: KillAt) -> list[str]:
    """Run apply and SIGKILL it at `at`; the lines it printed. Fails if it ended by itself first."""
    folder = warehouse / (at.table or "")
    existing = data_files(folder) if at.table else set()
    process = cli(["apply", "specs", "--yes", "--parallel", str(at.parallel), *ALLOW], cwd)
    lines: queue.Queue[str | None] = queue.Queue()
    for stream in (process.stdout, process.stderr):
        threading.Thread(target=pump, args=(stream, lines), daemon=True).start()
    seen: list[str] = []
    open_streams, deadline = 2, time.monotonic() + 600
    while open_streams and time.monotonic() < deadline:
        try:
            line = lines.get(timeout=0.005)  # between lines, look for new data files every 5 ms
        except queue.Empty:
            line = ""
        if line is None:
            open_streams -= 1
            continue
        seen.append(line.rstrip("\n"))
        done = at.done is not None and line.startswith("✓") and at.done in line
        if done or (at.table is not None and data_files(folder) - existing):
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=60)
            group_gone(process.pid)
            return seen
    process.kill()
    process.wait(timeout=60)
    output = "\n".join(line for line in seen if line)
    raise AssertionError(f"apply was not killed {at.what}: it ended with {process.returncode}\n{output}")


Sql = Callable[[str], list[Any]]


def fingerprints(sql: Sql, warehouse: Path) -> dict[str, tuple[int, int]]:
    """Each table's row count and an order-independent checksum of the columns it keeps."""
    query = " UNION ALL ".join(
        f"SELECT '{t}', count(*), coalesce(sum(CAST(xxhash64({columns}) AS decimal(38,0))), 0) "
        f"FROM delta.`{warehouse / t}`"
        for t, columns in KEPT.items()
    )
    return {str(r[0]): (int(r[1]), int(r[2])) for r in sql(query)}


def states(sql: Sql, warehouse: Path) -> dict[str, str]:
    """Each table's state, one the plan goes through: fails on anything in between (some rows backfilled,
    a NOT NULL rule on a column with NULLs, a layout half-way, a rewrite that lost a CHECK)."""
    details = {t: sql(f"DESCRIBE DETAIL delta.`{warehouse / t}`")[0] for t in ("b", "p", "r")}
    types = {t: {r[0]: r[1] for r in sql(f"DESCRIBE TABLE delta.`{warehouse / t}`")} for t in ("b", "r")}
    found: dict[str, str] = {}

    amount = types["r"]["amount"]  # a table has one schema: every row holds the old type or every row the new
    assert amount in ("string", "int"), amount
    found["r"] = "before" if amount == "string" else "after"
    assert details["r"]["properties"].get("delta.constraints.id_pos") == "id > 0"  # REPLACE restates it

    layout = (list(details["p"]["partitionColumns"]), list(details["p"]["clusteringColumns"]))
    assert layout in ((["d"], []), ([], ["region"])), layout
    found["p"] = "before" if layout[0] else "after"

    not_null = "delta.constraints.ds_nn_region" in details["b"]["properties"]
    if "region" not in types["b"]:
        found["b"] = "before ADD COLUMNS"
        assert not not_null
        return found
    counted = "count_if(region IS NULL), count_if(region = concat('r', id))"
    nulls, filled = sql(f"SELECT {counted} FROM delta.`{warehouse / 'b'}`")[0]
    assert (nulls, filled) in ((ROWS, 0), (0, ROWS)), f"backfill half-done: {nulls} NULL, {filled} filled"
    if nulls:
        found["b"] = "before UPDATE"
        assert not not_null
    else:
        found["b"] = "after ADD CONSTRAINT" if not_null else "after UPDATE"
    return found


def test_sigkill_inside_rewrites_and_backfills_leaves_before_or_after(tmp_path: Path, catalog: SparkCatalog) -> None:
    (tmp_path / ".delta-sync").mkdir()  # the killed project's own catalog, under tmp_path
    warehouse = LocalCatalog(tmp_path / ".delta-sync" / "local").warehouse / "k.db"
    timings: list[tuple[str, float]] = []

    def sql(statement: str) -> list[Any]:
        return list(catalog.spark.sql(statement).collect())

    def timed(what: str, run: Callable[[], Any]) -> Any:
        started = time.monotonic()
        result = run()
        timings.append((what, time.monotonic() - started))
        return result

    specs = tmp_path / "specs"
    write(specs, V1)
    started = time.monotonic()
    creating = cli(["apply", "specs", "--yes"], tmp_path)
    sql("SELECT sum(id) FROM range(10)")  # this process's session starts and warms up meanwhile
    _out, err = creating.communicate(timeout=600)
    assert creating.returncode == 0, err
    timings.append(("apply V1 (and this process's session start)", time.monotonic() - started))
    for table, select in FILL.items():
        sql(f"INSERT INTO delta.`{warehouse / table}` {select.format(n=ROWS + 1)}")
    before = fingerprints(sql, warehouse)
    assert all(count == ROWS for count, _h in before.values()), before
    assert states(sql, warehouse) == {"r": "before", "p": "before", "b": "before ADD COLUMNS"}

    write(specs, V2)
    observed: list[tuple[str, dict[str, str]]] = []
    for at in KILLS:
        timed(f"apply killed {at.what}", lambda: kill_at(tmp_path, warehouse, at))  # noqa: B023
        assert fingerprints(sql, warehouse) == before, at.what  # every row kept, whatever ran
        observed.append((at.what, states(sql, warehouse)))
    # Each run got at least as far as the one before: past the UPDATE (the ✓), past b's statements.
    assert observed[1][1]["b"] in ("after UPDATE", "after ADD CONSTRAINT"), observed

    done = timed("apply to the end", lambda: finish(["apply", "specs", "--yes", *ALLOW], tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    replanned = timed("plan", lambda: finish(["plan", "specs", "--detailed-exitcode", *ALLOW], tmp_path))
    assert replanned.returncode == 0, replanned.stdout + replanned.stderr
    assert fingerprints(sql, warehouse) == before
    assert states(sql, warehouse) == {"r": "after", "p": "after", "b": "after ADD CONSTRAINT"}
    amounts = sql(f"SELECT id, amount FROM delta.`{warehouse / 'r'}` WHERE id IN (1, 10) ORDER BY id")
    assert [tuple(r) for r in amounts] == [(1, 7), (10, None)]
    # Where the kills landed and what each run cost (pytest -s shows it).
    print()
    for what, found in observed:
        print(f"killed {what}: {found}")
    for what, seconds in timings:
        print(f"{seconds:6.1f}s {what}")
