"""Every table feature open-source Delta 4.4 knows, and what delta-sync decides about each: the one table.

Pure. The facts are Delta's own (`TableFeature.scala`: each feature's minimum reader and writer versions,
whether readers must understand it, whether it is legacy, what it requires, and whether it is a
`RemovableFeature`); tests/spark/test_features.py reads them from the Delta jar and fails when this table and
Delta disagree, or when Delta knows a feature this table has no decision for. delta_sync.planning.compatibility.protocol
derives its rules from it, and hazard_rules gates by it every way a plan adds a feature to an existing table:
a property, a column type, a default, clustering, a rewrite.

A feature a plan adds to an existing table is `irreversible` unless `gated` is False here: removing it takes
`ALTER TABLE ... DROP FEATURE` at the cost `drop` says (and, for a feature readers must understand, history
protection), or cannot be done at all (`drop` None). New tables are not gated: dropping and re-creating them
is the way back.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Feature:
    name: str
    reader: int
    writer: int
    # Readers must understand it (a reader-writer feature), not only writers.
    reader_writer: bool = False
    # A feature from before table features, implied by its versions alone on a legacy protocol.
    legacy: bool = False
    # Features Delta adds along with it.
    requires: tuple[str, ...] = ()
    # What `ALTER TABLE ... DROP FEATURE` does to the table (Delta's RemovableFeature); None: Delta 4.4 cannot
    # drop it.
    drop: str | None = None
    # Whether adding it to an existing table is `irreversible`: False only where undoing it is part of what
    # delta-sync does anyway.
    gated: bool = True
    # How a plan can add it, for the docs.
    added_by: str = ""


_ALL = (
    Feature("appendOnly", 0, 2, legacy=True, added_by="delta.appendOnly: true"),
    Feature("invariants", 0, 2, legacy=True, added_by="NOT NULL in CREATE TABLE (every new table)"),
    Feature(
        "checkConstraints",
        0,
        3,
        legacy=True,
        drop="needs every CHECK constraint dropped first",
        # delta-sync drops its CHECKs itself when the spec drops them: nothing is committed to for good.
        gated=False,
        added_by="a CHECK, a NOT NULL on an existing column (as a CHECK)",
    ),
    Feature("changeDataFeed", 0, 4, legacy=True, added_by="delta.enableChangeDataFeed: true"),
    Feature("generatedColumns", 0, 4, legacy=True, added_by="a generated column (new tables only)"),
    Feature(
        "columnMapping",
        2,
        5,
        reader_writer=True,
        legacy=True,
        drop="rewrites every data file with the columns' logical names",
        added_by="delta.columnMapping.mode: name, a rename or a drop of a column, names only it allows",
    ),
    Feature("identityColumns", 0, 6, legacy=True, added_by="an identity column (new tables only)"),
    Feature("allowColumnDefaults", 0, 7, added_by="a column default"),
    Feature(
        "deletionVectors",
        3,
        7,
        reader_writer=True,
        drop="turns deletion vectors off and rewrites the data files that have them (rows are kept)",
        added_by="delta.enableDeletionVectors: true",
    ),
    Feature("timestampNtz", 3, 7, reader_writer=True, added_by="a timestamp_ntz column or field, a type change to it"),
    Feature(
        "typeWidening",
        3,
        7,
        reader_writer=True,
        drop="rewrites the data files written before a type change, in the column's current type",
        added_by="delta.enableTypeWidening: true, a widening type change",
    ),
    Feature(
        "typeWidening-preview",
        3,
        7,
        reader_writer=True,
        drop="rewrites the data files written before a type change, in the column's current type",
        added_by="delta.feature.typeWidening-preview (tables of Delta 3.x)",
    ),
    Feature(
        "v2Checkpoint",
        3,
        7,
        reader_writer=True,
        drop="writes classic checkpoints in place of v2 ones",
        added_by="delta.checkpointPolicy: v2",
    ),
    Feature(
        "vacuumProtocolCheck",
        3,
        7,
        reader_writer=True,
        drop="drops the protocol check VACUUM makes",
        added_by="delta.feature.vacuumProtocolCheck",
    ),
    Feature(
        "domainMetadata",
        0,
        7,
        drop="needs no other feature (clustering, row tracking) using it",
        added_by="clustering, row tracking",
    ),
    Feature(
        "rowTracking",
        0,
        7,
        requires=("domainMetadata",),
        drop="stops tracking row ids and row commit versions",
        added_by="delta.enableRowTracking: true",
    ),
    Feature(
        "inCommitTimestamp",
        0,
        7,
        drop="stops writing commit timestamps into the log",
        added_by="delta.enableInCommitTimestamps: true",
    ),
    Feature(
        "clustering", 0, 7, requires=("domainMetadata",), added_by="clustered_by (CLUSTER BY), a rewrite that clusters"
    ),
    Feature("variantType", 3, 7, reader_writer=True, added_by="a variant column or field, a rewrite to variant"),
    Feature("variantType-preview", 3, 7, reader_writer=True, added_by="delta.feature.variantType-preview"),
    Feature(
        "variantShredding",
        3,
        7,
        reader_writer=True,
        requires=("variantType",),
        added_by="delta.enableVariantShredding: true",
    ),
    Feature("variantShredding-preview", 3, 7, reader_writer=True, added_by="delta.feature.variantShredding-preview"),
    Feature(
        "geospatial",
        3,
        7,
        reader_writer=True,
        drop="removes the feature once no column uses a geospatial type (Delta's own check first)",
        added_by="a geometry or geography column",
    ),
    Feature(
        "geospatial-dev",
        3,
        7,
        reader_writer=True,
        drop="removes the feature once no column uses a geospatial type (Delta's own check first)",
        added_by="delta.feature.geospatial-dev",
    ),
    Feature("icebergCompatV1", 0, 7, requires=("columnMapping",), added_by="delta.enableIcebergCompatV1: true"),
    Feature("icebergCompatV2", 0, 7, requires=("columnMapping",), added_by="delta.enableIcebergCompatV2: true"),
    Feature(
        "icebergCompatV3",
        0,
        7,
        requires=("columnMapping", "rowTracking"),
        added_by="delta.enableIcebergCompatV3: true",
    ),
    Feature(
        "checkpointProtection",
        0,
        7,
        drop="goes only with DROP FEATURE checkpointProtection TRUNCATE HISTORY, which delta-sync never plans",
        # Delta adds it when a reader-writer feature is dropped; the DROP FEATURE is gated itself.
        added_by="DROP FEATURE of a reader-writer feature (a rollback)",
    ),
    Feature(
        "materializePartitionColumns",
        0,
        7,
        drop="removes the feature (Delta's own pre-downgrade step first)",
        added_by="delta.feature.materializePartitionColumns",
    ),
    Feature(
        "catalogManaged",
        3,
        7,
        reader_writer=True,
        requires=("inCommitTimestamp", "vacuumProtocolCheck"),
        drop="removes the feature (Delta's own pre-downgrade step first)",
        added_by="a catalog that manages commits (not open-source Spark's)",
    ),
    Feature(
        "coordinatedCommits-preview",
        0,
        7,
        requires=("inCommitTimestamp", "vacuumProtocolCheck"),
        drop="removes the feature (Delta's own pre-downgrade step first)",
        added_by="delta.coordinatedCommits.commitCoordinator-preview",
    ),
    Feature(
        "adaptiveMetadata-preview",
        3,
        7,
        reader_writer=True,
        requires=("catalogManaged", "domainMetadata", "deletionVectors", "columnMapping", "rowTracking"),
        added_by="delta.feature.adaptiveMetadata-preview",
    ),
)

FEATURES: dict[str, Feature] = {f.name: f for f in _ALL}
_BY_LOWER = {name.lower(): name for name in FEATURES}


def canonical(name: str) -> str:
    """Delta looks feature names up case-insensitively: one spelling each."""
    return _BY_LOWER.get(name.lower(), name)


def decision(name: str) -> Feature | None:
    return FEATURES.get(canonical(name))


def adding(name: str) -> str:
    """What adding `name` to an existing table commits it to, as a plan says it."""
    feature = decision(name)
    if feature is None:
        return f"adds the {name} table feature, which delta-sync does not know: treat it as for good"
    if feature.drop is None:
        return f"adds the {name} table feature for good (open-source Delta cannot drop it)"
    return f"adds the {name} table feature: only DROP FEATURE removes it again ({feature.drop})"
