"""Servers that are not there, through the real command line: a bad master URL, an unreachable master,
an unreachable or misconfigured Hive metastore, a Spark Connect server that is down. Each is one sentence
on stderr naming what was tried, the log file and what to check, exit 1, within seconds (Spark alone
takes 72 s for a closed master port and Hive 600 s for a port that never answers)."""

from __future__ import annotations

import os
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from delta_sync.spark.servers import _thrift_call, thrift_silent
from tests import servers
from tests.servers.metastore import hive_metastore

pytestmark = pytest.mark.spark

BOUND = 30.0  # seconds; each case measured at 0.3-5.3 s on a busy 2-core machine
SPEC = """\
table: shop.orders
columns:
  - name: order_id
    type: bigint
"""


def plan_in(
    tmp_path: Path, environment: str, env: dict[str, str] | None = None, command: tuple[str, ...] = ("plan",)
) -> tuple[subprocess.CompletedProcess[str], float]:
    """`delta-sync plan` (or `command`) in a project whose one environment is `environment` (YAML), and
    its duration."""
    (tmp_path / "specs" / "shop").mkdir(parents=True)
    (tmp_path / "specs" / "shop" / "orders.yaml").write_text(SPEC)
    (tmp_path / "delta-sync.yaml").write_text(f"default_env: x\nenvs:\n  x:\n    {environment}\n")
    environ = {k: v for k, v in os.environ.items() if k != "DELTA_SYNC_HOME"} | (env or {})
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "delta_sync", *command],
        cwd=tmp_path,
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done, time.monotonic() - started


def error_line(done: subprocess.CompletedProcess[str]) -> str:
    """The one line of the error: progress lines aside, nothing else reached stderr."""
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout == ""
    assert "Traceback" not in done.stderr, done.stderr
    assert "at org.apache" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if not line.startswith("[")]
    assert len(lines) == 1, done.stderr
    return lines[0]


def log_of(tmp_path: Path) -> Path:
    return tmp_path / ".delta-sync" / "x" / "logs" / "spark.log"


@contextmanager
def closed_port() -> Iterator[int]:
    """A port on 127.0.0.1 nothing listens on."""
    (port,) = servers.free_ports(1)
    assert not servers.port_open(port)
    yield port


@pytest.mark.parametrize("master", ["foo://", "spark:/x", "local[two]", "spark://127.0.0.1"])
def test_a_bad_master_url_is_one_sentence(tmp_path: Path, master: str) -> None:
    done, elapsed = plan_in(tmp_path, f'spark: {{master: "{master}"}}')
    line = error_line(done)
    assert line == (
        f"Error: The Spark master `{master}` is not a master URL Spark knows; write local[*], local[N], "
        f"spark://HOST:PORT, yarn or k8s://https://HOST:PORT. Details: {log_of(tmp_path)}"
    )
    assert elapsed < BOUND


def test_an_unreachable_master_is_one_sentence_in_seconds(tmp_path: Path) -> None:
    with closed_port() as port:
        done, elapsed = plan_in(tmp_path, f'spark: {{master: "spark://127.0.0.1:{port}"}}')
    line = error_line(done)
    assert line == (
        f"Error: Could not reach the Spark master at spark://127.0.0.1:{port} (127.0.0.1:{port}: connection "
        "refused); check that the master runs there and that this is its host and port. "
        f"Details: {log_of(tmp_path)}"
    )
    assert "connection refused" in log_of(tmp_path).read_text()
    assert elapsed < BOUND, elapsed


def test_an_unreachable_metastore_is_one_sentence_in_seconds(tmp_path: Path) -> None:
    with closed_port() as port:
        uri = f"thrift://127.0.0.1:{port}"
        done, elapsed = plan_in(tmp_path, f'spark: {{conf: {{spark.hadoop.hive.metastore.uris: "{uri}"}}}}')
    line = error_line(done)
    assert line == (
        f"Error: Could not reach the Hive metastore at {uri} ({uri}: connection refused); check that the "
        "metastore runs there and that spark.hadoop.hive.metastore.uris names its thrift host and port. "
        f"Details: {log_of(tmp_path)}"
    )
    assert elapsed < BOUND, elapsed


def test_a_port_that_is_not_a_metastore_does_not_hang(tmp_path: Path) -> None:
    with servers.silent_server() as port:
        uri = f"thrift://127.0.0.1:{port}"
        done, elapsed = plan_in(tmp_path, f'spark: {{conf: {{spark.hive.metastore.uris: "{uri}"}}}}')
    line = error_line(done)
    assert line == (
        f"Error: The Hive metastore at {uri} is not answering (it accepts connections but did not answer a "
        "thrift call within 5 s); check that spark.hive.metastore.uris names the metastore's thrift port, not "
        f"another service's, and that the metastore is not hung. Details: {log_of(tmp_path)}"
    )
    assert elapsed < BOUND, elapsed


def test_a_malformed_metastore_uri_is_one_sentence(tmp_path: Path) -> None:
    done, _ = plan_in(tmp_path, 'spark: {conf: {spark.hadoop.hive.metastore.uris: "metastore.internal:9083"}}')
    assert error_line(done) == (
        "Error: The Hive metastore setting spark.hadoop.hive.metastore.uris = `metastore.internal:9083` is not a list "
        "of thrift://HOST:PORT; "
        f"write the metastore's thrift URI there. Details: {log_of(tmp_path)}"
    )


def test_a_real_metastore_answers_the_probe_and_one_of_several_uris_is_enough(tmp_path: Path) -> None:
    """The check must never fail a real metastore: it answers the probe's thrift call, and a closed port
    before it in the list (Hive's client skips it) does not stop the session."""
    with closed_port() as closed, hive_metastore(tmp_path / "hms") as metastore:
        with socket.create_connection(("127.0.0.1", metastore.port), timeout=10) as sock:
            sock.sendall(_thrift_call("getVersion"))
            (header,) = struct.unpack(">I", sock.recv(4))
        assert header in (0x80010002, 0x80010003)  # a REPLY or an EXCEPTION message: thrift either way
        assert not thrift_silent("127.0.0.1", metastore.port)
        uris = f"thrift://127.0.0.1:{closed},{metastore.uri}"
        done, _ = plan_in(
            tmp_path / "project",
            f'spark: {{master: "local[1]", conf: {{spark.hadoop.hive.metastore.uris: "{uris}", '
            f'spark.sql.warehouse.dir: "{metastore.warehouse.as_uri()}"}}}}',
            command=("sql", "SHOW SCHEMAS", "--format", "json"),
        )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "default" in done.stdout


def test_a_spark_connect_server_that_is_down_is_one_sentence_in_seconds(tmp_path: Path) -> None:
    with closed_port() as port:
        done, elapsed = plan_in(
            tmp_path, f'connect: "sc://127.0.0.1:{port}/;token=${{env:TOKEN}}"', {"TOKEN": "s3cret"}
        )
    line = error_line(done)
    assert line.startswith(f"Error: Could not reach Spark Connect at sc://127.0.0.1:{port}/;token=***: "), line
    assert "Connection refused" in line
    assert line.endswith("is the server running, and is this its host and port?")
    assert "s3cret" not in done.stderr
    assert elapsed < BOUND, elapsed
