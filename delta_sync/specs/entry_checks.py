"""The checks across the entries of one spec file: columns declared twice, column lists (partitioning,
clustering, keys) naming undeclared columns, options of a column that exclude each other, renames and
CHECK names. They read the raw data rather than the validated models, so they report even when pydantic
has refused the file's shape, each problem at the line of the entry it is about.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

from delta_sync.model.errors import SpecProblem
from delta_sync.model.state import quote_ident
from delta_sync.specs.spec_models import _column_label
from delta_sync.specs.spec_values import MAX_CLUSTERING_COLUMNS, _canonical_type, parse_references
from delta_sync.specs.yamldoc import Doc
from delta_sync.sql import expressions
from delta_sync.sql import types as sqltypes


def _check_columns(doc: Doc, lines: dict[Any, int], problems: list[SpecProblem]) -> dict[str, str]:
    """Checks across columns and the column lists; returns lower-cased name -> declared name."""
    items = _list(doc.data.get("columns"))
    columns: dict[str, str] = {}
    first_line: dict[str, int] = {}
    all_named = bool(items)
    for i, item in enumerate(items):
        name = item.get("name") if isinstance(item, dict) else None
        if not isinstance(name, str) or not name.strip():
            all_named = False  # reported by pydantic
            continue
        key = name.lower()
        if key in columns:
            message = f"column `{name}` is declared twice (first at line {first_line[key]})"
            hint = "column names are case-insensitive; rename or remove one"
            problems.append(SpecProblem(doc.file, lines[i], message, hint))
        else:
            columns[key] = name
            first_line[key] = lines[i]
    partitions = _column_list(doc, "partitioned_by", "partition column", columns, all_named, problems)
    if all_named and partitions and partitions.keys() == columns.keys():
        message = "every column is a partition column"
        hint = "Delta needs at least one column that is not a partition column"
        problems.append(doc.problem(("partitioned_by",), message, hint))
    _column_list(doc, "clustered_by", "clustering column", columns, all_named, problems)
    clustered_by = _list(doc.data.get("clustered_by"))
    if len(clustered_by) > MAX_CLUSTERING_COLUMNS:
        message = f"`clustered_by` lists {len(clustered_by)} columns; Delta allows at most {MAX_CLUSTERING_COLUMNS}"
        hint = "keep the columns queries filter on most"
        problems.append(doc.problem(("clustered_by",), message, hint))
    if clustered_by and _list(doc.data.get("partitioned_by")):
        message = "`clustered_by` and `partitioned_by` cannot both be set"
        hint = "a table is either partitioned or clustered; remove one"
        problems.append(doc.problem(("clustered_by",), message, hint))
    for i, item in enumerate(items):
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            _check_column_options(doc, i, item, partitions, problems)
            _check_nested_not_null(doc, i, item, problems)
    _check_renames(doc, items, columns, first_line, problems)
    return columns


def _column_list(
    doc: Doc, key: str, what: str, columns: dict[str, str], all_named: bool, problems: list[SpecProblem]
) -> dict[str, int]:
    """Unknown and repeated entries of a list of columns; returns lower-cased name -> index."""
    return _named_columns(doc, (key,), _list(doc.data.get(key)), what, columns, all_named, problems)


def _named_columns(
    doc: Doc,
    loc: tuple[Any, ...],
    names: list[Any],
    what: str,
    columns: dict[str, str],
    all_named: bool,
    problems: list[SpecProblem],
) -> dict[str, int]:
    """Unknown and repeated entries of the list of columns at `loc`; returns lower-cased name -> index."""
    found: dict[str, int] = {}
    for i, name in enumerate(names):
        if not isinstance(name, str):
            continue  # reported by pydantic
        lower = name.lower()
        if lower in found:
            problems.append(doc.problem((*loc, i), f"{what} `{name}` is listed twice", "list it once"))
        elif lower in columns:
            found[lower] = i
        elif all_named:
            close = difflib.get_close_matches(name, list(columns.values()), n=1)
            hint = f"did you mean `{close[0]}`?" if close else "list columns declared under columns:"
            problems.append(doc.problem((*loc, i), f"{what} `{name}` is not a declared column", hint))
    return found


def _check_keys(doc: Doc, columns: dict[str, str], problems: list[SpecProblem]) -> None:
    """Key columns against the declared columns; read from the raw data, as the column lists are."""
    items = _list(doc.data.get("columns"))
    all_named = bool(items) and all(isinstance(c, dict) and isinstance(c.get("name"), str) for c in items)
    nullable = {
        item["name"].lower(): i
        for i, item in enumerate(items)
        if isinstance(item, dict) and isinstance(item.get("name"), str) and item.get("nullable") is not False
    }
    loc, names = _primary_key_columns(doc.data.get("primary_key"))
    for lower, i in _named_columns(doc, loc, names, "primary-key column", columns, all_named, problems).items():
        if lower in nullable:
            line = doc.line("columns", nullable[lower])
            message = f"primary-key column `{columns[lower]}` is nullable"
            hint = f"declare it nullable: false (line {line}); delta-sync does not make a column NOT NULL on its own"
            problems.append(doc.problem((*loc, i), message, hint))
    for i, fk in enumerate(_list(doc.data.get("foreign_keys"))):
        if not isinstance(fk, dict):
            continue  # reported by pydantic
        names = _list(fk.get("columns"))
        _named_columns(doc, ("foreign_keys", i, "columns"), names, "foreign-key column", columns, all_named, problems)
        try:
            _, references = parse_references(fk["references"])
        except (KeyError, TypeError, ValueError):
            continue  # reported by pydantic
        if names and len(names) != len(references):
            message = (
                f"foreign key lists {_count(len(names), 'column')} but references {_count(len(references), 'column')}"
            )
            hint = "pair each column with one referenced column, in the same order"
            problems.append(doc.problem(("foreign_keys", i, "references"), message, hint))


def _primary_key_columns(value: Any) -> tuple[tuple[Any, ...], list[Any]]:
    """Where the primary key's column list is written, and the list."""
    if isinstance(value, dict):
        return ("primary_key", "columns"), _list(value.get("columns"))
    return ("primary_key",), _list(value)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


_EXCLUSIVE = (
    ("identity", "default", "an identity column makes its own values; remove default:"),
    ("identity", "generated", "a column is either an identity or generated; remove one"),
    ("generated", "default", "a generated column is always computed; remove default:"),
)


def _check_column_options(
    doc: Doc, i: int, item: dict[Any, Any], partitions: dict[str, int], problems: list[SpecProblem]
) -> None:
    """default / generated / identity of one column, against each other and the rest of the spec."""
    name: str = item["name"]
    label = _column_label(name, i)
    present = {key for key in ("default", "generated", "identity") if item.get(key) is not None}
    for first, second, hint in _EXCLUSIVE:
        if first in present and second in present:
            later = max(first, second, key=lambda k: doc.line("columns", i, k))
            message = f"{label}: `{first}` and `{second}` cannot be combined"
            problems.append(doc.problem(("columns", i, later), message, hint))
            break
    if "identity" in present:
        written = item.get("type")
        try:
            canonical = _canonical_type(written) if isinstance(written, str) else "bigint"
        except sqltypes.TypeSyntaxError:
            canonical = "bigint"  # reported by pydantic
        if canonical != "bigint":
            message = f"{label}: an identity column must be bigint, not {canonical}"
            problems.append(doc.problem(("columns", i, "identity"), message, "declare it as type: bigint"))
        if name.lower() in partitions:
            message = f"partition column `{name}` is an identity column"
            hint = "Delta cannot partition by an identity column; partition by another column"
            problems.append(doc.problem(("partitioned_by", partitions[name.lower()]), message, hint))
    for key in ("backfill", "using"):
        fixed = next((k for k in ("generated", "identity") if k in present), None)
        if item.get(key) is not None and fixed is not None:
            message = f"{label}: {'an' if fixed == 'identity' else 'a'} {fixed} column cannot have `{key}`"
            hint = f"Delta computes its values; remove {key}:"
            problems.append(doc.problem(("columns", i, key), message, hint))
    if item.get("backfill") is not None and item.get("nullable", True) is not False:
        message = f"{label}: `backfill` fills a column that becomes NOT NULL, but this one is nullable"
        hint = "set nullable: false, or remove backfill:"
        problems.append(doc.problem(("columns", i, "backfill"), message, hint))
    generated = item.get("generated")
    if isinstance(generated, str) and _refers_to(generated, name):
        message = f"{label}: the generated expression refers to the column itself"
        hint = "a generated column is computed from other columns"
        problems.append(doc.problem(("columns", i, "generated"), message, hint))


def _check_nested_not_null(doc: Doc, i: int, item: dict[Any, Any], problems: list[SpecProblem]) -> None:
    """A NOT NULL field inside an array or map: Delta refuses the table or the column at apply, so it is refused
    here, at the column's type, with a CHECK that keeps the field required."""
    name: str = item["name"]
    written = item.get("type")
    try:
        canonical = _canonical_type(written) if isinstance(written, str) else None
    except sqltypes.TypeSyntaxError:
        canonical = None  # reported by pydantic
    if canonical is None:
        return
    label = _column_label(name, i)
    for found in sqltypes.nested_not_null(name, canonical):
        path, field = sqltypes.field_path((name, *found.path)), found.path[-1]
        # A path with backquoted names of its own is shown as it is, not in another pair.
        shown = path if "`" in path else f"`{path}`"
        message = (
            f"{label}: field {shown} is NOT NULL inside an array or map, which Delta refuses "
            "(DELTA_NESTED_NOT_NULL_CONSTRAINT)"
        )
        hint = f"make `{field}` nullable: remove its NOT NULL from the type"
        if found.check is not None:
            check = _check_name(f"{name}_{field}_not_null")
            hint += f'; to keep it required, add a CHECK: checks: {{{check}: "{found.check}"}}'
        else:
            hint += "; no CHECK reaches a field inside an array of maps, so the jobs that write the table must keep it"
        problems.append(doc.problem(("columns", i, "type"), message, hint))


def _check_name(text: str) -> str:
    """`text` as a CHECK's name: letters, digits and underscores, not starting with a digit."""
    name = re.sub(r"[^0-9a-z_]+", "_", text.lower()).strip("_")
    return name if name and not name[0].isdigit() else f"c_{name}"


def _refers_to(expression: str, name: str) -> bool:
    """Whether `expression` names the column `name` (not a struct field or function of that name)."""
    try:
        tokens = expressions.tokens(expression)
    except expressions.ExpressionError:
        return False  # reported by pydantic
    spellings = {name.lower(), quote_ident(name).lower()}
    return any(
        token in spellings and (j == 0 or tokens[j - 1] != ".") and (j + 1 == len(tokens) or tokens[j + 1] != "(")
        for j, token in enumerate(tokens)
    )


def _check_renames(
    doc: Doc,
    items: list[Any],
    columns: dict[str, str],
    first_line: dict[str, int],
    problems: list[SpecProblem],
) -> None:
    renamed: dict[str, tuple[str, int]] = {}
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        name, old = item.get("name"), item.get("renamed_from")
        if not isinstance(name, str) or not isinstance(old, str) or not old.strip():
            continue  # reported by pydantic
        loc = ("columns", i, "renamed_from")
        key, label = old.lower(), _column_label(name, i)
        if key == name.lower():
            message = f"{label}: `renamed_from` is the column's own name"
            hint = "names are case-insensitive, so this renames nothing; remove renamed_from:"
            problems.append(doc.problem(loc, message, hint))
        elif key in renamed:
            other, line = renamed[key]
            message = f"{label}: `{old}` is already renamed to `{other}` at line {line}"
            hint = "a column can be renamed to one name only; remove one renamed_from:"
            problems.append(doc.problem(loc, message, hint))
        elif key in columns:
            declared = columns[key]
            message = f"{label}: `{declared}` is still declared; a rename needs the old name gone from columns:"
            hint = f"remove `{declared}` (line {first_line[key]}) from columns:, or remove renamed_from:"
            problems.append(doc.problem(loc, message, hint))
        else:
            renamed[key] = (name, doc.line(*loc))


def _check_checks(doc: Doc, problems: list[SpecProblem]) -> None:
    checks = doc.data.get("checks")
    first: dict[str, str] = {}
    for name in checks if isinstance(checks, dict) else ():
        if not isinstance(name, str):
            continue
        other = first.setdefault(name.lower(), name)
        if other != name:
            message = f"check `{name}` is declared twice (as `{other}` at line {doc.line('checks', other)})"
            hint = "check names are case-insensitive, as Delta stores them lower-cased; rename one"
            problems.append(doc.problem(("checks", name), message, hint))


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
