"""spark-submit gets an environment's secrets in a private properties file, never as `--conf` on its command
line, which every user of the machine reads in /proc/<pid>/cmdline (pure, and one real child process standing in
for spark-submit: no JVM)."""

from __future__ import annotations

import os
import stat
import sys
import textwrap
from pathlib import Path

import pytest

from delta_sync.spark.jars import DeltaJars
from delta_sync.spark.submit import _escaped, run_submit, secret_conf, submit_command
from delta_sync.specs.settings import SubmitSettings

JARS = DeltaJars((Path("/jars/delta-spark.jar"),), version="4.4.0")
HOME = Path("/project/.delta-sync/prod")
SECRET = "s3cr3t-from-env"
CONF = {
    "spark.hadoop.fs.s3a.endpoint": "http://s3:9000",
    "spark.hadoop.fs.s3a.secret.key": SECRET,  # as `${env:LAKE_SECRET}` fills it in
    "spark.hadoop.fs.s3a.access.key": "lake-admin",  # written out, but a key Spark masks
    "spark.hive.metastore.client.auth.password": "written-out",
    "spark.delta-sync.note": f"prefix-{SECRET}",  # a value holding a secret, whatever its key
    "spark.sql.shuffle.partitions": "2",
}


def redact(text: str) -> str:
    return text.replace(SECRET, "***")


def test_settings_holding_a_secret_are_set_apart_by_value_or_by_spark_s_own_secret_keys() -> None:
    apart = secret_conf(SubmitSettings(master="local[2]", conf=CONF), redact)
    assert apart == {
        "spark.hadoop.fs.s3a.secret.key": SECRET,
        "spark.hadoop.fs.s3a.access.key": "lake-admin",
        "spark.hive.metastore.client.auth.password": "written-out",
        "spark.delta-sync.note": f"prefix-{SECRET}",
    }


def test_the_command_leaves_them_off_and_a_printed_command_keeps_them_to_be_masked() -> None:
    settings = SubmitSettings(master="local[2]", conf=CONF, spark_submit="/opt/spark/bin/spark-submit")
    apart = secret_conf(settings, redact)
    command = submit_command(settings, Path("/tmp/plan.json"), HOME, JARS, Path("/tmp/ds.zip"), apart=apart)
    text = " ".join(command)
    for value in (SECRET, "written-out", "lake-admin"):
        assert value not in text
    assert "spark.hadoop.fs.s3a.endpoint=http://s3:9000" in text
    assert "spark.sql.shuffle.partitions=2" in text
    printed = submit_command(settings, Path("/tmp/plan.json"), HOME, JARS, Path("/tmp/ds.zip"))
    assert f"spark.hadoop.fs.s3a.secret.key={SECRET}" in printed  # the CLI masks it before printing


# What java.util.Properties.load reads back for each written form (its documented escapes).
@pytest.mark.parametrize(
    ("text", "key", "written"),
    [
        ("plain/Value+=1", False, "plain/Value+=1"),
        ("a=b:c d", True, "a\\=b\\:c\\ d"),
        (" lead", False, "\\ lead"),
        ("#hash", False, "\\#hash"),
        ("back\\slash", False, "back\\\\slash"),
        ("two\nlines", False, "two\\nlines"),
        ("é€", False, "\\u00e9\\u20ac"),
        ("😀", False, "\\ud83d\\ude00"),
    ],
)
def test_properties_are_escaped_as_java_reads_them(text: str, key: bool, written: str) -> None:
    assert _escaped(text, key) == written


def test_the_child_gets_a_private_file_gone_afterwards_and_no_variable_holding_a_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A stand-in for spark-submit: reports its argv, the file's mode and content, and its environment.
    fake = tmp_path / "spark-submit"
    fake.write_text(
        textwrap.dedent(
            f"""\
            #!{sys.executable}
            import os, stat, sys
            args = sys.argv[1:]
            path = args[args.index("--properties-file") + 1]
            print("ARGS", args)
            print("MODE", oct(stat.S_IMODE(os.stat(path).st_mode)))
            print("DIRMODE", oct(stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode)))
            print("FILE", open(path).read()[::-1].replace("\\n", "|"))  # reversed: the log masks the secret
            print("PATH", path)
            print("ENV", "LAKE_SECRET" in os.environ, "KEPT" in os.environ)
            """
        )
    )
    fake.chmod(0o700)
    monkeypatch.setenv("LAKE_SECRET", SECRET)
    monkeypatch.setenv("KEPT", "not a secret")
    lines: list[str] = []
    apart = {"spark.hadoop.fs.s3a.secret.key": SECRET}
    outcome = run_submit(
        [str(fake), "--master", "local[2]", "job.py"], tmp_path / "submit.log", lines.append, redact, apart
    )
    assert outcome.exit_code == 0
    log = (tmp_path / "submit.log").read_text()
    assert SECRET not in log  # the log is redacted; the file's content is checked by its escaped form below
    found = dict(line.split(" ", 1) for line in log.splitlines())
    assert found["ARGS"].startswith("['--properties-file', ")
    assert "'--load-spark-defaults', '--master', 'local[2]', 'job.py']" in found["ARGS"]
    assert found["MODE"] == oct(stat.S_IRUSR | stat.S_IWUSR)
    assert found["DIRMODE"] == oct(stat.S_IRWXU)
    assert found["FILE"] == f"spark.hadoop.fs.s3a.secret.key={SECRET}\n"[::-1].replace("\n", "|")
    assert found["ENV"] == "False True"  # the variable holding the secret dropped, the others kept
    assert not os.path.exists(found["PATH"])
    assert not os.path.exists(os.path.dirname(found["PATH"]))


def test_without_secrets_the_command_is_run_as_built(tmp_path: Path) -> None:
    fake = tmp_path / "spark-submit"
    fake.write_text(f"#!{sys.executable}\nimport sys\nprint(sys.argv[1:])\n")
    fake.chmod(0o700)
    run_submit([str(fake), "--master", "local[1]"], tmp_path / "submit.log", lambda _l: None)
    assert (tmp_path / "submit.log").read_text().strip() == "['--master', 'local[1]']"
