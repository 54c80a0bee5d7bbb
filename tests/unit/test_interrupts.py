"""Ctrl-C in a command on Spark: the command's own jobs are cancelled from another thread, KeyboardInterrupt goes
on up, and an error a py4j call cut short by it raises on its way out is reported as the interrupt (exit 130)."""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Iterator

import pytest
import typer

from delta_sync.cli import console
from delta_sync.model.errors import DeltaSyncError
from delta_sync.review.outcomes import ApplyInterrupted
from delta_sync.spark import interrupts


@pytest.fixture
def restored(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(interrupts, "requested", False)
    before = signal.getsignal(signal.SIGINT)
    yield
    signal.signal(signal.SIGINT, before)
    logging.disable(logging.NOTSET)


def _ctrl_c() -> None:
    os.kill(os.getpid(), signal.SIGINT)
    for _ in range(100):  # the handler runs between bytecodes of this thread
        threading.Event().wait(0.01)


def test_ctrl_c_cancels_on_another_thread_then_interrupts(restored: None) -> None:
    cancelled = threading.Event()
    threads: list[str] = []

    def cancel() -> None:
        threads.append(threading.current_thread().name)
        cancelled.set()

    interrupts.install(cancel)
    with pytest.raises(KeyboardInterrupt):
        _ctrl_c()
    assert cancelled.wait(5)
    assert threads == ["delta-sync-cancel"]
    assert interrupts.requested is True


def test_a_failing_cancel_still_interrupts(restored: None) -> None:
    def cancel() -> None:
        raise RuntimeError("the JVM is gone")

    interrupts.install(cancel)
    with pytest.raises(KeyboardInterrupt):
        _ctrl_c()


def test_an_error_after_ctrl_c_is_the_interrupt(restored: None, monkeypatch: pytest.MonkeyPatch) -> None:
    def cut_short() -> None:
        raise DeltaSyncError("The statement failed: Answer from Java side is empty")

    with pytest.raises(typer.Exit) as without:
        console._guard(cut_short)
    assert without.value.exit_code == 1
    monkeypatch.setattr(interrupts, "requested", True)
    with pytest.raises(typer.Exit) as interrupted:
        console._guard(cut_short)
    assert interrupted.value.exit_code == 130


def test_apply_keeps_its_own_account_of_an_interrupt(restored: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(interrupts, "requested", True)

    def stopped() -> None:
        raise ApplyInterrupted("Interrupted: apply stopped after 2 of 5 statements")

    with pytest.raises(typer.Exit) as ended:
        console._guard(stopped)
    assert ended.value.exit_code == 130


class Context:
    """A caller's SparkContext as a library call uses it: job tags on, off, and cancelled."""

    def __init__(self) -> None:
        self.tags: list[str] = []
        self.cancelled: list[str] = []

    def addJobTag(self, tag: str) -> None:  # pyspark's names
        self.tags.append(tag)

    def removeJobTag(self, tag: str) -> None:
        self.tags.remove(tag)

    def cancelJobsWithTag(self, tag: str) -> None:
        self.cancelled.append(tag)


def test_a_library_call_on_the_callers_session_cancels_its_own_tag_and_gives_the_handler_back(
    restored: None,
) -> None:
    context = Context()
    session = type("Session", (), {"sparkContext": context})()
    seen: list[int] = []

    def callers(signum: int, _frame: object) -> None:
        seen.append(signum)

    signal.signal(signal.SIGINT, callers)
    tags: list[str | None] = []

    def call() -> None:
        with interrupts.on_callers_session(session):
            tags.append(interrupts.caller_tag)
            interrupts.tag_thread(type("ThreadSession", (), {"sparkContext": context})())  # an apply thread's
            _ctrl_c()

    with pytest.raises(KeyboardInterrupt):
        call()
    (tag,) = tags
    assert tag is not None
    for _ in range(100):
        if context.cancelled:
            break
        threading.Event().wait(0.01)
    assert context.cancelled == [tag]  # that tag's jobs, not every job of the caller's application
    assert seen == []
    assert signal.getsignal(signal.SIGINT) is callers
    assert interrupts.caller_tag is None
    assert context.tags == [tag]  # the main thread's tag removed; the apply thread's ends with its thread


def test_a_call_off_the_main_thread_or_on_connect_keeps_the_callers_handling(restored: None) -> None:
    context = Context()
    connect = type("SparkSession", (), {"__module__": "pyspark.sql.connect.session", "sparkContext": context})()
    with interrupts.on_callers_session(connect):
        assert interrupts.caller_tag is None
    done: list[str | None] = []

    def call() -> None:
        with interrupts.on_callers_session(type("Session", (), {"sparkContext": context})()):
            done.append(interrupts.caller_tag)

    worker = threading.Thread(target=call)
    worker.start()
    worker.join()
    assert done == [None]
    assert context.tags == []
