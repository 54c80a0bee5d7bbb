"""`protect: true` in a view spec (issue 48, point 1), offline: read with its line, written on the view as the
property `delta_sync.protected` (restated by every CREATE OR REPLACE VIEW), a drop of a protected view blocked
whatever is allowed, a query change let through, and lifting the protection shown in the plan (no JVM)."""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path

import pytest

from delta_sync.model.errors import SpecError
from delta_sync.model.state import CatalogState, View
from delta_sync.planfile import codec
from delta_sync.planning.actions import CreateView, RemoveTable
from delta_sync.planning.ddl import to_sql
from delta_sync.planning.diff.planner import plan
from delta_sync.planning.hazard_policy import assess
from delta_sync.planning.hazards import Assessment, Hazard
from delta_sync.render import text as render
from delta_sync.review import environments
from delta_sync.spark.table_reads import view_marked
from delta_sync.specs import importer
from delta_sync.specs.project_file import load_project
from tests.unit.builders import name

VIEW = """\
view: shop.open_orders
{protect}sql: SELECT id FROM shop.orders{where}
"""
OPEN = name("shop.open_orders")


@pytest.fixture(autouse=True)
def in_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Spec lines are shown relative to the working directory, as the commands show them.
    monkeypatch.chdir(tmp_path)


def project(tmp_path: Path, spec: str, settings: str = "") -> CatalogState:
    (tmp_path / "specs").mkdir(exist_ok=True)
    (tmp_path / "specs" / "open_orders.yaml").write_text(textwrap.dedent(spec))
    if settings:
        (tmp_path / "delta-sync.yaml").write_text(textwrap.dedent(settings))
    loaded = load_project(tmp_path)
    return environments.load_desired(loaded, loaded.env(None), tmp_path / "specs")


def spec(*, protect: bool = False, where: str = "") -> str:
    return VIEW.format(protect="protect: true\n" if protect else "", where=where)


def live(*, marked: bool, sql: str = "SELECT id FROM shop.orders") -> CatalogState:
    """shop.open_orders as the catalog holds it, with or without the mark of protection."""
    view = View(OPEN, sql, marked=marked)
    schemas = frozenset({OPEN.schema_name})
    return CatalogState(
        tables={}, schemas=schemas, views={OPEN: view}, listed=frozenset({OPEN}), listed_views=frozenset({OPEN})
    )


def review(desired: CatalogState, current: CatalogState) -> Assessment:
    # Every class allowed: a protection blocks whatever --allow says.
    return assess(plan(current, desired), current, (), tuple(Hazard), desired=desired)


def protected_whys(assessment: Assessment) -> list[str]:
    return [b.why for b in assessment.blocks if b.finding.hazard is Hazard.PROTECTED]


def test_protect_travels_on_the_view_with_its_line(tmp_path: Path) -> None:
    desired = project(tmp_path, spec(protect=True))
    assert str(desired.views[OPEN].protected) == "specs/open_orders.yaml:2"
    assert project(tmp_path, spec()).views[OPEN].protected is None


def test_a_bad_protect_is_one_problem_at_its_line(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as excinfo:
        project(tmp_path, "view: shop.open_orders\nprotect: [shop.orders]\nsql: SELECT 1 AS id\n")
    found = [str(p) for p in excinfo.value.problems]
    assert any(p.startswith("specs/open_orders.yaml:2:") and "`protect`" in p for p in found), found


def test_a_new_protected_view_is_created_with_the_mark(tmp_path: Path) -> None:
    desired = project(tmp_path, spec(protect=True))
    current = CatalogState(tables={}, schemas=frozenset({OPEN.schema_name}))
    (create,) = [a for a in plan(current, desired).actions if isinstance(a, CreateView)]
    (sql,) = to_sql(create)
    assert sql.startswith("CREATE VIEW")
    assert "TBLPROPERTIES ('delta_sync.protected' = 'true')\nAS SELECT" in sql


def test_a_protected_view_changes_its_query_and_keeps_its_mark(tmp_path: Path) -> None:
    desired = project(tmp_path, spec(protect=True, where=" WHERE id > 0"))
    current = live(marked=True)
    (replace,) = plan(current, desired).actions
    assert isinstance(replace, CreateView)
    assert replace.reasons == ("query changed",)
    # CREATE OR REPLACE VIEW keeps no old property: losing the mark here would lift the protection unseen.
    assert "TBLPROPERTIES ('delta_sync.protected' = 'true')" in to_sql(replace)[0]
    # Replacing the query is how a view evolves (its readers are checked by the `breaking` analysis).
    assert protected_whys(review(desired, current)) == []


def test_an_existing_view_gets_the_mark_when_its_spec_protects_it(tmp_path: Path) -> None:
    desired = project(tmp_path, spec(protect=True))
    (marking,) = plan(live(marked=False), desired).actions
    assert isinstance(marking, CreateView)
    assert marking.reasons == ('protect: true: + property delta_sync.protected = "true"',)
    assert plan(live(marked=True), desired).actions == ()


def test_lifting_the_protection_is_a_change_the_plan_shows(tmp_path: Path) -> None:
    desired = project(tmp_path, spec())
    found = plan(live(marked=True), desired)
    (lift,) = found.actions
    assert isinstance(lift, CreateView)
    (sql,) = to_sql(lift)
    assert sql.startswith("CREATE OR REPLACE VIEW")
    assert "TBLPROPERTIES" not in sql
    shown = render.plain_text(render.render_text(found, review(desired, live(marked=True))))
    assert 'protect: true removed: - property delta_sync.protected (was "true"), no longer protected' in shown


def test_a_tombstone_of_a_marked_view_is_blocked_whatever_is_allowed(tmp_path: Path) -> None:
    desired = project(tmp_path, "view: shop.open_orders\ndrop: true\n")
    current = live(marked=True)
    assert [type(a) for a in plan(current, desired).actions] == [RemoveTable]
    assert protected_whys(review(desired, current)) == [
        "`shop.open_orders` is protected: the view is marked protected (delta_sync.protected, set by a spec's "
        "protect: true), so no plan may drop it"
    ]
    # Without the mark the same tombstone is an ordinary destructive change.
    assert protected_whys(review(desired, live(marked=False))) == []


def test_strict_mode_does_not_drop_a_marked_view(tmp_path: Path) -> None:
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "orders.yaml").write_text("table: shop.orders\ncolumns:\n  - {name: id, type: bigint}\n")
    (tmp_path / "delta-sync.yaml").write_text("default_env: local\nenvs:\n  local:\n    strict: true\n")
    loaded = load_project(tmp_path)
    desired = environments.load_desired(loaded, loaded.env(None), tmp_path / "specs")
    current = live(marked=True)
    assert [a.name for a in plan(current, desired).actions if isinstance(a, RemoveTable)] == [OPEN]
    (why,) = protected_whys(review(desired, current))
    assert why.endswith("so no plan may drop it")


def test_the_blocked_sentence_names_the_view_spec_line(tmp_path: Path) -> None:
    # The spec protects a view whose drop comes from elsewhere in the same plan (a tombstone in another file).
    desired = project(tmp_path, spec(protect=True))
    origin = desired.views[OPEN].origin
    assert origin is not None
    dropped = dataclasses.replace(desired, dropped={OPEN: origin}, dropped_views=frozenset({OPEN}))
    assessment = assess(plan(live(marked=False), dropped), live(marked=False), (), tuple(Hazard), desired=dropped)
    assert "its spec says protect: true (specs/open_orders.yaml:2), so no plan may drop it" in "".join(
        protected_whys(assessment)
    )


@pytest.mark.parametrize(
    ("printed", "marked"),
    [
        ("[delta_sync.protected=true, transient_lastDdlTime=1700000000]", True),
        ("[transient_lastDdlTime=1700000000, delta_sync.protected=TRUE]", True),
        ("[delta_sync.protected=false]", False),
        ("[delta_sync.protected_not=true]", False),
        ("", False),
    ],
)
def test_the_mark_is_read_from_describe_extended(printed: str, marked: bool) -> None:
    assert view_marked(printed) is marked


def test_import_writes_protect_for_a_marked_view_and_saved_plans_keep_the_spec_line(tmp_path: Path) -> None:
    assert importer.view_spec_data(View(OPEN, "SELECT 1 AS id", marked=True))["protect"] is True
    assert "protect" not in importer.view_spec_data(View(OPEN, "SELECT 1 AS id"))
    desired = project(tmp_path, spec(protect=True))
    (create,) = plan(CatalogState(tables={}, schemas=frozenset({OPEN.schema_name})), desired).actions
    decoded = codec.decode_action(codec.encode(create))
    assert isinstance(decoded, CreateView)
    assert str(decoded.view.protected) == "specs/open_orders.yaml:2"
