"""Python values as Spark reads them from rows -> the SQL literals that spell them, for people to read.

Pure. A sample row of a data check shows `TIMESTAMP '2026-11-24 23:37:50'` and `'O\\'Brien'`, which a
user can paste into `delta-sync sql "UPDATE ... WHERE ..."`, instead of `datetime.datetime(2026, 11, ...)`.
"""

from __future__ import annotations

import datetime
import decimal
import math
from collections.abc import Mapping, Sequence
from typing import Any


def sql_literal(value: Any) -> str:
    """`value` (None, bool, int, float, Decimal, str, bytes, date, datetime, timedelta, list, dict, Row)
    as a Spark SQL literal; anything else as a string literal of its str()."""
    match value:
        case None:
            return "NULL"
        case bool():
            return "TRUE" if value else "FALSE"
        case int() | decimal.Decimal():
            return str(value)
        case float():
            return _float(value)
        case str():
            return _string(value)
        case bytes() | bytearray():
            return f"X'{bytes(value).hex().upper()}'"
        case datetime.datetime():  # before date: a datetime is a date too
            return f"TIMESTAMP '{_timestamp(value)}'"
        case datetime.date():
            return f"DATE '{value.isoformat()}'"
        case datetime.timedelta():
            return _interval(value)
        case Mapping():
            return f"MAP({', '.join(f'{sql_literal(k)}, {sql_literal(v)}' for k, v in value.items())})"
        case _ if callable(getattr(value, "asDict", None)):  # a pyspark Row: a struct with field names
            fields = value.asDict(recursive=False).items()
            return f"STRUCT({', '.join(f'{sql_literal(v)} AS {_name(k)}' for k, v in fields)})"
        case list() | tuple():
            return f"ARRAY({', '.join(sql_literal(v) for v in value)})"
        case _:
            return _string(str(value))


def _string(text: str) -> str:
    # Spark's parser reads backslash escapes in string literals (spark.sql.parser.escapedStringLiterals off).
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n").replace("\r", "\\r") + "'"


def _float(value: float) -> str:
    if math.isnan(value):
        return "CAST('NaN' AS DOUBLE)"
    if math.isinf(value):
        return f"CAST('{'-' if value < 0 else ''}Infinity' AS DOUBLE)"
    text = repr(value)
    return text if "e" in text or "." in text else f"{text}.0"


def _timestamp(value: datetime.datetime) -> str:
    return value.isoformat(sep=" ", timespec="microseconds" if value.microsecond else "seconds")


def _interval(value: datetime.timedelta) -> str:
    sign = "-" if value < datetime.timedelta(0) else ""
    total = abs(value)
    hours, rest = divmod(total.seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    fraction = f".{total.microseconds:06d}" if total.microseconds else ""
    return f"INTERVAL '{sign}{total.days} {hours:02d}:{minutes:02d}:{seconds:02d}{fraction}' DAY TO SECOND"


def _name(name: str) -> str:
    return name if name.isidentifier() and name.isascii() else "`" + name.replace("`", "``") + "`"


def table_lines(rows: Sequence[Sequence[tuple[str, str]]]) -> list[str]:
    """Rows of (column, literal) pairs, all with the same columns, as aligned lines under a header."""
    if not rows:
        return []
    header = [column for column, _ in rows[0]]
    cells = [header, *([text for _, text in row] for row in rows)]
    widths = [max(len(line[i]) for line in cells) for i in range(len(header))]
    return ["  ".join(text.ljust(width) for text, width in zip(line, widths, strict=True)).rstrip() for line in cells]
