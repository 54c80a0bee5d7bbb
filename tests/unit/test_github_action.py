"""The packaged review workflow without GitHub and without a JVM: action.yml against SchemaStore's schema for
action metadata, the pre-commit hooks' manifest against pre-commit's, and delta_sync.github against a real HTTP
server on 127.0.0.1 answering with recorded GitHub API responses (pagination by Link header, create, update,
401, 403, 404), checking every request it makes and every output it writes."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from delta_sync.github import action as github
from delta_sync.github import publish, rest

REPO = Path(__file__).resolve().parents[2]
ACTION = REPO / "action.yml"
HOOKS = REPO / ".pre-commit-hooks.yaml"

OWNER_REPO = "octo-org/warehouse"
REPO_ID = 812345678
TOKEN = "ghs_16C7e42F292c6912E7710c838347Ae178B4a"
PR = 7
HEAD_SHA = "6dcb09b5b57875f334f61aebed695e2e4193db5e"
MERGE_SHA = "e5bd3914e2e596debea16f433f57875b5b90bcd6"
MARKER = "<!-- delta-sync plan: ci -->"


# --- recorded GitHub API responses --------------------------------------------------------------------------


def user(login: str, user_id: int, kind: str = "User") -> dict[str, Any]:
    return {
        "login": login,
        "id": user_id,
        "node_id": f"MDQ6VXNlcj{user_id}",
        "avatar_url": f"https://avatars.githubusercontent.com/u/{user_id}?v=4",
        "gravatar_id": "",
        "url": f"https://api.github.com/users/{login}",
        "html_url": f"https://github.com/{login}",
        "type": kind,
        "user_view_type": "public",
        "site_admin": False,
    }


BOT = user("github-actions[bot]", 41898282, "Bot")
ALICE = user("alice", 583231)


def comment(comment_id: int, author: dict[str, Any], body: str) -> dict[str, Any]:
    return {
        "url": f"https://api.github.com/repos/{OWNER_REPO}/issues/comments/{comment_id}",
        "html_url": f"https://github.com/{OWNER_REPO}/pull/{PR}#issuecomment-{comment_id}",
        "issue_url": f"https://api.github.com/repos/{OWNER_REPO}/issues/{PR}",
        "id": comment_id,
        "node_id": f"IC_kwDOLxY{comment_id}",
        "user": author,
        "created_at": "2025-11-24T09:12:31Z",
        "updated_at": "2025-11-24T09:12:31Z",
        "body": body,
        "author_association": "MEMBER" if author["type"] == "User" else "NONE",
        "reactions": {
            "url": f"https://api.github.com/repos/{OWNER_REPO}/issues/comments/{comment_id}/reactions",
            "total_count": 0,
            "+1": 0,
            "-1": 0,
            "laugh": 0,
            "hooray": 0,
            "confused": 0,
            "heart": 0,
            "rocket": 0,
            "eyes": 0,
        },
        "performed_via_github_app": None,
    }


PAGE_1 = [
    comment(2501234001, ALICE, "Could the delta-sync plan also show the orders table? (no marker here)"),
    comment(2501234002, user("bob", 99101), "LGTM once the plan is green."),
]
OURS = comment(2501234003, BOT, f"{MARKER}\n**delta-sync plan: 1 to create** (an older push)\n")
PAGE_2 = [comment(2501234004, user("carol", 771), "> <!-- delta-sync plan: ci-eu -->\nanother environment"), OURS]
# GitHub's Link headers point at /repositories/<id>/..., not at the /repos/<owner>/<name>/... first asked for.
LIST_PATH = f"/repos/{OWNER_REPO}/issues/{PR}/comments?per_page=100"
PAGE_2_PATH = f"/repositories/{REPO_ID}/issues/{PR}/comments?per_page=100&page=2"
PAGE_3_PATH = f"/repositories/{REPO_ID}/issues/{PR}/comments?per_page=100&page=3"
FIRST_OF_TWO = "<{base}" + PAGE_2_PATH + '>; rel="next", <{base}' + PAGE_2_PATH + '>; rel="last"'
SECOND_OF_TWO = "<{base}" + LIST_PATH + '&page=1>; rel="prev", <{base}' + LIST_PATH + '&page=1>; rel="first"'
BAD_CREDENTIALS = {"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest", "status": "401"}
NOT_FOUND = {
    "message": "Not Found",
    "documentation_url": "https://docs.github.com/rest/issues/comments#list-issue-comments",
    "status": "404",
}
NOT_ACCESSIBLE = {
    "message": "Resource not accessible by integration",
    "documentation_url": "https://docs.github.com/rest/issues/comments#create-an-issue-comment",
    "status": "403",
}


# --- a real HTTP server answering with them ----------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


class RecordedGitHub:
    """GitHub's REST API as recorded: (method, path with query) -> answer; anything else is GitHub's 404."""

    def __init__(self) -> None:
        self.answers: dict[tuple[str, str], Answer] = {}
        self.seen: list[Seen] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                owner.seen.append(
                    Seen(
                        self.command,
                        self.path,
                        {k.lower(): v for k, v in self.headers.items()},
                        json.loads(raw) if raw else None,
                    )
                )
                answer = owner.answers.get((self.command, self.path), Answer(404, NOT_FOUND))
                data = json.dumps(answer.body).encode()
                self.send_response(answer.status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("X-GitHub-Api-Version-Selected", "2022-11-28")
                for name, value in answer.headers.items():
                    self.send_header(name, value.replace("{base}", owner.url))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PATCH = _answer

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    def on(self, method: str, path: str, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        self.answers[(method, path)] = Answer(status, body, headers or {})

    def calls(self) -> list[tuple[str, str]]:
        return [(s.method, s.path) for s in self.seen]

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def api() -> Iterator[RecordedGitHub]:
    server = RecordedGitHub()
    server.start()
    yield server
    server.stop()


def pull_request_event(*, fork: bool = False) -> dict[str, Any]:
    head_repo = "mallory/warehouse" if fork else OWNER_REPO
    return {
        "action": "synchronize",
        "number": PR,
        "pull_request": {
            "url": f"https://api.github.com/repos/{OWNER_REPO}/pulls/{PR}",
            "id": 2190000007,
            "number": PR,
            "state": "open",
            "title": "orders: add currency",
            "user": ALICE,
            "head": {"label": "alice:add-currency", "ref": "add-currency", "sha": HEAD_SHA,
                     "repo": {"id": 1, "full_name": head_repo}},
            "base": {"label": "octo-org:main", "ref": "main", "sha": "9049f1265b7d61be4a8904a9a27120d2064dab3b",
                     "repo": {"id": REPO_ID, "full_name": OWNER_REPO}},
        },
        "repository": {"id": REPO_ID, "full_name": OWNER_REPO},
        "sender": ALICE,
    }  # fmt: skip


@pytest.fixture
def environ(api: RecordedGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    # urllib reads proxy settings from the process environment: never send 127.0.0.1 through a proxy.
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    event = tmp_path / "event.json"
    event.write_text(json.dumps(pull_request_event()))
    return {
        "GITHUB_API_URL": api.url,
        "GITHUB_REPOSITORY": OWNER_REPO,
        "GITHUB_TOKEN": TOKEN,
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_OUTPUT": str(tmp_path / "output.txt"),
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_RUN_ID": "11893456782",
        "GITHUB_SHA": MERGE_SHA,
        "NO_PROXY": "127.0.0.1",
        "no_proxy": "127.0.0.1",
    }


def parse_outputs(text: str) -> dict[str, str]:
    """GITHUB_OUTPUT as the runner reads it: `key=value`, or `key<<DELIMITER`, lines, `DELIMITER`."""
    values: dict[str, str] = {}
    lines = text.split("\n")
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if not line:
            continue
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            key, delimiter = line.split("<<", 1)
            end = lines.index(delimiter, index)
            values[key] = "\n".join(lines[index:end])
            index = end + 1
        else:
            key, value = line.split("=", 1)
            values[key] = value
    return values


def outputs(environ: dict[str, str]) -> dict[str, str]:
    path = Path(environ["GITHUB_OUTPUT"])
    return parse_outputs(path.read_text()) if path.exists() else {}


def run_main(args: list[str], environ: dict[str, str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = github.main(args, environ)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_one_line_error(code: int, err: str) -> None:
    assert code == 1
    assert "Traceback" not in err
    assert err.endswith("\n")
    assert len(err.splitlines()) == 1, err
    assert err.startswith("delta-sync github: ")


PLAN_MD = """\
**delta-sync plan: 0 to create, 1 to change, 3 unchanged**

<details><summary><code>shop.orders</code>: change, 1 change (specs/shop/orders.yaml)</summary>

```diff
+ column currency string
```

</details>
"""


@pytest.fixture
def body_file(tmp_path: Path) -> Path:
    path = tmp_path / "delta-sync-plan.md"
    path.write_text(PLAN_MD)
    return path


# --- action.yml -----------------------------------------------------------------------------------------


def load_action() -> dict[str, Any]:
    loaded = yaml.safe_load(ACTION.read_text())
    assert isinstance(loaded, dict)
    return loaded


def check_jsonschema(path: Path) -> subprocess.CompletedProcess[str]:
    tool = shutil.which("check-jsonschema", path=str(Path(sys.executable).parent)) or shutil.which("check-jsonschema")
    assert tool is not None, "check-jsonschema is in the test dependency group"
    return subprocess.run(
        [tool, "--builtin-schema", "vendor.github-actions", str(path)], capture_output=True, text=True, timeout=120
    )


def test_action_yml_is_valid_github_action_metadata(tmp_path: Path) -> None:
    done = check_jsonschema(ACTION)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok -- validation done" in done.stdout

    # The schema is really checking: a run step without its shell (which composite actions require) fails.
    broken = ACTION.read_text().replace("      shell: bash\n", "", 1)
    (tmp_path / "action.yml").write_text(broken)
    refused = check_jsonschema(tmp_path / "action.yml")
    assert refused.returncode == 1, refused.stdout
    assert "action.yml::$.runs" in refused.stdout


def test_action_inputs_outputs_and_steps() -> None:
    action = load_action()
    defaults = {name: spec.get("default") for name, spec in action["inputs"].items()}
    assert defaults == {
        "command": "plan",
        "env": "",
        "specs": "specs/",
        "allow": "",
        "plan-workflow": "",
        "python-version": "3.11",
        "java-version": "17",
        "comment": "true",
        "lint": "true",
        "github-token": "${{ github.token }}",
        "working-directory": ".",
    }
    assert {"exit-code", "plan-id", "has-changes", "blocked"} <= set(action["outputs"])
    steps = action["runs"]["steps"]
    assert action["runs"]["using"] == "composite"
    uses = [step["uses"] for step in steps if "uses" in step]
    assert uses == [
        "actions/setup-java@v4",
        "actions/setup-python@v5",
        "actions/upload-artifact@v4",
        "actions/download-artifact@v4",
    ]
    assert steps[1]["with"]["distribution"] == "temurin"
    ids = [step.get("id") for step in steps]
    for number, step in enumerate(steps):
        if "run" in step:
            assert step["shell"] == "bash"
            # Inputs reach scripts as environment variables only: no expression is pasted into shell code.
            assert "${{" not in step["run"], step.get("name")
        # Every step output read is of a step with that id, which runs before.
        text = json.dumps({k: v for k, v in step.items() if k != "run"})
        for used in re.findall(r"steps\.([\w-]+)\.outputs", text):
            assert used in ids[:number], f"{step.get('name')} reads steps.{used} before it runs"
    for name, spec in action["outputs"].items():
        for used in re.findall(r"steps\.([\w-]+)\.outputs", spec["value"]):
            assert used in ids, name
    plan = next(step for step in steps if step.get("id") == "plan")
    assert "delta-sync plan" in plan["name"]
    assert '--detailed-exitcode --format markdown --out "$plan"' in plan["run"]
    assert plan["run"].count('delta-sync "${args[@]}"') == 1  # planned once
    lint = next(step for step in steps if step.get("id") == "lint")
    assert ids.index("lint") < ids.index("plan")
    assert lint["if"] == "inputs.command == 'plan' && inputs.lint == 'true'"
    assert 'args=(lint "$DS_SPECS")' in lint["run"]
    assert "set +e" in lint["run"]  # the verdict waits for the gate, after the plan comment
    gate = next(step for step in steps if step.get("name") == "Gate on the plan")
    assert gate["env"]["DS_LINT_EXIT_CODE"] == "${{ steps.lint.outputs.exit-code }}"
    assert action["outputs"]["lint-exit-code"]["value"] == "${{ steps.lint.outputs.exit-code }}"
    upload = next(step for step in steps if step.get("uses", "").startswith("actions/upload-artifact"))
    assert upload["with"]["name"] == "${{ steps.plan.outputs.artifact-name }}"
    download = next(step for step in steps if step.get("uses", "").startswith("actions/download-artifact"))
    assert download["with"]["run-id"] == "${{ steps.find.outputs.run-id }}"
    assert download["with"]["github-token"] == "${{ inputs.github-token }}"


# --- comment ----------------------------------------------------------------------------------------------


def comment_args(body_file: Path, *extra: str) -> list[str]:
    return ["comment", "--marker", MARKER, "--body-file", str(body_file), "--artifact", "delta-sync-plan-ci", *extra]


def test_creates_the_comment_when_no_page_holds_the_marker(
    api: RecordedGitHub, environ: dict[str, str], body_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    api.on("GET", LIST_PATH, 200, PAGE_1, {"Link": FIRST_OF_TWO})
    api.on("GET", PAGE_2_PATH, 200, PAGE_2[:1], {"Link": SECOND_OF_TWO})
    created = comment(2501239999, BOT, "(set below)")
    api.on("POST", f"/repos/{OWNER_REPO}/issues/{PR}/comments", 201, created)

    code, out, err = run_main(comment_args(body_file), environ, capsys)

    assert code == 0, err
    assert api.calls() == [
        ("GET", LIST_PATH),
        ("GET", PAGE_2_PATH),
        ("POST", f"/repos/{OWNER_REPO}/issues/{PR}/comments"),
    ]
    post = api.seen[-1]
    body = post.body["body"]
    assert list(post.body) == ["body"]
    assert body.startswith(f"{MARKER}\n{PLAN_MD}")
    assert body.endswith(
        f"<sub>commit `{HEAD_SHA[:7]}` · [workflow run](https://github.com/{OWNER_REPO}/actions/runs/11893456782)"
        " · plan artifact `delta-sync-plan-ci`</sub>\n"
    )
    for seen in api.seen:
        assert seen.headers["authorization"] == f"Bearer {TOKEN}"
        assert seen.headers["accept"] == "application/vnd.github+json"
        assert seen.headers["x-github-api-version"] == "2022-11-28"
        assert seen.headers["user-agent"].startswith("delta-sync/")
    assert post.headers["content-type"] == "application/json"
    assert outputs(environ) == {
        "comment-id": "2501239999",
        "comment-url": f"https://github.com/{OWNER_REPO}/pull/{PR}#issuecomment-2501239999",
        "comment-action": "created",
    }
    assert out == f"delta-sync: created the plan comment on #{PR}: {created['html_url']}\n"


def test_edits_the_comment_with_the_marker_found_on_page_two_and_reads_no_further(
    api: RecordedGitHub, environ: dict[str, str], body_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    api.on("GET", LIST_PATH, 200, PAGE_1, {"Link": FIRST_OF_TWO})
    api.on("GET", PAGE_2_PATH, 200, PAGE_2, {"Link": f'<{{base}}{PAGE_3_PATH}>; rel="next"'})
    api.on("PATCH", f"/repos/{OWNER_REPO}/issues/comments/{OURS['id']}", 200, OURS)

    code, _out, err = run_main(comment_args(body_file), environ, capsys)

    assert code == 0, err
    # carol's comment quotes another environment's marker: neither hers nor that environment's is touched.
    assert api.calls() == [
        ("GET", LIST_PATH),
        ("GET", PAGE_2_PATH),
        ("PATCH", f"/repos/{OWNER_REPO}/issues/comments/{OURS['id']}"),
    ]
    assert api.seen[-1].body["body"].startswith(f"{MARKER}\n{PLAN_MD}")
    assert outputs(environ)["comment-action"] == "updated"
    assert outputs(environ)["comment-id"] == str(OURS["id"])


def test_a_comment_with_the_marker_the_token_may_not_edit_is_passed_over(
    api: RecordedGitHub, environ: dict[str, str], body_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copied = comment(2501234000, ALICE, f"{MARKER}\ncopied from the bot's comment")
    api.on("GET", LIST_PATH, 200, [copied, OURS])
    api.on("PATCH", f"/repos/{OWNER_REPO}/issues/comments/{copied['id']}", 403, NOT_ACCESSIBLE)
    api.on("PATCH", f"/repos/{OWNER_REPO}/issues/comments/{OURS['id']}", 200, OURS)

    code, _out, err = run_main(comment_args(body_file), environ, capsys)

    assert code == 0, err
    assert [call[0] for call in api.calls()] == ["GET", "PATCH", "PATCH"]
    assert api.calls()[-1] == ("PATCH", f"/repos/{OWNER_REPO}/issues/comments/{OURS['id']}")


def test_bad_credentials_are_one_line(
    api: RecordedGitHub, environ: dict[str, str], body_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    api.on("GET", LIST_PATH, 401, BAD_CREDENTIALS)
    code, out, err = run_main(comment_args(body_file), environ, capsys)
    assert_one_line_error(code, err)
    assert f"GET /repos/{OWNER_REPO}/issues/{PR}/comments: 401 Bad credentials" in err
    assert "github-token" in err
    assert TOKEN not in err + out
    assert not Path(environ["GITHUB_OUTPUT"]).exists()


def test_an_unknown_pull_request_is_one_line(
    api: RecordedGitHub, environ: dict[str, str], body_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _out, err = run_main(comment_args(body_file, "--pr", "404"), environ, capsys)
    assert_one_line_error(code, err)
    assert f"GET /repos/{OWNER_REPO}/issues/404/comments: 404 Not Found" in err
    assert "no such repository, pull request" in err


def test_a_read_only_token_is_one_line_naming_the_permission(
    api: RecordedGitHub, environ: dict[str, str], body_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    api.on("GET", LIST_PATH, 200, [])
    api.on("POST", f"/repos/{OWNER_REPO}/issues/{PR}/comments", 403, NOT_ACCESSIBLE)
    code, _out, err = run_main(comment_args(body_file), environ, capsys)
    assert_one_line_error(code, err)
    assert "403 Resource not accessible by integration" in err
    assert "pull-requests: write" in err


def test_a_pull_request_from_a_fork_gets_a_warning_not_a_failure(
    api: RecordedGitHub, environ: dict[str, str], body_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Path(environ["GITHUB_EVENT_PATH"]).write_text(json.dumps(pull_request_event(fork=True)))
    api.on("GET", LIST_PATH, 200, [])
    api.on("POST", f"/repos/{OWNER_REPO}/issues/{PR}/comments", 403, NOT_ACCESSIBLE)
    code, out, err = run_main(comment_args(body_file), environ, capsys)
    assert code == 0
    assert out.startswith(f"::warning title=delta-sync::not commented on #{PR}, from a fork: POST ")
    assert err == ""


def test_a_failed_plan_is_commented_without_its_messages(
    api: RecordedGitHub, environ: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    api.on("GET", LIST_PATH, 200, [])
    api.on("POST", f"/repos/{OWNER_REPO}/issues/{PR}/comments", 201, comment(1, BOT, ""))
    empty = tmp_path / "empty.md"
    empty.write_text("")
    code, _out, err = run_main(comment_args(empty, "--exit-code", "1"), environ, capsys)
    assert code == 0, err
    body = api.seen[-1].body["body"]
    assert body.startswith(f"{MARKER}\n**delta-sync plan failed** (exit code 1): nothing was planned. ")
    assert f"[the workflow run](https://github.com/{OWNER_REPO}/actions/runs/11893456782)" in body


def closed_port() -> str:
    """The URL of a port of 127.0.0.1 that nothing listens on (it was free a moment ago)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


def test_no_token_no_event_bad_marker_bad_usage_unreachable_are_one_line(
    api: RecordedGitHub, environ: dict[str, str], body_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    api.on("GET", LIST_PATH, 200, [])
    cases: list[tuple[list[str], dict[str, str], str]] = [
        (comment_args(body_file), {**environ, "GITHUB_TOKEN": ""}, "no token: set GITHUB_TOKEN"),
        (comment_args(body_file), {k: v for k, v in environ.items() if k != "GITHUB_EVENT_PATH"}, "--pr"),
        (["comment", "--marker", "delta-sync", "--body-file", str(body_file)], environ, "HTML comment"),
        (["comment", "--body-file", str(body_file)], environ, "the following arguments are required: --marker"),
        (["nonsense"], environ, "invalid choice: 'nonsense'"),
        (comment_args(body_file.with_name("missing.md")), environ, "missing.md: no such file"),
        (comment_args(body_file), {**environ, "GITHUB_API_URL": closed_port()}, "cannot reach http://127.0."),
    ]
    push = Path(environ["GITHUB_EVENT_PATH"]).with_name("push.json")
    push.write_text(json.dumps({"ref": "refs/heads/main", "after": MERGE_SHA, "commits": []}))
    cases.append((comment_args(body_file), {**environ, "GITHUB_EVENT_PATH": str(push)}, "not about a pull request"))
    for args, env, expected in cases:
        code, _out, err = run_main(args, env, capsys)
        assert_one_line_error(code, err)
        assert expected in err, (args, err)


def test_a_link_to_another_host_is_not_followed_with_the_token(
    api: RecordedGitHub, environ: dict[str, str], body_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    api.on("GET", LIST_PATH, 200, PAGE_1, {"Link": '<https://evil.example/steal?page=2>; rel="next"'})
    code, _out, err = run_main(comment_args(body_file), environ, capsys)
    assert_one_line_error(code, err)
    assert "refusing to send the token to evil.example" in err
    assert api.calls() == [("GET", LIST_PATH)]


def test_a_real_process_prints_one_line_never_a_traceback(
    api: RecordedGitHub, environ: dict[str, str], body_file: Path
) -> None:
    api.on("GET", LIST_PATH, 401, BAD_CREDENTIALS)
    env = {**os.environ, **environ}
    for args in (comment_args(body_file), ["outputs", "--plan-file", "/nonexistent/plan.json", "--exit-code", "2"]):
        done = subprocess.run(
            [sys.executable, "-m", "delta_sync.github", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 1
        assert_one_line_error(done.returncode, done.stderr)
        assert done.stdout == ""


def long_plan(tables: int) -> str:
    parts = ["**delta-sync plan: 0 to create, 400 to change**"]
    for number in range(tables):
        columns = "\n".join(f"+ column c{i} decimal(18,2)  -- amount in cents, {'x' * 40}" for i in range(30))
        sql = "\n".join(f"ALTER TABLE `shop`.`t{number}` ADD COLUMNS (c{i} decimal(18,2));" for i in range(30))
        parts.append(
            f"<details><summary><code>shop.t{number}</code>: change, 30 changes</summary>\n\n"
            f"```diff\n{columns}\n```\n\n<details><summary>SQL (30 statements)</summary>\n\n"
            f"````sql\n{sql}\n````\n\n</details>\n\n</details>"
        )
    return "\n\n".join(parts) + "\n"


def test_a_plan_over_the_limit_is_cut_between_lines_closed_and_pointed_at_the_artifact(
    api: RecordedGitHub, environ: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = long_plan(60)
    assert len(text) > 3 * publish.COMMENT_LIMIT
    plan = tmp_path / "plan.md"
    plan.write_text(text)
    api.on("GET", LIST_PATH, 200, [])
    api.on("POST", f"/repos/{OWNER_REPO}/issues/{PR}/comments", 201, comment(1, BOT, ""))

    code, _out, err = run_main(comment_args(plan), environ, capsys)

    assert code == 0, err
    body: str = api.seen[-1].body["body"]
    assert publish.COMMENT_LIMIT - 1000 < len(body) <= publish.COMMENT_LIMIT
    lines = body.splitlines()
    assert lines[0] == MARKER
    original = text.splitlines()
    pointer = next(i for i, line in enumerate(lines) if line.startswith("**The plan is cut here**"))
    counted = re.search(r"\((\d+) more lines, over GitHub's 65,536-character comment limit\)", lines[pointer])
    assert counted is not None, lines[pointer]
    kept = len(original) - int(counted.group(1))
    assert lines[1 : 1 + kept] == original[:kept], "whole lines, from the start"
    # Then only what closes what was open where it was cut: fences (of their own length), the <details>.
    assert set(lines[1 + kept : pointer]) <= {"", "```", "````", "</details>"}
    assert "the plan artifact `delta-sync-plan-ci` of [the workflow run](https://github.com/" in lines[pointer]
    shown = "\n".join(lines[1:pointer])
    assert len(re.findall(r"^```(?:diff)?$", shown, re.M)) % 2 == 0
    assert len(re.findall(r"^````(?:sql)?$", shown, re.M)) % 2 == 0
    assert shown.count("<details>") == shown.count("</details>")
    assert lines[-1].startswith("<sub>commit ")


def test_fit_never_cuts_a_line_and_counts_utf16() -> None:
    text = "".join(f"line {i} {'é' * 10}{'😀' * 5}\n" for i in range(100))
    cut = publish.fit(text, 500, lambda n: f"({n} more)")
    assert publish.size(cut) <= 500 < publish.size(text)
    *kept, blank, note = cut.splitlines()
    assert kept == text.splitlines()[: len(kept)]
    assert blank == ""
    assert note == f"({100 - len(kept)} more)"
    assert publish.fit(text, 10**6, lambda n: "unused") == text
    with pytest.raises(rest.GitHubError, match="over 5 characters"):
        publish.fit(text, 5, lambda n: "a pointer longer than five")


# --- outputs -----------------------------------------------------------------------------------------------


def plan_document(actions: list[dict[str, Any]], blocked: bool = False) -> dict[str, Any]:
    """A saved plan's parts that the outputs read, as delta-sync writes them (format 2)."""
    return {
        "format_version": 2,
        "tool_version": "0.1.0",
        "environment": "ci",
        "plan_id": "edd230d026774f69",
        "specs_hash": "0c5e4d1ab0e1f2c3",
        "specs": "specs",
        "summary": {"create": 0, "change": 1 if actions else 0, "unchanged": 3, "blocked": int(blocked)},
        "tables": [{"name": "shop.orders", "fingerprint": {"exists": True, "version": 4, "state": "3f1c9a0b7d2e4f61"}}],
        "actions": actions,
        "probes": [],
        "statements": [],
        "blocked": blocked,
        "allowed": [],
        "typed_actions": [],
        "desired": [],
    }


ADD_COLUMN = {"kind": "AddColumns", "table": "shop.orders", "columns": [{"name": "currency", "type": "string"}]}
NOTICE = {"kind": "Notice", "table": "shop.orders", "subject": "Currency", "message": "spelled in another case"}


@pytest.mark.parametrize(
    ("code", "actions", "blocked", "expected"),
    [
        (2, [ADD_COLUMN], False, {"has-changes": "true", "blocked": "false"}),
        (3, [ADD_COLUMN], True, {"has-changes": "true", "blocked": "true"}),
        (0, [NOTICE], False, {"has-changes": "false", "blocked": "false"}),
    ],
)
def test_outputs_of_a_saved_plan(
    code: int,
    actions: list[dict[str, Any]],
    blocked: bool,
    expected: dict[str, str],
    environ: dict[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    plan = tmp_path / "delta-sync-plan.json"
    plan.write_text(json.dumps(plan_document(actions, blocked)))
    summary = tmp_path / "summary.md"
    env = {**environ, "GITHUB_STEP_SUMMARY": str(summary)}
    args = ["outputs", "--plan-file", str(plan), "--exit-code", str(code), "--env", "ci"]
    result, out, err = run_main([*args, "--markdown-file", str(tmp_path / "none.md")], env, capsys)
    assert (result, out, err) == (0, "", "")
    assert outputs(environ) == {
        "exit-code": str(code),
        "plan-id": "edd230d026774f69",
        **expected,
        "environment": "ci",
        "artifact-name": "delta-sync-plan-ci",
        "plan-file": str(plan.resolve()),
    }
    assert not summary.exists()  # no Markdown, no summary
    (tmp_path / "plan.md").write_text(PLAN_MD)
    Path(environ["GITHUB_OUTPUT"]).unlink()
    assert run_main([*args, "--markdown-file", str(tmp_path / "plan.md")], env, capsys)[0] == 0
    assert summary.read_text() == PLAN_MD


def test_outputs_of_a_failed_plan_and_of_a_missing_file(
    environ: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "delta-sync-plan.json"
    code, _out, err = run_main(["outputs", "--plan-file", str(missing), "--exit-code", "1"], environ, capsys)
    assert (code, err) == (0, "")
    assert outputs(environ) == {
        "exit-code": "1",
        "plan-id": "",
        "has-changes": "false",
        "blocked": "false",
        "environment": "default",
        "artifact-name": "delta-sync-plan-default",
        "plan-file": "",
    }
    code, _out, err = run_main(["outputs", "--plan-file", str(missing), "--exit-code", "2"], environ, capsys)
    assert_one_line_error(code, err)
    assert "no such file, yet delta-sync exited 2" in err
    missing.write_text('{"format_version": 2}')
    code, _out, err = run_main(["outputs", "--plan-file", str(missing), "--exit-code", "2"], environ, capsys)
    assert_one_line_error(code, err)
    assert "not a delta-sync plan file" in err


def test_multi_line_outputs_use_a_delimiter_the_value_does_not_hold(tmp_path: Path) -> None:
    path = tmp_path / "output.txt"
    path.write_text("earlier=1\n")
    value = "line one\nghadelimiter_\nline = three\n"
    publish.write_outputs({"single": "a=b", "multi": value, "empty": ""}, str(path))
    text = path.read_text()
    assert re.search(r"^multi<<ghadelimiter_[0-9a-f]{32}$", text, re.M)
    assert parse_outputs(text) == {"earlier": "1", "single": "a=b", "multi": value, "empty": ""}
    with pytest.raises(rest.GitHubError, match="not a valid name"):
        publish.write_outputs({"bad name": "x"}, str(path))


def test_artifact_names_and_markers() -> None:
    assert publish.artifact_name("") == "delta-sync-plan-default"
    assert publish.artifact_name("prod/eu:1") == "delta-sync-plan-prod-eu-1"
    assert publish.marker("") == "<!-- delta-sync plan: default -->"
    assert publish.marker(" ci ") == MARKER


# --- find-plan-run ------------------------------------------------------------------------------------------


def workflow_run(run_id: int, created: str, run_number: int) -> dict[str, Any]:
    return {
        "id": run_id,
        "name": "delta-sync plan",
        "node_id": f"WFR_kwLOLxY{run_id}",
        "head_branch": "add-currency",
        "head_sha": HEAD_SHA,
        "path": ".github/workflows/delta-sync-plan.yml",
        "run_number": run_number,
        "run_attempt": 1,
        "event": "pull_request",
        "status": "completed",
        "conclusion": "success",
        "workflow_id": 161335,
        "url": f"https://api.github.com/repos/{OWNER_REPO}/actions/runs/{run_id}",
        "html_url": f"https://github.com/{OWNER_REPO}/actions/runs/{run_id}",
        "created_at": created,
        "updated_at": created,
    }


def artifact(artifact_id: int, run_id: int, expired: bool = False) -> dict[str, Any]:
    return {
        "id": artifact_id,
        "node_id": f"MDg6QXJ0aWZhY3Qx{artifact_id}",
        "name": "delta-sync-plan-ci",
        "size_in_bytes": 18342,
        "url": f"https://api.github.com/repos/{OWNER_REPO}/actions/artifacts/{artifact_id}",
        "archive_download_url": f"https://api.github.com/repos/{OWNER_REPO}/actions/artifacts/{artifact_id}/zip",
        "expired": expired,
        "digest": "sha256:cfc3236bdad15b5898bca8408945c9e19e1917da8704adc20eaa618444290a8c",
        "created_at": "2025-11-24T09:14:02Z",
        "expires_at": "2026-02-22T09:13:49Z",
        "updated_at": "2025-11-24T09:14:02Z",
        "workflow_run": {"id": run_id, "repository_id": REPO_ID, "head_sha": HEAD_SHA},
    }


MERGED_PULL = {
    "url": f"https://api.github.com/repos/{OWNER_REPO}/pulls/{PR}",
    "number": PR,
    "state": "closed",
    "merged_at": "2025-11-24T10:02:11Z",
    "merge_commit_sha": MERGE_SHA,
    "head": {"ref": "add-currency", "sha": HEAD_SHA},
    "base": {"ref": "main", "sha": "9049f1265b7d61be4a8904a9a27120d2064dab3b"},
}
RUNS_QUERY = f"head_sha={HEAD_SHA}&event=pull_request&per_page=100"


def test_find_plan_run_follows_the_merge_commit_to_the_newest_run_with_the_artifact(
    api: RecordedGitHub, environ: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    other = {**MERGED_PULL, "number": 3, "merge_commit_sha": "0" * 40}  # an older pull request with this commit
    api.on("GET", f"/repos/{OWNER_REPO}/commits/{MERGE_SHA}/pulls", 200, [other, MERGED_PULL])
    runs = [
        workflow_run(11893400001, "2025-11-24T09:13:02Z", 41),
        workflow_run(11893400003, "2025-11-24T09:55:40Z", 43),  # newest: its artifact expired
        workflow_run(11893400002, "2025-11-24T09:30:12Z", 42),
    ]
    workflow = "/actions/workflows/delta-sync-plan.yml/runs"
    api.on("GET", f"/repos/{OWNER_REPO}{workflow}?{RUNS_QUERY}", 200, {"total_count": 3, "workflow_runs": runs})
    listing = "/artifacts?name=delta-sync-plan-ci"
    base = f"/repos/{OWNER_REPO}/actions/runs"
    api.on("GET", f"{base}/11893400003{listing}", 200, {"total_count": 1, "artifacts": [artifact(9, 3, True)]})
    api.on("GET", f"{base}/11893400002{listing}", 200, {"total_count": 1, "artifacts": [artifact(4711, 2)]})

    args = ["find-plan-run", "--env", "ci", "--workflow", "delta-sync-plan.yml"]
    code, out, err = run_main(args, environ, capsys)

    assert code == 0, err
    assert outputs(environ) == {
        "run-id": "11893400002",
        "artifact-id": "4711",
        "artifact-name": "delta-sync-plan-ci",
        "pr-number": str(PR),
        "head-sha": HEAD_SHA,
    }
    assert api.calls() == [
        ("GET", f"/repos/{OWNER_REPO}/commits/{MERGE_SHA}/pulls"),
        ("GET", f"/repos/{OWNER_REPO}{workflow}?{RUNS_QUERY}"),
        ("GET", f"{base}/11893400003{listing}"),
        ("GET", f"{base}/11893400002{listing}"),
    ]
    assert "artifact delta-sync-plan-ci of run 11893400002" in out


def test_find_plan_run_of_a_direct_push_or_without_artifact_is_one_line(
    api: RecordedGitHub, environ: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    api.on("GET", f"/repos/{OWNER_REPO}/commits/{MERGE_SHA}/pulls", 200, [])
    code, _out, err = run_main(["find-plan-run", "--env", "ci"], environ, capsys)
    assert_one_line_error(code, err)
    assert "is not the merge commit of a merged pull request" in err

    api.on("GET", f"/repos/{OWNER_REPO}/pulls/{PR}", 200, MERGED_PULL)
    api.on("GET", f"/repos/{OWNER_REPO}/actions/runs?{RUNS_QUERY}", 200, {"total_count": 0, "workflow_runs": []})
    code, _out, err = run_main(["find-plan-run", "--env", "ci", "--pr", str(PR)], environ, capsys)
    assert_one_line_error(code, err)
    assert f"no pull_request run for pull request #{PR}" in err
    assert "delta-sync-plan-ci" in err


# --- the pre-commit hooks' manifest ----------------------------------------------------------------------


def test_pre_commit_hooks_manifest() -> None:
    tool = shutil.which("pre-commit", path=str(Path(sys.executable).parent)) or shutil.which("pre-commit")
    assert tool is not None, "pre-commit is in the test dependency group"
    done = subprocess.run([tool, "validate-manifest", str(HOOKS)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    hooks = {hook["id"]: hook for hook in yaml.safe_load(HOOKS.read_text())}
    assert set(hooks) == {"delta-sync-validate", "delta-sync-format", "delta-sync-lint"}
    assert hooks["delta-sync-validate"]["entry"] == "delta-sync validate"
    assert hooks["delta-sync-format"]["entry"] == "delta-sync fmt"
    assert hooks["delta-sync-lint"]["entry"] == "delta-sync lint"
    for hook in hooks.values():
        assert hook["language"] == "python"
        assert hook["pass_filenames"] is True
        files = re.compile(hook["files"])
        assert files.search("specs/shop/orders.yaml")
        assert files.search("specs/x.yml")
        assert not files.search(".github/workflows/plan.yml")
        assert not files.search("delta-sync.yaml")
        assert not files.search("specs/README.md")
