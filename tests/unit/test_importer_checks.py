"""Imported CHECKs read as people write SQL, not as Delta's stored tokens, and plan nothing."""

from __future__ import annotations

from pathlib import Path

from delta_sync.model.state import Table
from delta_sync.planning.diff import planner
from delta_sync.specs.importer import spec_data, spec_text
from delta_sync.specs.spec_files import load_specs
from tests.unit.builders import col, table

STORED = {
    "known_status": "status IN ( 'new' , 'paid' )",
    "positive": "amount >= '0'::decimal(12, 2)",
    "odd": "concat ( status , 'a ( b' ) != 'x'",
}


def _live(checks: dict[str, str]) -> Table:
    return table("shop.orders", col("status"), col("amount", "decimal(12,2)"), checks=checks)


def test_imported_checks_read_naturally() -> None:
    checks = spec_data(_live({**STORED, "unparsed": "status != 'unterminated"}))["checks"]
    assert checks == {
        "known_status": "status IN ('new', 'paid')",
        "positive": "amount >= CAST('0' AS decimal(12, 2))",
        "odd": "concat(status, 'a ( b') != 'x'",
        # Not ours to re-space: kept as the table has it.
        "unparsed": "status != 'unterminated",
    }


def test_imported_checks_plan_nothing(tmp_path: Path) -> None:
    live = _live(STORED)
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "orders.yaml").write_text(spec_text(live))
    (want,) = load_specs(tmp_path).tables.values()
    assert planner.diff_table(live, want) == []
