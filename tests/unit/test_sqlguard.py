"""Which `delta-sync sql` statements are confirmed first."""

from __future__ import annotations

import pytest

from delta_sync.sqlguard import destructive


@pytest.mark.parametrize(
    "statement",
    [
        "DROP TABLE shop.orders",
        "drop schema shop cascade",
        "  -- a comment\n  DROP VIEW v",
        "TRUNCATE TABLE shop.orders",
        "DELETE FROM shop.orders",
        "delete from t where_clause_is_a_name",
        "DELETE FROM t -- WHERE id = 1",
        "DELETE FROM t /* WHERE id = 1 */",
        "UPDATE t SET note = 'WHERE x'",
        "UPDATE t SET a = (SELECT max(b) FROM u WHERE u.k = 1)",
        "CREATE OR REPLACE TABLE t (a INT) USING DELTA",
        "REPLACE TABLE t (a INT) USING DELTA",
        "INSERT OVERWRITE t SELECT * FROM u",
        "RESTORE TABLE t TO VERSION AS OF 3",
        "ALTER TABLE t DROP COLUMN c",
        "ALTER TABLE t DROP CONSTRAINT positive",
    ],
)
def test_destructive(statement: str) -> None:
    assert destructive(statement) is not None


@pytest.mark.parametrize(
    "statement",
    [
        "SELECT * FROM shop.orders",
        "SELECT 'DROP TABLE x'",
        "DELETE FROM t WHERE id = 1",
        "UPDATE t SET a = 1 WHERE b IS NULL",
        "INSERT INTO t VALUES (1)",
        "ALTER TABLE t ADD COLUMNS (`drop` INT)",
        "DESCRIBE HISTORY t",
        "CREATE TABLE t (a INT) USING DELTA",
        "",
    ],
)
def test_not_destructive(statement: str) -> None:
    assert destructive(statement) is None
