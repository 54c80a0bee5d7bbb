"""Engine soak: bounded under load. Many mixed commands, a few at a time, through one warm engine: every one exits
as it should, the engine never restarts, and its memory, gateways and Spark jobs do not grow with the commands.

nice -n 5 .venv/bin/python bench/engine_soak.py --commands 1000 --concurrency 4 --seed 7 [--kill-share 0.05]
    [--sample-every 25] [--code snapshot|copy|tree] [--out bench/engine_soak.json] [--keep]
    [--memory-every 500 [--nmt] [--nmt-baseline-at 500] [--java-options "-XX:..."] [--engine-env KEY=VALUE]
     [--trim-at-end]]

In a fresh temporary project (its own embedded catalog under `.delta-sync/`; DELTA_SYNC_HOME, CI and
DELTA_SYNC_NO_ENGINE are removed from the children's environment, DELTA_SYNC_ENGINE=1 and
DELTA_SYNC_ENGINE_IDLE=900 set, so that every command runs through the warm engine as at a terminal). The
commands run HEAD's delta_sync (`git archive` into a temporary folder put first on PYTHONPATH; --code tree runs
the work tree instead; --code copy a copy of the work tree's delta_sync made at the start, without git): the
engine's code fingerprint covers its source files, so an edit made to a shared work tree during the soak would
otherwise restart the engine (as it should), which is not what the soak measures.

1. setup: `apply specs --yes` creates 4 tables of schema `soak` (primary key `id`, two foreign keys, a table
   comment, a column comment and a property that the soak toggles), the first command, which starts the engine;
   then one `sql "INSERT ..." --yes` per table fills it with a few hundred rows, and an aggregate query over the
   tables must give the answer computed here;
2. the soak: --commands commands, --concurrency at a time (a thread pool, each thread one subprocess in a session
   of its own), drawn with the seed: `plan specs --detailed-exitcode` (35%, must exit 0 or 2), `sql "SELECT
   <aggregates over the 4 tables and two joins>" --format json` (30%, must exit 0 with the right answer),
   `apply specs --yes` (20%, must exit 0) of a small change the driver makes just before launching it (one spec
   file rewritten atomically, a temporary file then os.replace: a table property's value or a column's comment
   toggled; concurrent applies race, and delta-sync re-plans on a conflict), and `check specs` (15%, keys
   against the data, must exit 0). The data never changes, so the aggregate's answer is fixed;
3. --kill-share of the commands are SIGKILLed (their process group: the client; its copy in the engine's
   preloaded process dies with it) after a random delay in [0.1, 3] s. A killed command's exit code does not
   count; a command that ended before its kill counts as any other;
4. `engine status --format json` is sampled at the start, every --sample-every commands, after the last one,
   and at the very end: the engine's pid, served, died, the commands running, and its memory figures (gateways
   lent and still open, the JVM objects they hold, Spark jobs running, the JVM's heap used, the engine's and
   the JVM's resident memory). The engine's state file is also read after every command: any change of engine
   process is an engine restart, a failure;
5. the end: the final specs are written, `apply specs --yes` then `plan specs --detailed-exitcode` must exit 0
   (convergence); then the engine must drain (gateways == 0 and active_jobs == 0, within 120 s), a last
   sample is taken, and `engine stop` runs, however the soak ends (Ctrl-C and errors included); any engine
   process of the project still alive after it is killed by its pid.

Memory checkpoints (--memory-every N): after the setup, every N commands and at the very end, the soak lets the
commands running end (none is started meanwhile: the engine is quiet, no gateway open), then records the engine
JVM's figures from outside it (bench/jvm_memory.py): resident memory (anonymous and file-backed), threads, the
Java heap committed and used (`jcmd GC.heap_info`), Metaspace, classes loaded and unloaded, JIT compilations, the
glibc malloc arenas' heaps and their resident part, and the Python engine's and its preloaded process's resident
memory. With --nmt the engine's JVM runs with -XX:NativeMemoryTracking=summary (through JDK_JAVA_OPTIONS in the
commands' environment, which the engine inherits), and each checkpoint adds `VM.native_memory summary` by
category; a `baseline` is taken at --nmt-baseline-at commands (default: the first checkpoint after the start)
and every later checkpoint adds `summary.diff` (its text in <out>_nmt.txt). --java-options adds JVM options the
same way, --engine-env variables of the engine's environment (MALLOC_ARENA_MAX=2), to measure a bound; with
--idle-probe S one more checkpoint follows S seconds of an idle engine, and with --trim-at-end the last one is
followed by `jcmd System.trim_native_heap` and the RSS it gave back. The
summary has the RSS slope over the last 4,000 commands (least squares over the checkpoints, MB per 1,000).

A command that exits with another code than expected (or whose answer is wrong, or that runs longer than
--timeout) is a failure: its command, exit code and last 20 output lines are recorded, and the soak goes on.
The exit code is 1 if any command failed, the engine restarted, the specs did not converge or the engine did not
drain. Every child's command line, exit code, time and output tail go to soak.log in the temporary project, and
the engine's log is its `.delta-sync/local/logs/engine.log` (--keep keeps the project; so does a failure).

The output (--out) holds the arguments, the machine (cores, load average at start and end, Python), the code
(git head, dirty), the counts by command kind and outcome (and the applies that found a table changed by another
writer while they ran, which delta-sync says and exits 0), the kills, the failures, the engine restarts, every
sample, and for each memory figure its start, peak and end and the means of the first and the last 10% of the
samples (a trend, or its absence), the commands' times by kind, wall time and commands per minute.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
import jvm_memory  # bench/jvm_memory.py

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
SCHEMA = "soak"
ENGINE_IDLE = "900"  # seconds: no idle stop of the engine during the soak
ENGINE_STOP_S = 180.0  # at the end: how long the engine has to stop when told
DRAIN_S = 120.0  # at the end: how long the engine has to return every gateway and end every Spark job
KINDS = {"plan": 0.35, "sql": 0.30, "apply": 0.20, "check": 0.15}
EXPECT = {"plan": (0, 2), "sql": (0,), "apply": (0,), "check": (0,)}
KILL_DELAY = (0.1, 3.0)
FIGURES = ("jvm_rss_mb", "engine_rss_mb", "heap_used_mb", "gateways", "gateway_objects", "active_jobs")
COUNTERS = ("served", "died")
OUTCOMES = ("ok", "failed", "killed", "ended before its kill")
TAIL = 20
QUIET_FIELDS = ("no_changes", "died_notices", "others")  # an Outcome's fields left out of a failure's record
console = Console(width=130)


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    sql: str  # its value in the INSERT, from `id` (1..rows)


@dataclass(frozen=True)
class TableDef:
    name: str
    rows: int
    comment: str
    columns: tuple[Column, ...]
    toggled: str  # the column whose comment the soak toggles
    foreign_key: tuple[str, str] | None = None  # (column, parent table)

    @property
    def full(self) -> str:
        return f"{SCHEMA}.{self.name}"


TABLES = (
    TableDef(
        "customers",
        300,
        "Customers of the soak",
        (
            Column("id", "bigint", "id"),
            Column("name", "string", "concat('c', id)"),
            Column("region", "string", "element_at(array('north', 'south', 'east', 'west'), CAST(id % 4 AS INT) + 1)"),
            Column("score", "double", "CAST(id % 17 AS DOUBLE) / 2"),
        ),
        toggled="name",
    ),
    TableDef(
        "orders",
        400,
        "Orders of the soak's customers",
        (
            Column("id", "bigint", "id"),
            Column("customer_id", "bigint", "(id * 7) % 300 + 1"),
            Column("amount", "double", "CAST(id % 23 AS DOUBLE) * 1.25"),
            Column("status", "string", "IF(id % 5 = 0, 'open', 'shipped')"),
        ),
        toggled="status",
        foreign_key=("customer_id", "customers"),
    ),
    TableDef(
        "items",
        500,
        "Lines of the soak's orders",
        (
            Column("id", "bigint", "id"),
            Column("order_id", "bigint", "(id * 3) % 400 + 1"),
            Column("qty", "int", "CAST(id % 9 + 1 AS INT)"),
            Column("sku", "string", "concat('sku-', id % 40)"),
        ),
        toggled="sku",
        foreign_key=("order_id", "orders"),
    ),
    TableDef(
        "events",
        250,
        "Events of the soak",
        (
            Column("id", "bigint", "id"),
            Column("kind", "string", "IF(id % 2 = 0, 'view', 'click')"),
            Column("weight", "double", "CAST(id % 11 AS DOUBLE) / 4"),
            Column("note", "string", "concat('e', id)"),
        ),
        toggled="note",
    ),
)
BY_NAME = {t.name: t for t in TABLES}

# The aggregate the `sql` commands run: per table its rows, the sum of its ids and of one numeric column; and two
# joins along the foreign keys. expected() computes the same in Python from the INSERTs' formulas.
AGGREGATE = " UNION ALL ".join(
    [
        f"SELECT 'customers' AS t, count(*) AS n, sum(id) AS ids, sum(score) AS v FROM {SCHEMA}.customers",
        f"SELECT 'orders', count(*), sum(id), sum(amount) FROM {SCHEMA}.orders",
        f"SELECT 'items', count(*), sum(id), CAST(sum(qty) AS DOUBLE) FROM {SCHEMA}.items",
        f"SELECT 'events', count(*), sum(id), sum(weight) FROM {SCHEMA}.events",
        f"SELECT 'orders x customers', count(*), sum(o.id), sum(c.score) FROM {SCHEMA}.orders o "
        f"JOIN {SCHEMA}.customers c ON o.customer_id = c.id",
        f"SELECT 'items x orders', count(*), sum(i.id), sum(o.amount * i.qty) FROM {SCHEMA}.items i "
        f"JOIN {SCHEMA}.orders o ON i.order_id = o.id",
    ]
)


def expected() -> dict[str, tuple[int, int, float]]:
    """The aggregate's answer, from the same formulas as the INSERTs (every double a multiple of 1/4: exact)."""
    customers = {i: (i % 17) / 2 for i in range(1, 301)}
    orders = {i: ((i * 7) % 300 + 1, (i % 23) * 1.25) for i in range(1, 401)}
    items = {i: ((i * 3) % 400 + 1, i % 9 + 1) for i in range(1, 501)}
    weights = [(i % 11) / 4 for i in range(1, 251)]
    return {
        "customers": (300, sum(customers), sum(customers.values())),
        "orders": (400, sum(orders), sum(a for _c, a in orders.values())),
        "items": (500, sum(items), float(sum(q for _o, q in items.values()))),
        "events": (250, 250 * 251 // 2, sum(weights)),
        "orders x customers": (400, sum(orders), sum(customers[c] for c, _a in orders.values())),
        "items x orders": (500, sum(items), sum(orders[o][1] * q for o, q in items.values())),
    }


EXPECTED = expected()


def wrong_answer(stdout: str) -> str | None:
    """What is wrong with the aggregate's answer (`sql --format json`), or None when it is right."""
    try:
        rows = {row["t"]: (row["n"], row["ids"], row["v"]) for row in json.loads(stdout)["rows"]}
    except (ValueError, KeyError, TypeError) as error:
        return f"unreadable answer: {type(error).__name__}: {error}"
    for name, (n, ids, v) in EXPECTED.items():
        got = rows.get(name)
        if got is None:
            return f"no row {name!r}"
        if got[0] != n or got[1] != ids or got[2] is None or not math.isclose(float(got[2]), v, rel_tol=1e-9):
            return f"{name}: got {list(got)}, expected {[n, ids, v]}"
    return None


class Specs:
    """The specs as the soak wants them now: each table's toggles, and the files written from them."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.lock = threading.Lock()
        self.flag = {t.name: False for t in TABLES}  # property soak.flag: blue (False) / green (True)
        self.note = {t.name: False for t in TABLES}  # the toggled column's comment: v0 (False) / v1 (True)
        self.changes = 0

    def doc(self, table: TableDef) -> dict[str, Any]:
        columns: list[dict[str, Any]] = []
        for column in table.columns:
            entry: dict[str, Any] = {"name": column.name, "type": column.type}
            if column.name == "id":
                entry |= {"nullable": False, "comment": f"Key of {table.name}"}
            elif column.name == table.toggled:
                entry["comment"] = f"{column.name} of {table.name}, v{int(self.note[table.name])}"
            columns.append(entry)
        spec: dict[str, Any] = {"table": table.full, "comment": table.comment, "columns": columns}
        spec["primary_key"] = ["id"]
        if table.foreign_key is not None:
            child, parent = table.foreign_key
            spec["foreign_keys"] = [{"columns": [child], "references": f"{SCHEMA}.{parent}(id)"}]
        spec["properties"] = {"soak.flag": "green" if self.flag[table.name] else "blue"}
        return spec

    def write(self, table: TableDef) -> None:
        """Atomically: a reader (a command running) sees the old file or the new one, never a part."""
        self.folder.mkdir(exist_ok=True)
        target = self.folder / f"{table.name}.yaml"
        handle, temporary = tempfile.mkstemp(prefix=f".{table.name}.", suffix=".tmp", dir=self.folder)
        with os.fdopen(handle, "w") as out:
            out.write(yaml.safe_dump(self.doc(table), sort_keys=False))
        os.replace(temporary, target)

    def write_all(self) -> None:
        with self.lock:
            for table in TABLES:
                self.write(table)

    def toggle(self, name: str, what: str) -> str:
        """One small change to one table's spec file; what it was, for the log."""
        with self.lock:
            state = self.flag if what == "property" else self.note
            state[name] = not state[name]
            self.changes += 1
            self.write(BY_NAME[name])
            if what == "property":
                return f"{name}: soak.flag -> {'green' if self.flag[name] else 'blue'}"
            return f"{name}: comment of {BY_NAME[name].toggled} -> v{int(self.note[name])}"


def create_sql(table: TableDef) -> str:
    values = ", ".join(c.sql for c in table.columns)
    return f"INSERT INTO {table.full} SELECT {values} FROM range(1, {table.rows + 1})"


@dataclass
class Job:
    index: int
    kind: str
    kill_after: float | None  # seconds, when this command is to be killed
    change: tuple[str, str] | None = None  # apply: (table, "property" | "comment")


@dataclass
class Outcome:
    index: int
    kind: str
    started: float  # since the soak started
    seconds: float
    returncode: int | None
    outcome: str  # one of OUTCOMES
    kill_after: float | None = None
    change: str | None = None
    reason: str | None = None  # a failure's
    command: str | None = None  # a failure's
    tail: list[str] = field(default_factory=list)  # a failure's
    no_changes: bool = False  # plan exit 0 / apply that found nothing to do
    died_notices: int = 0  # "The earlier command ... died" notices this command printed
    others: int = 0  # apply: tables it said "changed by another writer while apply ran"


def args_of(kind: str) -> list[str]:
    if kind == "plan":
        return ["plan", "specs", "--detailed-exitcode"]
    if kind == "sql":
        return ["sql", AGGREGATE, "--format", "json"]
    if kind == "apply":
        return ["apply", "specs", "--yes"]
    return ["check", "specs"]


def draw(rng: random.Random, commands: int, kill_share: float) -> list[Job]:
    """Every command of the soak, drawn up front (the same values drawn for every command: a seed gives one
    sequence whatever the kinds)."""
    kinds, weights = list(KINDS), list(KINDS.values())
    jobs = []
    for index in range(1, commands + 1):
        kind = rng.choices(kinds, weights)[0]
        killed = rng.random() < kill_share
        delay = round(rng.uniform(*KILL_DELAY), 2)
        change = (rng.choice(TABLES).name, rng.choice(("property", "comment")))
        jobs.append(Job(index, kind, delay if killed else None, change if kind == "apply" else None))
    return jobs


class SetupFailed(Exception):
    def __init__(self, message: str, tail: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.tail = list(tail)


class Soak:
    def __init__(
        self,
        work: Path,
        args: argparse.Namespace,
        code_dir: Path | None = None,
        extra_env: dict[str, str] | None = None,
    ) -> None:
        self.work = work
        self.timeout: float = args.timeout
        self.specs = Specs(work / "specs")
        self.log = work / "soak.log"
        self.log_lock = threading.Lock()
        # The project is the nearest folder holding .delta-sync/: pin it to `work`.
        (work / ".delta-sync").mkdir(parents=True, exist_ok=True)
        self.state_file = work / ".delta-sync" / "local" / "engine" / "engine.json"
        self.engine_log = work / ".delta-sync" / "local" / "logs" / "engine.log"
        self.env = child_env(os.environ) | {"COLUMNS": "200", "NO_COLOR": "1", "PYTHONUNBUFFERED": "1"}
        self.env |= extra_env or {}
        self.nmt: bool = bool(getattr(args, "nmt", False))
        self.nmt_baselined = False
        if code_dir is not None:  # delta-sync imported from the snapshot, ahead of the editable install
            self.env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(code_dir), self.env.get("PYTHONPATH")]))
        self.running: dict[int, subprocess.Popen[str]] = {}  # by pid: the commands running now
        self.running_lock = threading.Lock()
        self.stopping = threading.Event()
        self.engines: list[dict[str, Any]] = []  # each engine process seen, in the order seen
        self.engines_lock = threading.Lock()
        self.started = time.perf_counter()

    # -- children --------------------------------------------------------------------------------------------

    def _log(self, args: Sequence[str], seconds: float, returncode: int | None, note: str, text: str) -> None:
        shown = " ".join(a if len(a) < 80 else a[:77] + "..." for a in args)
        with self.log_lock, self.log.open("a") as log:
            log.write(f"$ delta-sync {shown}  [{seconds:.2f}s rc={returncode}{note}]\n{text[-3000:]}\n")

    def run(
        self, args: Sequence[str], kill_after: float | None = None, job: bool = False
    ) -> tuple[float, int | None, str, str, bool]:
        """One command in a session of its own: (seconds, exit code, stdout, stderr, killed by us). Killed (its
        process group) after `kill_after` seconds if it still runs then; after --timeout as hung. A `job` (a
        command of the soak, not of the setup or the end) started once the soak is stopping is killed."""
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
        with self.running_lock:
            self.running[process.pid] = process
        if job and self.stopping.is_set():  # the soak is ending: kill_running() may have run before it started
            _kill_group(process.pid)
        killed, hung = False, False
        try:
            try:
                out, err = process.communicate(timeout=self.timeout if kill_after is None else kill_after)
            except subprocess.TimeoutExpired:
                if kill_after is None:
                    hung = True
                _kill_group(process.pid)
                killed = process.wait() == -signal.SIGKILL
                # The copy in the engine's preloaded process holds the pipes until it dies with the client.
                try:
                    out, err = process.communicate(timeout=60)
                except subprocess.TimeoutExpired:
                    out, err = "", "[soak] output still open 60 s after the kill"
        finally:
            with self.running_lock:
                self.running.pop(process.pid, None)
        seconds = time.perf_counter() - started
        if hung:
            err += f"\n[soak] still running after {self.timeout:.0f} s: killed as hung"
            killed = False
        note = " (killed)" if killed else " (hung)" if hung else ""
        self._log(args, seconds, process.returncode, note, out + err)
        self.note_engine()
        return seconds, (None if hung else process.returncode), out, err, killed

    def cli(self, args: Sequence[str], expect: Sequence[int] = (0,)) -> tuple[float, str]:
        """A command of the setup or the end: its exit code must be one of `expect`."""
        seconds, returncode, out, err, _killed = self.run(args)
        if returncode not in expect:
            tail = (out + err).strip().splitlines()[-TAIL:]
            raise SetupFailed(f"`delta-sync {' '.join(args)[:200]}` exited {returncode}", tail)
        return seconds, out

    def job(self, job: Job) -> Outcome:
        if self.stopping.is_set():
            return Outcome(job.index, job.kind, 0.0, 0.0, None, "skipped")
        change = None
        if job.change is not None:
            change = self.specs.toggle(*job.change)
        args = args_of(job.kind)
        started = time.perf_counter() - self.started
        seconds, returncode, out, err, killed = self.run(args, job.kill_after, job=True)
        result = Outcome(job.index, job.kind, round(started, 2), round(seconds, 3), returncode, "ok", job.kill_after)
        result.change = change
        result.died_notices = err.count("The earlier command")
        result.others = (out + err).count("changed by another writer")
        if killed:
            result.outcome = "killed"
            return result
        if job.kill_after is not None:
            result.outcome = "ended before its kill"
        reason = None
        if returncode not in EXPECT[job.kind]:
            reason = "hung" if returncode is None else f"exited {returncode}, expected {EXPECT[job.kind]}"
        elif job.kind == "sql":
            reason = wrong_answer(out)
        if reason is not None:
            result.outcome, result.reason = "failed", reason
            result.command = "delta-sync " + " ".join(args)
            result.tail = (out + err).strip().splitlines()[-TAIL:]
        result.no_changes = (job.kind == "plan" and returncode == 0) or (
            job.kind == "apply" and "No changes" in out + err
        )
        return result

    def kill_running(self) -> None:
        with self.running_lock:
            pids = list(self.running)
        for pid in pids:
            _kill_group(pid)

    # -- the engine ------------------------------------------------------------------------------------------

    def note_engine(self) -> int | None:
        """The engine process of the project now (its state file, its process alive), noted if new."""
        try:
            raw = json.loads(self.state_file.read_text())
            pid, jvm_pid, version = int(raw["pid"]), int(raw["jvm_pid"]), str(raw.get("version"))
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if not _alive(pid):
            return None
        with self.engines_lock:
            if not self.engines or self.engines[-1]["pid"] != pid:
                seen = time.perf_counter() - self.started
                self.engines.append({"pid": pid, "jvm_pid": jvm_pid, "version": version, "seen_at_s": round(seen, 1)})
        return pid

    def status(self) -> dict[str, Any] | None:
        """`engine status --format json`: what the engine says, or None when none runs."""
        _seconds, returncode, out, err, _killed = self.run(["engine", "status", "--format", "json"])
        if returncode != 0:
            console.log(f"[red]engine status exited {returncode}: {(out + err).strip()[-300:]}[/]")
            return None
        try:
            found = json.loads(out)
        except ValueError:
            console.log(f"[red]engine status: unreadable answer {out.strip()[-300:]!r}[/]")
            return None
        return found if found.get("running") else None

    def sample(self, phase: str, done: int) -> dict[str, Any]:
        found = self.status()
        memory = (found or {}).get("memory") or {}
        entry: dict[str, Any] = {
            "phase": phase,
            "commands_done": done,
            "at_s": round(time.perf_counter() - self.started, 1),
            "loadavg1": round(os.getloadavg()[0], 2),
            "pid": None if found is None else found.get("pid"),
            "running": None if found is None else len(found.get("commands") or []),
        }
        entry |= {name: (found or {}).get(name) for name in COUNTERS}
        entry |= {name: memory.get(name) for name in FIGURES}
        if "figures" in memory:
            entry["figures_error"] = memory["figures"]
        if found is not None:
            with self.engines_lock:
                if not self.engines or self.engines[-1]["pid"] != found["pid"]:
                    seen = round(time.perf_counter() - self.started, 1)
                    self.engines.append(
                        {
                            "pid": found["pid"],
                            "jvm_pid": found.get("jvm_pid"),
                            "version": found.get("version"),
                            "seen_at_s": seen,
                        }
                    )
        return entry

    def drain(self) -> tuple[bool, float]:
        """Wait until the engine holds no gateway and runs no Spark job: (drained, seconds waited)."""
        started = time.perf_counter()
        while True:
            found = self.status()
            memory = (found or {}).get("memory") or {}
            if found is not None and memory.get("gateways") == 0 and memory.get("active_jobs") == 0:
                return True, time.perf_counter() - started
            if found is None or time.perf_counter() - started > DRAIN_S:
                return False, time.perf_counter() - started
            time.sleep(1.0)

    def stop_engine(self) -> None:
        """`delta-sync engine stop`, until no engine process of the project is left (each engine seen, any
        engine process started on the project, and their descendants: the preloaded process and its copies,
        the JVM); any still alive after ENGINE_STOP_S is killed by its pid."""
        deadline = time.monotonic() + ENGINE_STOP_S
        told: set[int | None] = set()
        left: list[int] = []
        while True:
            pid = self.note_engine()
            if not told or pid not in told:
                try:
                    self.run(["engine", "stop"])
                except OSError as error:
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

    def memory(self, phase: str, done: int, baseline: bool = False, nmt_log: Path | None = None) -> dict[str, Any]:
        """A memory checkpoint of the engine (the commands running have ended): see the module's text."""
        entry: dict[str, Any] = {
            "phase": phase,
            "commands_done": done,
            "at_s": round(time.perf_counter() - self.started, 1),
            "loadavg1": round(os.getloadavg()[0], 2),
        }
        try:
            raw = json.loads(self.state_file.read_text())
            pid, jvm_pid = int(raw["pid"]), int(raw["jvm_pid"])
        except (OSError, ValueError, KeyError, TypeError):
            entry["error"] = "no engine"
            return entry
        entry |= {"engine_pid": pid, "jvm_pid": jvm_pid}
        entry["engine_rss_mb"] = jvm_memory.proc_status(pid).get("VmRSS_mb")
        preloaded = [c for c in _children(pid) if c != jvm_pid]
        entry["prefork_rss_mb"] = [jvm_memory.proc_status(c).get("VmRSS_mb") for c in preloaded]
        entry["jvm"] = jvm_memory.probe(jvm_pid, self.nmt)
        if self.nmt and baseline and not self.nmt_baselined:
            entry["nmt_baseline"] = jvm_memory.nmt_baseline(jvm_pid)[-80:]
            self.nmt_baselined = True
        elif self.nmt and self.nmt_baselined:
            text, deltas = jvm_memory.nmt_diff(jvm_pid)
            entry["nmt_diff"] = deltas
            if nmt_log is not None:
                with nmt_log.open("a") as out:
                    out.write(f"\n===== {phase}: {done} commands, at {entry['at_s']} s: summary.diff =====\n{text}")
        return entry

    def engine_log_notable(self, most: int = 200) -> list[str]:
        """The engine log's lines other than a lease given or done (starts, stops, deaths, errors)."""
        try:
            lines = self.engine_log.read_text(errors="replace").splitlines()
        except OSError:
            return []
        routine = re.compile(r"engine \d+: lease \d+: (pid \d+: |done$)")
        return [line[:400] for line in lines if not routine.search(line)][-most:]

    def _engine_processes(self) -> list[int]:
        with self.engines_lock:
            pids = {pid for e in self.engines for pid in (e["pid"], e["jvm_pid"]) if pid}
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
        while True:  # descendants
            more = {child for child, parent in parents.items() if parent in pids} - pids
            if not more:
                break
            pids |= more
        return sorted(pid for pid in pids if _alive(pid))


def _children(pid: int) -> list[int]:
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(proc.name))
        except (OSError, IndexError, ValueError):
            continue
    return sorted(found)


def child_env(environ: dict[str, str] | os._Environ[str]) -> dict[str, str]:
    """As at a terminal with the engine: no CI, no DELTA_SYNC_NO_ENGINE, no DELTA_SYNC_HOME."""
    drop = ("DELTA_SYNC_HOME", "CI", "DELTA_SYNC_ENGINE", "DELTA_SYNC_NO_ENGINE", "DELTA_SYNC_ENGINE_IDLE")
    env = {k: v for k, v in environ.items() if k not in drop}
    return env | {"DELTA_SYNC_ENGINE": "1", "DELTA_SYNC_ENGINE_IDLE": ENGINE_IDLE}


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _alive(pid: int) -> bool:
    """A live process (not a zombie) of this pid."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def figure_summary(samples: Sequence[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """Per figure: start, peak, end, and the means of the first and the last 10% of the samples (at least one)."""
    result: dict[str, dict[str, float | None]] = {}
    for name in FIGURES:
        values = [s[name] for s in samples if isinstance(s.get(name), (int, float))]
        if not values:
            result[name] = {"start": None, "peak": None, "end": None, "first_10pct_mean": None, "last_10pct_mean": None}
            continue
        tenth = max(1, round(len(values) / 10))
        result[name] = {
            "start": values[0],
            "peak": max(values),
            "end": values[-1],
            "first_10pct_mean": round(statistics.fmean(values[:tenth]), 1),
            "last_10pct_mean": round(statistics.fmean(values[-tenth:]), 1),
        }
    return result


def timing(outcomes: Sequence[dict[str, Any]]) -> dict[str, dict[str, float | int]]:
    """Seconds per command kind (not killed): median, p95, max; and the means of the first and last 10%."""
    result: dict[str, dict[str, float | int]] = {}
    for kind in [*KINDS, "all"]:
        seconds = [o["seconds"] for o in outcomes if o["outcome"] != "killed" and kind in (o["kind"], "all")]
        if not seconds:
            continue
        ordered = sorted(seconds)
        tenth = max(1, round(len(seconds) / 10))
        result[kind] = {
            "n": len(seconds),
            "median": round(statistics.median(seconds), 2),
            "p95": round(ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)], 2),
            "max": round(ordered[-1], 2),
            "first_10pct_mean": round(statistics.fmean(seconds[:tenth]), 2),
            "last_10pct_mean": round(statistics.fmean(seconds[-tenth:]), 2),
        }
    return result


def summary(results: dict[str, Any]) -> dict[str, Any]:
    outcomes: list[dict[str, Any]] = results["outcomes"]
    by_kind = {kind: dict.fromkeys(OUTCOMES, 0) for kind in KINDS}
    for o in outcomes:
        if o["outcome"] in OUTCOMES:
            by_kind[o["kind"]][o["outcome"]] += 1
    samples = results["samples"]
    last: dict[str, Any] = next((s for s in reversed(samples) if s["pid"] is not None), {})
    soak_s = results.get("soak_s") or 0.0
    ran = sum(1 for o in outcomes if o["outcome"] != "skipped")
    return {
        "commands": ran,
        "by_kind": by_kind,
        "plan_exit_codes": dict(
            Counter(str(o["returncode"]) for o in outcomes if o["kind"] == "plan" and o["outcome"] != "killed")
        ),
        "applies_with_nothing_to_do": sum(1 for o in outcomes if o["kind"] == "apply" and o["no_changes"]),
        "spec_changes": results.get("spec_changes"),
        "kills_drawn": sum(1 for o in outcomes if o["kill_after"] is not None),
        "killed": sum(1 for o in outcomes if o["outcome"] == "killed"),
        "ended_before_kill": sum(1 for o in outcomes if o["outcome"] == "ended before its kill"),
        "died_notices": sum(o["died_notices"] for o in outcomes),
        "changed_by_others": sum(o["others"] for o in outcomes),
        "applies_seeing_others": sum(1 for o in outcomes if o["others"]),
        "failures": len(results["failures"]),
        "engine_processes": len(results["engines"]),
        "engine_restarts": max(0, len(results["engines"]) - 1),
        "served_end": last.get("served"),
        "died_end": last.get("died"),
        "converged": results.get("converged", False),
        "drained": results.get("drained", False),
        "drain_s": results.get("drain_s"),
        "figures": figure_summary([s for s in samples if s["pid"] is not None]),
        "seconds": timing([o for o in outcomes if o["outcome"] != "skipped"]),
        "setup_s": results.get("setup_s"),
        "soak_s": soak_s,
        "wall_s": results.get("wall_s"),
        "commands_per_min": round(ran / soak_s * 60, 1) if soak_s else None,
        "loadavg_start": results["machine"]["loadavg_start"],
        "loadavg_end": results["machine"].get("loadavg_end"),
        "memory": memory_summary(results.get("memory", []), ran),
    }


def report(results: dict[str, Any]) -> None:
    s = results["summary"]
    args = results["args"]
    kinds = Table(title="engine soak: commands by kind")
    for column in ["kind", *OUTCOMES, "median s", "p95 s", "max s", "first/last 10% mean s"]:
        kinds.add_column(column, justify="left" if column == "kind" else "right")
    for kind in KINDS:
        counts = s["by_kind"][kind]
        t = s["seconds"].get(kind, {})
        kinds.add_row(
            kind,
            *((f"[red]{counts[o]}[/]" if o == "failed" and counts[o] else str(counts[o])) for o in OUTCOMES),
            *(str(t.get(k, "")) for k in ("median", "p95", "max")),
            f"{t.get('first_10pct_mean', '')} / {t.get('last_10pct_mean', '')}",
        )
    console.print(kinds)
    figures = Table(title="engine soak: the engine's figures over the samples")
    for column in ("figure", "start", "peak", "end", "first 10% mean", "last 10% mean"):
        figures.add_column(column, justify="left" if column == "figure" else "right")
    for name, f in s["figures"].items():
        figures.add_row(name, *(str(f[k]) for k in ("start", "peak", "end", "first_10pct_mean", "last_10pct_mean")))
    console.print(figures)
    table = Table(title=f"engine soak: summary (seed {args['seed']}, concurrency {args['concurrency']})")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_row("commands run", f"{s['commands']} of {args['commands']}")
    table.add_row("plan exit codes", ", ".join(f"{k}: {v}" for k, v in sorted(s["plan_exit_codes"].items())))
    nothing = s["applies_with_nothing_to_do"]
    table.add_row("spec changes / applies with nothing to do", f"{s['spec_changes']} / {nothing}")
    table.add_row(
        "kills drawn / killed / ended first", f"{s['kills_drawn']} / {s['killed']} / {s['ended_before_kill']}"
    )
    table.add_row("engine: served / died (end)", f"{s['served_end']} / {s['died_end']}")
    table.add_row("'earlier command died' notices", str(s["died_notices"]))
    table.add_row(
        "applies that saw another writer / tables", f"{s['applies_seeing_others']} / {s['changed_by_others']}"
    )
    table.add_row("failures", f"[red]{s['failures']}[/]" if s["failures"] else "0")
    restarts = s["engine_restarts"]
    table.add_row("engine restarts", f"[red]{restarts}[/]" if restarts else "0")
    table.add_row("converged (apply, then plan exits 0)", "yes" if s["converged"] else "[red]no[/]")
    drain = f" in {s['drain_s']:.1f}s" if s["drain_s"] is not None else ""
    table.add_row("drained (no gateway, no job)", ("yes" if s["drained"] else "[red]no[/]") + drain)
    table.add_row("samples", str(len(results["samples"])))
    if s["setup_s"] is not None:
        table.add_row("setup", f"{s['setup_s']:.0f}s")
    table.add_row("soak", f"{s['soak_s'] / 60:.1f} min, {s['commands_per_min']} commands/min")
    if s["wall_s"] is not None:
        table.add_row("total wall time", f"{s['wall_s'] / 60:.1f} min")
    end = s["loadavg_end"] or ()
    table.add_row(
        "load average start / end",
        f"{' '.join(f'{x:.2f}' for x in s['loadavg_start'])} / {' '.join(f'{x:.2f}' for x in end)}",
    )
    console.print(table)
    memory_report(results)
    for failure in results["failures"]:
        console.print(f"[red]failure: {failure.get('command') or failure.get('kind')}: {failure['reason']}[/]")
        for line in failure.get("tail", []):
            console.print(f"  {line}", markup=False, highlight=False)


def snapshot(folder: Path) -> Path:
    """HEAD's delta_sync package (`git archive`), for the children to import: edits made to the work tree while
    the soak runs (others work in it) change the engine's code fingerprint, and so would restart the engine."""
    archive = subprocess.run(["git", "archive", "HEAD", "delta_sync"], cwd=ROOT, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    return folder


def copy_tree(folder: Path) -> Path:
    """The work tree's delta_sync package as it is now, copied (no git): edits made after do not reach the soak."""
    shutil.copytree(ROOT / "delta_sync", folder / "delta_sync", ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def git_head() -> str | None:
    """HEAD's commit, read from .git's files (git is not run)."""
    folder = ROOT / ".git"
    try:
        head = (folder / "HEAD").read_text().strip()
        if not head.startswith("ref: "):
            return head[:7]
        ref = head[5:]
        if (folder / ref).is_file():
            return (folder / ref).read_text().strip()[:7]
        for line in (folder / "packed-refs").read_text().splitlines():
            if line.endswith(" " + ref):
                return line.split()[0][:7]
    except OSError:
        pass
    return None


def code_fingerprint(folder: Path) -> str:
    """A digest of the package's source files' contents: which code ran."""
    import hashlib

    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*.py")):
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def code(snapshot: bool, copied: Path | None = None) -> dict[str, Any]:
    """HEAD, and whether what ran differs from it (never for a snapshot; the work tree's edits are listed)."""
    if copied is not None:
        return {
            "head": git_head(),
            "ran": "copy of the work tree (made at the start, without git)",
            "fingerprint": code_fingerprint(copied / "delta_sync"),
        }

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False).stdout

    dirty = [line for line in git("status", "--porcelain", "--", "delta_sync").splitlines() if line.strip()]
    head = git("rev-parse", "--short", "HEAD").strip()
    if snapshot:
        return {"head": head, "ran": "snapshot of HEAD", "dirty": False, "tree_dirty_files": dirty}
    return {"head": head, "ran": "work tree", "dirty": bool(dirty), "dirty_files": dirty}


def soak_commands(soak: Soak, jobs: Sequence[Job], args: argparse.Namespace, results: dict[str, Any]) -> None:
    """Run the jobs `concurrency` at a time, sampling the engine every `sample_every` commands; every
    `memory_every` commands (when set), the commands running end before a memory checkpoint, then the next start."""
    done = 0
    every = args.memory_every if args.memory_every > 0 else len(jobs)
    baseline_at = args.nmt_baseline_at if args.nmt_baseline_at is not None else every
    queue = iter(jobs)
    submitted, barrier = 0, min(every, len(jobs))
    with ThreadPoolExecutor(max_workers=args.concurrency, thread_name_prefix="command") as pool:
        try:
            pending: set[Future[Outcome]] = set()

            def fill() -> None:
                nonlocal submitted
                while len(pending) < args.concurrency and submitted < barrier:
                    pending.add(pool.submit(soak.job, next(queue)))
                    submitted += 1

            fill()
            while pending:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    outcome = future.result()
                    done += 1
                    results["outcomes"].append(asdict(outcome))
                    if outcome.outcome == "failed":
                        failure = {k: v for k, v in asdict(outcome).items() if k not in QUIET_FIELDS}
                        results["failures"].append(failure)
                        console.log(f"[red]command {outcome.index} ({outcome.kind}) failed: {outcome.reason}[/]")
                        for line in outcome.tail[-5:]:
                            console.print(f"  {line}", markup=False, highlight=False)
                    if done % args.sample_every == 0:
                        sample = soak.sample("soak", done)
                        results["samples"].append(sample)
                        log_sample(sample, len(jobs), results)
                if args.memory_every > 0 and not pending and done == barrier and done < len(jobs):
                    checkpoint = soak.memory("soak", done, baseline=done >= baseline_at, nmt_log=nmt_log(args))
                    results["memory"].append(checkpoint)
                    log_memory(checkpoint)
                    barrier = min(barrier + every, len(jobs))
                fill()
        finally:
            soak.stopping.set()
            pool.shutdown(wait=False, cancel_futures=True)
            if sys.exc_info()[0] is not None:
                soak.kill_running()
    results["outcomes"].sort(key=lambda o: o["index"])


def log_sample(sample: dict[str, Any], total: int, results: dict[str, Any]) -> None:
    failed = len(results["failures"])
    console.log(
        f"[{sample['commands_done']}/{total}] engine {sample['pid']}: served {sample['served']}, died "
        f"{sample['died']}, running {sample['running']}, gateways {sample['gateways']} "
        f"({sample['gateway_objects']} objects), jobs {sample['active_jobs']}, heap {sample['heap_used_mb']} MB, "
        f"rss engine {sample['engine_rss_mb']} MB / JVM {sample['jvm_rss_mb']} MB; load {sample['loadavg1']}"
        + (f"; [red]{failed} failed[/]" if failed else "")
    )


def nmt_log(args: argparse.Namespace) -> Path:
    out = Path(args.out)
    return out.with_name(f"{out.stem}_nmt.txt")


def log_memory(entry: dict[str, Any]) -> None:
    jvm = entry.get("jvm") or {}
    nmt = jvm.get("nmt") or {}
    console.log(
        f"memory @ {entry['commands_done']}: JVM rss {jvm.get('VmRSS_mb')} MB (anon {jvm.get('RssAnon_mb')}), heap "
        f"{jvm.get('heap_used_mb')}/{jvm.get('heap_committed_mb')} MB, "
        f"metaspace {jvm.get('metaspace_committed_mb')} MB, "
        f"threads {jvm.get('threads')}, classes {jvm.get('loadedClasses')} (-{jvm.get('unloadedClasses')}), arenas "
        f"{jvm.get('arena_heaps')} ({jvm.get('arena_rss_mb')} MB), NMT committed {nmt.get('total_committed_mb')} MB "
        f"malloc {nmt.get('malloc_mb')} MB; engine {entry.get('engine_rss_mb')} MB, preloaded "
        f"{entry.get('prefork_rss_mb')}; load {entry['loadavg1']}; probe {jvm.get('probe_s')} s"
        + (f"; diff {entry['nmt_diff']}" if entry.get("nmt_diff") else "")
    )


# The memory figures tabled and summarised: (key, label) of a checkpoint's JVM figures.
MEMORY_FIGURES = (
    ("VmRSS_mb", "JVM RSS"),
    ("RssAnon_mb", "anonymous"),
    ("RssFile_mb", "file-backed"),
    ("heap_committed_mb", "heap committed"),
    ("heap_used_mb", "heap used"),
    ("metaspace_committed_mb", "Metaspace"),
    ("threads", "threads"),
    ("loadedClasses", "classes loaded"),
    ("unloadedClasses", "unloaded"),
    ("arena_heaps", "malloc arena heaps"),
    ("arena_rss_mb", "their RSS"),
)


def slope(points: Sequence[tuple[float, float]]) -> float | None:
    """Least squares: y per unit of x."""
    if len(points) < 2:
        return None
    mean_x = statistics.fmean(x for x, _y in points)
    mean_y = statistics.fmean(y for _x, y in points)
    spread = sum((x - mean_x) ** 2 for x, _y in points)
    if not spread:
        return None
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / spread


def memory_summary(checkpoints: Sequence[dict[str, Any]], commands: int) -> dict[str, Any]:
    """Per figure (and NMT category): its value at each checkpoint, and its slope (MB or count per 1,000
    commands) over the last 4,000 commands (all of them if fewer than 5,000 ran: from the first checkpoint
    after the start)."""
    points = [c for c in checkpoints if "jvm" in c and c["phase"] != "idle"]
    idle = next((c for c in checkpoints if "jvm" in c and c["phase"] == "idle"), None)
    if not points:
        return {}
    window_from = max(commands - 4000, min((c["commands_done"] for c in points if c["commands_done"] > 0), default=0))
    window = [c for c in points if c["commands_done"] >= window_from]

    def series(get: Any) -> dict[str, Any]:
        values = [(c["commands_done"], get(c)) for c in points]
        fit = [(x, y) for x, y in values if x >= window_from and isinstance(y, (int, float))]
        rate = slope(fit)
        shown = {str(x): y for x, y in values} | ({"idle": get(idle)} if idle is not None else {})
        return {
            "values": shown,
            "per_1000": None if rate is None else round(rate * 1000, 2),
            "change": round(fit[-1][1] - fit[0][1], 1) if len(fit) >= 2 else None,
        }

    result: dict[str, Any] = {
        "window": [window_from, max(c["commands_done"] for c in window)],
        "figures": {key: series(lambda c, k=key: c["jvm"].get(k)) for key, _label in MEMORY_FIGURES},
    }
    result["figures"]["engine_rss_mb"] = series(lambda c: c.get("engine_rss_mb"))
    result["figures"]["prefork_rss_mb"] = series(lambda c: sum(c.get("prefork_rss_mb") or [0]) or None)
    categories: list[str] = []
    for c in points:
        for name in (c["jvm"].get("nmt") or {}).get("committed") or {}:
            if name not in categories:
                categories.append(name)
    if categories:
        result["nmt_total"] = series(lambda c: (c["jvm"].get("nmt") or {}).get("total_committed_mb"))
        result["nmt_malloc"] = series(lambda c: (c["jvm"].get("nmt") or {}).get("malloc_mb"))
        result["nmt_committed"] = {
            name: series(lambda c, n=name: ((c["jvm"].get("nmt") or {}).get("committed") or {}).get(n))
            for name in categories
        }
        result["nmt_malloc_by_category"] = {
            name: series(lambda c, n=name: ((c["jvm"].get("nmt") or {}).get("malloc") or {}).get(n))
            for name in categories
        }
    return result


def memory_report(results: dict[str, Any]) -> None:
    summary_ = results["summary"].get("memory") or {}
    points = [c for c in results.get("memory", []) if "jvm" in c]
    if not points or not summary_:
        return
    keys = ["idle" if c["phase"] == "idle" else str(c["commands_done"]) for c in points]
    table = Table(title=f"engine soak: memory checkpoints (slope over commands {summary_['window']}, per 1,000)")
    table.add_column("figure")
    for key in keys:
        table.add_column(key, justify="right")
    table.add_column("per 1,000", justify="right")
    rows = [(label, summary_["figures"][key]) for key, label in MEMORY_FIGURES]
    rows += [("engine (Python) RSS", summary_["figures"]["engine_rss_mb"])]
    if "nmt_total" in summary_:
        rows += [("NMT committed", summary_["nmt_total"]), ("NMT malloc", summary_["nmt_malloc"])]
        rows += [(f"NMT {name}", s) for name, s in summary_["nmt_committed"].items()]
    for label, s in rows:
        table.add_row(label, *(str(s["values"].get(key, "")) for key in keys), str(s["per_1000"]))
    console.print(table)
    if trim := results.get("trim"):
        console.print(
            f"System.trim_native_heap at the end: JVM RSS {trim['rss_before_mb']} -> {trim['rss_after_mb']} MB"
        )


COMMAND_FIELDS = ("index", "kind", "started", "seconds", "returncode", "outcome", "kill_after")


def dump(results: dict[str, Any]) -> str:
    """The results as JSON, each sample and each command on a line of its own (a command as a row of
    COMMAND_FIELDS: a failure's details are under `failures`)."""
    lines = {
        "memory": [json.dumps(m) for m in results.get("memory", [])],
        "samples": [json.dumps(s) for s in results["samples"]],
        "commands": [json.dumps([o[k] for k in COMMAND_FIELDS]) for o in results["outcomes"]],
    }
    rest = {k: v for k, v in results.items() if k not in ("memory", "samples", "outcomes")}
    rest["command_fields"] = list(COMMAND_FIELDS)
    text = json.dumps(rest, indent=1)[: -len("\n}")]
    for name, rows in lines.items():
        text += f',\n "{name}": [' + ("\n  " + ",\n  ".join(rows) + "\n ]" if rows else "]")
    return text + "\n}\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commands", type=int, default=1000, help="commands to run in the soak")
    parser.add_argument("--concurrency", type=int, default=4, help="commands running at once")
    parser.add_argument("--seed", type=int, default=None, help="seed of every random choice (default: random)")
    parser.add_argument("--kill-share", type=float, default=0.05, help="share of the commands SIGKILLed")
    parser.add_argument("--sample-every", type=int, default=25, help="commands between two engine samples")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds after which a command is hung")
    parser.add_argument(
        "--code",
        choices=("snapshot", "copy", "tree"),
        default="snapshot",
        help="the delta-sync the commands run: a snapshot of HEAD (default: edits to the work tree during the soak "
        "do not restart the engine), a copy of the work tree made at the start (no git), or the work tree as it is",
    )
    parser.add_argument(
        "--memory-every", type=int, default=0, help="commands between two memory checkpoints of the engine (0: none)"
    )
    parser.add_argument(
        "--nmt",
        action="store_true",
        help="the engine's JVM tracks its native memory (-XX:NativeMemoryTracking=summary)",
    )
    parser.add_argument(
        "--nmt-baseline-at", type=int, default=None, help="commands after which NMT's baseline is taken"
    )
    parser.add_argument("--java-options", default="", help="more options of the engine's JVM (JDK_JAVA_OPTIONS)")
    parser.add_argument(
        "--engine-env", action="append", default=[], metavar="KEY=VALUE", help="a variable of the engine's environment"
    )
    parser.add_argument(
        "--idle-probe",
        type=float,
        default=0.0,
        help="seconds the engine then stays idle before one more memory checkpoint (0: none)",
    )
    parser.add_argument(
        "--trim-at-end", action="store_true", help="after the last checkpoint, the RSS `System.trim_native_heap` frees"
    )
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "engine_soak.json")
    parser.add_argument("--keep", action="store_true", help="keep the temporary project (catalog, logs, soak.log)")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    jobs = draw(random.Random(seed), args.commands, args.kill_share)
    work = Path(tempfile.mkdtemp(prefix="delta-sync-engine-soak-"))
    code_dir = None
    if args.code == "snapshot":
        code_dir = snapshot(Path(tempfile.mkdtemp(prefix="delta-sync-engine-soak-code-")))
    elif args.code == "copy":
        code_dir = copy_tree(Path(tempfile.mkdtemp(prefix="delta-sync-engine-soak-code-")))
    extra_env = dict(item.split("=", 1) for item in args.engine_env)
    java_options = [os.environ.get("JDK_JAVA_OPTIONS", "")]
    java_options += ["-XX:NativeMemoryTracking=summary"] if args.nmt else []
    java_options += [args.java_options]
    if joined := " ".join(o for o in java_options if o.strip()):
        extra_env["JDK_JAVA_OPTIONS"] = joined
    soak = Soak(work, args, code_dir, extra_env)
    if args.memory_every > 0:
        nmt_log(args).write_text(f"engine soak, NMT summary.diff at each checkpoint; engine env {extra_env}\n")
    console.log(f"seed {seed}: {args.commands} commands, {args.concurrency} at a time; working in {work}")
    results: dict[str, Any] = {
        "args": vars(args) | {"out": str(args.out), "seed": seed},
        "machine": {"cores": os.cpu_count(), "loadavg_start": loadavg(), "python": sys.version.split()[0]},
        "code": code(code_dir is not None, code_dir if args.code == "copy" else None),
        "engine_env": extra_env,
        "project": str(work),
        "outcomes": [],
        "failures": [],
        "samples": [],
        "memory": [],
        "engines": soak.engines,
    }

    def terminated(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)  # the finally below still stops the engine

    signal.signal(signal.SIGTERM, terminated)
    signal.signal(signal.SIGHUP, terminated)
    ok = False
    try:
        try:
            soak.specs.write_all()
            first_s, _out = soak.cli(["apply", "specs", "--yes"])
            console.log(f"setup: 4 tables created in {first_s:.1f}s (the engine started with it)")
            for table in TABLES:
                soak.cli(["sql", create_sql(table), "--yes"])
            _s, out = soak.cli(args_of("sql"))
            if (wrong := wrong_answer(out)) is not None:
                raise SetupFailed(f"the aggregate after the INSERTs is wrong: {wrong}")
            results["setup_s"] = round(time.perf_counter() - soak.started, 1)
            console.log(f"setup done in {results['setup_s']:.0f}s: {sum(t.rows for t in TABLES)} rows")
            results["samples"].append(start := soak.sample("start", 0))
            log_sample(start, len(jobs), results)
            if args.memory_every > 0:
                results["memory"].append(checkpoint := soak.memory("start", 0, baseline=args.nmt_baseline_at == 0))
                log_memory(checkpoint)
            soak_started = time.perf_counter()
            try:
                soak_commands(soak, jobs, args, results)
            finally:
                results["soak_s"] = round(time.perf_counter() - soak_started, 1)
                results["spec_changes"] = soak.specs.changes
            results["samples"].append(end := soak.sample("end", len(jobs)))
            log_sample(end, len(jobs), results)
            soak.specs.write_all()
            soak.cli(["apply", "specs", "--yes"])
            _s, returncode, out, err, _k = soak.run(["plan", "specs", "--detailed-exitcode"])
            results["converged"] = returncode == 0
            if returncode != 0:
                results["convergence_tail"] = (out + err).strip().splitlines()[-TAIL:]
                console.log(f"[red]not converged: plan exited {returncode}[/]")
            drained, waited = soak.drain()
            results["drained"], results["drain_s"] = drained, round(waited, 1)
            results["samples"].append(final := soak.sample("final", len(jobs)))
            log_sample(final, len(jobs), results)
            if args.memory_every > 0:
                results["memory"].append(checkpoint := soak.memory("final", len(jobs), nmt_log=nmt_log(args)))
                log_memory(checkpoint)
                jvm_pid = checkpoint.get("jvm_pid")
                if args.idle_probe > 0 and jvm_pid:
                    console.log(f"idle for {args.idle_probe:.0f} s: Spark's idle pool threads end after 60 s")
                    time.sleep(args.idle_probe)
                    idle = soak.memory("idle", len(jobs), nmt_log=nmt_log(args))
                    idle["idle_s"] = args.idle_probe
                    results["memory"].append(idle)
                    log_memory(idle)
                if args.trim_at_end and jvm_pid:
                    results["trim"] = jvm_memory.trim(jvm_pid)
                    console.log(f"trim_native_heap: {results['trim']}")
        except SetupFailed as error:
            results["error"] = str(error)
            results["error_tail"] = error.tail
            console.log(f"[red]{error}[/]")
            for line in error.tail:
                console.print(f"  {line}", markup=False, highlight=False)
        except BaseException as error:
            results["error"] = f"{type(error).__name__}: {error}"
            if not isinstance(error, (KeyboardInterrupt, SystemExit)):
                results["error_tail"] = traceback.format_exc().splitlines()[-TAIL:]
            raise
    finally:
        soak.stopping.set()
        soak.kill_running()
        soak.stop_engine()
        results["engine_log"] = soak.engine_log_notable()
        results["wall_s"] = round(time.perf_counter() - soak.started, 1)
        results["machine"]["loadavg_end"] = loadavg()
        results["summary"] = summary(results)
        s = results["summary"]
        ok = (
            "error" not in results
            and s["commands"] == args.commands
            and not s["failures"]
            and not s["engine_restarts"]
            and s["converged"]
            and s["drained"]
        )
        results["ok"] = ok
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(dump(results))
        if args.keep or not ok:
            console.log(f"kept {work} (soak.log; engine log {soak.engine_log})")
        else:
            shutil.rmtree(work, ignore_errors=True)
        if code_dir is not None:
            shutil.rmtree(code_dir, ignore_errors=True)
    report(results)
    console.log(f"written to {args.out}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
