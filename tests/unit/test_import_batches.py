"""import reads tables in batches (one schema listing per batch) and skips a bad table with its reason."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from delta_sync.model.errors import CatalogError
from delta_sync.model.state import CatalogState, Column, SchemaName, Table, TableName
from delta_sync.review import readonly

NAMES = [TableName(None, "s", f"t{i:02d}") for i in range(60)]
BAD = NAMES[31]


class BatchCatalog:
    def __init__(self) -> None:
        self.reads: list[int] = []

    def read(self, names: Iterable[TableName]) -> CatalogState:
        wanted = list(names)
        self.reads.append(len(wanted))
        if BAD in wanted:
            raise CatalogError(f"{BAD} exists but is a parquet table, not Delta")
        tables = {n: Table(n, (Column("id", "bigint"),)) for n in wanted if n != NAMES[7]}
        return CatalogState(tables, frozenset({SchemaName(None, "s")}))


def test_import_reads_in_batches_and_skips_what_it_cannot_read(tmp_path: Path) -> None:
    catalog = BatchCatalog()
    progress: list[TableName] = []
    written, skipped = readonly.import_specs(catalog, NAMES, tmp_path, on_table=progress.append)  # type: ignore[arg-type]
    assert progress == NAMES  # the bar moves for every table, skipped ones included
    assert len(written) == 58
    assert skipped == [f"{NAMES[7]}: no such table", f"{BAD}: {BAD} exists but is a parquet table, not Delta"]
    # Batches of 25; the batch holding the bad table is re-read one table at a time.
    assert catalog.reads == [25, 25, *[1] * 25, 10]
    assert (tmp_path / "s" / "t00.yaml").is_file()
    assert not (tmp_path / "s" / f"{BAD.name}.yaml").exists()
