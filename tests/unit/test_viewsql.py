"""viewsql: a view's query scanned offline, normalised for comparison, searched for the tables it reads."""

from __future__ import annotations

import pytest

from delta_sync.model.state import TableName
from delta_sync.sql import queries as viewsql
from delta_sync.sql.queries import QueryError, Token, normalize, problem, read_tables, references, rewrite, scan


def n(text: str) -> TableName:
    return TableName.parse(text)


def refs(sql: str) -> list[tuple[str, str]]:
    """Each reference as (the name it reads, the text it spans in the query)."""
    return [(str(r.name), sql[r.start : r.end]) for r in references(sql)]


# --- scan -------------------------------------------------------------------------------------------


def test_scan_drops_whitespace_and_comments_and_keeps_positions() -> None:
    sql = "SELECT a>=1 -- note\n, 'x y' /* c */ FROM `S`.t"

    tokens = scan(sql)

    assert [(t.kind, t.text) for t in tokens] == [
        ("word", "SELECT"),
        ("word", "a"),
        ("op", ">="),
        ("number", "1"),
        ("op", ","),
        ("string", "'x y'"),
        ("word", "FROM"),
        ("quoted", "`S`"),
        ("op", "."),
        ("word", "t"),
    ]
    assert all(sql[t.start : t.end] == t.text for t in tokens)


def test_token_word_lowercases_names_and_unquotes_backquotes() -> None:
    assert Token("word", "SeLeCt", 0, 6).word == "select"
    assert Token("quoted", "`My``Col`", 0, 9).word == "my`col"
    assert Token("string", "'KeEp'", 0, 6).word == "'KeEp'"
    assert Token("number", "1L", 0, 2).word == "1l"


@pytest.mark.parametrize(
    ("sql", "near"),
    [
        ("SELECT 'abc", "'abc"),
        ('SELECT "abc', '"abc'),
        ("SELECT `abc", "`abc"),
        ("SELECT 1 /* open", "/* open"),
    ],
)
def test_scan_refuses_an_unterminated_quote_or_comment(sql: str, near: str) -> None:
    with pytest.raises(QueryError) as info:
        scan(sql)
    assert str(info.value) == f"unterminated quote or comment near {near!r}"


def test_a_line_comment_at_the_end_needs_no_newline() -> None:
    assert [t.text for t in scan("SELECT 1 -- the end")] == ["SELECT", "1"]


# --- problem ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 1",
        "select id from s.t",
        "WITH c AS (SELECT 1 AS x) SELECT x FROM c",
        "VALUES (1), (2)",
        "(SELECT 1)",
        "FROM s.t SELECT *",
        "TABLE s.t",
        "-- leading comment\nSELECT 1",
        "SELECT 'a;b' AS s",  # a `;` inside a string is text
        "SELECT 1 -- ;",  # and inside a comment too
        "SELECT 1 /* ( */",
    ],
)
def test_problem_accepts_one_query(sql: str) -> None:
    assert problem(sql) is None


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("", "the query is empty"),
        ("   -- only a comment\n  /* and another */", "the query is empty"),
        ("SELECT 1;", "';' is not allowed: a view's sql is one query, not statements"),
        ("SELECT 1; SELECT 2", "';' is not allowed: a view's sql is one query, not statements"),
        ("DROP TABLE s.t", "a view's sql is one query (SELECT, WITH, VALUES, ...), not `DROP`"),
        ("INSERT INTO s.t VALUES (1)", "a view's sql is one query (SELECT, WITH, VALUES, ...), not `INSERT`"),
        ("CREATE VIEW s.v AS SELECT 1", "a view's sql is one query (SELECT, WITH, VALUES, ...), not `CREATE`"),
        ("SELECT (1", "unbalanced parentheses"),
        ("SELECT 1)", "unbalanced parentheses"),
        ("SELECT 1) + (2", "unbalanced parentheses"),
        ("SELECT 'oops", 'unterminated quote or comment near "\'oops"'),
        ("SELECT 1 /* open", "unterminated quote or comment near '/* open'"),
    ],
)
def test_problem_says_what_is_wrong(sql: str, expected: str) -> None:
    assert problem(sql) == expected


# --- normalize --------------------------------------------------------------------------------------


def test_normalize_ignores_whitespace_comments_and_the_case_of_keywords_and_names() -> None:
    written = "SELECT  Id,\n\tAmount -- the total\nFROM Shop.Orders /* all of them */ WHERE Status = 'Open'"
    stored = "select id, amount from shop.orders where status = 'Open'"

    assert normalize(written) == normalize(stored)
    assert normalize(written) == "select id , amount from shop . orders where status = 'Open'"


def test_normalize_keeps_string_literals_as_written() -> None:
    assert normalize("SELECT 'Open'") != normalize("SELECT 'open'")
    assert normalize('SELECT "Q" FROM s.t') == 'select "Q" from s . t'


def test_normalize_lowercases_backquoted_names_and_keeps_their_quotes() -> None:
    assert normalize("SELECT `Odd Name` FROM `S`.`T`") == "select `odd name` from `s` . `t`"


def test_normalize_spaces_operators_the_same_whichever_way_they_are_written() -> None:
    assert normalize("SELECT a>=1.5e3") == normalize("SELECT a >= 1.5E3") == "select a >= 1.5e3"


def test_normalize_tells_different_queries_apart() -> None:
    assert normalize("SELECT id FROM s.t") != normalize("SELECT id FROM s.u")
    assert normalize("SELECT a, b FROM s.t") != normalize("SELECT a b FROM s.t")


def test_normalize_compares_text_it_cannot_scan_by_its_words() -> None:
    # A view another engine stored, in syntax this scanner does not read: compared, never a traceback.
    assert normalize("SELECT  'x\n  FROM t") == "SELECT 'x FROM t"


# --- references -------------------------------------------------------------------------------------


def test_references_skip_names_in_comments_and_string_literals() -> None:
    sql = (
        "SELECT * FROM s.a -- FROM s.commented\n"
        "JOIN s.c ON a.id = c.id /* JOIN s.block */ WHERE x = 'FROM s.literal' AND y = \"JOIN s.dq\""
    )

    assert refs(sql) == [("s.a", "s.a"), ("s.c", "s.c")]


def test_references_of_backquoted_names_span_the_quotes() -> None:
    sql = "SELECT * FROM `Sales`.`Orders` o"

    assert refs(sql) == [("sales.orders", "`Sales`.`Orders`")]


def test_a_name_with_characters_a_table_name_cannot_have_is_not_a_reference() -> None:
    assert refs("SELECT * FROM s.`odd name`, `s.t`") == []


def test_cte_names_are_not_references_but_the_tables_they_read_are() -> None:
    sql = "WITH recent AS (SELECT * FROM s.orders WHERE d > 0) SELECT * FROM recent JOIN s.customers c ON 1 = 1"

    assert refs(sql) == [("s.orders", "s.orders"), ("s.customers", "s.customers")]


def test_subqueries_in_from_where_and_select_lists_are_searched() -> None:
    sql = (
        "SELECT (SELECT max(x) FROM s.m) AS top FROM (SELECT id FROM s.inner) x, s.outer "
        "WHERE id IN (SELECT id FROM s.filter)"
    )

    assert refs(sql) == [("s.m", "s.m"), ("s.inner", "s.inner"), ("s.outer", "s.outer"), ("s.filter", "s.filter")]


def test_a_join_condition_does_not_end_the_from_list() -> None:
    sql = "SELECT * FROM s.t t1 LEFT OUTER JOIN s.u t2 ON coalesce(t1.id, 0) = t2.id, s.w JOIN s.x USING (id), s.y"

    assert refs(sql) == [("s.t", "s.t"), ("s.u", "s.u"), ("s.w", "s.w"), ("s.x", "s.x"), ("s.y", "s.y")]


def test_commas_after_the_from_list_ends_are_not_tables() -> None:
    assert refs("SELECT a, b FROM s.t WHERE a = 1 GROUP BY a, b ORDER BY a, b") == [("s.t", "s.t")]
    assert refs("SELECT * FROM s.t UNION ALL SELECT * FROM s.u") == [("s.t", "s.t"), ("s.u", "s.u")]


def test_table_valued_functions_and_column_alias_lists_are_not_tables() -> None:
    assert refs("SELECT * FROM range(3) r, s.t") == [("s.t", "s.t")]
    assert refs("SELECT * FROM s.fn(3), s.t AS x(a, b), s.u") == [("s.t", "s.t"), ("s.u", "s.u")]
    assert refs("SELECT * FROM VALUES (1), (2) AS v(a)") == []


def test_unqualified_and_four_part_names_are_not_references() -> None:
    assert refs("SELECT * FROM orders, a.b.c.d, s.t") == [("s.t", "s.t")]


def test_three_part_names_keep_their_catalog_but_spark_catalog_is_the_session_one() -> None:
    sql = "SELECT * FROM spark_catalog.s.t JOIN Main.S.U USING (id)"

    assert refs(sql) == [("s.t", "spark_catalog.s.t"), ("main.s.u", "Main.S.U")]
    assert read_tables(sql) == {TableName(None, "s", "t"), TableName("main", "s", "u")}


def test_a_name_written_with_spaces_around_the_dot_spans_them() -> None:
    assert refs("SELECT * FROM s . t") == [("s.t", "s . t")]


def test_a_table_read_twice_is_referenced_twice_and_read_once() -> None:
    sql = "SELECT * FROM s.t a JOIN `S`.T b ON a.id = b.id"

    assert refs(sql) == [("s.t", "s.t"), ("s.t", "`S`.T")]
    assert read_tables(sql) == {n("s.t")}


def test_from_first_queries_and_lateral_subqueries() -> None:
    assert refs("FROM s.t SELECT *") == [("s.t", "s.t")]
    assert refs("SELECT * FROM s.t, LATERAL (SELECT 1 FROM s.l), s.u") == [
        ("s.t", "s.t"),
        ("s.l", "s.l"),
        ("s.u", "s.u"),
    ]


def test_a_parenthesised_join_reads_both_tables() -> None:
    assert read_tables("SELECT * FROM (s.a JOIN s.b ON a.id = b.id)") == {n("s.a"), n("s.b")}


def test_a_table_after_a_sampled_table_is_read() -> None:
    assert read_tables("SELECT * FROM s.t TABLESAMPLE (10 PERCENT), s.u") == {n("s.t"), n("s.u")}


def test_a_table_query_reads_its_table() -> None:
    assert problem("TABLE s.t") is None
    assert read_tables("TABLE s.t") == {n("s.t")}


# --- rewrite ----------------------------------------------------------------------------------------


def test_rewrite_replaces_every_spelling_of_a_name_and_nothing_else() -> None:
    sql = "SELECT * FROM `S`.`T` x JOIN spark_catalog.s.t y ON x.s = 's.t', s.u -- s.t"

    out = rewrite(sql, {n("s.t"): "`stand_in`"})

    assert out == "SELECT * FROM `stand_in` x JOIN `stand_in` y ON x.s = 's.t', s.u -- s.t"


def test_rewrite_of_several_names_keeps_the_text_between_them() -> None:
    sql = "SELECT * FROM s.a JOIN s.bb ON 1 = 1, s.c"

    assert rewrite(sql, {n("s.a"): "x_longer_name", n("s.c"): "z"}) == (
        "SELECT * FROM x_longer_name AS `a` JOIN s.bb ON 1 = 1, z AS `c`"
    )


def test_rewrite_without_a_matching_name_returns_the_query_unchanged() -> None:
    sql = "SELECT * FROM s.a  -- keep\nWHERE 1 = 1"

    assert rewrite(sql, {n("s.zzz"): "x"}) == sql
    assert rewrite(sql, {}) == sql


# --- one_line ---------------------------------------------------------------------------------------


def test_one_line_collapses_whitespace_and_cuts_at_the_width() -> None:
    assert viewsql.one_line("SELECT  a\n\t FROM s.t\n") == "SELECT a FROM s.t"
    assert viewsql.one_line("x" * 100, 10) == "xxxxxxx..."
    assert viewsql.one_line("x" * 10, 10) == "x" * 10


def test_a_stand_in_keeps_the_table_name_columns_are_qualified_with() -> None:
    query = "SELECT orders.id, c.x FROM shop.orders JOIN shop.cust c ON orders.cid = c.id, shop.z AS zz"
    replaced = rewrite(query, {n("shop.orders"): "__t0", n("shop.cust"): "__t1", n("shop.z"): "__t2"})
    assert replaced == "SELECT orders.id, c.x FROM __t0 AS `orders` JOIN __t1 c ON orders.cid = c.id, __t2 AS zz"


def test_qualify_puts_two_part_names_in_the_catalog() -> None:
    from delta_sync.sql.queries import qualify

    query = "SELECT * FROM shop.a JOIN other.shop.b USING (id) WHERE id IN (SELECT id FROM shop.c)"
    assert qualify(query, "main") == (
        "SELECT * FROM `main`.shop.a JOIN other.shop.b USING (id) WHERE id IN (SELECT id FROM `main`.shop.c)"
    )
    assert read_tables(qualify(query, "main")) == {n("main.shop.a"), n("other.shop.b"), n("main.shop.c")}


# --- column names: declared, and as a stored view reads --------------------------------------------


def test_with_names_renames_the_query_s_columns_by_position_as_create_view_does() -> None:
    text = viewsql.with_names("SELECT a, b FROM x -- the end", ["id", "my col"], "v")

    assert text == "SELECT * FROM (\nSELECT a, b FROM x -- the end\n) AS `v`(`id`, `my col`)"
    assert read_tables(text) == read_tables("SELECT a, b FROM x")


def test_as_stored_finds_the_query_s_columns_by_name_under_the_view_s_names() -> None:
    assert viewsql.as_stored("SELECT * FROM s.t", ["a", "b"], ["x", "y"], "v") == (
        "SELECT `a` AS `x`, `b` AS `y` FROM (\nSELECT * FROM s.t\n) AS `v`"
    )
    # Not recorded (or not matching the view's columns): by position, as at creation.
    assert (
        viewsql.as_stored("SELECT a FROM s.t", None, ["x"], "v") == "SELECT * FROM (\nSELECT a FROM s.t\n) AS `v`(`x`)"
    )
    assert viewsql.as_stored("SELECT a FROM s.t", ["a", "b"], ["x"], "v").endswith("AS `v`(`x`)")
    # Columns unknown: the query as it is.
    assert viewsql.as_stored("SELECT a FROM s.t", None, [], "v") == "SELECT a FROM s.t"


def test_as_stored_casts_each_column_to_the_type_stored_with_it_when_known() -> None:
    assert viewsql.as_stored("SELECT * FROM s.t", ["a", "b"], ["x", "y"], "v", ["array<string>", None]) == (
        "SELECT CAST(`a` AS array<string>) AS `x`, `b` AS `y` FROM (\nSELECT * FROM s.t\n) AS `v`"
    )
    # By position, the names given first.
    assert viewsql.as_stored("SELECT a FROM s.t", None, ["x"], "v", ["int"]) == (
        "SELECT CAST(`x` AS int) AS `x` FROM (\nSELECT * FROM (\nSELECT a FROM s.t\n) AS `v`(`x`)\n) AS `v`"
    )


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("[`a`, `b`]", ("a", "b")),
        (" [`we``ird`, `x y`, plain] ", ("we`ird", "x y", "plain")),
        ("[`a`]", ("a",)),
        ("", None),
        ("[`a`, ]", None),
        ("[`a` `b`]", None),
        ("a, b", None),
        ("[`open", None),
    ],
)
def test_column_list_reads_the_names_as_spark_lists_a_view_s_query_columns(
    text: str, names: tuple[str, ...] | None
) -> None:
    assert viewsql.column_list(text) == names
