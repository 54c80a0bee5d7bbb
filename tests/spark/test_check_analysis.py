"""CHECK expressions are judged by Spark's analyser at plan time, before anything runs: not boolean,
not deterministic, an unknown column or function, a user-defined function: each a spec error at its
line. Sound rules pass, on a new table and on an existing one."""

from __future__ import annotations

import pytest

from delta_sync.model.errors import SpecError
from delta_sync.review import pipeline

from .conftest import Project

pytestmark = pytest.mark.spark

SPEC = """\
table: {schema}.payments
columns:
  - name: id
    type: bigint
  - name: amount
    type: decimal(12,2)
  - name: status
    type: string
checks:
{checks}
"""


def test_bad_rules_are_spec_errors_at_their_lines_and_nothing_runs(project: Project, schema: str) -> None:
    checks = [
        "  sound: amount >= 0 AND lower(status) IN ('new', 'paid')",
        "  not_boolean: amount + 1",
        "  random: rand() > 0.5",
        "  unknown_column: amout >= 0",
        "  unknown_function: no_such_fn(status)",
    ]
    path = project.write("payments.yaml", SPEC.format(schema=schema, checks="\n".join(checks)))
    with pytest.raises(SpecError) as raised:
        pipeline.review(project.catalog, project.desired())
    problems = {p.message.split("`")[1]: p for p in raised.value.problems}
    assert sorted(problems) == ["not_boolean", "random", "unknown_column", "unknown_function"]
    lines = {"not_boolean": 11, "random": 12, "unknown_column": 13, "unknown_function": 14}
    for name, problem in problems.items():
        assert problem.file == str(path)
        assert problem.line == lines[name], (name, problem)
    assert "not boolean" in problems["not_boolean"].message
    assert "not deterministic" in problems["random"].message
    assert "amout" in problems["unknown_column"].message
    assert "no_such_fn" in problems["unknown_function"].message
    assert schema not in {str(s.name) for s in project.catalog.read([]).schemas}


def test_sound_rules_pass_on_new_and_existing_tables(project: Project, schema: str) -> None:
    project.write("payments.yaml", SPEC.format(schema=schema, checks="  positive: amount >= 0"))
    project.apply()
    project.sql(f"INSERT INTO {schema}.payments VALUES (1, 5.00, 'new')")
    evolved = SPEC.format(
        schema=schema,
        checks="  positive: amount >= 0\n  known: status IN ('new', 'paid') AND length(status) < 10",
    )
    project.write("payments.yaml", evolved)
    review = pipeline.review(project.catalog, project.desired())
    assert [p.violations for p in review.assessment.probes] == [0]
    project.apply()
    assert project.plan().is_empty


def test_a_user_defined_function_is_refused(project: Project, schema: str) -> None:
    project.catalog.spark.udf.register("is_fine", lambda s: True, "boolean")
    project.write("payments.yaml", SPEC.format(schema=schema, checks="  fine: is_fine(status)"))
    with pytest.raises(SpecError) as raised:
        pipeline.review(project.catalog, project.desired())
    (problem,) = raised.value.problems
    assert "`is_fine`, a user-defined function" in problem.message
