"""Which `delta-sync sql` statements are confirmed first: the judgement of a parsed plan's nodes, the words read
where Spark Connect cannot parse, and the reading of EXPLAIN's text (plans as Spark 4.2 with Delta 4.4 prints
them). No JVM: tests/spark/test_sql_confirm.py parses the same statements with the real parser."""

from __future__ import annotations

import pytest

from delta_sync.spark.statement_kind import explained_nodes
from delta_sync.sql.destructive import Flag, Node, danger, unparsed_nodes


def node(kind: str, *flags: Flag) -> Node:
    return Node(kind, frozenset(flags))


@pytest.mark.parametrize(
    ("nodes", "says"),
    [
        ([node("DeleteFromTable"), node("UnresolvedRelation")], "DELETE without WHERE"),
        ([node("UpdateTable")], "UPDATE without WHERE"),
        ([node("MergeIntoTable", Flag.BY_SOURCE)], "WHEN NOT MATCHED BY SOURCE"),
        ([node("MergeIntoTable", Flag.BY_SOURCE, Flag.DELETES)], "WHEN NOT MATCHED BY SOURCE"),
        ([node("MergeIntoTable", Flag.DELETES)], "THEN DELETE"),
        ([node("MergeIntoTable", Flag.BY_SOURCE_UNKNOWN)], "through Spark Connect"),
        ([node("InsertIntoStatement", Flag.OVERWRITE)], "INSERT OVERWRITE"),
        ([node("OverwriteByExpression")], "REPLACE WHERE"),
        ([node("InsertIntoDir", Flag.OVERWRITE)], "DIRECTORY"),
        ([node("LoadData", Flag.OVERWRITE)], "LOAD DATA"),
        ([node("TruncateTable")], "TRUNCATE"),
        ([node("TruncatePartition")], "TRUNCATE"),
        ([node("DropTable")], "DROP TABLE"),
        ([node("DropView")], "DROP VIEW"),
        ([node("DropNamespace")], "DROP SCHEMA"),
        ([node("DropFunction")], "DROP FUNCTION"),
        ([node("DropIndex")], "DROP INDEX"),
        ([node("RestoreTableStatement")], "RESTORE"),
        ([node("VacuumTableCommand")], "VACUUM"),
        ([node("DropColumns")], "DROP COLUMN"),
        ([node("AlterTableDropConstraint")], "DROP CONSTRAINT"),
        ([node("DropConstraint")], "DROP CONSTRAINT"),
        ([node("DropPartitions")], "DROP PARTITION"),
        ([node("AlterTableDropFeature")], "DROP FEATURE"),
        ([node("ReplaceColumns")], "REPLACE COLUMNS"),
        ([node("ReplaceTable")], "REPLACE TABLE"),
        ([node("ReplaceTableAsSelect")], "REPLACE TABLE"),
        ([node("CreateView", Flag.REPLACE)], "CREATE OR REPLACE VIEW"),
        ([node("CreateFunction", Flag.REPLACE)], "CREATE OR REPLACE FUNCTION"),
        ([node("CreateUserDefinedFunction", Flag.REPLACE)], "CREATE OR REPLACE FUNCTION"),
        ([node("CloneTableStatement", Flag.REPLACE)], "CLONE"),
        ([node("UnresolvedExecuteImmediate", Flag.DYNAMIC)], "EXECUTE IMMEDIATE"),
        ([node("CompoundBody", Flag.UNPARSED)], "SQL script"),
        # A script, or a multi-table insert: one destructive node anywhere is enough.
        ([node("CompoundBody"), node("Project"), node("TruncateTable")], "TRUNCATE"),
        ([node("Union"), node("InsertIntoStatement"), node("InsertIntoStatement", Flag.OVERWRITE)], "OVERWRITE"),
    ],
)
def test_destructive(nodes: list[Node], says: str) -> None:
    reason = danger(nodes)
    assert reason is not None
    assert says in reason


@pytest.mark.parametrize(
    "nodes",
    [
        [node("Project"), node("UnresolvedRelation")],
        [node("DeleteFromTable", Flag.WHERE)],
        [node("UpdateTable", Flag.WHERE)],
        [node("MergeIntoTable")],
        [node("InsertIntoStatement")],
        [node("LoadData")],
        [node("CreateView")],
        [node("CreateUserDefinedFunction")],
        [node("CloneTableStatement")],
        [node("VacuumTableCommand", Flag.DRY_RUN)],
        [node("OptimizeTableCommand")],
        [node("CreateTable"), node("AddColumns"), node("AlterColumns")],
        # Temporary objects and session state: nothing the catalog keeps.
        [node("CreateViewCommand", Flag.REPLACE), node("DropFunctionCommand"), node("DropVariable")],
        [node("ExplainCommand")],
        [node("CompoundBody"), node("Project")],
        [],
    ],
)
def test_not_destructive(nodes: list[Node]) -> None:
    assert danger(nodes) is None


@pytest.mark.parametrize(
    ("statement", "nodes"),
    [
        ("RESTORE TABLE t TO VERSION AS OF 3", [node("RestoreTableStatement")]),
        ("restore t timestamp as of '2024-01-01'", [node("RestoreTableStatement")]),
        ("-- tidy up\nVACUUM t RETAIN 0 HOURS", [node("VacuumTableCommand")]),
        ("VACUUM t DRY RUN", [node("VacuumTableCommand", Flag.DRY_RUN)]),
        ("VACUUM t /* DRY RUN */", [node("VacuumTableCommand")]),
        ("ALTER TABLE t DROP FEATURE deletionVectors TRUNCATE HISTORY", [node("AlterTableDropFeature")]),
        ("CREATE OR REPLACE TABLE t SHALLOW CLONE s", [node("CloneTableStatement", Flag.REPLACE)]),
        ("REPLACE TABLE t CLONE s", [node("CloneTableStatement", Flag.REPLACE)]),
        ("BEGIN DELETE FROM t; END", [node("CompoundBody", Flag.UNPARSED)]),
        ("begin\n  UPDATE t SET a = 1;\nend", [node("CompoundBody", Flag.UNPARSED)]),
        ("CREATE TABLE t SHALLOW CLONE s", []),
        ("OPTIMIZE t ZORDER BY (id)", []),
        ("DESCRIBE HISTORY t", []),
        ("SELEC 1", []),
        ("SELECT 'RESTORE'", []),
        ("", []),
    ],
)
def test_statements_explain_cannot_parse_are_read_from_their_words(statement: str, nodes: list[Node]) -> None:
    assert unparsed_nodes(statement) == nodes


def explained(plan: str) -> list[Node]:
    text = f"== Parsed Logical Plan ==\n{plan}\n== Analyzed Logical Plan ==\nnum_affected_rows: bigint\n'Whatever\n"
    found = explained_nodes(text)
    assert found is not None
    return found


MERGE_TARGET = (
    ":- 'UnresolvedRelation [m, t], [__required_write_privileges__=UPDATE], false\n"
    "+- 'UnresolvedRelation [m, src], [], false"
)


@pytest.mark.parametrize(
    ("clauses", "flags"),
    [
        # WHEN NOT MATCHED BY SOURCE THEN DELETE, and WHEN MATCHED THEN DELETE: each one list of one action.
        ("[deleteaction(None)]", {Flag.DELETES, Flag.BY_SOURCE_UNKNOWN}),
        ("[updateaction(None, assignment('v, x), false)]", {Flag.BY_SOURCE_UNKNOWN}),
        ("[updatestaraction(None)], [insertstaraction(None)]", set()),
        ("[insertstaraction(None)]", set()),
        ("[insertstaraction(None)], [updateaction(None, assignment('v, y), false)]", {Flag.BY_SOURCE}),
        ("[updatestaraction(None)], [updateaction(None, assignment('v, y), false)]", {Flag.BY_SOURCE}),
        (
            "[updateaction(None, assignment('v, x), false)], [insertstaraction(None)], [deleteaction(None)]",
            {Flag.BY_SOURCE, Flag.DELETES},
        ),
        # A literal holding a line break: the clauses go on over the next line.
        (
            "[updateaction(None, assignment('v, l1\nl2), false)], [updateaction(None, assignment('v, z), false)]",
            {Flag.BY_SOURCE},
        ),
        ("no actions this reader knows", {Flag.BY_SOURCE_UNKNOWN}),
    ],
)
def test_merge_clauses_from_explain(clauses: str, flags: set[Flag]) -> None:
    nodes = explained(f"'MergeIntoTable ('m.t.id = 'm.src.id), {clauses}, false\n{MERGE_TARGET}")
    assert [n.kind for n in nodes] == ["MergeIntoTable", "UnresolvedRelation", "UnresolvedRelation"]
    assert nodes[0].flags == flags


@pytest.mark.parametrize(
    ("plan", "first"),
    [
        ("'DeleteFromTable true\n+- 'UnresolvedRelation [m, t], [__required_write_privileges__=DELETE], false", set()),
        ("'DeleteFromTable ('id = 1)\n+- 'UnresolvedRelation [m, t], [], false", {Flag.WHERE}),
        ("'UpdateTable [assignment('v, x)]\n+- 'UnresolvedRelation [m, t], [], false", set()),
        ("'UpdateTable [assignment('v, x)], ('id = 1)\n+- 'UnresolvedRelation [m, t], [], false", {Flag.WHERE}),
        ("'UpdateTable [assignment('v, a[0])], 'flags[0]\n+- 'UnresolvedRelation [m, t], [], false", {Flag.WHERE}),
        # An unquoted literal's bracket leaves the list's end in doubt: no WHERE is assumed.
        ("'UpdateTable [assignment('v, a]b)], ('id = 1)\n+- 'UnresolvedRelation [m, t], [], false", set()),
        (
            "'InsertIntoStatement 'UnresolvedRelation [m, t], [__required_write_privileges__=INSERT,DELETE], false, "
            "true, false, false, false\n+- 'Project [*]",
            {Flag.OVERWRITE},
        ),
        (
            "'InsertIntoStatement 'UnresolvedRelation [m, t], [__required_write_privileges__=INSERT], false, false, "
            "false, false, false\n+- LocalRelation [col1#0, col2#1]",
            set(),
        ),
        (
            "'CreateView SELECT 1 AS a\n  FROM m.t, false, true, COMPENSATION, false\n:- 'UnresolvedIdentifier [m, v]",
            {Flag.REPLACE},
        ),
        ("'CreateView SELECT 'x, true, Y, false' AS b, false, false, COMPENSATION, false\n+- 'Project [*]", set()),
        ("'CreateFunction x.Y, false, true\n+- 'UnresolvedIdentifier [m, f], false", {Flag.REPLACE}),
        ("'CreateUserDefinedFunction x INT, INT, x, LanguageSQL, false, false, false\n+- 'UnresolvedIdentifier", set()),
        (
            "'LoadData /tmp/x, true, true, true, Map(p -> 1)\n+- 'UnresolvedTable [m, t], LOAD DATA, false",
            {Flag.OVERWRITE},
        ),
        ("'LoadData /tmp/x, true, false\n+- 'UnresolvedTable [m, t], LOAD DATA, false", set()),
        ("'UnresolvedExecuteImmediate SELECT 1", {Flag.DYNAMIC}),
        ("ExplainCommand 'DeleteFromTable true, SimpleMode", set()),
    ],
)
def test_facts_from_explain(plan: str, first: set[Flag]) -> None:
    assert explained(plan)[0].flags == first


def test_every_node_of_the_tree_is_read() -> None:
    plan = (
        "'Union false, false\n"
        ":- 'InsertIntoStatement 'UnresolvedRelation [m, t], [__required_write_privileges__=INSERT,DELETE], false, "
        "true, false, false, false\n"
        ":  +- 'Project [*]\n"
        ":     +- 'UnresolvedRelation [m, src], [], false\n"
        "+- 'InsertIntoStatement 'UnresolvedRelation [m, t], [__required_write_privileges__=INSERT], false, false, "
        "false, false, false\n"
        "   +- 'Project [*]\n"
        "      +- 'UnresolvedRelation [m, src], [], false"
    )
    nodes = explained(plan)
    assert [n.kind for n in nodes] == [
        "Union",
        "InsertIntoStatement",
        "Project",
        "UnresolvedRelation",
        "InsertIntoStatement",
        "Project",
        "UnresolvedRelation",
    ]
    assert [n.flags for n in nodes if n.kind == "InsertIntoStatement"] == [frozenset({Flag.OVERWRITE}), frozenset()]


def test_explain_without_a_parsed_plan() -> None:
    assert explained_nodes("== Physical Plan ==\n*(1) Project [1 AS a#0]") is None
