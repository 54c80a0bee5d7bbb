"""The fast reader (bulk catalog entries, Delta's checksum files read in Python, the cache) against the JVM reader
(`DELTA_SYNC_READER=jvm`), on real Spark and Delta: every table reads to the same `Table`, field by field, the
fields that do not take part in comparisons (version, files, size, protocol, location) included.

One schema of tables, made once for the module, covers what the model reads: column mapping by name and by id
(with a column renamed and one dropped), type widening, nested types, generated, identity and default columns,
CHECKs, NOT NULL, liquid clustering (with column mapping too), partitions, comments, properties, deletion
vectors, an external table, a table with checkpoints, one whose checksum file is gone, one delta-rs wrote, a
legacy protocol and a view. Then the cache: a hit, a version that moved, a table replaced at its path, and a
cache another delta-sync version wrote.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from delta_sync.model.errors import CatalogError
from delta_sync.model.state import CatalogState, Table, TableName, View
from delta_sync.spark import bulk_reads, delta_log, table_cache, table_reads
from delta_sync.spark.catalog import SparkCatalog

SCHEMA = "t_fast_reader"


def name(table: str) -> TableName:
    return TableName(None, SCHEMA, table)


@dataclass(frozen=True)
class Files:
    """Where the tables made outside the warehouse go (`root`, a folder or an `s3a://` prefix), how delta-rs
    reaches it (`options`), and how a file of a table's log is deleted (`remove(location, name)`):
    tests/spark/test_fast_reader_s3.py makes the same tables on S3."""

    root: str
    remove: Callable[[str, str], None]
    options: dict[str, str] | None = None

    def at(self, name: str) -> str:
        return f"{self.root.rstrip('/')}/{name}"


def remove_local(where: str, name: str) -> None:
    path = delta_log.local_path(where)
    assert path is not None
    (path / "_delta_log" / name).unlink()


def make_tables(catalog: SparkCatalog, root: Path, files: Files | None = None) -> list[TableName]:
    """The module's tables (each statement below is what a user or delta-sync runs on Delta 4.4)."""
    files = files or Files(str(root), remove_local)
    sql = catalog.spark.sql
    sql(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
    sql(f"CREATE SCHEMA {SCHEMA}")
    s = SCHEMA
    sql(
        f"CREATE TABLE {s}.mapped (id BIGINT NOT NULL COMMENT 'the key', `order id` STRING, old INT, gone INT, "
        "info STRUCT<a: INT, b: ARRAY<STRUCT<c: STRING>>, m: MAP<STRING, ARRAY<INT>>>) USING DELTA "
        "COMMENT 'mapped by name' TBLPROPERTIES ('delta.columnMapping.mode' = 'name', 'team' = 'platform')"
    )
    sql(f"ALTER TABLE {s}.mapped RENAME COLUMN old TO renamed")
    sql(f"ALTER TABLE {s}.mapped DROP COLUMN gone")
    sql(
        f"CREATE TABLE {s}.mapped_id (id BIGINT, v STRING) USING DELTA "
        "TBLPROPERTIES ('delta.columnMapping.mode' = 'id')"
    )
    sql(
        f"CREATE TABLE {s}.widened (id INT, small SMALLINT) USING DELTA "
        "TBLPROPERTIES ('delta.enableTypeWidening' = 'true')"
    )
    sql(f"ALTER TABLE {s}.widened ALTER COLUMN small TYPE INT")
    sql(
        f"CREATE TABLE {s}.rules (id BIGINT GENERATED ALWAYS AS IDENTITY (START WITH 10 INCREMENT BY 5), "
        "day DATE, year INT GENERATED ALWAYS AS (YEAR(day)), status STRING DEFAULT 'new', amount DECIMAL(12,2) "
        "NOT NULL) USING DELTA TBLPROPERTIES ('delta.feature.allowColumnDefaults' = 'supported')"
    )
    sql(f"ALTER TABLE {s}.rules ADD CONSTRAINT positive CHECK (amount > 0)")
    sql(f"CREATE TABLE {s}.clustered (a INT, b STRING, c DOUBLE) USING DELTA CLUSTER BY (a, b)")
    sql(
        f"CREATE TABLE {s}.clustered_mapped (`odd name` INT, Kind STRING, v INT) USING DELTA "
        "CLUSTER BY (`odd name`, Kind) TBLPROPERTIES ('delta.columnMapping.mode' = 'name')"
    )
    sql(f"ALTER TABLE {s}.clustered_mapped RENAME COLUMN Kind TO kind_renamed")
    sql(f"CREATE TABLE {s}.partitioned (id BIGINT, day DATE, region STRING) USING DELTA PARTITIONED BY (day, region)")
    sql(
        f"CREATE TABLE {s}.vectors (id BIGINT, v STRING) USING DELTA "
        "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true', 'delta.enableChangeDataFeed' = 'true')"
    )
    sql(f"INSERT INTO {s}.vectors SELECT id, CAST(id AS STRING) FROM range(20)")
    outside = files.at("outside")
    sql(f"CREATE TABLE {s}.external (id BIGINT COMMENT 'kept') USING DELTA LOCATION '{outside}' COMMENT 'external'")
    sql(f"CREATE TABLE {s}.checkpointed (id BIGINT) USING DELTA TBLPROPERTIES ('delta.checkpointInterval' = '2')")
    for i in range(2):  # version 2 writes a checkpoint
        sql(f"ALTER TABLE {s}.checkpointed SET TBLPROPERTIES ('step' = '{i}')")
    sql(f"CREATE TABLE {s}.no_crc (id BIGINT, v STRING) USING DELTA")
    files.remove(entry_location(catalog, "no_crc"), f"{0:020d}.crc")
    rs = files.at("delta_rs")
    rows = pa.table(
        {
            "id": pa.array([1, 2], pa.int64()),
            "amount": pa.array([Decimal("1.00"), Decimal("2.50")], pa.decimal128(12, 2)),
        }
    )
    write_deltalake(rs, rows, storage_options=files.options)
    DeltaTable(rs, storage_options=files.options).alter.add_constraint({"amount_positive": "amount >= 0"})
    sql(f"CREATE TABLE {s}.delta_rs USING DELTA LOCATION '{rs}'")
    sql(
        f"CREATE TABLE {s}.legacy (id BIGINT, v STRING) USING DELTA "
        "TBLPROPERTIES ('delta.minReaderVersion' = '2', 'delta.minWriterVersion' = '5', "
        "'delta.columnMapping.mode' = 'name')"
    )
    sql(f"CREATE TABLE {s}.plain (id BIGINT) USING DELTA")
    sql(f"CREATE VIEW {s}.recent COMMENT 'a view' AS SELECT id FROM {s}.plain")
    tables = [row[1] for row in sql(f"SHOW TABLES IN {s}").collect()]
    return [name(t) for t in sorted(tables)] + [name("missing")]


def entry_location(catalog: SparkCatalog, table: str) -> str:
    """Where a table's files are, as the catalog says (no Spark job, as DESCRIBE DETAIL would run)."""
    entries = bulk_reads.catalog_entries(catalog, SCHEMA, [table])
    assert entries is not None
    return str(entries[table].location)


def location(catalog: SparkCatalog, table: str) -> Path:
    """A table's folder on local disk."""
    path = delta_log.local_path(entry_location(catalog, table))
    assert path is not None
    return path


@pytest.fixture(scope="module")
def names(catalog: SparkCatalog, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[TableName]]:
    made = make_tables(catalog, tmp_path_factory.mktemp("fast_reader"))
    yield made
    catalog.spark.sql(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")


@pytest.fixture
def through_delta(monkeypatch: pytest.MonkeyPatch) -> list[TableName]:
    """The names the JVM read through Delta's snapshot, in this test."""
    read: list[TableName] = []
    facts = table_reads.location_facts

    def counted(spark_catalog: Any, table: TableName, where: str) -> delta_log.TableFacts:
        read.append(table)
        return facts(spark_catalog, table, where)

    monkeypatch.setattr(table_reads, "location_facts", counted)
    return read


@pytest.fixture
def checksums(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The folders whose checksum file the fast reader read, in this test."""
    read: list[Path] = []
    original = delta_log.read_checksum

    def counted(folder: Path, version: int) -> dict[str, Any] | None:
        read.append(folder)
        return original(folder, version)

    monkeypatch.setattr(delta_log, "read_checksum", counted)
    return read


def jvm_read(catalog: SparkCatalog, names: list[TableName], monkeypatch: pytest.MonkeyPatch) -> CatalogState:
    with monkeypatch.context() as patch:
        patch.setenv(bulk_reads.READER_VARIABLE, "jvm")
        return catalog.read(names)


def cold_read(catalog: SparkCatalog, names: list[TableName]) -> CatalogState:
    """The fast reader with no cache, in memory or on disk."""
    table_cache.forget()
    assert catalog.local is not None
    (catalog.local.home / table_cache.CACHE_FILE).unlink(missing_ok=True)
    return catalog.read(names)


def assert_same(fast: CatalogState, jvm: CatalogState) -> None:
    assert sorted(fast.tables) == sorted(jvm.tables)
    assert fast.views == jvm.views
    assert fast.schemas == jvm.schemas
    for table in jvm.tables:
        for field in fields(Table):
            ours, theirs = getattr(fast.tables[table], field.name), getattr(jvm.tables[table], field.name)
            assert ours == theirs, f"{table}: {field.name} is {ours!r} read fast, {theirs!r} through the JVM"


def test_every_table_reads_the_same_both_ways(
    catalog: SparkCatalog,
    names: list[TableName],
    monkeypatch: pytest.MonkeyPatch,
    through_delta: list[TableName],
    checksums: list[Path],
) -> None:
    jvm = jvm_read(catalog, names, monkeypatch)
    assert len(through_delta) == len(jvm.tables)
    through_delta.clear()
    fast = cold_read(catalog, names)
    assert_same(fast, jvm)
    assert set(jvm.views) == {name("recent")}
    assert name("missing") not in jvm.tables
    # Only the tables without a checksum of their latest version went through Delta; the rest came from the log.
    assert sorted(through_delta) == [name("delta_rs"), name("no_crc")]
    assert len(checksums) == len(jvm.tables) - 2
    # The cases the module is for are really there.
    tables = jvm.tables
    assert tables[name("mapped")].property_map["delta.columnMapping.mode"] == "name"
    assert [c.name for c in tables[name("mapped")].columns] == ["id", "order id", "renamed", "info"]
    assert tables[name("clustered_mapped")].clustered_by == ("`odd name`", "kind_renamed")
    assert tables[name("clustered")].clustered_by == ("a", "b")
    assert tables[name("rules")].checks
    assert tables[name("rules")].columns[0].identity is not None
    assert "delta.feature.typeWidening" in tables[name("widened")].property_map
    assert tables[name("legacy")].protocol == (2, 5)
    assert "delta.feature.columnMapping" in tables[name("legacy")].property_map
    assert tables[name("external")].location is not None
    assert tables[name("mapped")].location is None
    assert tables[name("delta_rs")].check("amount_positive") is not None
    assert list((location(catalog, "checkpointed") / "_delta_log").glob("*.checkpoint*.parquet"))
    assert "delta.feature.deletionVectors" in tables[name("vectors")].property_map


def test_a_second_read_costs_a_listing_per_table(
    catalog: SparkCatalog,
    names: list[TableName],
    monkeypatch: pytest.MonkeyPatch,
    through_delta: list[TableName],
    checksums: list[Path],
) -> None:
    first = cold_read(catalog, names)
    through_delta.clear()
    checksums.clear()
    again = catalog.read(names)
    assert_same(again, first)
    # Tables without checksums were kept too, read through Delta the first time only.
    assert through_delta == []
    assert checksums == []
    # And from the file, in a new process (the memory cache gone).
    table_cache.forget()
    assert_same(catalog.read(names), jvm_read(catalog, names, monkeypatch))
    assert through_delta[-len(first.tables) :] == sorted(first.tables)  # the JVM read's own
    assert checksums == []


def test_what_moved_is_read_again(
    catalog: SparkCatalog,
    names: list[TableName],
    monkeypatch: pytest.MonkeyPatch,
    checksums: list[Path],
    tmp_path: Path,
) -> None:
    sql = catalog.spark.sql
    wanted = [name("plain"), name("moving"), name("replaced"), name("external_again")]
    sql(f"CREATE TABLE {SCHEMA}.moving (id BIGINT) USING DELTA")
    sql(f"CREATE TABLE {SCHEMA}.replaced (id BIGINT) USING DELTA")
    again = tmp_path / "again"
    sql(f"CREATE TABLE {SCHEMA}.external_again (id BIGINT) USING DELTA LOCATION '{again}'")
    before = cold_read(catalog, wanted)
    assert catalog.read(wanted) == before
    assert checksums == [location(catalog, t.name) for t in sorted(wanted)]
    checksums.clear()

    # A version that moved; a managed table dropped and made again at its path by the same statement (version 0
    # again, and most likely a commit file of the same size); an external one whose folder was removed and
    # written again at the same location.
    sql(f"ALTER TABLE {SCHEMA}.moving ADD COLUMN note STRING")
    sql(f"DROP TABLE {SCHEMA}.replaced")
    sql(f"CREATE TABLE {SCHEMA}.replaced (id BIGINT) USING DELTA")
    sql(f"DROP TABLE {SCHEMA}.external_again")
    shutil.rmtree(again)
    sql(f"CREATE TABLE {SCHEMA}.external_again (id STRING) USING DELTA LOCATION '{again}'")
    after = catalog.read(wanted)
    assert sorted(checksums) == sorted(location(catalog, t) for t in ("moving", "replaced", "external_again"))
    assert_same(after, jvm_read(catalog, wanted, monkeypatch))
    assert after.tables[name("moving")].version == 1
    assert after.tables[name("replaced")].version == 0
    assert after.tables[name("external_again")].columns[0].type == "string"

    # REPLACE TABLE moves the version too.
    checksums.clear()
    sql(f"REPLACE TABLE {SCHEMA}.replaced (id INT) USING DELTA")
    assert catalog.read(wanted).tables[name("replaced")].columns[0].type == "int"
    assert checksums == [location(catalog, "replaced")]


def test_a_cache_another_version_wrote_is_ignored(
    catalog: SparkCatalog, names: list[TableName], checksums: list[Path]
) -> None:
    wanted = [name("plain"), name("mapped")]
    cold_read(catalog, wanted)
    assert catalog.local is not None
    cache = catalog.local.home / table_cache.CACHE_FILE
    data = json.loads(cache.read_text())
    assert sorted(data["tables"]) == sorted(str(location(catalog, t.name)) for t in wanted)
    data["delta_sync"] = "0.0.0-other"
    cache.write_text(json.dumps(data))
    table_cache.forget()
    checksums.clear()
    catalog.read(wanted)
    assert len(checksums) == 2
    assert json.loads(cache.read_text())["delta_sync"] != "0.0.0-other"  # rewritten by this version


def test_errors_are_the_jvm_readers(
    catalog: SparkCatalog, names: list[TableName], monkeypatch: pytest.MonkeyPatch
) -> None:
    catalog.spark.sql(f"CREATE TABLE IF NOT EXISTS {SCHEMA}.hive_one (id INT) USING PARQUET")
    wanted = [name("hive_one"), name("plain")]
    with pytest.raises(CatalogError) as jvm:
        jvm_read(catalog, wanted, monkeypatch)
    with pytest.raises(CatalogError) as fast:
        cold_read(catalog, wanted)
    assert str(fast.value) == str(jvm.value)
    assert "not Delta" in str(fast.value)


def test_views_and_missing_tables(catalog: SparkCatalog, names: list[TableName]) -> None:
    found = cold_read(catalog, [name("recent"), name("missing"), TableName(None, "no_such_schema", "t")])
    assert found.tables == {}
    view = found.views[name("recent")]
    assert isinstance(view, View)
    assert view.comment == "a view"
