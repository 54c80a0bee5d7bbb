"""The functions a CHECK calls, found from its tokens (strings and quoted names are not calls)."""

from __future__ import annotations

import pytest

from delta_sync.sql.expressions import called_functions


@pytest.mark.parametrize(
    ("expression", "called"),
    [
        ("amount >= 0", set()),
        ("lower(status) IN ('new', 'paid')", {"lower"}),
        ("concat(a, 'f(x)') != 'g(y)'", {"concat"}),
        ("db.my_udf(a) AND `odd name`(b)", {"db.my_udf", "odd name"}),
        ("cat.db.f(x)", {"cat.db.f"}),
        ("NOT (a > 1) AND (b < 2)", set()),
        ("length ( trim ( name ) ) > 0", {"length", "trim"}),
        ("`col(x)` > 1", set()),
    ],
)
def test_called_functions(expression: str, called: set[str]) -> None:
    assert called_functions(expression) == called
