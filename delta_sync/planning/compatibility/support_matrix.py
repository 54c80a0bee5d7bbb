"""The support matrix: the engines (`ENGINES`) and, for each engine and feature, the first versions that
read and write tables with it (`ROWS`, terms in delta_sync.planning.compatibility.support), with the lookups by name.

Sources, checked on 2026-11-25, preferring the engine's own code and docs: delta-io/delta
(PROTOCOL.md, TableFeature.scala per tag, docs.delta.io "versioning" and release notes);
Databricks "Delta Lake feature compatibility and protocols" and per-feature pages;
delta-io/delta-rs (kernel/transaction/protocol.rs and python/deltalake/table.py per python tag)
plus a measurement of deltalake 1.6.6 against tables written by Delta 4.4; duckdb/duckdb-delta
(the delta-kernel-rs tag each release branch bundles) and delta-io/delta-kernel-rs
(table_features/mod.rs per tag); trinodb/trino release notes and DeltaLakeTableFeatures.java;
the Amazon Athena Delta Lake page; Delta Standalone (which the Delta Flink connector uses);
the Delta Sharing PROTOCOL.md; the Delta UniForm docs and PROTOCOL.md IcebergCompatV2.
"""

from __future__ import annotations

from delta_sync.planning.compatibility.support import EVERY, READER_V3, WRITER_V7, Engine, Row, Version

# --- sources ---------------------------------------------------------------------------------
_DELTA = "https://github.com/delta-io/delta"
_DELTA_VERSIONING = "https://docs.delta.io/versioning/"
_DELTA_TF = _DELTA + "/blob/{tag}/spark/src/main/scala/org/apache/spark/sql/delta/TableFeature.scala"
_DELTA_ACTIONS = _DELTA + "/blob/{tag}/core/src/main/scala/org/apache/spark/sql/delta/actions/actions.scala"
_PROTOCOL = _DELTA + "/blob/master/PROTOCOL.md"
_DBR = "https://docs.databricks.com/aws/en/tables/features/feature-compatibility"
_DBR_DV = "https://docs.databricks.com/aws/en/delta/deletion-vectors"
_DBR_TW = "https://docs.databricks.com/aws/en/tables/features/type-widening"
_DBR_V2CP = "https://docs.databricks.com/gcp/en/delta/checkpoint-v2"
_DBR_ROWT = "https://docs.databricks.com/delta/row-tracking.html"
_DBR_DROP = "https://docs.databricks.com/en/delta/drop-feature.html"
_RS = "https://github.com/delta-io/delta-rs/blob/{tag}/crates/core/src/kernel/transaction/protocol.rs"
_RS_OLD = "https://github.com/delta-io/delta-rs/blob/{tag}/crates/core/src/operations/transaction/protocol.rs"
_RS_PY = "https://github.com/delta-io/delta-rs/blob/{tag}/python/deltalake/table.py"
_RS_WRITER = "https://github.com/delta-io/delta-rs/blob/python-v0.6.2/python/deltalake/writer.py"
_RS_015 = (
    "https://github.com/delta-io/delta-rs/blob/python-v0.15.0/crates/deltalake-core/src/operations/transaction/"
    "protocol.rs"
)
_KERNEL = "https://github.com/delta-io/delta-kernel-rs/blob/{tag}/kernel/src/table_features/mod.rs"
_KERNEL_WRITE = "https://github.com/delta-io/delta-kernel-rs/blob/v0.17.1/kernel/src/actions/mod.rs"
_DUCKDB_DELTA = "https://github.com/duckdb/duckdb-delta/blob/{branch}/CMakeLists.txt"
_TRINO_REL = "https://trino.io/docs/current/release/release-{n}.html"
_TRINO_TF = (
    "https://github.com/trinodb/trino/blob/master/plugin/trino-delta-lake/src/main/java/io/trino/plugin/"
    "deltalake/transactionlog/DeltaLakeTableFeatures.java"
)
_TRINO_DOC = "https://trino.io/docs/current/connector/delta-lake.html#delta-lake-table-features"
_ATHENA = "https://docs.aws.amazon.com/athena/latest/ug/delta-lake-tables.html"
_STANDALONE = (
    _DELTA + "/blob/v3.3.0/connectors/standalone/src/main/scala/io/delta/standalone/internal/actions/actions.scala"
)
_SHARING = "https://github.com/delta-io/delta-sharing/blob/main/PROTOCOL.md#delta-sharing-capabilities-header"
_UNIFORM = "https://docs.delta.io/delta-uniform/"
_ICEBERG_V2 = _PROTOCOL + "#iceberg-compatibility-v2"


def _trino(n: int) -> str:
    return _TRINO_REL.format(n=n)


# fmt: off
ENGINES: tuple[Engine, ...] = (
    Engine("delta-spark", "Delta Lake for Apache Spark (OSS delta-spark; version = Delta release, e.g. 3.1)", True,
        _DELTA_VERSIONING),
    Engine("databricks-runtime", "Databricks Runtime (version = DBR release, e.g. 13.3 for 13.3 LTS)", True, _DBR),
    Engine("delta-rs", "delta-rs (Python `deltalake`, Polars; version = the `deltalake` PyPI version)", True,
        _RS.format(tag="python-v1.6.3")),
    Engine("duckdb",
        "DuckDB with its `delta` extension (version = DuckDB release; features follow the bundled delta-kernel-rs)",
        True,
        "https://github.com/duckdb/duckdb-delta"),
    Engine("trino", "Trino Delta Lake connector (version = Trino release number, e.g. 440; connector since 373)", True,
        _TRINO_DOC),
    Engine("athena",
        "Amazon Athena (version = Athena engine version; native Delta reads need engine 3; read-only)",
        True,
        _ATHENA),
    Engine("flink", "Delta Flink connector on Delta Standalone (version = connector release, e.g. 3.2.0)", True,
        _STANDALONE),
    Engine("delta-sharing",
        "Delta Sharing open-protocol recipient using responseFormat=parquet (the default "
        "format; responseFormat=delta clients read more)",
        False,
        _SHARING),
    Engine("uniform-iceberg",
        "Iceberg clients reading a UniForm (IcebergCompatV2) table's Iceberg metadata; read-only",
        False,
        _UNIFORM),
)
# fmt: on

_NEEDS_DELTA_FORMAT = (
    "a parquet-format recipient only reads minReaderVersion 1 tables; needs responseFormat=delta "
    "(delta-sharing-spark 3.1+) and the feature in the client's readerfeatures"
)
_RS_MEASURED = "measured on deltalake 1.6.6 against a Delta 4.4 table"

# fmt: off
ROWS: tuple[Row, ...] = (
    # --- delta-spark: docs.delta.io "versioning" table, TableFeature.scala allSupportedFeaturesMap per tag,
    # Action.readerVersion/writerVersion before 2.3, release notes.
    Row("delta-spark", "appendOnly", EVERY, EVERY, _DELTA_ACTIONS.format(tag="v0.1.0"), "writer 2 since 0.1.0"),
    Row("delta-spark", "invariants", EVERY, EVERY, _DELTA_ACTIONS.format(tag="v0.1.0"), "writer 2 since 0.1.0"),
    Row("delta-spark", "checkConstraints", EVERY, (0, 8), _DELTA_VERSIONING, "writer 3"),
    Row("delta-spark", "changeDataFeed", EVERY, (2, 0), _DELTA_VERSIONING,
        "writer 4 is accepted since 1.0, but 1.x refuses writes to tables with delta.enableChangeDataFeed "
        "(cdcWriteNotAllowedInThisVersion)"),
    Row("delta-spark", "generatedColumns", EVERY, (1, 0), _DELTA_VERSIONING, "writer 4"),
    Row("delta-spark", "columnMapping", (1, 2), (1, 2), _DELTA_VERSIONING,
        "reader 2 / writer 5; 1.1 already declared reader 2 but the docs require 1.2; as a reader-3 feature since 2.3"),
    Row("delta-spark", "identityColumns", EVERY, (3, 3), _DELTA_VERSIONING,
        "writer 6 is accepted since 1.2, but writing IDENTITY columns fails ('IDENTITY column is not supported') "
        "before 3.3"),
    Row("delta-spark", "deletionVectors", (2, 3), (2, 4), "https://github.com/delta-io/delta/releases/tag/v2.4.0",
        "2.3 reads them; 2.4 supports all write operations on tables with deletion vectors"),
    Row("delta-spark", "timestampNtz", (2, 4), (2, 4), _DELTA_VERSIONING),
    Row("delta-spark", "typeWidening", (4, 0), (4, 0), _DELTA_VERSIONING,
        "3.2 only knows 'typeWidening-preview'; 3.3's TableFeature.scala already lists the stable name but the docs "
        "say 4.0, kept"),
    Row("delta-spark", "v2Checkpoint", (3, 0), (3, 0), _DELTA_VERSIONING),
    Row("delta-spark", "domainMetadata", EVERY, (3, 0), _DELTA_VERSIONING),
    Row("delta-spark", "clustering", EVERY, (3, 1), _DELTA_VERSIONING),
    Row("delta-spark", "rowTracking", EVERY, (3, 2), _DELTA_VERSIONING, "test-only before 3.2"),
    Row("delta-spark", "allowColumnDefaults", EVERY, (3, 1), _DELTA_TF.format(tag="v3.1.0")),
    Row("delta-spark", "inCommitTimestamp", EVERY, (3, 3), _DELTA_TF.format(tag="v3.3.0"),
        "3.2 only knows 'inCommitTimestamp-preview'"),
    Row("delta-spark", "variantType", (4, 0), (4, 0), _DELTA_VERSIONING, "3.2/3.3 only know 'variantType-preview'"),
    Row("delta-spark", "icebergCompatV1", EVERY, (3, 0), _DELTA_VERSIONING),
    Row("delta-spark", "icebergCompatV2", EVERY, (3, 1), _DELTA_VERSIONING),
    Row("delta-spark", "vacuumProtocolCheck", (3, 2), (3, 2), _DELTA_TF.format(tag="v3.2.0")),
    Row("delta-spark", "checkpointProtection", EVERY, (4, 0), _DELTA_VERSIONING,
        "3.3's TableFeature.scala already lists it but the docs say 4.0, kept"),
    Row("delta-spark", READER_V3, (2, 3), (2, 3), _DELTA_VERSIONING, "table features since 2.3"),
    Row("delta-spark", WRITER_V7, EVERY, (2, 3), _DELTA_VERSIONING, "table features since 2.3"),
    # --- databricks-runtime: the "feature compatibility" page lists the lowest DBR still supported (9.1 LTS),
    # not the true first version; per-feature pages for the rest.
    Row("databricks-runtime", "appendOnly", EVERY, EVERY, _DBR),
    Row("databricks-runtime", "invariants", EVERY, EVERY, _DBR),
    Row("databricks-runtime", "checkConstraints", EVERY, (9, 1), _DBR, "lowest DBR the page still lists"),
    Row("databricks-runtime", "changeDataFeed", EVERY, (9, 1), _DBR, "lowest DBR the page still lists"),
    Row("databricks-runtime", "generatedColumns", EVERY, (9, 1), _DBR, "lowest DBR the page still lists"),
    Row("databricks-runtime", "columnMapping", (10, 4), (10, 4), _DBR),
    Row("databricks-runtime", "identityColumns", EVERY, (10, 4), _DBR),
    Row("databricks-runtime", "deletionVectors", (12, 2), (12, 2), _DBR_DV,
        "reads in 12.2 LTS+; Databricks recommends 14.3 LTS+ for writing with all optimizations"),
    Row("databricks-runtime", "timestampNtz", (13, 3), (13, 3), _DBR),
    Row("databricks-runtime", "typeWidening", (15, 4), (15, 4), _DBR_TW, "only DBR 15.4 LTS+ read such tables"),
    Row("databricks-runtime", "v2Checkpoint", (13, 3), (13, 3), _DBR_V2CP),
    Row("databricks-runtime", "domainMetadata", EVERY, (13, 3), _DBR,
        "not pinned: used by liquid clustering (13.3 LTS); 13.3 chosen"),
    Row("databricks-runtime", "clustering", EVERY, (13, 3), _DBR, "liquid clustering: 13.3 LTS"),
    Row("databricks-runtime", "rowTracking", EVERY, (14, 1), _DBR_ROWT),
    Row("databricks-runtime", "allowColumnDefaults", EVERY, (12, 2), _DBR,
        "not pinned: a writer-7 feature, so no earlier than table features (12.2 LTS)"),
    Row("databricks-runtime", "inCommitTimestamp", EVERY, (15, 4), _DBR, "not pinned; 15.4 LTS chosen conservatively"),
    Row("databricks-runtime", "variantType", (15, 3), (15, 3), _DBR),
    Row("databricks-runtime", "icebergCompatV1", EVERY, (13, 3), _DBR, "UniForm (IcebergCompatV1): 13.3 LTS"),
    Row("databricks-runtime", "icebergCompatV2", EVERY, (14, 3), _DBR, "UniForm (IcebergCompatV2): 14.3 LTS"),
    Row("databricks-runtime", "vacuumProtocolCheck", (15, 4), (15, 4), _DBR,
        "not pinned; 15.4 LTS chosen conservatively"),
    Row("databricks-runtime", "checkpointProtection", EVERY, (12, 2), _DBR_DROP,
        "docs: all supported DBR versions support it; writing needs table features (12.2 LTS)"),
    Row("databricks-runtime", READER_V3, (12, 2), (12, 2), _DBR, "table features: 12.2 LTS"),
    Row("databricks-runtime", WRITER_V7, EVERY, (12, 2), _DBR, "table features: 12.2 LTS"),
    # --- delta-rs: ProtocolChecker INSTANCE in protocol.rs and python table.py SUPPORTED_*_FEATURES per
    # python-v* tag, with the 1.6.6 measurement winning where they disagree.
    Row("delta-rs", "appendOnly", EVERY, (0, 6, 2), _RS_WRITER, "the Python writer accepts writer 2 since 0.6.2"),
    Row("delta-rs", "invariants", EVERY, (0, 6, 2), _RS_WRITER, "0.6.2's writer enforces invariants"),
    Row("delta-rs", "checkConstraints", EVERY, (1, 0, 0), _RS_015,
        f"Rust writer accepts writer 3 since 0.15 (engine='rust' only until 1.0); {_RS_MEASURED}: works"),
    Row("delta-rs", "changeDataFeed", EVERY, (1, 0, 0), _RS_OLD.format(tag="python-v0.18.0"),
        "writer 4 accepted by the Rust writer since 0.18 (engine='rust' only until 1.0)"),
    Row("delta-rs", "generatedColumns", EVERY, (1, 0, 0), _RS_OLD.format(tag="python-v0.24.0"),
        "generated columns computed since 0.24 (engine='rust' only until 1.0)"),
    Row("delta-rs", "columnMapping", (1, 6, 6), (1, 6, 6), _RS.format(tag="python-v1.6.3"),
        f"{_RS_MEASURED}: reads and appends under reader 2, fails as a reader-3 feature. Source: ColumnMapping "
        "in the Rust reader features since 1.6.0 and writer features since 1.6.1, but to_pyarrow_dataset() "
        "(to_pandas) refuses reader 2 through 1.6.3; 1.6.6 chosen"),
    Row("delta-rs", "identityColumns", EVERY, None, _RS.format(tag="python-v1.6.3"),
        "IdentityColumns is commented out of the writer features"),
    Row("delta-rs", "deletionVectors", None, None, _RS.format(tag="python-v1.6.3"),
        f"{_RS_MEASURED}: neither reads nor appends. Source lists DeletionVectors as a Rust reader and writer "
        "feature since 1.4.0 (QueryBuilder), but to_pyarrow_dataset() refuses it; measurement wins"),
    Row("delta-rs", "timestampNtz", (0, 16, 0), (0, 16, 0), _RS_PY.format(tag="python-v0.16.0")),
    Row("delta-rs", "typeWidening", None, None, _RS.format(tag="python-v1.6.3"),
        f"not a supported reader feature; {_RS_MEASURED}: neither reads nor appends"),
    Row("delta-rs", "v2Checkpoint", None, None, _RS.format(tag="python-v1.6.3"),
        "Rust checker accepts it since 1.6.3 but the Python reader (to_pyarrow_dataset) does not list it; unmeasured, "
        "so None like deletionVectors"),
    Row("delta-rs", "domainMetadata", EVERY, None, _RS.format(tag="python-v1.6.3"), "not a supported writer feature"),
    Row("delta-rs", "clustering", EVERY, None, _RS.format(tag="python-v1.6.3"), "not a supported writer feature"),
    Row("delta-rs", "rowTracking", EVERY, None, _RS.format(tag="python-v1.6.3"), "not a supported writer feature"),
    Row("delta-rs", "allowColumnDefaults", EVERY, None, _RS.format(tag="python-v1.6.3"),
        "not among the writer features; deltalake 1.6.6 reads such a table but refuses appends with "
        "'Unsupported table features required: [AllowColumnDefaults]' (tests/spark/test_compatibility.py)"),
    Row("delta-rs", "inCommitTimestamp", EVERY, None, _RS.format(tag="python-v1.6.3"),
        "not a supported writer feature"),
    Row("delta-rs", "variantType", (1, 6, 0), (1, 6, 0), _RS_PY.format(tag="python-v1.6.0")),
    Row("delta-rs", "icebergCompatV1", EVERY, None, _RS.format(tag="python-v1.6.3"), "not a supported writer feature"),
    Row("delta-rs", "icebergCompatV2", EVERY, None, _RS.format(tag="python-v1.6.3"), "not a supported writer feature"),
    Row("delta-rs", "vacuumProtocolCheck", None, None, _RS.format(tag="python-v1.6.3"),
        "not a supported reader feature"),
    Row("delta-rs", "checkpointProtection", EVERY, None, _RS.format(tag="python-v1.6.3"),
        "not a supported writer feature"),
    Row("delta-rs", READER_V3, (0, 16, 0), (0, 16, 0), _RS_PY.format(tag="python-v0.16.0"),
        "reader 3 with supported reader features since 0.16"),
    Row("delta-rs", WRITER_V7, EVERY, (0, 16, 0), _RS_PY.format(tag="python-v0.16.0"),
        "writer 7 with supported writer features since 0.16"),
    # --- duckdb: the delta extension bundles delta-kernel-rs (1.2 -> kernel 0.7.0, 1.3.2 -> 0.12.1,
    # 1.4 -> 0.13.0..0.17.1, 1.5 -> 0.21.0, per duckdb-delta tags/branches); writes are blind INSERTs
    # (ATTACH ... (TYPE delta)) since 1.4, limited to the kernel's writer features.
    Row("duckdb", "appendOnly", EVERY, (1, 4, 0), _DUCKDB_DELTA.format(branch="v1.4-andium"), "blind inserts only"),
    Row("duckdb", "invariants", EVERY, (1, 4, 0), _KERNEL_WRITE,
        "blind inserts only; the kernel refuses tables where a column actually has an invariant"),
    Row("duckdb", "checkConstraints", EVERY, None, _KERNEL.format(tag="v0.21.0"),
        "kernel: checkConstraints NotSupported for writes"),
    Row("duckdb", "changeDataFeed", EVERY, None, _KERNEL.format(tag="v0.21.0"),
        "legacy writer 4 is refused (implies generatedColumns); as a writer-7 feature accepted by kernel 0.17+ "
        "(1.4.1+?/1.5), not modelled"),
    Row("duckdb", "generatedColumns", EVERY, None, _KERNEL.format(tag="v0.21.0"), "kernel: NotSupported"),
    Row("duckdb", "columnMapping", (1, 2, 0), None, _KERNEL.format(tag="v0.7.0"),
        "read: kernel 0.7.0 (1.2); writes: legacy writer 5 refused, as a writer-7 feature only kernel 0.21 (1.5), not "
        "modelled"),
    Row("duckdb", "identityColumns", EVERY, None, _KERNEL.format(tag="v0.21.0"), "kernel: NotSupported"),
    Row("duckdb", "deletionVectors", (1, 2, 0), (1, 4, 0), _KERNEL.format(tag="v0.7.0"),
        "1.0/1.1 scanned DVs without a protocol check; 1.2 chosen. Writes are blind inserts (no DVs written)"),
    Row("duckdb", "timestampNtz", (1, 2, 0), (1, 4, 0), _KERNEL.format(tag="v0.7.0")),
    Row("duckdb", "typeWidening", (1, 2, 0), None, _KERNEL.format(tag="v0.7.0"),
        "kernel 0.6+ accepts it for scans (DuckDB casts to the table type, unverified); kernel refuses writes"),
    Row("duckdb", "v2Checkpoint", (1, 3, 2), (1, 5, 0), _KERNEL.format(tag="v0.12.1"),
        "kernel 0.9+; 1.3.0 bundled 0.7, 1.3.2 bundles 0.12.1 (1.3.1 probably too, unverified)"),
    Row("duckdb", "domainMetadata", EVERY, (1, 5, 0), _KERNEL.format(tag="v0.21.0"),
        "kernel 0.17 already writes it; the 1.4.x kernel pin is not verified, 1.5 chosen"),
    Row("duckdb", "clustering", EVERY, (1, 5, 0), _KERNEL.format(tag="v0.21.0")),
    Row("duckdb", "rowTracking", EVERY, (1, 5, 0), _KERNEL.format(tag="v0.21.0"),
        "kernel 0.17 already writes it; the 1.4.x kernel pin is not verified, 1.5 chosen"),
    Row("duckdb", "allowColumnDefaults", EVERY, None, _KERNEL.format(tag="v0.21.0"),
        "unknown to kernel 0.21, so writes are refused"),
    Row("duckdb", "inCommitTimestamp", EVERY, (1, 5, 0), _KERNEL.format(tag="v0.21.0"),
        "kernel 0.17 already writes it; the 1.4.x kernel pin is not verified, 1.5 chosen"),
    Row("duckdb", "variantType", (1, 5, 0), None, _DUCKDB_DELTA.format(branch="v1.5-variegata"),
        "kernel 0.14+; 1.4.0 bundled 0.13, 1.4.1+ probably 0.16 (unverified), 1.5 chosen; inserting VARIANT values "
        "unverified"),
    Row("duckdb", "icebergCompatV1", EVERY, None, _KERNEL.format(tag="v0.21.0"), "kernel: NotSupported"),
    Row("duckdb", "icebergCompatV2", EVERY, None, _KERNEL.format(tag="v0.21.0"), "kernel: NotSupported"),
    Row("duckdb", "vacuumProtocolCheck", (1, 2, 0), (1, 5, 0), _KERNEL.format(tag="v0.7.0")),
    Row("duckdb", "checkpointProtection", EVERY, None, _KERNEL.format(tag="v0.21.0"),
        "unknown to kernel 0.21, so writes are refused"),
    Row("duckdb", READER_V3, (1, 2, 0), (1, 4, 0), _KERNEL.format(tag="v0.7.0"),
        "kernel checks reader-3 features since 0.6; earlier DuckDB did not check"),
    Row("duckdb", WRITER_V7, EVERY, (1, 4, 0), _KERNEL_WRITE, "kernel writes writer 1, 2 or 7 only"),
    # --- trino: release notes (trino.io/docs/current/release) and DeltaLakeTableFeatures.java
    # SUPPORTED_READER_FEATURES / SUPPORTED_WRITER_FEATURES; the connector exists since 373.
    Row("trino", "appendOnly", EVERY, (385,), _trino(385), "appendOnly respected since 385"),
    Row("trino", "invariants", EVERY, (421,), _trino(421),
        "tables without invariant columns writable since 385; INSERT into tables using invariants ~409, UPDATE since "
        "421"),
    Row("trino", "checkConstraints", EVERY, (421,), _trino(421),
        "writer 3 since ~397 but writes to tables with CHECKs failed at first; UPDATE with CHECKs since 421 (INSERT "
        "earlier, not pinned)"),
    Row("trino", "changeDataFeed", EVERY, (407,), "https://github.com/trinodb/trino/issues/16129",
        "writes CDF files since 407"),
    Row("trino", "generatedColumns", EVERY, None, _TRINO_TF, "writes to tables with generated columns are blocked"),
    Row("trino", "columnMapping", (388,), (414,), _trino(414),
        "name mode: reads since 388, writes since 414; id mode: reads ~395, writes since 418"),
    Row("trino", "identityColumns", EVERY, None, _TRINO_TF, "not a supported writer feature"),
    Row("trino", "deletionVectors", (427,), (454,), _trino(454), "reads since 427, writes since 454"),
    Row("trino", "timestampNtz", (423,), (427,), _trino(423), "reads since 423, writes since 427"),
    Row("trino", "typeWidening", (450,), None, _trino(450), "read-only feature in the connector"),
    Row("trino", "v2Checkpoint", (444,), None, _trino(444), "read-only feature in the connector"),
    Row("trino", "domainMetadata", EVERY, None, _TRINO_TF, "not a supported writer feature"),
    Row("trino", "clustering", EVERY, None, _TRINO_TF, "not a supported writer feature"),
    Row("trino", "rowTracking", EVERY, None, _TRINO_TF, "not a supported writer feature"),
    Row("trino", "allowColumnDefaults", EVERY, None, "https://github.com/trinodb/trino/issues/22413",
        "not a supported writer feature (issue open)"),
    Row("trino", "inCommitTimestamp", EVERY, None, _TRINO_TF, "not a supported writer feature"),
    Row("trino", "variantType", (471,), None, _trino(471), "read as JSON since 471"),
    Row("trino", "icebergCompatV1", EVERY, None, _TRINO_DOC, "docs: readers only"),
    Row("trino", "icebergCompatV2", EVERY, None, _TRINO_DOC, "docs: readers only"),
    Row("trino", "vacuumProtocolCheck", (449,), (449,), _trino(449)),
    Row("trino", "checkpointProtection", EVERY, None, _TRINO_TF, "not a supported writer feature"),
    Row("trino", READER_V3, (414,), (427,), _trino(414),
        "reader-3 features checked since 414 (earlier versions read them wrongly); writing needs writer 7"),
    Row("trino", WRITER_V7, EVERY, (427,), _trino(427)),
    # --- athena: the Athena Delta Lake page (engine 3 only, read-only; reader protocol up to 3, column mapping,
    # timestampNtz and deletion vectors documented). Engine 3 gained these in place; nothing else documented.
    Row("athena", "appendOnly", EVERY, None, _ATHENA, "read-only"),
    Row("athena", "invariants", EVERY, None, _ATHENA, "read-only"),
    Row("athena", "checkConstraints", EVERY, None, _ATHENA, "read-only"),
    Row("athena", "changeDataFeed", EVERY, None, _ATHENA, "read-only"),
    Row("athena", "generatedColumns", EVERY, None, _ATHENA, "read-only"),
    Row("athena", "columnMapping", (3,), None, _ATHENA, "read-only"),
    Row("athena", "identityColumns", EVERY, None, _ATHENA, "read-only"),
    Row("athena", "deletionVectors", (3,), None, _ATHENA, "read-only"),
    Row("athena", "timestampNtz", (3,), None, _ATHENA, "read-only"),
    Row("athena", "typeWidening", None, None, _ATHENA, "not documented as supported"),
    Row("athena", "v2Checkpoint", None, None, _ATHENA, "not documented as supported"),
    Row("athena", "domainMetadata", EVERY, None, _ATHENA, "read-only"),
    Row("athena", "clustering", EVERY, None, _ATHENA, "read-only"),
    Row("athena", "rowTracking", EVERY, None, _ATHENA, "read-only"),
    Row("athena", "allowColumnDefaults", EVERY, None, _ATHENA, "read-only"),
    Row("athena", "inCommitTimestamp", EVERY, None, _ATHENA, "read-only"),
    Row("athena", "variantType", None, None, _ATHENA, "not documented as supported"),
    Row("athena", "icebergCompatV1", EVERY, None, _ATHENA, "read-only"),
    Row("athena", "icebergCompatV2", EVERY, None, _ATHENA, "read-only"),
    Row("athena", "vacuumProtocolCheck", None, None, _ATHENA, "not documented as supported"),
    Row("athena", "checkpointProtection", EVERY, None, _ATHENA, "read-only"),
    Row("athena", READER_V3, (3,), None, _ATHENA, "read-only"),
    Row("athena", WRITER_V7, EVERY, None, _ATHENA, "read-only"),
    # --- flink: Delta Standalone's Action.readerVersion = 1 and writerVersion = 2 (v3.3.0); the kernel-based
    # sink-only connector shipped from Delta 4.2 is a private preview and not modelled.
    Row("flink", "appendOnly", EVERY, EVERY, _STANDALONE, "writer 2"),
    Row("flink", "invariants", EVERY, EVERY, _STANDALONE,
        "writer 2 is accepted, but Standalone does not evaluate invariant expressions"),
    Row("flink", "checkConstraints", EVERY, None, _STANDALONE, "Standalone writes writer 2 at most"),
    Row("flink", "changeDataFeed", EVERY, None, _STANDALONE, "Standalone writes writer 2 at most"),
    Row("flink", "generatedColumns", EVERY, None, _STANDALONE, "Standalone writes writer 2 at most"),
    Row("flink", "columnMapping", None, None, _STANDALONE, "Standalone reads reader 1 only"),
    Row("flink", "identityColumns", EVERY, None, _STANDALONE, "Standalone writes writer 2 at most"),
    Row("flink", "deletionVectors", None, None, _STANDALONE, "Standalone reads reader 1 only"),
    Row("flink", "timestampNtz", None, None, _STANDALONE, "Standalone reads reader 1 only"),
    Row("flink", "typeWidening", None, None, _STANDALONE, "Standalone reads reader 1 only"),
    Row("flink", "v2Checkpoint", None, None, _STANDALONE, "Standalone reads reader 1 only"),
    Row("flink", "domainMetadata", EVERY, None, _STANDALONE, "Standalone writes writer 2 at most"),
    Row("flink", "clustering", EVERY, None, _STANDALONE, "Standalone writes writer 2 at most"),
    Row("flink", "rowTracking", EVERY, None, _STANDALONE, "Standalone writes writer 2 at most"),
    Row("flink", "allowColumnDefaults", EVERY, None, _STANDALONE, "Standalone writes writer 2 at most"),
    Row("flink", "inCommitTimestamp", EVERY, None, _STANDALONE, "Standalone writes writer 2 at most"),
    Row("flink", "variantType", None, None, _STANDALONE, "Standalone reads reader 1 only"),
    Row("flink", "icebergCompatV1", EVERY, None, _STANDALONE, "Standalone writes writer 2 at most"),
    Row("flink", "icebergCompatV2", EVERY, None, _STANDALONE, "Standalone writes writer 2 at most"),
    Row("flink", "vacuumProtocolCheck", None, None, _STANDALONE, "Standalone reads reader 1 only"),
    Row("flink", "checkpointProtection", EVERY, None, _STANDALONE, "Standalone writes writer 2 at most"),
    Row("flink", READER_V3, None, None, _STANDALONE, "Standalone reads reader 1 only"),
    Row("flink", WRITER_V7, EVERY, None, _STANDALONE, "Standalone writes writer 2 at most"),
    # --- delta-sharing: PROTOCOL.md "Delta Sharing Capabilities Header": responseFormat=parquet (the default)
    # serves minReaderVersion 1 tables only; recipients never write.
    Row("delta-sharing", "appendOnly", EVERY, None, _SHARING, "recipients are read-only"),
    Row("delta-sharing", "invariants", EVERY, None, _SHARING, "recipients are read-only"),
    Row("delta-sharing", "checkConstraints", EVERY, None, _SHARING, "recipients are read-only"),
    Row("delta-sharing", "changeDataFeed", EVERY, None, _SHARING, "recipients are read-only"),
    Row("delta-sharing", "generatedColumns", EVERY, None, _SHARING, "recipients are read-only"),
    Row("delta-sharing", "columnMapping", None, None, _SHARING, _NEEDS_DELTA_FORMAT),
    Row("delta-sharing", "identityColumns", EVERY, None, _SHARING, "recipients are read-only"),
    Row("delta-sharing", "deletionVectors", None, None, _SHARING, _NEEDS_DELTA_FORMAT),
    Row("delta-sharing", "timestampNtz", None, None, _SHARING, _NEEDS_DELTA_FORMAT),
    Row("delta-sharing", "typeWidening", None, None, _SHARING, _NEEDS_DELTA_FORMAT),
    Row("delta-sharing", "v2Checkpoint", None, None, _SHARING,
        _NEEDS_DELTA_FORMAT + " (a server may still serve it as parquet; not guaranteed)"),
    Row("delta-sharing", "domainMetadata", EVERY, None, _SHARING, "recipients are read-only"),
    Row("delta-sharing", "clustering", EVERY, None, _SHARING, "recipients are read-only"),
    Row("delta-sharing", "rowTracking", EVERY, None, _SHARING, "recipients are read-only"),
    Row("delta-sharing", "allowColumnDefaults", EVERY, None, _SHARING, "recipients are read-only"),
    Row("delta-sharing", "inCommitTimestamp", EVERY, None, _SHARING, "recipients are read-only"),
    Row("delta-sharing", "variantType", None, None, _SHARING, _NEEDS_DELTA_FORMAT),
    Row("delta-sharing", "icebergCompatV1", EVERY, None, _SHARING, "recipients are read-only"),
    Row("delta-sharing", "icebergCompatV2", EVERY, None, _SHARING, "recipients are read-only"),
    Row("delta-sharing", "vacuumProtocolCheck", None, None, _SHARING,
        _NEEDS_DELTA_FORMAT + " (a server may still serve it as parquet; not guaranteed)"),
    Row("delta-sharing", "checkpointProtection", EVERY, None, _SHARING, "recipients are read-only"),
    Row("delta-sharing", READER_V3, None, None, _SHARING, _NEEDS_DELTA_FORMAT),
    Row("delta-sharing", WRITER_V7, EVERY, None, _SHARING, "recipients are read-only"),
    # --- uniform-iceberg: Delta UniForm docs (Limitations) and PROTOCOL.md IcebergCompatV2: needs column mapping
    # and writer 7, forbids active deletion vectors, allows only Iceberg-representable types; Iceberg clients
    # only read. IcebergCompatV3 (Delta 4.3+, Iceberg v3 with deletion vectors and variant) is not modelled.
    Row("uniform-iceberg", "appendOnly", EVERY, None, _UNIFORM, "Iceberg clients only read"),
    Row("uniform-iceberg", "invariants", EVERY, None, _UNIFORM, "Iceberg clients only read"),
    Row("uniform-iceberg", "checkConstraints", EVERY, None, _UNIFORM, "Iceberg clients only read"),
    Row("uniform-iceberg", "changeDataFeed", EVERY, None, _UNIFORM,
        "Iceberg clients only read; the change feed itself is not exposed to Iceberg"),
    Row("uniform-iceberg", "generatedColumns", EVERY, None, _UNIFORM, "Iceberg clients only read"),
    Row("uniform-iceberg", "columnMapping", EVERY, None, _ICEBERG_V2, "required by UniForm (IcebergCompatV2)"),
    Row("uniform-iceberg", "identityColumns", EVERY, None, _UNIFORM, "Iceberg clients only read"),
    Row("uniform-iceberg", "deletionVectors", None, None, _UNIFORM,
        "UniForm does not work on tables with deletion vectors (IcebergCompatV2 forbids them)"),
    Row("uniform-iceberg", "timestampNtz", EVERY, None, _ICEBERG_V2, "in IcebergCompatV2's type allow-list"),
    Row("uniform-iceberg", "typeWidening", EVERY, None, _ICEBERG_V2,
        "only type changes Iceberg V2 supports are allowed under IcebergCompatV2"),
    Row("uniform-iceberg", "v2Checkpoint", EVERY, None, _UNIFORM,
        "Delta log layout, invisible to Iceberg metadata (not explicitly documented)"),
    Row("uniform-iceberg", "domainMetadata", EVERY, None, _UNIFORM, "Iceberg clients only read"),
    Row("uniform-iceberg", "clustering", EVERY, None, _UNIFORM, "Iceberg clients only read"),
    Row("uniform-iceberg", "rowTracking", EVERY, None, _UNIFORM, "Iceberg clients only read"),
    Row("uniform-iceberg", "allowColumnDefaults", EVERY, None, _UNIFORM, "Iceberg clients only read"),
    Row("uniform-iceberg", "inCommitTimestamp", EVERY, None, _UNIFORM, "Iceberg clients only read"),
    Row("uniform-iceberg", "variantType", None, None, _ICEBERG_V2,
        "variant is not in IcebergCompatV2's type allow-list"),
    Row("uniform-iceberg", "icebergCompatV1", EVERY, None, _UNIFORM, "UniForm's older compatibility level"),
    Row("uniform-iceberg", "icebergCompatV2", EVERY, None, _ICEBERG_V2, "what UniForm Iceberg requires"),
    Row("uniform-iceberg", "vacuumProtocolCheck", EVERY, None, _UNIFORM,
        "Delta-side VACUUM rule, invisible to Iceberg metadata (not explicitly documented)"),
    Row("uniform-iceberg", "checkpointProtection", EVERY, None, _UNIFORM, "Iceberg clients only read"),
    Row("uniform-iceberg", READER_V3, EVERY, None, _UNIFORM, "UniForm needs reader 2 or above"),
    Row("uniform-iceberg", WRITER_V7, EVERY, None, _UNIFORM, "UniForm needs writer 7"),
)
# fmt: on

_ENGINES = {e.name.casefold(): e for e in ENGINES}
_ROWS = {(r.engine.casefold(), r.feature.casefold()): r for r in ROWS}


# Column mapping comes in two forms: under reader version 2 (what enabling it on a table without table
# features gives), or as a reader feature of a reader-3 table (a table that already had table features).
# Where an engine reads the first but not the second, its first version for the second form (None: none
# yet); any other engine reads both from its `columnMapping` row's versions.
COLUMN_MAPPING_AS_READER_FEATURE: dict[str, tuple[Version | None, str]] = {
    "delta-rs": (
        None,
        "deltalake 1.6.6 refuses a reader-3 table that lists columnMapping among its reader features "
        "(measured for issue 20 on a table delta-rs wrote, then delta-sync renamed a column of)",
    ),
}


def engine(name: str) -> Engine | None:
    """The engine called `name` (case-insensitive), or None."""
    return _ENGINES.get(name.strip().casefold())


def row(engine: str, feature: str) -> Row | None:
    """The row for `engine` and `feature` (both case-insensitive), or None."""
    return _ROWS.get((engine.strip().casefold(), feature.strip().casefold()))
