"""The documentation's text, for the tests that check its examples: the README and the pages under docs/ as they
are written (the reference pages are generated when the site is built, by docs/hooks/reference.py, and are not
files; a `--8<--` include is left as it is, so an example the README holds is read from the README)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"


def readme() -> str:
    return (REPO / "README.md").read_text(encoding="utf-8")


def page(name: str) -> str:
    """One page of docs/, e.g. `python-api.md`."""
    return (DOCS / name).read_text(encoding="utf-8")


def pages() -> list[Path]:
    """Every page written under docs/, in name order."""
    return sorted(DOCS.rglob("*.md"))


def all_text() -> str:
    """The README, then every page of docs/: all the documentation's examples."""
    return "\n".join([readme(), *(p.read_text(encoding="utf-8") for p in pages())])


def readme_section(name: str) -> str:
    """The part of the README between its `--8<-- [start:name]` and `[end:name]` markers, which the site's pages
    include."""
    text = readme()
    start = re.search(rf"<!-- --8<-- \[start:{name}\] -->\n", text)
    end = re.search(rf"<!-- --8<-- \[end:{name}\] -->", text)
    assert start is not None, f"README.md has no section {name}"
    assert end is not None, f"README.md's section {name} has no end"
    return text[start.end() : end.start()]


def section(text: str, heading: str) -> str:
    """From the heading that starts with `heading` (e.g. `## Lint`) to the next heading of its level or above,
    code blocks aside (a `# comment` in a YAML block is no heading)."""
    level = len(heading) - len(heading.lstrip("#"))
    lines = text.splitlines(keepends=True)
    found: list[str] = []
    fenced = False
    for line in lines:
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if not fenced and not line.lstrip().startswith("```"):
            marks = len(line) - len(line.lstrip("#"))
            is_heading = 0 < marks <= 6 and line[marks : marks + 1] == " "
            if found and is_heading and marks <= level:
                break
            if not found and line.startswith(heading):
                found.append(line)
                continue
        if found:
            found.append(line)
    assert found, f"no heading {heading!r}"
    return "".join(found)
