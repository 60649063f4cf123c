"""The feature table's rules, as a Pandera schema, and their enforcement.

Every published table, whatever its reader and recipe, obeys these rules (the
schema is built per dataset because the allowed labels and the minimum rows per
user and class come from its registry entry):

- the columns are ``userid``, ``label``, then at least one feature, in that
  order, with no name twice and nothing else;
- ``userid`` is an ``int64`` user id ``>= 0``, never missing;
- ``label`` is text, one of the entry's kept class names, never missing;
- each feature is ``float64`` and finite (no NaN, no infinity);
- every user has at least ``min_per_class`` rows of every kept class (the
  user filter's rule, checked again on the result).

The schema is declared in :func:`feature_table_schema` and nowhere else; it is
applied with ``lazy=True`` so that every failure is reported at once, each with
its column, check and failing values.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pandera.pandas as pa

from mudata.errors import ValidationError, excerpt

USER_COLUMN = "userid"
LABEL_COLUMN = "label"
FIRST_COLUMNS = (USER_COLUMN, LABEL_COLUMN)

_FINITE = pa.Check(
    lambda s: pd.Series(np.isfinite(s.to_numpy(dtype=float)), index=s.index),
    name="finite",
    error="values must be finite (no NaN or infinity)",
)

_HAS_FEATURES = pa.Check(
    lambda frame: frame.shape[1] > len(FIRST_COLUMNS),
    name="at least one feature column",
    error=f"the table needs at least one feature column after {list(FIRST_COLUMNS)}",
)


def _every_class_per_user(classes: list[str], min_per_class: int) -> pa.Check:
    """A row-wise check: True for the rows of users with enough rows of every class."""

    def check(frame: pd.DataFrame) -> pd.Series:
        counts = pd.crosstab(frame[USER_COLUMN], frame[LABEL_COLUMN]).reindex(
            columns=classes, fill_value=0
        )
        ok_users = counts.index[(counts >= min_per_class).all(axis=1)]
        return frame[USER_COLUMN].isin(ok_users)

    return pa.Check(check, name=f"every user has >= {min_per_class} rows of every class")


def feature_table_schema(
    classes: list[str], feature_columns: list[str], min_per_class: int
) -> pa.DataFrameSchema:
    """The Pandera schema of one dataset's feature table (rules in the module docstring).

    Parameters
    ----------
    classes : list of str
        The kept class names: the allowed labels.
    feature_columns : list of str
        The feature columns, in order.
    min_per_class : int
        Minimum rows of every class for every user.

    Returns
    -------
    pandera.DataFrameSchema
    """
    columns: dict[str, pa.Column] = {
        # User ids are text (any string or integer id stays the user's name).
        USER_COLUMN: pa.Column(str, pa.Check.str_length(min_value=1), nullable=False),
        LABEL_COLUMN: pa.Column(str, pa.Check.isin(classes), nullable=False),
    }
    for name in feature_columns:
        columns[name] = pa.Column("float64", _FINITE, nullable=False)
    return pa.DataFrameSchema(
        columns,
        checks=[_HAS_FEATURES, _every_class_per_user(classes, min_per_class)],
        strict=True,  # no column beyond userid, label and the features
        ordered=True,  # userid, label first, then the features in their order
        unique_column_names=True,
        name="mudata feature table",
    )


#: Rows checked at a time by :func:`validate_table`: Pandera's checks make
#: copies of what they check, so a block of rows, not the table, is copied.
BLOCK_ROWS = 65_536


def validate_table(
    table: pd.DataFrame,
    classes: list[str],
    min_per_class: int,
    *,
    dataset: str,
    block_rows: int = BLOCK_ROWS,
) -> pd.DataFrame:
    """Validate a feature table; raise :class:`ValidationError` listing every failure.

    Every column other than ``userid`` and ``label`` is taken as a feature.
    The schema of :func:`feature_table_schema` is applied to ``block_rows``
    rows at a time (its rules of one row, of a column's dtype and of the
    columns), and its rule over users and classes to the ``userid`` and
    ``label`` columns of the whole table: the failures, and the message, are
    those of the schema applied to the whole table at once, without a copy of
    the features beyond a block.

    Returns
    -------
    DataFrame
        ``table`` itself (the schema changes nothing: it coerces no dtype).

    Raises
    ------
    ValidationError
        Naming the dataset, and for each column and check that fails the
        number of failing cases and the first few values with their rows.
    """
    feature_columns = [c for c in table.columns if c not in FIRST_COLUMNS]
    schema = feature_table_schema(classes, feature_columns, min_per_class)
    per_user = [c for c in schema.checks if c.name.startswith("every user")]
    of_rows = pa.DataFrameSchema(
        schema.columns,
        checks=[c for c in schema.checks if c not in per_user],
        strict=schema.strict,
        ordered=schema.ordered,
        unique_column_names=schema.unique_column_names,
        name=schema.name,
    )
    failures = []
    for first in range(0, max(len(table), 1), block_rows):
        failures.append(_failures(of_rows, table.iloc[first : first + block_rows]))
    # The table-wide rule reads two columns of every row: it alone sees the whole table.
    failures.append(_failures(pa.DataFrameSchema(checks=per_user), table))
    cases = pd.concat([f for f in failures if f is not None] or [pd.DataFrame()])
    if cases.empty:
        return table
    # A rule on the columns or a dtype fails once per block: it is one failure.
    # (Failure cases may be unhashable, an Index of duplicated names: compared as text.)
    key = cases[["column", "check", "failure_case"]].astype(str)
    cases = cases[~(cases["index"].isna().to_numpy() & key.duplicated().to_numpy())]
    # Rules in the schema's order (its columns, then the table's), whatever block failed first.
    position = {name: i for i, name in enumerate(schema.columns)}
    order = pd.DataFrame(
        {
            "column": cases["column"].map(position).fillna(len(position)).to_numpy(),
            "check_number": cases["check_number"].fillna(-1).to_numpy(),
            "check": cases["check"].astype(str).to_numpy(),
        }
    ).sort_values(["column", "check_number", "check"], kind="stable")
    cases = cases.iloc[order.index.to_numpy()]
    message = f"{dataset}: the feature table fails {len(cases)} check(s):\n" + _summary(cases)
    raise ValidationError(message)


def _failures(schema: pa.DataFrameSchema, rows: pd.DataFrame) -> pd.DataFrame | None:
    """Pandera's failure cases of ``rows`` (index: their row numbers), or None when they pass."""
    try:
        # In place: a schema that coerces nothing has nothing to write, so no copy of the rows.
        schema.validate(rows, lazy=True, inplace=True)
    except pa.errors.SchemaErrors as exc:
        return exc.failure_cases
    return None


def _summary(cases: pd.DataFrame, examples: int = 5) -> str:
    """One line per (column, check): how many cases fail, and the first few with their rows.

    Grouped, so that a rule failing on thousands of rows cannot hide another rule.
    """
    lines = []
    for (column, check), group in cases.groupby(["column", "check"], sort=False, dropna=False):
        shown = ", ".join(
            excerpt(value, 60) + ("" if pd.isna(row) else f" (row {row})")
            for value, row in zip(
                group["failure_case"].head(examples), group["index"].head(examples), strict=True
            )
        )
        more = f", and {len(group) - examples} more" if len(group) > examples else ""
        lines.append(f"  column {column!r}, check {check!r}: {len(group)} failing: {shown}{more}")
    return "\n".join(lines)


__all__ = [
    "BLOCK_ROWS",
    "FIRST_COLUMNS",
    "LABEL_COLUMN",
    "USER_COLUMN",
    "feature_table_schema",
    "validate_table",
]
