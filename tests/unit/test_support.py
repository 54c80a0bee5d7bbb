"""The support matrix, row by row: complete, sourced, and consistent with the Delta protocol's rules."""

from __future__ import annotations

import pytest

from delta_sync.planning.compatibility import support, support_matrix
from delta_sync.planning.compatibility.support import EVERY, FEATURES, READER_V3, READER_WRITER, WRITER_V7, Row, Version
from delta_sync.planning.compatibility.support_matrix import ROWS

# Features an engine supports by supporting a legacy protocol version (writer 2..6, reader 2), so they may be
# written (and columnMapping read) before the engine understands table features.
LEGACY = frozenset(
    {"appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns", "columnMapping",
     "identityColumns"}
)  # fmt: skip
ENGINE_NAMES = [e.name for e in support_matrix.ENGINES]


def rid(r: Row) -> str:
    return f"{r.engine}-{r.feature}"


def at_least(a: Version | None, b: Version | None) -> bool:
    """`a` is no earlier than `b`; None (never) is later than any version."""
    if b is None:
        return a is None
    return a is None or a >= b


def excused(r: Row) -> bool:
    """A row may break a rule below only when its note says why, starting with "exception:"."""
    return "exception:" in r.note.casefold()


def base(engine: str, feature: str) -> Row:
    found = support_matrix.row(engine, feature)
    assert found is not None
    return found


# --- completeness -----------------------------------------------------------------------------


def test_one_row_per_engine_and_feature() -> None:
    keys = [(r.engine, r.feature) for r in ROWS]
    assert len(keys) == len(set(keys))
    assert set(keys) == {(e, f) for e in ENGINE_NAMES for f in FEATURES}


def test_features_and_engines_are_distinct_and_include_the_required_ones() -> None:
    assert len(FEATURES) == len(set(FEATURES))
    assert len(ENGINE_NAMES) == len(set(ENGINE_NAMES))
    required = {"delta-spark", "databricks-runtime", "delta-rs", "duckdb", "trino", "athena", "flink"}
    assert required | {"delta-sharing", "uniform-iceberg"} <= set(ENGINE_NAMES)
    assert {READER_V3, WRITER_V7, "deletionVectors", "columnMapping", "typeWidening"} <= set(FEATURES)


def test_reader_writer_features_are_the_protocols() -> None:
    # PROTOCOL.md "Valid Feature Names in Table Features" (+ its typeWidening and variantType sections).
    expected = {"columnMapping", "deletionVectors", "timestampNtz", "typeWidening", "v2Checkpoint", "variantType",
                "vacuumProtocolCheck", READER_V3}  # fmt: skip
    assert expected == READER_WRITER
    assert set(FEATURES) >= READER_WRITER
    assert WRITER_V7 not in READER_WRITER


@pytest.mark.parametrize("r", ROWS, ids=rid)
def test_row_names_a_known_engine_and_feature(r: Row) -> None:
    assert r.engine in ENGINE_NAMES
    assert r.feature in FEATURES


# --- every row ---------------------------------------------------------------------------------


@pytest.mark.parametrize("r", ROWS, ids=rid)
def test_row_has_an_https_source(r: Row) -> None:
    assert r.source.startswith("https://")
    assert " " not in r.source
    assert "{" not in r.source


@pytest.mark.parametrize("r", ROWS, ids=rid)
def test_unversioned_engines_say_only_every_or_never(r: Row) -> None:
    eng = support_matrix.engine(r.engine)
    assert eng is not None
    if not eng.versioned:
        assert r.read in (EVERY, None)
        assert r.write in (EVERY, None)


@pytest.mark.parametrize("r", ROWS, ids=rid)
def test_versions_are_tuples_of_non_negative_ints(r: Row) -> None:
    for v in (r.read, r.write):
        if v is not None:
            assert isinstance(v, tuple)
            assert v
            assert all(isinstance(p, int) and p >= 0 for p in v)


@pytest.mark.parametrize("r", ROWS, ids=rid)
def test_writing_needs_reading_first(r: Row) -> None:
    """A writer must be able to read the table (PROTOCOL.md: writers respect the reader protocol too)."""
    if r.write is not None and not excused(r):
        assert r.read is not None, "write without read"
        assert at_least(r.write, r.read), "written before it is read"


@pytest.mark.parametrize("r", ROWS, ids=rid)
def test_reader_writer_feature_needs_reader_v3_unless_legacy(r: Row) -> None:
    if r.feature not in READER_WRITER or r.feature in (READER_V3, "columnMapping") or excused(r):
        return
    v3 = base(r.engine, READER_V3)
    assert at_least(r.read, v3.read), f"read before {READER_V3} ({v3.read})"


@pytest.mark.parametrize("r", ROWS, ids=rid)
def test_table_feature_written_only_with_writer_v7_unless_legacy(r: Row) -> None:
    """Writer-only and reader-writer features alike (READER_V3 included): a table-features table is writer 7."""
    if r.feature in LEGACY or r.feature == WRITER_V7 or excused(r):
        return
    v7 = base(r.engine, WRITER_V7)
    assert at_least(r.write, v7.write), f"written before {WRITER_V7} ({v7.write})"


@pytest.mark.parametrize("r", ROWS, ids=rid)
def test_writer_only_feature_is_invisible_to_readers(r: Row) -> None:
    if r.feature in READER_WRITER or excused(r):
        return
    assert r.read == EVERY, "a reader ignores writer features"


@pytest.mark.parametrize("r", ROWS, ids=rid)
def test_not_pinned_or_never_rows_explain_themselves(r: Row) -> None:
    if r.read is None or (r.write is None and r.feature not in LEGACY | READER_WRITER):
        assert r.note


# --- lookups ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "version"),
    [("0.17", (0, 17)), ("13.3 LTS", (13, 3)), ("13.3 lts", (13, 3)), ("440", (440,)), (" 1.6.6 ", (1, 6, 6)),
     ("v3.1.0", (3, 1, 0)), ("0", (0,))],
)  # fmt: skip
def test_parse_version(text: str, version: Version) -> None:
    assert support.parse_version(text) == version
    assert support.parse_version(support.version_text(version)) == version


@pytest.mark.parametrize("junk", ["", "  ", "latest", "1.", ".1", "1..2", "-1", "1.2.x", "3.1 beta", "13.3LTSX", "١٢"])
def test_parse_version_rejects_junk(junk: str) -> None:
    assert support.parse_version(junk) is None


@pytest.mark.parametrize("r", ROWS, ids=rid)
def test_row_versions_round_trip_through_text(r: Row) -> None:
    for v in (r.read, r.write):
        if v is not None:
            assert support.parse_version(support.version_text(v)) == v


def test_version_text() -> None:
    assert support.version_text((0, 17)) == "0.17"
    assert support.version_text((440,)) == "440"


def test_engine_lookup_is_case_insensitive() -> None:
    eng = support_matrix.engine("Delta-RS")
    assert eng is not None
    assert eng.name == "delta-rs"
    assert support_matrix.engine("TRINO") == support_matrix.engine("trino")
    assert support_matrix.engine("presto") is None


def test_row_lookup() -> None:
    assert support_matrix.row("Trino", "deletionVectors") == base("trino", "deletionVectors")
    assert support_matrix.row("trino", "noSuchFeature") is None
    assert support_matrix.row("presto", "deletionVectors") is None


# --- anchor facts, each from its source ----------------------------------------------------------


def test_delta_spark_anchors() -> None:
    # docs.delta.io/versioning: column mapping needs Delta 1.2, deletion vectors 2.3, table features 2.3.
    assert base("delta-spark", "columnMapping").read == (1, 2)
    assert base("delta-spark", "deletionVectors").read == (2, 3)
    assert base("delta-spark", READER_V3).read == (2, 3)
    # Delta 2.4.0 release notes: "Support for all write operations on tables with Deletion Vectors enabled".
    assert base("delta-spark", "deletionVectors").write == (2, 4)
    # Delta 1.x DeltaErrors.cdcWriteNotAllowedInThisVersion: CDF tables are writable from 2.0.
    assert base("delta-spark", "changeDataFeed").write == (2, 0)


def test_delta_rs_anchors_from_the_measurement() -> None:
    # deltalake 1.6.6 on Delta 4.4 tables: no read or append after typeWidening or deletionVectors ...
    for feature in ("typeWidening", "deletionVectors"):
        r = base("delta-rs", feature)
        assert r.read is None
        assert r.write is None
    assert "1.4.0" in base("delta-rs", "deletionVectors").note  # the source's claim is kept in the note
    # ... but reads and appends under column mapping (reader 2) and CHECK constraints; it reads a table
    # with column defaults but refuses to append (tests/spark/test_compatibility.py).
    assert at_least((1, 6, 6), base("delta-rs", "columnMapping").read)
    assert at_least((1, 6, 6), base("delta-rs", "columnMapping").write)
    assert at_least((1, 6, 6), base("delta-rs", "checkConstraints").write)
    assert base("delta-rs", "allowColumnDefaults").read == support.EVERY
    assert base("delta-rs", "allowColumnDefaults").write is None
    assert "reader-3" in base("delta-rs", "columnMapping").note


def test_trino_anchors() -> None:
    # Trino release notes: 414 checks reader features, 423 reads timestamp_ntz, 427 reads deletion vectors and
    # writes writer 7, 454 writes deletion vectors, 471 reads variant.
    assert base("trino", READER_V3).read == (414,)
    assert base("trino", "timestampNtz").read == (423,)
    assert base("trino", "deletionVectors").read == (427,)
    assert base("trino", WRITER_V7).write == (427,)
    assert base("trino", "deletionVectors").write == (454,)
    assert base("trino", "variantType").read == (471,)
    # DeltaLakeTableFeatures.SUPPORTED_WRITER_FEATURES has no generatedColumns or typeWidening.
    assert base("trino", "generatedColumns").write is None
    assert base("trino", "typeWidening").write is None


def test_databricks_anchors() -> None:
    # Databricks docs: deletion vectors read in 12.2 LTS+, type widening only in 15.4 LTS+, checkpoint V2 13.3 LTS+.
    assert base("databricks-runtime", "deletionVectors").read == (12, 2)
    assert base("databricks-runtime", "typeWidening").read == (15, 4)
    assert base("databricks-runtime", "v2Checkpoint").read == (13, 3)


def test_duckdb_anchors() -> None:
    # duckdb-delta v0.4.0 (DuckDB 1.3.2) bundles delta-kernel-rs 0.12.1, the first with v2Checkpoint among those
    # bundled; kernel refuses typeWidening and checkConstraints for writes.
    assert base("duckdb", "v2Checkpoint").read == (1, 3, 2)
    assert base("duckdb", "typeWidening").write is None
    assert base("duckdb", "checkConstraints").write is None


def test_read_only_and_reader_1_engines() -> None:
    # Athena docs: "Read only"; Delta Standalone (Flink connector) reads reader 1 only.
    assert all(r.write is None for r in ROWS if r.engine == "athena")
    assert base("flink", READER_V3).read is None
    assert base("flink", "columnMapping").read is None
    assert base("flink", "appendOnly").write == EVERY


def test_sharing_and_uniform_anchors() -> None:
    # Delta Sharing PROTOCOL.md: parquet responses serve minReaderVersion 1 only.
    assert all(base("delta-sharing", f).read is None for f in READER_WRITER)
    assert "responseFormat=delta" in base("delta-sharing", "deletionVectors").note
    # UniForm docs: no deletion vectors; IcebergCompatV2's type allow-list has no variant; column mapping required.
    assert base("uniform-iceberg", "deletionVectors").read is None
    assert base("uniform-iceberg", "variantType").read is None
    assert base("uniform-iceberg", "columnMapping").read == EVERY
    assert all(base(e, f).write is None for e in ("delta-sharing", "uniform-iceberg") for f in FEATURES)
