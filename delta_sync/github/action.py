"""The GitHub side of the packaged review workflow (`action.yml`); the standard library only.

- `comment`: posts the Markdown plan on the pull request, or edits the comment that starts with the same hidden
  marker (`<!-- delta-sync plan: ci -->`), so that every push updates one comment per environment;
- `outputs`: a plan's step outputs (exit code, plan id, whether it has changes, whether it is blocked), and its
  Markdown in the job summary;
- `find-plan-run`: after a merge, the workflow run of the merged pull request whose artifact holds its plan.

The API is GITHUB_API_URL's (tests point it at a local server), the repository GITHUB_REPOSITORY's, the token
GITHUB_TOKEN's (else GH_TOKEN's). Outputs go to the file GITHUB_OUTPUT names. Every failure is one line on
stderr and exit code 1, never a traceback: `python -m delta_sync.github comment --marker ... --body-file plan.md`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from delta_sync.github.publish import (
    COMMENT_LIMIT,
    append_summary,
    artifact_name,
    comment_body,
    plan_outputs,
    run_url,
    write_outputs,
)
from delta_sync.github.rest import DEFAULT_API_URL, GitHub, GitHubError, find_plan_run, upsert_comment

_MARKER = re.compile(r"^<!--[^\n]*-->$")


# --- the event, the environment ----------------------------------------------------------------------------


def read_event(environ: Mapping[str, str]) -> dict[str, Any]:
    path = environ.get("GITHUB_EVENT_PATH")
    if not path:
        raise GitHubError("GITHUB_EVENT_PATH is not set: run this in GitHub Actions, or give --pr")
    try:
        event = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise GitHubError(f"the event file {path}: {error.strerror}") from None
    except ValueError:
        raise GitHubError(f"the event file {path} is not JSON") from None
    if not isinstance(event, dict):
        raise GitHubError(f"the event file {path} is not a JSON object")
    return event


def pull_request_of(event: Mapping[str, Any]) -> dict[str, Any]:
    """The event's pull request (pull_request, pull_request_target; issue_comment on a pull request)."""
    pull = event.get("pull_request")
    issue = event.get("issue")
    if not isinstance(pull, dict) and isinstance(issue, dict) and issue.get("pull_request"):
        pull = issue
    if not isinstance(pull, dict) or not isinstance(pull.get("number"), int):
        raise GitHubError("the event is not about a pull request (no pull_request.number): nothing to comment on")
    return pull


def from_fork(pull: Mapping[str, Any]) -> bool:
    def repo(side: str) -> object:
        part = pull.get(side)
        found = part.get("repo") if isinstance(part, dict) else None
        return found.get("full_name") if isinstance(found, dict) else None

    return "head" in pull and repo("head") != repo("base")


def client(environ: Mapping[str, str]) -> GitHub:
    token = environ.get("GITHUB_TOKEN") or environ.get("GH_TOKEN")
    if not token:
        raise GitHubError("no token: set GITHUB_TOKEN (the action passes its github-token input)")
    repository = environ.get("GITHUB_REPOSITORY")
    if not repository:
        raise GitHubError("GITHUB_REPOSITORY is not set: run this in GitHub Actions")
    return GitHub(environ.get("GITHUB_API_URL") or DEFAULT_API_URL, repository, token)


def _read_text(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""
    except (OSError, UnicodeDecodeError) as error:
        raise GitHubError(f"{what} {path}: {error}") from None


# --- the command line ---------------------------------------------------------------------------------------


def _comment(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    if not _MARKER.match(args.marker):
        raise GitHubError(f"--marker {args.marker!r}: must be one line, an HTML comment (<!-- ... -->), to stay hidden")
    event = {} if args.pr is not None else read_event(environ)
    pull = {"number": args.pr} if args.pr is not None else pull_request_of(event)
    if not args.body_file.is_file() and args.exit_code != 1:
        raise GitHubError(f"--body-file {args.body_file}: no such file")
    head = pull.get("head")
    body = comment_body(
        args.marker,
        _read_text(args.body_file, "--body-file"),
        args.exit_code,
        artifact=args.artifact or None,
        run=run_url(environ),
        head_sha=str(head.get("sha") or "") if isinstance(head, dict) else None,
        limit=args.limit,
    )
    github = client(environ)
    try:
        posted = upsert_comment(github, int(pull["number"]), args.marker, body)
    except GitHubError as error:
        if error.status == 403 and from_fork(pull):
            # A fork's pull request gets a read-only token: the plan stays in the job summary and the artifact.
            print(f"::warning title=delta-sync::not commented on #{pull['number']}, from a fork: {error}")
            return 0
        raise
    write_outputs(
        {"comment-id": str(posted.id), "comment-url": posted.url, "comment-action": posted.action},
        environ.get("GITHUB_OUTPUT"),
    )
    print(f"delta-sync: {posted.action} the plan comment on #{pull['number']}: {posted.url or posted.id}")
    return 0


def _outputs(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    values = plan_outputs(args.exit_code, args.plan_file, args.env)
    write_outputs(values, environ.get("GITHUB_OUTPUT"))
    summary = environ.get("GITHUB_STEP_SUMMARY")
    if args.markdown_file is not None and summary:
        markdown = _read_text(args.markdown_file, "--markdown-file")
        if markdown.strip():
            append_summary(markdown, summary, run_url(environ))
    return 0


def _find_plan_run(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    sha = args.sha or environ.get("GITHUB_SHA")
    if not sha and args.pr is None:
        raise GitHubError("no commit: give --sha (the merge commit) or --pr, or set GITHUB_SHA")
    found = find_plan_run(
        client(environ),
        sha or "",
        artifact_name(args.env),
        workflow=args.workflow or None,
        pull_request=args.pr,
        event=args.event,
    )
    write_outputs(found, environ.get("GITHUB_OUTPUT"))
    print(
        f"delta-sync: the plan of pull request #{found['pr-number']} is artifact {found['artifact-name']} "
        f"of run {found['run-id']}"
    )
    return 0


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise GitHubError(f"{self.prog}: {message}")


def parser() -> argparse.ArgumentParser:
    top = _Parser(prog="python -m delta_sync.github", description=__doc__.split("\n\n")[0] if __doc__ else None)
    commands = top.add_subparsers(dest="command", required=True)

    comment = commands.add_parser("comment", help="Post the plan on the pull request, or edit the one posted.")
    comment.add_argument("--marker", required=True, help="The hidden first line: <!-- delta-sync plan: ENV -->.")
    comment.add_argument("--body-file", required=True, type=Path, help="The Markdown plan (plan --format markdown).")
    comment.add_argument("--exit-code", type=int, default=0, help="delta-sync plan's exit code (1: it failed).")
    comment.add_argument("--artifact", default="", help="The artifact holding the plan, named when the text is cut.")
    comment.add_argument("--pr", type=int, help="The pull request (default: the event's).")
    comment.add_argument("--limit", type=int, default=COMMENT_LIMIT, help=argparse.SUPPRESS)
    comment.set_defaults(run=_comment)

    outputs = commands.add_parser("outputs", help="Write a plan's step outputs (and its job summary).")
    outputs.add_argument("--plan-file", required=True, type=Path, help="The file plan --out saved.")
    outputs.add_argument("--exit-code", required=True, type=int, help="delta-sync plan's exit code.")
    outputs.add_argument("--env", default="", help="The env input (empty: the project's default).")
    outputs.add_argument("--markdown-file", type=Path, help="The Markdown plan, for the job summary.")
    outputs.set_defaults(run=_outputs)

    find = commands.add_parser("find-plan-run", help="The run whose artifact holds a merged pull request's plan.")
    find.add_argument("--sha", default="", help="The merge commit (default: GITHUB_SHA).")
    find.add_argument("--pr", type=int, help="The pull request, instead of the one merged as --sha.")
    find.add_argument("--env", default="", help="The env input the plan was made with.")
    find.add_argument("--workflow", default="", help="The plan workflow's file name or id (default: any).")
    find.add_argument("--event", default="pull_request", help="The plan runs' event (default: pull_request).")
    find.set_defaults(run=_find_plan_run)
    return top


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    env = os.environ if environ is None else environ
    try:
        args = parser().parse_args(argv)
        code: int = args.run(args, env)
        return code
    except GitHubError as error:
        print(f"delta-sync github: {error}", file=sys.stderr)
    except Exception as error:  # never a traceback in a CI log: one line, whatever it was
        print(f"delta-sync github: unexpected {type(error).__name__}: {' '.join(str(error).split())}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
