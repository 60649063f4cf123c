"""The feature-table schema: every rule is enforced, and each has a table that breaks it."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import pandera.pandas as pa
import pytest

from mudata.building.validate import feature_table_schema, validate_table
from mudata.errors import ValidationError

CLASSES = ["walk", "sit"]
MIN_PER_CLASS = 2


def good_table() -> pd.DataFrame:
    """Two users, two rows of each class each: the smallest table that passes."""
    return pd.DataFrame(
        {
            "userid": pd.array(["1", "1", "1", "1", "2", "2", "2", "2"], dtype=str),
            "label": ["walk", "walk", "sit", "sit"] * 2,
            "f1": np.linspace(0.0, 1.0, 8),
            "f2": np.linspace(1.0, 2.0, 8),
        }
    )


def _set(column: str, row: int, value: object) -> Callable[[pd.DataFrame], pd.DataFrame]:
    def breaker(table: pd.DataFrame) -> pd.DataFrame:
        table[column] = table[column].astype(object)
        table.loc[row, column] = value
        return table.astype({column: "float64"}) if column.startswith("f") else table

    return breaker


def _missing_user(table: pd.DataFrame) -> pd.DataFrame:
    table.loc[0, "userid"] = None
    return table


# rule -> (how to break it, text the error must show)
BREAKERS: dict[str, tuple[Callable[[pd.DataFrame], pd.DataFrame], str]] = {
    # User ids are text (any id stays the user's name), never empty.
    "userid:dtype": (lambda t: t.astype({"userid": "int64"}), "dtype("),
    "userid:nullable": (_missing_user, "not_nullable"),
    "userid:str_length": (lambda t: t.replace({"userid": {"2": ""}}), "str_length(1, None)"),
    "label:dtype": (lambda t: t.assign(label=t["label"].map({"walk": 0, "sit": 1})), "dtype("),
    "label:nullable": (
        lambda t: t.assign(label=t["label"].where(t.index != 0, None)),
        "not_nullable",
    ),
    "label:isin": (lambda t: t.replace({"label": {"sit": "run"}}), "isin"),
    "feature:dtype": (lambda t: t.assign(f1=np.arange(len(t), dtype="int64")), "dtype('float64')"),
    "feature:nullable": (lambda t: t.assign(f1=t["f1"].where(t.index != 3)), "not_nullable"),
    "feature:finite": (lambda t: t.assign(f2=t["f2"].where(t.index != 5, np.inf)), "finite"),
    "table:at least one feature column": (
        lambda t: t[["userid", "label"]],
        "at least one feature column",
    ),
    "table:every user has >= 2 rows of every class": (
        lambda t: t.drop(index=[6]),
        "every user has >= 2 rows",
    ),
    "table:ordered": (lambda t: t[["label", "userid", "f1", "f2"]], "column_ordered"),
    "table:unique_column_names": (
        lambda t: pd.concat([t, t[["f1"]]], axis=1),
        "dataframe_column_labels_unique",
    ),
    "table:strict": (None, "column_not_in_schema"),  # tested through the schema below
}


def rules_of(schema: pa.DataFrameSchema) -> set[str]:
    """Every rule the schema holds, named as in BREAKERS (features collapsed to 'feature')."""
    rules = set()
    for name, column in schema.columns.items():
        who = "feature" if name not in ("userid", "label") else name
        rules.add(f"{who}:dtype")
        if not column.nullable:
            rules.add(f"{who}:nullable")
        rules.update(f"{who}:{check.name}" for check in column.checks)
    rules.update(f"table:{check.name}" for check in schema.checks)
    rules.update(
        f"table:{flag}"
        for flag in ("strict", "ordered", "unique_column_names")
        if getattr(schema, flag)
    )
    return rules


def test_every_rule_of_the_schema_has_a_breaking_table() -> None:
    schema = feature_table_schema(CLASSES, ["f1", "f2"], MIN_PER_CLASS)
    assert rules_of(schema) == set(BREAKERS)


def test_a_good_table_passes() -> None:
    table = good_table()
    pd.testing.assert_frame_equal(
        validate_table(table, CLASSES, MIN_PER_CLASS, dataset="toy"), table
    )


@pytest.mark.parametrize("rule", [r for r, (b, _) in BREAKERS.items() if b is not None])
def test_each_rule_fails_a_table_that_breaks_it(rule: str) -> None:
    breaker, expected = BREAKERS[rule]
    table = breaker(good_table())
    with pytest.raises(ValidationError) as caught:
        validate_table(table, CLASSES, MIN_PER_CLASS, dataset="toy")
    assert str(caught.value).startswith("toy: the feature table fails")
    assert expected in str(caught.value)


def test_strict_refuses_a_column_outside_the_schema() -> None:
    schema = feature_table_schema(CLASSES, ["f1"], MIN_PER_CLASS)
    with pytest.raises(pa.errors.SchemaErrors) as caught:
        schema.validate(good_table(), lazy=True)
    cases = caught.value.failure_cases
    assert cases[["check", "failure_case"]].values.tolist() == [["column_in_schema", "f2"]]


def test_every_failure_is_reported_at_once() -> None:
    table = good_table()
    table.loc[0, "f1"] = np.inf
    table.loc[1, "label"] = "run"
    with pytest.raises(ValidationError) as caught:
        validate_table(table, CLASSES, MIN_PER_CLASS, dataset="toy")
    lines = str(caught.value).splitlines()
    assert (
        "  column 'f1', check 'values must be finite (no NaN or infinity)': 1 failing: inf (row 0)"
        in lines
    )
    assert any(
        line.startswith("  column 'label', check \"isin") and "'run' (row 1)" in line
        for line in lines
    )


def test_a_rule_failing_on_many_rows_does_not_hide_another() -> None:
    table = pd.concat([good_table()] * 50, ignore_index=True)
    table["label"] = "walk"  # every user lacks 'sit': 400 failing rows
    table.loc[399, "f2"] = np.nan
    with pytest.raises(ValidationError) as caught:
        validate_table(table, CLASSES, MIN_PER_CLASS, dataset="toy")
    text = str(caught.value)
    assert (
        "check 'every user has >= 2 rows of every class': 400 failing" in text
        and "and 395 more" in text
    )
    assert "column 'f2', check 'not_nullable': 1 failing: nan (row 399)" in text


def many_users(copies: int = 6) -> pd.DataFrame:
    """``good_table`` over and over, each time with two other users: 8 rows a copy."""
    parts = []
    for k in range(copies):
        part = good_table()
        part["userid"] = part["userid"].map({"1": str(2 * k + 1), "2": str(2 * k + 2)})
        parts.append(part)
    return pd.concat(parts, ignore_index=True)


def _many_failures(table: pd.DataFrame) -> pd.DataFrame:
    """Failures of several rules in many blocks: infinities, unknown labels, a short user."""
    table.loc[table.index % 11 == 0, "f1"] = np.inf
    table.loc[table.index % 17 == 3, "label"] = "run"
    return table[~((table["userid"] == "2") & (table["label"] == "sit"))].reset_index(drop=True)


@pytest.mark.parametrize("block_rows", [5, 16])
@pytest.mark.parametrize(
    "rule", [*(r for r, (b, _) in BREAKERS.items() if b is not None), "many failures"]
)
def test_validation_in_blocks_reports_what_the_whole_schema_does(
    rule: str, block_rows: int
) -> None:
    breaker = _many_failures if rule == "many failures" else BREAKERS[rule][0]
    table = breaker(many_users())
    with pytest.raises(pa.errors.SchemaErrors) as whole:
        feature_table_schema(
            CLASSES, [c for c in table.columns if c.startswith("f")], MIN_PER_CLASS
        ).validate(table, lazy=True)
    with pytest.raises(ValidationError) as one_block:
        validate_table(table, CLASSES, MIN_PER_CLASS, dataset="toy", block_rows=len(table))
    with pytest.raises(ValidationError) as blocks:
        validate_table(table, CLASSES, MIN_PER_CLASS, dataset="toy", block_rows=block_rows)
    assert str(blocks.value) == str(one_block.value)
    n = len(whole.value.failure_cases)
    assert str(blocks.value).startswith(f"toy: the feature table fails {n} check(s):")
    # Every failing row the whole schema names is named, with its row number.
    for row in whole.value.failure_cases["index"].dropna().astype(int).head(5):
        assert f"(row {row})" in str(blocks.value)


def test_validation_in_blocks_returns_the_table_itself() -> None:
    table = many_users()
    assert validate_table(table, CLASSES, MIN_PER_CLASS, dataset="toy", block_rows=5) is table
