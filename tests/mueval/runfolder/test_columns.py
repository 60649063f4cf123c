"""User ids are text from the table to every run-folder file and back, in natural
order; no file of a default run holds a column without a value; and the tables
``--table csv`` prints are the text tables' rows."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import mueval
from mueval.cli.main import main
from mueval.data.order import natural_key
from mueval.data.synthetic import make_users
from mueval.runfolder.columns import USER_COLUMNS, natural_user_order, text_ids

# 12 users, so that "10" sorts after "2" only in natural order.
N_USERS = 12


@pytest.fixture(scope="module")
def table_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("table") / "users.csv"
    make_users(N_USERS, n_classes=3, rows_per_user=120, n_features=4, seed=3).to_csv(
        path, index=False
    )
    return path


@pytest.fixture(scope="module")
def default_run(table_csv: Path) -> tuple[Path, str]:
    """The default strategies and diagnostics, one classifier, two iterations;
    the summary printed with --table csv."""
    out = table_csv.parent / "run"
    args = ["evaluate", "--data", str(table_csv), "-c", "nb", "--iterations", "2"]
    result = CliRunner().invoke(main, [*args, "--table", "csv", "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out, result.stdout


def _files(folder: Path) -> dict[str, pd.DataFrame]:
    frames = {}
    for path in sorted(folder.iterdir()):
        if path.suffix == ".parquet":
            frames[path.name] = pd.read_parquet(path)
        elif path.suffix == ".csv":
            # Every cell as written: an empty cell is a missing value.
            frames[path.name] = pd.read_csv(path, dtype=str, keep_default_na=False)
    return frames


def test_no_file_of_a_default_run_has_a_column_without_values(default_run) -> None:
    frames = _files(default_run[0])
    assert {"splits.parquet", "predictions.parquet", "summary.csv"} <= set(frames)
    for name, frame in frames.items():
        assert len(frame), name
        if name.endswith(".csv"):
            empty = [c for c in frame.columns if (frame[c] == "").all()]
        else:
            empty = [c for c in frame.columns if frame[c].isna().all()]
        assert not empty, f"{name}: columns without a value: {empty}"
    # Without class-conditional calibration the cell columns do not apply.
    assert "n_cal_cell" not in frames["splits.parquet"].columns


def test_user_ids_are_text_in_every_file_in_natural_order(default_run) -> None:
    folder = default_run[0]
    expected = {str(u) for u in range(1, N_USERS + 1)}
    for name in ("predictions.parquet", "splits.parquet"):
        schema = pq.read_schema(folder / name)
        for column in USER_COLUMNS:
            if column in schema.names:
                kind = schema.field(column).type
                assert pa.types.is_string(kind) or pa.types.is_large_string(kind), name
    preds = pd.read_parquet(folder / "predictions.parquet")
    assert set(preds["userid"]) == expected
    run = mueval.Run.load(folder)
    assert str(run.predictions["userid"].dtype) == str(run.splits["user"].dtype) == "string"
    ucm = run.user_coverage[run.user_coverage["strategy"] == "ucm"]
    assert set(ucm["user"]) == expected
    users = list(ucm["user"])
    assert users == sorted(users, key=natural_key) != sorted(users)


def test_a_folder_written_with_integer_ids_reads_as_text(default_run, tmp_path) -> None:
    """Folders written before ids were text hold int64 ids: read as the same text."""
    folder = tmp_path / "old"
    mueval.Run.load(default_run[0]).save(folder)
    preds = pq.read_table(folder / "predictions.parquet")
    for column in ("userid", "target_user"):
        i = preds.schema.get_field_index(column)
        as_int = pd.to_numeric(preds.column(column).to_pandas()).astype("Int64")
        preds = preds.set_column(i, column, pa.array(as_int, pa.int64()))
    pq.write_table(preds, folder / "predictions.parquet")
    splits = pd.read_parquet(folder / "splits.parquet")
    splits["user"] = pd.to_numeric(splits["user"]).astype("Int64")
    splits.to_parquet(folder / "splits.parquet", index=False)
    old, new = mueval.Run.load(folder), mueval.Run.load(default_run[0])
    pd.testing.assert_series_equal(old.predictions["userid"], new.predictions["userid"])
    pd.testing.assert_series_equal(old.splits["user"], new.splits["user"])


def test_text_ids_keep_missing_and_drop_decimal_parts() -> None:
    assert list(text_ids([3, 10.0, " u2 ", None, "007"])) == ["3", "10", "u2", pd.NA, "007"]


def _csv(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def test_evaluate_table_csv_is_the_summary_table_alone(default_run) -> None:
    """One row per summary cell, the mean and the SD in columns of their own."""
    folder, printed = default_run
    rows = _csv(printed)
    header = rows[0]
    assert header[:5] == ["strategy", "strategy_name", "classifier", "classifier_name", "metric"]
    assert {"mean", "sd", "unit", "n"} <= set(header)
    body = [dict(zip(header, r, strict=True)) for r in rows[1:]]
    assert {r["strategy"] for r in body} == {"mm", "udm", "uim", "ucm"}
    summary = pd.read_csv(folder / "summary.csv")
    assert len(body) == len(summary)
    mm_coverage = summary.query("strategy == 'mm' and metric == 'coverage'").iloc[0]
    cell = next(r for r in body if (r["strategy"], r["metric"]) == ("mm", "coverage"))
    assert cell["unit"] == "%"
    assert f"{float(cell['mean']):.2f}" == f"{100 * mm_coverage['mean']:.2f}"
    assert f"{float(cell['sd']):.2f}" == f"{100 * mm_coverage['sd']:.2f}"


# Slow (tens of seconds): .ci/run runs it with -m slow; the default run stays under 5 min.
@pytest.mark.slow
def test_compare_table_forms_hold_the_text_tables_rows(default_run) -> None:
    runner = CliRunner()
    folder = str(default_run[0])
    text = runner.invoke(main, ["compare", folder])
    as_csv = runner.invoke(main, ["compare", folder, "--table", "csv"])
    markdown = runner.invoke(main, ["compare", folder, "--table", "markdown"])
    assert text.exit_code == as_csv.exit_code == markdown.exit_code == 0, as_csv.output
    rows = _csv(as_csv.stdout)
    assert "metric:" not in as_csv.stdout  # stdout holds the table alone
    # The text table: a header line, then one line per row, between the "metric:"
    # line and the legend of the tests.
    lines = text.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("metric: coverage"))
    end = next(i for i, line in enumerate(lines) if line.startswith("welch: "))
    table_lines = lines[start + 1 : end]
    assert len(rows) == len(table_lines) > 1
    assert rows[0] == table_lines[0].split()
    assert markdown.stdout.splitlines()[0] == "| " + " | ".join(rows[0]) + " |"


def test_curve_table_csv(table_csv: Path) -> None:
    args = ["curve", "--data", str(table_csv), "-c", "nb", "--k", "0", "--k", "5,10"]
    result = CliRunner().invoke(main, [*args, "--iterations", "1", "--table", "csv"])
    assert result.exit_code == 0, result.output
    rows = _csv(result.stdout)
    assert rows[0] == ["use", "k", "users", "coverage %", "set size", "accuracy %", "n_cal"]
    assert [r[1] for r in rows[1:]] == ["0", "5", "10"]


def _natural_order_by_joined_texts(frame: pd.DataFrame) -> pd.DataFrame:
    """The brute-force reference: blocks found by joining each row's texts."""
    before = list(frame.columns[: frame.columns.get_loc("user")])
    if before:
        keys = frame[before].map(str).agg("\x1f".join, axis=1)
        block = (keys != keys.shift()).cumsum().to_numpy()
    else:
        block = np.zeros(len(frame), dtype=np.int64)
    rank = [(-1,) if pd.isna(u) else (0, natural_key(u)) for u in frame["user"].astype(object)]
    order = sorted(range(len(frame)), key=lambda i: (block[i], rank[i]))
    return frame.iloc[order].reset_index(drop=True)


@pytest.mark.parametrize("seed", range(6))
def test_natural_user_order_equals_joined_text_blocks(seed) -> None:
    # Hostile: one-row blocks, blocks that come back later, missing keys and
    # users, numbers and texts in one key column, and users "2" and "10".
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    frame = pd.DataFrame(
        {
            "strategy": rng.choice(["ucm", "uim", "mm"], n),
            "classifier": rng.choice(np.array(["nb", None, 3], dtype=object), n),
            "iteration": rng.integers(1, 3, n),
            "user": rng.choice(np.array(["1", "2", "10", "S3", None], dtype=object), n),
            "value": np.arange(n),
        }
    )
    expected = _natural_order_by_joined_texts(frame)
    pd.testing.assert_frame_equal(natural_user_order(frame), expected)
    alone = frame[["user", "value"]]
    pd.testing.assert_frame_equal(natural_user_order(alone), _natural_order_by_joined_texts(alone))
