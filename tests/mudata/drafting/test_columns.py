"""Which columns are signals (issue 16, point 3): each detection with its reason."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from mudata.drafting.columns import (
    Roles,
    epoch_unit,
    find_roles,
    leak_evidence,
    non_signal_reason,
    resolve,
)
from mudata.errors import MudataUsageError as UsageError

rng = np.random.default_rng(0)
N = 400


def test_counters_times_and_window_ids_are_not_signals():
    counter = pd.read_csv(io.StringIO("seq\n99999\n1e+05\n100001\n100002\n"))["seq"]
    assert non_signal_reason("c1", counter).startswith("a row counter")
    assert non_signal_reason("Unnamed: 0", pd.Series(rng.normal(size=N))).startswith(
        "an index column"
    )
    millis = pd.Series(1_600_000_000_000 + np.arange(N) * 20)
    assert non_signal_reason("c2", millis) == "time (epoch milliseconds)"
    seconds = pd.Series(1_322_489_600 + np.arange(N) // 40)
    assert non_signal_reason("stamp", seconds) == "time (epoch seconds)"
    assert non_signal_reason("raw_timestamp_part_2", pd.Series(rng.integers(0, 10**6, N)))
    windows = pd.Series(np.repeat(np.arange(1, 21), N // 20))
    assert non_signal_reason("c7", windows).startswith("a counter of windows or segments")
    assert "by its name" in non_signal_reason("num_window", pd.Series(rng.normal(size=N)))


def test_text_constant_and_empty_columns_are_not_signals():
    flags = pd.Series(["no"] * (N - 5) + ["yes"] * 5)
    assert non_signal_reason("new_window", flags) == "a text flag (values no, yes)"
    dates = pd.Series(["05/12/2011 11:23"] * N)
    assert non_signal_reason("when", dates).startswith("date/time strings")
    assert non_signal_reason("k", pd.Series([3.0] * N)) == "constant (3)"
    cells = "x\n" + "\n" * (N - 10) + "#DIV/0!\n" * 5 + "1.5\n2.5\n" * 2 + "3.5\n"
    sparse = pd.read_csv(io.StringIO(cells), na_values=["#DIV/0!"], skip_blank_lines=False)["x"]
    assert non_signal_reason("kurtosis", sparse).startswith("99 % of its cells are empty")
    assert non_signal_reason("kurtosis", sparse, max_missing=1.0) is None


def test_signals_stay_signals():
    walk = pd.Series(np.cumsum(rng.normal(size=N)))
    assert non_signal_reason("acc_x", walk) is None
    assert non_signal_reason("c3", pd.Series(rng.integers(0, 64, N))) is None
    assert epoch_unit(np.array([1.5, 2.5])) is None


def test_a_column_telling_the_classes_apart_is_a_probable_leak():
    labels = pd.Series(np.repeat(["A", "B", "C"], 100))
    evidence = leak_evidence(pd.Series(np.arange(1, 301)), labels)
    assert evidence == (
        "one value range per class, none overlapping: A: 1 to 100; B: 101 to 200; C: 201 to 300"
    )
    assert leak_evidence(pd.Series(rng.normal(size=300)), labels) is None


def test_roles_by_name_by_option_and_the_columns_listed_when_absent():
    table = pd.DataFrame(
        {
            "": np.arange(N),
            "user_name": ["ana"] * N,
            "timestamp": 1_600_000_000_000 + np.arange(N) * 20,
            "x": rng.normal(size=N),
            "classe": np.repeat(["A", "B"], N // 2),
        }
    )
    roles = find_roles(table, True, {})
    assert (roles.user, roles.label, roles.time) == ("user_name", "classe", "timestamp")
    assert roles.signals == ["x"] and "" in roles.left_out
    given = find_roles(table, True, {"label": "x"})
    assert given.label == "x" and "label: column 'x', as given" in given.notes
    with pytest.raises(UsageError, match=r"--label 'klass' is not a column.*columns: , user_name"):
        find_roles(table, True, {"label": "klass"})
    assert resolve("2", ["c1", "c2", "c3"], False, "--channels") == "c2"
    with pytest.raises(UsageError, match=r"\(or their numbers 1 to 3\)"):
        resolve("7", ["c1", "c2", "c3"], False, "--channels")


def test_missing_cells_in_kept_columns_leave_out_columns_not_chosen():
    # --features x: PEAK is no signal, though no reason for it is in left_out.
    roles = Roles(user="u", label="y", signals=["x"], missing={"x": 2, "PEAK": 5, "u": 1})
    line = next(line for line in roles.report(10) if line.startswith("missing cells"))
    assert line.endswith("in kept columns: x: 2, u: 1")
    assert "in 3 column(s) of 10 rows" in line


@pytest.mark.parametrize("name", ["\u00b2", "\u2460", "9" * 5000])
def test_a_column_named_by_no_number_lists_the_columns(name):
    # Digits to str.isdigit that int() refuses: no column number, a clear error.
    with pytest.raises(UsageError, match="a, b"):
        resolve(name, ["a", "b"], True, "--label")
