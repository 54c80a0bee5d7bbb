"""action.yml's steps, run as GitHub's runner would run them, short of GitHub: each `run:` script with
`bash --noprofile --norc -eo pipefail`, in its working directory, with its `env:` evaluated, a GITHUB_OUTPUT file
of its own read back into `steps.<id>.outputs`, and its `if:` evaluated (a small evaluator of GitHub's
expression language, below). The `uses:` steps (setup-java, setup-python, upload- and download-artifact) need
GitHub: they are not run, but their `with:` is evaluated and checked, and the artifact is carried from the upload
to the download by hand. `pip install` of the action's checkout is skipped: this environment has delta-sync.

A pull request of the example project (a copy of specs/, no delta-sync.yaml: the embedded local catalog) is
planned twice, against a stateful fake of GitHub's API on 127.0.0.1: the first run posts the comment, the second
edits it. Then the merge: `command: apply` finds the pull request's run through the API, and applies the
uploaded plan exactly."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.unit.test_github_action import parse_outputs

REPO = Path(__file__).resolve().parents[2]
OWNER_REPO = "octo-org/warehouse"
PR = 7
HEAD_SHA = "6dcb09b5b57875f334f61aebed695e2e4193db5e"
MERGE_SHA = "e5bd3914e2e596debea16f433f57875b5b90bcd6"
RUN_ID = 11893400002
TOKEN = "ghs_16C7e42F292c6912E7710c838347Ae178B4a"
MARKER = "<!-- delta-sync plan: default -->"


# --- GitHub's expression language, as much as action.yml uses -------------------------------------------

_TOKEN = re.compile(
    r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<num>\d+(?:\.\d+)?)|(?P<op>==|!=|&&|\|\||!|\(|\)|,)"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z_][A-Za-z0-9_-]*)*))"
)


def _truthy(value: Any) -> bool:
    return value not in (None, False, 0, "")


def _equal(left: Any, right: Any) -> bool:
    if isinstance(left, str) and isinstance(right, str):
        return left.casefold() == right.casefold()  # GitHub compares strings ignoring case
    return bool(left == right)


class Expression:
    """Literals, context paths (a missing property is null), ==, !=, !, &&, || (returning an operand, as
    GitHub's do), parentheses, and the status functions always(), success(), failure(), cancelled()."""

    def __init__(self, text: str, contexts: dict[str, Any], failed: bool) -> None:
        self.tokens: list[tuple[str, str]] = []
        position = 0
        text = text.strip()
        while position < len(text):
            found = _TOKEN.match(text, position)
            if found is None or found.lastgroup is None:
                raise ValueError(f"cannot read {text[position:]!r}")
            kind = found.lastgroup
            self.tokens.append((kind, found.group(kind)))
            position = found.end()
        self.index = 0
        self.contexts = contexts
        self.failed = failed

    def value(self) -> Any:
        result = self._or()
        assert self.index == len(self.tokens), f"unexpected {self.tokens[self.index :]}"
        return result

    def _peek(self) -> str | None:
        return self.tokens[self.index][1] if self.index < len(self.tokens) else None

    def _take(self) -> tuple[str, str]:
        self.index += 1
        return self.tokens[self.index - 1]

    def _or(self) -> Any:
        left = self._and()
        while self._peek() == "||":
            self._take()
            right = self._and()
            left = left if _truthy(left) else right
        return left

    def _and(self) -> Any:
        left = self._not()
        while self._peek() == "&&":
            self._take()
            right = self._not()
            left = right if _truthy(left) else left
        return left

    def _not(self) -> Any:
        if self._peek() == "!":
            self._take()
            return not _truthy(self._not())
        left = self._primary()
        if self._peek() in ("==", "!="):
            operator = self._take()[1]
            equal = _equal(left, self._primary())
            return equal if operator == "==" else not equal
        return left

    def _primary(self) -> Any:
        kind, text = self._take()
        if text == "(":
            inner = self._or()
            assert self._take()[1] == ")"
            return inner
        if kind == "str":
            return text[1:-1].replace("''", "'")
        if kind == "num":
            return float(text)
        assert kind == "name", text
        if self._peek() == "(":
            self._take()
            assert self._take()[1] == ")", "functions without arguments only"
            return {
                "always": True,
                "success": not self.failed,
                "failure": self.failed,
                "cancelled": False,
            }[text]
        if text in ("true", "false", "null"):
            return {"true": True, "false": False, "null": None}[text]
        found: Any = self.contexts
        for part in text.split("."):
            found = found.get(part) if isinstance(found, dict) else None
        return found


def evaluate(condition: str, contexts: dict[str, Any], failed: bool = False) -> Any:
    condition = condition.strip()
    if condition.startswith("${{") and condition.endswith("}}"):
        condition = condition[3:-2]
    return Expression(condition, contexts, failed).value()


def interpolate(text: str, contexts: dict[str, Any]) -> str:
    def one(found: re.Match[str]) -> str:
        value = evaluate(found.group(1), contexts)
        if isinstance(value, bool):
            return "true" if value else "false"
        return "" if value is None else str(value)

    return re.sub(r"\$\{\{(.*?)\}\}", one, text)


# --- the runner ---------------------------------------------------------------------------------------------


@dataclass
class Ran:
    name: str
    status: str  # "ran", "failed", "skipped" (its if: was false), "not run" (needs GitHub, or installs)
    output: str = ""
    outputs: dict[str, str] = field(default_factory=dict)
    inputs: dict[str, str] = field(default_factory=dict)  # a `uses:` step's evaluated `with:`


@dataclass
class Runner:
    """One job's worth of GitHub's runner for this action: a workspace, RUNNER_TEMP, the event, the API."""

    workspace: Path
    temp: Path
    event: dict[str, Any]
    api_url: str
    sha: str

    def run(self, inputs: dict[str, str]) -> tuple[list[Ran], dict[str, str]]:
        action = yaml.safe_load((REPO / "action.yml").read_text())
        given = {name: spec.get("default", "") for name, spec in action["inputs"].items()}
        given.update(inputs)
        contexts: dict[str, Any] = {
            "github": {
                "action_path": str(REPO),
                "sha": self.sha,
                "event": self.event,
                "event_name": "pull_request" if "pull_request" in self.event else "push",
                "token": TOKEN,
                "workspace": str(self.workspace),
            },
            "runner": {"temp": str(self.temp), "os": "Linux"},
            "steps": {},
        }
        # An input's default may itself be an expression (${{ github.token }}).
        contexts["inputs"] = {name: interpolate(str(value), contexts) for name, value in given.items()}
        event_path = self.temp.parent / "event.json"
        event_path.write_text(json.dumps(self.event))
        environment = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "DELTA_SYNC_HOME"))}
        environment.update(
            PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            GITHUB_ACTIONS="true",
            GITHUB_API_URL=self.api_url,
            GITHUB_SERVER_URL="https://github.com",
            GITHUB_REPOSITORY=OWNER_REPO,
            GITHUB_RUN_ID="11893456782",
            GITHUB_SHA=self.sha,
            GITHUB_EVENT_NAME=contexts["github"]["event_name"],
            GITHUB_EVENT_PATH=str(event_path),
            GITHUB_WORKSPACE=str(self.workspace),
            GITHUB_ACTION_PATH=str(REPO),
            GITHUB_STEP_SUMMARY=str(self.temp.parent / "summary.md"),
            RUNNER_TEMP=str(self.temp),
            NO_PROXY="127.0.0.1",
            no_proxy="127.0.0.1",
        )
        done: list[Ran] = []
        failed = False
        for number, step in enumerate(action["runs"]["steps"]):
            name = step.get("name") or step.get("uses") or f"step {number}"
            condition = step.get("if", "success()")
            if not any(f in condition for f in ("always()", "success()", "failure()", "cancelled()")):
                condition = f"success() && ({condition})"
            if not _truthy(evaluate(condition, contexts, failed)):
                done.append(Ran(name, "skipped"))
                continue
            if "uses" in step:
                with_ = {k: interpolate(str(v), contexts) for k, v in (step.get("with") or {}).items()}
                done.append(Ran(name, "not run", inputs=with_))
                self.stand_in(step["uses"], with_)
                continue
            if step.get("id") == "install":
                done.append(Ran(name, "not run"))
                continue
            ran = self.run_script(step, contexts, environment, name)
            done.append(ran)
            if step.get("id"):
                contexts["steps"][step["id"]] = {
                    "outputs": ran.outputs,
                    "outcome": "success" if ran.status == "ran" else "failure",
                }
            failed = failed or ran.status == "failed"
        outputs = {name: interpolate(spec["value"], contexts) for name, spec in action["outputs"].items()}
        return done, outputs

    def run_script(self, step: dict[str, Any], contexts: dict[str, Any], base: dict[str, str], name: str) -> Ran:
        assert step["shell"] == "bash"
        script = self.temp.parent / "step.sh"
        script.write_text(step["run"])
        output_file = self.temp.parent / "output.txt"
        output_file.write_text("")
        env = {**base, "GITHUB_OUTPUT": str(output_file)}
        env.update({k: interpolate(str(v), contexts) for k, v in (step.get("env") or {}).items()})
        folder = self.workspace / interpolate(step.get("working-directory", "."), contexts)
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=folder,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=900,
        )
        status = "ran" if done.returncode == 0 else "failed"
        return Ran(name, status, done.stdout, parse_outputs(output_file.read_text()))

    def stand_in(self, uses: str, with_: dict[str, str]) -> None:
        """What the artifact actions would have done: the upload kept in a folder, the download from it."""
        store = self.temp.parent / "artifacts"
        if uses.startswith("actions/upload-artifact@"):
            target = store / with_["name"]
            target.mkdir(parents=True, exist_ok=True)
            for line in with_["path"].splitlines():
                if line.strip():
                    shutil.copy(line.strip(), target)
        elif uses.startswith("actions/download-artifact@"):
            shutil.copytree(store / with_["name"], with_["path"], dirs_exist_ok=True)


# --- a stateful fake of GitHub's API ----------------------------------------------------------------------


class FakeGitHub:
    """Comments that persist (listed two per page, with Link headers as GitHub writes them), and the pull
    request, workflow runs and artifacts of the merge."""

    PAGE = 2

    def __init__(self) -> None:
        self.comments: list[dict[str, Any]] = []
        self.seen: list[tuple[str, str, Any]] = []
        self.next_id = 2501234001
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                owner.seen.append((self.command, self.path, body))
                assert self.headers["Authorization"] == f"Bearer {TOKEN}"
                status, data, headers = owner.answer(self.command, self.path, body)
                raw = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(raw)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(raw)

            do_GET = do_POST = do_PATCH = _answer

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()

    def add_comment(self, login: str, body: str, kind: str = "User") -> dict[str, Any]:
        created = {
            "id": self.next_id,
            "html_url": f"https://github.com/{OWNER_REPO}/pull/{PR}#issuecomment-{self.next_id}",
            "user": {"login": login, "type": kind},
            "body": body,
        }
        self.next_id += 1
        self.comments.append(created)
        return created

    def answer(self, method: str, path: str, body: Any) -> tuple[int, Any, dict[str, str]]:
        parts = urllib.parse.urlsplit(path)
        query = dict(urllib.parse.parse_qsl(parts.query))
        listing = {f"/repos/{OWNER_REPO}/issues/{PR}/comments", f"/repositories/42/issues/{PR}/comments"}
        if method == "GET" and parts.path in listing:
            page = int(query.get("page", "1"))
            chunk = self.comments[(page - 1) * self.PAGE : page * self.PAGE]
            more = page * self.PAGE < len(self.comments)
            link = f'<{self.url}/repositories/42/issues/{PR}/comments?per_page=100&page={page + 1}>; rel="next"'
            return 200, chunk, {"Link": link} if more else {}
        if method == "POST" and parts.path == f"/repos/{OWNER_REPO}/issues/{PR}/comments":
            return 201, self.add_comment("github-actions[bot]", body["body"], "Bot"), {}
        if method == "PATCH" and parts.path.startswith(f"/repos/{OWNER_REPO}/issues/comments/"):
            wanted = int(parts.path.rsplit("/", 1)[1])
            for existing in self.comments:
                if existing["id"] == wanted:
                    existing["body"] = body["body"]
                    return 200, existing, {}
        if method == "GET" and parts.path == f"/repos/{OWNER_REPO}/commits/{MERGE_SHA}/pulls":
            merged = {"number": PR, "merged_at": "2025-11-24T10:02:11Z", "merge_commit_sha": MERGE_SHA}
            return 200, [{**merged, "head": {"sha": HEAD_SHA}}], {}
        if method == "GET" and parts.path == f"/repos/{OWNER_REPO}/actions/runs":
            assert query == {"head_sha": HEAD_SHA, "event": "pull_request", "per_page": "100"}
            run = {"id": RUN_ID, "head_sha": HEAD_SHA, "event": "pull_request", "created_at": "2025-11-24T09:30:12Z"}
            return 200, {"total_count": 1, "workflow_runs": [run]}, {}
        if method == "GET" and parts.path == f"/repos/{OWNER_REPO}/actions/runs/{RUN_ID}/artifacts":
            found = [{"id": 4711, "name": query["name"], "expired": False}]
            return 200, {"total_count": 1, "artifacts": found}, {}
        return 404, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}, {}

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture(scope="module")
def api() -> Iterator[FakeGitHub]:
    fake = FakeGitHub()
    fake.add_comment("alice", "Could the delta-sync plan show the orders table too?")
    fake.add_comment("bob", "LGTM once the plan is green.")
    fake.add_comment("carol", "Three comments: the bot's lands on page two.")
    yield fake
    fake.stop()


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """GITHUB_WORKSPACE (the example project: a copy of specs/), beside the runner's own folder."""
    root = tmp_path_factory.mktemp("github")
    shutil.copytree(REPO / "specs", root / "workspace" / "specs")
    return root / "workspace"


def pull_request_event() -> dict[str, Any]:
    repo = {"full_name": OWNER_REPO}
    return {
        "action": "synchronize",
        "number": PR,
        "pull_request": {"number": PR, "head": {"sha": HEAD_SHA, "repo": repo}, "base": {"repo": repo}},
        "repository": repo,
    }


def runner(workspace: Path, api: FakeGitHub, sha: str, event: dict[str, Any]) -> Runner:
    temp = workspace.parent / "runner" / "temp"
    temp.mkdir(parents=True, exist_ok=True)
    return Runner(workspace, temp, event, api.url, sha)


def by_name(done: list[Ran]) -> dict[str, Ran]:
    return {ran.name: ran for ran in done}


def test_expression_evaluator() -> None:
    contexts = {"inputs": {"comment": "True", "env": ""}, "steps": {"plan": {"outputs": {"exit-code": "2"}}}}
    assert evaluate("inputs.comment == 'true'", contexts) is True
    assert evaluate("inputs.env || 'default'", contexts) == "default"
    assert evaluate("!cancelled() && steps.plan.outputs.exit-code != ''", contexts) is True
    assert evaluate("steps.missing.outputs.x || steps.plan.outputs.exit-code", contexts) == "2"
    assert evaluate("github.event.pull_request || github.event.issue.pull_request", contexts) is None
    assert interpolate("<!-- ${{ inputs.env }} ${{ steps.plan.outputs.exit-code }} -->", contexts) == "<!--  2 -->"


def test_plan_posts_one_comment_then_edits_it_and_apply_runs_the_reviewed_plan(
    workspace: Path, api: FakeGitHub
) -> None:
    pull_request = runner(workspace, api, "a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9", pull_request_event())
    plan_file = pull_request.temp / "delta-sync-plan.json"
    markdown_file = pull_request.temp / "delta-sync-plan.md"

    # The first push: planned once, commented, uploaded, gated.
    done, outputs = pull_request.run({})
    steps = by_name(done)
    log = "\n".join(f"--- {ran.name} ({ran.status})\n{ran.output}" for ran in done)
    assert [ran.status for ran in done] == [
        "ran",  # Check the inputs
        "not run",  # setup-java
        "not run",  # setup-python
        "not run",  # pip install of the action's checkout
        "ran",  # delta-sync lint (no lint: section here: it checks nothing)
        "ran",  # delta-sync plan
        "ran",  # Comment the plan
        "not run",  # upload-artifact
        "ran",  # Gate
        "skipped",  # find the merged pull request's plan
        "skipped",  # download-artifact
        "skipped",  # delta-sync apply
    ], log
    saved = json.loads(plan_file.read_text())
    assert steps["delta-sync plan"].outputs == {
        "exit-code": "2",
        "plan-id": saved["plan_id"],
        "has-changes": "true",
        "blocked": "false",
        "environment": "default",
        "artifact-name": "delta-sync-plan-default",
        "plan-file": str(plan_file.resolve()),
    }
    assert outputs["exit-code"] == "2"
    assert outputs["plan-id"] == saved["plan_id"]
    assert outputs["has-changes"] == "true"
    assert outputs["blocked"] == "false"
    assert steps["delta-sync lint"].outputs == {"exit-code": "0"}
    assert outputs["lint-exit-code"] == "0"
    assert steps["actions/setup-java@v4"].inputs == {"distribution": "temurin", "java-version": "17"}
    assert steps["actions/setup-python@v5"].inputs == {"python-version": "3.11"}
    upload = steps["Upload the plan"].inputs
    assert upload["name"] == "delta-sync-plan-default"
    assert upload["path"].split() == [str(plan_file), str(markdown_file)]
    assert "changes to apply after merge" in steps["Gate on the plan"].output

    markdown = markdown_file.read_text()
    assert "shop.orders" in markdown
    ours = [c for c in api.comments if c["body"].startswith(MARKER)]
    assert len(ours) == 1
    first = ours[0]
    assert first["body"].startswith(f"{MARKER}\n{markdown.rstrip()}\n")
    assert "plan artifact `delta-sync-plan-default`" in first["body"]
    assert steps["Comment the plan on the pull request"].outputs["comment-action"] == "created"
    assert outputs["comment-url"] == first["html_url"]
    assert [(m, p.split("?")[0]) for m, p, _b in api.seen] == [
        ("GET", f"/repos/{OWNER_REPO}/issues/{PR}/comments"),
        ("GET", f"/repositories/42/issues/{PR}/comments"),
        ("POST", f"/repos/{OWNER_REPO}/issues/{PR}/comments"),
    ]
    assert markdown.strip() in (workspace.parent / "runner" / "summary.md").read_text()

    # The next push: the same comment is edited (it is on page two now), no second one is posted.
    api.seen.clear()
    done, outputs = pull_request.run({})
    steps = by_name(done)
    assert steps["Comment the plan on the pull request"].status == "ran", steps["delta-sync plan"].output
    assert steps["Comment the plan on the pull request"].outputs["comment-action"] == "updated"
    assert steps["Comment the plan on the pull request"].outputs["comment-id"] == str(first["id"])
    assert [(m, p.split("?")[0]) for m, p, _b in api.seen] == [
        ("GET", f"/repos/{OWNER_REPO}/issues/{PR}/comments"),
        ("GET", f"/repositories/42/issues/{PR}/comments"),
        ("PATCH", f"/repos/{OWNER_REPO}/issues/comments/{first['id']}"),
    ]
    assert len(api.comments) == 4
    assert len([c for c in api.comments if c["body"].startswith(MARKER)]) == 1
    reviewed = json.loads(plan_file.read_text())
    assert outputs["plan-id"] == reviewed["plan_id"]
    assert api.comments[-1]["body"].startswith(f"{MARKER}\n{markdown_file.read_text().rstrip()}\n")

    # The merge: on the push to main, `command: apply` finds the run of the merged pull request through the
    # API, downloads its artifact (carried over by hand) and applies exactly that plan.
    api.seen.clear()
    merged = runner(workspace, api, MERGE_SHA, {"ref": "refs/heads/main", "after": MERGE_SHA})
    done, outputs = merged.run({"command": "apply"})
    steps = by_name(done)
    log = "\n".join(f"--- {ran.name} ({ran.status})\n{ran.output}" for ran in done)
    assert [ran.status for ran in done][4:] == [
        "skipped",  # delta-sync lint
        "skipped",  # delta-sync plan
        "skipped",  # comment
        "skipped",  # upload
        "skipped",  # gate
        "ran",  # find the merged pull request's plan
        "not run",  # download-artifact
        "ran",  # delta-sync apply
    ], log
    assert steps["Find the merged pull request's plan"].outputs == {
        "run-id": str(RUN_ID),
        "artifact-id": "4711",
        "artifact-name": "delta-sync-plan-default",
        "pr-number": str(PR),
        "head-sha": HEAD_SHA,
    }
    download = steps["Download the reviewed plan"].inputs
    assert download["run-id"] == str(RUN_ID)
    assert download["github-token"] == TOKEN
    applied = steps["delta-sync apply"]
    assert f"Plan {reviewed['plan_id']} for environment local" in applied.output
    assert "re-read: 4 table(s) match the plan." in applied.output, applied.output
    assert outputs["exit-code"] == "0"
    assert outputs["plan-id"] == reviewed["plan_id"]
    assert (workspace / ".delta-sync" / "local" / "warehouse" / "shop.db" / "orders").is_dir()
