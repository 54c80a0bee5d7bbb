from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from delta_sync.model.errors import SpecError, SpecProblem
from delta_sync.planning.hazards import Hazard
from delta_sync.specs.project_file import load_project
from delta_sync.specs.settings import Environment, Project, SparkSettings, SubmitSettings
from delta_sync.specs.variables import substitute_vars

EXAMPLE = """\
specs: specs
default_env: local
envs:
  local: {}                          # the embedded catalog
  staging:
    catalog: spark_catalog            # catalog for two-part names in specs
    vars: {suffix: _stg}              # ${suffix} in specs is replaced
    spark:                            # in-process session (client mode)
      master: spark://127.0.0.1:7077
      conf: {spark.sql.shuffle.partitions: "8"}
  prod:
    catalog: main
    allow: [irreversible]             # hazard classes allowed in this env
    submit:                           # apply runs through spark-submit
      master: yarn
      deploy_mode: cluster
      conf: {spark.yarn.queue: etl}
      archives: [venv.tar.gz#environment]
"""
SECRET = "s3cr3t-t0ken"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "delta-sync.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def problems(tmp_path: Path, text: str) -> tuple[SpecProblem, ...]:
    write(tmp_path, text)
    with pytest.raises(SpecError) as info:
        load_project(tmp_path)
    return info.value.problems


def only_problem(tmp_path: Path, text: str) -> SpecProblem:
    (problem,) = problems(tmp_path, text)
    assert problem.file == str(tmp_path / "delta-sync.yaml")
    return problem


@pytest.fixture
def token(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("DS_TEST_TOKEN", SECRET)
    monkeypatch.delenv("DS_TEST_UNSET", raising=False)
    return SECRET


# --- loading ---------------------------------------------------------------------------------------------------------


def test_without_a_file_there_is_one_local_environment(tmp_path: Path) -> None:
    project = load_project(tmp_path)

    root = tmp_path.resolve()
    assert project == Project(
        root=root,
        file=None,
        specs=root / "specs",
        default_env="local",
        envs={"local": Environment(name="local")},
    )
    assert project.env() is project.envs["local"]
    assert project.secrets == frozenset()


def test_the_example_loads_into_the_models(tmp_path: Path) -> None:
    write(tmp_path, EXAMPLE)

    project = load_project(tmp_path)

    root = tmp_path.resolve()
    expected = Project(
        root=root,
        file=root / "delta-sync.yaml",
        specs=root / "specs",
        default_env="local",
        envs={
            "local": Environment(name="local"),
            "staging": Environment(
                name="staging",
                catalog="spark_catalog",
                vars={"suffix": "_stg"},
                spark=SparkSettings(master="spark://127.0.0.1:7077", conf={"spark.sql.shuffle.partitions": "8"}),
            ),
            "prod": Environment(
                name="prod",
                catalog="main",
                allow=[Hazard.IRREVERSIBLE],
                submit=SubmitSettings(
                    master="yarn",
                    deploy_mode="cluster",
                    conf={"spark.yarn.queue": "etl"},
                    archives=["venv.tar.gz#environment"],
                ),
            ),
        },
    )
    expected._envs_line = 3  # where an unknown --env is reported
    assert project == expected
    assert project.env() is project.envs["local"]
    assert project.env("prod").submit == project.envs["prod"].submit
    assert project.secrets == frozenset()


def test_submit_defaults(tmp_path: Path) -> None:
    write(tmp_path, "envs:\n  local:\n    submit: {master: yarn}\n")

    submit = load_project(tmp_path).env().submit

    assert submit == SubmitSettings(
        master="yarn", deploy_mode="client", conf={}, archives=[], py_files=[], files=[], spark_submit=None
    )


def test_an_environment_without_settings_may_be_left_empty(tmp_path: Path) -> None:
    write(tmp_path, "envs:\n  local:\n  prod: {catalog: main}\n")

    project = load_project(tmp_path)

    assert project.envs == {"local": Environment(name="local"), "prod": Environment(name="prod", catalog="main")}


def test_specs_folder_is_resolved_against_the_project_root(tmp_path: Path) -> None:
    write(tmp_path, "specs: ../shared/./tables\n")

    assert load_project(tmp_path).specs == tmp_path.resolve().parent / "shared" / "tables"


def test_an_absolute_specs_folder_is_kept(tmp_path: Path) -> None:
    write(tmp_path, f"specs: {tmp_path / 'elsewhere'}\n")

    assert load_project(tmp_path).specs == tmp_path.resolve() / "elsewhere"


def test_without_envs_the_file_still_has_local(tmp_path: Path) -> None:
    write(tmp_path, "specs: tables\n")

    project = load_project(tmp_path)

    assert (project.default_env, list(project.envs)) == ("local", ["local"])
    assert project.specs == tmp_path.resolve() / "tables"


def test_default_env_picks_the_environment(tmp_path: Path) -> None:
    write(tmp_path, "default_env: prod\nenvs:\n  prod: {catalog: main}\n  local: {}\n")

    project = load_project(tmp_path)

    assert project.env().name == "prod"
    assert project.env("local").name == "local"


def test_conf_and_vars_numbers_and_booleans_become_text(tmp_path: Path) -> None:
    text = """\
    envs:
      local:
        vars: {year: 2024, flag: true}
        spark:
          conf: {spark.sql.shuffle.partitions: 8, spark.sql.ansi.enabled: false, spark.memory.fraction: 0.6}
    """
    write(tmp_path, text)

    env = load_project(tmp_path).env()

    assert env.vars == {"year": "2024", "flag": "true"}
    assert env.spark == SparkSettings(
        master=None,
        conf={"spark.sql.shuffle.partitions": "8", "spark.sql.ansi.enabled": "false", "spark.memory.fraction": "0.6"},
    )


def test_connect_url(tmp_path: Path) -> None:
    write(tmp_path, "envs:\n  local:\n    connect: sc://host:15002\n")

    assert load_project(tmp_path).env().connect == "sc://host:15002"


# --- unknown environments ---------------------------------------------------------------------------------------------


def test_unknown_environment_names_the_known_ones(tmp_path: Path) -> None:
    write(tmp_path, EXAMPLE)
    project = load_project(tmp_path)

    with pytest.raises(SpecError) as info:
        project.env("prd")

    assert info.value.problems == (
        SpecProblem(
            str(tmp_path.resolve() / "delta-sync.yaml"),
            3,  # envs:
            "unknown environment `prd`",
            "did you mean `prod`? known environments: local, prod, staging",
        ),
    )


def test_unknown_environment_without_a_file_says_where_to_declare_it(tmp_path: Path) -> None:
    project = load_project(tmp_path)

    with pytest.raises(SpecError) as info:
        project.env("zzz")

    assert info.value.problems == (
        SpecProblem(
            str(tmp_path.resolve() / "delta-sync.yaml"),
            0,
            "unknown environment `zzz`",
            "known environments: local; declare others under envs: in delta-sync.yaml",
        ),
    )


def test_default_env_must_be_declared(tmp_path: Path) -> None:
    problem = only_problem(tmp_path, "specs: specs\ndefault_env: stagin\nenvs:\n  staging: {}\n  prod: {}\n")

    assert (problem.line, problem.message) == (2, "default_env `stagin` is not an environment")
    assert problem.hint == "did you mean `staging`? declared environments: staging, prod"


def test_default_env_without_envs_must_be_local(tmp_path: Path) -> None:
    problem = only_problem(tmp_path, "default_env: prod\n")

    assert (problem.line, problem.message) == (1, "default_env `prod` is not an environment")


def test_default_env_is_needed_without_a_local_environment(tmp_path: Path) -> None:
    problem = only_problem(tmp_path, "specs: specs\nenvs:\n  staging: {}\n  prod: {}\n")

    assert (problem.line, problem.message) == (2, "no `default_env:`, and no environment is called `local`")
    assert problem.hint == "add `default_env:` naming one of: staging, prod"


# --- validation -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "message", "hint"),
    [
        pytest.param(
            "specs: specs\nenv:\n  local: {}\n",
            2,
            "unknown key `env`",
            "did you mean `envs`? allowed keys: specs, default_env, readers, writers, envs, lint, defaults, ignore, "
            "column_order, protect, limits, safe_below, rules",
            id="top-level",
        ),
        pytest.param(
            "envs:\n  local: {}\n  staging:\n    catalog: x\n    allowed: [breaking]\n",
            5,
            "env `staging`: unknown key `allowed`",
            "did you mean `allow`? allowed keys: catalog, vars, allow, deny, readers, writers, rehearsal_schema, "
            "rehearse_max_bytes, column_order, strict, defaults, ignore, protect, limits, safe_below, rules, "
            "statement_timeout, spark, submit, connect",
            id="env",
        ),
        pytest.param(
            "envs:\n  local:\n    submit:\n      master: yarn\n      deploy-mode: cluster\n",
            5,
            "env `local`: unknown key `deploy-mode`",
            "did you mean `deploy_mode`? allowed keys: master, deploy_mode, conf, archives, py_files, files, "
            "spark_submit",
            id="submit",
        ),
        pytest.param(
            "envs:\n  spark:\n    spark:\n      conf: {}\n      mastr: local\n",
            5,
            "env `spark`: unknown key `mastr`",
            "did you mean `master`? allowed keys: master, conf, packages",
            id="env-named-like-a-key",
        ),
    ],
)
def test_unknown_keys(tmp_path: Path, text: str, line: int, message: str, hint: str) -> None:
    problem = only_problem(tmp_path, text)

    assert (problem.line, problem.message, problem.hint) == (line, message, hint)


def test_every_problem_is_reported_in_line_order(tmp_path: Path) -> None:
    text = "bogus: 1\nenvs:\n  local:\n    submit:\n      master: yarn\n      extra: 1\n    catalog: [a]\n"

    found = problems(tmp_path, text)

    assert [(p.line, p.message) for p in found] == [
        (1, "unknown key `bogus`"),
        (6, "env `local`: unknown key `extra`"),
        (7, "`envs.local.catalog` must be a string, got list"),
    ]


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        pytest.param("specs: [a, b]\n", 1, "`specs` must be a string, got list", id="specs"),
        pytest.param("envs: [local]\n", 1, "`envs` must be a mapping, got list", id="envs"),
        pytest.param("envs:\n  local: [a]\n", 2, "`envs.local` must be a mapping, got list", id="env"),
        pytest.param("envs:\n  local:\n    catalog: 7\n", 3, "`envs.local.catalog` must be a string, got integer"),
        pytest.param(
            "envs:\n  local:\n    allow: irreversible\n",
            3,
            "`envs.local.allow` must be a list, got string 'irreversible'",
            id="allow",
        ),
        pytest.param(
            "envs:\n  local:\n    spark:\n      conf: {a: [1]}\n",
            4,
            "`envs.local.spark.conf.a` must be a string, got list",
            id="conf-value",
        ),
        pytest.param(
            "envs:\n  local:\n    submit: {master: yarn, deploy_mode: both}\n",
            3,
            "`envs.local.submit.deploy_mode`: Input should be 'client' or 'cluster'",
            id="deploy-mode",
        ),
        pytest.param("specs: ''\n", 1, "value is empty", id="empty-specs"),
        pytest.param("envs: {}\n", 1, "`envs` must not be empty", id="no-envs"),
    ],
)
def test_wrong_types(tmp_path: Path, text: str, line: int, message: str) -> None:
    problem = only_problem(tmp_path, text)

    assert (problem.line, problem.message) == (line, message)


def test_submit_needs_a_master(tmp_path: Path) -> None:
    problem = only_problem(tmp_path, "envs:\n  local:\n    catalog: x\n    submit:\n      deploy_mode: cluster\n")

    assert (problem.line, problem.message) == (4, "env `local`: missing required key `master` in `envs.local.submit`")
    assert problem.hint == "add `master:` - The master URL, e.g. yarn."


@pytest.mark.parametrize(
    ("entry", "message", "hint"),
    [
        pytest.param(
            "data-dependent",
            "`data-dependent` changes cannot be allowed",
            "only these can: breaking, compatibility, destructive, irreversible, rewrite",
            id="not-allowable",
        ),
        pytest.param(
            "unsupported",
            "`unsupported` changes cannot be allowed",
            "only these can: breaking, compatibility, destructive, irreversible, rewrite",
            id="unsupported",
        ),
        pytest.param(
            "irreversable",
            "`irreversable` is not a hazard class",
            "did you mean `irreversible`? hazard classes that can be allowed: "
            "breaking, compatibility, destructive, irreversible, rewrite",
            id="unknown",
        ),
        pytest.param(
            "3",
            "`3` is not a hazard class",
            "hazard classes that can be allowed: breaking, compatibility, destructive, irreversible, rewrite",
            id="number",
        ),
    ],
)
def test_allow_lists_only_allowable_hazards(tmp_path: Path, entry: str, message: str, hint: str) -> None:
    problem = only_problem(tmp_path, f"envs:\n  local:\n    allow:\n      - breaking\n      - {entry}\n")

    assert (problem.line, problem.message, problem.hint) == (5, message, hint)


def test_allow_accepts_every_allowable_class(tmp_path: Path) -> None:
    write(tmp_path, "envs:\n  local:\n    allow: [destructive, irreversible, breaking, rewrite]\n")

    assert load_project(tmp_path).env().allow == [
        Hazard.DESTRUCTIVE,
        Hazard.IRREVERSIBLE,
        Hazard.BREAKING,
        Hazard.REWRITE,
    ]


@pytest.mark.parametrize(
    ("settings", "line", "message"),
    [
        pytest.param(
            "    spark: {master: local}\n    connect: sc://h:15002\n",
            5,
            "env `prod`: `spark` and `connect` cannot be combined",
            id="spark-connect",
        ),
        pytest.param(
            "    connect: sc://h:15002\n    catalog: x\n    submit: {master: yarn}\n",
            6,
            "env `prod`: `submit` and `connect` cannot be combined",
            id="connect-submit",
        ),
        pytest.param(
            "    submit: {master: yarn}\n    spark: {}\n    connect: sc://h:15002\n",
            6,
            "env `prod`: `spark`, `submit` and `connect` cannot be combined",
            id="all-three",
        ),
    ],
)
def test_one_way_to_run_spark_per_environment(tmp_path: Path, settings: str, line: int, message: str) -> None:
    problem = only_problem(tmp_path, "default_env: prod\nenvs:\n  prod:\n" + settings)

    assert (problem.line, problem.message) == (line, message)
    assert problem.hint.startswith("an environment runs Spark one way")


def test_one_way_to_run_spark_also_holds_in_python() -> None:
    with pytest.raises(ValidationError, match="`spark` and `connect` cannot be combined"):
        Environment(name="x", spark=SparkSettings(), connect="sc://h:15002")


def test_connect_must_be_a_spark_connect_url(tmp_path: Path) -> None:
    problem = only_problem(tmp_path, "envs:\n  local:\n    connect: http://h:15002\n")

    assert (problem.line, problem.message, problem.hint) == (
        3,
        "`http://h:15002` is not a Spark Connect URL",
        "e.g. connect: sc://host:15002",
    )


def test_environment_and_variable_names_are_checked(tmp_path: Path) -> None:
    text = "envs:\n  local: {}\n  my env:\n    vars:\n      ok_1: a\n      bad-name: b\n"

    found = problems(tmp_path, text)

    assert [(p.line, p.message) for p in found] == [
        (3, "environment name `my env` must be letters, digits, `_` and `-`"),
        (6, "variable name `bad-name` must be letters, digits and underscores, not starting with a digit"),
    ]


# --- environment variables and secrets ----------------------------------------------------------------------------


SECRET_FILE = """\
envs:
  local: {}
  prod:
    catalog: main
    connect: sc://h:15002/;token=${env:DS_TEST_TOKEN}
    vars: {key: "${env:DS_TEST_TOKEN}"}
"""


def test_env_references_are_filled_and_kept_as_secrets(tmp_path: Path, token: str) -> None:
    write(tmp_path, SECRET_FILE)

    project = load_project(tmp_path)

    prod = project.env("prod")
    assert prod.connect == f"sc://h:15002/;token={token}"
    assert prod.vars == {"key": token}
    assert project.secrets == frozenset({token})


def env_problem(tmp_path: Path, text: str, env: str = "local") -> SpecProblem:
    """The one problem of using `env`, whose file loads."""
    project = load_project(write(tmp_path, text).parent)
    with pytest.raises(SpecError) as info:
        project.env(env)
    (problem,) = info.value.problems
    assert problem.file == str(tmp_path / "delta-sync.yaml")
    return problem


def test_unset_env_variable_is_an_error_with_its_line(tmp_path: Path, token: str) -> None:
    text = (
        "envs:\n  local:\n    spark:\n      conf:\n        a: ${env:DS_TEST_TOKEN}\n        b: x${env:DS_TEST_UNSET}\n"
    )

    problem = env_problem(tmp_path, text)

    assert (problem.line, problem.message, problem.hint) == (
        6,
        "environment variable DS_TEST_UNSET is not set",
        "set DS_TEST_UNSET, or remove ${env:DS_TEST_UNSET} from delta-sync.yaml",
    )


def test_env_reference_in_a_list_points_at_the_item(tmp_path: Path, token: str) -> None:
    text = """\
    envs:
      local:
        submit:
          master: yarn
          files:
            - a.txt
            - ${env:DS_TEST_UNSET}
    """

    assert env_problem(tmp_path, text).line == 7


CI_FILE = """\
default_env: local
envs:
  local: {}
  ci:
    spark:
      conf:
        spark.hadoop.hive.metastore.uris: ${env:DS_TEST_UNSET}
"""


def test_an_unset_variable_of_another_environment_does_not_stop_this_one(tmp_path: Path, token: str) -> None:
    write(tmp_path, CI_FILE)

    project = load_project(tmp_path)

    assert project.env("local") == Environment(name="local")
    assert project.env() == Environment(name="local")
    with pytest.raises(SpecError) as info:
        project.env("ci")
    assert [str(p) for p in info.value.problems] == [
        f"{tmp_path / 'delta-sync.yaml'}:7: environment variable DS_TEST_UNSET is not set "
        "(set DS_TEST_UNSET, or remove ${env:DS_TEST_UNSET} from delta-sync.yaml)"
    ]


def test_the_same_environment_reads_the_variable_once_it_is_set(
    tmp_path: Path, token: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, CI_FILE)
    monkeypatch.setenv("DS_TEST_UNSET", "thrift://h:9083")

    ci = load_project(tmp_path).env("ci")

    assert ci.spark is not None
    assert ci.spark.conf == {"spark.hadoop.hive.metastore.uris": "thrift://h:9083"}


@pytest.mark.parametrize(
    "settings",
    [
        pytest.param("connect: ${env:DS_TEST_UNSET}", id="connect-url"),
        pytest.param("submit: {master: '${env:DS_TEST_UNSET}'}", id="required-key"),
        pytest.param("spark: {packages: ['${env:DS_TEST_UNSET}']}", id="package"),
    ],
)
def test_a_value_that_waits_for_an_unset_variable_is_judged_when_its_environment_is_used(
    tmp_path: Path, token: str, settings: str
) -> None:
    text = f"envs:\n  local: {{}}\n  ci:\n    {settings}\n"

    problem = env_problem(tmp_path, text, "ci")

    assert (problem.line, problem.message) == (4, "environment variable DS_TEST_UNSET is not set")
    assert load_project(tmp_path).env("local") == Environment(name="local")


def test_other_problems_of_an_environment_with_an_unset_variable_are_still_reported(tmp_path: Path, token: str) -> None:
    text = "envs:\n  local: {}\n  ci:\n    connect: ${env:DS_TEST_UNSET}\n    catalogue: main\n"

    problem = only_problem(tmp_path, text)

    assert (problem.line, problem.message) == (5, "env `ci`: unknown key `catalogue`")


def test_an_unset_variable_outside_the_environments_is_a_problem_of_the_file(tmp_path: Path, token: str) -> None:
    problem = only_problem(tmp_path, "specs: ${env:DS_TEST_UNSET}\n")

    assert (problem.line, problem.message) == (1, "environment variable DS_TEST_UNSET is not set")


def test_env_reference_needs_a_variable_name(tmp_path: Path) -> None:
    problem = only_problem(tmp_path, "envs:\n  local:\n    catalog: ${env:not a name}\n")

    assert (problem.line, problem.message) == (3, "`${env:not a name}` does not name an environment variable")


def test_escaped_env_reference_is_kept_literally(tmp_path: Path, token: str) -> None:
    write(tmp_path, "envs:\n  local:\n    vars: {a: '$${env:DS_TEST_TOKEN}', b: '${suffix}'}\n")

    project = load_project(tmp_path)

    assert project.env().vars == {"a": "${env:DS_TEST_TOKEN}", "b": "${suffix}"}
    assert project.secrets == frozenset()


def test_redact_masks_every_occurrence(tmp_path: Path, token: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DS_TEST_LONGER", token + "-extra")
    write(tmp_path, SECRET_FILE.replace("vars: {", "vars: {longer: '${env:DS_TEST_LONGER}', "))
    project = load_project(tmp_path)

    text = f"token={token}; again {token}; longer {token}-extra; none here"

    assert project.redact(text) == "token=***; again ***; longer ***; none here"


def test_secrets_are_masked_in_public_dict(tmp_path: Path, token: str) -> None:
    write(tmp_path, SECRET_FILE)

    data: dict[str, Any] = load_project(tmp_path).public_dict()

    assert data["envs"]["prod"] == {
        "name": "prod",
        "catalog": "main",
        "vars": {"key": "***"},
        "allow": [],
        "deny": [],
        "readers": None,
        "writers": None,
        "rehearsal_schema": None,
        "rehearse_max_bytes": 1073741824,
        "column_order": None,
        "strict": False,
        "defaults": {},
        "ignore": [],
        "protect": [],
        "limits": {},
        "safe_below": {},
        "rules": [],
        "statement_timeout": None,
        "spark": None,
        "submit": None,
        "connect": "sc://h:15002/;token=***",
    }
    assert token not in str(data)


def test_secrets_never_show_in_repr_or_str(tmp_path: Path, token: str) -> None:
    write(tmp_path, SECRET_FILE)
    project = load_project(tmp_path)
    prod = project.env("prod")

    shown = [repr(project), str(project), repr(prod), str(prod), f"{prod}"]

    assert [token in text for text in shown] == [False] * 5
    assert "connect='sc://h:15002/;token=***'" in repr(prod)
    assert "vars={'key': '***'}" in str(prod)


def test_secrets_in_nested_settings_are_masked(tmp_path: Path, token: str) -> None:
    write(tmp_path, "envs:\n  local:\n    submit:\n      master: yarn\n      conf: {tok: '${env:DS_TEST_TOKEN}'}\n")
    submit = load_project(tmp_path).env().submit
    assert submit is not None

    assert submit.conf == {"tok": token}
    assert repr(submit) == (
        "SubmitSettings(master='yarn', deploy_mode='client', conf={'tok': '***'}, archives=[], "
        "py_files=[], files=[], spark_submit=None)"
    )
    assert submit.public_dict()["conf"] == {"tok": "***"}


def test_secret_in_a_problem_message_is_masked(tmp_path: Path, token: str) -> None:
    problem = only_problem(tmp_path, "envs:\n  local:\n    allow: ${env:DS_TEST_TOKEN}\n")

    assert problem.message == "`envs.local.allow` must be a list, got string '***'"


def test_an_empty_variable_is_not_a_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DS_TEST_EMPTY", "")
    write(tmp_path, "envs:\n  local:\n    vars: {a: 'x${env:DS_TEST_EMPTY}y'}\n")

    project = load_project(tmp_path)

    assert (project.env().vars, project.secrets, project.redact("xy")) == ({"a": "xy"}, frozenset(), "xy")


# --- hostile or broken files ------------------------------------------------------------------------------------------


def test_top_level_must_be_a_mapping(tmp_path: Path) -> None:
    problem = only_problem(tmp_path, "- local\n- prod\n")

    assert (problem.line, problem.message) == (1, "top level must be a mapping, got list")
    assert "specs: specs" in problem.hint
    assert "table:" not in problem.hint


def test_empty_file(tmp_path: Path) -> None:
    problem = only_problem(tmp_path, "# nothing yet\n")

    assert (problem.line, problem.message, problem.hint) == (
        1,
        "file is empty",
        "add e.g. `default_env: local`, or delete delta-sync.yaml",
    )


def test_non_text_key_is_reported_once(tmp_path: Path) -> None:
    problem = only_problem(tmp_path, "envs:\n  local: {}\n  1: {}\n")

    assert (problem.line, problem.message) == (3, "key `1` is read as int, not text")


def test_mapping_as_key(tmp_path: Path) -> None:
    problem = only_problem(tmp_path, "? {a: 1}\n: x\n")

    assert problem.message == "a key must be plain text, not a list or mapping"
    assert "table:" not in problem.hint


def test_duplicate_key(tmp_path: Path) -> None:
    problem = only_problem(tmp_path, "envs:\n  local: {}\n  local: {catalog: x}\n")

    assert (problem.line, problem.message) == (3, "key `local` appears twice (first at line 2)")


def test_invalid_yaml(tmp_path: Path) -> None:
    problem = only_problem(tmp_path, "envs:\n  local: {\n")

    assert problem.message.startswith("invalid YAML:")


def test_alias_bomb_is_rejected_quickly(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 30)]

    start = time.perf_counter()
    problem = only_problem(tmp_path, "\n".join(lines) + "\n")

    assert time.perf_counter() - start < 1
    assert (problem.line, problem.message) == (1, "YAML anchors and aliases are not supported")


def test_deep_nesting_is_rejected(tmp_path: Path) -> None:
    problem = only_problem(tmp_path, "specs: x\nenvs: " + "[" * 300_000 + "]" * 300_000 + "\n")

    assert (problem.line, problem.message) == (2, "nesting is deeper than 50 levels")


def test_large_file_is_rejected(tmp_path: Path) -> None:
    problem = only_problem(tmp_path, "specs: specs\n# " + "x" * (1024 * 1024) + "\n")

    assert (problem.line, problem.message) == (1, "file is larger than 1 MiB")
    assert "table" not in problem.hint


def test_not_utf8(tmp_path: Path) -> None:
    (tmp_path / "delta-sync.yaml").write_bytes(b"specs: \xff\n")

    with pytest.raises(SpecError) as info:
        load_project(tmp_path)

    assert [(p.line, p.message) for p in info.value.problems] == [(1, "file is not UTF-8 (byte 0xff)")]


def test_importing_the_module_does_not_import_pyspark() -> None:
    code = "import sys, delta_sync.specs.project_file; print('pyspark' in sys.modules, 'py4j' in sys.modules)"

    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)

    assert result.stdout.strip() == "False False"


# --- substitute_vars --------------------------------------------------------------------------------------------------

VARS = {"suffix": "_stg", "db": "sales"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("${db}.orders${suffix}", "sales.orders_stg", id="declared"),
        pytest.param("${other} and ${ suffix } and ${env:X}", "${other} and ${ suffix } and ${env:X}", id="untouched"),
        pytest.param("$${suffix} is ${suffix}", "${suffix} is _stg", id="escape"),
        pytest.param("$${other}", "${other}", id="escape-undeclared"),
        pytest.param("cost in $ ${suffix}$", "cost in $ _stg$", id="lone-dollars"),
        pytest.param("no vars", "no vars", id="plain"),
    ],
)
def test_substitute_vars_in_text(text: str, expected: str) -> None:
    assert substitute_vars(text, VARS) == expected


def test_substitute_vars_walks_nested_data_and_leaves_keys_and_other_values() -> None:
    doc = {
        "table": "${db}.orders",
        "${db}": "key stays",
        "columns": [{"name": "id${suffix}", "nullable": False, "default": 0}, {"comment": None}],
        "properties": {"a": ["${suffix}", 1.5, True]},
    }

    assert substitute_vars(doc, VARS) == {
        "table": "sales.orders",
        "${db}": "key stays",
        "columns": [{"name": "id_stg", "nullable": False, "default": 0}, {"comment": None}],
        "properties": {"a": ["_stg", 1.5, True]},
    }


def test_substitute_vars_does_not_substitute_twice() -> None:
    assert substitute_vars("${a}", {"a": "${b}", "b": "no"}) == "${b}"


def test_substitute_vars_does_not_change_its_input() -> None:
    doc = {"columns": [{"name": "${suffix}"}]}

    substitute_vars(doc, VARS)

    assert doc == {"columns": [{"name": "${suffix}"}]}
