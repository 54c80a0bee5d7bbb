"""The documentation site builds with `mkdocs build --strict`, as CI builds it: a broken link or anchor, a page
left out of the navigation, a failed include or a docstring mkdocstrings cannot render is a warning, and a
warning fails the build. No JVM: the reference pages are generated from the code offline (docs/hooks/reference.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import typer.main

from delta_sync.cli.main import app

REPO = Path(__file__).resolve().parents[2]


def test_the_site_builds_strictly_with_every_page(tmp_path: Path) -> None:
    site = tmp_path / "site"
    environment = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "NO_COLOR": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "WARNING" not in output, output

    def page(path: str) -> str:
        return (site / path / "index.html").read_text(encoding="utf-8")

    # The README's set-up and 30-second example, included in Getting started, not copied.
    started = page("getting-started")
    assert "Python 3.11, Java 17 and Maven on a fresh machine" in started
    assert "Add a column, change a comment, a property or a check" in started
    assert "--8&lt;--" not in started
    if "graph" in getattr(typer.main.get_command(app), "commands", {}):
        # The example project's diagram, drawn by `delta-sync graph specs/` when the site is built.
        assert '<pre class="mermaid"><code>erDiagram' in started
    # ARCHITECTURE.md, DECISIONS.md and BENCHMARKS.md, included.
    assert "The folders, lowest first" in page("architecture")
    assert "<h1" in page("decisions")
    assert "Kill soak" in page("benchmarks")
    # The generated reference pages.
    assert "delta-sync plan" in page("reference/cli")
    assert "renamed_from" in page("reference/spec-files")
    assert "statement_timeout" in page("reference/project-file")
    assert "data-dependent" in page("reference/hazards")
    assert "130" in page("reference/exit-codes")
    python = page("reference/python")
    assert 'id="delta_sync.apply"' in python
    assert 'id="delta_sync.ReviewedPlan"' in python
