"""The checks made before a JVM starts: which master URLs pass, what messages show of secrets, and which sessions
authenticate Spark's own ports."""

from __future__ import annotations

from pathlib import Path

import pytest

from delta_sync.spark.jars import DeltaJars
from delta_sync.spark.servers import master_problem, metastore_problem, shown
from delta_sync.spark.session import LocalCatalog, spark_conf
from tests.servers import free_ports


@pytest.mark.parametrize(
    "master", ["local", "local[*]", "local[4]", "local[4, 2]", "local-cluster[2,1,1024]", "yarn", "k8s://https://k:443"]
)
def test_master_urls_spark_accepts_pass_without_a_network_call(master: str) -> None:
    assert master_problem(master) is None


@pytest.mark.parametrize("master", ["foo://", "spark:/x", "spark://host", "local[two]", "mesos://m:5050", "Yarn "])
def test_master_urls_spark_refuses_are_named(master: str) -> None:
    problem = master_problem(master)
    assert problem is not None
    assert problem.startswith(f"the Spark master `{master}` is not a master URL Spark knows")


def test_every_master_of_a_list_is_tried_and_each_reason_given() -> None:
    first, second = free_ports(2)
    problem = master_problem(f"spark://127.0.0.1:{first},[::1]:{second}")
    assert problem is not None
    assert f"(127.0.0.1:{first}: connection refused; ::1:{second}: " in problem


def test_secrets_and_passwords_are_masked_in_what_is_shown() -> None:
    (port,) = free_ports(1)
    problem = metastore_problem("k", f"thrift://127.0.0.1:{port}", redact=lambda t: t.replace(str(port), "***"))
    assert problem is not None
    assert str(port) not in problem
    assert shown("thrift://admin:hunter2@host:9083") == "thrift://admin:***@host:9083"


@pytest.mark.parametrize(
    ("master", "authenticated"),
    [
        ("local", True),
        ("local[*]", True),
        ("local[4]", True),
        ("local[4, 2]", True),
        # Spark makes the secret for these only; another master would need one given to every executor.
        ("local-cluster[2,1,1024]", False),
        ("spark://127.0.0.1:7077", False),
        ("yarn", False),
        ("k8s://https://k:443", False),
    ],
)
def test_a_session_on_a_local_master_authenticates_sparks_ports(master: str, authenticated: bool) -> None:
    conf = spark_conf(LocalCatalog(Path("/nonexistent"), master=master), DeltaJars(()))
    assert conf.get("spark.authenticate") == ("true" if authenticated else None)
    assert "spark.authenticate.secret" not in conf  # Spark's own, never in a setting (nor on a command line)


def test_a_project_may_still_turn_authentication_off() -> None:
    conf = spark_conf(LocalCatalog(Path("/nonexistent"), conf={"spark.authenticate": "false"}), DeltaJars(()))
    assert conf["spark.authenticate"] == "false"
