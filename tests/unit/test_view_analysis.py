"""How views are analysed (delta_sync.review.views), without an engine: which queries are asked, under which stand-ins
and column names, and what the engine's answers make of the plan (issue 40: a view an apply broke is never
"no changes", a view's `columns:` are what the views over it read, the views over a broken view are named)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pytest

from delta_sync.model.errors import SpecError
from delta_sync.model.state import CatalogState, Origin, SchemaName, Table, TableName, View, ViewColumn
from delta_sync.planning.actions import BreaksView, CreateView, Notice, Plan, RemoveTable, RenameColumn
from delta_sync.review import execution, pipeline, views
from tests.unit.builders import col, live, name, table

T = table("s.t", col("id", "bigint"), col("full_name"))  # as the plan leaves it: `name` renamed
RENAMING = Plan((RenameColumn(name("s.t"), "name", "full_name"),), (name("s.t"),))
NOTHING = Plan((), (name("s.t"),))


def spec(text: str, sql: str, line: int = 1, columns: Sequence[str] | None = None) -> View:
    listed = None if columns is None else tuple(ViewColumn(c) for c in columns)
    return View(name(text), sql, columns=listed, origin=Origin(f"specs/{text}.yaml", line))


def stored(text: str, sql: str, columns: Sequence[str], query_columns: Sequence[str] | None = None) -> View:
    """A view as the catalog reads it: every column, and the names its query gave at creation."""
    out = None if query_columns is None else tuple(query_columns)
    return View(name(text), sql, columns=tuple(ViewColumn(c) for c in columns), query_columns=out)


def desired(*specs: View, tables: Iterable[Table] = (T,)) -> CatalogState:
    return CatalogState({t.name: t for t in tables}, views={v.name: v for v in specs})


def as_live(view: View) -> View:
    return View(view.name, view.sql, columns=tuple(ViewColumn(c.name) for c in view.columns or ()))


def analysed(plan: Plan, want: CatalogState, existing: dict[TableName, View], errors: dict[str, str]) -> Plan:
    """The plan after the analysis, the engine failing the queries of the views named in `errors`."""
    job = views.work(plan, CatalogState({}), want, existing)
    answers = [errors.get(str(subject)) for subject, _declared in job.subjects]
    return views.apply_results(plan, want, existing, job, answers)


def breaks(plan: Plan) -> dict[str, BreaksView]:
    return {str(a.view): a for a in plan.actions if isinstance(a, BreaksView)}


# --- what is asked ----------------------------------------------------------------------------------


def test_every_view_of_the_specs_is_analysed_on_every_plan() -> None:
    order_names = spec("s.order_names", "SELECT name FROM s.t")
    want = desired(order_names)

    assert views.needs_engine(NOTHING, CatalogState({}), want)
    job = views.work(NOTHING, CatalogState({}), want, {order_names.name: as_live(order_names)})

    assert job.queries == (("__delta_sync_view_0", "SELECT name FROM __delta_sync_table_0 AS `t`"),)
    assert job.subjects == ((name("s.order_names"), True),)


def test_stand_ins_are_only_the_tables_some_query_reads() -> None:
    other = table("s.other", col("x"))
    want = desired(spec("s.v", "SELECT id FROM s.t"), tables=(T, other))

    job = views.work(NOTHING, CatalogState({}), want, {})

    assert job.stand_ins == (("__delta_sync_table_0", (("id", "bigint"), ("full_name", "string"))),)


def test_a_view_of_the_specs_is_registered_under_its_declared_column_names() -> None:
    lines = spec("s.lines", "SELECT id, full_name FROM s.t", columns=["id", "email"])
    big = spec("s.big", "SELECT email FROM s.lines")

    job = views.work(NOTHING, CatalogState({}), desired(big, lines), {})

    assert job.queries == (
        (
            "__delta_sync_view_0",
            "SELECT * FROM (\nSELECT id, full_name FROM __delta_sync_table_0 AS `t`\n) AS `lines`(`id`, `email`)",
        ),
        ("__delta_sync_view_1", "SELECT email FROM __delta_sync_view_0 AS `lines`"),
    )


def test_views_no_spec_names_are_analysed_as_stored_when_a_change_reaches_them_even_through_views() -> None:
    names = spec("s.names", "SELECT id, name FROM s.t")
    raw = stored("s.raw", "SELECT * FROM s.t", ["id", "name"], ["id", "name"])
    over = stored("s.over", "SELECT name FROM s.names", ["n"], ["name"])
    elsewhere = stored("s.elsewhere", "SELECT 1 FROM s.u", ["1"])
    existing = {v.name: v for v in (as_live(names), raw, over, elsewhere)}

    job = views.work(RENAMING, CatalogState({}), desired(names), existing)

    assert views.reached(RENAMING, desired(names), existing) == {
        name("s.names"): frozenset({name("s.t")}),
        name("s.raw"): frozenset({name("s.t")}),
        name("s.over"): frozenset({name("s.t")}),
        name("s.elsewhere"): frozenset(),
    }
    # As Spark reads a view: the query's columns at creation, by name, under the view's names.
    assert dict(job.queries) == {
        "__delta_sync_view_0": "SELECT id, name FROM __delta_sync_table_0 AS `t`",
        "__delta_sync_view_1": "SELECT `id` AS `id`, `name` AS `name` FROM (\n"
        "SELECT * FROM __delta_sync_table_0 AS `t`\n) AS `raw`",
        "__delta_sync_view_2": "SELECT `name` AS `n` FROM (\n"
        "SELECT name FROM __delta_sync_view_0 AS `names`\n) AS `over`",
    }
    assert [str(s) for s, _d in job.subjects] == ["s.names", "s.raw", "s.over"]


def test_a_replaced_view_s_stored_query_is_analysed_too_when_it_reads_a_changed_table() -> None:
    new = spec("s.v", "SELECT id, full_name FROM s.t")
    was = stored("s.v", "SELECT id, name FROM s.t", ["id", "name"])
    plan = Plan((*RENAMING.actions, CreateView(new, 0, was, ("query changed",))), RENAMING.tables)

    job = views.work(plan, CatalogState({}), desired(new), {was.name: was})

    assert job.subjects == ((name("s.v"), True), (name("s.v"), False))
    assert job.queries[1] == (
        "",
        "SELECT * FROM (\nSELECT id, name FROM __delta_sync_table_0 AS `t`\n) AS `v`(`id`, `name`)",
    )


# --- what the answers make of the plan ----------------------------------------------------------------


def test_a_view_of_the_specs_that_fails_with_nothing_changing_is_an_error_of_the_spec() -> None:
    order_names = spec("s.order_names", "SELECT name FROM s.t", line=2)
    reader = spec("s.reader", "SELECT * FROM s.order_names")
    existing = {v.name: as_live(v) for v in (order_names, reader)}
    error = "[UNRESOLVED_COLUMN] `name` cannot be resolved in `__delta_sync_table_0`"

    with pytest.raises(SpecError) as raised:
        analysed(NOTHING, desired(order_names, reader), existing, {"s.order_names": error, "s.reader": "not found"})

    # The view it breaks is not reported again: the cause is.
    ((file, line, message),) = [(p.file, p.line, p.message) for p in raised.value.problems]
    assert (file, line) == ("specs/s.order_names.yaml", 2)
    assert message == (
        "view `s.order_names`: its query does not resolve against the tables as the plan leaves them: "
        "[UNRESOLVED_COLUMN] `name` cannot be resolved in `s.t`"
    )


def test_the_views_over_a_view_a_change_breaks_are_named_with_it() -> None:
    names = spec("s.names", "SELECT id, name FROM s.t")
    named = spec("s.named", "SELECT name FROM s.names", line=2)
    by_name = stored("s.by_name", "SELECT name FROM s.named", ["name"])
    fine = stored("s.fine", "SELECT id FROM s.t", ["id"])
    existing = {v.name: v for v in (as_live(names), as_live(named), by_name, fine)}
    errors = {"s.names": "`name` cannot be resolved", "s.named": "`__delta_sync_view_0` not found"}
    errors["s.by_name"] = "`__delta_sync_view_1` not found"

    result = analysed(RENAMING, desired(names, named), existing, errors)

    assert breaks(result) == {
        "s.names": BreaksView(name("s.t"), name("s.names"), "`name` cannot be resolved", names.origin),
        "s.named": BreaksView(name("s.t"), name("s.named"), "reads view `s.names`, which stops working", named.origin),
        "s.by_name": BreaksView(name("s.t"), name("s.by_name"), "reads view `s.named`, which stops working"),
    }
    # A view of the specs that resolves after the change is re-created after it; the broken ones are not.
    assert [a for a in result.actions if isinstance(a, CreateView)] == []


def test_a_view_the_plan_creates_over_a_view_it_breaks_is_an_error_of_the_spec() -> None:
    names = spec("s.names", "SELECT id, name FROM s.t")
    new = spec("s.new", "SELECT name FROM s.names", line=4)
    plan = Plan((*RENAMING.actions, CreateView(new, 1)), RENAMING.tables)
    errors = {"s.names": "`name` cannot be resolved", "s.new": "`__delta_sync_view_0` not found"}

    with pytest.raises(SpecError) as raised:
        analysed(plan, desired(names, new), {names.name: as_live(names)}, errors)

    ((line, message),) = [(p.line, p.message) for p in raised.value.problems]
    assert line == 4
    assert message.endswith("as the plan leaves them: reads view `s.names`, which stops working")


def test_a_view_over_a_dropped_view_breaks_on_the_drop() -> None:
    dropping = Plan((RemoveTable(name("s.gone"), view=True),), (name("s.gone"),))
    over = spec("s.over", "SELECT * FROM s.gone")
    job = views.work(dropping, CatalogState({}), desired(over), {over.name: as_live(over)})
    assert job.names["__delta_sync_gone_0"] == "s.gone"

    result = views.apply_results(
        dropping, desired(over), {over.name: as_live(over)}, job, ["`__delta_sync_gone_0` not found"]
    )

    assert breaks(result) == {"s.over": BreaksView(name("s.gone"), name("s.over"), "`s.gone` not found", over.origin)}


@pytest.mark.parametrize(
    ("columns", "error", "expected"),
    [
        (
            ["a", "b"],
            "[ASSIGNMENT_ARITY_MISMATCH] The number of columns or variables assigned or aliased: 1 does not match "
            "the number of source expressions: 2. SQLSTATE: 42802",
            "view `s.v`: `columns:` lists 2 column(s), but its query gives 1",
        ),
        # The query's own column aliases: the engine's words.
        (
            ["a", "b"],
            "[ASSIGNMENT_ARITY_MISMATCH] The number of columns or variables assigned or aliased: 2 does not match "
            "the number of source expressions: 3.",
            "view `s.v`: its query does not resolve against the tables as the plan leaves them: "
            "[ASSIGNMENT_ARITY_MISMATCH] The number of columns or variables assigned or aliased: 2 does not match "
            "the number of source expressions: 3.",
        ),
    ],
)
def test_a_columns_list_of_another_length_than_the_query_is_said_so(
    columns: list[str], error: str, expected: str
) -> None:
    new = spec("s.v", "SELECT id FROM s.t", columns=columns)

    with pytest.raises(SpecError) as raised:
        analysed(Plan((CreateView(new),), ()), desired(new), {}, {"s.v": error})

    assert [p.message for p in raised.value.problems] == [expected]


# --- broken before the plan, or by it (issue 45) ------------------------------------------------------


class Answering:
    """An engine that fails the queries naming a text of `failing`, and records what it was asked."""

    def __init__(self, current: CatalogState, *failing: str) -> None:
        self.current = current
        self.failing = failing
        self.asked: list[list[tuple[str, str]]] = []

    def read(self, names: Iterable[TableName]) -> CatalogState:
        return CatalogState({}, views={n: v for n, v in self.current.views.items() if n in set(names)})

    def analyse_queries(
        self, stand_ins: Sequence[tuple[str, Sequence[tuple[str, str]]]], queries: Sequence[tuple[str, str]]
    ) -> list[str | None]:
        self.asked.append(list(queries))
        return [next((f"`{f}` cannot be resolved" for f in self.failing if f in q), None) for _n, q in queries]


def test_a_view_of_the_specs_broken_before_the_plan_is_an_error_of_its_spec_when_the_plan_changes_its_table() -> None:
    ghost = spec("s.ghost", "SELECT ghost FROM s.t", line=2, columns=["g"])
    fine = spec("s.fine", "SELECT id FROM s.t")
    over = spec("s.over", "SELECT g FROM s.ghost")
    want = desired(ghost, fine, over)
    live_views = {v.name: as_live(v) for v in (ghost, fine, over)}
    engine = Answering(CatalogState({}, views=live_views), "ghost")

    with pytest.raises(SpecError) as raised:
        views.check(engine, RENAMING, CatalogState({}, views=live_views), want)  # type: ignore[arg-type]

    # Asked again, against the catalog as it is, only the views the plan's change would be blamed for.
    assert engine.asked[1] == [
        ("", "SELECT * FROM (\nSELECT ghost FROM s.t\n) AS `ghost`(`g`)"),
        ("", "SELECT g FROM s.ghost"),
    ]
    # The view over it is not reported again.
    ((file, line, message, hint),) = [(p.file, p.line, p.message, p.hint) for p in raised.value.problems]
    assert (file, line) == ("specs/s.ghost.yaml", 2)
    assert message == (
        "view `s.ghost`: its query does not resolve against the catalog as it is, before the plan changes `s.t`: "
        "`ghost` cannot be resolved"
    )
    assert hint.startswith("fix sql: the view fails already")


def test_a_view_the_plan_breaks_is_asked_again_and_stays_a_breaking_hazard() -> None:
    names = spec("s.names", "SELECT name FROM s.t")
    live_views = {names.name: as_live(names)}
    # Only the stand-in fails: against the catalog as it is, the query resolves.
    engine = Answering(CatalogState({}, views=live_views), "__delta_sync_table_0")

    result = views.check(engine, RENAMING, CatalogState({}, views=live_views), desired(names))  # type: ignore[arg-type]

    assert len(engine.asked) == 2
    assert list(breaks(result)) == ["s.names"]


def test_a_view_no_spec_names_broken_before_the_plan_is_a_notice_not_a_hazard() -> None:
    star = stored("s.star", "SELECT * FROM s.t", ["id", "name"], ["id", "name"])
    over = stored("s.over_star", "SELECT id FROM s.star", ["id"])
    existing = {v.name: v for v in (star, over)}
    job = views.work(RENAMING, CatalogState({}), desired(), existing)
    errors = ["`name` cannot be resolved", "`__delta_sync_view_0` fails"]

    assert views.suspects(RENAMING, desired(), existing, job, errors) == (name("s.over_star"), name("s.star"))
    assert views.before_queries(RENAMING, desired(), [name("s.star")]) == (("", "SELECT * FROM `s`.`star`"),)
    already = {name("s.star"): "[INCOMPATIBLE_VIEW_SCHEMA_CHANGE] ...", name("s.over_star"): "fails"}
    result = views.apply_results(RENAMING, desired(), existing, job, errors, already)

    assert breaks(result) == {}
    assert [a for a in result.actions if isinstance(a, Notice)] == [
        Notice(
            name("s.t"),
            "view s.star",
            "view `s.star` (not in the specs) fails already, before this plan: [INCOMPATIBLE_VIEW_SCHEMA_CHANGE] ...",
        )
    ]


def test_a_view_asks_nothing_more_when_nothing_fails() -> None:
    names = spec("s.names", "SELECT id FROM s.t")
    live_views = {names.name: as_live(names)}
    engine = Answering(CatalogState({}, views=live_views))

    views.check(engine, RENAMING, CatalogState({}, views=live_views), desired(names))  # type: ignore[arg-type]

    assert len(engine.asked) == 1


def replacing(new: View, was: View) -> Plan:
    return Plan((CreateView(new, 0, was, ("query changed",)),), (new.name,))


def test_a_view_replaced_with_another_query_is_a_change_the_views_over_it_are_checked_against() -> None:
    new = spec("s.v", "SELECT id, CAST(tags AS STRING) AS tags FROM s.t", line=3)
    was = stored("s.v", "SELECT id, name, tags FROM s.t", ["id", "name", "tags"])
    reader = stored("s.reader", "SELECT name FROM s.v", ["name"], ["name"])
    passing = View(
        name("s.passing"),
        "SELECT tags FROM s.v",
        columns=(ViewColumn("tags", type="array<string>"),),
        query_columns=("tags",),
    )
    unrelated = stored("s.unrelated", "SELECT id FROM s.t", ["id"])
    existing = {v.name: v for v in (was, reader, passing, unrelated)}
    plan = replacing(new, was)

    assert views.changed_tables(plan) == {name("s.v"): name("s.v")}
    job = views.work(plan, CatalogState({}), desired(new), existing)

    # Read as Spark reads them: each column cast to the type stored with it.
    assert dict(job.queries) == {
        "__delta_sync_view_0": "SELECT id, CAST(tags AS STRING) AS tags FROM __delta_sync_table_0 AS `t`",
        "__delta_sync_view_1": "SELECT CAST(`tags` AS array<string>) AS `tags` FROM (\n"
        "SELECT tags FROM __delta_sync_view_0 AS `v`\n) AS `passing`",
        "__delta_sync_view_2": "SELECT `name` AS `name` FROM (\n"
        "SELECT name FROM __delta_sync_view_0 AS `v`\n) AS `reader`",
    }
    cannot = "[DATATYPE_MISMATCH.CAST_WITHOUT_SUGGESTION] cannot cast"
    result = views.apply_results(plan, desired(new), existing, job, [None, cannot, "`name` cannot be resolved"])

    assert breaks(result) == {
        "s.passing": BreaksView(name("s.v"), name("s.passing"), cannot),
        "s.reader": BreaksView(name("s.v"), name("s.reader"), "`name` cannot be resolved"),
    }


def test_a_view_replaced_for_a_comment_changes_nothing_that_reads_it() -> None:
    new = View(name("s.v"), "SELECT id FROM s.t", comment="The ids")
    was = stored("s.v", "select id from s.t", ["id"])

    assert views.changed_tables(Plan((CreateView(new, 0, was, ("comment: (none) -> 'The ids'",)),), ())) == {}


def test_a_view_of_the_specs_over_a_view_replaced_with_another_query_is_re_created_after_it() -> None:
    new = spec("s.v", "SELECT id, CAST(n AS bigint) AS n FROM s.t")
    was = stored("s.v", "SELECT id, n FROM s.t", ["id", "n"])
    over = spec("s.over", "SELECT n FROM s.v")
    plan = replacing(new, was)
    existing = {was.name: was, over.name: as_live(over)}
    job = views.work(plan, CatalogState({}), desired(new, over), existing)

    result = views.apply_results(plan, desired(new, over), existing, job, [None] * len(job.queries))

    recreated = [a for a in result.actions if isinstance(a, CreateView) and a.name == over.name]
    assert [(a.depth, a.reasons) for a in recreated] == [(1, ("re-created after the change of s.v",))]


def test_a_view_the_plan_replaces_that_fails_already_is_repaired_and_broken_by_nothing() -> None:
    new = spec("s.v", "SELECT id, full_name FROM s.t")
    was = stored("s.v", "SELECT id, ghost FROM s.t", ["id", "ghost"])
    plan = Plan((*RENAMING.actions, CreateView(new, 0, was, ("query changed",))), RENAMING.tables)
    live = CatalogState({}, views={was.name: was})
    # Its stored query fails as the plan leaves the table, and the view fails as it is.
    engine = Answering(live, "ghost", "`s`.`v`")

    result = views.check(engine, plan, live, desired(new))  # type: ignore[arg-type]

    assert engine.asked[1] == [("", "SELECT * FROM `s`.`v`")]
    assert breaks(result) == {}
    assert [a for a in result.actions if isinstance(a, CreateView)] == [CreateView(new, 0, was, ("query changed",))]


# --- a conflict's re-plan during apply ----------------------------------------------------------------


class ViewBrokenCatalog:
    """The catalog after an apply ran the rename that broke a view of the specs (as its review allowed)."""

    def read(self, names: Iterable[TableName]) -> CatalogState:
        view = as_live(spec("s.v", "SELECT name FROM s.t"))
        return CatalogState({T.name: live(T)}, frozenset({SchemaName(None, "s")}), views={view.name: view})

    def list_tables(self, schema: SchemaName) -> list[TableName]:
        return [T.name]

    def list_views(self, schema: SchemaName) -> list[TableName]:
        return [name("s.v")]

    def analyse_queries(
        self, stand_ins: Sequence[tuple[str, Sequence[tuple[str, str]]]], queries: Sequence[tuple[str, str]]
    ) -> list[str | None]:
        return ["`name` cannot be resolved" for _ in queries]


def test_the_re_plan_after_a_conflict_goes_on_past_a_view_the_apply_broke() -> None:
    want = desired(spec("s.v", "SELECT name FROM s.t"), tables=(table("s.t", col("id", "bigint"), col("full_name")),))
    catalog = ViewBrokenCatalog()
    with pytest.raises(SpecError):
        pipeline.review(catalog, want)  # type: ignore[arg-type]

    replanned = execution._replan(catalog, want, set(), set(), 1)  # type: ignore[arg-type]

    assert replanned.is_empty
