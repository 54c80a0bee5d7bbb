"""An S3 API server on 127.0.0.1: moto's standalone server (`moto[server]`, a test dependency, never a runtime one).

One server per test session (per xdist worker), started on first use on a free port and stopped when the
session ends. Everything is in its memory: nothing is written to disk but its log.

    def test_on_s3(s3: S3) -> None:
        s3.endpoint        # "http://127.0.0.1:<port>": S3A's fs.s3a.endpoint, boto3's and obstore's endpoint_url
        s3.bucket          # a bucket made for the session: "lake"
        s3.access_key      # any key is accepted: "delta-sync-test"
        s3.secret_key      # a secret of this session's own (random), which a test can grep outputs for
        s3.region          # "us-east-1"
        s3.create_bucket("other")         # another bucket (its name back); one that exists is left as it is
        s3.keys("lake", "warehouse/")     # the object keys under a prefix, sorted
        s3.spark_conf()    # the Spark settings S3A needs for it: endpoint, path-style, region, key and secret

Path-style requests only (`http://127.0.0.1:<port>/<bucket>/<key>`): there is no DNS name per bucket here, so
S3A needs `fs.s3a.path.style.access=true`. moto checks no signature: any key and secret are accepted, and a
wrong secret is not refused (a test of refused credentials needs a real S3). `s3_server(folder)` starts one for
a `with` block, outside pytest's fixtures.
"""

from __future__ import annotations

import contextlib
import secrets
import sys
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.servers import LOCALHOST, ServerProcess, free_ports, logs_kept_on_failure, port_open, running

BUCKET = "lake"
ACCESS_KEY = "delta-sync-test"
REGION = "us-east-1"
_S3_NS = {"s3": "http://s3.amazonaws.com/doc/2006-03-01/"}


@dataclass(frozen=True)
class S3:
    """A running S3 API server, one bucket made in it, and the credentials it is reached with."""

    process: ServerProcess
    port: int
    secret_key: str
    bucket: str = BUCKET
    access_key: str = ACCESS_KEY
    region: str = REGION

    @property
    def endpoint(self) -> str:
        return f"http://{LOCALHOST}:{self.port}"

    @property
    def servers(self) -> tuple[ServerProcess]:
        return (self.process,)

    def create_bucket(self, name: str) -> str:
        """A bucket called `name` (made unless it exists); its name."""
        try:
            self._request("PUT", f"/{name}")
        except urllib.error.HTTPError as exc:
            if exc.code != 409:  # BucketAlreadyOwnedByYou
                raise
        return name

    def keys(self, bucket: str | None = None, prefix: str = "") -> list[str]:
        """The keys of the objects in `bucket` (default: the session's) under `prefix`, sorted."""
        found: list[str] = []
        token = ""
        while True:
            query = urllib.parse.urlencode(
                {"list-type": "2", "prefix": prefix, **({"continuation-token": token} if token else {})}
            )
            root = ET.fromstring(self._request("GET", f"/{bucket or self.bucket}?{query}"))
            found += [k.text or "" for k in root.findall("s3:Contents/s3:Key", _S3_NS)]
            token = root.findtext("s3:NextContinuationToken", "", _S3_NS)
            if not token:
                return sorted(found)

    def spark_conf(self, secret: str | None = None) -> dict[str, str]:
        """The Spark settings S3A needs to reach this server; `secret` in place of the secret key (e.g. the
        `${env:NAME}` a project file writes)."""
        prefix = "spark.hadoop.fs.s3a."
        return {
            f"{prefix}endpoint": self.endpoint,
            f"{prefix}endpoint.region": self.region,
            f"{prefix}path.style.access": "true",
            f"{prefix}access.key": self.access_key,
            f"{prefix}secret.key": self.secret_key if secret is None else secret,
        }

    def _request(self, method: str, target: str) -> bytes:
        # moto checks no signature, so the standard library's plain requests do for the test's own set-up.
        request = urllib.request.Request(f"{self.endpoint}{target}", method=method)
        with urllib.request.urlopen(request, timeout=30) as response:
            body: bytes = response.read()
            return body


@contextlib.contextmanager
def s3_server(folder: Path) -> Iterator[S3]:
    """moto's S3 server on a free port of 127.0.0.1, its log under `folder`, the bucket `lake` made; stopped on
    the way out."""
    (port,) = free_ports(1)
    command = [sys.executable, "-m", "moto.server", "-H", LOCALHOST, "-p", str(port)]
    process = ServerProcess("moto s3", command, folder / "logs" / "moto.log", cwd=folder)
    with running(process):
        process.start()
        process.wait_until(lambda: port_open(port), f"port {port} listening", timeout=60)
        # A secret no output could hold by chance: the secret tests grep for it.
        server = S3(process, port, secret_key=f"s3-secret-{secrets.token_hex(12)}")
        server.create_bucket(server.bucket)
        yield server


@pytest.fixture(scope="session")
def s3(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3]:
    """The session's S3 server (see the module's docstring); its log's tail is printed when a test fails."""
    with s3_server(tmp_path_factory.mktemp("s3")) as server, logs_kept_on_failure(request, server.servers):
        yield server
