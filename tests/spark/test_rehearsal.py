"""Rehearsal on shallow clones, on real Delta: what Delta refuses is found before anything changes.

One plan holds the refusals found by trying (a property value Delta rejects, a table with a writer
feature this Delta cannot write) next to good changes (a new table, a widening on a table delta-rs
wrote, a backfill on a sampled copy): the refusals block their tables, the good ones rehearse clean,
and no source table's version, log or files move, whatever the outcome.
"""

from __future__ import annotations

import json
import os
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from delta_sync.model.state import SchemaName, TableName
from delta_sync.planning import rehearsal
from delta_sync.planning.hazards import Hazard
from delta_sync.planning.rehearsal import Outcome
from delta_sync.review import clones, execution, pipeline, policy
from delta_sync.specs.settings import Environment

from .conftest import Project


def files(location: Path) -> list[tuple[str, int]]:
    """Every file under a table's folder (its log included), with its size: what a write would change."""
    return sorted((str(p.relative_to(location)), p.stat().st_size) for p in location.rglob("*") if p.is_file())


def location(project: Project, table: str) -> Path:
    (row,) = project.sql(f"DESCRIBE DETAIL {table}")
    return Path(str(row[4]).removeprefix("file:"))


def version(project: Project, table: str) -> int:
    return int(str(project.sql(f"DESCRIBE HISTORY {table} LIMIT 1")[0][0]))


def add_unknown_writer_feature(folder: Path) -> None:
    """A commit as a newer writer would leave it: a writer feature this Delta does not know. Readers may
    read the table; Delta refuses to write it."""
    log = folder / "_delta_log"
    next_version = len(list(log.glob("*.json")))
    protocol = {
        "minReaderVersion": 1,
        "minWriterVersion": 7,
        "writerFeatures": ["appendOnly", "invariants", "futureWriterFeature"],
    }
    lines = [{"commitInfo": {"timestamp": 0, "operation": "UPGRADE PROTOCOL"}}, {"protocol": protocol}]
    (log / f"{next_version:020d}.json").write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_refusals_block_their_tables_and_nothing_changes(project: Project, schema: str, tmp_path: Path) -> None:
    catalog = project.catalog
    project.sql(f"CREATE SCHEMA {schema}")
    # A table delta-rs wrote, with the CHECK as delta-rs stores it (`'0'::decimal(12, 2)`).
    paid = tmp_path / "payments"
    rows = pa.table(
        {
            "id": pa.array([1, 2], pa.int64()),
            "amount": pa.array([Decimal("1.00"), Decimal("2.50")], pa.decimal128(12, 2)),
        }
    )
    write_deltalake(str(paid), rows)
    DeltaTable(str(paid)).alter.add_constraint({"amount_positive": "amount >= 0"})
    project.sql(f"CREATE TABLE {schema}.payments USING DELTA LOCATION '{paid}'")
    project.sql(f"CREATE TABLE {schema}.settings (id bigint, v string) USING delta")
    project.sql(f"INSERT INTO {schema}.settings VALUES (1, 'a')")
    project.sql(f"CREATE TABLE {schema}.future (id bigint) USING delta")
    project.sql(f"INSERT INTO {schema}.future VALUES (1)")
    add_unknown_writer_feature(location(project, f"{schema}.future"))
    project.sql(f"REFRESH TABLE {schema}.future")
    project.sql(f"CREATE TABLE {schema}.events (id bigint, kind string) USING delta")
    project.sql(f"INSERT INTO {schema}.events VALUES (1, 'a'), (2, NULL)")
    project.write(
        "payments.yaml",
        f"""\
        table: {schema}.payments
        columns:
          - name: id
            type: bigint
          - name: amount
            type: decimal(14,2)
        checks:
          amount_positive: amount >= CAST('0' AS decimal(12, 2))
        """,
    )
    project.write(
        "settings.yaml",
        f"""\
        table: {schema}.settings
        columns:
          - name: id
            type: bigint
          - name: v
            type: string
        properties:
          delta.deletedFileRetentionDuration: one week
        """,
    )
    project.write(
        "future.yaml",
        f"""\
        table: {schema}.future
        columns:
          - name: id
            type: bigint
          - name: note
            type: string
        """,
    )
    project.write(
        "events.yaml",
        f"""\
        table: {schema}.events
        columns:
          - name: id
            type: bigint
          - name: kind
            type: string
            nullable: false
            backfill: "'unknown'"
        """,
    )
    project.write("fresh.yaml", f"table: {schema}.fresh\ncolumns:\n  - name: id\n    type: bigint\n")
    sources = ["payments", "settings", "future", "events"]
    before = {t: (version(project, f"{schema}.{t}"), files(location(project, f"{schema}.{t}"))) for t in sources}

    desired = project.desired()
    plain = pipeline.review(catalog, desired, {Hazard.REWRITE, Hazard.IRREVERSIBLE, Hazard.BREAKING})
    # Without --rehearse, as before: nothing is known to fail (apply would find out half-way).
    assert plain.assessment.rehearsals is None
    assert not [f for f in plain.assessment.findings if f.hazard is Hazard.REHEARSAL]

    # events (a backfill) is larger than 0 bytes: it is rehearsed on a sampled copy.
    env = Environment(name="local", rehearse_max_bytes=0)
    statuses: list[str] = []
    rehearsed = pipeline.rehearse(catalog, plain, desired, "feedc0de00000001", env, statuses.append)
    outcome = {str(r.table).split(".")[-1]: r for r in rehearsed.assessment.rehearsals or ()}
    assert {t: r.outcome for t, r in outcome.items()} == {
        "payments": Outcome.PASSED,
        "settings": Outcome.FAILED,
        "future": Outcome.FAILED,
        "events": Outcome.PASSED,
        "fresh": Outcome.PASSED,
    }, {t: (r.text(), r.reason) for t, r in outcome.items()}
    assert outcome["settings"].error_class == "DELTA_INVALID_INTERVAL"
    assert outcome["settings"].statement is not None
    assert "delta.deletedFileRetentionDuration" in outcome["settings"].statement
    # A clone would leave the unknown feature out; named again, Delta refuses it, as it refuses the ALTER.
    assert "futureWriterFeature" in outcome["future"].failure(), outcome["future"].failure()
    assert outcome["events"].sampled is not None
    assert outcome["payments"].sampled is None
    assert all(r.seconds > 0 for r in outcome.values())
    assert any("Rehearsing 5 table(s)" in s for s in statuses)

    blocks = {b.finding.table.name: b for b in rehearsed.assessment.blocks if b.finding.hazard is Hazard.REHEARSAL}
    assert sorted(blocks) == ["future", "settings"]
    origin = blocks["settings"].finding.origin
    assert origin is not None
    assert origin.file.endswith("settings.yaml")
    assert "DELTA_INVALID_INTERVAL" in blocks["settings"].why

    # Nothing of any source table moved; no clone and no scratch schema is left.
    assert {
        t: (version(project, f"{schema}.{t}"), files(location(project, f"{schema}.{t}"))) for t in sources
    } == before
    assert not catalog.read([TableName.parse(f"{schema}.fresh")]).tables
    scratch = f"{schema}{rehearsal.DEFAULT_SCHEMA_SUFFIX}"
    assert scratch not in {str(r[0]) for r in project.sql("SHOW SCHEMAS")}

    # The good tables then apply, and converge, as rehearsed.
    good = policy.without_blocked(rehearsed)
    assert sorted(t.name for t in rehearsed.assessment.blocked_tables) == ["future", "settings"]
    execution.apply_plan(catalog, good)
    replanned = pipeline.make_plan(catalog, desired)
    assert {a.name.name for a in replanned.changes if hasattr(a, "name")} <= {"settings", "future"}


def test_leftovers_of_a_dead_rehearsal_are_dropped_by_the_next(project: Project, schema: str) -> None:
    catalog = project.catalog
    project.sql(f"CREATE SCHEMA {schema}")
    project.sql(f"CREATE TABLE {schema}.t (id bigint) USING delta")
    project.write(
        "t.yaml", f"table: {schema}.t\ncolumns:\n  - name: id\n    type: bigint\n  - name: x\n    type: int\n"
    )
    scratch = SchemaName(None, f"{schema}{rehearsal.DEFAULT_SCHEMA_SUFFIX}")
    source = TableName.parse(f"{schema}.t")
    # What a SIGKILLed rehearsal leaves: a stamped clone whose process is gone (and one from a live process).
    import socket
    import subprocess
    import sys

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(gone.stdout)
    project.sql(f"CREATE SCHEMA {scratch.sql()}")
    for pid, plan_id in ((dead_pid, "0000dead0000dead"), (os.getpid(), "00001ive00001ive")):
        stamp = rehearsal.stamp(plan_id, source, socket.gethostname(), pid, rehearsal.now())
        clone = rehearsal.clone_name(source, scratch, plan_id)
        project.sql(
            f"CREATE TABLE {clone.sql()} SHALLOW CLONE {source.sql()} TBLPROPERTIES ('{rehearsal.STAMP}' = '{stamp}')"
        )
    project.sql(f"CREATE TABLE {scratch.sql()}.mine (id bigint) USING delta")  # not a clone: never touched

    assert [t.name for t in clones.leftovers(catalog, [scratch])] == [f"t{rehearsal.MARKER}0000dead0000dead"]
    desired = project.desired()
    review = pipeline.rehearse(
        catalog, pipeline.review(catalog, desired), desired, "feedc0de00000002", Environment(name="local")
    )
    assert [r.outcome for r in review.assessment.rehearsals or ()] == [Outcome.PASSED]
    left = sorted(t.name for t in catalog.list_tables(scratch))
    assert left == ["mine", f"t{rehearsal.MARKER}00001ive00001ive"]
    # `rehearsal clean` drops every stamped clone, the live one's too; other tables stay.
    assert [t.name for t in clones.clean(catalog, [scratch], everything=True)] == [
        f"t{rehearsal.MARKER}00001ive00001ive"
    ]
    assert [t.name for t in catalog.list_tables(scratch)] == ["mine"]
