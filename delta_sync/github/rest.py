"""The few calls of GitHub's REST API the workflow makes, with the standard library only: a client that
sends its token to the API's own host and nowhere else and follows the Link headers' pages, upserting the plan's
comment on a pull request, and finding the workflow run whose artifact holds a merged pull request's plan.
Every failure is a `GitHubError` of one line, with a hint at the permission or input to check."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from email.message import Message
from http.client import HTTPMessage
from typing import IO, Any

from delta_sync.version import __version__

DEFAULT_API_URL = "https://api.github.com"
API_VERSION = "2022-11-28"
TIMEOUT = 30.0

_LINK = re.compile(r'<([^>]*)>\s*;\s*rel="([^"]*)"')


class GitHubError(Exception):
    """What went wrong, in one line; `status` is the HTTP status when GitHub answered with an error."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(" ".join(message.split()))
        self.status = status


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
