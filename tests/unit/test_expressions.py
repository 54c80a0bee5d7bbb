from __future__ import annotations

import pytest

from delta_sync.expressions import ExpressionError, normalize, tokens

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
