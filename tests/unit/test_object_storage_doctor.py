"""`doctor` on object storage without a JVM: each S3 bucket an environment names listed by a real client against
a stand-in S3 endpoint on 127.0.0.1 (refused credentials, a missing bucket, nothing listening: one sentence each,
no secret in it), the Azure and GCS connectors named, and the one sentence on concurrent writers that `doctor`
and `plan` share."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from delta_sync.render.doctor import Check, Status
from delta_sync.spark import storage_probes as probes
from delta_sync.spark.object_storage import MULTI_CLUSTER_LOG_STORE, concurrency_note, single_driver_schemes

SECRET = "s3cr3t-never-shown"


def s3_conf(endpoint: str, **more: str) -> dict[str, str]:
    return {
        "spark.sql.warehouse.dir": "s3a://lake/warehouse",
        "spark.hadoop.fs.s3a.endpoint": endpoint,
        "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.hadoop.fs.s3a.endpoint.region": "us-east-1",
        "spark.hadoop.fs.s3a.access.key": "lake-admin",
        "spark.hadoop.fs.s3a.secret.key": SECRET,
        **more,
    }


def redact(text: str) -> str:
    return text.replace(SECRET, "***")


class _S3Errors(http.server.BaseHTTPRequestHandler):
    """Answers every request as S3 would refuse it: the error code is the bucket's name."""

    def do_GET(self) -> None:
        bucket = self.path.strip("/").split("/")[0].split("?")[0]
        if bucket == "lake":
            body = b'<?xml version="1.0"?><ListBucketResult><Name>lake</Name><KeyCount>0</KeyCount></ListBucketResult>'
            status = 200
        else:
            code = {"missing": "NoSuchBucket", "badkey": "InvalidAccessKeyId", "badsecret": "SignatureDoesNotMatch"}
            status = 404 if bucket == "missing" else 403
            found = code.get(bucket, "AccessDenied")
            body = f'<?xml version="1.0"?><Error><Code>{found}</Code><Message>no</Message></Error>'.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _S3Errors)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def only(checks: list[Check]) -> Check:
    assert len(checks) == 1, checks
    return checks[0]


def test_a_reachable_bucket_is_ok(endpoint: str) -> None:
    check = only(probes.storage_checks(["s3a://lake/warehouse"], s3_conf(endpoint), redact))
    assert check.status is Status.OK, check.line
    assert check.line == (
        f"ok      Bucket lake: s3a://lake/warehouse reachable at {endpoint}, listed with the settings' access key"
    )


@pytest.mark.parametrize(
    ("bucket", "said", "fix"),
    [
        ("missing", "there is no bucket missing at {e} (s3a://missing/w is on it)", "create the bucket"),
        ("badkey", "{e} refused the access key for bucket badkey (InvalidAccessKeyId: it knows no such key)",
         "check spark.hadoop.fs.s3a.access.key"),
        ("badsecret", "{e} refused the credentials for bucket badsecret (SignatureDoesNotMatch: the secret key is "
         "not the access key's)", "check spark.hadoop.fs.s3a.secret.key"),
        ("locked", "{e} refused to list s3a://locked/w with the credentials given (AccessDenied)", "s3:ListBucket"),
    ],
)  # fmt: skip
def test_a_refusal_is_one_sentence_naming_the_setting_to_fix(endpoint: str, bucket: str, said: str, fix: str) -> None:
    check = only(probes.storage_checks([f"s3a://{bucket}/w"], s3_conf(endpoint), redact))
    assert check.status is Status.FAILURE
    assert check.message == said.format(e=endpoint)
    assert fix in check.fix
    assert SECRET not in check.line
    assert "\n" not in check.message


def test_nothing_listening_is_one_sentence_within_seconds() -> None:
    import socket
    import time

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, not listening: connections are refused
        started = time.monotonic()
        check = only(probes.storage_checks(["s3://lake/w"], s3_conf(f"http://127.0.0.1:{port}"), redact))
    assert time.monotonic() - started < 15
    assert check.status is Status.FAILURE
    assert check.message == (
        f"nothing answers at http://127.0.0.1:{port} (connection refused), so bucket lake cannot be reached"
    )
    assert check.fix == "check spark.hadoop.fs.s3a.endpoint (and that the server runs)"


def test_one_check_per_bucket_whatever_the_scheme(endpoint: str) -> None:
    locations = probes.storage_locations(
        s3_conf(endpoint), ["s3://lake/external/events", "s3n://lake/x/", "/local/path", "s3a://missing/t"]
    )
    assert locations == ["s3a://lake/warehouse", "s3://lake/external/events", "s3n://lake/x/", "s3a://missing/t"]
    checks = probes.storage_checks(locations, s3_conf(endpoint), redact)
    assert [(c.title, c.status) for c in checks] == [("Bucket lake", Status.OK), ("Bucket missing", Status.FAILURE)]


def test_the_client_s_own_words_are_masked_and_cut_to_one_line() -> None:
    said = f"Generic S3 error: Error performing list request: {SECRET} went wrong\n\nDebug source:\nGeneric {{...}}"
    check = only(probes.storage_checks(["s3a://lake/w"], s3_conf("http://s3:9000"), redact, lambda *_a: said))
    assert (
        check.message == "could not list s3a://lake/w at http://s3:9000: Error performing list request: *** went wrong"
    )


def test_credentials_only_s3a_reads_are_not_checked() -> None:
    conf = {
        "spark.sql.warehouse.dir": "s3a://lake/w",
        "spark.hadoop.fs.s3a.aws.credentials.provider": "com.example.VaultCredentialsProvider",
    }
    check = only(probes.storage_checks(["s3a://lake/w"], conf, redact, lambda *_a: pytest.fail("listed")))
    assert check.status is Status.OK
    assert "not checked (its credentials come from com.example.VaultCredentialsProvider" in check.message


def test_no_credentials_anywhere_is_said_so() -> None:
    said = "Error performing PUT http://169.254.169.254/latest/api/token in 1ms - 403 Forbidden"
    message, fix = probes.bucket_problem("lake", "s3a://lake/w", "AWS S3 (us-east-1)", said)
    assert message.startswith("no credentials for bucket lake: the settings name no access key")
    assert "AWS_ACCESS_KEY_ID" in fix


@pytest.mark.parametrize(
    ("location", "conf", "lacking"),
    [
        ("abfss://c@acct.dfs.core.windows.net/w", {}, ["hadoop-azure:3.5.0", "fs.azure.account.key.acct.dfs.core"]),
        (
            "abfss://c@acct.dfs.core.windows.net/w",
            {"spark.jars.packages": "org.apache.hadoop:hadoop-azure:3.5.0"},
            ["spark.hadoop.fs.azure.account.key.acct.dfs.core.windows.net"],
        ),
        ("gs://lake/w", {}, ["gcs-connector:hadoop3-2.2.26", "fs.gs.impl", "json.keyfile"]),
    ],
)
def test_azure_and_gcs_locations_name_the_connector_and_settings_they_lack(
    location: str, conf: dict[str, str], lacking: list[str]
) -> None:
    check = only(probes.storage_checks([location], conf, redact))
    assert check.status is Status.WARNING
    for part in lacking:
        assert part in check.fix, check.fix
    assert f"lack {len(lacking)} of" in check.message


def test_azure_and_gcs_with_their_connectors_named_are_ok() -> None:
    azure = {
        "spark.jars.packages": "org.apache.hadoop:hadoop-azure:3.5.0",
        "spark.hadoop.fs.azure.account.key.acct.dfs.core.windows.net": SECRET,
    }
    gcs = {
        "spark.jars.packages": "com.google.cloud.bigdataoss:gcs-connector:hadoop3-2.2.26",
        "spark.hadoop.fs.gs.impl": "com.google.cloud.hadoop.fs.gcs.GoogleHadoopFileSystem",
        "spark.hadoop.google.cloud.auth.service.account.json.keyfile": "/k.json",
    }
    for location, conf in (("abfss://c@acct.dfs.core.windows.net/w", azure), ("gs://lake/w", gcs)):
        assert only(probes.storage_checks([location], conf, redact)).status is Status.OK


# --- concurrent writers: the sentence doctor and plan share ------------------------------------------------


def test_an_environment_on_s3_with_delta_s_default_log_store_is_told_once() -> None:
    conf = {"spark.sql.warehouse.dir": "s3a://lake/w"}
    note = concurrency_note(conf, ["s3://lake/external/events"])
    assert note is not None
    assert note.startswith("Delta commits to tables on s3a://, s3:// are safe from one Spark driver at a time only")
    assert "spark.delta.logStore.s3a.impl and spark.delta.logStore.s3.impl" in note
    assert note.count(". ") == 0  # one sentence
    assert note.endswith(".")
    check = probes.concurrency_check(conf, ["s3://lake/external/events"])
    assert check is not None
    assert check.status is Status.WARNING
    assert check.message == note


@pytest.mark.parametrize(
    ("conf", "locations", "schemes"),
    [
        ({"spark.hadoop.fs.s3a.endpoint.region": "eu-west-1"}, [], ["s3a"]),  # S3 by its settings alone
        ({"spark.sql.warehouse.dir": "s3a://l/w", "spark.delta.logStore.s3a.impl": MULTI_CLUSTER_LOG_STORE}, [], []),
        ({"spark.delta.logStore.s3a.impl": MULTI_CLUSTER_LOG_STORE}, ["s3://l/t"], ["s3"]),
        ({"spark.delta.logStore.class": "com.example.LockedLogStore"}, ["s3a://l/t"], []),
        ({}, ["s3a://l/t"], ["s3a"]),
        ({}, ["/data/t", "abfss://c@a.dfs.core.windows.net/t"], []),
        ({"spark.sql.warehouse.dir": "/data/w"}, [], []),
    ],
)
def test_which_schemes_commit_through_the_single_driver_log_store(
    conf: dict[str, str], locations: list[str], schemes: list[str]
) -> None:
    assert single_driver_schemes(conf, locations) == schemes
    assert (concurrency_note(conf, locations) is None) == (schemes == [])


def test_a_bucket_in_another_region_fails_only_where_the_region_is_set() -> None:
    said = "Server returned non-2xx status code: 301 Moved Permanently: <Error><Code>PermanentRedirect</Code></Error>"
    unset = {"spark.sql.warehouse.dir": "s3a://lake/w", "spark.hadoop.fs.s3a.access.key": "k"}
    guessed = only(probes.storage_checks(["s3a://lake/w"], unset, redact, lambda *_a: said))
    assert guessed.status is Status.WARNING
    assert guessed.message.startswith("bucket lake is in another region than the one it was asked in")
    named = {**unset, "spark.hadoop.fs.s3a.endpoint.region": "eu-west-1"}
    wrong = only(probes.storage_checks(["s3a://lake/w"], named, redact, lambda *_a: said))
    assert wrong.status is Status.FAILURE
    assert wrong.fix == "set spark.hadoop.fs.s3a.endpoint.region to the bucket's region"
