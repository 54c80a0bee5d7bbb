"""`statement_timeout:` (issue 48, point 6), offline: the setting read as a duration with its problems at
file:line, and a statement over it stopped as Ctrl-C stops one: through the command's own SIGINT handler (the
one that cancels its Spark jobs by their tags), apply listing what ran and why, exit 130."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from delta_sync.model.catalog import StatementFailed
from delta_sync.model.errors import SpecError
from delta_sync.model.failures import EngineFailure
from delta_sync.model.policy import SizeError, parse_duration
from delta_sync.planning.statements import Kind, Statement
from delta_sync.review import deadline, execution
from delta_sync.review.outcomes import ApplyInterrupted
from delta_sync.specs.project_file import load_project
from tests.unit.test_parallel_apply import SlowCatalog


@pytest.fixture(autouse=True)
def no_limit_after() -> Iterator[None]:
    before = signal.getsignal(signal.SIGINT)
    yield
    deadline.limit(None)
    signal.signal(signal.SIGINT, before)


@pytest.mark.parametrize(("text", "seconds"), [("30s", 30), ("5m", 300), ("1h", 3600), ("500ms", 0.5), (2, 2)])
def test_durations_as_users_write_them(text: str | int, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["soon", "0s", "-1s", "5 days", True])
def test_what_is_not_a_duration(text: str | int) -> None:
    with pytest.raises(SizeError):
        parse_duration(text)


def test_the_setting_is_per_environment_with_its_problems_at_their_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "delta-sync.yaml").write_text("envs:\n  local:\n    statement_timeout: 90s\n")
    assert load_project(tmp_path).env().timeout_seconds == 90
    (tmp_path / "delta-sync.yaml").write_text("envs:\n  local:\n    statement_timeout: a while\n")
    with pytest.raises(SpecError) as excinfo:
        load_project(tmp_path)
    assert [str(p).split(" (")[0] for p in excinfo.value.problems] == ["delta-sync.yaml:3: `a while` is not a duration"]


def test_no_limit_no_timer() -> None:
    deadline.limit(None)
    with deadline.running("x"):
        threading.Event().wait(0.05)
    assert deadline.expired is None


def statement(table: str, sql: str) -> Statement:
    return Statement(table, Kind.DROP_COLUMNS, sql)


def test_a_statement_over_the_limit_stops_apply_as_ctrl_c_does() -> None:
    cancelled = threading.Event()

    def handler(_signum: int, _frame: object) -> None:
        # What delta_sync.spark.interrupts installs: cancel the command's jobs, then interrupt.
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, handler)
    deadline.limit(0.2, "200ms")
    statements = [statement("s.a", "ALTER TABLE s.a ADD COLUMNS (x INT)"), statement("s.a", "ALTER TABLE s.a SLOW")]

    class Slow(SlowCatalog):
        # The command's cancel: reached again and again while the statement runs (its job may start later).
        def cancel_running(self) -> None:
            cancelled.set()

        def execute(self, sql: str, metadata: str | None = None) -> None:
            # A statement whose Spark job the handler cancels fails; it does not land.
            if "SLOW" in sql and cancelled.wait(5):
                raise StatementFailed(EngineFailure("SPARK_JOB_CANCELLED", "the job was cancelled"))
            self.ran.append(sql)

    catalog = Slow()
    with pytest.raises(ApplyInterrupted) as excinfo:
        execution.run_statements(catalog, statements, "p1")
    assert cancelled.is_set()
    said = str(excinfo.value).splitlines()
    assert said[0] == "S.a: ALTER TABLE s.a SLOW ran longer than statement_timeout 200ms, so it was cancelled."
    assert said[1] == "Interrupted: apply stopped after 1 of 2 statement(s)."
    assert "Run apply again to continue" in said[-1]
    assert excinfo.value.exit_code == 130
    # The statement before it ran; the one over the limit did not (its job was cancelled).
    assert catalog.ran == ["ALTER TABLE s.a ADD COLUMNS (x INT)"]


def test_a_statement_that_commits_before_the_cancel_reaches_it_is_said_to_have_finished() -> None:
    def handler(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, handler)
    deadline.limit(0.1)

    class Late(SlowCatalog):
        def execute(self, sql: str, metadata: str | None = None) -> None:
            threading.Event().wait(0.5)  # nothing cancels it: it commits
            self.ran.append(sql)

    with pytest.raises(ApplyInterrupted) as excinfo:
        execution.run_statements(Late(), [statement("s.a", "ALTER TABLE s.a SLOW")], "p1")
    said = str(excinfo.value).splitlines()
    assert said[0] == (
        "S.a: ALTER TABLE s.a SLOW ran longer than statement_timeout 0.1s; it finished before it could be cancelled."
    )
    assert said[1] == "Interrupted: apply stopped after 1 of 1 statement(s)."
