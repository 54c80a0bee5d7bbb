"""sqltypes.change_kind: which in-place type changes Delta 4.4 accepts, and whether they need type widening.

The widening rules are Delta's `TypeWidening.isTypeChangeSupported` (Delta 4.x): integral types grow by
size; float -> double; byte/short/int -> double; decimal -> decimal when `isWiderThan`; byte/short/int
-> decimal wider than decimal(10,0); bigint -> decimal wider than decimal(20,0); date -> timestamp_ntz.
"Plain" changes need no feature: the same type, and char/varchar growth (Delta stores both as string).
"""

from __future__ import annotations

import itertools

import pytest

from delta_sync.sql.types import change_kind

INTEGRAL = ("tinyint", "smallint", "int", "bigint")


# --- widening -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("before", "after"),
    [(a, b) for a, b in itertools.combinations(INTEGRAL, 2)],
)
def test_integral_types_widen_to_every_larger_integral_type(before: str, after: str) -> None:
    assert change_kind(before, after) == "widening"


def test_the_integral_widening_pairs_are_exactly_the_six_upward_ones() -> None:
    widening = {(a, b) for a in INTEGRAL for b in INTEGRAL if change_kind(a, b) == "widening"}
    assert widening == {
        ("tinyint", "smallint"),
        ("tinyint", "int"),
        ("tinyint", "bigint"),
        ("smallint", "int"),
        ("smallint", "bigint"),
        ("int", "bigint"),
    }


def test_float_widens_to_double() -> None:
    assert change_kind("float", "double") == "widening"


@pytest.mark.parametrize("before", ["tinyint", "smallint", "int"])
def test_int32_types_widen_to_double(before: str) -> None:
    assert change_kind(before, "double") == "widening"


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("decimal(10,2)", "decimal(12,2)"),  # k1=2, k2=0
        ("decimal(10,2)", "decimal(12,4)"),  # k1=k2=2
        ("decimal(10,2)", "decimal(13,3)"),  # k1=3, k2=1
        ("decimal(10,2)", "decimal(11,3)"),  # k1=k2=1
        ("decimal(1,0)", "decimal(38,0)"),
        ("decimal(1,0)", "decimal(38,37)"),
        ("decimal(5,5)", "decimal(38,38)"),
        ("decimal(18,2)", "decimal(38,2)"),
    ],
)
def test_decimal_widens_when_precision_grows_at_least_as_much_as_scale(before: str, after: str) -> None:
    assert change_kind(before, after) == "widening"


def _delta_is_wider(before: tuple[int, int], after: tuple[int, int]) -> bool:
    """Spark's DecimalType.isWiderThan: as many integral digits and as many fraction digits."""
    (p1, s1), (p2, s2) = before, after
    return p2 - s2 >= p1 - s1 and s2 >= s1


def test_decimal_to_decimal_over_a_grid_matches_delta() -> None:
    shapes = [(p, s) for p in range(1, 13) for s in range(0, p + 1)]
    for before, after in itertools.product(shapes, shapes):
        source, target = f"decimal({before[0]},{before[1]})", f"decimal({after[0]},{after[1]})"
        if before == after:
            expected: str | None = "plain"
        elif _delta_is_wider(before, after):
            expected = "widening"
        else:
            expected = None
        assert change_kind(source, target) == expected, (source, target)


@pytest.mark.parametrize("before", ["tinyint", "smallint", "int"])
@pytest.mark.parametrize("after", ["decimal(10,0)", "decimal(12,2)", "decimal(38,28)", "decimal(38,0)"])
def test_int32_types_widen_to_decimals_with_ten_integral_digits(before: str, after: str) -> None:
    assert change_kind(before, after) == "widening"


@pytest.mark.parametrize("before", ["tinyint", "smallint", "int"])
@pytest.mark.parametrize("after", ["decimal(9,0)", "decimal(11,2)", "decimal(3,0)", "decimal(38,29)"])
def test_int32_types_do_not_widen_to_decimals_with_fewer_than_ten_integral_digits(before: str, after: str) -> None:
    # Delta asks for decimal(10,0) or wider even for tinyint (all are INT32 in Parquet).
    assert change_kind(before, after) is None


@pytest.mark.parametrize("after", ["decimal(20,0)", "decimal(22,2)", "decimal(38,18)", "decimal(38,0)"])
def test_bigint_widens_to_decimals_with_twenty_integral_digits(after: str) -> None:
    assert change_kind("bigint", after) == "widening"


@pytest.mark.parametrize("after", ["decimal(19,0)", "decimal(20,1)", "decimal(21,2)", "decimal(38,19)"])
def test_bigint_does_not_widen_to_decimals_with_fewer_than_twenty_integral_digits(after: str) -> None:
    assert change_kind("bigint", after) is None


def test_date_widens_to_timestamp_ntz() -> None:
    assert change_kind("date", "timestamp_ntz") == "widening"


# --- plain --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "same",
    [
        "int",
        "bigint",
        "string",
        "date",
        "timestamp",
        "decimal(18,2)",
        "char(3)",
        "varchar(10)",
        "array<int>",
        "map<string,bigint>",
        "struct<a:int,b:string NOT NULL>",
    ],
)
def test_the_same_type_is_a_plain_change(same: str) -> None:
    assert change_kind(same, same) == "plain"


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("char(5)", "string"),
        ("varchar(5)", "string"),
        ("char(5)", "varchar(5)"),
        ("char(5)", "varchar(8)"),
        ("varchar(5)", "varchar(10)"),
        ("varchar(1)", "varchar(65535)"),
    ],
)
def test_char_and_varchar_grow_without_type_widening(before: str, after: str) -> None:
    assert change_kind(before, after) == "plain"


# --- refused ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("before", "after"),
    [(b, a) for a, b in itertools.combinations(INTEGRAL, 2)],
)
def test_integral_narrowing_is_refused(before: str, after: str) -> None:
    assert change_kind(before, after) is None


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("double", "float"),
        ("double", "int"),
        ("bigint", "double"),  # Delta widens only INT32 types to double
        ("bigint", "float"),
        ("int", "float"),
        ("float", "decimal(38,10)"),
        ("double", "decimal(38,10)"),
        ("decimal(10,2)", "double"),
        ("decimal(10,0)", "bigint"),
        ("int", "string"),
        ("bigint", "string"),
        ("string", "int"),
        ("string", "binary"),
        ("binary", "string"),
        ("boolean", "int"),
        ("decimal(10,2)", "decimal(10,3)"),  # scale grows, precision does not
        ("decimal(10,2)", "decimal(10,1)"),
        ("decimal(12,2)", "decimal(10,2)"),
        ("decimal(10,2)", "decimal(11,0)"),  # integral digits grow, scale shrinks
        ("bigint", "decimal(20,1)"),
        ("date", "timestamp"),
        ("timestamp", "date"),
        ("timestamp", "timestamp_ntz"),
        ("timestamp_ntz", "timestamp"),
        ("date", "string"),
        ("string", "char(5)"),
        ("string", "varchar(5)"),
        ("varchar(10)", "varchar(5)"),
        ("varchar(10)", "char(10)"),
        ("char(5)", "int"),
    ],
)
def test_refused_changes(before: str, after: str) -> None:
    assert change_kind(before, after) is None
