"""Without Maven, Spark resolves Delta itself; when that fails too, one sentence says what to install."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def path_without_mvn(tmp_path: Path) -> str:
    """PATH with everything in /usr/bin except mvn (Debian's /bin is /usr/bin)."""
    farm = tmp_path / "bin"
    farm.mkdir()
    for tool in Path("/usr/bin").iterdir():
        if tool.name != "mvn":
            (farm / tool.name).symlink_to(tool)
    return os.pathsep.join([str(farm), str(Path(sys.executable).parent)])


def plan(tmp_path: Path, path: str, extra_env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    project = tmp_path / "project"
    (project / "specs").mkdir(parents=True)
    (project / "specs" / "t.yaml").write_text("table: s.t\ncolumns:\n  - name: id\n    type: bigint\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DELTA_SYNC")}
    env.update(PATH=path, DELTA_SYNC_CACHE=str(tmp_path / "cache"), COLUMNS="200", **extra_env)
    return subprocess.run(
        [sys.executable, "-m", "delta_sync", "plan", "specs"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_without_maven_spark_resolves_the_jars_itself(tmp_path: Path, path_without_mvn: str) -> None:
    done = plan(tmp_path, path_without_mvn, {})
    assert done.returncode == 0, done.stderr
    assert "+ create table s.t" in done.stdout
    assert ":: resolving" not in done.stderr + done.stdout


def test_without_maven_or_repository_one_clear_message(tmp_path: Path, path_without_mvn: str) -> None:
    empty_home = tmp_path / "home"
    empty_home.mkdir()
    done = plan(
        tmp_path,
        path_without_mvn,
        # Ivy's local-m2 resolver follows the JVM's user.home; Central is replaced by a dead URL.
        {
            "SPARK_SUBMIT_OPTS": f"-Duser.home={empty_home}",
            "DEFAULT_ARTIFACT_REPOSITORY": "file:///nonexistent/",
        },
    )
    assert done.returncode == 1
    # Progress lines (`[  0.4s] Reading the catalog...`) aside, one line.
    lines = [line for line in done.stderr.strip().splitlines() if not re.match(r"\[\s*\d+\.\d+s\] ", line)]
    assert len(lines) == 1, done.stderr
    assert "Maven (`mvn`) is not installed" in lines[0]
    assert "apt-get install maven" in lines[0]
    assert "Traceback" not in done.stderr
