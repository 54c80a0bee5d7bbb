"""A saved plan is bound to the project settings it was reviewed with (planfile.inputs): every one that changes
the review is recorded, a secret as a salted digest, and `apply FILE` / `show` refuse the plan (exit 4) naming
the setting that differs now; a file of the format before the record is refused as of another format."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from delta_sync.cli import main as cli
from delta_sync.model.errors import DeltaSyncError
from delta_sync.model.state import CatalogState, SchemaName
from delta_sync.planfile import checksum as plansum
from delta_sync.planfile import document as planfile
from delta_sync.planfile import inputs
from delta_sync.review import environments
from delta_sync.specs.project_file import load_project
from delta_sync.specs.settings import REDACTED
from tests.unit.test_cli import FakeCatalog, use

runner = CliRunner()
SECRET = "s3cr3t-t0ken-value"
PLAN_ID = "0123456789abcdef"

PROJECT = """\
readers: [delta-sharing]
ignore: [raw.*]
defaults: {delta.enableChangeDataFeed: true}
envs:
  local:
    vars: {suffix: _ci, token: "${env:DS_TEST_TOKEN}"}
"""

ORDERS = """\
table: s.orders
comment: Orders${suffix}
columns:
  - name: id
    type: bigint
"""


def project_at(root: Path, text: str = PROJECT) -> Path:
    (root / "delta-sync.yaml").write_text(textwrap.dedent(text))
    (root / "specs").mkdir(exist_ok=True)
    (root / "specs" / "orders.yaml").write_text(ORDERS)
    return root


def settings_of(root: Path) -> tuple[dict[str, object], frozenset[str]]:
    project = load_project(root)
    return inputs.current(project.env()), project.secrets


# --- the record, pure ---------------------------------------------------------------------------------


def test_every_setting_is_recorded_and_a_secret_only_as_a_salted_digest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DS_TEST_TOKEN", SECRET)
    values, secrets = settings_of(project_at(tmp_path))
    recorded = inputs.record(values, secrets, PLAN_ID)

    # The policy's settings are recorded only when a project sets them (tests/unit/test_team_policy.py).
    assert set(recorded) == set(inputs.DEFAULTS) - {"protect", "limits", "safe_below", "rules"}
    assert recorded["readers"] == ["delta-sharing"]
    assert recorded["writers"] == []
    assert recorded["catalog"] is None
    assert recorded["strict"] is False
    assert recorded["ignore"] == ["raw.*"]
    assert recorded["defaults"] == {"delta.enableChangeDataFeed": "true"}
    assert recorded["column_order"] == "spec"
    assert recorded["vars"]["suffix"] == "_ci"
    token = recorded["vars"]["token"]
    assert set(token) == {"secret"}
    assert SECRET not in json.dumps(recorded)
    # Salted with the plan id and the setting's name: the same secret gives another digest in another plan.
    assert inputs.record(values, secrets, "f" * 16)["vars"]["token"] != token
    # A value that holds a secret in part is a secret too, in any setting.
    partly = {**values, "catalog": f"cat_{SECRET}"}
    assert SECRET not in json.dumps(inputs.record(partly, secrets, PLAN_ID))


def test_the_environment_settings_are_recorded_as_resolved_over_the_project(tmp_path: Path) -> None:
    project_at(tmp_path, "ignore: [raw.*]\nenvs:\n  local:\n    ignore: [tmp.*]\n    column_order: ignore\n")
    values, _secrets = settings_of(tmp_path)
    assert values["ignore"] == ["raw.*", "tmp.*"]
    assert values["column_order"] == "ignore"


def test_the_settings_as_they_were_differ_in_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DS_TEST_TOKEN", SECRET)
    values, secrets = settings_of(project_at(tmp_path))
    recorded = inputs.record(values, secrets, PLAN_ID)
    assert inputs.differences(recorded, values, secrets, PLAN_ID) == []
    # The order of readers and of ignore patterns changes nothing the review decides.
    project_at(tmp_path, PROJECT.replace("ignore: [raw.*]", "ignore: [raw.*, raw.*]"))
    assert inputs.differences(recorded, settings_of(tmp_path)[0], secrets, PLAN_ID) == []


def test_each_difference_is_named_with_both_values_and_a_secret_never_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DS_TEST_TOKEN", SECRET)
    values, secrets = settings_of(project_at(tmp_path))
    recorded = inputs.record(values, secrets, PLAN_ID)

    def refusal(**changed: object) -> str:
        found = inputs.differences(recorded, {**values, **changed}, secrets | {"other-secret"}, PLAN_ID)
        return inputs.refusal(PLAN_ID, found, "delta-sync.yaml")

    assert refusal(readers=["delta-sharing", "trino 440"]) == (
        f"plan {PLAN_ID} was reviewed with readers: [delta-sharing]; delta-sync.yaml now says readers: "
        "[delta-sharing, trino 440], so it was not applied; make a new plan and review it again"
    )
    assert "reviewed with writers: []; delta-sync.yaml now says writers: [delta-rs 0.17]" in refusal(
        writers=["delta-rs 0.17"]
    )
    assert "reviewed with strict: false; delta-sync.yaml now says strict: true" in refusal(strict=True)
    assert "reviewed with catalog: null; delta-sync.yaml now says catalog: main" in refusal(catalog="main")
    assert "reviewed with column_order: spec; delta-sync.yaml now says column_order: ignore" in refusal(
        column_order="ignore"
    )
    # A mapping names the entries that differ only.
    assert "reviewed with vars: {suffix: _ci}; delta-sync.yaml now says vars: {suffix: _prod}" in refusal(
        vars={**values["vars"], "suffix": "_prod"}  # type: ignore[dict-item]
    )
    assert "vars: {extra: (not set)}; delta-sync.yaml now says vars: {extra: x}" in refusal(
        vars={**values["vars"], "extra": "x"}  # type: ignore[dict-item]
    )
    # Several: the first named in full, the others by their key.
    assert "now says strict: true (and readers, ignore changed too)" in refusal(readers=[], strict=True, ignore=[])

    secret = refusal(vars={**values["vars"], "token": "other-secret"})  # type: ignore[dict-item]
    assert secret == (
        f"plan {PLAN_ID} was reviewed with vars: {{token: {REDACTED}}}; delta-sync.yaml now gives it another value "
        "(a secret, so neither is shown), so it was not applied; make a new plan and review it again"
    )
    assert "other-secret" not in secret
    # A recorded digest decides by the value alone, whatever is known here to be a secret.
    assert inputs.differences(recorded, values, frozenset(), PLAN_ID) == []


def test_a_setting_the_record_lacks_is_taken_at_its_default_and_one_only_it_has_refuses() -> None:
    values = dict(inputs.DEFAULTS)
    assert inputs.differences({}, values, frozenset(), PLAN_ID) == []
    found = inputs.differences({}, {**values, "readers": ["duckdb 1.1"]}, frozenset(), PLAN_ID)
    assert [d.key for d in found] == ["readers"]
    # A setting of a newer delta-sync this one does not know: it cannot tell the plan holds.
    assert [d.key for d in inputs.differences({"column_order": "ignore"}, values, frozenset(), PLAN_ID)] == [
        "column_order"
    ]


# --- plan --out, then apply FILE and show ------------------------------------------------------------


def test_apply_and_show_refuse_a_plan_whose_settings_changed_and_run_it_when_they_are_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DS_TEST_TOKEN", SECRET)
    monkeypatch.chdir(project_at(tmp_path))
    project = load_project(tmp_path)
    desired = environments.load_desired(project, project.env(), None)
    schemas = frozenset({SchemaName(None, "s")})
    catalog = FakeCatalog(CatalogState(tables={}, schemas=schemas), CatalogState(desired.tables, schemas=schemas))
    use(monkeypatch, catalog)

    planned = runner.invoke(cli.app, ["plan", "--out", "plan.json"])
    assert planned.exit_code == 0, planned.output
    text = (tmp_path / "plan.json").read_text()
    assert SECRET not in text
    document = json.loads(text)
    assert document["format_version"] == planfile.FORMAT_VERSION == 4
    assert document["settings"]["readers"] == ["delta-sharing"]
    assert document["settings"]["vars"]["suffix"] == "_ci"
    plan_id = document["plan_id"]

    def refused(command: str = "apply") -> str:
        args = ["apply", "plan.json", "--yes"] if command == "apply" else ["show", "plan.json"]
        result = runner.invoke(cli.app, args)
        assert result.exit_code == 4, result.output
        assert catalog.executed == []
        assert SECRET not in result.output
        assert "rotated-token" not in result.output
        return " ".join(result.stderr.split())

    project_at(tmp_path, PROJECT.replace("readers: [delta-sharing]", "readers: [delta-sharing, trino 440]"))
    assert (
        f"plan {plan_id} was reviewed with readers: [delta-sharing]; delta-sync.yaml now says readers: "
        "[delta-sharing, trino 440], so it was not applied; make a new plan and review it again"
    ) in refused()
    assert "reviewed with readers: [delta-sharing]" in refused("show")

    project_at(tmp_path)
    monkeypatch.setenv("DS_TEST_TOKEN", "rotated-token")
    assert f"reviewed with vars: {{token: {REDACTED}}}; delta-sync.yaml now gives it another value" in refused()
    monkeypatch.setenv("DS_TEST_TOKEN", SECRET)

    (tmp_path / "delta-sync.yaml").write_text(
        PROJECT.replace("local:\n", "local:\n    strict: true\n").replace("[raw.*]", "[raw.*, dbt_*.*]")
    )
    assert "reviewed with strict: false; delta-sync.yaml now says strict: true (and ignore changed too)" in refused()

    # As reviewed again: show prints it, apply runs it.
    project_at(tmp_path)
    assert runner.invoke(cli.app, ["show", "plan.json"]).exit_code == 0
    applied = runner.invoke(cli.app, ["apply", "plan.json", "--yes"])
    assert applied.exit_code == 0, applied.output
    assert catalog.executed


def test_show_compares_only_with_a_project_that_resolves_the_plan_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DS_TEST_TOKEN", SECRET)
    monkeypatch.chdir(project_at(tmp_path))
    use(monkeypatch, FakeCatalog(CatalogState(tables={}, schemas=frozenset({SchemaName(None, "s")}))))
    assert runner.invoke(cli.app, ["plan", "--out", "plan.json"]).exit_code == 0
    # In a job without the catalog's secrets, show cannot know the settings; it shows the plan as reviewed.
    monkeypatch.delenv("DS_TEST_TOKEN")
    assert runner.invoke(cli.app, ["show", "plan.json"]).exit_code == 0
    refused = runner.invoke(cli.app, ["apply", "plan.json", "--yes"])
    assert refused.exit_code == 1
    assert "DS_TEST_TOKEN" in refused.stderr


def test_a_plan_of_the_format_before_the_record_or_without_it_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DS_TEST_TOKEN", SECRET)
    monkeypatch.chdir(project_at(tmp_path))
    use(monkeypatch, FakeCatalog(CatalogState(tables={}, schemas=frozenset({SchemaName(None, "s")}))))
    assert runner.invoke(cli.app, ["plan", "--out", "plan.json"]).exit_code == 0
    document = json.loads((tmp_path / "plan.json").read_text())

    older = {k: v for k, v in document.items() if k not in ("settings", "checksum")}
    (tmp_path / "old.json").write_text(json.dumps(plansum.seal({**older, "format_version": 3})))
    old = runner.invoke(cli.app, ["apply", "old.json", "--yes"])
    assert old.exit_code == 1, old.output
    assert "has plan format 3; this delta-sync reads format 4. Make the plan again" in " ".join(old.stderr.split())

    # Removed, with the checksum recomputed: refused as a file delta-sync did not write.
    (tmp_path / "bare.json").write_text(json.dumps(plansum.seal(older)))
    with pytest.raises(DeltaSyncError, match="settings: Field required"):
        planfile.load(tmp_path / "bare.json")
    # Emptied, with the checksum recomputed: refused, saying so (a rollback plan alone has none).
    (tmp_path / "none.json").write_text(json.dumps(plansum.seal({**older, "settings": None})))
    saved = planfile.load(tmp_path / "none.json")
    with pytest.raises(planfile.RefusedPlanError, match="does not say which project settings it was reviewed with"):
        environments.refuse_if_changed(saved, load_project(tmp_path))
    rollback = planfile.load(tmp_path / "none.json").model_copy(update={"rolls_back": "f" * 16})
    environments.refuse_if_changed(rollback, load_project(tmp_path))
