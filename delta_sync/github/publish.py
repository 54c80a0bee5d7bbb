"""What the workflow publishes of a plan: the comment's body under its hidden marker, the step outputs, the
job summary and the artifact's name. A text over GitHub's limits is cut at a whole line, its open code
fences and <details> blocks closed, with a line saying where the rest is."""

from __future__ import annotations

import json
import re
import secrets
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from delta_sync.github.rest import GitHubError

# GitHub refuses a comment body over 65,536 characters, and does not show a step summary over 1 MiB.
COMMENT_LIMIT = 65_536
SUMMARY_LIMIT = 1024 * 1024
ARTIFACT_PREFIX = "delta-sync-plan"
# The label of a plan made without --env (the project's default environment): in the marker and artifact name.
DEFAULT_LABEL = "default"

_OUTPUT_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
# Characters an artifact name may not hold.
_NOT_IN_ARTIFACT = re.compile(r'["\\/:<>|*?\r\n]')


def size(text: str) -> int:
    """A text's length as GitHub limits it (in characters); UTF-16 code units, never fewer."""
    return len(text.encode("utf-16-le")) // 2


class _Open:
    """The code fence and <details> blocks open after the lines fed so far, and what closes them."""

    def __init__(self) -> None:
        self.fence: str | None = None
        self.details = 0

    def feed(self, line: str) -> None:
        found = _FENCE.match(line)
        if self.fence is not None:
            if found and found.group(1)[0] == self.fence[0] and len(found.group(1)) >= len(self.fence):
                self.fence = None if not found.group(2).strip() else self.fence
            return
        if found:
            self.fence = found.group(1)
            return
        self.details += line.count("<details") - line.count("</details>")

    def closing(self) -> list[str]:
        return ([self.fence] if self.fence else []) + ["", "</details>"] * max(self.details, 0)


def fit(text: str, limit: int, pointer: Callable[[int], str]) -> str:
    """`text` if it is at most `limit` characters long. Else its longest run of whole lines that fits together
    with what closes the code fence and <details> blocks left open and `pointer(lines left out)`: a line
    saying where the rest is. Never cuts a line."""
    if size(text) <= limit:
        return text
    lines = text.splitlines()
    state = _Open()
    kept, closing, used = 0, [], 0
    for number, line in enumerate(lines, start=1):
        state.feed(line)
        used += size(line) + 1
        ends = state.closing()
        if used + sum(size(end) + 1 for end in ends) + 1 + size(pointer(len(lines) - number)) + 1 > limit:
            break
        kept, closing = number, ends
    result = "\n".join([*lines[:kept], *closing, "", pointer(len(lines) - kept)]) + "\n"
    if kept == 0:
        result = pointer(len(lines)) + "\n"
    if size(result) > limit:
        raise GitHubError(f"even the note that the text is cut is over {limit} characters")
    return result


def artifact_name(env: str) -> str:
    label = _NOT_IN_ARTIFACT.sub("-", env.strip()) or DEFAULT_LABEL
    return f"{ARTIFACT_PREFIX}-{label}"


def label(env: str) -> str:
    return env.strip() or DEFAULT_LABEL


def marker(env: str) -> str:
    return f"<!-- delta-sync plan: {label(env)} -->"


def run_url(environ: Mapping[str, str]) -> str | None:
    server, repo, run = (environ.get(k) for k in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID"))
    return f"{server.rstrip('/')}/{repo}/actions/runs/{run}" if server and repo and run else None


def comment_body(
    mark: str,
    markdown: str,
    exit_code: int,
    *,
    artifact: str | None = None,
    run: str | None = None,
    head_sha: str | None = None,
    limit: int = COMMENT_LIMIT,
) -> str:
    """The marker, the plan (or, when delta-sync failed, a pointer to the log: its messages may hold what
    the log masks, such as a connection string, and a comment masks nothing), a footer; at most `limit`."""
    the_run = f"[the workflow run]({run})" if run else "the workflow run"
    if exit_code == 1 or not markdown.strip():
        markdown = (
            f"**delta-sync plan failed** (exit code {exit_code}): nothing was planned. "
            f"Its messages are in the log of {the_run}.\n"
        )
    footer = " · ".join(
        part
        for part in (
            f"commit `{head_sha[:7]}`" if head_sha else "",
            f"[workflow run]({run})" if run else "",
            f"plan artifact `{artifact}`" if artifact else "",
        )
        if part
    )
    tail = f"\n<sub>{footer}</sub>\n" if footer else ""
    where = f"the plan artifact `{artifact}` of {the_run}" if artifact else f"the log of {the_run}"

    def pointer(left_out: int) -> str:
        return (
            f"**The plan is cut here** ({left_out} more line{'s' if left_out != 1 else ''}, over GitHub's "
            f"{limit:,}-character comment limit): the whole plan is in {where}."
        )

    room = limit - size(f"{mark}\n") - size(tail)
    text = fit(markdown.rstrip() + "\n", room, pointer)
    return f"{mark}\n{text}{tail}"


def write_outputs(values: Mapping[str, str], path: str | None) -> None:
    """`key=value` lines, in the file GitHub Actions reads them from (on stdout without one); a value with a
    line break in the `key<<DELIMITER` form, with a delimiter the value does not hold."""
    parts = []
    for key, value in values.items():
        if not _OUTPUT_KEY.match(key):
            raise GitHubError(f"output name {key!r} is not a valid name")
        if "\n" in value or "\r" in value:
            delimiter = f"ghadelimiter_{secrets.token_hex(16)}"
            while delimiter in value:
                delimiter = f"ghadelimiter_{secrets.token_hex(16)}"
            parts.append(f"{key}<<{delimiter}\n{value}\n{delimiter}\n")
        else:
            parts.append(f"{key}={value}\n")
    if not path:
        sys.stdout.write("".join(parts))
        return
    try:
        with open(path, "a", encoding="utf-8") as file:
            file.write("".join(parts))
    except OSError as error:
        raise GitHubError(f"cannot write the outputs to {path}: {error.strerror}") from None


def plan_outputs(exit_code: int, plan_file: Path, env: str) -> dict[str, str]:
    """A plan's outputs, from its exit code and the plan file (`--out`) it saved, if it saved one."""
    document: dict[str, Any] | None = None
    if plan_file.is_file():
        try:
            loaded = json.loads(plan_file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise GitHubError(f"{plan_file}: not a readable plan file: {error}") from None
        if not isinstance(loaded, dict) or not isinstance(loaded.get("plan_id"), str):
            raise GitHubError(f"{plan_file}: not a delta-sync plan file (no plan_id)")
        document = loaded
    elif exit_code in (0, 2, 3):
        raise GitHubError(
            f"{plan_file}: no such file, yet delta-sync exited {exit_code}: was it given --out {plan_file}?"
        )
    if document is None:
        has_changes, blocked = exit_code == 2, exit_code == 3
    else:
        actions = document.get("actions") or []
        has_changes = any(isinstance(a, dict) and a.get("kind") != "Notice" for a in actions)
        blocked = exit_code == 3 or document.get("blocked") is True
    return {
        "exit-code": str(exit_code),
        "plan-id": document["plan_id"] if document else "",
        "has-changes": "true" if has_changes else "false",
        "blocked": "true" if blocked else "false",
        "environment": label(env),
        "artifact-name": artifact_name(env),
        "plan-file": str(plan_file.resolve()) if document else "",
    }


def append_summary(markdown: str, path: str, run: str | None) -> None:
    where = f"[the workflow run]({run})" if run else "the workflow run"

    def pointer(left_out: int) -> str:
        return f"**The plan is cut here** ({left_out} more lines): the whole plan is in the plan artifact of {where}."

    # Bytes: GitHub's step summary limit is 1 MiB; a character takes at most 4 bytes of UTF-8.
    text = fit(markdown, SUMMARY_LIMIT // 4, pointer) if len(markdown.encode()) > SUMMARY_LIMIT else markdown
    try:
        with open(path, "a", encoding="utf-8") as file:
            file.write(text if text.endswith("\n") else text + "\n")
    except OSError as error:
        raise GitHubError(f"cannot write the job summary to {path}: {error.strerror}") from None
