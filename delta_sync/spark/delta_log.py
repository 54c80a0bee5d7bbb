"""A Delta table's metadata and protocol read straight from its `_delta_log` on local disk, in Python.

What it holds:
- `local_path`: the folder of a table location this machine can read directly (`file:` URIs and plain paths).
- `latest_commit`: the table's latest commit, found by listing `_delta_log`, with what identifies that commit file
  (`LogCommit`, the cache's key), or None where the latest commit cannot be determined safely.
- `read_checksum`: the checksum file (`NNN.crc`) Delta writes beside a commit, which holds the snapshot's
  metadata, protocol, domain metadata, file count and size at that version.
- `TableFacts`: what delta-sync reads of a Delta snapshot, built from a checksum (`checksum_facts`) or, in
  `table_reads`, from the JVM's snapshot; both become a `Table` through `introspect.table_from_catalog`.
- `table_features`, `implicit_features`, `clustering_paths`: Delta's rules for the protocol's features and the
  clustering columns' names, as Delta 4.4 applies them (the sources are named where each rule is).

It touches files but imports nothing of Spark: Spark's own JSON of the schema and its quoting of names come
from the caller (`bulk_reads`), so that the result equals the JVM reader's exactly.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from delta_sync.model.state import Table, TableName
from delta_sync.spark.introspect import table_from_catalog

COMMIT = re.compile(r"(\d{20})\.json")
CHECKSUM = re.compile(r"(\d{20})\.crc")
# Classic (`N.checkpoint.parquet`), multi-part (`N.checkpoint.P.K.parquet`) and V2 (`N.checkpoint.<uuid>.json`).
CHECKPOINT = re.compile(r"(\d{20})\.checkpoint(\.[^.]+)*\.(parquet|json)")
# Where commits a catalog or a commit coordinator owns wait before they are copied into `_delta_log`: Delta 4.4
# creates `_staged_commits` empty for every table, so only files in it make the log's listing incomplete.
UNBACKFILLED = ("_staged_commits", "_commits")
# Tables whose latest commits may live in a catalog or a commit coordinator, not yet in `_delta_log`
# (TableFeature.scala: CatalogOwnedTableFeature is `catalogManaged`, formerly `catalogOwned-preview`;
# CoordinatedCommitsTableFeature is `coordinatedCommits-preview`). They are read through Delta.
CATALOG_OWNED_FEATURES = frozenset({"catalogManaged", "catalogOwned-preview", "coordinatedCommits-preview"})

# Delta's legacy features and the (reader, writer) protocol versions that imply them (TableFeature.scala, v4.4.0:
# the `LegacyWriterFeature` and `LegacyReaderWriterFeature` objects of `allSupportedFeaturesMap`; the testing-only
# ones are registered only under Delta's own test suites).
LEGACY_FEATURES: dict[str, tuple[int, int]] = {
    "appendOnly": (0, 2),
    "invariants": (0, 2),
    "checkConstraints": (0, 3),
    "changeDataFeed": (0, 4),
    "generatedColumns": (0, 4),
    "columnMapping": (2, 5),
    "identityColumns": (0, 6),
}
# TableFeatureProtocolUtils: the versions from which a protocol lists its features instead of implying them.
TABLE_FEATURES_MIN_READER = 3
TABLE_FEATURES_MIN_WRITER = 7
CLUSTERING_FEATURE = "clustering"
CLUSTERING_DOMAIN = "delta.clustering"
PHYSICAL_NAME = "delta.columnMapping.physicalName"
EMPTY_SCHEMA = '{"type":"struct","fields":[]}'


def local_path(location: str) -> Path | None:
    """The folder of `location` when it is on this machine's file system (a `file:` URI or an absolute path);
    None for anything else (s3a://, hdfs://, abfss://...), which only Delta's own file systems read."""
    if location.startswith("/"):
        return Path(location)
    parts = urlsplit(location)
    if parts.scheme != "file" or parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
        return None
    # Hadoop's URIs escape what a URI cannot hold (a space is %20): the folder's name has it unescaped.
    return Path(unquote(parts.path))


@dataclass(frozen=True, slots=True)
class LogCommit:
    """A table's latest commit file and what identifies it on disk. Equal values mean the same commit: a version
    that moved changes `version`, and a table dropped and created again at the same path rewrites the file
    (a new inode, modification time and, most likely, size) even when its version is the same."""

    version: int
    size: int
    mtime_ns: int
    # On object storage, which has no inodes, a number made of the object's ETag (`remote_log.etag_number`).
    inode: int
    # Whether Delta wrote the checksum file of this version.
    has_checksum: bool

    def key(self) -> list[int]:
        return [self.version, self.size, self.mtime_ns, self.inode]


def latest_commit(table: Path) -> LogCommit | None:
    """The latest commit of the Delta table in the folder `table`, from one listing of its `_delta_log`. None
    when there is no log, no commit, or when the listing alone cannot tell the latest version: a checkpoint
    newer than every commit file (its commit cleaned up or never written) or commits staged outside the log.
    Delta then reads the table (`table_reads.latest_snapshot`), as it always did."""
    newest = -1
    newest_entry: os.DirEntry[str] | None = None
    checkpoint = -1
    checksum = -1
    try:
        with os.scandir(table / "_delta_log") as entries:
            for entry in entries:
                name = entry.name
                # Delta writes each file under a hidden temporary name, then renames it: a file with its final
                # name is complete. Its `.NNN.json.crc` files are Hadoop's checksums, not Delta's.
                if name.startswith("."):
                    continue
                if (found := COMMIT.fullmatch(name)) is not None:
                    version = int(found.group(1))
                    if version > newest:
                        newest, newest_entry = version, entry
                elif (found := CHECKSUM.fullmatch(name)) is not None:
                    checksum = max(checksum, int(found.group(1)))
                elif (found := CHECKPOINT.fullmatch(name)) is not None:
                    checkpoint = max(checkpoint, int(found.group(1)))
                elif name in UNBACKFILLED and entry.is_dir() and _holds_files(Path(entry.path)):
                    return None
            if newest_entry is None or checkpoint > newest:
                return None
            stat = newest_entry.stat()
    except OSError:
        return None
    return LogCommit(newest, stat.st_size, stat.st_mtime_ns, stat.st_ino, checksum == newest)


def _holds_files(folder: Path) -> bool:
    with os.scandir(folder) as entries:
        return any(not entry.name.startswith(".") for entry in entries)


def read_checksum(table: Path, version: int) -> dict[str, Any] | None:
    """The checksum file of `version` as JSON, or None when it is missing or not a JSON object."""
    try:
        data = json.loads((table / "_delta_log" / f"{version:020d}.crc").read_bytes())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def schema_string(checksum: Mapping[str, Any]) -> str | None:
    """The checksum's table schema as Delta wrote it (`Metadata.schemaString`; none means an empty schema), or
    None when the checksum has no metadata."""
    metadata = checksum.get("metadata")
    if not isinstance(metadata, dict):
        return None
    text = metadata.get("schemaString")
    return EMPTY_SCHEMA if text is None else str(text)


def implicit_features(reader: int, writer: int) -> list[str]:
    """The legacy features a protocol implies by its versions (`Protocol.implicitlySupportedFeatures`,
    TableFeatureSupport.scala, v4.4.0): none once either version lists features explicitly (reader 3 or
    writer 7), else each legacy feature whose reader and writer versions the protocol reaches."""
    if reader >= TABLE_FEATURES_MIN_READER or writer >= TABLE_FEATURES_MIN_WRITER:
        return []
    return sorted(name for name, (r, w) in LEGACY_FEATURES.items() if r <= reader and w <= writer)


def table_features(protocol: Mapping[str, Any]) -> list[str]:
    """Every feature the protocol supports: the implied legacy ones plus its `readerFeatures` and
    `writerFeatures` (`readerAndWriterFeatureNames`, which reads both lists whatever the versions)."""
    reader, writer = int(protocol["minReaderVersion"]), int(protocol["minWriterVersion"])
    explicit = [str(f) for key in ("readerFeatures", "writerFeatures") for f in protocol.get(key) or ()]
    return sorted({*implicit_features(reader, writer), *explicit})


def _physical_name(field: Mapping[str, Any]) -> str:
    # DeltaColumnMapping.getPhysicalName: the column-mapping name where there is one, else the field's name.
    metadata = field.get("metadata") or {}
    return str(metadata[PHYSICAL_NAME]) if PHYSICAL_NAME in metadata else str(field["name"])


class _NotAscii(Exception):
    pass


def _same_ignoring_case(name: str, part: str) -> bool:
    # Delta's resolver is Java's equalsIgnoreCase, which folds case char by char; for ASCII that is lower().
    # Other names go to Delta (`checksum_facts` gives up), rather than guess Java's folding in Python.
    if not (name.isascii() and part.isascii()):
        raise _NotAscii
    return name.lower() == part.lower()


def clustering_paths(schema: Mapping[str, Any], domains: Sequence[Mapping[str, Any]]) -> list[list[str]] | None:
    """The clustering columns' logical name parts, from the `delta.clustering` domain metadata: its
    `clusteringColumns` hold physical name paths, each part found case-insensitively among its struct's fields
    by physical name (ClusteringColumnInfo.logicalName, ClusteringColumn.scala, v4.4.0). [] without the domain;
    None when a path does not resolve (Delta fails on it; the caller lets Delta say so). Raises on a domain that
    is not JSON and on names outside ASCII (`_same_ignoring_case`)."""
    domain = next((d for d in domains if d.get("domain") == CLUSTERING_DOMAIN and not d.get("removed")), None)
    if domain is None:
        return []
    columns = json.loads(str(domain["configuration"])).get("clusteringColumns") or []
    paths: list[list[str]] = []
    for physical in columns:
        struct: Any = schema
        logical: list[str] = []
        for part in physical:
            if not isinstance(struct, Mapping) or struct.get("type") != "struct":
                return None
            field = next((f for f in struct["fields"] if _same_ignoring_case(_physical_name(f), str(part))), None)
            if field is None:
                return None
            logical.append(str(field["name"]))
            struct = field["type"]
        paths.append(logical)
    return paths


@dataclass(frozen=True, slots=True)
class TableFacts:
    """What delta-sync reads of one version of a Delta table, whatever read it: the arguments of
    `introspect.table_from_catalog` but the table's name and the catalog's location."""

    # Spark's JSON of the schema (`DataType.json` of `Metadata.schema`), parsed.
    schema: Mapping[str, Any]
    description: str | None
    partition_columns: tuple[str, ...]
    configuration: Mapping[str, str]
    features: tuple[str, ...]
    clustering: tuple[str, ...]
    num_files: int
    version: int
    size_bytes: int
    protocol: tuple[int, int]

    def table(self, name: TableName, external: str | None) -> Table:
        return table_from_catalog(
            name,
            self.schema,
            self.description,
            list(self.partition_columns),
            dict(self.configuration),
            list(self.features),
            list(self.clustering),
            self.num_files,
            self.version,
            self.size_bytes,
            self.protocol,
            external,
        )

    def encode(self) -> dict[str, Any]:
        return {
            "schema": self.schema,
            "description": self.description,
            "partition_columns": list(self.partition_columns),
            "configuration": dict(self.configuration),
            "features": list(self.features),
            "clustering": list(self.clustering),
            "num_files": self.num_files,
            "version": self.version,
            "size_bytes": self.size_bytes,
            "protocol": list(self.protocol),
        }

    @classmethod
    def decode(cls, data: Mapping[str, Any]) -> TableFacts:
        reader, writer = data["protocol"]
        description = data["description"]
        return cls(
            schema=dict(data["schema"]),
            description=None if description is None else str(description),
            partition_columns=tuple(str(c) for c in data["partition_columns"]),
            configuration={str(k): str(v) for k, v in data["configuration"].items()},
            features=tuple(str(f) for f in data["features"]),
            clustering=tuple(str(c) for c in data["clustering"]),
            num_files=int(data["num_files"]),
            version=int(data["version"]),
            size_bytes=int(data["size_bytes"]),
            protocol=(int(reader), int(writer)),
        )


def checksum_facts(
    checksum: Mapping[str, Any],
    version: int,
    schema: Mapping[str, Any],
    quoted: Callable[[Sequence[str]], str],
) -> TableFacts | None:
    """The facts of `version` from its checksum file, as the JVM reader builds them from Delta's snapshot
    (`table_reads.snapshot_facts`). `schema` is Spark's JSON of the checksum's `schemaString`, and `quoted`
    joins a column's name parts as Spark's FieldReference prints them. None when the checksum lacks what is
    needed (the caller reads the table through Delta then): its metadata, protocol or counts, or the domain
    metadata of a clustered table; or when the table's commits may live in a catalog."""
    metadata, protocol = checksum.get("metadata"), checksum.get("protocol")
    if not isinstance(metadata, dict) or not isinstance(protocol, dict):
        return None
    try:
        features = table_features(protocol)
        reader, writer = int(protocol["minReaderVersion"]), int(protocol["minWriterVersion"])
        num_files, size = int(checksum["numFiles"]), int(checksum["tableSizeBytes"])
    except (KeyError, TypeError, ValueError):
        return None
    if CATALOG_OWNED_FEATURES.intersection(features):
        return None
    clustering: list[str] = []
    # ClusteredTableUtils.isSupported: the clustering feature in the protocol; only then are names read.
    if CLUSTERING_FEATURE in features:
        domains = checksum.get("domainMetadata")
        if not isinstance(domains, list):  # a writer that left the domains out of the checksum
            return None
        try:
            paths = clustering_paths(schema, domains)
        except (_NotAscii, KeyError, TypeError, ValueError, AttributeError):
            return None
        if paths is None:
            return None
        clustering = [quoted(path) for path in paths]
    description = metadata.get("description")
    return TableFacts(
        schema=schema,
        description=None if description is None else str(description),
        partition_columns=tuple(str(c) for c in metadata.get("partitionColumns") or ()),
        configuration={str(k): str(v) for k, v in (metadata.get("configuration") or {}).items()},
        features=tuple(features),
        clustering=tuple(clustering),
        num_files=num_files,
        version=version,
        size_bytes=size,
        protocol=(reader, writer),
    )
