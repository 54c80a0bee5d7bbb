"""The compatibility check: which declared readers and writers a plan leaves behind, on which action."""

from __future__ import annotations

from pathlib import Path

import pytest

from delta_sync.model.errors import SpecError
from delta_sync.model.state import CatalogState, Check, Consumer, TableName
from delta_sync.planning.actions import (
    AddCheck,
    CreateTable,
    DropFeature,
    EnableFeature,
    Plan,
    PropertyChange,
    RenameColumn,
    SetProperties,
)
from delta_sync.planning.compatibility import compat, support
from delta_sync.planning.compatibility.protocol import Protocol
from delta_sync.planning.hazard_policy import assess
from delta_sync.planning.hazards import Hazard
from delta_sync.specs.project_file import load_project
from tests.unit.builders import column, live, state, table

T = TableName.parse("s.t")
BASE = frozenset({"appendOnly", "invariants"})


def rename_plan() -> Plan:
    return Plan(
        (
            EnableFeature(T, "delta.columnMapping.mode", "name", "renaming `n` needs column mapping"),
            RenameColumn(T, "n", "m"),
        ),
        (T,),
    )


def current(reader: int = 1, writer: int = 2, **properties: str) -> CatalogState:
    have = table("s.t", column("id", "bigint"), column("n", "int"), properties=properties)
    return state(live(have, protocol=(reader, writer)))


def test_what_readers_and_writers_need() -> None:
    assert compat.needs(Protocol(1, 2, BASE), writes=False) == frozenset()
    assert compat.needs(Protocol(2, 7, BASE | {"columnMapping"}), writes=False) == {"columnMapping"}
    reader3 = Protocol(3, 7, BASE | {"columnMapping", "deletionVectors", "rowTracking"})
    assert compat.needs(reader3, writes=False) == {
        support.READER_V3,
        compat.MAPPING_AS_FEATURE,
        "columnMapping",
        "deletionVectors",
    }
    assert compat.needs(reader3, writes=True) == {
        support.READER_V3,
        compat.MAPPING_AS_FEATURE,
        support.WRITER_V7,
        "columnMapping",
        "deletionVectors",
        "rowTracking",
        *BASE,
    }


def test_a_rename_for_an_old_spark_names_column_mapping_and_the_first_version_that_reads_it() -> None:
    (problem,) = compat.problems(rename_plan(), current(), [Consumer("delta-spark", (1, 0))])
    assert problem.index == 0
    assert problem.reason == (
        "delta-spark 1.0 could no longer read the table once it needs columnMapping (delta-spark 1.2 and later do)"
    )
    assert compat.problems(rename_plan(), current(), [Consumer("delta-spark", (1, 2))]) == []


def test_writers_need_every_feature_and_the_table_features_protocol() -> None:
    (problem,) = compat.problems(rename_plan(), current(), [Consumer("delta-spark", (2, 0), writes=True)])
    assert "could no longer write" in problem.reason
    assert "table features (writer version 7) (delta-spark 2.3 and later do)" in problem.reason


def test_engines_without_versions_and_features_nobody_supports() -> None:
    plan = Plan((SetProperties(T, (PropertyChange("delta.enableDeletionVectors", None, "true"),)),), (T,))
    (problem,) = compat.problems(plan, current(), [Consumer("delta-sharing", None)])
    assert "no delta-sharing version supports it yet" in problem.reason


def test_a_feature_the_matrix_does_not_know_is_reported_as_unknown() -> None:
    plan = Plan((SetProperties(T, (PropertyChange("delta.feature.geospatial", None, "supported"),)),), (T,))
    (problem,) = compat.problems(plan, current(), [Consumer("trino", (470,))])
    assert "geospatial (delta-sync does not know whether trino supports it)" in problem.reason


def test_only_what_the_plan_adds_is_held_against_it() -> None:
    # delta-rs cannot read deletion vectors, but the table has them already: a new CHECK is not to blame.
    have = current(3, 7, **{"delta.feature.deletionVectors": "supported"})
    plan = Plan((AddCheck(T, Check("pos", "id > 0")),), (T,))
    assert compat.problems(plan, have, [Consumer("delta-rs", (1, 6, 6))]) == []


def test_a_new_table_says_cannot_read_the_new_table() -> None:
    new = table("s.t", column("id", "bigint"), properties={"delta.enableTypeWidening": "true"})
    (problem,) = compat.problems(Plan((CreateTable(new),), (T,)), state(), [Consumer("delta-rs", (1, 6, 6))])
    assert problem.reason.startswith("delta-rs 1.6.6 cannot read the new table, which needs typeWidening")


def test_dropping_a_reader_feature_adds_checkpoint_protection_for_writers() -> None:
    have = current(3, 7, **{"delta.feature.deletionVectors": "supported"})
    plan = Plan((DropFeature(T, "deletionVectors", "off"),), (T,))
    assert compat.problems(plan, have, [Consumer("delta-spark", (4, 0))]) == []
    (problem,) = compat.problems(plan, have, [Consumer("delta-spark", (3, 3), writes=True)])
    assert "checkpointProtection (delta-spark 4.0 and later do)" in problem.reason


def test_assess_blocks_until_compatibility_is_allowed() -> None:
    readers = [Consumer("delta-spark", (1, 0))]
    blocked = assess(rename_plan(), current(), (), {Hazard.IRREVERSIBLE, Hazard.BREAKING}, readers)
    (block,) = blocked.blocks
    assert block.finding.hazard is Hazard.COMPATIBILITY
    assert block.unblock == "allow it with --allow compatibility"
    allowed = assess(rename_plan(), current(), (), set(Hazard) - {Hazard.UNSUPPORTED}, readers)
    assert allowed.blocks == ()
    assert assess(rename_plan(), current(), (), {Hazard.IRREVERSIBLE, Hazard.BREAKING}).blocks == ()
    change = blocked.protocol_change(T)
    assert change is not None
    assert change.text() == "reader 1 -> 2, writer 2 -> 7; features +columnMapping"


# --- the project file --------------------------------------------------------------------------------


def write(root: Path, text: str) -> None:
    (root / "delta-sync.yaml").write_text(text)


def test_readers_and_writers_load_and_an_environment_replaces_them(tmp_path: Path) -> None:
    write(
        tmp_path,
        "readers: [delta-rs 0.17, Trino 440, delta-sharing]\nwriters: [databricks-runtime 13.3 LTS]\n"
        "envs:\n  local: {}\n  lake:\n    readers: [duckdb 1.1]\n",
    )
    project = load_project(tmp_path)
    assert project.env("local").readers == ["delta-rs 0.17", "trino 440", "delta-sharing"]
    assert project.env("local").writers == ["databricks-runtime 13.3"]
    assert project.env("lake").readers == ["duckdb 1.1"]
    assert project.env("lake").writers == ["databricks-runtime 13.3"]
    assert Consumer.of_texts(project.env("local").readers, project.env("local").writers) == (
        Consumer("delta-rs", (0, 17)),
        Consumer("trino", (440,)),
        Consumer("delta-sharing", None),
        Consumer("databricks-runtime", (13, 3), writes=True),
    )


@pytest.mark.parametrize(
    ("entry", "message", "hint"),
    [
        ("delta-rsx 0.17", "`delta-rsx` is not an engine delta-sync knows", "did you mean `delta-rs`?"),
        ("trino", "trino needs its version", "e.g. `trino 440`"),
        ("trino latest", "`latest` is not a version of trino", "e.g. `trino 440`"),
        ("delta-sharing 1.0", "delta-sharing takes no version", "write `delta-sharing`"),
    ],
)
def test_bad_entries_are_errors_at_their_line(tmp_path: Path, entry: str, message: str, hint: str) -> None:
    write(tmp_path, f"readers:\n  - delta-spark 3.1\n  - {entry}\n")
    with pytest.raises(SpecError) as info:
        load_project(tmp_path)
    (problem,) = info.value.problems
    assert (problem.line, problem.message) == (3, message)
    assert problem.hint is not None
    assert problem.hint.startswith(hint)


def test_column_mapping_as_a_reader_feature_is_held_apart_where_an_engine_reads_only_its_legacy_form() -> None:
    # A table delta-rs wrote is reader 3 already: column mapping joins its reader features, which
    # deltalake 1.6.6 refuses, though it reads the same rename on a reader-1 table (reader 2).
    have = current(3, 7, **{"delta.feature.timestampNtz": "supported"})
    (problem,) = compat.problems(rename_plan(), have, [Consumer("delta-rs", (1, 6, 6))])
    assert problem.reason == (
        "delta-rs 1.6.6 could no longer read the table once it needs columnMapping as a reader "
        "feature (reader version 3) (no delta-rs version supports it yet)"
    )
    assert compat.problems(rename_plan(), current(), [Consumer("delta-rs", (1, 6, 6))]) == []
    assert compat.problems(rename_plan(), have, [Consumer("delta-spark", (3, 0))]) == []


def test_versions_compare_as_numbers_whatever_their_length() -> None:
    plan = Plan((CreateTable(table("s.t", column("id", "bigint"))),), (T,))
    assert compat.problems(plan, state(), [Consumer("duckdb", (1, 4), writes=True)]) == []
    assert compat.problems(plan, state(), [Consumer("delta-rs", (1, 0), writes=True)]) == []
