"""Reader compatibility on real Delta: the protocol each plan predicts is the one Delta writes, for every
feature delta-sync can enable; a rename held to an old Spark is blocked; features are dropped on purpose
and the re-plan is empty; and what delta-rs (the `deltalake` package) really does after each migration
matches the plan's verdict for it."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from deltalake import DeltaTable, write_deltalake

import delta_sync
from delta_sync.model.state import Consumer, TableName
from delta_sync.planfile.document import StalePlanError
from delta_sync.planning.compatibility import protocol
from delta_sync.planning.hazard_policy import assess
from delta_sync.planning.hazards import ALLOWABLE, Hazard
from delta_sync.review import execution, pipeline

from .conftest import Project

ALL = set(ALLOWABLE)


def converge(project: Project, table: str) -> protocol.Change | None:
    """Plan and apply the specs; the protocol the plan predicted for `table` is the one Delta wrote, and
    a second plan is empty."""
    review = pipeline.review(project.catalog, project.desired(), ALL)
    assert not review.assessment.blocks, review.assessment.blocks
    name = TableName.parse(table)
    change = review.assessment.protocol_change(name)
    execution.apply_plan(project.catalog, review.plan)
    read = project.catalog.read([name]).table(name)
    assert read is not None
    if change is not None:
        assert protocol.of_table(read) == change.after, (change.text(), read.protocol)
    assert project.plan().is_empty
    return change


def spec(schema: str, body: str, name: str = "t") -> str:
    return f"table: {schema}.{name}\n" + body


COLUMNS = """\
columns:
  - name: id
    type: bigint
  - name: amount
    type: decimal(10,2)
  - name: note
    type: string
"""


def test_every_feature_the_plan_enables_is_the_protocol_delta_writes(project: Project, schema: str) -> None:
    t = f"{schema}.t"
    project.write("t.yaml", spec(schema, COLUMNS + "checks:\n  positive: amount > 0\n"))
    created = converge(project, t)
    assert created is not None
    assert created.text() == "new: reader 1, writer 3; features checkConstraints"
    project.sql(f"INSERT INTO {t} VALUES (1, 1.50, 'a'), (2, 2.50, 'b')")

    renamed = COLUMNS.replace("  - name: note\n", "  - name: remark\n    renamed_from: note\n    default: \"'-'\"\n")
    project.write("t.yaml", spec(schema, renamed + "checks:\n  positive: amount > 0\n"))
    change = converge(project, t)
    assert change is not None
    assert change.text() == ("reader 1 -> 2, writer 3 -> 7; features +allowColumnDefaults +columnMapping")

    widened = renamed.replace("decimal(10,2)", "decimal(12,2)") + "  - name: seen\n    type: timestamp_ntz\n"
    project.write("t.yaml", spec(schema, widened + "clustered_by: [id]\n"))
    change = converge(project, t)
    assert change is not None
    assert change.added == {"typeWidening", "timestampNtz", "clustering", "domainMetadata"}

    switches = "properties:\n  delta.enableDeletionVectors: 'true'\n"
    project.write("t.yaml", spec(schema, widened + "clustered_by: [id]\n" + switches))
    change = converge(project, t)
    assert change is not None
    assert change.added == {"deletionVectors"}
    project.sql(f"DELETE FROM {t} WHERE id = 2")  # a deletion vector for the drop to purge

    # Turned off on purpose: DROP FEATURE of the two reader features, each irreversible with its cost.
    off = switches.replace("delta.enableDeletionVectors: 'true'", "delta.enableDeletionVectors: 'false'")
    off += "  delta.enableTypeWidening: 'false'\n"
    project.write("t.yaml", spec(schema, widened + "clustered_by: [id]\n" + off))
    review = pipeline.review(project.catalog, project.desired(), set())
    drops = [a for a in review.plan.actions if type(a).__name__ == "DropFeature"]
    assert sorted(getattr(a, "feature", "") for a in drops) == ["deletionVectors", "typeWidening"]
    assert {b.finding.hazard for b in review.assessment.blocks} == {Hazard.IRREVERSIBLE}
    change = converge(project, t)
    assert change is not None
    assert change.removed == {"deletionVectors", "typeWidening"}
    assert "checkpointProtection" in change.added
    assert project.sql(f"SELECT count(*), sum(amount) FROM {t}") == [(1, Decimal("1.50"))]

    rich = (
        "columns:\n  - name: id\n    type: bigint\n    identity: {start: 1, step: 1}\n"
        "  - name: s\n    type: string\n  - name: n\n    type: int\n    generated: length(s)\n"
        "  - name: v\n    type: variant\n"
    )
    project.write("u.yaml", spec(schema, rich, "u"))
    change = converge(project, f"{schema}.u")
    assert change is not None
    assert change.after is not None
    assert change.after.features >= {"identityColumns", "generatedColumns", "variantType"}


@pytest.fixture
def spark(project: Project, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.chdir(project.root)
    return project.catalog.spark


def test_a_rename_held_to_an_old_spark_is_blocked_as_compatibility(project: Project, schema: str, spark: Any) -> None:
    project.write("t.yaml", spec(schema, COLUMNS))
    delta_sync.apply(project.specs, spark=spark)
    project.write(
        "t.yaml", spec(schema, COLUMNS.replace("  - name: note\n", "  - name: remark\n    renamed_from: note\n"))
    )
    allow = ["irreversible", "breaking"]

    assert not delta_sync.plan(project.specs, spark=spark, allow=allow).blocked

    (project.root / "delta-sync.yaml").write_text("readers: [delta-spark 1.0]\n")
    held = delta_sync.plan(project.specs, spark=spark, allow=allow)
    (block,) = held.blocks
    assert block.finding.hazard is Hazard.COMPATIBILITY
    assert "delta-spark 1.0 could no longer read the table" in block.finding.reason
    assert "columnMapping (delta-spark 1.2 and later do)" in block.finding.reason
    assert "reader 1 -> 2, writer 2 -> 7; features +columnMapping" in held.render()
    assert held.document["readers"] == ["delta-spark 1.0"]

    # A saved plan keeps the readers it was held to, and applies under those only (issue 45); allowed, it applies.
    saved = delta_sync.plan(project.specs, spark=spark, allow=[*allow, "compatibility"]).save(project.root / "p.json")
    (project.root / "delta-sync.yaml").write_text("readers: []\n")
    assert delta_sync.show(saved).document["readers"] == ["delta-spark 1.0"]
    with pytest.raises(StalePlanError, match=r"reviewed with readers: \[delta-spark 1\.0\]; delta-sync\.yaml now says"):
        delta_sync.apply(saved, spark=spark, allow=[*allow, "compatibility"])
    (project.root / "delta-sync.yaml").write_text("readers: [delta-spark 1.0]\n")
    assert delta_sync.apply(saved, spark=spark, allow=[*allow, "compatibility"]).applied == 2


# --- what delta-rs really does, against what the plan said it would -------------------------------------------

DELTA_RS = Consumer("delta-rs", (1, 6, 6))
DELTA_RS_WRITER = Consumer("delta-rs", (1, 6, 6), writes=True)


def _location(project: Project, table: str) -> str:
    location = str(project.catalog.spark.sql(f"DESCRIBE DETAIL {table}").collect()[0]["location"])
    return location.removeprefix("file:")


def _reads(location: str) -> bool:
    try:
        DeltaTable(location).to_pyarrow_table()
    except Exception:  # any refusal by delta-rs is the answer
        return False
    return True


def _appends(location: str) -> bool:
    """delta-rs appends the table's own first row back (a writer must read the table to write it)."""
    try:
        rows = DeltaTable(location).to_pyarrow_table().slice(0, 1)
        write_deltalake(location, rows, mode="append")
    except Exception:  # any refusal by delta-rs is the answer
        return False
    return True


@pytest.mark.parametrize(
    ("change", "before", "after"),
    [
        ("rename", COLUMNS, COLUMNS.replace("  - name: note\n", "  - name: remark\n    renamed_from: note\n")),
        ("widening", COLUMNS, COLUMNS.replace("decimal(10,2)", "decimal(12,2)")),
        ("deletion vectors", COLUMNS, COLUMNS + "properties:\n  delta.enableDeletionVectors: 'true'\n"),
        ("check", COLUMNS, COLUMNS + "checks:\n  positive: amount > 0\n"),
        ("default", COLUMNS, COLUMNS.replace("    type: string\n", "    type: string\n    default: \"'-'\"\n")),
    ],
)
def test_delta_rs_does_what_the_plan_said(project: Project, schema: str, change: str, before: str, after: str) -> None:
    t = f"{schema}.t"
    project.write("t.yaml", spec(schema, before))
    project.apply()
    project.sql(f"INSERT INTO {t} VALUES (1, 1.50, 'a')")
    location = _location(project, t)
    assert _reads(location), "delta-rs reads the table before the change"

    project.write("t.yaml", spec(schema, after))
    desired = project.desired()
    review = pipeline.review(project.catalog, desired, ALL - {Hazard.COMPATIBILITY})
    current = review.current
    said_read = not any(
        b.finding.hazard is Hazard.COMPATIBILITY for b in assess(review.plan, current, (), set(), [DELTA_RS]).blocks
    )
    said_write = not any(
        b.finding.hazard is Hazard.COMPATIBILITY
        for b in assess(review.plan, current, (), set(), [DELTA_RS_WRITER]).blocks
    )
    execution.apply_plan(project.catalog, review.plan)

    assert (_reads(location), _appends(location)) == (said_read, said_write), change
