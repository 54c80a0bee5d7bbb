"""The warm engine reuses the catalog entries it read (delta_sync.spark.catalog_events), and only while no catalog
event touched them. Differential, on real Delta through the engine: every command below runs with
DELTA_SYNC_CATALOG_REUSE=verify, which reads every entry again and fails the command when a reused one differs
from that fresh read. After each kind of change made through the engine (`sql` CREATE, DROP, RENAME, SET
LOCATION, CREATE OR REPLACE, views, a schema dropped; `apply`; a rehearsal's clones; `rollback`), the next plan
reuses the entries nothing touched and reads the touched ones again, and says what the catalog says. In-process,
nothing is reused: a command's JVM reads each entry once.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.spark.cli import ENGINE, IN_PROCESS, Cli

pytestmark = pytest.mark.spark

VERIFY = {"DELTA_SYNC_CATALOG_REUSE": "verify"}
TABLE = "table: r.{name}\ncolumns:\n  - {{name: id, type: bigint}}\n"
EXTERNAL = "table: r.e\nlocation: {location}\ncolumns:\n  - {{name: id, type: bigint}}\n"
VIEW = "view: r.v\nsql: SELECT id FROM r.a\n"
TABLES = {"a", "b", "e", "v"}


@pytest.fixture
def cli(tmp_path: Path) -> Iterator[Cli]:
    runner = Cli(tmp_path, ENGINE)
    specs = tmp_path / "specs"
    specs.mkdir()
    for name in ("a", "b"):
        (specs / f"{name}.yaml").write_text(TABLE.format(name=name))
    (specs / "e.yaml").write_text(EXTERNAL.format(location=(tmp_path / "lake" / "e").as_uri()))
    (specs / "v.yaml").write_text(VIEW)
    yield runner
    runner.close()


def run(cli: Cli, *args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    done = cli.run(list(args), env=VERIFY)
    assert done.returncode == code, f"{args}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    assert "this is a delta-sync bug" not in done.stderr, done.stderr
    return done


def reused(done: subprocess.CompletedProcess[str]) -> set[str]:
    """The entries of schema r the command reused (each checked against a fresh read)."""
    found: set[str] = set()
    said = r"DELTA_SYNC_CATALOG_REUSE=verify: r: \d+ reused entries as read \[([^\]]*)\]"
    for names in re.findall(said, done.stderr):
        found |= {n for n in names.split(",") if n}
    return found


def plan(cli: Cli, code: int | None) -> set[str]:
    """A plan of the specs (exit 0: nothing to do; 2: changes; 3: blocked; None: any of them), and what it
    reused."""
    done = cli.run(["plan", "specs", "--detailed-exitcode"], env=VERIFY)
    assert done.returncode == code if code is not None else done.returncode in (0, 2, 3), done.stdout + done.stderr
    assert "this is a delta-sync bug" not in done.stderr, done.stderr
    return reused(done)


def test_reused_entries_are_what_the_catalog_says_after_every_kind_of_change(cli: Cli, tmp_path: Path) -> None:
    run(cli, "apply", "specs", "--yes")
    # apply read the entries (before and after its statements), so the next plan reuses all of them.
    assert plan(cli, 0) == TABLES

    # A rename: both names read again, the rest reused.
    run(cli, "sql", "ALTER TABLE r.b RENAME TO r.b2")
    assert plan(cli, 2) == TABLES - {"b"}
    run(cli, "sql", "ALTER TABLE r.b2 RENAME TO r.b")
    assert plan(cli, 0) == TABLES - {"b"}

    # SET LOCATION: the external table now points at another Delta table (of the same schema, as Delta requires);
    # whatever the plan makes of the spec's location, it reads the entry again.
    other = (tmp_path / "lake" / "other").as_uri()
    run(cli, "sql", f"CREATE TABLE delta.`{other}` (id BIGINT) USING delta")
    run(cli, "sql", f"ALTER TABLE r.e SET LOCATION '{other}'")
    assert plan(cli, None) == TABLES - {"e"}
    run(cli, "sql", f"ALTER TABLE r.e SET LOCATION '{(tmp_path / 'lake' / 'e').as_uri()}'")
    assert plan(cli, 0) == TABLES - {"e"}

    # DROP, CREATE, CREATE OR REPLACE of a table; a view replaced, dropped and made again.
    run(cli, "sql", "DROP TABLE r.a", "--yes")
    assert plan(cli, 2) == TABLES - {"a"}
    run(cli, "sql", "CREATE TABLE r.a (id BIGINT) USING delta")
    assert plan(cli, 0) == TABLES - {"a"}
    run(cli, "sql", "CREATE OR REPLACE TABLE r.a (id BIGINT) USING delta COMMENT 'replaced'", "--yes")
    assert plan(cli, 2) == TABLES - {"a"}
    run(cli, "sql", "CREATE OR REPLACE VIEW r.v AS SELECT id + 1 AS id FROM r.a", "--yes")
    assert plan(cli, 2) == TABLES - {"v"}
    run(cli, "sql", "DROP VIEW r.v", "--yes")
    assert plan(cli, 2) == TABLES - {"v"}

    # apply makes it right again; its own changes are events too.
    run(cli, "apply", "specs", "--yes", "--allow", "destructive,irreversible,breaking")
    assert plan(cli, 0) == TABLES

    # A new table in the schema, made by hand: the names asked for are reused; the new one is not a spec's.
    run(cli, "sql", "CREATE TABLE r.scratch (id BIGINT) USING delta")
    assert plan(cli, 0) == TABLES

    # A rehearsal makes and drops shallow clones in a schema of its own; then an apply of the rehearsed plan.
    spec = tmp_path / "specs" / "b.yaml"
    spec.write_text(TABLE.format(name="b") + "  - {name: note, type: string}\n")
    rehearsed = run(cli, "plan", "specs", "--rehearse", "--out", "plan.json")
    assert "# rehearsal: passed on a shallow clone" in rehearsed.stdout
    run(cli, "apply", "plan.json", "--yes")
    assert plan(cli, 0) >= TABLES - {"b"}  # Delta may or may not tell the catalog of a new column

    # A rollback restores b's schema (an ALTER on the catalog's side too); the plan then has the column to add.
    run(cli, "rollback", "plan.json", "--yes", "--allow", "destructive,irreversible,breaking")
    assert plan(cli, 2) <= TABLES

    # A schema dropped with everything in it: nothing of it is reused.
    run(cli, "sql", "DROP SCHEMA r CASCADE", "--yes")
    assert plan(cli, 2) == set()
    run(cli, "apply", "specs", "--yes")
    assert plan(cli, 0) == TABLES

    # In-process, as on CI: a command's JVM reads each entry once, and reuses none.
    cli.use(IN_PROCESS)
    assert plan(cli, 0) == set()
