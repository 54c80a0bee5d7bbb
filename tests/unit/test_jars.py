from __future__ import annotations

import json
import os
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from delta_sync.model.errors import SetupError
from delta_sync.spark import jars
from delta_sync.spark import jars as jars_mod
from delta_sync.spark.jars import (
    DELTA_ARTIFACT,
    FETCHING_MESSAGE,
    MANIFEST_NAME,
    DeltaJars,
    artifact_id,
    cache_dir,
    delta_jars,
)

# Stands in for mvn: reads the Delta version out of the POM it is given and behaves like Maven
# Central does today (4.4.1 missing, 4.4.0 present) unless FAKE_MVN_MODE says otherwise.
FAKE_MVN = """\
import os, sys, time, xml.etree.ElementTree as ET

args = sys.argv[1:]
pom = args[args.index("-f") + 1]
out = next(a.split("=", 1)[1] for a in args if a.startswith("-DoutputDirectory="))
ns = {"m": "http://maven.apache.org/POM/4.0.0"}
version = ET.parse(pom).getroot().find("m:dependencies/m:dependency/m:version", ns).text
mode = os.environ.get("FAKE_MVN_MODE", "central")
with open(os.environ["FAKE_MVN_CALLS"], "a") as calls:
    calls.write(version + "\\n")
print("[INFO] chatter that must not reach the terminal")
time.sleep(float(os.environ.get("FAKE_MVN_SLEEP", "0")))
if mode == "fail" or (mode == "central" and version == "4.4.1"):
    print("\\x1b[0m[ERROR] Failed to execute goal on project delta-sync-jars: Could not resolve "
          "dependencies: Could not find artifact io.delta:delta-spark_4.2_2.13:jar:" + version
          + " in central (https://repo.maven.apache.org/maven2) -> [Help 1]")
    print("[ERROR] ")
    print("[ERROR] To see the full stack trace of the errors, re-run Maven with the -e switch.")
    print("[ERROR] Re-run Maven using the -X switch to enable full debug logging.")
    print("[ERROR] [Help 1] http://cwiki.apache.org/confluence/display/MAVEN/DependencyResolutionException")
    sys.exit(1)
os.makedirs(out, exist_ok=True)
for name in [
    "delta-spark_4.2_2.13-" + version + ".jar",
    "delta-storage-" + version + ".jar",
    "jackson-core-2.13.5.jar",
    "hadoop-client-runtime-3.4.2.jar",
    "jackson-datatype-jdk8-2.13.5.jar",
    "shims-0.9.25.jar",
]:
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
    """Put the fake mvn alone on PATH; returns the file it logs each requested version to."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    mvn = bin_dir / "mvn"
    mvn.write_text(f"#!{sys.executable}\n{FAKE_MVN}", encoding="utf-8")
    mvn.chmod(0o755)
    call_log = tmp_path / "mvn-calls.txt"
    call_log.touch()
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("FAKE_MVN_CALLS", str(call_log))
    monkeypatch.delenv("FAKE_MVN_MODE", raising=False)
    monkeypatch.delenv("FAKE_MVN_SLEEP", raising=False)
    return call_log


def versions_requested(call_log: Path) -> list[str]:
    return call_log.read_text(encoding="utf-8").split()


def names(result: DeltaJars) -> set[str]:
    return {jar.name for jar in result.jars}


def test_first_call_fetches_falls_back_to_published_version_and_filters(
    calls: Path, cache: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    statuses: list[str] = []

    result = delta_jars(statuses.append)

    assert statuses == [FETCHING_MESSAGE]
    assert versions_requested(calls) == ["4.4.1", "4.4.0"]
    assert result.version == "4.4.0"
    assert result.packages is None
    # jackson-core and hadoop-client-runtime are in pyspark's own jars; shims is RoaringBitmap's.
    assert names(result) == {
        "delta-spark_4.2_2.13-4.4.0.jar",
        "delta-storage-4.4.0.jar",
        "jackson-datatype-jdk8-2.13.5.jar",
    }
    folder = cache / "jars" / "delta-spark_4.2_2.13-4.4.0"
    assert all(jar.parent == folder and jar.is_file() for jar in result.jars)
    assert sorted(os.listdir(folder)) == sorted([*names(result), MANIFEST_NAME])
    manifest = json.loads((folder / MANIFEST_NAME).read_text(encoding="utf-8"))
    assert set(manifest["jars"]) == names(result)
    assert not list((cache / "jars").glob(".tmp-*"))
    assert "Could not find artifact" in (cache / "logs" / "mvn-4.4.1.log").read_text(encoding="utf-8")
    out, err = capfd.readouterr()
    assert "chatter" not in out + err


def test_second_call_uses_cache_without_mvn(calls: Path, cache: Path) -> None:
    first = delta_jars()
    calls.write_text("", encoding="utf-8")
    statuses: list[str] = []

    second = delta_jars(statuses.append)

    assert second == first
    assert versions_requested(calls) == []
    assert statuses == []


def test_cache_prefers_first_candidate_version(calls: Path, cache: Path) -> None:
    for version in ("4.4.0", "4.4.1"):
        folder = cache / "jars" / f"{DELTA_ARTIFACT}-{version}"
        folder.mkdir(parents=True)
        jar = f"{DELTA_ARTIFACT}-{version}.jar"
        (folder / jar).write_text("fake", encoding="utf-8")
        (folder / MANIFEST_NAME).write_text(json.dumps({"jars": [jar]}), encoding="utf-8")

    result = delta_jars()

    assert result.version == "4.4.1"
    assert versions_requested(calls) == []


def test_spark_conf_lists_jars(calls: Path, cache: Path) -> None:
    result = delta_jars()

    conf = result.spark_conf()

    assert list(conf) == ["spark.jars"]
    assert sorted(conf["spark.jars"].split(",")) == sorted(str(jar) for jar in result.jars)


def test_every_version_failing_raises_one_clear_setup_error(
    calls: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_MVN_MODE", "fail")

    with pytest.raises(SetupError) as caught:
        delta_jars()

    message = str(caught.value)
    log = cache / "logs" / "mvn-4.4.0.log"
    assert "Could not find artifact io.delta:delta-spark_4.2_2.13:jar:4.4.0" in message
    assert str(log) in message
    assert "~/.m2/settings.xml" in message
    assert "DELTA_SYNC_JARS" in message
    for noise in ("Traceback", 'File "', "[Help 1]", "re-run Maven", "\x1b["):
        assert noise not in message
    assert caught.value.__cause__ is None
    assert caught.value.__suppress_context__
    assert versions_requested(calls) == ["4.4.1", "4.4.0"]
    assert not (cache / "jars" / "delta-spark_4.2_2.13-4.4.0").exists()
    assert not list((cache / "jars").glob(".tmp-*"))


def test_hung_mvn_is_stopped(calls: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_MVN_SLEEP", "30")
    monkeypatch.setattr(jars_mod, "MVN_TIMEOUT_SECONDS", 0.5)
    started = time.monotonic()

    with pytest.raises(SetupError, match=r"did not finish within 0\.5 seconds"):
        delta_jars()

    assert time.monotonic() - started < 10


def test_without_mvn_spark_resolves_packages(tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    statuses: list[str] = []

    result = delta_jars(statuses.append)

    assert result.jars == ()
    assert result.packages == "io.delta:delta-spark_4.2_2.13:4.4.0"
    assert result.version == "4.4.0"
    conf = result.spark_conf()
    assert conf.pop("spark.jars.excludes").split(",") == list(jars.SHIPPED_BY_PYSPARK)
    assert conf == {
        "spark.jars.packages": "io.delta:delta-spark_4.2_2.13:4.4.0",
        "spark.jars.ivy": str(cache / "ivy"),
    }
    assert len(statuses) == 1
    assert "Maven" in statuses[0]
    assert "not installed" in statuses[0]


def test_delta_sync_jars_override_is_used_as_is(tmp_path: Path, calls: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "my-jars"
    folder.mkdir()
    for name in ("delta-spark_4.2_2.13-4.4.0.jar", "jackson-core-2.13.5.jar", "notes.txt"):
        (folder / name).write_text("fake", encoding="utf-8")
    monkeypatch.setenv("DELTA_SYNC_JARS", str(folder))

    result = delta_jars()

    assert names(result) == {"delta-spark_4.2_2.13-4.4.0.jar", "jackson-core-2.13.5.jar"}
    assert result.version == "4.4.0"
    assert versions_requested(calls) == []


def test_delta_sync_jars_without_delta_spark_is_rejected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "my-jars"
    folder.mkdir()
    (folder / "delta-storage-4.4.0.jar").write_text("fake", encoding="utf-8")
    monkeypatch.setenv("DELTA_SYNC_JARS", str(folder))

    with pytest.raises(SetupError, match=r"DELTA_SYNC_JARS.*no delta-spark_4\.2_2\.13"):
        delta_jars()


def test_incomplete_cache_is_ignored_and_refetched(calls: Path, cache: Path) -> None:
    half_done = cache / "jars" / "delta-spark_4.2_2.13-4.4.0"
    half_done.mkdir(parents=True)
    (half_done / "delta-spark_4.2_2.13-4.4.0.jar").write_text("truncated", encoding="utf-8")
    (cache / "jars" / ".tmp-crashed").mkdir()

    result = delta_jars()

    assert versions_requested(calls) == ["4.4.1", "4.4.0"]
    assert (half_done / MANIFEST_NAME).is_file()
    assert "delta-storage-4.4.0.jar" in names(result)
    assert not (cache / "jars" / ".tmp-crashed").exists()


def test_manifest_naming_a_missing_jar_is_refetched(calls: Path, cache: Path) -> None:
    first = delta_jars()
    next(jar for jar in first.jars if jar.name.startswith("delta-storage")).unlink()
    calls.write_text("", encoding="utf-8")

    second = delta_jars()

    assert versions_requested(calls) == ["4.4.1", "4.4.0"]
    assert all(jar.is_file() for jar in second.jars)


def test_concurrent_fetches_run_mvn_once(calls: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_MVN_SLEEP", "0.3")

    # flock locks belong to the open file description, so threads contend just like processes.
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda _: delta_jars(), range(2)))

    assert results[0] == results[1]
    assert versions_requested(calls) == ["4.4.1", "4.4.0"]


def test_cache_dir_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DELTA_SYNC_CACHE", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "delta-sync"

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "delta-sync"

    monkeypatch.setenv("DELTA_SYNC_CACHE", str(tmp_path / "explicit"))
    assert cache_dir() == tmp_path / "explicit"


@pytest.mark.parametrize(
    ("jar", "expected"),
    [
        ("hadoop-client-runtime-3.4.2.jar", "hadoop-client-runtime"),
        ("zstd-jni-1.5.7-3.jar", "zstd-jni"),
        ("delta-spark_4.2_2.13-4.4.0.jar", "delta-spark_4.2_2.13"),
        ("log4j-1.2-api-2.25.4.jar", "log4j-1.2-api"),
        ("hive-shims-0.23-2.3.10.jar", "hive-shims-0.23"),
        ("netty-transport-native-epoll-4.2.13.Final-linux-x86_64.jar", "netty-transport-native-epoll"),
        ("hive-exec-2.3.10-core.jar", "hive-exec"),
        ("guava-33.6.0-jre.jar", "guava"),
        ("javax.annotation-api-1.3.2.jar", "javax.annotation-api"),
        ("RoaringBitmap-0.9.25.jar", "RoaringBitmap"),
        ("shims-0.9.25.jar", "shims"),
        ("json-20231013.jar", "json"),
        ("connect-repl.jar", "connect-repl"),
    ],
)
def test_artifact_id(jar: str, expected: str) -> None:
    assert artifact_id(jar) == expected


@pytest.mark.spark
def test_real_maven_fetch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if shutil.which("mvn") is None:
        pytest.skip("mvn is not installed")
    monkeypatch.setenv("DELTA_SYNC_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("DELTA_SYNC_JARS", raising=False)

    result = delta_jars()

    artifacts = {artifact_id(jar.name) for jar in result.jars}
    assert DELTA_ARTIFACT in artifacts
    assert {"delta-storage", "delta-kernel-api", "delta-kernel-defaults"} <= artifacts
    assert all(jar.is_file() for jar in result.jars)
    assert not artifacts & jars_mod._pyspark_artifacts()

    # Offline afterwards: with mvn gone from PATH it would otherwise fall back to packages.
    monkeypatch.setenv("PATH", str(tmp_path))
    assert delta_jars() == result
