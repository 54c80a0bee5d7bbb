from __future__ import annotations

import pytest

from delta_sync.sql.expressions import ExpressionError, as_delta_reparses, for_delta, normalize, readable, tokens

# --- normalize: the spec's spelling vs what Delta stores after ALTER TABLE ADD CONSTRAINT ---------


@pytest.mark.parametrize(
    ("written", "stored"),
    [
        # Read back from Delta 4.4 today.
        ("concat(a, 'x') != 'yx' AND id>=0", "concat ( a , 'x' ) != 'yx' AND id >= 0"),
        ("nested.arr[0] < id", "nested . arr [ 0 ] < id"),
        ("total_amount >= 0", "total_amount >= 0"),
        ("status IN ('new', 'paid')", "status IN ( 'new' , 'paid' )"),
        ("email LIKE '%@%'", "email LIKE '%@%'"),
        (
            "country_code IS NULL OR country_code = upper(country_code)",
            "country_code IS NULL OR country_code = upper ( country_code )",
        ),
        ("x >= -1", "x >= - 1"),
        ("m['k'] IS NOT NULL", "m [ 'k' ] IS NOT NULL"),
        ("a<=>b", "a <=> b"),
        ("a||b = 'ab'", "a || b = 'ab'"),
        ("CAST(a AS BIGINT) > 0", "cast ( a as bigint ) > 0"),
        ("  a>0\n AND\tb<1  ", "a > 0 AND b < 1"),
    ],
)
def test_normalize_equates_delta_retokenised_form(written: str, stored: str) -> None:
    assert normalize(written) == normalize(stored)


def test_normalize_exact_key() -> None:
    assert normalize("concat(a, 'x') != 'yx' AND id>=0") == "concat ( a , 'x' ) != 'yx' and id >= 0"
    assert normalize("nested.arr[0] < id") == "nested . arr [ 0 ] < id"


def test_case_folded_outside_literals_only() -> None:
    assert normalize("UPPER(Name) = 'AbC'") == "upper ( name ) = 'AbC'"
    assert normalize('Name = "AbC"') == 'name = "AbC"'
    assert normalize("`Odd Col` > 0") == "`odd col` > 0"


def test_literal_case_difference_is_a_real_difference() -> None:
    assert normalize("a = 'AbC'") != normalize("a = 'abc'")


def test_spacing_inside_literals_is_kept() -> None:
    assert normalize("a = 'x  y'") == "a = 'x  y'"
    assert normalize("a = 'x  y'") != normalize("a = 'x y'")


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("a > 1.5", ["a", ">", "1.5"]),
        ("a > 1e3", ["a", ">", "1e3"]),
        ("a > 1E-3", ["a", ">", "1e-3"]),
        ("a > 2.5e+10", ["a", ">", "2.5e+10"]),
        ("a > 10L", ["a", ">", "10l"]),
        ("a > 1.5BD", ["a", ">", "1.5bd"]),
        ("a > .5", ["a", ">", ".5"]),
        ("a > - 1", ["a", ">", "-", "1"]),
        ("a>-1", ["a", ">", "-", "1"]),
        ("a-1 > 0", ["a", "-", "1", ">", "0"]),
        ("arr[10]", ["arr", "[", "10", "]"]),
    ],
)
def test_numbers_are_single_tokens(expression: str, expected: list[str]) -> None:
    assert tokens(expression) == expected


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("a != b", ["a", "!=", "b"]),
        ("a <> b", ["a", "<>", "b"]),
        ("a == b", ["a", "==", "b"]),
        ("a <= b", ["a", "<=", "b"]),
        ("a => b", ["a", "=>", "b"]),
        ("a::int", ["a", "::", "int"]),
        ("x -> x + 1", ["x", "->", "x", "+", "1"]),
        ("a % 2 = 0", ["a", "%", "2", "=", "0"]),
        ("NOT a", ["not", "a"]),
        ("!a", ["!", "a"]),
    ],
)
def test_operators(expression: str, expected: list[str]) -> None:
    assert tokens(expression) == expected


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("a = 'it\\'s'", ["a", "=", "'it\\'s'"]),
        ('a = "say \\"hi\\""', ["a", "=", '"say \\"hi\\""']),
        ("a = 'x;y'", ["a", "=", "'x;y'"]),
        ("a = '-- not a comment'", ["a", "=", "'-- not a comment'"]),
        ("a = '/* nor this */'", ["a", "=", "'/* nor this */'"]),
        ("a = 'SELECT 1'", ["a", "=", "'SELECT 1'"]),
        ("a = '(('", ["a", "=", "'(('"]),
        ("`se;lect` > 0", ["`se;lect`", ">", "0"]),
        ("`a``b` > 0", ["`a``b`", ">", "0"]),
        ("`select` > 0", ["`select`", ">", "0"]),
        ("selected > 0", ["selected", ">", "0"]),
    ],
)
def test_literals_and_quoted_identifiers_are_opaque(expression: str, expected: list[str]) -> None:
    assert tokens(expression) == expected


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("a > 0; DROP TABLE t", "';' is not allowed"),
        ("a > 0;", "';' is not allowed"),
        ("(a > 0", "unbalanced parentheses"),
        ("a > 0)", "unbalanced parentheses"),
        (")a > 0(", "unbalanced parentheses"),
        ("a = 'abc", "unterminated quote '"),
        ('a = "abc', 'unterminated quote "'),
        ("`abc > 0", "unterminated quote `"),
        ("a IN (select 1)", "subqueries are not allowed"),
        ("EXISTS (SELECT 1)", "subqueries are not allowed"),
        ("", "empty expression"),
        ("   \n\t", "empty expression"),
        ("a > ${x}", "unexpected character '$'"),
        ("a @ b", "unexpected character '@'"),
    ],
)
def test_rejections(expression: str, message: str) -> None:
    with pytest.raises(ExpressionError) as info:
        tokens(expression)
    assert message in str(info.value)
    with pytest.raises(ExpressionError):
        normalize(expression)


@pytest.mark.parametrize("expression", ["a > 0 -- note", "(a > 0 --)", "a /* x */ > 0", "a > 0 /*", "a--1 > 0"])
def test_sql_comments_are_rejected(expression: str) -> None:
    with pytest.raises(ExpressionError, match="SQL comments are not allowed"):
        tokens(expression)


def test_expression_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="empty"):
        normalize("")


# --- readable: how import writes a CHECK Delta stored as its tokens joined by spaces ------------


@pytest.mark.parametrize(
    ("stored", "readable_form"),
    [
        ("status IN ( 'new' , 'paid' )", "status IN ('new', 'paid')"),
        ("concat ( a , 'x y' ) != 'it' 's'", "concat(a, 'x y') != 'it' 's'"),
        ("note != 'a ( b , c )'", "note != 'a ( b , c )'"),
        ('name != "say \\"hi\\" , ok"', 'name != "say \\"hi\\" , ok"'),
        ("NOT ( ( a > 1 ) OR ( b < 2 ) )", "NOT ((a > 1) OR (b < 2))"),
        ("`order id` . `x y` >= 0", "`order id`.`x y` >= 0"),
        ("nested . arr [ 0 ] < id", "nested.arr[0] < id"),
        ("db . f ( a , b ) = 1", "db.f(a, b) = 1"),
        ("x = - 1 OR y IN ( - 2 , + 3 )", "x = -1 OR y IN (-2, +3)"),
        ("a - 1 > ( b ) - 2", "a - 1 > (b) - 2"),
        ("CASE WHEN a > 0 THEN 'ok' ELSE 'no' END = 'ok'", "CASE WHEN a > 0 THEN 'ok' ELSE 'no' END = 'ok'"),
        ("amount >= CAST ( '0' AS DECIMAL ( 12 , 2 ) )", "amount >= CAST('0' AS DECIMAL(12, 2))"),
        ("d BETWEEN DATE '2020-01-01' AND current_date ( )", "d BETWEEN DATE '2020-01-01' AND current_date()"),
        # Run together, `-` `-` would read as a comment: every space is kept.
        ("- - 1 < x", "- - 1 < x"),
    ],
)
def test_readable_spacing(stored: str, readable_form: str) -> None:
    assert readable(stored) == readable_form
    assert normalize(readable_form) == normalize(stored)


def test_readable_keeps_case_and_literals() -> None:
    assert readable("Status IN ( 'New' , 'PAID' )") == "Status IN ('New', 'PAID')"


# --- casts written `x::t` by other engines (delta-rs): Delta's ADD CONSTRAINT cannot parse them ---


@pytest.mark.parametrize(
    ("written", "for_delta_form"),
    [
        ("amount >= '0'::decimal(12, 2)", "amount >= CAST('0' AS decimal(12, 2))"),
        ("a::int::string = 'x'", "CAST(CAST(a AS int) AS string) = 'x'"),
        ("f(a)::bigint > 0", "CAST(f(a) AS bigint) > 0"),
        ("s.a[0]::int > -1", "CAST(s.a[0] AS int) > -1"),
        ("(a + b)::double < 1.5", "CAST((a + b) AS double) < 1.5"),
        ("`x y`::int IS NOT NULL", "CAST(`x y` AS int) IS NOT NULL"),
    ],
)
def test_casts_are_spelled_out_for_delta(written: str, for_delta_form: str) -> None:
    assert for_delta(written) == for_delta_form
    assert normalize(written) == normalize(for_delta_form)
    assert readable(written) == for_delta_form


def test_both_cast_spellings_compare_equal() -> None:
    assert normalize("amount >= '0'::decimal(12, 2)") == normalize("amount >= CAST ( '0' AS DECIMAL ( 12 , 2 ) )")


def test_for_delta_leaves_an_expression_without_casts_as_written() -> None:
    assert for_delta("status IN ( 'new' , 'paid' )") == "status IN ( 'new' , 'paid' )"


def test_a_cast_with_nothing_to_cast_is_an_error() -> None:
    with pytest.raises(ExpressionError, match="::"):
        for_delta("::int > 0")


def test_delta_reparses_a_double_colon_as_two_colons() -> None:
    assert as_delta_reparses("a::int > 0") == "a : : int > 0"


def test_a_nested_type_after_a_cast_ends_at_its_closing_bracket() -> None:
    assert for_delta("x::array<int> IS NOT NULL") == "CAST(x AS array < int >) IS NOT NULL"
