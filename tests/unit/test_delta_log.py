"""The fast reader's pure parts, without a JVM: the latest commit from a `_delta_log` listing, a checksum file into
the facts of a table, Delta's implied features and clustering names, the cache file, and the catalog's printed
entries read back. The same facts as the JVM reader's are held equal on real Delta in
tests/spark/test_fast_reader.py."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from delta_sync.model.state import TableName
from delta_sync.spark import bulk_reads, delta_log, table_cache
from delta_sync.spark.delta_log import LogCommit, TableFacts
from delta_sync.spark.table_reads import CatalogEntry
from delta_sync.version import __version__

PHYS = delta_log.PHYSICAL_NAME
MAPPED_SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "long", "nullable": False, "metadata": {PHYS: "col-1"}},
        {"name": "odd name", "type": "integer", "nullable": True, "metadata": {PHYS: "col-2"}},
        {
            "name": "info",
            "type": {
                "type": "struct",
                "fields": [{"name": "Inner", "type": "string", "nullable": True, "metadata": {PHYS: "col-4"}}],
            },
            "nullable": True,
            "metadata": {PHYS: "col-3"},
        },
    ],
}


def plain_quoted(parts: Sequence[str]) -> str:
    return ".".join(p if p.isidentifier() else f"`{p}`" for p in parts)


def write_log(folder: Path, *names: str) -> Path:
    log = folder / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    for name in names:
        (log / name).write_text("{}")
    return log


def checksum(**overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "tableSizeBytes": 1234,
        "numFiles": 3,
        "metadata": {
            "id": "x",
            "description": "orders",
            "format": {"provider": "parquet", "options": {}},
            "schemaString": json.dumps(MAPPED_SCHEMA),
            "partitionColumns": [],
            "configuration": {"delta.columnMapping.mode": "name", "delta.constraints.positive": "id > 0"},
        },
        "protocol": {
            "minReaderVersion": 3,
            "minWriterVersion": 7,
            "readerFeatures": ["columnMapping"],
            "writerFeatures": ["columnMapping", "clustering", "domainMetadata"],
        },
        "domainMetadata": [
            {
                "domain": "delta.clustering",
                "configuration": json.dumps({"clusteringColumns": [["col-2"], ["COL-3", "col-4"]]}),
                "removed": False,
            }
        ],
    }
    data.update(overrides)
    return data


@pytest.mark.parametrize(
    ("reader", "writer", "implied"),
    [
        (1, 1, []),
        (1, 2, ["appendOnly", "invariants"]),
        (1, 3, ["appendOnly", "checkConstraints", "invariants"]),
        (1, 4, ["appendOnly", "changeDataFeed", "checkConstraints", "generatedColumns", "invariants"]),
        # Column mapping needs reader 2 as well as writer 5.
        (1, 5, ["appendOnly", "changeDataFeed", "checkConstraints", "generatedColumns", "invariants"]),
        (2, 5, ["appendOnly", "changeDataFeed", "checkConstraints", "columnMapping", "generatedColumns", "invariants"]),
        (
            2,
            6,
            [
                "appendOnly",
                "changeDataFeed",
                "checkConstraints",
                "columnMapping",
                "generatedColumns",
                "identityColumns",
                "invariants",
            ],
        ),
        # Once either version lists features, nothing is implied (Protocol.implicitlySupportedFeatures).
        (1, 7, []),
        (3, 7, []),
        (3, 5, []),
    ],
)
def test_legacy_versions_imply_features(reader: int, writer: int, implied: list[str]) -> None:
    assert delta_log.implicit_features(reader, writer) == implied


def test_features_are_the_implied_and_the_listed_ones() -> None:
    assert delta_log.table_features({"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["b", "a"]}) == [
        "a",
        "b",
    ]
    legacy = {"minReaderVersion": 1, "minWriterVersion": 2}
    assert delta_log.table_features(legacy) == ["appendOnly", "invariants"]


def test_clustering_names_are_the_logical_ones_of_the_physical_paths() -> None:
    domains = checksum()["domainMetadata"]
    assert delta_log.clustering_paths(MAPPED_SCHEMA, domains) == [["odd name"], ["info", "Inner"]]
    assert delta_log.clustering_paths(MAPPED_SCHEMA, []) == []
    removed = [{**domains[0], "removed": True}]
    assert delta_log.clustering_paths(MAPPED_SCHEMA, removed) == []
    unknown = [{**domains[0], "configuration": json.dumps({"clusteringColumns": [["col-9"]]})}]
    assert delta_log.clustering_paths(MAPPED_SCHEMA, unknown) is None
    plain = {"type": "struct", "fields": [{"name": "Region", "type": "string", "nullable": True, "metadata": {}}]}
    by_name = [{"domain": "delta.clustering", "configuration": '{"clusteringColumns":[["region"]]}'}]
    assert delta_log.clustering_paths(plain, by_name) == [["Region"]]


def test_a_checksum_gives_the_facts_of_its_version() -> None:
    facts = delta_log.checksum_facts(checksum(), 7, MAPPED_SCHEMA, plain_quoted)
    assert facts == TableFacts(
        schema=MAPPED_SCHEMA,
        description="orders",
        partition_columns=(),
        configuration={"delta.columnMapping.mode": "name", "delta.constraints.positive": "id > 0"},
        features=("clustering", "columnMapping", "domainMetadata"),
        clustering=("`odd name`", "info.Inner"),
        num_files=3,
        version=7,
        size_bytes=1234,
        protocol=(3, 7),
    )
    table = facts.table(TableName(None, "s", "t"), None)
    assert [c.name for c in table.columns] == ["id", "odd name", "info"]
    assert table.checks[0].name == "positive"
    assert table.property_map["delta.feature.clustering"] == "supported"
    assert (table.version, table.num_files, table.size_bytes, table.protocol) == (7, 3, 1234, (3, 7))
    assert TableFacts.decode(json.loads(json.dumps(facts.encode()))) == facts


@pytest.mark.parametrize(
    "broken",
    [
        {"metadata": None},
        {"numFiles": None},
        # A clustered table whose checksum left its domains out.
        {"domainMetadata": None},
        # A table whose commits a catalog owns.
        {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["catalogManaged"]}},
        {"domainMetadata": [{"domain": "delta.clustering", "configuration": "not json"}]},
    ],
)
def test_a_checksum_without_what_is_needed_gives_nothing(broken: dict[str, Any]) -> None:
    assert delta_log.checksum_facts(checksum(**broken), 7, MAPPED_SCHEMA, plain_quoted) is None


def test_non_ascii_clustering_names_are_left_to_delta() -> None:
    schema = {"type": "struct", "fields": [{"name": "straße", "type": "string", "nullable": True, "metadata": {}}]}
    domains = [{"domain": "delta.clustering", "configuration": '{"clusteringColumns":[["straße"]]}'}]
    crc = checksum(domainMetadata=domains)
    assert delta_log.checksum_facts(crc, 1, schema, plain_quoted) is None


def test_the_latest_commit_is_found_by_listing(tmp_path: Path) -> None:
    assert delta_log.latest_commit(tmp_path) is None  # no log
    log = write_log(tmp_path, f"{0:020d}.json", f"{0:020d}.crc", f"{1:020d}.json", f"{2:020d}.json")
    write_log(tmp_path, f"{2:020d}.crc", f"{2:020d}.checkpoint.parquet", "_last_checkpoint")
    write_log(tmp_path, f".{3:020d}.json.1234.tmp", f".{2:020d}.json.crc", f"{0:020d}.{2:020d}.compacted.json")
    (log / "_staged_commits").mkdir()
    found = delta_log.latest_commit(tmp_path)
    assert found is not None
    stat = os.stat(log / f"{2:020d}.json")
    assert found == LogCommit(2, stat.st_size, stat.st_mtime_ns, stat.st_ino, True)
    write_log(tmp_path, f"{3:020d}.json")
    assert delta_log.latest_commit(tmp_path) == LogCommit(3, 2, *_times(log / f"{3:020d}.json"), False)


def _times(path: Path) -> tuple[int, int]:
    stat = os.stat(path)
    return stat.st_mtime_ns, stat.st_ino


@pytest.mark.parametrize(
    "files",
    [
        # A checkpoint newer than any commit file: only Delta knows the latest version.
        [f"{1:020d}.json", f"{4:020d}.checkpoint.0000000001.0000000002.parquet"],
        [f"{1:020d}.json", f"{4:020d}.checkpoint.80a083e8-8c9a-4b43-9e02-70a8f2e0dc76.json"],
        # Checkpoints and checksums only.
        [f"{4:020d}.checkpoint.parquet", f"{4:020d}.crc"],
        # Commits a catalog owns, not yet in the log.
        [f"{1:020d}.json", f"_staged_commits/{2:020d}.3a0d65cd-4056-49b8-937b-95f9e3ee90e5.json"],
    ],
)
def test_a_log_whose_latest_commit_a_listing_cannot_tell(tmp_path: Path, files: list[str]) -> None:
    log = tmp_path / "_delta_log"
    for name in files:
        (log / name).parent.mkdir(parents=True, exist_ok=True)
        (log / name).write_text("{}")
    assert delta_log.latest_commit(tmp_path) is None


def test_local_paths() -> None:
    assert delta_log.local_path("file:/w/s.db/t") == Path("/w/s.db/t")
    assert delta_log.local_path("file:///w/a%20b") == Path("/w/a b")
    assert delta_log.local_path("/w/t") == Path("/w/t")
    for remote in ("s3a://bucket/t", "hdfs://nn:8020/t", "abfss://c@a.dfs.core.windows.net/t", "file://host/t", "t"):
        assert delta_log.local_path(remote) is None


def test_checksum_files_are_read_as_json_objects(tmp_path: Path) -> None:
    log = write_log(tmp_path)
    (log / f"{5:020d}.crc").write_text(json.dumps(checksum()))
    assert delta_log.read_checksum(tmp_path, 5) == checksum()
    assert delta_log.read_checksum(tmp_path, 6) is None
    (log / f"{6:020d}.crc").write_text("[1]")
    assert delta_log.read_checksum(tmp_path, 6) is None
    assert delta_log.schema_string({"metadata": {}}) == delta_log.EMPTY_SCHEMA
    assert delta_log.schema_string({}) is None


def test_the_cache_keeps_facts_by_folder_and_commit(tmp_path: Path) -> None:
    table_cache.forget()
    folder = tmp_path / "t"
    write_log(folder, f"{7:020d}.json")
    facts = delta_log.checksum_facts(checksum(), 7, MAPPED_SCHEMA, plain_quoted)
    assert facts is not None
    commit = LogCommit(7, 10, 20, 30, True)
    cache = table_cache.for_home(tmp_path)
    cache.put(folder, commit, facts)
    cache.put(tmp_path / "gone", commit, facts)  # its log is not there: left out of the file
    cache.put(folder / "moved", LogCommit(8, 10, 20, 30, True), facts)  # facts of another version: not kept
    assert cache.get(folder, commit) == facts
    for other in (LogCommit(8, 10, 20, 30, True), LogCommit(7, 11, 20, 30, True), LogCommit(7, 10, 21, 31, True)):
        assert cache.get(folder, other) is None
    cache.save()
    written = json.loads((tmp_path / table_cache.CACHE_FILE).read_text())
    assert written["delta_sync"] == __version__
    assert list(written["tables"]) == [str(folder)]

    table_cache.forget()
    assert table_cache.for_home(tmp_path).get(folder, commit) == facts
    written["delta_sync"] = "0.0.0"
    (tmp_path / table_cache.CACHE_FILE).write_text(json.dumps(written))
    table_cache.forget()
    assert table_cache.for_home(tmp_path).get(folder, commit) is None
    (tmp_path / table_cache.CACHE_FILE).write_text("{not json")
    table_cache.forget()
    assert table_cache.for_home(tmp_path).entries == {}
    table_cache.forget()


def test_the_catalogs_entries_are_read_back_strictly() -> None:
    entry = "CatalogTable(\nDatabase: s\nTable: t\nType: EXTERNAL\nProvider: delta\nComment: a\nLocation: file:/x/t\n)"
    view = "CatalogTable(\nCatalog: spark_catalog\nDatabase: s\nTable: v\nType: VIEW\nView Text: SELECT 1\n)"
    both = entry + bulk_reads.SEPARATOR + view
    assert bulk_reads.parse_entries(both, 2, "s") == {
        "t": CatalogEntry("EXTERNAL", "delta", "file:/x/t"),
        "v": CatalogEntry("VIEW", None, None),
    }
    assert bulk_reads.parse_entries("", 0, "s") == {}
    # A line break in a comment that makes a second `Location:` line, a count that does not match, another schema,
    # an unknown kind, or text that is not an entry: the whole answer is refused.
    assert bulk_reads.parse_entries(entry.replace("Comment: a", "Comment: a\nLocation: file:/y"), 1, "s") is None
    assert bulk_reads.parse_entries(both, 1, "s") is None
    assert bulk_reads.parse_entries(entry, 1, "other") is None
    assert bulk_reads.parse_entries(entry.replace("EXTERNAL", "TEMPORARY"), 1, "s") is None
    assert bulk_reads.parse_entries("List()", 1, "s") is None
    assert bulk_reads.parse_entries(entry + bulk_reads.SEPARATOR + entry, 2, "s") is None  # one name twice


def test_the_entry_of_another_provider_is_refused() -> None:
    assert CatalogEntry("MANAGED", "parquet", "file:/x").is_delta is False
    assert CatalogEntry("MANAGED", "DELTA", "file:/x").is_delta is True
    with pytest.raises(Exception, match="is a parquet table, not Delta"):
        CatalogEntry("MANAGED", "parquet", "file:/x").delta_location(TableName(None, "s", "t"))
