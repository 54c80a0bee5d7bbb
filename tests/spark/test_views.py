"""Views on real Delta with rows: created over a table of the same plan and over another view, replaced
when their query or comments change, checked against the tables as the plan leaves them, dropped by a
tombstone. Each step re-plans empty after apply.

One catalog and one schema for every step: each catalog change through Derby costs about a second.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from delta_sync.model.errors import SpecError
from delta_sync.planning.actions import BreaksView, CreateView, RemoveTable
from delta_sync.planning.hazards import Hazard
from delta_sync.render import text as render
from delta_sync.review import execution, pipeline, readonly, results

from .conftest import Project

ALLOW = frozenset({Hazard.BREAKING, Hazard.DESTRUCTIVE, Hazard.IRREVERSIBLE})


def apply(project: Project) -> results.Assessed:
    """Review under ALLOW, run, and check that a second plan is empty."""
    review = pipeline.review(project.catalog, project.desired(), ALLOW, applying=True)
    assert not review.assessment.blocks, review.assessment.blocks
    execution.apply_plan(project.catalog, review.plan)
    again = pipeline.make_plan(project.catalog, project.desired())
    assert again.is_empty, again.actions
    return review


def orders(schema: str, extra: str = "") -> str:
    return f"""\
        table: {schema}.orders
        columns:
          - {{name: id, type: bigint, nullable: false}}
          - {{name: amount, type: "decimal(12,2)"}}
          - {{name: status, type: string}}
        {extra}
        """


def test_views_create_replace_break_and_drop(project: Project, schema: str, tmp_path: Path) -> None:
    project.write("orders.yaml", orders(schema))
    # Over a table created in the same plan, in lower case with extra spaces and a comment in the query.
    project.write(
        "open_orders.yaml",
        f"""\
        view: {schema}.open_orders
        comment: Orders not yet shipped
        sql: |
          select id,   amount   -- what is owed
          from {schema}.orders
          where status = 'open'
        columns:
          - {{name: id, comment: The order}}
          - {{name: amount}}
        """,
    )
    # A view over the view: ordered after it.
    project.write(
        "big_open_orders.yaml",
        f"view: {schema}.big_open_orders\nsql: SELECT id FROM {schema}.open_orders WHERE amount > 100\n",
    )
    review = apply(project)
    created = [a for a in review.plan.actions if isinstance(a, CreateView)]
    assert [str(a.name) for a in created] == [f"{schema}.open_orders", f"{schema}.big_open_orders"]
    text = render.plain_text(render.render_text(review.plan), width=300)
    assert f"+ create view {schema}.open_orders" in text
    project.sql(f"INSERT INTO {schema}.orders VALUES (1, 50.00, 'open'), (2, 500.00, 'open'), (3, 9.00, 'shipped')")
    assert project.sql(f"SELECT id FROM {schema}.big_open_orders") == [(2,)]
    rows = {str(r[0]): r[2] for r in project.sql(f"DESCRIBE TABLE {schema}.open_orders")}
    assert rows["id"] == "The order"

    # A changed query and a changed column comment: CREATE OR REPLACE VIEW, then converged.
    project.write(
        "open_orders.yaml",
        f"""\
        view: {schema}.open_orders
        comment: Orders not yet shipped
        sql: SELECT id, amount FROM {schema}.orders WHERE status IN ('open', 'held')
        columns:
          - {{name: id, comment: The order id}}
          - {{name: amount, comment: Owed}}
        """,
    )
    review = apply(project)
    replaced, over = [a for a in review.plan.actions if isinstance(a, CreateView)]
    assert replaced.replacing
    # The view over it is re-created after it: Spark keeps the types of what a view read at its creation.
    assert (over.name.name, over.reasons) == (
        "big_open_orders",
        (f"re-created after the change of {schema}.open_orders",),
    )
    assert "query changed" in replaced.reasons
    assert "column id comment: 'The order' -> 'The order id'" in replaced.reasons
    assert project.sql(f"SELECT count(*) FROM {schema}.open_orders") == [(2,)]

    # A query that does not resolve is an error of the spec, at its line; nothing runs.
    project.write("bad.yaml", f"view: {schema}.bad\nsql: SELECT nope FROM {schema}.orders\n")
    with pytest.raises(SpecError) as raised:
        pipeline.review(project.catalog, project.desired())
    (problem,) = raised.value.problems
    assert problem.file.endswith("bad.yaml")
    assert problem.line == 1
    assert "UNRESOLVED_COLUMN" in problem.message
    (project.specs / "bad.yaml").unlink()

    # A view no spec names, reading the table.
    project.sql(f"CREATE VIEW {schema}.by_status AS SELECT status, count(*) AS n FROM {schema}.orders GROUP BY status")
    assert [str(n) for n in project.plan().unmanaged] == [f"{schema}.by_status"]

    # Dropping `status` breaks both the spec's view and the unmanaged one, and the spec's view over the broken
    # one: breaking hazards naming them.
    text = orders(schema).replace("          - {name: status, type: string}\n", "")
    project.write("orders.yaml", text)
    review = pipeline.review(project.catalog, project.desired())
    breaks = {str(a.view): a for a in review.plan.actions if isinstance(a, BreaksView)}
    assert set(breaks) == {f"{schema}.open_orders", f"{schema}.by_status", f"{schema}.big_open_orders"}
    assert breaks[f"{schema}.big_open_orders"].error == f"reads view `{schema}.open_orders`, which stops working"
    assert breaks[f"{schema}.open_orders"].origin is not None
    assert breaks[f"{schema}.by_status"].origin is None
    assert "status" in breaks[f"{schema}.by_status"].error
    reasons = [f.reason for f in review.assessment.findings if f.hazard is Hazard.BREAKING]
    assert any(f"view `{schema}.by_status` (not in the specs) stops working" in r for r in reasons)
    assert any(f"view `{schema}.open_orders` (" in r and "open_orders.yaml:1)" in r for r in reasons)
    # The spec's view, whose query still names `status`, cannot be re-created: the spec must change too.
    # Fixed, it is re-created after the table change in the same plan.
    project.write(
        "open_orders.yaml",
        f"view: {schema}.open_orders\ncomment: Orders not yet shipped\nsql: SELECT id, amount FROM {schema}.orders\n",
    )
    review = pipeline.review(project.catalog, project.desired(), ALLOW, applying=True)
    order = [type(a).__name__ for a in review.plan.actions]
    assert order.index("DropColumns") < order.index("CreateView")
    project.sql(f"DROP VIEW {schema}.by_status")
    review = apply(project)
    assert project.sql(f"SELECT count(*) FROM {schema}.open_orders") == [(3,)]

    # A tombstone drops a view (DROP VIEW); inert once gone.
    project.write("big_open_orders.yaml", f"view: {schema}.big_open_orders\ndrop: true\n")
    review = apply(project)
    (drop,) = [a for a in review.plan.actions if isinstance(a, RemoveTable)]
    assert drop.view
    assert {str(r[1]) for r in project.sql(f"SHOW VIEWS IN {schema}")} == {"open_orders"}

    # A view changed by hand is drift.
    project.sql(f"CREATE OR REPLACE VIEW {schema}.open_orders AS SELECT id FROM {schema}.orders")
    found = readonly.drift(project.catalog, project.desired())
    assert [type(a).__name__ for a in found.plan.changes] == ["CreateView"]
    assert found.commits == {drop.name.__class__(None, schema, "open_orders"): []}
    apply(project)

    # Import writes the view's spec back (query as stored, comment), and it plans empty.
    name = dataclasses.replace(drop.name, name="open_orders")
    written, skipped = readonly.import_specs(project.catalog, [name], tmp_path / "imported")
    assert skipped == []
    (path,) = written
    assert "view: " in path.read_text()
    assert f"sql: SELECT id, amount FROM {schema}.orders" in path.read_text()
    (project.specs / "open_orders.yaml").unlink()
    (project.specs / "open_orders.yaml").write_text(path.read_text())
    assert project.plan().is_empty
