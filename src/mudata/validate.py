"""Validation of a feature table with Pandera, from the rules in ``schemas/feature_table.json``.

The declarative rules live apart from this code; here they are turned into a
:class:`pandera.DataFrameSchema` for one dataset (its classes, its minimum per
user and class) and applied with ``lazy=True`` so that every failure is
reported at once.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd
import pandera.pandas as pa

from mudata._resources import schemas_dir
from mudata.errors import ValidationError


@lru_cache(maxsize=1)
def table_rules() -> dict[str, Any]:
    """The rules of ``schemas/feature_table.json``."""
    return json.loads((schemas_dir() / "feature_table.json").read_text(encoding="utf-8"))


def build_schema(classes: list[str], feature_columns: list[str], min_per_class: int) -> pa.DataFrameSchema:
    """A Pandera schema for one dataset's feature table.

    Parameters
    ----------
    classes : list of str
        Allowed labels.
    feature_columns : list of str
        The feature columns, in order.
    min_per_class : int
        Minimum rows of every class for every user.
    """
    rules = table_rules()
    user_rule = rules["columns"]["userid"]
    feature_rule = rules["features"]
    columns: dict[str, pa.Column] = {
        "userid": pa.Column(
            user_rule["dtype"], pa.Check.str_length(min_value=user_rule["checks"]["min_length"]), nullable=user_rule["nullable"]
        ),
        "label": pa.Column(str, pa.Check.isin(classes), nullable=rules["columns"]["label"]["nullable"]),
    }
    finite = pa.Check(
        lambda s: pd.Series(np.isfinite(s.to_numpy(dtype=float)), index=s.index),
        name="finite",
        error="values must be finite (no NaN or infinity)",
    )
    for name in feature_columns:
        columns[name] = pa.Column(feature_rule["dtype"], finite, nullable=feature_rule["nullable"])

    def every_user_has_every_class(frame: pd.DataFrame) -> pd.Series:
        counts = pd.crosstab(frame["userid"], frame["label"]).reindex(columns=classes, fill_value=0)
        ok_users = counts.index[(counts >= min_per_class).all(axis=1)]
        return frame["userid"].isin(ok_users)

    return pa.DataFrameSchema(
        columns,
        checks=[pa.Check(every_user_has_every_class, name=f"every user has >= {min_per_class} rows of every class")],
        strict=True,
        ordered=True,
        unique_column_names=rules["table"]["unique_column_names"],
    )


def validate_table(table: pd.DataFrame, classes: list[str], min_per_class: int, *, dataset: str) -> pd.DataFrame:
    """Validate a feature table; raise :class:`ValidationError` listing every failure."""
    feature_columns = [c for c in table.columns if c not in ("userid", "label")]
    if not feature_columns:
        message = f"{dataset}: the feature table has no feature column (columns: {list(table.columns)})"
        raise ValidationError(message)
    schema = build_schema(classes, feature_columns, min_per_class)
    try:
        return schema.validate(table, lazy=True)
    except pa.errors.SchemaErrors as exc:
        cases = exc.failure_cases
        summary = cases[["column", "check", "failure_case", "index"]].head(20).to_string(index=False)
        message = f"{dataset}: the feature table fails {len(cases)} check(s):\n{summary}"
        raise ValidationError(message) from None
