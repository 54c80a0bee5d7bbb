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
import secrets
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from email.message import Message
from http.client import HTTPMessage
from pathlib import Path
from typing import IO, Any, NoReturn

from delta_sync.version import __version__

# GitHub refuses a comment body over 65,536 characters, and does not show a step summary over 1 MiB.
COMMENT_LIMIT = 65_536
SUMMARY_LIMIT = 1024 * 1024
DEFAULT_API_URL = "https://api.github.com"
API_VERSION = "2022-11-28"
TIMEOUT = 30.0
ARTIFACT_PREFIX = "delta-sync-plan"
# The label of a plan made without --env (the project's default environment): in the marker and artifact name.
DEFAULT_LABEL = "default"

_LINK = re.compile(r'<([^>]*)>\s*;\s*rel="([^"]*)"')
_OUTPUT_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_MARKER = re.compile(r"^<!--[^\n]*-->$")
# Characters an artifact name may not hold.
_NOT_IN_ARTIFACT = re.compile(r'["\\/:<>|*?\r\n]')


class GitHubError(Exception):
    """What went wrong, in one line; `status` is the HTTP status when GitHub answered with an error."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(" ".join(message.split()))
        self.status = status


# --- the REST API --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Response:
    data: Any
    link: str | None


def _origin(url: str) -> tuple[str, str]:
    parts = urllib.parse.urlsplit(url)
    return parts.scheme.lower(), parts.netloc.lower()


class _SameOriginRedirects(urllib.request.HTTPRedirectHandler):
    """Follows a redirect on the API's own host only: the token is never sent anywhere else."""

    def redirect_request(
        self, req: urllib.request.Request, fp: IO[bytes], code: int, msg: str, headers: HTTPMessage, newurl: str
    ) -> urllib.request.Request | None:
        if _origin(newurl) != _origin(req.full_url):
            return None
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def _hint(status: int, method: str, headers: Message[str, str] | None) -> str:
    if status == 401:
        return "the token is missing, expired or wrong: check the action's github-token input"
    if status == 403 and headers is not None and headers.get("x-ratelimit-remaining") == "0":
        return "the token's API rate limit is used up; run the job again later"
    if status == 403 and method != "GET":
        return (
            "the token may not write here: the workflow needs `permissions: pull-requests: write` "
            "(a pull request from a fork gets a read-only token)"
        )
    if status == 403:
        return "the token may not read this: the workflow needs `permissions: actions: read, pull-requests: read`"
    if status == 404:
        return "no such repository, pull request, comment or run, or the token cannot see it"
    return ""


def _error_message(what: str, error: urllib.error.HTTPError) -> str:
    try:
        answer = json.loads(error.read() or b"null")
    except (ValueError, OSError):
        answer = None
    message = answer.get("message") if isinstance(answer, dict) else None
    details = [
        str(item.get("message") or item.get("code"))
        for item in ((answer.get("errors") or []) if isinstance(answer, dict) else [])
        if isinstance(item, dict) and (item.get("message") or item.get("code"))
    ]
    text = f"{what}: {error.code} {message or error.reason}"
    text += "".join(f"; {detail}" for detail in details)
    hint = _hint(error.code, what.split(" ", 1)[0], error.headers)
    return f"{text} ({hint})" if hint else text


def next_link(header: str | None) -> str | None:
    """The `rel="next"` URL of a Link header, if any."""
    for found in _LINK.finditer(header or ""):
        if "next" in found.group(2).split():
            return found.group(1)
    return None


class GitHub:
    """The few REST calls the workflow needs, against `api_url` (GitHub's, or a test's local server)."""

    def __init__(self, api_url: str, repository: str, token: str, timeout: float = TIMEOUT) -> None:
        if not re.fullmatch(r"[\w.-]+/[\w.-]+", repository):
            raise GitHubError(f"repository {repository!r} is not owner/name")
        self.api_url = api_url.rstrip("/")
        self.repository = repository
        self._token = token
        self._timeout = timeout
        self._opener = urllib.request.build_opener(_SameOriginRedirects())

    def request(
        self, method: str, path: str, body: Mapping[str, Any] | None = None, query: Mapping[str, str] | None = None
    ) -> Response:
        url = path if path.startswith(("http://", "https://")) else f"{self.api_url}{path}"
        if query:
            url += ("&" if "?" in url else "?") + urllib.parse.urlencode(query)
        what = f"{method} {urllib.parse.urlsplit(url).path}"
        if _origin(url) != _origin(self.api_url):
            raise GitHubError(f"{what}: refusing to send the token to {_origin(url)[1]}, not the API's host")
        headers = {
            "Accept": "application/vnd.github+json",
            "Authorization": f"Bearer {self._token}",
            "User-Agent": f"delta-sync/{__version__}",
            "X-GitHub-Api-Version": API_VERSION,
        }
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with self._opener.open(request, timeout=self._timeout) as answer:
                raw: bytes = answer.read()
                link = answer.headers.get("Link")
        except urllib.error.HTTPError as error:
            raise GitHubError(_error_message(what, error), error.code) from None
        except urllib.error.URLError as error:
            raise GitHubError(f"{what}: cannot reach {self.api_url}: {error.reason}") from None
        except OSError as error:  # a timeout, a connection reset half-way
            raise GitHubError(f"{what}: cannot reach {self.api_url}: {error}") from None
        try:
            return Response(json.loads(raw) if raw.strip() else None, link)
        except ValueError:
            raise GitHubError(f"{what}: the answer is not JSON: {raw[:80]!r}") from None

    def pages(self, path: str, query: Mapping[str, str]) -> Iterator[Any]:
        """Each page of a listing, following the Link headers' `rel="next"`."""
        url: str | None = f"{path}?{urllib.parse.urlencode(query)}"
        seen: set[str] = set()
        while url is not None and url not in seen:
            seen.add(url)
            response = self.request("GET", url)
            yield response.data
            url = next_link(response.link)

    def comments(self, number: int) -> Iterator[dict[str, Any]]:
        for page in self.pages(f"/repos/{self.repository}/issues/{number}/comments", {"per_page": "100"}):
            if not isinstance(page, list):
                raise GitHubError(f"the comments of #{number}: expected a list, got {type(page).__name__}")
            yield from (comment for comment in page if isinstance(comment, dict))


@dataclass(frozen=True)
class Posted:
    action: str  # "created" or "updated"
    id: int
    url: str


def upsert_comment(github: GitHub, number: int, marker: str, body: str) -> Posted:
    """Edits the first comment of pull request `number` that starts with `marker` and that this token may edit
    (a comment by someone else that starts with it too is passed over), else creates one. `body` starts with
    `marker`."""
    for comment in github.comments(number):
        text = comment.get("body")
        if not isinstance(text, str) or not text.lstrip().startswith(marker):
            continue
        try:
            done = github.request(
                "PATCH", f"/repos/{github.repository}/issues/comments/{comment['id']}", {"body": body}
            )
        except GitHubError as error:
            if error.status in (403, 404):
                continue
            raise
        return _posted("updated", done.data)
    done = github.request("POST", f"/repos/{github.repository}/issues/{number}/comments", {"body": body})
    return _posted("created", done.data)


def _posted(action: str, data: Any) -> Posted:
    if not isinstance(data, dict) or not isinstance(data.get("id"), int):
        raise GitHubError(f"the comment was {action}, but GitHub's answer has no comment id")
    return Posted(action, data["id"], str(data.get("html_url") or ""))


def find_plan_run(
    github: GitHub,
    sha: str,
    artifact: str,
    *,
    workflow: str | None = None,
    pull_request: int | None = None,
    event: str = "pull_request",
) -> dict[str, str]:
    """The newest run (of `workflow`, if given) for the head of the pull request merged as `sha` (or of
    `pull_request`) that has an unexpired artifact named `artifact`: what actions/download-artifact needs."""
    repo = github.repository
    if pull_request is None:
        pulls = github.request("GET", f"/repos/{repo}/commits/{sha}/pulls").data
        merged = [
            p
            for p in (pulls if isinstance(pulls, list) else [])
            if isinstance(p, dict) and p.get("merge_commit_sha") == sha and p.get("merged_at")
        ]
        if not merged:
            raise GitHubError(
                f"commit {sha[:12]} is not the merge commit of a merged pull request (pushed directly?): "
                "there is no reviewed plan to apply"
            )
        pull = merged[0]
    else:
        pull = github.request("GET", f"/repos/{repo}/pulls/{pull_request}").data
    try:
        number, head = int(pull["number"]), str(pull["head"]["sha"])
    except (KeyError, TypeError, ValueError):
        raise GitHubError("the pull request in GitHub's answer has no number or head sha") from None
    where = f"/repos/{repo}/actions/workflows/{urllib.parse.quote(workflow, safe='')}/runs" if workflow else None
    query = {"head_sha": head, "event": event, "per_page": "100"}
    runs = [
        run
        for page in github.pages(where or f"/repos/{repo}/actions/runs", query)
        for run in (page.get("workflow_runs") or [] if isinstance(page, dict) else [])
        if isinstance(run, dict) and isinstance(run.get("id"), int)
    ]
    runs.sort(key=lambda run: (str(run.get("created_at") or ""), int(run["id"])), reverse=True)
    for run in runs:
        listing = github.request("GET", f"/repos/{repo}/actions/runs/{run['id']}/artifacts", query={"name": artifact})
        found = listing.data.get("artifacts") if isinstance(listing.data, dict) else None
        for item in found or []:
            if isinstance(item, dict) and item.get("name") == artifact and not item.get("expired"):
                return {
                    "run-id": str(run["id"]),
                    "artifact-id": str(item.get("id", "")),
                    "artifact-name": artifact,
                    "pr-number": str(number),
                    "head-sha": head,
                }
    of = f" of workflow {workflow}" if workflow else ""
    raise GitHubError(
        f"no {event} run{of} for pull request #{number} (head {head[:12]}) has an unexpired artifact {artifact} "
        f"({len(runs)} run(s) looked at): was it planned with the same env input, within the retention period?"
    )


# --- comment bodies, outputs, summaries -------------------------------------------------------------------


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
