"""Which engine versions read and write Delta tables that have a given protocol feature.

Pure data and a few lookups, no imports beyond the standard library. delta-sync uses it to warn
before a plan switches a feature on: "after this plan, trino 440 can no longer read table X
(feature deletionVectors; trino reads it since 427)".

Each `Row` answers, for one engine and one Delta protocol feature (names as in Delta's
PROTOCOL.md "Valid Feature Names in Table Features", e.g. `deletionVectors`):

- `read`: the first version of the engine that reads tables that have the feature;
- `write`: the first version that appends to / merges into such tables.

A version is a tuple of ints in the engine's own numbering (`Engine.title` says which number:
Delta release, DBR release, `deltalake` PyPI version, DuckDB release, Trino release, ...).
`EVERY` means every version of the engine that handles Delta tables at all (a writer-only
feature is invisible to readers, so readers get `EVERY`). `None` means no known version does:
either the engine refuses the feature, or no source establishes support (the row's note says
which). Where the first version could not be pinned down the later, safer version is recorded
and the note says so; an early warning is cheaper than a broken consumer.

Two pseudo-features cover the table-features protocol itself: `READER_V3` (a reader that accepts
`minReaderVersion` 3 with a `readerFeatures` list) and `WRITER_V7` (a writer that accepts
`minWriterVersion` 7 with a `writerFeatures` list). Legacy features (appendOnly and invariants:
writer 2; checkConstraints: 3; changeDataFeed and generatedColumns: 4; columnMapping: reader 2 /
writer 5; identityColumns: 6) are supported by supporting that protocol version, so their `write`
is the version that accepts that writer version (and honours the feature). For columnMapping
`read` means reading it under reader version 2 (what delta-sync produces when it enables column
mapping on a reader-1 table); reading it as a reader-3 feature also needs `READER_V3`, and where
an engine differs between the two forms the note says so.

The matrix itself (its engines and rows, with their sources) is in support_matrix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

Version = tuple[int, ...]
EVERY: Version = (0,)  # every version of the engine handles it


@dataclass(frozen=True, slots=True)
class Engine:
    name: str  # as users write it in the project file: "delta-rs"
    title: str  # one line, says what its version numbers are
    versioned: bool  # False for engines the user names without a version
    source: str  # URL where its Delta feature support is documented


@dataclass(frozen=True, slots=True)
class Row:
    engine: str
    feature: str  # a Delta protocol feature name, or READER_V3 / WRITER_V7
    read: Version | None  # first version that reads tables with it; EVERY; None = no version does
    write: Version | None  # first version that writes tables with it; same meaning
    source: str  # URL backing this row
    note: str = ""  # why, caveats


READER_V3 = "readerVersion3"
WRITER_V7 = "writerVersion7"

FEATURES: tuple[str, ...] = (
    "appendOnly",
    "invariants",
    "checkConstraints",
    "changeDataFeed",
    "generatedColumns",
    "columnMapping",
    "identityColumns",
    "deletionVectors",
    "timestampNtz",
    "typeWidening",
    "v2Checkpoint",
    "domainMetadata",
    "clustering",
    "rowTracking",
    "allowColumnDefaults",
    "inCommitTimestamp",
    "variantType",
    "icebergCompatV1",
    "icebergCompatV2",
    "vacuumProtocolCheck",
    "checkpointProtection",
    READER_V3,
    WRITER_V7,
)

# PROTOCOL.md marks these "Readers and writers" (typeWidening and variantType in their own
# sections: the feature "must exist in the table protocol's readerFeatures and writerFeatures").
READER_WRITER: frozenset[str] = frozenset(
    {
        "columnMapping",
        "deletionVectors",
        "timestampNtz",
        "typeWidening",
        "v2Checkpoint",
        "variantType",
        "vacuumProtocolCheck",
        READER_V3,
    }
)

_VERSION = re.compile(r"v?(\d+(?:\.\d+)*)(?:\s+LTS)?", re.IGNORECASE | re.ASCII)


def parse_version(text: str) -> Version | None:
    """Parse a version: "0.17" -> (0, 17), "13.3 LTS" -> (13, 3), "440" -> (440,); anything else -> None."""
    match = _VERSION.fullmatch(text.strip())
    return tuple(int(part) for part in match.group(1).split(".")) if match else None


def version_text(version: Version) -> str:
    """The text of a version: (0, 17) -> "0.17"."""
    return ".".join(str(part) for part in version)
