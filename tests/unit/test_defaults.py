"""Project-wide defaults (`defaults:` in delta-sync.yaml, per environment too) and tables other tools own
(`ignore:`): the merge into the desired state, a spec's own value and its null opt-out, where a value came
from in each format, import leaving defaults out, and the ignore patterns with their configuration errors."""

from __future__ import annotations

import hashlib
import json
import textwrap
from pathlib import Path

import pytest

from delta_sync.model.errors import DeltaSyncError, SpecError
from delta_sync.model.state import CatalogState, Origin, TableName, ignored_by
from delta_sync.planfile import codec
from delta_sync.planfile import document as planfile
from delta_sync.planning.actions import CreateTable, Plan, PropertyChange, RemoveTable, SetProperties
from delta_sync.planning.diff.planner import plan, unmanaged_names
from delta_sync.render import text as render
from delta_sync.render.document import plan_json
from delta_sync.render.markdown import render_markdown
from delta_sync.review import environments, readonly
from delta_sync.specs import importer
from delta_sync.specs.desired_state import with_project
from delta_sync.specs.project_file import load_project
from delta_sync.specs.spec_files import spec_paths
from tests.unit.builders import col, live, name, state, table

CDF = "delta.enableChangeDataFeed"
RETENTION = "delta.logRetentionDuration"

PROJECT = """\
defaults:
  delta.enableChangeDataFeed: true
  delta.logRetentionDuration: interval 30 days
envs:
  local: {}
  prod:
    defaults:
      delta.logRetentionDuration: interval 90 days
      delta.enableDeletionVectors: true
  dev:
    defaults:
      delta.enableChangeDataFeed: null
"""


def spec(table_name: str, properties: str = "") -> str:
    text = f"table: {table_name}\ncolumns:\n  - name: id\n    type: bigint\n"
    if properties:
        text += "properties:\n" + textwrap.indent(textwrap.dedent(properties), "  ")
    return text


def make_project(root: Path, project: str = PROJECT, **specs: str) -> Path:
    (root / "delta-sync.yaml").write_text(textwrap.dedent(project), encoding="utf-8")
    for file, text in specs.items():
        path = root / "specs" / "shop" / f"{file}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def desired(root: Path, env: str | None = None) -> CatalogState:
    project = load_project(root)
    return environments.load_desired(project, project.env(env), None)


def props(found: CatalogState, table_name: str) -> dict[str, str]:
    return dict(found.tables[name(table_name)].properties)


# --- merging ----------------------------------------------------------------------------------------


def test_an_environment_overrides_the_project_defaults_key_by_key_and_null_removes_one(tmp_path: Path) -> None:
    project = load_project(make_project(tmp_path))

    assert project.env("local").table_defaults == {CDF: "true", RETENTION: "interval 30 days"}
    assert project.env("prod").table_defaults == {
        CDF: "true",
        RETENTION: "interval 90 days",
        "delta.enableDeletionVectors": "true",
    }
    assert project.env("dev").table_defaults == {RETENTION: "interval 30 days"}


def test_an_environment_key_replaces_the_project_key_whatever_its_case(tmp_path: Path) -> None:
    text = "defaults:\n  delta.enableChangeDataFeed: true\nenvs:\n  local:\n    defaults:\n"
    text += "      DELTA.ENABLECHANGEDATAFEED: false\n"
    project = load_project(make_project(tmp_path, text))

    assert project.env().table_defaults == {"DELTA.ENABLECHANGEDATAFEED": "false"}


def test_without_defaults_the_desired_state_is_the_specs_alone(tmp_path: Path) -> None:
    root = make_project(tmp_path, "envs:\n  local: {}\n", orders=spec("shop.orders", "team: a\n"))

    orders = desired(root).tables[name("shop.orders")]

    assert orders.properties == (("team", "a"),)
    assert orders.defaulted == ()


def test_a_default_reaches_every_table_the_spec_wins_and_null_opts_out(tmp_path: Path) -> None:
    root = make_project(
        tmp_path,
        orders=spec("shop.orders"),
        items=spec("shop.items", "delta.enableChangeDataFeed: false\n"),
        audit=spec("shop.audit", "delta.enableChangeDataFeed: null\n"),
    )

    found = desired(root)

    assert props(found, "shop.orders") == {CDF: "true", RETENTION: "interval 30 days"}
    assert found.tables[name("shop.orders")].defaulted == (CDF, RETENTION)
    assert props(found, "shop.items") == {CDF: "false", RETENTION: "interval 30 days"}
    assert found.tables[name("shop.items")].defaulted == (RETENTION,)
    audit = found.tables[name("shop.audit")]
    assert dict(audit.properties) == {RETENTION: "interval 30 days"}
    assert audit.removed_properties == (CDF,)
    assert audit.defaulted == (RETENTION,)


def test_a_spec_key_in_another_case_is_the_specs_own(tmp_path: Path) -> None:
    root = make_project(tmp_path, orders=spec("shop.orders", "DELTA.enableChangeDataFeed: false\n"))

    assert props(desired(root), "shop.orders") == {"DELTA.enableChangeDataFeed": "false", RETENTION: "interval 30 days"}


def test_each_environment_gives_its_own_defaults(tmp_path: Path) -> None:
    root = make_project(tmp_path, orders=spec("shop.orders"))

    assert props(desired(root, "prod"), "shop.orders") == {
        CDF: "true",
        RETENTION: "interval 90 days",
        "delta.enableDeletionVectors": "true",
    }
    assert props(desired(root, "dev"), "shop.orders") == {RETENTION: "interval 30 days"}


def test_the_library_and_validate_see_the_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import delta_sync

    root = make_project(tmp_path, orders=spec("shop.orders"))
    monkeypatch.chdir(root)

    assert props(delta_sync.load_specs(), "shop.orders")[CDF] == "true"


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        pytest.param("defaults:\n  delta.constraints.x: a > 0\n", 2, "reserved for CHECK constraints", id="reserved"),
        pytest.param("defaults:\n  team: [a, b]\n", 2, "value must be a string", id="not-text"),
        pytest.param("envs:\n  local:\n    defaults: [a]\n", 3, "", id="not-a-mapping"),
        pytest.param("ignore: [dbt]\n", 1, "`dbt` is not a pattern of table names", id="no-dot"),
        pytest.param("ignore:\n  - a.b.c.d\n", 2, "`a.b.c.d` is not a pattern of table names", id="too-many-dots"),
        pytest.param("ignore: dbt.*\n", 1, "", id="not-a-list"),
    ],
)
def test_bad_defaults_and_ignore_patterns_are_problems_at_their_line(
    tmp_path: Path, text: str, line: int, message: str
) -> None:
    make_project(tmp_path, text)

    with pytest.raises(SpecError) as info:
        load_project(tmp_path)

    (problem,) = info.value.problems
    assert problem.line == line
    assert message in problem.message


# --- planning: the origin of a value ----------------------------------------------------------------


def planned(root: Path, current: CatalogState, env: str | None = None) -> Plan:
    return plan(current, desired(root, env))


def changes(the_plan: Plan) -> tuple[PropertyChange, ...]:
    return tuple(c for a in the_plan.actions if isinstance(a, SetProperties) for c in a.changes)


def test_a_default_is_planned_on_an_existing_table_marked_as_the_default(tmp_path: Path) -> None:
    root = make_project(tmp_path, orders=spec("shop.orders", "team: a\n"))
    current = state(live(table("shop.orders", col("id", "bigint"), properties={RETENTION: "interval 7 days"})))

    found = changes(planned(root, current))

    assert found == (
        PropertyChange(CDF, None, "true", default=True),
        PropertyChange(RETENTION, "interval 7 days", "interval 30 days", default=True),
        PropertyChange("team", None, "a"),
    )


def test_a_table_that_has_the_default_already_plans_nothing(tmp_path: Path) -> None:
    root = make_project(tmp_path, orders=spec("shop.orders"))
    has = {CDF: "TRUE", RETENTION: "interval 30 days"}
    current = state(live(table("shop.orders", col("id", "bigint"), properties=has)))

    assert not planned(root, current).changes


def test_changing_a_default_plans_the_change_on_every_table_it_reaches(tmp_path: Path) -> None:
    root = make_project(
        tmp_path, orders=spec("shop.orders"), items=spec("shop.items", "delta.logRetentionDuration: interval 1 days\n")
    )
    before = {CDF: "true", RETENTION: "interval 30 days"}
    current = state(
        live(table("shop.orders", col("id", "bigint"), properties=before)),
        live(table("shop.items", col("id", "bigint"), properties={CDF: "true", RETENTION: "interval 1 days"})),
    )
    assert not planned(root, current).changes

    found = planned(root, current, "prod")

    by_table = {a.name: a.changes for a in found.actions if isinstance(a, SetProperties)}
    assert by_table[name("shop.orders")] == (
        PropertyChange("delta.enableDeletionVectors", None, "true", default=True),
        PropertyChange(RETENTION, "interval 30 days", "interval 90 days", default=True),
    )
    # The spec's own retention wins over the environment's default.
    assert by_table[name("shop.items")] == (PropertyChange("delta.enableDeletionVectors", None, "true", default=True),)


def test_null_in_a_spec_removes_a_defaulted_property_the_table_has(tmp_path: Path) -> None:
    root = make_project(tmp_path, orders=spec("shop.orders", "delta.enableChangeDataFeed: null\n"))
    current = state(
        live(table("shop.orders", col("id", "bigint"), properties={CDF: "true", RETENTION: "interval 30 days"}))
    )

    found = planned(root, current)

    assert not changes(found)
    assert [type(a).__name__ for a in found.changes] == ["UnsetProperties"]


def _review(tmp_path: Path) -> Plan:
    root = make_project(tmp_path, orders=spec("shop.orders", "team: a\n"), items=spec("shop.items"))
    current = state(live(table("shop.orders", col("id", "bigint"), properties={RETENTION: "interval 7 days"})))
    return planned(root, current)


def test_text_shows_which_values_are_the_project_default(tmp_path: Path) -> None:
    text = render.plain_text(render.render_text(_review(tmp_path)))

    assert '+ property delta.enableChangeDataFeed = "true"  (project default)' in text
    assert '~ property delta.logRetentionDuration: "interval 7 days" -> "interval 30 days"  (project default)' in text
    assert '+ property team = "a"\n' in text
    # A new table's properties too.
    assert text.count("(project default)") == 4


def test_json_names_the_default_as_the_source(tmp_path: Path) -> None:
    document = plan_json(_review(tmp_path))
    actions = {(a["kind"], a["table"]): a for a in document["actions"]}

    assert actions["SetProperties", "shop.orders"]["changes"] == [
        {"key": CDF, "before": None, "after": "true", "source": "default"},
        {"key": RETENTION, "before": "interval 7 days", "after": "interval 30 days", "source": "default"},
        {"key": "team", "before": None, "after": "a"},
    ]
    assert actions["CreateTable", "shop.items"]["defaults"] == [CDF, RETENTION]


def test_markdown_shows_which_values_are_the_project_default(tmp_path: Path) -> None:
    markdown = render_markdown(_review(tmp_path))

    assert '+ property delta.enableChangeDataFeed = "true"  (project default)' in markdown
    assert '+ property team = "a"\n' in markdown


def test_without_defaults_json_and_the_saved_plan_carry_no_source(tmp_path: Path) -> None:
    root = make_project(
        tmp_path, "envs:\n  local: {}\n", orders=spec("shop.orders", "team: a\n"), items=spec("shop.items")
    )
    current = state(live(table("shop.orders", col("id", "bigint"))))
    the_plan = planned(root, current)

    text = json.dumps([plan_json(the_plan), [codec.encode(a) for a in the_plan.actions]])

    assert '"source":' not in text
    assert '"defaults":' not in text
    assert '"defaulted":' not in text
    assert codec.encode(PropertyChange("team", None, "a")) == {"key": "team", "before": None, "after": "a"}


def test_the_saved_plan_keeps_where_a_value_came_from(tmp_path: Path) -> None:
    for action in _review(tmp_path).actions:
        back = codec.decode_action(json.loads(json.dumps(codec.encode(action))))
        assert back == action
        if isinstance(action, CreateTable):
            assert isinstance(back, CreateTable)
            assert back.table.defaulted == action.table.defaulted == (CDF, RETENTION)
        if isinstance(action, SetProperties):
            assert isinstance(back, SetProperties)
            assert [c.default for c in back.changes] == [True, True, False]


# --- import -----------------------------------------------------------------------------------------


def test_import_leaves_out_a_value_equal_to_the_default_and_opts_out_of_one_the_table_lacks() -> None:
    found = live(table("shop.orders", col("id", "bigint"), properties={CDF: "TRUE", "team": "a", RETENTION: "x"}))
    defaults = {CDF: "true", "delta.enableDeletionVectors": "true", RETENTION: "interval 30 days"}

    assert importer.spec_data(found, defaults)["properties"] == {
        "team": "a",
        RETENTION: "x",
        "delta.enableDeletionVectors": None,
    }
    assert importer.spec_data(found)["properties"] == {CDF: "TRUE", "team": "a", RETENTION: "x"}
    assert "delta.enableDeletionVectors: null" in importer.spec_text(found, defaults)


def test_an_imported_spec_plans_nothing_under_the_defaults(tmp_path: Path) -> None:
    found = live(table("shop.orders", col("id", "bigint"), properties={CDF: "true", "team": "a"}))
    root = make_project(tmp_path, orders=importer.spec_text(found, {CDF: "true", RETENTION: "interval 30 days"}))
    found_state = state(found)

    assert (
        "properties:\n  team: a\n  delta.logRetentionDuration: null\n" in (root / "specs/shop/orders.yaml").read_text()
    )
    assert not planned(root, found_state).changes


# --- ignore -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("table_name", "patterns", "expected"),
    [
        ("dbt_core.orders", ["dbt_*.*"], "dbt_*.*"),
        ("raw.events_2024", ["raw.events_*"], "raw.events_*"),
        ("raw.EVENTS_x", ["RAW.Events_*"], "RAW.Events_*"),
        ("raw.orders", ["raw.events_*"], None),
        ("main.raw.sink", ["main.raw.*"], "main.raw.*"),
        ("other.raw.sink", ["main.raw.*"], None),
        ("raw.sink", ["spark_catalog.raw.*"], "spark_catalog.raw.*"),
        ("main.raw.sink", ["raw.sink"], "raw.sink"),
        ("shop.orders_tmp", ["*.*_tmp", "shop.x"], "*.*_tmp"),
    ],
)
def test_ignore_patterns_are_globs_on_schema_table_case_insensitive(
    table_name: str, patterns: list[str], expected: str | None
) -> None:
    assert ignored_by(TableName.parse(table_name), patterns) == expected


def test_an_ignored_table_is_never_unmanaged_nor_dropped_by_strict(tmp_path: Path) -> None:
    text = "ignore: [shop.dbt_*, shop.sink]\nenvs:\n  local: {strict: true}\n"
    root = make_project(tmp_path, text, orders=spec("shop.orders"))
    want = desired(root)
    orders = live(table("shop.orders", col("id", "bigint")))
    current = CatalogState(
        tables={orders.name: orders},
        schemas=frozenset({orders.name.schema_name}),
        listed=frozenset(name(n) for n in ("shop.orders", "shop.dbt_daily", "shop.SINK", "shop.stray")),
    )

    assert want.ignore == ("shop.dbt_*", "shop.sink")
    assert unmanaged_names(current, want) == (name("shop.stray"),)
    found = plan(current, want)
    assert [a.name for a in found.actions if isinstance(a, RemoveTable)] == [name("shop.stray")]


def test_without_strict_ignored_tables_are_not_listed_as_unmanaged(tmp_path: Path) -> None:
    root = make_project(tmp_path, "ignore: ['shop.dbt_*']\n", orders=spec("shop.orders"))
    current = CatalogState(tables={}, listed=frozenset({name("shop.dbt_daily"), name("shop.stray")}))

    assert plan(current, desired(root)).unmanaged == (name("shop.stray"),)


@pytest.mark.parametrize(
    ("text", "what"),
    [
        pytest.param(spec("shop.dbt_daily"), "table `shop.dbt_daily`", id="table"),
        pytest.param("table: SHOP.DBT_daily\ndrop: true\n", "tombstone `shop.dbt_daily`", id="tombstone"),
        pytest.param("view: shop.dbt_v\nsql: SELECT 1 AS id\n", "view `shop.dbt_v`", id="view"),
        pytest.param(
            spec("shop.orders").replace("columns:", "renamed_from: shop.dbt_old\ncolumns:"),
            "the table it is renamed from `shop.dbt_old`",
            id="renamed-from",
        ),
    ],
)
def test_a_spec_naming_an_ignored_table_is_a_problem_at_its_line(tmp_path: Path, text: str, what: str) -> None:
    root = make_project(tmp_path, "ignore: ['shop.dbt_*']\n", bad=text)

    with pytest.raises(SpecError) as info:
        desired(root)

    (problem,) = info.value.problems
    assert problem.file.endswith("bad.yaml")
    assert problem.line == 1
    assert problem.message == (
        f"{what} matches `shop.dbt_*` under ignore: in delta-sync.yaml: another tool manages it, so no spec may name it"
    )
    assert "remove this spec, or the pattern from ignore:" in problem.hint


def test_validate_reports_a_spec_naming_an_ignored_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from delta_sync.cli.main import app

    make_project(tmp_path, "ignore: ['shop.dbt_*']\n", bad=spec("shop.dbt_daily"), orders=spec("shop.orders"))
    monkeypatch.chdir(tmp_path)

    result = CliRunner().invoke(app, ["validate"])

    assert result.exit_code == 1
    assert "bad.yaml:1" in result.output
    assert "another tool manages it" in result.output


def test_with_project_without_settings_returns_the_state_as_is() -> None:
    found = state(table("s.t", col("id"), origin=Origin("t.yaml", 1)))

    assert with_project(found, {}, ()) is found


class _Listing:
    def __init__(self, names: list[str]) -> None:
        self.names = [name(n) for n in names]

    def list_tables(self, schema: object) -> list[TableName]:
        return self.names


def test_import_of_a_schema_leaves_ignored_tables_out_and_refuses_one_named() -> None:
    catalog = _Listing(["shop.orders", "shop.dbt_daily", "shop.sink"])

    assert readonly.import_targets(catalog, ["shop"], ["shop.dbt_*", "SHOP.SINK"]) == [name("shop.orders")]  # type: ignore[arg-type]
    with pytest.raises(DeltaSyncError, match=r"matches `shop\.dbt_\*` under ignore:"):
        readonly.import_targets(catalog, ["shop.dbt_daily"], ["shop.dbt_*"])  # type: ignore[arg-type]


# --- a saved plan against the project's settings -------------------------------------------------------


def test_the_specs_hash_is_the_specs_alone_and_the_settings_are_recorded_apart(tmp_path: Path) -> None:
    root = make_project(tmp_path, "envs:\n  local: {}\n", orders=spec("shop.orders", "team: a\n"))
    folder = root / "specs"
    paths = spec_paths(folder)
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    before = digest.hexdigest()[:16]

    assert planfile.specs_hash(paths, folder) == environments.specs_hash(folder) == before
    # The defaults and ignore patterns are recorded by name (planfile.inputs), their order changing nothing.
    with_defaults = load_project(make_project(tmp_path, PROJECT + "ignore: [b.*, a.*]\n"))
    settings = environments.reviewed_settings(with_defaults, with_defaults.env("local"), "0" * 16)
    assert settings["defaults"] == {CDF: "true", RETENTION: "interval 30 days"}
    assert settings["ignore"] == ["a.*", "b.*"]
    assert environments.specs_hash(folder) == before


def test_a_saved_plan_is_refused_when_the_defaults_or_ignore_changed_since(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from delta_sync.cli import main as cli
    from tests.unit.test_cli import FakeCatalog, use

    runner = CliRunner()
    root = make_project(tmp_path, PROJECT, orders=spec("shop.orders"))
    catalog = FakeCatalog(state(live(table("shop.orders", col("id", "bigint"), properties={CDF: "true"}))))
    use(monkeypatch, catalog)
    monkeypatch.chdir(root)
    planned_ = runner.invoke(cli.app, ["plan", "--out", "plan.json"])
    assert planned_.exit_code == 0, planned_.output
    saved, _note = environments.load_plan(root / "plan.json")
    plan_id = saved.plan_id

    def refused(project_text: str) -> str:
        make_project(root, project_text)
        result = runner.invoke(cli.app, ["apply", "plan.json", "--yes"])
        assert result.exit_code == 4, result.output
        assert catalog.executed == []
        return result.stderr

    moved = PROJECT.replace("interval 30 days", "interval 7 days")
    assert (
        f"plan {plan_id} was reviewed with defaults: {{{RETENTION}: interval 30 days}}; delta-sync.yaml "
        f"(environment local) now says defaults: {{{RETENTION}: interval 7 days}}, so it was not applied"
    ) in refused(moved)
    assert "reviewed with ignore: []; delta-sync.yaml (environment local) now says ignore: [raw.*]" in refused(
        PROJECT + "ignore: [raw.*]\n"
    )
    # As it was: the plan is what the project says again.
    make_project(root, PROJECT)
    environments.refuse_if_changed(saved, load_project(root))

    # A plan made before the project had defaults: the specs alone are as they were, the settings are not.
    make_project(root, "envs:\n  local: {}\n")
    assert runner.invoke(cli.app, ["plan", "--out", "bare.json"]).exit_code == 0
    assert environments.load_plan(root / "bare.json")[0].specs_hash == environments.specs_hash(root / "specs")
    make_project(root, PROJECT)
    result = runner.invoke(cli.app, ["apply", "bare.json", "--yes"])
    assert result.exit_code == 4, result.output
    assert (
        f"was reviewed with defaults: {{}}; delta-sync.yaml (environment "
        f"local) now says defaults: {{{CDF}: true, {RETENTION}: interval 30 days}}"
    ) in result.stderr
