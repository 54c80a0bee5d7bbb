"""Derby's one process per metastore, told in one sentence: who holds the embedded catalog, and what to do.
Without a JVM: the lock every delta-sync process takes first is a file lock, held here by a child process."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from delta_sync.model.errors import CatalogError
from delta_sync.spark import engine_control, session, submit
from delta_sync.specs.settings import SubmitSettings

HOLD = """
import sys
from pathlib import Path
from delta_sync.spark import session
session.holder = sys.argv[2]
handle = session.hold(Path(sys.argv[1]))
print("held", flush=True)
sys.stdin.read()
"""


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / ".delta-sync" / "batch"
    folder.mkdir(parents=True)
    return folder


@contextlib.contextmanager
def holding(home: Path, holder: str) -> Iterator[subprocess.Popen[str]]:
    child = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(home), holder], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "held"
    try:
        yield child
    finally:
        child.communicate("", timeout=30)


def test_a_catalog_held_by_another_process_names_it(home: Path) -> None:
    with holding(home, "spark-submit's driver of `delta-sync apply`") as child:
        with pytest.raises(CatalogError) as raised:
            session.hold(home)
        assert str(raised.value) == (
            f"The local catalog in {home} is in use by another delta-sync process (spark-submit's driver of "
            f"`delta-sync apply`, pid {child.pid}); wait for it to finish, then retry."
        )
        # Derby's refusal while a process of delta-sync holds the lock names that process too.
        assert str(session.derby_busy_error(home)) == str(raised.value)
    # Free again: taken, and Derby's refusal now means a Spark delta-sync does not know of.
    session.hold(home).close()
    assert "in use by another Spark process (a notebook" in str(session.derby_busy_error(home))


def test_a_catalog_held_by_the_engine_says_how_to_stop_it(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with holding(home, "the delta-sync engine") as child:
        state = {
            "pid": child.pid,
            "jvm_pid": child.pid,
            "port": 1,
            "token": "t",
            "version": "v",
            "settings": "s",
            "started": 0.0,
            "idle": 1.0,
        }
        engine_control.write_private(engine_control.state_path(home), state)
        monkeypatch.setattr(engine_control, "_from_cli", False)
        with pytest.raises(CatalogError) as raised:
            session.hold(home)
        assert str(raised.value) == (
            f"The local catalog in {home} is held by the delta-sync engine (pid {child.pid}); "
            "stop it first: delta-sync engine stop --env batch"
        )
        monkeypatch.setattr(engine_control, "_from_cli", True)  # a command run with --no-engine
        assert str(session.derby_busy_error(home)).endswith(
            "run without --no-engine to use it, or stop it first: delta-sync engine stop --env batch"
        )


def test_the_holder_is_written_for_the_others_to_read(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session, "holder", "")
    monkeypatch.setattr(engine_control, "_from_cli", True)
    monkeypatch.setattr(sys, "argv", ["delta-sync", "plan", "specs"])
    handle = session.hold(home)
    try:
        assert (home / ".lock").read_text() == f"{os.getpid()} `delta-sync plan specs`\n"
    finally:
        handle.close()


def test_derby_home_is_read_from_a_sessions_settings() -> None:
    url = "jdbc:derby:;databaseName=/p/.delta-sync/ci/metastore_db;create=true"
    settings = {"spark.hadoop.javax.jdo.option.ConnectionURL": url}
    assert session.derby_home(settings.get) == Path("/p/.delta-sync/ci")
    assert session.derby_home({"javax.jdo.option.ConnectionURL": "jdbc:postgresql://h/db"}.get) is None
    nothing: dict[str, str] = {}
    assert session.derby_home(nothing.get) is None


def test_a_driver_refused_by_derby_is_told_in_one_sentence(home: Path) -> None:
    log = home / "logs" / "submit.log"
    log.parent.mkdir()
    log.write_text("ERROR XSDB6: Another instance of Derby may have already booted the database /x/metastore_db.\n")
    embedded = SubmitSettings(master="local[2]")
    refused = submit.catalog_refused(embedded, home, log)
    assert refused is not None
    assert refused.startswith(f"The local catalog in {home} is in use by another Spark process")
    own = SubmitSettings(master="yarn", conf={"spark.hadoop.hive.metastore.uris": "thrift://m:9083"})
    assert submit.catalog_refused(own, home, log) is None
    log.write_text(json.dumps({"something": "else"}))
    assert submit.catalog_refused(embedded, home, log) is None


def test_the_driver_is_told_where_the_embedded_catalog_is(home: Path) -> None:
    from delta_sync.spark.jars import DeltaJars
    from delta_sync.spark.submit import LOCAL_HOME

    jars = DeltaJars(jars=())
    assert submit.submit_conf(SubmitSettings(master="local[2]"), home, jars)[LOCAL_HOME] == str(home)
    own = SubmitSettings(master="yarn", conf={"spark.sql.catalogImplementation": "in-memory"})
    assert LOCAL_HOME not in submit.submit_conf(own, home, jars)


def test_derby_refusing_the_holder_itself_means_another_spark(home: Path) -> None:
    handle = session.hold(home)  # a command, or spark-submit's driver, took the lock, then Derby refused it
    try:
        assert "in use by another Spark process (a notebook" in str(session.derby_busy_error(home))
    finally:
        handle.close()
