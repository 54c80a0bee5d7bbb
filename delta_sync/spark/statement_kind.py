"""What a statement does, from Spark's parse of it, made without running it: the nodes of its parsed logical plan
as sqlguard.Node, for sqlguard.danger to judge.

In-process, the session's own parser (Delta's, which hands what it does not know to Spark's) parses it, and each
node's facts are read from its fields. A Spark Connect client has no parser: the server parses
`EXPLAIN EXTENDED <statement>`, whose "== Parsed Logical Plan ==" section names the nodes; their facts are read
from that text, in which literals stand unquoted, so where the text cannot show the harmless form it is not
assumed. EXPLAIN parses with Spark's grammar, without Delta's own commands or SQL scripts: a statement it refuses
is read from its words (sqlguard.unparsed_nodes).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from delta_sync.model.errors import CatalogError
from delta_sync.spark.exceptions import engine_failure
from delta_sync.sql import destructive as sqlguard
from delta_sync.sql.destructive import Flag, Node

EXPLAIN = "EXPLAIN EXTENDED "
PARSED_SECTION = "== Parsed Logical Plan =="


def danger(spark: Any, statement: str) -> str | None:
    """Why `statement` deletes or overwrites rows or objects, or None. Nothing is run. None too for a statement
    Spark cannot parse: running it reports why."""
    return sqlguard.danger(parsed_nodes(spark, statement))


def parsed_nodes(spark: Any, statement: str) -> list[Node]:
    """Every node of the statement's parsed plan, a SQL script's statements included; empty when Spark cannot
    parse it. `spark` is an in-process session or a Spark Connect client session."""
    from pyspark.errors import ParseException

    connect = getattr(spark, "_jsparkSession", None) is None
    try:
        if connect:
            return _explained_nodes(spark, statement)
        parser = spark._jsparkSession.sessionState().sqlParser()
        return list(_plan_nodes(parser, parser.parsePlan(statement)))
    except ParseException:
        return sqlguard.unparsed_nodes(statement) if connect else []
    except CatalogError:
        raise
    except Exception as exc:
        message = engine_failure(exc).message.strip() or repr(exc)
        raise CatalogError(
            f"Could not parse the statement to tell whether it deletes data, so it was not run: "
            f"{message.splitlines()[0]}"
        ) from None


# In-process: the parsed plan's own objects, through py4j.


def _scala(seq: Any) -> Iterator[Any]:
    items = seq.iterator()
    while items.hasNext():
        yield items.next()


def _is_true(expression: Any) -> bool:
    # The parser's stand-in for a DELETE without WHERE; `WHERE true` parses to the same and deletes the same.
    return str(expression.getClass().getSimpleName()) == "Literal" and expression.value() is True


def _merge_flags(plan: Any) -> set[Flag]:
    flags = set()
    by_source = list(_scala(plan.notMatchedBySourceActions()))
    if by_source:
        flags.add(Flag.BY_SOURCE)
    actions = [*_scala(plan.matchedActions()), *by_source]
    if any(str(a.getClass().getSimpleName()) == "DeleteAction" for a in actions):
        flags.add(Flag.DELETES)
    return flags


_FIELDS: dict[str, Callable[[Any], set[Flag]]] = {
    "DeleteFromTable": lambda p: set() if _is_true(p.condition()) else {Flag.WHERE},
    "UpdateTable": lambda p: {Flag.WHERE} if p.condition().isDefined() else set(),
    "MergeIntoTable": _merge_flags,
    # REPLACE USING / REPLACE ON set `overwrite` too, with the rows to replace in `replaceCriteriaOpt`.
    "InsertIntoStatement": lambda p: {Flag.OVERWRITE} if p.overwrite() else set(),
    "InsertIntoDir": lambda p: {Flag.OVERWRITE} if p.overwrite() else set(),
    "LoadData": lambda p: {Flag.OVERWRITE} if p.isOverwrite() else set(),
    "CreateView": lambda p: {Flag.REPLACE} if p.replace() else set(),
    "CreateFunction": lambda p: {Flag.REPLACE} if p.replace() else set(),
    "CreateUserDefinedFunction": lambda p: {Flag.REPLACE} if p.replace() else set(),
    "CloneTableStatement": lambda p: {Flag.REPLACE} if p.isReplaceCommand() else set(),
    "VacuumTableCommand": lambda p: {Flag.DRY_RUN} if p.dryRun() else set(),
}


def _plan_nodes(parser: Any, plan: Any) -> Iterator[Node]:
    kind = str(plan.getClass().getSimpleName())
    if kind == "SingleStatement":
        # A script's statement: its plan is a field; the node's children are that plan's children.
        yield from _plan_nodes(parser, plan.parsedPlan())
        return
    if kind == "UnresolvedExecuteImmediate":
        yield from _executed_immediately(parser, plan.sqlStmtStr())
        return
    yield Node(kind, frozenset(_FIELDS[kind](plan)) if kind in _FIELDS else frozenset())
    for child in _scala(plan.children()):
        yield from _plan_nodes(parser, child)
    if kind == "CompoundBody":
        # A script's exception handlers run statements too, and are no children of the script.
        for handler in _scala(plan.handlers()):
            yield from _plan_nodes(parser, handler.body())


def _executed_immediately(parser: Any, text: Any) -> Iterator[Node]:
    """EXECUTE IMMEDIATE of a string literal is that statement; of anything else, a statement known when it runs."""
    from pyspark.errors import ParseException

    literal = str(text.getClass().getSimpleName()) == "Literal" and text.value() is not None
    if not (literal and str(text.dataType().simpleString()).startswith("string")):
        yield Node("UnresolvedExecuteImmediate", frozenset({Flag.DYNAMIC}))
        return
    try:
        inner = parser.parsePlan(str(text.value()))
    except ParseException:
        return  # it fails when it runs, having changed nothing
    yield from _plan_nodes(parser, inner)


# Spark Connect: the text of EXPLAIN EXTENDED.


def _explained_nodes(spark: Any, statement: str) -> list[Node]:
    nodes = _explain(spark, statement)
    unknown = Node("MergeIntoTable", frozenset({Flag.BY_SOURCE_UNKNOWN}))
    if unknown in nodes and _updates_when_matched(spark, statement):
        return [Node("MergeIntoTable") if node == unknown else node for node in nodes]
    return nodes


def _explain(spark: Any, statement: str) -> list[Node]:
    text = str(spark.sql(EXPLAIN + statement).collect()[0][0])
    nodes = explained_nodes(text)
    if nodes is None:
        raise CatalogError(
            "Spark Connect's EXPLAIN of the statement shows no parsed plan to tell whether it deletes data, "
            "so it was not run"
        )
    return nodes


def _updates_when_matched(spark: Any, statement: str) -> bool:
    """Whether a MERGE whose one list of actions is UPDATEs updates WHEN MATCHED: with a WHEN NOT MATCHED clause
    appended (and only explained), the INSERT's list then follows the UPDATEs'. After WHEN NOT MATCHED BY SOURCE
    clauses it would come first, or not parse at all."""
    from pyspark.errors import ParseException

    try:
        probed = _explain(spark, statement.rstrip().rstrip(";") + "\nWHEN NOT MATCHED THEN INSERT *")
    except ParseException:
        return False
    return Node("MergeIntoTable") in probed


# A node's line in a plan tree: below the top node, ancestors' columns (`:  ` or three spaces) then the branch
# (`:- ` or `+- `); an unresolved node's name starts with a quote. Lines of none of these shapes continue the
# arguments of the node before (a literal that holds a line break).
_BRANCH = re.compile(r"(?:[: ]  )*[:+]- '?(?P<kind>[A-Za-z_]\w*)\$?(?: (?P<args>.*))?")
_TOP = re.compile(r"'?(?P<kind>[A-Za-z_]\w*)\$?(?: (?P<args>.*))?")


def explained_nodes(text: str) -> list[Node] | None:
    """The nodes of the parsed plan in the text of EXPLAIN EXTENDED, or None when it holds no parsed plan."""
    _, found, rest = text.partition(PARSED_SECTION)
    if not found:
        return None
    lines = rest.strip("\n").split("\n")
    lines = lines[: next((i for i, line in enumerate(lines) if line.startswith("== ")), len(lines))]
    parsed: list[tuple[str, list[str]]] = []
    for line in lines:
        match = (_BRANCH if parsed else _TOP).fullmatch(line)
        if match is None:
            if parsed:
                parsed[-1][1].append(line)
            continue
        parsed.append((match["kind"], [match["args"] or ""]))
    return [Node(kind, frozenset(_text_flags(kind, "\n".join(args)))) for kind, args in parsed]


_ACTION = re.compile(r"(\[)?(deleteaction|updateaction|updatestaraction|insertaction|insertstaraction)\(")
_PRIVILEGES = re.compile(r"__required_write_privileges__=([A-Z_,]*)\]")
_BOOLEAN = r"(?:true|false)"


def _text_flags(kind: str, args: str) -> set[Flag]:
    """The facts of one node, as far as its arguments' text shows the harmless form for sure."""
    match kind:
        case "DeleteFromTable":
            return set() if args == "true" else {Flag.WHERE}
        case "UpdateTable":
            rest = _after_list(args)
            return {Flag.WHERE} if rest is not None and rest.startswith(", ") and rest[2:] else set()
        case "MergeIntoTable":
            return _merge_text_flags(args)
        case "InsertIntoStatement":
            privileges = _PRIVILEGES.search(args)
            return set() if privileges and "DELETE" not in privileges[1].split(",") else {Flag.OVERWRITE}
        case "InsertIntoDir":
            return {Flag.OVERWRITE}
        case "LoadData":
            # The path (unquoted), isLocal, isOverwrite, then the partition if any.
            keeps = re.search(rf", {_BOOLEAN}, false(?:, Map\(.*\))?$", args, re.DOTALL)
            return set() if keeps else {Flag.OVERWRITE}
        case "CreateView":
            # The view's text (unquoted, possibly over lines), allowExisting, replace, schema mode, isAnalyzed.
            keeps = re.search(rf", {_BOOLEAN}, false, \w+, {_BOOLEAN}$", args)
            return set() if keeps else {Flag.REPLACE}
        case "CreateFunction" | "CreateUserDefinedFunction":
            return set() if args.endswith(", false") else {Flag.REPLACE}
        case "UnresolvedExecuteImmediate":
            # A literal and a variable print alike: the statement is known only when it runs.
            return {Flag.DYNAMIC}
    return set()


def _after_list(text: str) -> str | None:
    """What follows the bracketed list that `text` opens with, or None when brackets in unquoted literals leave
    its end in doubt."""
    if not text.startswith("["):
        return None
    closing = {"[": "]", "(": ")"}
    stack: list[str] = []
    for i, char in enumerate(text):
        if char in closing:
            stack.append(closing[char])
        elif char in ")]":
            if not stack or stack.pop() != char:
                return None
            if not stack:
                return text[i + 1 :]
    return None


def _merge_text_flags(args: str) -> set[Flag]:
    """A MERGE's clauses print as up to three lists of actions, an empty one left out: matched (UPDATE, DELETE),
    not matched (INSERT), not matched by source (UPDATE, DELETE). A list of UPDATEs alone, or none found, could be
    either kind."""
    lists: list[list[str]] = []
    for opening, action in _ACTION.findall(args):
        if opening or not lists:
            lists.append([])
        lists[-1].append(action)
    flags = set()
    if any("deleteaction" in actions for actions in lists):
        flags.add(Flag.DELETES)
    changing = [not all(a.startswith("insert") for a in actions) for actions in lists]
    if changing.count(True) > 1 or (True in changing and False in changing[: changing.index(True)]):
        flags.add(Flag.BY_SOURCE)
    elif changing in ([], [True]):
        flags.add(Flag.BY_SOURCE_UNKNOWN)
    return flags
