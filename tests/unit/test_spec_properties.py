"""Property tests of the spec loader: whatever a spec file holds, it yields a valid spec or a SpecError.

Every property runs derandomized (CI is reproducible) and without an example database, and together
they run 1,350 examples. Spec files are written to fresh temporary folders, never to tmp_path.

Two loader bugs these properties found (PyYAML scalar constructor errors escaping, and a deeply nested
column type overflowing the type parser) are fixed; their minimal regressions are at the end of this file.
"""

from __future__ import annotations

import copy
import itertools
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context

from delta_sync.model.errors import SpecError
from delta_sync.model.state import CatalogState, Check, Column, Identity, Table, TableName, quote_ident
from delta_sync.specs.spec_files import load_spec_files, load_specs
from delta_sync.specs.variables import escape_vars
from delta_sync.specs.yamldoc import MAX_DEPTH, MAX_FILE_BYTES
from delta_sync.sql import types as sqltypes

EXAMPLES = 300  # per property, and 1,000 for the two that build whole spec documents (2,750 in all)
DOCUMENT_EXAMPLES = 1000
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)

# --- running the loader -----------------------------------------------------------------------------


@contextmanager
def spec_file(content: bytes | str, name: str = "spec.yaml") -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="spec-props-") as folder:
        path = Path(folder) / name
        if isinstance(content, str):
            path.write_text(content, encoding="utf-8")
        else:
            path.write_bytes(content)
        yield path


def note_event(text: str) -> None:
    """A line in `--hypothesis-show-statistics`, when running under @given."""
    if currently_in_test_context():
        event(text)


def load(path: Path, shown: object) -> CatalogState | SpecError:
    """The loader's verdict on one file: the state or the SpecError. Anything else fails the test."""
    try:
        return load_spec_files([path])
    except SpecError as exc:
        return exc
    except Exception as exc:
        text = repr(shown)
        raise AssertionError(
            f"load_spec_files raised {type(exc).__name__}: {exc!s:.300} for {text[:600]}"
            + (" ..." if len(text) > 600 else "")
        ) from exc


def line_bound(raw: bytes) -> int:
    """The last line a problem in this file may point at (YAML also breaks lines at \\r, NEL, LS, PS)."""
    return len(raw.decode("utf-8", "replace").splitlines()) + 1


def check_error(error: SpecError, path: Path, raw: bytes) -> None:
    assert error.problems, "a SpecError without problems"
    text = str(error)
    assert "Traceback" not in text
    count = len(error.problems)
    assert text.startswith(f"{count} problem{'s' if count != 1 else ''} in specs:")
    lines = [p.line for p in error.problems]
    assert lines == sorted(lines), "problems of one file are listed in line order"
    for problem in error.problems:
        assert problem.file == str(path)
        assert isinstance(problem.line, int)
        assert 1 <= problem.line <= line_bound(raw), (problem, line_bound(raw))
        assert problem.message.strip()
        assert isinstance(problem.hint, str)
        assert str(problem) in text


def check_state(state: CatalogState, path: Path) -> Table:
    assert len(state.tables) == 1
    ((name, table),) = state.tables.items()
    assert name == table.name
    assert table.origin is not None
    assert table.origin.file == str(path)
    assert table.columns
    keys = [c.key for c in table.columns]
    assert len(set(keys)) == len(keys)
    for column in table.columns:
        assert column.name.strip()
        assert "\n" not in column.name
        assert "\r" not in column.name
        assert sqltypes.parse_type(column.type) == column.type, "a canonical type reads back as itself"
    for check in table.checks:
        assert check.name == check.name.lower()
    assert set(table.partitioned_by) <= {c.name for c in table.columns}
    assert set(table.clustered_by) <= {c.name for c in table.columns}
    assert len(table.clustered_by) <= 4
    assert not (table.partitioned_by and table.clustered_by)
    assert not set(table.removed_properties) & {k for k, _ in table.properties}
    return table


def outcome(content: bytes | str, shown: object = None) -> tuple[Table | None, SpecError | None]:
    """Load `content` as one spec file and check the invariants of whichever way it went."""
    raw = content.encode("utf-8") if isinstance(content, str) else content
    with spec_file(raw) as path:
        result = load(path, raw if shown is None else shown)
        if isinstance(result, SpecError):
            note_event("outcome: SpecError")
            check_error(result, path, raw)
            return None, result
        note_event("outcome: valid")
        assert isinstance(result, CatalogState)
        return check_state(result, path), None


# --- shared strategies ------------------------------------------------------------------------------

ODD = [
    "it's",
    '"dq"',
    "''",
    "`bt`",
    "``",
    "back\\slash",
    "\\n",
    "line\nbreak",
    "cr\rlf\r\n",
    "${x}",
    "${ENV:-default}",
    "%s {0} {{}}",
    "naïve 日本語 🙂",
    "\t tab",
    " lead",
    "trail ",
    "",
    " ",
    "null",
    "~",
    "yes",
    "No",
    "on",
    "0x1F",
    "0o17",
    "1_000",
    "1e3",
    ".nan",
    "-.inf",
    "2001-01-01",
    "12:30:00",
    "- item",
    "? q",
    ": c",
    "a: b",
    "# hash",
    "&a",
    "*a",
    "!!int 1",
    "!tag",
    "|",
    ">-",
    "@",
    "%YAML 1.1",
    "---",
    "...",
    "<<",
    "=",
    "\x00",
    "\x07",
    "\x85",
    "\u2028",
    "\ufeff",
    "a; DROP TABLE t",
    "(SELECT 1)",
    "-- c",
    "/* c */",
]

odd_text = st.one_of(
    st.sampled_from(ODD),
    st.text(max_size=20),
    st.lists(st.sampled_from(ODD) | st.text(max_size=4), max_size=4).map("".join),
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    odd_text,
)
SPEC_KEYS = ["table", "comment", "columns", "checks", "partitioned_by", "clustered_by", "properties"]
COLUMN_KEYS = ["name", "type", "nullable", "comment", "default", "generated", "identity", "renamed_from"]
keys = st.one_of(
    st.sampled_from([*SPEC_KEYS, *COLUMN_KEYS, "start", "step", "always"]),
    odd_text,
    st.integers(),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=True, allow_infinity=True),
)
values: st.SearchStrategy[Any] = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=4),
    max_leaves=12,
)


class _Dumper(yaml.SafeDumper):
    """PyYAML's safe dumper, minus an emitter bug: it writes NEL / LS / PS raw into single-quoted or plain
    scalars, where YAML folds them like any line break, so such strings are double-quoted (escaped).
    A value drawn twice (the same list object) is written out twice: anchors are tested on their own."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _represent_str(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    style = '"' if any(c in text for c in "\x85\u2028\u2029") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_Dumper.add_representer(str, _represent_str)


@st.composite
def dumped(draw: st.DrawFn, document: Any) -> str:
    """`document` as YAML, in one of PyYAML's styles, its text's `${name}` escaped as a spec writer must."""
    return yaml.dump(
        escape_vars(document),
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=draw(st.booleans()),
        default_flow_style=draw(st.sampled_from([False, True, None])),
        width=draw(st.sampled_from([20, 80, 10**6])),
        explicit_start=draw(st.booleans()),
    )


# --- 1. arbitrary bytes and text --------------------------------------------------------------------

VALID_TEXT = """\
table: shop.orders
comment: Orders
columns:
  - {name: id, type: bigint, nullable: false, identity: {start: 1, step: 1}}
  - name: amount
    type: decimal(18,2)
    default: 0
  - {name: day, type: date, generated: CAST(created AS DATE)}
  - {name: created, type: timestamp}
checks:
  positive: amount >= 0
partitioned_by: [day]
properties:
  delta.appendOnly: true
"""

FRAGMENTS = [
    "table: s.t\n",
    "table: ",
    "columns:\n",
    "columns: [{name: a, type: int}]\n",
    "  - name: a\n",
    "    type: bigint\n",
    "checks: {c: a > 0}\n",
    "properties:\n",
    "- ",
    "  ",
    "\t",
    "\n",
    "\r\n",
    "\r",
    "{",
    "}",
    "[",
    "]",
    ": ",
    ":",
    ", ",
    "? ",
    "&a ",
    "*a",
    "!!str ",
    "!!int ",
    "!!binary ",
    "!!python/object:os.system ",
    "!local ",
    "!!set ",
    "!!omap ",
    "|\n",
    ">-\n",
    "'",
    '"',
    "# comment\n",
    "%YAML 1.1\n",
    "%TAG ! tag:x,2000:\n",
    "---\n",
    "...\n",
    "\x00",
    "\ufeff",
    "\u2028",
    "\x85",
    "${x}",
    "`",
    "\\",
    "name: ",
    "type: ",
    "bigint",
    "array<",
    ">",
    "a > 0;",
    "<<: ",
    "2001-01-01",
    "0x1F",
    "1e400",
    ".nan",
    "~",
    "yes",
    "1",
    "abc",
]


@st.composite
def spec_bytes(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["binary", "text", "fragments", "spliced", "long line"]))
    if kind == "binary":
        return draw(st.binary(max_size=500))
    if kind == "text":
        return draw(st.text(max_size=300)).encode("utf-8")
    if kind == "fragments":
        parts = draw(st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=6), max_size=40))
        return "".join(parts).encode("utf-8")
    raw = VALID_TEXT.encode("utf-8")
    if kind == "long line":
        size = draw(st.sampled_from([200, 5_000, 70_000, MAX_FILE_BYTES - len(raw) + 1]))
        filler = draw(st.sampled_from([b"x", b"1", b" ", b"[", b"\\", b"a: "]))
        where = draw(st.sampled_from([b"comment: ", b"# ", b"x: "]))
        return raw + where + filler * (size // len(filler)) + b"\n"
    # A valid file with a few bytes inserted, replaced or removed.
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(raw)))
        insert = draw(st.binary(max_size=4) | st.sampled_from(FRAGMENTS).map(str.encode))
        cut = draw(st.integers(0, 3))
        raw = raw[:at] + insert + raw[at + cut :]
    return raw


def utf8_error_at(raw: bytes) -> int | None:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start
    return None


@SETTINGS
@given(raw=spec_bytes())
def test_any_bytes_give_a_spec_or_a_spec_error(raw: bytes) -> None:
    table, error = outcome(raw)

    if len(raw) > MAX_FILE_BYTES:
        assert error is not None
        assert [(p.line, p.message) for p in error.problems] == [(1, "file is larger than 1 MiB")]
        return
    bad_byte = utf8_error_at(raw)
    if bad_byte is not None:
        assert error is not None
        ((problem,),) = [error.problems]
        assert problem.message.startswith("file is not UTF-8")
        assert problem.line == raw.count(b"\n", 0, bad_byte) + 1
        return
    if table is not None:
        # Valid means the same file loads to the same model again.
        assert outcome(raw) == (table, None)


def test_the_valid_text_is_valid() -> None:
    table, error = outcome(VALID_TEXT)

    assert error is None
    assert table is not None
    assert table.name == TableName(None, "shop", "orders")


# --- 2. structured documents ------------------------------------------------------------------------

SKELETON: dict[str, Any] = {
    "table": "s.t",
    "columns": [{"name": "a", "type": "bigint"}, {"name": "b", "type": "string"}],
}

TARGETS: list[tuple[Any, ...]] = [
    ("table",),
    ("comment",),
    ("columns",),
    ("checks",),
    ("partitioned_by",),
    ("clustered_by",),
    ("properties",),
    ("columns", 0),
    *(("columns", 0, key) for key in COLUMN_KEYS),
    ("columns", 1, "comment"),
    ("columns", 0, "identity", "start"),
    ("columns", 0, "identity", "step"),
    ("columns", 0, "identity", "always"),
    ("checks", "c"),
    ("properties", "x.p"),
    ("partitioned_by", 0),
    ("clustered_by", 0),
]


PREDICTED: list[tuple[Any, ...]] = [
    ("table",),
    ("comment",),
    ("columns", 0, "comment"),
    ("columns", 0, "nullable"),
    ("columns", 0, "type"),
    ("columns", 0, "renamed_from"),
    ("columns", 0, "identity", "start"),
    ("columns", 0, "identity", "step"),
    ("columns", 0, "identity", "always"),
    ("properties", "x.p"),
]


def put(document: dict[Any, Any], target: tuple[Any, ...], value: Any) -> None:
    """Set `value` at `target`, making room on the way: parents of the wrong kind are replaced."""
    node: Any = document
    for step, following in itertools.pairwise(target):
        if isinstance(node, list):
            node.extend([None] * (step + 1 - len(node)))
        child = node.get(step) if isinstance(node, dict) else node[step]
        kind = list if isinstance(following, int) else dict
        if not isinstance(child, kind):
            child = kind()
            node[step] = child
        node = child
    if isinstance(node, list):
        node.extend([None] * (target[-1] + 1 - len(node)))
    node[target[-1]] = value


def property_text(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if value is None or isinstance(value, str) else str(value)


def is_bigint(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**63


def expected_validity(target: tuple[Any, ...], value: Any) -> bool | None:
    """Whether the skeleton with `value` at `target` must load (True), must not (False), or either (None)."""
    if target in (("comment",), ("columns", 0, "comment"), ("columns", 1, "comment")):
        return value is None or isinstance(value, str)
    if target == ("columns", 0, "nullable"):
        return isinstance(value, bool)
    if target == ("properties", "x.p"):
        return value is None or isinstance(value, bool | int | float | str)
    if target == ("columns", 0, "identity", "start"):
        return is_bigint(value)
    if target == ("columns", 0, "identity", "step"):
        return is_bigint(value) and value != 0
    if target == ("columns", 0, "identity", "always"):
        return isinstance(value, bool)
    if target == ("columns", 0, "renamed_from"):
        if value is None:
            return True
        return isinstance(value, str) and bool(value.strip()) and value.lower() not in ("a", "b")
    if target == ("table",):
        if not isinstance(value, str):
            return False
        try:
            TableName.parse(value)
        except ValueError:
            return False
        return True
    if target == ("columns", 0, "type"):
        if not isinstance(value, str):
            return False
        try:
            sqltypes.parse_type(value)
        except ValueError:
            return False
        except RecursionError:
            return None
        return True
    return None


@st.composite
def documents(draw: st.DrawFn) -> tuple[Any, tuple[Any, ...] | None, Any]:
    """A document to dump; the target and value merged into the skeleton, if it was."""
    # Hypothesis leans towards small integers: 0 picks the common branch.
    if draw(st.integers(0, 9)) == 9:
        return draw(values), None, None
    document = copy.deepcopy(SKELETON)
    # Half the time one of the targets whose outcome expected_validity predicts.
    targets = st.sampled_from(TARGETS) | st.sampled_from(PREDICTED)
    target = draw(targets if draw(st.integers(0, 5)) < 5 else keys.map(lambda key: (key,)))
    value = draw(st.one_of(odd_text, scalars, values))
    put(document, target, value)
    for _ in range(max(0, draw(st.integers(0, 9)) - 7)):
        put(document, draw(st.sampled_from(TARGETS)), draw(scalars | values))
        target = ()  # several changes: no prediction
    return document, target or None, value


@settings(SETTINGS, max_examples=DOCUMENT_EXAMPLES)
@given(drawn=documents(), data=st.data())
def test_structured_documents_give_a_spec_or_a_spec_error(
    drawn: tuple[Any, tuple[Any, ...] | None, Any], data: st.DataObject
) -> None:
    document, target, value = drawn
    text = data.draw(dumped(document), label="yaml")

    table, error = outcome(text, shown=text)

    if not isinstance(document, dict):
        assert error is not None
        ((problem,),) = [error.problems]
        assert problem.message.startswith("top level must be a mapping"), problem
        return
    if table is not None:
        # Accepted, so the document has the right shape: it must come back exactly as written.
        check_round_trip(table, document)
    if target is None:
        return
    expected = expected_validity(target, value)
    if expected is not None:
        assert (table is not None) == expected, (target, value, error)
    if table is None:
        return
    if target == ("comment",):
        assert table.comment == (value or None)
    elif target in (("columns", 0, "comment"), ("columns", 1, "comment")):
        assert table.columns[target[1]].comment == (value or None)
    elif target == ("columns", 0, "nullable"):
        assert table.columns[0].nullable is value
    elif target == ("properties", "x.p"):
        text_value = property_text(value)
        if text_value is None:
            assert (table.properties, table.removed_properties) == ((), ("x.p",))
        else:
            assert (table.properties, table.removed_properties) == ((("x.p", text_value),), ())
    elif target == ("columns", 0, "renamed_from"):
        assert table.columns[0].renamed_from == value
    elif target == ("table",):
        assert table.name == TableName.parse(value)
    elif target == ("columns", 0, "type"):
        assert table.columns[0].type == sqltypes.parse_type(value)
    elif len(target) == 4 and target[:3] == ("columns", 0, "identity"):
        identity = table.columns[0].identity
        assert identity is not None
        assert getattr(identity, target[3]) == value


# --- 3. mutations of valid specs --------------------------------------------------------------------

TYPES = [
    "int",
    "BIGINT",
    "long",
    "string",
    "decimal(18, 2)",
    "DECIMAL",
    "varchar(20)",
    "ARRAY<string>",
    "map<string,int>",
    "struct<a: int, `b c`: string not null comment 'it\\'s'>",
    "array<struct<`x``y`:map<string,array<double>>>>",
    "timestamp_ntz",
    "boolean",
]
SPECIAL = {"zz_id", "zz_created", "zz_day"}
identifiers = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,10}", fullmatch=True)
column_names = odd_text.filter(lambda s: bool(s.strip()) and "\n" not in s and "\r" not in s)
property_values = st.one_of(
    odd_text,
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.none(),
)


def string_literal(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


@st.composite
def valid_specs(draw: st.DrawFn) -> dict[str, Any]:
    names = draw(
        st.lists(column_names.filter(lambda s: s.lower() not in SPECIAL), min_size=1, max_size=5, unique_by=str.lower)
    )
    columns: list[dict[str, Any]] = []
    for name in names:
        column: dict[str, Any] = {"name": name, "type": draw(st.sampled_from(TYPES))}
        if draw(st.booleans()):
            column["nullable"] = draw(st.booleans())
        if draw(st.booleans()):
            column["comment"] = draw(odd_text | st.none())
        columns.append(column)
    if draw(st.booleans()):
        old = draw(identifiers.filter(lambda s: s.lower() not in {n.lower() for n in names} | SPECIAL))
        columns[draw(st.integers(0, len(columns) - 1))]["renamed_from"] = old
    if draw(st.booleans()):
        start = draw(st.integers(-(2**63), 2**63 - 1))
        step = draw(st.integers(-(2**63), 2**63 - 1).filter(bool))
        identity = {"start": start, "step": step, "always": draw(st.booleans())}
        columns.append({"name": "zz_id", "type": "bigint", "identity": identity})
    if draw(st.booleans()):
        default = draw(st.sampled_from(["current_timestamp()", 0, -1, True, "'new'", "'it''s'", "NULL"]))
        columns.append({"name": "zz_created", "type": "timestamp", "default": default})
        if draw(st.booleans()):
            columns.append({"name": "zz_day", "type": "date", "generated": "CAST(zz_created AS DATE)"})
    spec: dict[str, Any] = {"table": ".".join(draw(st.lists(identifiers, min_size=2, max_size=3)))}
    if draw(st.booleans()):
        spec["comment"] = draw(odd_text | st.none())
    spec["columns"] = columns
    checks: dict[str, str] = {}
    for check in draw(st.lists(identifiers, max_size=3, unique_by=str.lower)):
        subject = quote_ident(draw(st.sampled_from(names)))
        literal = string_literal(draw(odd_text))
        checks[check] = draw(
            st.sampled_from(
                [
                    f"{subject} IS NOT NULL",
                    f"{subject} <> {literal}",
                    f"length({subject}) > 0 OR {literal} = {literal}\n",
                ]
            )
        )
    if checks:
        spec["checks"] = checks
    layout = draw(st.sampled_from(["none", "partitioned", "clustered"]))
    if layout == "partitioned" and len(names) > 1:
        spec["partitioned_by"] = draw(
            st.lists(st.sampled_from(names), min_size=1, max_size=len(names) - 1, unique=True)
        )
    elif layout == "clustered":
        spec["clustered_by"] = draw(st.lists(st.sampled_from(names), min_size=1, max_size=4, unique=True))
    properties = draw(st.dictionaries(odd_text.map(lambda s: f"x.{s}"), property_values, max_size=3))
    if properties:
        spec["properties"] = properties
    return spec


def expected_table(spec: dict[str, Any]) -> Table:
    """The model of a spec the loader accepted (so its shape is known to be right)."""
    columns = spec["columns"]
    declared = {c["name"].lower(): c["name"] for c in columns}

    def default(value: Any) -> str | None:
        return property_text(value)

    def identity(value: dict[str, Any] | None) -> Identity | None:
        return None if value is None else Identity(**value)

    props = spec.get("properties", {})
    return Table(
        name=TableName.parse(spec["table"]),
        columns=tuple(
            Column(
                name=c["name"],
                type=sqltypes.parse_type(c["type"]),
                nullable=c.get("nullable", True),
                comment=c.get("comment") or None,
                default=default(c.get("default")),
                generated=c.get("generated"),
                identity=identity(c.get("identity")),
            )
            for c in columns
        ),
        comment=spec.get("comment") or None,
        checks=tuple(sorted((Check(k.lower(), v) for k, v in spec.get("checks", {}).items()), key=lambda c: c.name)),
        partitioned_by=tuple(declared[p.lower()] for p in spec.get("partitioned_by", [])),
        clustered_by=tuple(declared[p.lower()] for p in spec.get("clustered_by", [])),
        properties=tuple(sorted((k, text) for k, v in props.items() if (text := property_text(v)) is not None)),
        removed_properties=tuple(sorted(k for k, v in props.items() if v is None)),
    )


def check_round_trip(table: Table, spec: dict[str, Any]) -> None:
    expected = expected_table(spec)
    assert table == expected
    assert [c.renamed_from for c in table.columns] == [c.get("renamed_from") for c in spec["columns"]]
    # Odd strings come back exactly, not just equal after some normalisation.
    assert [c.name for c in table.columns] == [c["name"] for c in spec["columns"]]
    assert table.comment == (spec.get("comment") or None)
    assert [c.expression for c in table.checks] == [c.expression for c in expected.checks]


Mutation = Callable[[st.DrawFn, dict[str, Any]], str | None]


def _columns(spec: dict[str, Any]) -> list[dict[str, Any]]:
    columns = spec.get("columns")
    return [c for c in columns if isinstance(c, dict)] if isinstance(columns, list) else []


def drop_key(draw: st.DrawFn, spec: dict[str, Any]) -> None:
    holders = [spec, *_columns(spec)]
    holder = draw(st.sampled_from(holders))
    if holder:
        del holder[draw(st.sampled_from(sorted(holder, key=repr)))]


def replace_value(draw: st.DrawFn, spec: dict[str, Any]) -> None:
    holders: list[dict[Any, Any]] = [spec, *_columns(spec)]
    holders += [c["identity"] for c in _columns(spec) if isinstance(c.get("identity"), dict)]
    holders += [spec[k] for k in ("checks", "properties") if isinstance(spec.get(k), dict)]
    holder = draw(st.sampled_from(holders))
    if holder:
        holder[draw(st.sampled_from(sorted(holder, key=repr)))] = draw(values)


def add_unknown_key(draw: st.DrawFn, spec: dict[str, Any]) -> str | None:
    key = draw(odd_text.filter(lambda s: s not in SPEC_KEYS))
    spec[key] = draw(values)
    return "unknown key"


def duplicate_column(draw: st.DrawFn, spec: dict[str, Any]) -> str | None:
    named = [c for c in _columns(spec) if isinstance(c.get("name"), str) and c["name"].strip()]
    if not named:
        return None
    column = dict(draw(st.sampled_from(named)))
    if column["name"].upper().lower() == column["name"].lower():
        column["name"] = column["name"].upper()
    spec["columns"].insert(draw(st.integers(0, len(spec["columns"]))), column)
    return "is declared twice"


def poison_check(draw: st.DrawFn, spec: dict[str, Any]) -> str | None:
    poison = draw(
        st.sampled_from(
            [
                "a > 0; DROP TABLE s.t",
                "a > 0;",
                "(SELECT max(a) FROM s.t) > 0",
                "a IN (select 1)",
                "a > 0 -- comment",
                "a > 0 /* comment */",
                "a > 'unterminated",
                "(a > 0",
                "a > 0)",
                "a > $x",
                "",
                "  ",
            ]
        )
    )
    if not isinstance(spec.get("checks"), dict):
        spec["checks"] = {}
    spec["checks"]["zz_poison_check"] = poison
    return "bad expression"


def bad_table_name(draw: st.DrawFn, spec: dict[str, Any]) -> str | None:
    spec["table"] = draw(
        st.sampled_from(["s", "a.b.c.d", "s.", ".t", "s..t", "s.t-x", "s.t;drop", "s.é", " s.t", "s. t", "s.`t`", ""])
    )
    return "table name"


def bad_check_name(draw: st.DrawFn, spec: dict[str, Any]) -> str | None:
    name = draw(st.sampled_from(["1abc", "a-b", "a b", "", "ü", "a.b", "`a`"]))
    if not isinstance(spec.get("checks"), dict):
        spec["checks"] = {}
    spec["checks"][name] = "a > 0"
    return "name must be letters"


def bad_column_name(draw: st.DrawFn, spec: dict[str, Any]) -> str | None:
    columns = _columns(spec)
    if not columns:
        return None
    name = draw(st.sampled_from(["", " ", "\t", "a\nb", "a\rb", "trailing\n"]))
    draw(st.sampled_from(columns))["name"] = name
    return "name is empty" if not name.strip() else "line break"


RANDOM_MUTATIONS = [drop_key, replace_value]
FATAL_MUTATIONS: list[Mutation] = [
    add_unknown_key,
    duplicate_column,
    poison_check,
    bad_table_name,
    bad_check_name,
    bad_column_name,
]


@st.composite
def mutated_specs(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any], str | None]:
    """A valid spec, a mutated copy of it, and a message the mutated copy must be rejected with."""
    spec = draw(valid_specs())
    mutated = copy.deepcopy(spec)
    for _ in range(draw(st.integers(0, 3))):
        draw(st.sampled_from(RANDOM_MUTATIONS))(draw, mutated)
    expected = None
    if draw(st.booleans()):
        expected = draw(st.sampled_from(FATAL_MUTATIONS))(draw, mutated)
    return spec, mutated, expected


@settings(SETTINGS, max_examples=DOCUMENT_EXAMPLES)
@given(drawn=mutated_specs(), data=st.data())
def test_mutated_valid_specs_give_a_round_tripping_spec_or_a_spec_error(
    drawn: tuple[dict[str, Any], dict[str, Any], str | None], data: st.DataObject
) -> None:
    spec, mutated, must_fail_with = drawn

    original = data.draw(dumped(spec), label="valid yaml")
    table, error = outcome(original, shown=original)
    assert error is None, f"a valid spec was rejected: {error}"
    assert table is not None
    check_round_trip(table, spec)

    text = data.draw(dumped(mutated), label="mutated yaml")
    table, error = outcome(text, shown=text)
    if must_fail_with is not None:
        assert error is not None, f"expected a problem with {must_fail_with!r}"
        assert any(must_fail_with in p.message for p in error.problems), (must_fail_with, error)
    if table is not None:
        check_round_trip(table, mutated)


# --- 4. alias bombs and deep nesting ----------------------------------------------------------------

BODY = "table: s.t\ncolumns: [{name: a, type: int}]\n"
TIME_LIMIT = 5.0  # seconds; the loader takes milliseconds, a bomb would take forever


@st.composite
def alias_bombs(draw: st.DrawFn) -> tuple[str, int]:
    """A file with anchors (an alias bomb, or a harmless anchor) and the line of its first anchor."""
    layers = draw(st.integers(1, 40))
    fan_out = draw(st.integers(1, 12))
    flow = draw(st.booleans())
    lines = []
    for i in range(layers):
        members = ["lol"] * fan_out if i == 0 else [f"*a{i - 1}"] * fan_out
        if flow:
            lines.append(f"a{i}: &a{i} [{', '.join(members)}]")
        else:
            lines.append(f"a{i}: &a{i}\n" + "".join(f"  - {m}\n" for m in members).rstrip("\n"))
    bomb = "\n".join(lines) + "\n"
    where = draw(st.sampled_from(["before", "after", "comment"]))
    if where == "before":
        return bomb + BODY, 1
    if where == "after":
        return BODY + bomb, BODY.count("\n") + 1
    return BODY + "comment: &c hello\n", BODY.count("\n") + 1


def nested(kind: str, levels: int) -> str:
    """A value nested `levels` collections deep."""
    if kind == "flow sequences":
        return "[" * levels + "]" * levels
    if kind == "flow mappings":
        return "{a: " * levels + "1" + "}" * levels
    if kind == "flow mixed":
        opening = "".join("[" if i % 2 else "{a: " for i in range(levels))
        closing = "".join("]" if i % 2 else "}" for i in reversed(range(levels)))
        return opening + "1" + closing
    if kind == "block sequences":
        return "\n" + "- " * levels + "y"
    if kind == "block mappings":
        return "\n" + "".join(" " * i + f"k{i}:\n" for i in range(1, levels + 1)) + " " * (levels + 1) + "v"
    raise AssertionError(kind)


FLOW = ["flow sequences", "flow mappings", "flow mixed"]


@st.composite
def deep_documents(draw: st.DrawFn) -> tuple[str, int, str]:
    """A file with a nested value, its nesting depth (the top-level mapping is 1) and where it is."""
    kind = draw(st.sampled_from([*FLOW, "block sequences", "block mappings"]))
    # As deep as fits in 1 MiB.
    high = {"block mappings": 1_000, "flow sequences": 250_000, "block sequences": 250_000}.get(kind, 150_000)
    levels = draw(
        st.integers(1, 60) | st.integers(MAX_DEPTH - 3, MAX_DEPTH + 3) | st.integers(1, high),
        label="levels",
    )
    if kind in FLOW and draw(st.booleans()):
        # Inside a column: the top-level mapping, `columns:` and the column's mapping come first.
        return (
            "table: s.t\ncolumns:\n  - name: a\n    type: int\n    comment: " + nested(kind, levels) + "\n",
            levels + 3,
            "c",
        )
    return "table: s.t\n" + "columns: [{name: a, type: int}]\nx: " + nested(kind, levels) + "\n", levels + 1, "x"


@settings(SETTINGS, max_examples=EXAMPLES // 2)
@given(drawn=alias_bombs())
def test_anchors_and_aliases_are_rejected_quickly(drawn: tuple[str, int]) -> None:
    text, line = drawn

    start = time.perf_counter()
    _, error = outcome(text)
    elapsed = time.perf_counter() - start

    assert elapsed < TIME_LIMIT
    assert error is not None
    assert [(p.line, p.message) for p in error.problems] == [(line, "YAML anchors and aliases are not supported")]


@settings(SETTINGS, max_examples=EXAMPLES)
@given(drawn=deep_documents())
def test_deep_nesting_is_rejected_quickly_and_shallow_nesting_is_read(drawn: tuple[str, int, str]) -> None:
    text, depth, where = drawn

    start = time.perf_counter()
    _, error = outcome(text, shown=f"{text[:200]}... ({len(text)} characters, depth {depth})")
    elapsed = time.perf_counter() - start

    assert elapsed < TIME_LIMIT
    assert error is not None, "the nested value is never valid"
    messages = [p.message for p in error.problems]
    if depth > MAX_DEPTH:
        assert messages == [f"nesting is deeper than {MAX_DEPTH} levels"]
        assert error.problems[0].line >= 2
    else:
        assert not any("nesting" in m for m in messages)
        if where == "x":
            assert [m for m in messages if m.startswith("unknown key")] == [messages[0]]
            assert messages[0].startswith("unknown key `x`")
        else:
            assert any(m.startswith("column `a`: `comment` must be a string") for m in messages), messages


def test_load_specs_reads_a_folder_of_broken_and_valid_files() -> None:
    with tempfile.TemporaryDirectory(prefix="spec-props-") as folder:
        root = Path(folder)
        (root / "good.yaml").write_text(VALID_TEXT, encoding="utf-8")
        (root / "bad.yml").write_bytes(b"table: s.t\ncolumns: [\n\xff")
        with pytest.raises(SpecError) as info:
            load_specs(root)
    assert [(Path(p.file).name, p.line) for p in info.value.problems] == [("bad.yml", 3)]


# --- bugs found by the properties: minimal regressions ----------------------------------------------

COLUMNS_LINE = "columns: [{name: a, type: int}]\n"


@pytest.mark.parametrize(
    "line",
    [
        pytest.param("comment: 2001-13-45", id="plain-out-of-range-date"),
        pytest.param("2001-02-30: 1", id="plain-out-of-range-date-as-key"),
        pytest.param("comment: 2001-02-30 10:00:00", id="plain-out-of-range-timestamp"),
        pytest.param("comment: " + "1" * 5000, id="plain-int-over-4300-digits"),
        pytest.param("comment: !!int abc", id="tagged-int"),
        pytest.param("!!int abc: 1", id="tagged-int-as-key"),
        pytest.param("comment: !!float abc", id="tagged-float"),
        pytest.param("comment: !!bool abc", id="tagged-bool"),
        pytest.param("comment: !!timestamp abc", id="tagged-timestamp"),
    ],
)
def test_scalar_that_yaml_cannot_construct_is_a_spec_error(line: str) -> None:
    with spec_file(f"table: s.t\n{COLUMNS_LINE}{line}\n") as path, pytest.raises(SpecError) as info:
        load_spec_files([path])
    ((problem,),) = [info.value.problems]
    assert problem.line == 3
    assert "cannot be read as" in problem.message


def test_deeply_nested_column_type_is_a_spec_error() -> None:
    levels = 5_000
    text = f"table: s.t\ncolumns: [{{name: a, type: '{'array<' * levels}int{'>' * levels}'}}]\n"
    with spec_file(text) as path, pytest.raises(SpecError, match="nest deeper than 50 levels"):
        load_spec_files([path])
