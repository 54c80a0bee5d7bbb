"""The table of Delta's features (delta_sync.planning.features) against the Delta jar itself, and the issue's
defects on real Delta through the command line, in one story on both paths (its plans in-process, as on CI;
the rest through the warm engine): a VARIANT column and a string -> VARIANT rewrite
are gated as `irreversible` beside timestamp_ntz, and each compatibility finding names its spec line and sits
under the column it is about."""

from __future__ import annotations

import json

import pytest

from delta_sync.planning.features import FEATURES
from delta_sync.spark.catalog import SparkCatalog

from .cli import ENGINE, IN_PROCESS, Cli


def test_the_feature_table_is_delta_s_own(catalog: SparkCatalog) -> None:
    jvm = catalog.spark._jvm
    removable = jvm.java.lang.Class.forName(
        "org.apache.spark.sql.delta.RemovableFeature",
        False,
        jvm.java.lang.Thread.currentThread().getContextClassLoader(),
    )
    delta = {}
    values = jvm.org.apache.spark.sql.delta.TableFeature.allSupportedFeaturesMap().values().iterator()
    while values.hasNext():
        feature = values.next()
        required = feature.requiredFeatures().iterator()
        requires = []
        while required.hasNext():
            requires.append(required.next().name())
        delta[feature.name()] = (
            feature.minReaderVersion(),
            feature.minWriterVersion(),
            feature.isReaderWriterFeature(),
            feature.isLegacyFeature(),
            sorted(requires),
            removable.isInstance(feature),
        )
    ours = {
        f.name: (f.reader, f.writer, f.reader_writer, f.legacy, sorted(f.requires), f.drop is not None)
        for f in FEATURES.values()
    }
    assert sorted(set(delta) - set(ours)) == [], "features Delta knows that have no decision here"
    assert sorted(set(ours) - set(delta)) == [], "features here that Delta does not know"
    assert {name: ours[name] for name in delta} == delta


SPEC_EVENTS = """\
table: {schema}.events
columns:
  - name: id
    type: bigint
  - name: payload
    type: variant
  - name: at
    type: timestamp_ntz
  - name: note
    type: string
"""

SPEC_DOCS = """\
table: {schema}.docs
columns:
  - name: id
    type: bigint
  - name: body
    type: variant
    using: parse_json(body)
"""


@pytest.mark.parametrize("cli_path", [ENGINE])  # and in-process for the plans (Cli.use)
def test_variant_is_gated_like_timestamp_ntz_and_each_finding_is_at_its_line(cli: Cli, schema: str) -> None:
    specs = cli.root / "specs"
    specs.mkdir()
    (specs / "events.yaml").write_text(f"table: {schema}.events\ncolumns:\n  - {{name: id, type: bigint}}\n")
    (specs / "docs.yaml").write_text(
        f"table: {schema}.docs\ncolumns:\n  - {{name: id, type: bigint}}\n  - {{name: body, type: string}}\n"
    )
    assert cli.run(["apply", "specs", "--yes"]).returncode == 0
    assert cli.run(["sql", f"""INSERT INTO {schema}.docs VALUES (1, '{{"a": 1}}')"""]).returncode == 0
    (specs / "events.yaml").write_text(SPEC_EVENTS.format(schema=schema))
    (specs / "docs.yaml").write_text(SPEC_DOCS.format(schema=schema))
    (cli.root / "delta-sync.yaml").write_text("readers: [delta-sharing]\n")

    cli.use(IN_PROCESS)
    planned = cli.run(["plan", "specs", "--format", "json"])
    assert planned.returncode == 3, planned.stdout + planned.stderr
    document = json.loads(planned.stdout)
    hazards = [(a["kind"], a["table"], h) for a in document["actions"] for h in a.get("hazards", [])]
    irreversible = {(kind, h["origin"]["line"]) for kind, _t, h in hazards if h["class"] == "irreversible"}
    # payload (line 5) by its ADD COLUMNS, at (line 7) by its feature switch, body (line 5 of docs) by the rewrite
    assert ("AddColumns", 5) in irreversible, hazards
    assert ("EnableFeature", 7) in irreversible, hazards
    assert ("RewriteTable", 5) in irreversible, hazards
    assert all(h["blocked"] for _k, _t, h in hazards if h["class"] == "irreversible")
    assert all("origin" in h for _k, _t, h in hazards), [h for _k, _t, h in hazards if "origin" not in h]
    compat = [(kind, h) for kind, _t, h in hazards if h["class"] == "compatibility"]
    assert any(kind == "AddColumns" and h["origin"]["line"] == 5 for kind, h in compat), compat

    lines = cli.run(["plan", "specs"]).stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if "+ column payload variant" in line)
    below = []
    for line in lines[at + 1 :]:
        if "+ column" in line:
            break
        below.append(line)
    assert any("delta-sharing" in line for line in below), lines
    assert any("variantType table feature for good" in line for line in below), lines
    assert any("events.yaml:5" in line for line in below), lines

    cli.use(ENGINE)
    allowed = "irreversible,compatibility,rewrite,breaking"
    applied = cli.run(["apply", "specs", "--yes", "--allow", allowed])
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert "No changes" in cli.run(["plan", "specs"]).stdout
