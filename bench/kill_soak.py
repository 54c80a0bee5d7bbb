"""Kill soak: SIGKILL `delta-sync apply` at random moments of random migrations; every re-run must converge.

python bench/kill_soak.py --rounds 20 [--path in-process|engine] [--data-moves] [--seed 1] [--max-delay T]
    [--out bench/kill_soak_<path>.json] [--keep]

The long version of tests/spark/test_kill_resume.py. Each round, in a fresh schema of a temporary project
(its own embedded catalog under `.delta-sync/`; DELTA_SYNC_HOME is removed from the children's environment):

1. `apply` a V1 of 4 tables and fill them with one multi-table INSERT; count the rows and hash their content;
2. draw a V2 (seeded) from the changes delta-sync supports (new columns, a column default, comments, table
   comment, properties set and unset, CHECKs, NOT NULL on an existing column, int -> bigint widening, rename
   with `renamed_from`, column drop; and changes that move data: string -> int of a column of digits and a
   new partitioning, each a REPLACE TABLE ... AS SELECT (one for both), and a new NOT NULL column with
   `backfill:`, an UPDATE between its ADD COLUMNS and its ADD CONSTRAINT), sized so that its plan has 10-25
   statements (the estimate is redrawn until it fits, and the plan is then counted for real); with
   --data-moves, every round also has among its tables at least one rewrite (`retype` or `relayout`) and at
   least one `backfill` (the draw is redrawn until it has both; a plan without a REPLACE TABLE and an UPDATE
   fails the round);
3. run `apply specs --yes --allow rewrite,irreversible,breaking,destructive` and SIGKILL its process group (the JVM
   included) at a random moment, drawn each run: right after the k-th completed statement (`✓` on stderr);
   a random [0, --mid-delay] seconds after the k-th `✓` (or after the plan is shown), which lands inside the
   next statement; or a random delay in [0, T] seconds after the start, which lands anywhere: JVM start,
   catalog read, probes, mid-statement, the re-read, the shutdown. Repeat until an apply exits on its own,
   which must be with 0. The first run of a round is always killed after a `✓` (so that no round goes
   unkilled; a kill before anything ran is the same as a later run's start);
4. check that `plan --detailed-exitcode` exits 0 and that the row count and content hash of every table are
   what they were before the migration (the converted column compared as a string: '42' before, 42 after),
   and that the backfilled column holds its expression's value in every row.

A failing round is recorded (with the last output lines) and the soak goes on; the exit code is 1 if any
round failed. T is --max-delay, else the wall time of round 1's uninterrupted V1 apply. Every child's
command line, exit code and last output lines go to soak.log in the temporary project (--keep keeps it).

--path says how every child runs its command (default in-process):
- in-process: with CI=true (and no DELTA_SYNC_ENGINE): the command starts its own JVM, and the kill of the
  apply's process group kills that JVM with it;
- engine: with DELTA_SYNC_ENGINE=1 and DELTA_SYNC_ENGINE_IDLE=900 (no CI, no DELTA_SYNC_NO_ENGINE): the first
  command starts the warm engine (a process of its own session holding the JVM) and every command runs in it;
  the kill of the apply's process group then kills the client only, and what becomes of its statement in
  flight and of the engine is the product's to handle. Each apply run reads the engine's state file
  (.delta-sync/local/engine/engine.json: pid, JVM pid, code version) just before it is killed, or when it
  ends; a kill "kept" the engine when the next run finds the same engine process alive, else it counts as an
  engine restart (the engine stopped, or another one took over). `delta-sync engine stop` runs in the project
  at the end of the soak, however it ends, and any engine process still alive after it is killed by its pid.
The output defaults to bench/kill_soak_in_process.json or bench/kill_soak_engine.json, by --path.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import queue
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

import yaml
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
ALLOW = ["--allow", "rewrite,irreversible,breaking,destructive"]
TABLES = ("t1", "t2", "t3", "t4")
PATHS = ("in-process", "engine")
REWRITES = ("retype", "relayout")  # the changes planned as a REPLACE TABLE ... AS SELECT
ENGINE_IDLE = "900"  # seconds: no idle stop of the engine between two commands of a round
ENGINE_STOP_S = 180.0  # at the end: how long an engine (a starting one included) has to stop when told
STATEMENTS = (10, 25)  # the V2 plan's size, inclusive
TIMEOUT_S = 1800.0  # one child process that runs longer than this is a hang
# Where a kill lands: before the plan is shown (JVM start, catalog read, probes), while a statement runs, right
# after a statement's ✓, after the last statement (the re-read that confirms), after apply said it is done.
PHASES = ("startup", "statement", "after statement", "verify", "shutdown")
STEP = re.compile(r"^✓ \[(\d+)/(\d+)\]")
BACKFILL = "concat('f', id)"  # the backfill of the new NOT NULL column `filled`
console = Console(width=120)

# The changes a V2 may make to a table, with the statements each one adds to the plan (as delta-sync plans them;
# the plan is counted for real before the kills, this only sizes the draw). Column mapping, type widening and
# column defaults are each one more statement (a protocol step) the first time a table needs them.
POOL = {
    "add_columns": 1,  # one ADD COLUMNS
    "add_default": 2,  # allowColumnDefaults step + SET DEFAULT (+ ADD COLUMNS when add_columns is not drawn)
    "column_comments": 2,  # ALTER COLUMN ... COMMENT on 2 columns
    "table_comment": 1,  # rides in SET TBLPROPERTIES
    "properties": 1,  # one SET TBLPROPERTIES
    "unset_property": 1,  # UNSET TBLPROPERTIES
    "checks": 2,  # ADD CONSTRAINT x 2
    "not_null": 1,  # ADD CONSTRAINT ds_nn_m CHECK (m IS NOT NULL)
    "widen": 4,  # drop CHECK on n, typeWidening step, ALTER COLUMN TYPE, re-add the CHECK
    "rename": 2,  # columnMapping step + RENAME COLUMN
    "drop": 2,  # columnMapping step + DROP COLUMNS
    "retype": 1,  # g string -> int: REPLACE TABLE ... AS SELECT (CAST), the table's first statement
    "relayout": 1,  # unpartitioned -> partitioned by m: REPLACE TABLE ... AS SELECT (the same one as retype)
    "backfill": 3,  # new NOT NULL column `filled`: ADD COLUMNS, UPDATE ... WHERE filled IS NULL, ADD CONSTRAINT
}


@dataclass
class Spec:
    """One table of a round: what V2 changes, and the specs of both versions."""

    name: str
    changes: list[str]

    def v1(self) -> dict[str, Any]:
        return {
            "table": self.name,
            "columns": [
                {"name": "id", "type": "bigint"},
                {"name": "n", "type": "int"},
                {"name": "s", "type": "string"},
                {"name": "x", "type": "string"},
                {"name": "m", "type": "int"},
                {"name": "q", "type": "double", "comment": "quantity"},
                {"name": "g", "type": "string"},  # digits (or NULL): retype makes it int
            ],
            "checks": {"n_nonneg": "n >= 0"},
            "properties": {"soak.legacy": "1"},
        }

    @property
    def s_name(self) -> str:
        return "s_new" if "rename" in self.changes else "s"

    def v2(self) -> dict[str, Any]:
        has = set(self.changes)
        columns: list[dict[str, Any]] = [
            {"name": "id", "type": "bigint"},
            {"name": "n", "type": "bigint" if "widen" in has else "int"},
            {"name": self.s_name, "type": "string"} | ({"renamed_from": "s"} if "rename" in has else {}),
            {"name": "x", "type": "string"},
            {"name": "m", "type": "int"} | ({"nullable": False} if "not_null" in has else {}),
            {"name": "q", "type": "double", "comment": "quantity"},
            {"name": "g", "type": "int" if "retype" in has else "string"},
        ]
        if "drop" in has:
            columns = [c for c in columns if c["name"] != "x"]
        if "column_comments" in has:
            for column in columns:
                if column["name"] in ("id", "q"):
                    column["comment"] = f"{column['name']} of {self.name}, v2"
        if "add_columns" in has:
            columns += [{"name": "added_a", "type": "string"}, {"name": "added_b", "type": "double"}]
        if "add_default" in has:
            columns.append({"name": "status", "type": "string", "default": "'new'"})
        if "backfill" in has:
            columns.append({"name": "filled", "type": "string", "nullable": False, "backfill": BACKFILL})
        spec: dict[str, Any] = {"table": self.name}
        if "table_comment" in has:
            spec["comment"] = f"Table {self.name}, v2"
        spec["columns"] = columns
        if "relayout" in has:
            spec["partitioned_by"] = ["m"]
        checks = {"n_nonneg": "n >= 0"}
        if "checks" in has:
            checks |= {"id_pos": "id > 0", "s_nonempty": f"length({self.s_name}) > 0"}
        spec["checks"] = checks
        properties: dict[str, str | None] = {"soak.legacy": None if "unset_property" in has else "1"}
        if "properties" in has:
            properties |= {"soak.owner": "team-soak", "soak.tier": "gold"}
        spec["properties"] = properties
        return spec

    def content(self, version: int) -> str:
        """Count and content hash of the V1 columns V2 keeps, under the names of `version`, each as a value
        V2 does not change (n as bigint, g as a string), and the rows whose backfilled column is not its
        expression's value (0 when V2 has none, and in V1)."""
        names = ["id", "CAST(n AS BIGINT)", "s" if version == 1 else self.s_name, "x", "m", "q", "CAST(g AS STRING)"]
        if "drop" in self.changes:
            names.remove("x")
        bad = f"count_if(NOT (filled <=> {BACKFILL}))" if version == 2 and "backfill" in self.changes else "0"
        return (
            f"SELECT '{self.name}' AS t, count(*) AS n, sum(hash({', '.join(names)})) AS h, {bad} AS bad "
            f"FROM {self.name}"
        )


def estimate(changes: Sequence[str]) -> int:
    total = sum(POOL[c] for c in changes)
    if "retype" in changes and "relayout" in changes:
        total -= 1  # one REPLACE TABLE ... AS SELECT does both
    if "backfill" in changes and ("add_columns" in changes or "add_default" in changes):
        total -= 1  # one ADD COLUMNS
    if "rename" in changes and "drop" in changes:
        total -= 1  # one columnMapping step serves both
    if "table_comment" in changes and "properties" in changes:
        total -= 1  # one SET TBLPROPERTIES
    if "add_default" in changes and "add_columns" not in changes:
        total += 1  # its own ADD COLUMNS
    return total


def has_data_moves(specs: Sequence[Spec]) -> bool:
    """At least one table rewritten (retype or relayout) and at least one backfilled."""
    changes = [set(s.changes) for s in specs]
    return any(c & set(REWRITES) for c in changes) and any("backfill" in c for c in changes)


def draw(rng: random.Random, schema: str, data_moves: bool = False) -> list[Spec]:
    """Random changes for every table, redrawn until the plan's estimated size is within STATEMENTS (and, with
    `data_moves`, until the round has a rewrite and a backfill: the same draw, kept only when it has both)."""
    while True:
        specs = [Spec(f"{schema}.{t}", sorted(rng.sample(sorted(POOL), rng.randint(1, 4)))) for t in TABLES]
        if not STATEMENTS[0] <= sum(estimate(s.changes) for s in specs) <= STATEMENTS[1]:
            continue
        if data_moves and not has_data_moves(specs):
            continue
        return specs


def split_statements(sql: str) -> list[str]:
    """The statements of `plan --format sql`: one may span lines (REPLACE TABLE ... AS SELECT), each ends with
    `;`; comment lines are left out."""
    found: list[str] = []
    current: list[str] = []
    for line in sql.splitlines():
        if line.startswith("--") or (not current and not line.strip()):
            continue
        current.append(line)
        if line.rstrip().endswith(";"):
            found.append("\n".join(current).strip())
            current = []
    return found


def insert_sql(specs: Sequence[Spec], rows: int) -> str:
    """One multi-table INSERT (one Spark start): NULLs in x and g, every value valid for every V2 rule and
    every g a string of digits that CAST to int keeps (no leading zeros)."""
    parts = [f"FROM range(1, {rows + 1})"]
    for i, spec in enumerate(specs):
        parts.append(
            f"INSERT INTO {spec.name} SELECT id, CAST((id + {i}) % 7 AS INT), concat('s', id), "
            f"IF(id % 3 = {i % 3}, NULL, concat('x', id)), CAST((id * {i + 1}) % 11 AS INT), id / 4.0, "
            f"IF(id % 13 = {i}, NULL, CAST(id * 3 AS STRING))"
        )
    return " ".join(parts)


@dataclass
class Kill:
    mode: str  # "line": right after the k-th ✓; "mid": delay_s after the k-th ✓; "delay": delay_s after the start
    phase: str  # one of PHASES
    at_s: float  # since the process started
    completed: int  # statements completed (✓) in this run before the kill
    total: int | None  # the statements this run planned, if it got far enough to say
    k: int | None = None
    delay_s: float | None = None
    # Engine path: the engine (pid) when the kill was made, the one the next run found, and whether it was the
    # same process, alive (None on the in-process path, or when no engine ran at the kill).
    engine_before: int | None = None
    engine_after: int | None = None
    engine_kept: bool | None = None


@dataclass
class Run:
    """One `apply` process: killed, or finished with its exit code."""

    seconds: float
    returncode: int
    kill: Kill | None
    tail: list[str]
    engine: dict[str, Any] | None = None  # the engine's state when the run was killed or ended (engine path)


@dataclass
class Round:
    index: int
    schema: str
    changes: dict[str, list[str]]
    estimated: int = 0
    statements: int = 0
    rewrites: int = 0  # REPLACE TABLE ... AS SELECT statements in the plan
    backfills: int = 0  # UPDATE statements in the plan
    kills: list[dict[str, Any]] = field(default_factory=list)
    runs: int = 0
    reruns: int = 0
    max_delay_s: float = 0.0
    before: dict[str, list[Any]] = field(default_factory=dict)
    after: dict[str, list[Any]] = field(default_factory=dict)
    rows_intact: bool = False
    engine_restarts: int | None = None  # engine path: kills after which the next run found another engine
    engines: list[dict[str, Any]] = field(default_factory=list)  # engine path: each engine process seen
    wall_s: float = 0.0
    ok: bool = False
    error: str | None = None
    tail: list[str] = field(default_factory=list)


class RoundFailed(Exception):
    def __init__(self, message: str, tail: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.tail = list(tail)


class Soak:
    def __init__(self, work: Path, rng: random.Random, args: argparse.Namespace) -> None:
        self.work = work
        self.rng = rng
        self.rows: int = args.rows
        self.shares: tuple[float, float] = (args.line_share, args.mid_share)
        self.mid_delay: float = args.mid_delay
        self.max_runs: int = args.max_runs
        self.path: str = args.path
        self.data_moves: bool = args.data_moves
        self.current: subprocess.Popen[str] | None = None  # the apply running, if any
        self.engines_seen: dict[int, dict[str, Any]] = {}  # every engine process seen, by pid
        self.specs = work / "specs"
        self.log = work / "soak.log"
        # The project is the nearest folder holding .delta-sync/: pin it to `work`.
        (work / ".delta-sync").mkdir(parents=True, exist_ok=True)
        self.env = child_env(os.environ, self.path) | {"COLUMNS": "200", "NO_COLOR": "1", "PYTHONUNBUFFERED": "1"}

    def engine(self) -> dict[str, Any] | None:
        """The engine of the project (its state file), if its process is alive."""
        try:
            raw = json.loads((self.work / ".delta-sync" / "local" / "engine" / "engine.json").read_text())
            state = {k: raw[k] for k in ("pid", "jvm_pid", "version", "started")}
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if not _alive(int(state["pid"])):
            return None
        self.engines_seen.setdefault(state["pid"], state)
        return state

    def stop_engine(self) -> None:
        """`delta-sync engine stop` in the project, until no engine process of it is left: one a killed command
        was starting may publish its state only later (it is told to stop then), and any still alive after
        ENGINE_STOP_S (engines seen, engine processes whose command line names this project, and their children:
        the JVM) is killed by its pid."""
        deadline = time.monotonic() + ENGINE_STOP_S
        told: set[int | None] = set()
        while True:
            state = self.engine()
            pid = None if state is None else state["pid"]
            if not told or pid not in told:
                try:
                    self.cli(["engine", "stop"], expect=(0, 1, 2))
                except (RoundFailed, subprocess.TimeoutExpired, OSError) as error:
                    console.log(f"[red]delta-sync engine stop failed: {error}[/]")
                told.add(pid)
            left = self._engine_processes()
            if not left or time.monotonic() > deadline:
                break
            time.sleep(1.0)
        for pid in left:
            console.log(f"[red]engine process {pid} still alive after `delta-sync engine stop`: killed[/]")
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def _engine_processes(self) -> list[int]:
        """The live engine processes of this project: those seen (with their JVMs), any engine started on it
        (its command line names the project's start order), and their children."""
        pids = {pid for state in self.engines_seen.values() for pid in (state["pid"], state["jvm_pid"])}
        order = str(self.work / ".delta-sync").encode()
        parents: dict[int, int] = {}
        for proc in Path("/proc").glob("[0-9]*"):
            try:
                argv = (proc / "cmdline").read_bytes().split(b"\0")
                parents[int(proc.name)] = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if b"delta_sync.processes.daemon" in argv and any(a.startswith(order) for a in argv):
                pids.add(int(proc.name))
        pids |= {child for child, parent in parents.items() if parent in pids}
        return sorted(pid for pid in pids if _alive(pid))

    def _log(self, args: Sequence[str], seconds: float, returncode: int, text: str) -> None:
        with self.log.open("a") as log:
            log.write(f"$ delta-sync {' '.join(args)}  [{seconds:.2f}s rc={returncode}]\n{text[-4000:]}\n")

    def cli(self, args: Sequence[str], expect: Sequence[int] = (0,)) -> tuple[float, subprocess.CompletedProcess[str]]:
        started = time.perf_counter()
        done = subprocess.run(
            [PY, "-m", "delta_sync", *args],
            cwd=self.work,
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
        )
        seconds = time.perf_counter() - started
        self._log(args, seconds, done.returncode, done.stdout + done.stderr)
        if done.returncode not in expect:
            tail = (done.stdout + done.stderr).strip().splitlines()[-20:]
            raise RoundFailed(f"`delta-sync {' '.join(args)[:200]}` exited {done.returncode}", tail)
        return seconds, done

    def write(self, docs: Sequence[dict[str, Any]]) -> None:
        shutil.rmtree(self.specs, ignore_errors=True)
        self.specs.mkdir()
        for doc in docs:
            name = doc["table"].split(".")[-1]
            (self.specs / f"{name}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))

    def content(self, specs: Sequence[Spec], version: int) -> dict[str, list[Any]]:
        query = " UNION ALL ".join(s.content(version) for s in specs)
        _s, done = self.cli(["sql", query, "--format", "json"])
        return {row["t"]: [row["n"], row["h"], row["bad"]] for row in json.loads(done.stdout)["rows"]}

    def apply(self, mode: str, k: int, delay: float) -> Run:
        """One apply, SIGKILLed (process group: Python and the JVM) as `mode` says (see Kill.mode)."""
        args = ["apply", "specs", "--yes", *ALLOW]
        started = time.perf_counter()
        process = subprocess.Popen(
            [PY, "-m", "delta_sync", *args],
            cwd=self.work,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.current = process
        engine: dict[str, Any] | None = None
        lines: queue.Queue[tuple[str, str | None]] = queue.Queue()
        readers = [
            threading.Thread(target=_pump, args=(name, stream, lines), daemon=True)
            for name, stream in (("out", process.stdout), ("err", process.stderr))
        ]
        for reader in readers:
            reader.start()
        tail: deque[str] = deque(maxlen=30)
        completed, total, shown, finished = 0, None, False, False
        kill: Kill | None = None
        deadline = started + (delay if mode == "delay" else TIMEOUT_S)
        armed = mode == "delay"

        def arm() -> None:
            nonlocal deadline, armed
            deadline, armed = time.perf_counter() + delay, True

        open_streams = 2
        while open_streams:
            try:
                stream, line = lines.get(timeout=max(0.0, deadline - time.perf_counter()))
            except queue.Empty:
                if armed:
                    phase = (
                        "shutdown"
                        if finished
                        else "verify"
                        if total is not None and completed >= total
                        else "statement"
                        if shown
                        else "startup"
                    )
                    at = time.perf_counter() - started
                    kill = Kill(mode, phase, at, completed, total, k=None if mode == "delay" else k, delay_s=delay)
                else:
                    tail.append(f"[soak] still running after {TIMEOUT_S:.0f}s: killed as hung")
                    kill = Kill("hang", "hang", time.perf_counter() - started, completed, total)
                engine = self.engine() if self.path == "engine" else None
                _kill_group(process)
                break
            if line is None:
                open_streams -= 1
                continue
            tail.append(line.rstrip("\n"))
            if stream == "out" and line.startswith(("Plan:", "No changes")):
                shown = True
                finished = line.startswith("No changes")  # nothing to run: the process is on its way out
                if mode == "mid" and k == 0:
                    arm()
            elif stream == "err" and (step := STEP.match(line)):
                completed, total = completed + 1, int(step.group(2))
                if mode == "line" and completed == k:
                    kill = Kill("line", "after statement", time.perf_counter() - started, completed, total, k=k)
                    engine = self.engine() if self.path == "engine" else None
                    _kill_group(process)
                    break
                if mode == "mid" and completed == k and not armed:
                    arm()
            elif stream == "err" and line.startswith("Applied "):
                finished = True
        process.wait(timeout=120)
        self.current = None
        if kill is None and self.path == "engine":
            engine = self.engine()
        for reader in readers:
            reader.join(timeout=10)
        while not lines.empty():
            _stream, line = lines.get_nowait()
            if line is not None:
                tail.append(line.rstrip("\n"))
        seconds = time.perf_counter() - started
        if kill is not None and process.returncode != -signal.SIGKILL:
            kill = None  # it had exited by itself just before the kill
        if kill is not None and engine is not None:
            kill.engine_before = engine["pid"]
        self._log(args, seconds, process.returncode, "\n".join(tail))
        return Run(seconds, process.returncode, kill, list(tail), engine)

    def round(self, index: int, schema: str, max_delay: float | None) -> tuple[Round, float | None]:
        started = time.perf_counter()
        specs = draw(self.rng, schema, self.data_moves)
        result = Round(index, schema, {s.name: s.changes for s in specs})
        result.estimated = sum(estimate(s.changes) for s in specs)
        try:
            self.write([s.v1() for s in specs])
            v1_s, _done = self.cli(["apply", "specs", "--yes"])
            if max_delay is None:
                max_delay = v1_s
                console.log(f"T (kill delays in [0, T]) = {v1_s:.1f}s, the uninterrupted V1 apply of round 1")
            result.max_delay_s = max_delay
            self.cli(["sql", insert_sql(specs, self.rows)])
            result.before = self.content(specs, 1)
            self.write([s.v2() for s in specs])
            _s, planned = self.cli(["plan", "specs", "--format", "sql", *ALLOW])
            statements = split_statements(planned.stdout)
            result.statements = len(statements)
            result.rewrites = sum(1 for s in statements if s.upper().startswith("REPLACE TABLE"))
            result.backfills = sum(1 for s in statements if s.upper().startswith("UPDATE"))
            console.log(
                f"round {index}: {schema}, {result.statements} statements planned "
                f"(estimated {result.estimated}; {result.rewrites} rewrites, {result.backfills} backfills); "
                "changes: " + "; ".join(f"{s.name.split('.')[-1]} {','.join(s.changes)}" for s in specs)
            )
            if self.data_moves and not (result.rewrites and result.backfills):
                raise RoundFailed(
                    f"the plan has {result.rewrites} REPLACE TABLE and {result.backfills} UPDATE statements; "
                    "--data-moves drew both",
                    planned.stdout.strip().splitlines()[-20:],
                )
            if self.path == "engine":
                result.engine_restarts = 0
                self._note_engine(result, self.engine())
            try:
                self.converge(result, max_delay)
            finally:
                if self.path == "engine":
                    self._note_engine(result, self.engine())
            _s, replanned = self.cli(["plan", "specs", "--detailed-exitcode", *ALLOW], expect=(0, 2, 3))
            if replanned.returncode != 0:
                raise RoundFailed(
                    f"not converged: plan --detailed-exitcode exited {replanned.returncode} after apply exited 0",
                    (replanned.stdout + replanned.stderr).strip().splitlines()[-20:],
                )
            result.after = self.content(specs, 2)
            if result.after != result.before:
                raise RoundFailed(f"rows changed: before {result.before}, after {result.after}")
            result.rows_intact = True
            result.ok = True
        except RoundFailed as failed:
            result.error, result.tail = str(failed), failed.tail
        except subprocess.TimeoutExpired as expired:
            result.error = f"timed out: {expired}"
        except Exception as error:  # a bug of this script: record it, go on with the next round
            result.error, result.tail = f"soak error: {error!r}", traceback.format_exc().splitlines()[-20:]
        result.wall_s = time.perf_counter() - started
        return result, max_delay

    def converge(self, result: Round, max_delay: float) -> None:
        """Kill apply at random moments until one run finishes by itself; it must exit 0."""
        remaining = max(1, result.statements)
        while True:
            if result.runs == self.max_runs:
                raise RoundFailed(f"no apply finished on its own in {self.max_runs} runs")
            # The first run is always killed after a ✓ (a kill before anything ran tests nothing a later run's
            # start does not), so that no round goes unkilled; later runs draw the way of the kill.
            roll = self.rng.random()
            if result.runs == 0:
                mode, k, delay = "line", self.rng.randint(1, remaining), 0.0
            elif roll < self.shares[0]:  # k = remaining + 1 lets the run finish
                mode, k, delay = "line", self.rng.randint(1, remaining + 1), 0.0
            elif roll < sum(self.shares):
                mode, k, delay = "mid", self.rng.randint(0, remaining - 1), self.rng.uniform(0.0, self.mid_delay)
            else:
                mode, k, delay = "delay", 0, self.rng.uniform(0.0, max_delay)
            run = self.apply(mode, k, delay)
            result.runs += 1
            result.reruns = result.runs - 1
            if self.path == "engine":
                self._note_engine(result, run.engine)
                self._engine_across(result, run.engine)
            if run.kill is None:
                if run.returncode != 0:
                    raise RoundFailed(f"apply run {result.runs} (not killed) exited {run.returncode}", run.tail)
                console.log(
                    f"round {result.index}: run {result.runs} finished by itself in {run.seconds:.1f}s: "
                    + next((line for line in reversed(run.tail) if line.strip()), "")
                )
                return
            if run.kill.mode == "hang":
                raise RoundFailed(f"apply run {result.runs} hung", run.tail)
            result.kills.append(asdict(run.kill))
            if run.kill.total is not None:
                remaining = max(1, run.kill.total - run.kill.completed)
            if run.kill.mode == "line":
                where = f"right after ✓ {run.kill.k}"
            elif run.kill.mode == "mid":
                where = f"{delay:.1f}s after {f'✓ {k}' if k else 'the plan'}"
            else:
                where = f"{delay:.1f}s after the start"
            engine = f", engine {run.kill.engine_before}" if self.path == "engine" else ""
            console.log(
                f"round {result.index}: run {result.runs} killed {where}, phase {run.kill.phase} "
                f"({run.kill.completed}/{run.kill.total or '?'} statements done in this run{engine})"
            )

    def _note_engine(self, result: Round, engine: dict[str, Any] | None) -> None:
        if engine is not None and all(e["pid"] != engine["pid"] for e in result.engines):
            result.engines.append(engine)

    def _engine_across(self, result: Round, engine: dict[str, Any] | None) -> None:
        """The previous kill of the round kept its engine if this run (at its kill, or its end) found the same
        engine process alive."""
        if not result.kills:
            return
        last = result.kills[-1]
        if last["engine_before"] is None or last["engine_kept"] is not None:
            return
        last["engine_after"] = None if engine is None else engine["pid"]
        last["engine_kept"] = last["engine_after"] == last["engine_before"]
        if not last["engine_kept"]:
            result.engine_restarts = (result.engine_restarts or 0) + 1
            console.log(
                f"round {result.index}: the engine {last['engine_before']} did not outlive the kill of run "
                f"{result.runs - 1} (found: {last['engine_after'] or 'none'})"
            )


def _pump(name: str, stream: IO[str] | None, lines: queue.Queue[tuple[str, str | None]]) -> None:
    if stream is not None:
        for line in stream:
            lines.put((name, line))
    lines.put((name, None))


def child_env(environ: dict[str, str] | os._Environ[str], path: str) -> dict[str, str]:
    """The children's environment for --path: in-process (CI=true, no engine variable) or engine."""
    drop = ("DELTA_SYNC_HOME", "CI", "DELTA_SYNC_ENGINE", "DELTA_SYNC_NO_ENGINE", "DELTA_SYNC_ENGINE_IDLE")
    env = {k: v for k, v in environ.items() if k not in drop}
    if path == "engine":
        return env | {"DELTA_SYNC_ENGINE": "1", "DELTA_SYNC_ENGINE_IDLE": ENGINE_IDLE}
    return env | {"CI": "true"}


def _alive(pid: int) -> bool:
    """A live process (not a zombie) of this pid."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _kill_group(process: subprocess.Popen[str]) -> None:
    """SIGKILL the whole session (delta-sync and its JVM) and wait until none of it is left running."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    process.wait(timeout=60)
    deadline = time.monotonic() + 30
    while _group_alive(process.pid) and time.monotonic() < deadline:
        time.sleep(0.1)


def _group_alive(pgid: int) -> bool:
    """Any live (not zombie) process in the group: an orphaned zombie may wait for a reaper that never comes."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def summary(results: dict[str, Any]) -> dict[str, Any]:
    rounds: list[dict[str, Any]] = results["rounds"]
    kills = [kill for r in rounds for kill in r["kills"]]
    phases = Counter(kill["phase"] for kill in kills)
    engine = results["args"]["path"] == "engine"
    return {
        "path": results["args"]["path"],
        "data_moves": results["args"]["data_moves"],
        "rounds": len(rounds),
        "converged": sum(1 for r in rounds if r["ok"]),
        "failed": sum(1 for r in rounds if not r["ok"]),
        "rows_intact": sum(1 for r in rounds if r["rows_intact"]),
        "statements_planned": [r["statements"] for r in rounds],
        "rewrites_per_round": [r["rewrites"] for r in rounds],
        "backfills_per_round": [r["backfills"] for r in rounds],
        "kills": len(kills),
        "kills_by_phase": {phase: phases[phase] for phase in PHASES},
        "kills_by_mode": dict(Counter(kill["mode"] for kill in kills)),
        "max_reruns": max((r["reruns"] for r in rounds), default=0),
        "apply_runs": sum(r["runs"] for r in rounds),
        "engine_restarts_per_round": [r["engine_restarts"] for r in rounds] if engine else None,
        "engine_kept_across_kills": sum(1 for kill in kills if kill["engine_kept"]) if engine else None,
        "engine_versions": sorted({e["version"] for r in rounds for e in r["engines"]}) if engine else None,
        "wall_s": results["wall_s"],
        "loadavg_start": results["machine"]["loadavg_start"],
        "loadavg_end": results["machine"]["loadavg_end"],
    }


def report(results: dict[str, Any]) -> None:
    engine = results["args"]["path"] == "engine"
    rounds = Table(title=f"kill soak: rounds (path {results['args']['path']})")
    columns = ["round", "statements", "rewrites", "backfills", "kills", "phases of the kills", "re-runs"]
    columns += ["engine restarts"] if engine else []
    for column in [*columns, "time", "outcome"]:
        rounds.add_column(column, justify="left" if column in ("phases of the kills", "outcome") else "right")
    for r in results["rounds"]:
        phases = Counter(kill["phase"] for kill in r["kills"])
        cells = [
            str(r["index"]),
            str(r["statements"]),
            str(r["rewrites"]),
            str(r["backfills"]),
            str(len(r["kills"])),
            ", ".join(f"{phase} {phases[phase]}" for phase in PHASES if phases[phase]),
            str(r["reruns"]),
        ]
        if engine:
            kept = sum(1 for kill in r["kills"] if kill["engine_kept"])
            cells.append(f"{r['engine_restarts']} (kept {kept}/{len(r['kills'])})")
        cells += [
            f"{r['wall_s']:.0f}s",
            "[green]converged, rows intact[/]" if r["ok"] else f"[red]FAILED[/] {r['error']}",
        ]
        rounds.add_row(*cells)
    console.print(rounds)
    s = results["summary"]
    table = Table(title=f"kill soak: summary (path {s['path']}, seed {results['args']['seed']})")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_row("path", s["path"] + (", data moves in every round" if s["data_moves"] else ""))
    table.add_row("rounds (converged / failed)", f"{s['rounds']} ({s['converged']} / {s['failed']})")
    table.add_row("rounds with row hashes intact", str(s["rows_intact"]))
    table.add_row("statements per plan", ", ".join(map(str, s["statements_planned"])))
    table.add_row("rewrites per plan", ", ".join(map(str, s["rewrites_per_round"])))
    table.add_row("backfills per plan", ", ".join(map(str, s["backfills_per_round"])))
    table.add_row("apply runs", str(s["apply_runs"]))
    table.add_row("kills", str(s["kills"]))
    for phase, count in s["kills_by_phase"].items():
        table.add_row(f"  {phase}", str(count))
    table.add_row("kills by mode", ", ".join(f"{mode} {count}" for mode, count in s["kills_by_mode"].items()))
    table.add_row("max re-runs in a round", str(s["max_reruns"]))
    if engine:
        table.add_row("engine restarts per round", ", ".join(str(n) for n in s["engine_restarts_per_round"]))
        table.add_row("kills the engine outlived", f"{s['engine_kept_across_kills']} / {s['kills']}")
        table.add_row("engine code versions", ", ".join(s["engine_versions"]))
    table.add_row("failures", "[red]" + str(s["failed"]) + "[/]" if s["failed"] else "0")
    table.add_row("total time", f"{s['wall_s'] / 60:.1f} min")
    table.add_row(
        "load average start / end",
        f"{' '.join(f'{x:.2f}' for x in s['loadavg_start'])} / {' '.join(f'{x:.2f}' for x in s['loadavg_end'])}",
    )
    console.print(table)
    for r in results["rounds"]:
        if not r["ok"]:
            console.print(f"[red]round {r['index']} ({r['schema']}): {r['error']}[/]")
            for line in r["tail"]:
                console.print(f"  {line}", markup=False, highlight=False)


def code() -> dict[str, Any]:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False).stdout.strip()

    dirty = git("status", "--porcelain", "--", "delta_sync").splitlines()
    return {"head": git("rev-parse", "--short", "HEAD"), "dirty": bool(dirty), "dirty_files": dirty}


def default_out(path: str) -> Path:
    return ROOT / "bench" / f"kill_soak_{path.replace('-', '_')}.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, required=True, help="migrations to run, each killed until it converges")
    parser.add_argument(
        "--path",
        choices=PATHS,
        default="in-process",
        help="in-process (CI=true: each command its own JVM) or engine (DELTA_SYNC_ENGINE=1: the warm engine's JVM)",
    )
    parser.add_argument(
        "--data-moves",
        action="store_true",
        help="every round has a rewrite (retype or relayout) and a backfill among its tables",
    )
    parser.add_argument("--seed", type=int, default=None, help="seed of every random choice (default: random)")
    parser.add_argument("--max-delay", type=float, default=None, help="T: kill delays are in [0, T] seconds")
    parser.add_argument("--line-share", type=float, default=0.35, help="share of kills made right after a ✓")
    parser.add_argument("--mid-share", type=float, default=0.3, help="share of kills made shortly after a ✓")
    parser.add_argument("--mid-delay", type=float, default=3.0, help="the most seconds a 'mid' kill waits")
    parser.add_argument("--rows", type=int, default=1000, help="rows per table")
    parser.add_argument("--max-runs", type=int, default=60, help="apply runs per round before it counts as failed")
    parser.add_argument("--out", type=Path, default=None, help="default: bench/kill_soak_<path>.json")
    parser.add_argument("--keep", action="store_true", help="keep the temporary project (catalog, soak.log)")
    args = parser.parse_args(argv)
    if args.out is None:
        args.out = default_out(args.path)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    rng = random.Random(seed)
    work = Path(tempfile.mkdtemp(prefix="delta-sync-kill-soak-"))
    soak = Soak(work, rng, args)
    console.log(f"seed {seed}, path {args.path}; working in {work} (log: {soak.log})")
    results: dict[str, Any] = {
        "args": vars(args) | {"out": str(args.out), "seed": seed},
        "machine": {"cores": os.cpu_count(), "loadavg_start": os.getloadavg(), "python": sys.version.split()[0]},
        "code": code(),
        "rounds": [],
    }

    def terminated(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)  # the finally below still stops the engine

    signal.signal(signal.SIGTERM, terminated)
    signal.signal(signal.SIGHUP, terminated)
    started = time.perf_counter()
    max_delay: float | None = args.max_delay
    failed = True
    try:
        for index in range(1, args.rounds + 1):
            result, max_delay = soak.round(index, f"soak{index}", max_delay)
            results["rounds"].append(asdict(result))
            outcome = "converged, rows intact" if result.ok else f"FAILED: {result.error}"
            engine = f", {result.engine_restarts} engine restarts" if args.path == "engine" else ""
            console.log(
                f"round {index}/{args.rounds}: {result.statements} statements ({result.rewrites} rewrites, "
                f"{result.backfills} backfills), {len(result.kills)} kills, {result.reruns} re-runs{engine}, "
                f"{result.wall_s:.0f}s: {outcome}"
            )
    finally:
        if soak.current is not None:
            _kill_group(soak.current)
        if args.path == "engine" or soak.engine() is not None:
            soak.stop_engine()
        results["wall_s"] = time.perf_counter() - started
        results["machine"]["loadavg_end"] = os.getloadavg()
        results["summary"] = summary(results)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2) + "\n")
        failed = results["summary"]["failed"] > 0 or len(results["rounds"]) < args.rounds
        if args.keep or failed:
            console.log(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    report(results)
    console.log(f"per-round records in {args.out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
