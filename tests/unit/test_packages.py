"""An environment's extra Maven packages (a catalog's Spark connector): declared in the project
file, fetched with Delta's jars by one Maven run into a cache folder of their own, offline after."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from delta_sync.model.errors import SetupError, SpecError
from delta_sync.spark import jars
from delta_sync.spark.jars import DELTA_ARTIFACT, MANIFEST_NAME, delta_jars, fetch_command, with_packages
from delta_sync.specs.project_file import load_project
from delta_sync.specs.settings import PACKAGES_KEY

UC = "io.unitycatalog:unitycatalog-spark_4.2_2.13:0.6.0"
NS = {"m": "http://maven.apache.org/POM/4.0.0"}

# Stands in for mvn: "resolves" every dependency of the POM it is given (4.4.1 of Delta is missing,
# as on Maven Central), adding what a connector drags in (hadoop-client-runtime, jackson-databind).
FAKE_MVN = """\
import os, sys, xml.etree.ElementTree as ET

args = sys.argv[1:]
pom = args[args.index("-f") + 1]
out = next(a.split("=", 1)[1] for a in args if a.startswith("-DoutputDirectory="))
ns = {"m": "http://maven.apache.org/POM/4.0.0"}
deps = ET.parse(pom).getroot().findall("m:dependencies/m:dependency", ns)
coords = [(d.find("m:artifactId", ns).text, d.find("m:version", ns).text) for d in deps]
with open(os.environ["FAKE_MVN_CALLS"], "a") as calls:
    calls.write(" ".join(f"{a}:{v}" for a, v in coords) + "\\n")
if coords[0][1] == "4.4.1":
    print("[ERROR] Could not find artifact io.delta:delta-spark_4.2_2.13:jar:4.4.1 in central")
    sys.exit(1)
if any(a == "missing" for a, _v in coords):
    print("[ERROR] Could not find artifact com.example:missing:jar:1.0 in central")
    sys.exit(1)
os.makedirs(out, exist_ok=True)
for name in [f"{a}-{v}.jar" for a, v in coords] + ["hadoop-client-runtime-3.4.2.jar", "jackson-databind-2.17.2.jar",
                                                  "unitycatalog-client-0.6.0.jar"]:
    with open(os.path.join(out, name), "w") as jar:
        jar.write("fake")
"""


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("DELTA_SYNC_CACHE", str(root))
    monkeypatch.delenv("DELTA_SYNC_JARS", raising=False)
    return root


@pytest.fixture
def calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: Path) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    mvn = bin_dir / "mvn"
    mvn.write_text(f"#!{sys.executable}\n{FAKE_MVN}", encoding="utf-8")
    mvn.chmod(0o755)
    log = tmp_path / "mvn-calls.txt"
    log.touch()
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("FAKE_MVN_CALLS", str(log))
    return log


def requested(log: Path) -> list[str]:
    return log.read_text(encoding="utf-8").splitlines()


def test_pom_has_delta_first_and_each_package_without_what_pyspark_ships() -> None:
    root = ET.fromstring(jars._pom("4.4.0", [UC]))

    deps = root.findall("m:dependencies/m:dependency", NS)
    assert [(d.findtext("m:groupId", namespaces=NS), d.findtext("m:artifactId", namespaces=NS)) for d in deps] == [
        ("io.delta", DELTA_ARTIFACT),
        ("io.unitycatalog", "unitycatalog-spark_4.2_2.13"),
    ]
    assert [d.findtext("m:version", namespaces=NS) for d in deps] == ["4.4.0", "0.6.0"]
    assert deps[0].find("m:exclusions", NS) is None
    excluded = {
        f"{e.findtext('m:groupId', namespaces=NS)}:{e.findtext('m:artifactId', namespaces=NS)}"
        for e in deps[1].findall("m:exclusions/m:exclusion", NS)
    }
    assert excluded == set(jars.SHIPPED_BY_PYSPARK)
    assert {"org.apache.hadoop:hadoop-client-runtime", "com.fasterxml.jackson.core:jackson-databind"} <= excluded


def test_pom_without_packages_is_unchanged() -> None:
    deps = ET.fromstring(jars._pom("4.4.0")).findall("m:dependencies/m:dependency", NS)
    assert len(deps) == 1


def test_fetch_command_copies_runtime_dependencies(tmp_path: Path) -> None:
    command = fetch_command("mvn", tmp_path / "pom.xml", tmp_path / "out")
    assert command == [
        "mvn",
        "-B",
        "-q",
        "-f",
        str(tmp_path / "pom.xml"),
        "dependency:copy-dependencies",
        f"-DoutputDirectory={tmp_path / 'out'}",
        "-DincludeScope=runtime",
    ]


def test_packages_are_fetched_with_delta_into_their_own_cache_folder_then_used_offline(
    calls: Path, cache: Path
) -> None:
    statuses: list[str] = []

    result = delta_jars(statuses.append, [UC])

    assert requested(calls) == [
        f"{DELTA_ARTIFACT}:4.4.1 unitycatalog-spark_4.2_2.13:0.6.0",
        f"{DELTA_ARTIFACT}:4.4.0 unitycatalog-spark_4.2_2.13:0.6.0",
    ]
    assert statuses == [f"Fetching Delta Lake jars through Maven (first run only) with {UC}..."]
    assert result.version == "4.4.0"
    # What pyspark ships is dropped even when Maven brought it.
    assert {jar.name for jar in result.jars} == {
        f"{DELTA_ARTIFACT}-4.4.0.jar",
        "unitycatalog-spark_4.2_2.13-0.6.0.jar",
        "unitycatalog-client-0.6.0.jar",
    }
    (folder,) = {jar.parent for jar in result.jars}
    assert folder.parent == cache / "jars"
    assert folder.name.startswith(f"{DELTA_ARTIFACT}-4.4.0+")
    manifest = json.loads((folder / MANIFEST_NAME).read_text(encoding="utf-8"))
    assert manifest["packages"] == [UC]

    calls.write_text("", encoding="utf-8")
    assert delta_jars(statuses.append, [UC]) == result
    assert requested(calls) == []
    # Delta alone is another folder (and another fetch).
    alone = delta_jars()
    assert {jar.parent for jar in alone.jars} == {cache / "jars" / f"{DELTA_ARTIFACT}-4.4.0"}
    assert len(requested(calls)) == 2


def test_other_packages_are_another_cache_folder(calls: Path, cache: Path) -> None:
    first = delta_jars(packages=[UC])
    second = delta_jars(packages=[UC, "com.example:extra:1.0"])

    assert {j.parent for j in first.jars} != {j.parent for j in second.jars}
    assert "extra-1.0.jar" in {j.name for j in second.jars}


def test_with_packages_turns_spark_jars_packages_into_spark_jars(calls: Path, cache: Path) -> None:
    conf = {PACKAGES_KEY: f" {UC} ,", "spark.sql.catalog.unity": "io.unitycatalog.spark.UCSingleCatalog"}

    result = with_packages(conf)

    assert PACKAGES_KEY not in result
    assert result["spark.sql.catalog.unity"] == "io.unitycatalog.spark.UCSingleCatalog"
    listed = [Path(p).name for p in result["spark.jars"].split(",")]
    assert f"{DELTA_ARTIFACT}-4.4.0.jar" in listed
    assert "unitycatalog-spark_4.2_2.13-0.6.0.jar" in listed


def test_with_packages_keeps_jars_the_settings_name(calls: Path, cache: Path) -> None:
    result = with_packages({PACKAGES_KEY: UC, "spark.jars": "/opt/mine.jar"})

    assert result["spark.jars"].endswith(",/opt/mine.jar")


def test_with_packages_without_packages_changes_nothing(calls: Path, cache: Path) -> None:
    conf = {"spark.sql.shuffle.partitions": "2"}
    assert with_packages(conf) == conf
    assert requested(calls) == []


def test_with_packages_rejects_what_is_not_a_coordinate(calls: Path, cache: Path) -> None:
    with pytest.raises(SetupError, match=r"`unitycatalog` is not a Maven coordinate"):
        with_packages({PACKAGES_KEY: "unitycatalog"})


def test_without_mvn_spark_resolves_delta_and_the_packages(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))

    result = with_packages({PACKAGES_KEY: UC})

    assert result["spark.jars.packages"] == f"io.delta:{DELTA_ARTIFACT}:4.4.0,{UC}"
    assert "org.apache.hadoop:hadoop-client-runtime" in result["spark.jars.excludes"].split(",")


def test_a_package_maven_cannot_find_is_one_clear_error(calls: Path, cache: Path) -> None:
    with pytest.raises(SetupError) as caught:
        delta_jars(packages=["com.example:missing:1.0"])

    message = str(caught.value)
    assert "with the environment's packages com.example:missing:1.0" in message
    assert "Could not find artifact com.example:missing:jar:1.0" in message
    assert not list((cache / "jars").glob(f"{DELTA_ARTIFACT}-*"))


PROJECT = """\
envs:
  local: {{}}
  uc:
    catalog: unity
    spark:
      conf:
        spark.sql.catalog.unity: io.unitycatalog.spark.UCSingleCatalog
{extra}      packages:
        - {package}
"""


def test_project_packages_travel_in_the_spark_settings(tmp_path: Path) -> None:
    (tmp_path / "delta-sync.yaml").write_text(PROJECT.format(extra="", package=UC))

    env = load_project(tmp_path).env("uc")

    assert env.spark is not None
    assert env.spark.packages == [UC]
    assert env.spark.conf[PACKAGES_KEY] == UC


def test_project_packages_join_those_the_conf_names(tmp_path: Path) -> None:
    extra = f"        {PACKAGES_KEY}: com.example:a:1,{UC}\n"
    (tmp_path / "delta-sync.yaml").write_text(PROJECT.format(extra=extra, package=UC))

    env = load_project(tmp_path).env("uc")

    assert env.spark is not None
    assert env.spark.conf[PACKAGES_KEY] == f"com.example:a:1,{UC}"


def test_project_rejects_a_package_that_is_not_a_coordinate(tmp_path: Path) -> None:
    (tmp_path / "delta-sync.yaml").write_text(PROJECT.format(extra="", package="unitycatalog-spark"))

    with pytest.raises(SpecError) as caught:
        load_project(tmp_path)

    (problem,) = caught.value.problems
    assert problem.line == 9
    assert problem.message == "`unitycatalog-spark` is not a Maven coordinate"
    assert "groupId:artifactId:version" in problem.hint
