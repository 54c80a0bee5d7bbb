"""Issue 40, points 1-3, on real Delta: a view a table change broke is never "no changes", a view's `columns:`
names are what the views over it read, and the views reading a broken view are named with it. Issue 45: a view
broken before the plan is its spec's error (or, no spec naming it, a notice) though the plan changes its table, and
replacing a view of the specs checks the views no spec names over it.

Each test keeps its catalog changes few: each one through Derby costs about a second.
"""

from __future__ import annotations

import pytest

from delta_sync.model.errors import SpecError
from delta_sync.model.state import TableName
from delta_sync.planning.actions import BreaksView, CreateView, Notice
from delta_sync.planning.hazards import Hazard
from delta_sync.review import execution, pipeline, readonly, results

from .cli import Cli
from .conftest import Project

ALLOW = frozenset({Hazard.BREAKING, Hazard.DESTRUCTIVE, Hazard.IRREVERSIBLE})


def review(project: Project, allowed: frozenset[Hazard] = frozenset()) -> results.Assessed:
    return pipeline.review(project.catalog, project.desired(), allowed, applying=bool(allowed))


def apply(project: Project) -> results.Assessed:
    """Review under ALLOW and run (no convergence check: some steps leave a view broken on purpose)."""
    found = review(project, ALLOW)
    assert not found.assessment.blocks, found.assessment.blocks
    execution.apply_plan(project.catalog, found.plan)
    return found


def converges(project: Project) -> None:
    """A second plan, views analysed, is empty."""
    again = review(project)
    assert again.plan.is_empty, again.plan.actions


def customers(schema: str, name: str = "{name: name, type: string}") -> str:
    return f"""\
        table: {schema}.customers
        columns:
          - {{name: id, type: bigint}}
          - {name}
        """


RENAMED = "{name: full_name, type: string, renamed_from: name}"


def test_a_view_broken_by_an_applied_rename_is_an_error_of_the_spec(project: Project, schema: str) -> None:
    project.write("customers.yaml", customers(schema))
    project.write(
        "order_names.yaml", f"# names\nview: {schema}.order_names\nsql: SELECT name FROM {schema}.customers\n"
    )
    apply(project)
    converges(project)

    # Live only, every column: Spark reads it by the names its query gave at creation, so a rename breaks it.
    project.sql(f"CREATE VIEW {schema}.star AS SELECT * FROM {schema}.customers")
    star = TableName(None, schema, "star")
    assert project.catalog.read([star]).views[star].query_columns == ("id", "name")

    project.write("customers.yaml", customers(schema, RENAMED))
    planned = review(project)
    breaks = {str(a.view): a for a in planned.plan.actions if isinstance(a, BreaksView)}
    assert set(breaks) == {f"{schema}.order_names", f"{schema}.star"}
    assert not breaks[f"{schema}.order_names"].replaced
    execution.apply_plan(project.catalog, planned.plan)
    with pytest.raises(Exception, match="UNRESOLVED_COLUMN"):
        project.sql(f"SELECT count(*) FROM {schema}.order_names")
    with pytest.raises(Exception, match="INCOMPATIBLE_VIEW_SCHEMA_CHANGE"):
        project.sql(f"SELECT * FROM {schema}.star")

    # The view's spec is unchanged, the plan holds no table change: still the view's query is analysed.
    with pytest.raises(SpecError) as raised:
        review(project)
    (problem,) = raised.value.problems
    assert (problem.file.rsplit("/", 1)[-1], problem.line) == ("order_names.yaml", 2)
    assert f"view `{schema}.order_names`" in problem.message
    assert "UNRESOLVED_COLUMN" in problem.message
    assert "__delta_sync" not in problem.message
    # drift does not say all is well either.
    with pytest.raises(SpecError, match="order_names"):
        readonly.drift(project.catalog, project.desired())

    # The plan changes its table too: the view fails already, before the plan, so it is still its spec's error.
    project.write(
        "customers.yaml",
        customers(schema, RENAMED).replace(
            "{name: id, type: bigint}", "{name: customer_id, type: bigint, renamed_from: id}"
        ),
    )
    with pytest.raises(SpecError) as raised:
        review(project)
    (problem,) = raised.value.problems
    assert (problem.file.rsplit("/", 1)[-1], problem.line) == ("order_names.yaml", 2)
    assert f"before the plan changes `{schema}.customers`: [UNRESOLVED_COLUMN" in problem.message, problem.message

    # Fixed in the spec: re-created after the rename, and converged. `star`, which no spec names, was broken
    # before the plan too: a notice, not a breaking hazard of this plan.
    project.write(
        "order_names.yaml", f"view: {schema}.order_names\nsql: SELECT full_name AS name FROM {schema}.customers\n"
    )
    applied = apply(project)
    (created,) = [a for a in applied.plan.actions if isinstance(a, CreateView)]
    assert created.replacing
    assert not [a for a in applied.plan.actions if isinstance(a, BreaksView)]
    (notice,) = [a for a in applied.plan.actions if isinstance(a, Notice) and "star" in a.message]
    assert notice.message.startswith(f"view `{schema}.star` (not in the specs) fails already, before this plan: ")
    assert "INCOMPATIBLE_VIEW_SCHEMA_CHANGE" in notice.message
    assert project.sql(f"SELECT count(*) FROM {schema}.order_names") == [(0,)]
    converges(project)


def test_a_view_reads_the_column_names_the_view_under_it_declares(project: Project, schema: str) -> None:
    project.write(
        "customers.yaml",
        f"table: {schema}.customers\ncolumns:\n  - {{name: id, type: bigint}}\n"
        "  - {name: contact_email, type: string}\n",
    )
    project.write(
        "orders.yaml",
        f"table: {schema}.orders\ncolumns:\n  - {{name: customer_id, type: bigint}}\n"
        '  - {name: amount, type: "decimal(12,2)"}\n',
    )
    project.write(
        "customer_lines.yaml",
        f"""\
        view: {schema}.customer_lines
        sql: |
          SELECT c.id, c.contact_email, o.amount
          FROM {schema}.customers c JOIN {schema}.orders o ON o.customer_id = c.id
        columns: [{{name: id}}, {{name: email}}, {{name: amount}}]
        """,
    )
    project.write(
        "big_spenders.yaml",
        f"view: {schema}.big_spenders\nsql: SELECT DISTINCT email FROM {schema}.customer_lines WHERE amount > 100\n",
    )
    created = apply(project)
    assert sorted(str(a.name) for a in created.plan.actions if isinstance(a, CreateView)) == [
        f"{schema}.big_spenders",
        f"{schema}.customer_lines",
    ]
    project.sql(f"INSERT INTO {schema}.customers VALUES (1, 'a@x'), (2, 'b@x')")
    project.sql(f"INSERT INTO {schema}.orders VALUES (1, 500.00), (2, 5.00)")
    assert project.sql(f"SELECT email FROM {schema}.big_spenders") == [("a@x",)]
    converges(project)

    # A view over a view that exists and that the plan leaves alone.
    project.write("v1.yaml", f"view: {schema}.v1\nsql: SELECT id FROM {schema}.customers\ncolumns: [{{name: b}}]\n")
    apply(project)
    project.write("v2.yaml", f"view: {schema}.v2\nsql: SELECT b FROM {schema}.v1\n")
    apply(project)
    assert project.sql(f"SELECT count(*) FROM {schema}.v2") == [(2,)]
    converges(project)

    # More names than the query has columns: an error of the spec at its line, not a failure of apply.
    project.write(
        "v3.yaml", f"view: {schema}.v3\nsql: SELECT id FROM {schema}.customers\ncolumns: [{{name: a}}, {{name: b}}]\n"
    )
    with pytest.raises(SpecError) as raised:
        review(project)
    (problem,) = raised.value.problems
    assert (problem.file.rsplit("/", 1)[-1], problem.line) == ("v3.yaml", 1)
    assert problem.message == f"view `{schema}.v3`: `columns:` lists 2 column(s), but its query gives 1"


def test_the_views_reading_a_broken_view_are_named(project: Project, schema: str) -> None:
    project.write("customers.yaml", customers(schema))
    project.write("names.yaml", f"view: {schema}.names\nsql: SELECT id, name FROM {schema}.customers\n")
    project.write("named.yaml", f"# over the view\nview: {schema}.named\nsql: SELECT name FROM {schema}.names\n")
    apply(project)
    # Live only: one over the spec's views, and a chain of two over the table.
    project.sql(f"CREATE VIEW {schema}.by_name AS SELECT name, count(*) AS n FROM {schema}.named GROUP BY name")
    project.sql(f"CREATE VIEW {schema}.raw AS SELECT name FROM {schema}.customers")
    project.sql(f"CREATE VIEW {schema}.raw_upper AS SELECT upper(name) AS u FROM {schema}.raw")

    project.write("customers.yaml", customers(schema, RENAMED))
    planned = review(project)
    breaks = {str(a.view): a for a in planned.plan.actions if isinstance(a, BreaksView)}
    assert set(breaks) == {f"{schema}.{v}" for v in ("names", "named", "by_name", "raw", "raw_upper")}
    assert {str(a.name) for a in breaks.values()} == {f"{schema}.customers"}
    named = breaks[f"{schema}.named"]
    assert named.origin is not None
    assert named.origin.line == 2
    assert not named.replaced
    assert f"reads view `{schema}.names`, which stops working" in named.error
    assert f"reads view `{schema}.named`, which stops working" in breaks[f"{schema}.by_name"].error
    assert f"reads view `{schema}.raw`, which stops working" in breaks[f"{schema}.raw_upper"].error
    reasons = [f.reason for f in planned.assessment.findings if f.hazard is Hazard.BREAKING]
    assert any(f"view `{schema}.named` (" in r and "named.yaml:2)" in r for r in reasons), reasons
    assert any(f"view `{schema}.raw_upper` (not in the specs) stops working" in r for r in reasons), reasons

    # The spec's view fixed in the same plan: re-created after the change, and what reads it works again.
    project.write("names.yaml", f"view: {schema}.names\nsql: SELECT id, full_name AS name FROM {schema}.customers\n")
    planned = review(project)
    breaks = {str(a.view): a for a in planned.plan.actions if isinstance(a, BreaksView)}
    assert set(breaks) == {f"{schema}.{v}" for v in ("names", "raw", "raw_upper")}
    assert breaks[f"{schema}.names"].replaced


def test_replacing_a_view_of_the_specs_checks_the_views_no_spec_names_over_it(project: Project, schema: str) -> None:
    project.write(
        "customers.yaml",
        f"table: {schema}.customers\ncolumns:\n  - {{name: id, type: bigint}}\n  - {{name: name, type: string}}\n"
        "  - {name: tags, type: array<string>}\n",
    )
    project.write("names.yaml", f"view: {schema}.names\nsql: SELECT id, name, tags FROM {schema}.customers\n")
    project.write("tag_ids.yaml", f"view: {schema}.tag_ids\nsql: SELECT id, tags FROM {schema}.names\n")
    apply(project)
    project.sql(f"INSERT INTO {schema}.customers VALUES (1, 'a', array('x', 'y'))")
    # Live only: one reads a column the new query drops, one passes on a column whose type changes, one reads
    # what stays as it was.
    project.sql(f"CREATE VIEW {schema}.by_name AS SELECT name FROM {schema}.names")
    project.sql(f"CREATE VIEW {schema}.tagged AS SELECT id, tags FROM {schema}.names")
    project.sql(f"CREATE VIEW {schema}.ids AS SELECT id FROM {schema}.names")

    project.write(
        "names.yaml",
        f"view: {schema}.names\nsql: SELECT id, array_join(tags, ',') AS tags FROM {schema}.customers\n",
    )
    planned = review(project)
    breaks = {str(a.view): a for a in planned.plan.actions if isinstance(a, BreaksView)}
    assert set(breaks) == {f"{schema}.by_name", f"{schema}.tagged"}
    assert {str(a.name) for a in breaks.values()} == {f"{schema}.names"}
    assert "UNRESOLVED_COLUMN" in breaks[f"{schema}.by_name"].error
    assert "cannot cast" in breaks[f"{schema}.tagged"].error.lower(), breaks[f"{schema}.tagged"].error
    reasons = [f.reason for f in planned.assessment.findings if f.hazard is Hazard.BREAKING]
    assert any(f"view `{schema}.tagged` (not in the specs) stops working" in r for r in reasons), reasons
    assert planned.assessment.blocks
    # The spec's view that passes `tags` on is re-created after the replacement: its stored type changes too.
    recreated = [a for a in planned.plan.actions if isinstance(a, CreateView) and a.name.name == "tag_ids"]
    assert [a.reasons for a in recreated] == [(f"re-created after the change of {schema}.names",)]

    # What the review found is what Spark does.
    apply(project)
    with pytest.raises(Exception, match="UNRESOLVED_COLUMN"):
        project.sql(f"SELECT * FROM {schema}.by_name")
    with pytest.raises(Exception, match=r"(?i)cannot cast"):
        project.sql(f"SELECT * FROM {schema}.tagged")
    assert project.sql(f"SELECT * FROM {schema}.ids") == [(1,)]
    assert project.sql(f"SELECT * FROM {schema}.tag_ids") == [(1, "x,y")]
    converges(project)


def test_plan_after_an_apply_that_broke_a_view_is_not_empty(cli: Cli) -> None:
    specs = cli.root / "specs"
    specs.mkdir()
    (specs / "customers.yaml").write_text(
        "table: s.customers\ncolumns:\n  - {name: id, type: bigint}\n  - {name: name, type: string}\n"
    )
    (specs / "order_names.yaml").write_text("view: s.order_names\nsql: SELECT name FROM s.customers\n")
    done = cli.run(["apply", "specs", "--yes"])
    assert done.returncode == 0, done.stderr
    (specs / "customers.yaml").write_text(
        "table: s.customers\ncolumns:\n  - {name: id, type: bigint}\n"
        "  - {name: full_name, type: string, renamed_from: name}\n"
    )
    done = cli.run(["apply", "specs", "--yes", "--allow", "breaking,irreversible"])
    assert done.returncode == 0, done.stderr
    assert "s.order_names" in done.stdout + done.stderr
    again = cli.run(["plan", "specs", "--detailed-exitcode"])
    assert again.returncode == 1, (again.stdout, again.stderr)
    text = again.stdout + again.stderr
    assert "specs/order_names.yaml:1: view `s.order_names`: its query does not resolve" in text, text
    assert "UNRESOLVED_COLUMN" in text
