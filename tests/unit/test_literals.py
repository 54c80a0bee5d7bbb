"""Values from Spark rows as SQL literals, and sample rows as an aligned table."""

from __future__ import annotations

import datetime
import decimal
from typing import Any

import pytest

from delta_sync.sql.literals import sql_literal, table_lines


class Row(tuple[Any, ...]):
    """What pyspark's Row offers the conversion: a tuple with field names."""

    fields: tuple[str, ...]

    def __new__(cls, **values: Any) -> Row:
        row = super().__new__(cls, values.values())
        row.fields = tuple(values)
        return row

    def asDict(self, recursive: bool = False) -> dict[str, Any]:
        return dict(zip(self.fields, self, strict=True))


@pytest.mark.parametrize(
    ("value", "literal"),
    [
        (None, "NULL"),
        (True, "TRUE"),
        (False, "FALSE"),
        (42, "42"),
        (-7, "-7"),
        (decimal.Decimal("-5.00"), "-5.00"),
        (1.5, "1.5"),
        (2.0, "2.0"),
        (1e300, "1e+300"),
        (float("nan"), "CAST('NaN' AS DOUBLE)"),
        (float("-inf"), "CAST('-Infinity' AS DOUBLE)"),
        ("text", "'text'"),
        ("O'Brien", "'O\\'Brien'"),
        ("a\\b", "'a\\\\b'"),
        ("two\nlines", "'two\\nlines'"),
        (b"\x00\xde\xad", "X'00DEAD'"),
        (bytearray(b"\x01"), "X'01'"),
        (datetime.datetime(2026, 11, 24, 23, 37, 50), "TIMESTAMP '2026-11-24 23:37:50'"),
        (datetime.datetime(2026, 11, 24, 23, 37, 50, 120), "TIMESTAMP '2026-11-24 23:37:50.000120'"),
        (datetime.date(2026, 11, 24), "DATE '2026-11-24'"),
        (datetime.timedelta(days=1, hours=2, minutes=3, seconds=4), "INTERVAL '1 02:03:04' DAY TO SECOND"),
        (-datetime.timedelta(seconds=1, microseconds=500), "INTERVAL '-0 00:00:01.000500' DAY TO SECOND"),
        ([1, None, 3], "ARRAY(1, NULL, 3)"),
        ({"colour": "red", "size": None}, "MAP('colour', 'red', 'size', NULL)"),
        (Row(street="Main St", zip=None), "STRUCT('Main St' AS street, NULL AS zip)"),
        (Row(**{"odd name": 1}), "STRUCT(1 AS `odd name`)"),
        ([Row(a=datetime.date(2026, 1, 2))], "ARRAY(STRUCT(DATE '2026-01-02' AS a))"),
    ],
)
def test_values_are_spelled_as_sql_literals(value: Any, literal: str) -> None:
    assert sql_literal(value) == literal


def test_values_of_other_types_are_string_literals() -> None:
    class Variant:
        def __str__(self) -> str:
            return '{"a":1}'

    assert sql_literal(Variant()) == "'{\"a\":1}'"


def test_sample_rows_are_an_aligned_table_under_their_column_names() -> None:
    rows = [
        (("id", "7"), ("created_at", "TIMESTAMP '2026-11-24 23:37:50'"), ("amount", "NULL")),
        (("id", "1234"), ("created_at", "NULL"), ("amount", "-5.00")),
    ]
    assert table_lines(rows) == [
        "id    created_at                       amount",
        "7     TIMESTAMP '2026-11-24 23:37:50'  NULL",
        "1234  NULL                             -5.00",
    ]
    assert table_lines([]) == []
