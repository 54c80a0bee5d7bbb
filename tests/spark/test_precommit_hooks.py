"""The pre-commit hook as a user's repository runs it: `pre-commit try-repo <this repository>
delta-sync-validate --files ...` in a temporary git repository holding a good and a bad spec.

No JVM starts (validate reads files only); the test is slow because pre-commit builds the hook's virtualenv
and pip-installs this package into it, pyspark (~450 MB) included, once per try-repo run (try-repo keeps its
virtualenvs in a temporary folder of its own; pip's cache makes the second one faster).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BAD_SPEC = """\
table: shop.broken
columns:
  - name: id
    type: bigintt
"""


def git(*args: str, cwd: Path) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True, timeout=120)
    return done.stdout


def commit_all(root: Path) -> None:
    git("init", "-q", cwd=root)
    git("add", "-A", cwd=root)
    author = ["-c", "user.name=delta-sync tests", "-c", "user.email=tests@delta-sync.invalid"]
    git(*author, "commit", "-q", "--no-verify", "-m", "snapshot", cwd=root)


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This working tree (tracked files as they are now, and new files not ignored) as a clean git repository.
    try-repo of a folder with uncommitted changes takes the tracked files' changes only, so a new
    .pre-commit-hooks.yaml, or a new module, would be missing from what it installs."""
    root = tmp_path_factory.mktemp("delta-sync-repo")
    names = git("ls-files", "--cached", "--others", "--exclude-standard", "-z", cwd=REPO).split("\0")
    for name in filter(None, names):
        source = REPO / name
        if source.is_file():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, root / name)
    assert (root / ".pre-commit-hooks.yaml").is_file()
    commit_all(root)
    return root


@pytest.fixture
def user_repo(tmp_path: Path) -> Path:
    """A user's repository: the example's orders spec, and a spec with a bad type on line 4."""
    root = tmp_path / "warehouse"
    (root / "specs" / "shop").mkdir(parents=True)
    shutil.copy(REPO / "specs" / "shop" / "orders.yaml", root / "specs" / "shop" / "orders.yaml")
    (root / "specs" / "shop" / "broken.yaml").write_text(BAD_SPEC)
    commit_all(root)
    return root


def try_repo(
    hook_repo: Path, user_repo: Path, tmp_path: Path, *files: str
) -> tuple[subprocess.CompletedProcess[str], float]:
    tool = shutil.which("pre-commit", path=str(Path(sys.executable).parent)) or shutil.which("pre-commit")
    assert tool is not None, "pre-commit is in the test dependency group"
    temp = tmp_path / "tmp"
    temp.mkdir(exist_ok=True)
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "PRE_COMMIT_COLOR": "never",
        # try-repo builds the hook's virtualenv under a temporary folder: keep it in this test's.
        "TMPDIR": str(temp),
    }
    started = time.monotonic()
    done = subprocess.run(
        [tool, "try-repo", str(hook_repo), "delta-sync-validate", "--verbose", "--files", *files],
        cwd=user_repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    seconds = time.monotonic() - started
    print(f"pre-commit try-repo {' '.join(files)}: {seconds:.1f}s (exit {done.returncode})")
    return done, seconds


def test_validate_hook_passes_a_good_spec_and_fails_a_bad_one_at_its_line(
    hook_repo: Path, user_repo: Path, tmp_path: Path
) -> None:
    good, _seconds = try_repo(hook_repo, user_repo, tmp_path, "specs/shop/orders.yaml")
    assert good.returncode == 0, good.stdout + good.stderr
    assert "delta-sync validate" in good.stdout
    assert "Passed" in good.stdout
    assert "1 table spec valid." in good.stdout

    # Several files in one run (pass_filenames): the bad one is named at its line, the good one is not.
    bad, _seconds = try_repo(hook_repo, user_repo, tmp_path, "specs/shop/orders.yaml", "specs/shop/broken.yaml")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "Failed" in bad.stdout
    assert "specs/shop/broken.yaml:4:" in bad.stdout
    assert "bigintt" in bad.stdout
    assert "orders.yaml:" not in bad.stdout
    assert "Traceback" not in bad.stdout + bad.stderr
