"""One rule for class codes, text user ids, the users' floor and the row balance (issue 10, points 4, 5, 7)."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pytest

import mudata
from mudata.building.labelled import (
    build_table,
    row_balance,
)
from mudata.drafting.draft import draft_entry
from mudata.drafting.records import Choices
from mudata.errors import EmptyResultError, RegistryError
from mudata.readers.sources import Sources
from mudata.records.classes import fold_note, match_classes, user_names, user_sort_key
from tests.entries import entry

# ---------------------------------------------------------------- the rule


@pytest.mark.parametrize("registry_code", ["1", "1.0", "01", 1])
@pytest.mark.parametrize("column", [[1, 2, 1], [1.0, 2.0, 1.0], ["01", "2", "1.0"]])
def test_numeric_codes_compare_as_numbers(registry_code, column):
    e = entry("feature-table", {}, [(registry_code, "one"), (2, "two")])
    matched = match_classes(pd.Series(column), e)
    assert matched.rank.tolist() == [0, 1, 0]
    assert matched.names.tolist() == ["one", "two", "one"]


def test_a_blank_label_in_an_integer_column_drops_only_its_row():
    # read from CSV, the column is float (NaN) -- its 1.0 is still code 1
    e = entry("feature-table", {}, [(1, "one"), (2, "two")])
    matched = match_classes(pd.Series([1, 2, None, 1]), e)
    assert matched.rank.tolist() == [0, 1, -1, 0]
    assert matched.dropped == {"<blank>": 1}


def test_text_codes_compare_exactly_with_a_hint_on_case():
    e = entry("feature-table", {}, [("walk", "walking"), ("sit", "sitting")])
    with pytest.raises(RegistryError) as info:
        match_classes(pd.Series(["Walk", "sit", "run"]), e)
    message = str(info.value)
    assert "class 'walking' (code 'walk')" in message
    assert "the data has 'Walk': text codes compare exactly, and case differs" in message
    assert "codes seen: ['Walk', 'run', 'sit']" in message


def test_a_listed_class_never_seen_names_it_and_the_codes_seen():
    e = entry("feature-table", {}, [(1, "one"), (7, "seven")])
    with pytest.raises(
        RegistryError,
        match=r"class 'seven' \(code 7\) listed in \[\[classes\]\] is never seen.*codes seen: \['1', '2'\]",
    ):
        match_classes(pd.Series([1, 2, 2]), e)


def test_two_codes_that_are_one_number_are_an_error():
    e = entry("feature-table", {}, [("1", "one"), ("01", "also one")])
    with pytest.raises(RegistryError, match="are the same number"):
        match_classes(pd.Series([1, 1]), e)
    # in a text column they are two codes
    matched = match_classes(pd.Series(["1", "01", "x"]), e)
    assert matched.rank.tolist() == [0, 1, -1] and matched.dropped == {"x": 1}


def test_one_mapping_for_features_and_the_table():
    """1.0 in a float column is code 1 for the recipe and for the table's names alike."""
    from mudata.building.features import class_rank

    e = entry("long-signals", {}, [(1, "one"), (2, "two")])
    labels = pd.Series([1.0, 2.0, 3.0])
    assert (
        class_rank(labels, e).tolist() == match_classes(labels, e, check_seen=False).rank.tolist()
    )


# ---------------------------------------------------------------- user ids


def test_user_ids_stay_text_and_sort_numerically_when_all_are_numbers():
    assert user_names(pd.Series([101, 7.0, "S01", " f1 "])).tolist() == ["101", "7", "S01", "f1"]
    assert user_sort_key(["10", "9", "101"]) == ["9", "10", "101"]
    assert user_sort_key(["s10", "s9", "1"]) == ["1", "s10", "s9"]


def _features(path, users, labels, extra=None) -> None:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "who": users,
            "act": labels,
            "f1": rng.normal(size=len(users)),
            "f2": rng.normal(size=len(users)),
        }
    )
    if extra is not None:
        frame.loc[extra, "f2"] = np.nan
    frame.to_csv(path, index=False)


FEATURE_OPTIONS = {"format": "csv", "user_col": "who", "label_col": "act"}


def test_table_and_provenance_keep_text_user_ids(tmp_path):
    users = ["subject101"] * 4 + ["subject102"] * 4 + ["S9"] * 4
    _features(tmp_path / "f.csv", users, ["a", "b"] * 4 + ["a"] * 4)
    table, counts = build_table(
        entry("feature-table", FEATURE_OPTIONS, [("a", "A"), ("b", "B")], min_per_class=2),
        Sources([tmp_path]),
    )
    assert table["userid"].tolist() == users[:8]
    assert pd.api.types.is_string_dtype(table["userid"])
    assert counts["users_dropped"] == {"S9": "fewer than 2 rows of B: 0"}
    assert counts["rows_dropped_by_user_filter"] == {"S9": 4}


# ---------------------------------------------------------------- drops, counts, floor


def test_rows_of_labels_not_kept_are_counted_per_label_in_log_and_counts(tmp_path, caplog):
    users = [1] * 10 + [2] * 10
    labels = ["a", "b", "x", "x", "y", "a", "b", "a", "b", "Walk"] * 2
    _features(tmp_path / "f.csv", users, labels)
    e = entry("feature-table", FEATURE_OPTIONS, [("a", "A"), ("b", "B")], min_per_class=1)
    with caplog.at_level(logging.INFO, logger="mudata"):
        _, counts = build_table(e, Sources([tmp_path]))
    assert counts["rows_dropped_by_class_code"] == {"Walk": 2, "x": 4, "y": 2}
    assert "8 of 20 rows read with label 'x'" not in caplog.text  # per label, not summed
    assert "4 of 20 rows read with label 'x' dropped (not a kept class)" in caplog.text
    assert "2 of 20 rows read with label 'Walk' dropped" in caplog.text


def test_fewer_than_two_users_is_an_error_listing_users_dropped_and_why(tmp_path):
    users = [1] * 6 + [2] * 3 + [3] * 3
    _features(tmp_path / "f.csv", users, ["a", "b"] * 3 + ["a"] * 3 + ["b", "b", "b"])
    e = entry("feature-table", FEATURE_OPTIONS, [("a", "A"), ("b", "B")], min_per_class=2)
    with pytest.raises(EmptyResultError) as info:
        build_table(e, Sources([tmp_path]))
    message = str(info.value)
    assert "1 user(s) ['1'] have at least 2 rows of every class" in message
    assert "at least 2 are needed (--min-users)" in message
    assert "user 2: fewer than 2 rows of B: 0" in message
    assert "user 3: fewer than 2 rows of A: 0" in message


def test_min_users_raises_the_floor(tmp_path):
    users = [1] * 4 + [2] * 4 + [3] * 4
    _features(tmp_path / "f.csv", users, ["a", "b"] * 6)
    e = entry("feature-table", FEATURE_OPTIONS, [("a", "A"), ("b", "B")], min_per_class=2)
    table, _ = build_table(e, Sources([tmp_path]), min_users=3)
    assert table["userid"].nunique() == 3
    with pytest.raises(EmptyResultError, match="3 user"):
        build_table(e, Sources([tmp_path]), min_users=4)


def test_feature_rows_read_kept_and_dropped_balance(tmp_path):
    users = [1] * 12 + [2] * 12 + [3] * 12 + [4] * 3
    labels = ["a", "b", "c"] * 12 + ["a", "a", "b"]
    _features(tmp_path / "f.csv", users, labels, extra=[0, 5, 30])
    e = entry("feature-table", FEATURE_OPTIONS, [("a", "A"), ("b", "B")], min_per_class=2)
    table, counts = build_table(e, Sources([tmp_path]))
    counts["rows"] = len(table)
    balance = row_balance(counts)
    assert balance["raw_in"] == balance["raw_out"] == 39
    assert balance["features_in"] == balance["features_out"]
    assert counts["rows_dropped_by_class_code"] == {"c": 12}
    assert counts["rows_dropped_missing_values"] == 2  # row 5 holds class c
    assert counts["rows_dropped_by_user_filter"] == {"4": 3}
    assert len(table) == 39 - 12 - 2 - 3


def test_signal_rows_read_kept_and_dropped_balance(tmp_path):
    rng = np.random.default_rng(5)
    for user in ("a1", "b2", "c3"):
        n = 137
        labels = rng.choice(["walk", "sit", "jump", ""], size=n, p=[0.4, 0.4, 0.15, 0.05])
        labels = np.sort(labels)  # contiguous runs, as in real recordings
        values = rng.normal(size=(n, 3))
        values[100, 0] = np.nan  # one missing sample: its windows are dropped with a reason
        frame = pd.DataFrame(
            {
                "user": user,
                "label": labels,
                "ax": values[:, 0],
                "ay": values[:, 1],
                "az": values[:, 2],
            }
        )
        frame.to_csv(tmp_path / f"{user}.csv", index=False)
    e = entry(
        "long-signals",
        {"user_col": "user", "label_col": "label"},
        [("walk", "W"), ("sit", "S")],
        recipe={"name": "study-window", "window": 10, "smoothing": 3},
        min_per_class=3,
    )
    table, counts = build_table(e, Sources([tmp_path]))
    counts["rows"] = len(table)
    balance = row_balance(counts)
    assert balance["raw_in"] == 3 * 137
    assert balance["raw_in"] == balance["raw_out"], counts
    assert balance["features_in"] == balance["features_out"], counts
    assert set(counts["rows_dropped_by_class_code"]) == {"jump", "<blank>"}
    assert counts["windows_dropped"]


def test_fetch_min_users_and_the_label_log_through_the_cli(tmp_path, monkeypatch, caplog):
    from click.testing import CliRunner

    from mudata.cli import main

    monkeypatch.chdir(tmp_path)
    users = ["u1"] * 12 + ["u2"] * 12 + ["u3"] * 12 + ["u4"] * 4
    labels = ["a", "b", "other"] * 12 + ["a", "a", "a", "b"]
    _features(tmp_path / "f.csv", users, labels)
    named = pd.read_csv(tmp_path / "f.csv").rename(columns={"who": "subject", "act": "activity"})
    named.to_csv(tmp_path / "f.csv", index=False)
    runner = CliRunner()
    home = str(tmp_path / "home")
    drafted = runner.invoke(
        main, ["init", "f.csv", "--name", "own", "--kind", "features", "--min-per-class", "2"]
    )
    assert drafted.exit_code == 0, drafted.output
    text = (tmp_path / "own.toml").read_text(encoding="utf-8")
    # the user keeps two of the three classes: delete the [[classes]] table of "other"
    text = text.replace('[[classes]]\ncode = "other"\nname = "other"  # 12 rows\n', "")
    (tmp_path / "own.toml").write_text(text, encoding="utf-8")
    registered = runner.invoke(main, ["register", "own.toml", "--data-home", home, "--draft-ok"])
    assert registered.exit_code == 0, registered.output

    refused = runner.invoke(main, ["fetch", "own", "--data-home", home, "--min-users", "4"])
    assert refused.exit_code == 1
    assert "3 user(s) ['u1', 'u2', 'u3'] have at least 2 rows of every class" in refused.output
    assert "user u4: fewer than 2 rows of b: 1" in refused.output
    assert (
        runner.invoke(main, ["fetch", "own", "--data-home", home, "--min-users", "1"]).exit_code
        == 2
    )

    with caplog.at_level(logging.INFO, logger="mudata"):
        fetched = runner.invoke(main, ["-v", "fetch", "own", "--data-home", home])
    assert fetched.exit_code == 0, fetched.output
    assert "12 of 40 rows read with label 'other' dropped (not a kept class)" in caplog.text
    record = mudata.provenance("own", data_home=home)
    assert record["counts"]["rows_dropped_by_class_code"] == {"other": 12}
    assert record["files"][0]["hashes"] == "first-use"


# ---------------------------------------------------------------- labels folded into one code


def test_labels_that_one_number_stands_for_are_named():
    e = entry("feature-table", {}, [(1, "one"), (2, "two")])
    matched = match_classes(pd.Series(["01", "1", "2", "1.0", "02"]), e)
    assert matched.rank.tolist() == [0, 0, 1, 0, 1]
    assert matched.folded == {"1": ["01", "1", "1.0"], "2": ["02", "2"]}
    assert fold_note(matched.folded)[0] == (
        "labels '01', '1', '1.0' are one class code, 1: "
        "a label column of numbers compares codes as numbers"
    )
    # Numbers as numbers, and text codes, fold nothing.
    assert match_classes(pd.Series([1, 1.0, 2]), e).folded == {}
    words = entry("feature-table", {}, [("01", "a"), ("1", "b"), ("x", "c")])
    assert match_classes(pd.Series(["01", "1", "x"]), words).folded == {}


def test_a_build_warns_of_labels_folded_into_one_code(tmp_path, caplog):
    # Parquet keeps the labels as written (a CSV reader reads "01" as the number 1).
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "who": np.repeat(["1", "2", "3"], 12),
            "act": ["01", "1", "2"] * 12,
            "f1": rng.normal(size=36),
            "f2": rng.normal(size=36),
        }
    )
    frame.to_parquet(tmp_path / "f.parquet")
    draft = draft_entry(
        [tmp_path], "own", output=tmp_path / "own.toml", kind="features",
        choices=Choices(label="act", user="who"),
    )  # fmt: skip
    assert "  note: labels '01', '1' are one class code, 1: a label column" in "\n".join(
        draft.report
    )
    e = entry("feature-table", {**FEATURE_OPTIONS, "format": "parquet"}, [(1, "one"), (2, "two")])
    with caplog.at_level(logging.WARNING, logger="mudata"):
        table, _ = build_table(e, Sources([tmp_path]))
    assert table["label"].value_counts().to_dict() == {"one": 24, "two": 12}
    assert "own: labels '01', '1' are one class code, 1" in caplog.text
