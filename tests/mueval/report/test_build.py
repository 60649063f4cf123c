"""`mueval report` / `mueval compare` on a run folder built from a real computation.

The fixture writes a run folder in exactly the format of `mueval evaluate`
(format_version 1): GaussianNB on scikit-learn's digits with six synthetic users
(each user's features carry their own noise level, so users differ), split as the
protocol's MM, UIM and UCM, LAC sets and p-values computed by hand with numpy.
"""

from __future__ import annotations

import json
import math
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from sklearn.datasets import load_digits
from sklearn.metrics import f1_score
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import GaussianNB
from sklearn.preprocessing import MinMaxScaler

from mueval.cli.report import compare_command, report_command
from mueval.runfolder import RunFolderError, read_run_folder
from tests.conftest import SHARED_DATA

ALPHA = 0.05
METRICS = [
    "accuracy",
    "sensitivity",
    "specificity",
    "F1",
    "weighted_F1",
    "coverage",
    "jaccard",
    "setsize",
    "pctempty",
    "MCriterion",
    "FCriterion",
    "OM",
    "OF",
    "OU",
    "OE",
    "OF_textbook",
    "OU_textbook",
]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _metrics(y: np.ndarray, yp: np.ndarray, sets: np.ndarray, pv: np.ndarray) -> dict:
    """The protocol's metrics of one evaluated subset."""
    out = {"accuracy": float(np.mean(y == yp))}
    sens, spec, f1 = [], [], []
    for c in np.unique(y):
        tp = np.sum((yp == c) & (y == c))
        fn = np.sum((yp != c) & (y == c))
        fp = np.sum((yp == c) & (y != c))
        tn = np.sum((yp != c) & (y != c))
        if tp + fn:
            sens.append(tp / (tp + fn))
        if tn + fp:
            spec.append(tn / (tn + fp))
        if 2 * tp + fp + fn:
            f1.append(2 * tp / (2 * tp + fp + fn))
    out.update(
        sensitivity=float(np.mean(sens)),
        specificity=float(np.mean(spec)),
        F1=float(np.mean(f1)),
        weighted_F1=float(f1_score(y, yp, average="weighted")),
    )
    n = len(y)
    size = sets.sum(axis=1)
    cov = sets[np.arange(n), y]
    false = sets.copy()
    false[np.arange(n), y] = False
    pfalse = pv.copy()
    pfalse[np.arange(n), y] = 0.0
    nonempty = size > 0
    out.update(
        coverage=float(cov.mean()),
        jaccard=float(np.mean(np.where(cov, 1.0 / np.maximum(size, 1), 0.0))),
        setsize=float(size.mean()),
        pctempty=float(np.mean(size == 0)),
        MCriterion=float(np.mean(size[nonempty] > 1)),
        FCriterion=float(np.mean(pv.sum(axis=1) - pv.max(axis=1))),
        OM=float(np.mean(false[nonempty].any(axis=1))),
        OF=float(np.mean((pv * false)[nonempty].sum(axis=1))),
        OU=float(np.mean((pv * false)[nonempty].max(axis=1))),
        OE=float(np.mean(false.sum(axis=1))),
        OF_textbook=float(np.mean(pfalse.sum(axis=1))),
        OU_textbook=float(np.mean(pfalse.max(axis=1))),
    )
    return out


def _conformal(model, x_cal, y_cal, x_test):
    """LAC sets and (unsmoothed) p-values, by hand."""
    cal_scores = 1.0 - model.predict_proba(x_cal)[np.arange(len(y_cal)), y_cal]
    n = len(cal_scores)
    q = np.sort(cal_scores)[min(math.ceil((n + 1) * (1 - ALPHA)), n) - 1]
    proba = model.predict_proba(x_test)
    test_scores = 1.0 - proba
    sets = test_scores <= q
    pv = ((cal_scores[None, None, :] >= test_scores[:, :, None]).sum(axis=2) + 1) / (n + 1)
    return sets, pv, proba


def make_run_folder(root: Path, *, iterations: int = 3, n_users: int = 6) -> Path:
    """Write a format_version 1 run folder for MM, UIM and UCM with GaussianNB."""
    # Six digits keep the figures light enough for a fast test.
    digits = load_digits(n_class=6)
    rng = np.random.default_rng(7)
    users = np.arange(digits.target.size) % n_users + 1
    # Each user's own sensor noise: users differ, as real users do.
    x_all = digits.data + rng.normal(0.0, 1.0, digits.data.shape) * (users[:, None] * 1.2)
    classes = [f"digit {d}" for d in range(6)]  # sorted alphabetically = index order
    y_all = digits.target
    pred_rows, split_rows = [], []

    def run_one(strategy, it, seed, user, tr, ca, te):
        scaler = MinMaxScaler().fit(x_all[tr])
        model = GaussianNB().fit(scaler.transform(x_all[tr]), y_all[tr])
        sets, pv, proba = _conformal(
            model, scaler.transform(x_all[ca]), y_all[ca], scaler.transform(x_all[te])
        )
        yp = model.predict(scaler.transform(x_all[te]))
        y = y_all[te]
        split_rows.append(
            {
                "strategy": strategy,
                "classifier": "nb",
                "iteration": it,
                "seed": seed,
                "user": user,
                "n_test": len(te),
                "n_cal": len(ca),
                **_metrics(y, yp, sets, pv),
            }
        )
        for r, row in enumerate(te):
            pred_rows.append(
                {
                    "strategy": strategy,
                    "classifier": "nb",
                    "iteration": it,
                    "seed": seed,
                    "target_user": user,
                    "userid": int(users[row]),
                    "row_id": int(row),
                    "y_true": classes[y[r]],
                    "y_pred": classes[yp[r]],
                    "pred_set": [classes[k] for k in np.flatnonzero(sets[r])],
                    "set_size": int(sets[r].sum()),
                    "covered": bool(sets[r, y[r]]),
                    "p_values": pv[r].tolist(),
                    "proba": proba[r].tolist(),
                }
            )

    idx = np.arange(y_all.size)
    for it in range(1, iterations + 1):
        seed = 100 + it
        tr, rest = train_test_split(idx, train_size=0.6, stratify=y_all, random_state=seed)
        ca, te = train_test_split(rest, train_size=0.5, stratify=y_all[rest], random_state=seed)
        run_one("mm", it, seed, None, tr, ca, te)
        for u in range(1, n_users + 1):
            others, mine = idx[users != u], idx[users == u]
            tr, ca_o = train_test_split(
                others, train_size=0.6, stratify=y_all[others], random_state=seed
            )
            te, ca_u = train_test_split(
                mine, train_size=0.5, stratify=y_all[mine], random_state=seed
            )
            run_one("uim", it, seed, u, tr, ca_o, te)
            run_one("ucm", it, seed, u, tr, ca_u, te)

    splits = pd.DataFrame(split_rows)
    splits["user"] = splits["user"].astype("Int64")
    root.mkdir(parents=True, exist_ok=True)
    splits.to_parquet(root / "splits.parquet", index=False)
    schema = pa.schema(
        [
            ("strategy", pa.string()),
            ("classifier", pa.string()),
            ("iteration", pa.int64()),
            ("seed", pa.int64()),
            ("target_user", pa.int64()),
            ("userid", pa.int64()),
            ("row_id", pa.int64()),
            ("y_true", pa.string()),
            ("y_pred", pa.string()),
            ("pred_set", pa.list_(pa.string())),
            ("set_size", pa.int64()),
            ("covered", pa.bool_()),
            ("p_values", pa.list_(pa.float64())),
            ("proba", pa.list_(pa.float64())),
        ]
    )
    table = pa.Table.from_pydict(
        {c: [r[c] for r in pred_rows] for c in schema.names}, schema=schema
    )
    pq.write_table(table, root / "predictions.parquet")

    per_it = splits.groupby(["strategy", "classifier", "iteration"])[METRICS].mean()
    summary = []
    for (s, c), g in per_it.groupby(level=[0, 1]):
        for m in METRICS:
            summary.append(
                {
                    "strategy": s,
                    "classifier": c,
                    "metric": m,
                    "mean": g[m].mean(),
                    "sd": g[m].std(ddof=1),
                    "n": len(g),
                }
            )
    pd.DataFrame(summary).to_csv(root / "summary.csv", index=False)
    run = {
        "format_version": 1,
        "dataset": {
            "name": "digits <script>alert(1)</script> & users",
            "source": "file",
            "provenance_sha256": "0" * 64,
            "n_rows": int(y_all.size),
            "n_users": n_users,
            "licence": None,
        },
        "classes": classes,
        "config": {
            "strategies": ["mm", "uim", "ucm"],
            "classifiers": ["nb"],
            "alpha": ALPHA,
            "iterations": iterations,
            "seed_base": 100,
            "score": "lac",
            "mondrian": False,
            "adapt_frac": 0.5,
            "jobs": 1,
            "backend": "loky",
        },
        "versions": {
            "python": "3",
            "mueval": "0.1.0",
            "mudata": "0.1.0",
            "numpy": np.__version__,
            "pandas": pd.__version__,
            "scikit-learn": "x",
            "mapie": "x",
        },
        "timings": {"total_s": 1.0},
        "created": "2025-01-01T00:00:00+00:00",
    }
    (root / "run.json").write_text(json.dumps(run), encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    return make_run_folder(tmp_path_factory.mktemp("run") / "run")


@pytest.fixture(scope="module")
def built(run_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    result = CliRunner().invoke(
        report_command,
        [str(run_dir), "--out", str(out), "--n-boot", "40", "--progress", "--figures", "all"],
    )
    assert result.exit_code == 0, result.output + str(result.exception)
    return out, result


def test_progress_bar_counts_the_strategy_classifier_sections(built):
    _, result = built
    # the fixture's run has three strategies and one classifier
    assert "report: 100%" in result.stderr and "3/3" in result.stderr


# Every section's figures, not only page one's (the default).
_ALL = ("--figures", "all")

EXPECTED_PER_PAIR = [
    "cooccurrence_matrix",
    "cooccurrence_graph",
    "confusion",
    "confusion_zero_diagonal",
    "multiset",
    "inclusion",
    "comembership",
    "phi",
    "soft_confusion",
    "coverage_confusion",
]


def test_every_expected_figure_is_a_valid_svg_by_default_and_nothing_else(built):
    out, _ = built
    stems = ["coverage_box_nb", "setsize_lollipop", "per_user_coverage_nb", "per_user_setsize_nb"]
    stems += [f"{s}_nb_{k}" for s in ("mm", "uim", "ucm") for k in EXPECTED_PER_PAIR]
    for stem in stems:
        root = ET.parse(out / "figures" / f"{stem}.svg").getroot()
        assert root.tag.endswith("svg"), stem
        # Sized in points, as drawn: at least a few inches each way.
        width, height = (float(root.get(a).removesuffix("pt")) for a in ("width", "height"))
        assert width > 200 and height > 200, stem
    # SVG only (no PNG copies); the captions name the files that exist.
    assert {p.suffix for p in (out / "figures").iterdir()} == {".svg"}
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "(file: coverage_box_nb.svg)" in page and ".png" not in page


@pytest.mark.parametrize(("fmt", "embedded"), [("png", "image/png"), ("pdf", "image/svg+xml")])
def test_figure_format_png_at_its_dpi_or_pdf_shown_on_the_page_as_svg(
    run_dir, tmp_path, fmt, embedded
):
    out = tmp_path / "r"
    result = CliRunner().invoke(
        report_command, [str(run_dir), "--out", str(out), "--figure-format", fmt, "--dpi", "50"]
    )
    assert result.exit_code == 0, result.output
    files = sorted((out / "figures").iterdir())
    assert len(files) == 4 and all(p.suffix == f".{fmt}" for p in files), files
    page = (out / "report.html").read_text(encoding="utf-8")
    srcs = re.findall(r'<img [^>]*src="([^"]+)"', page)
    assert len(srcs) == 4 and all(s.startswith(f"data:{embedded};base64,") for s in srcs)
    overview = out / "figures" / f"overview_coverage.{fmt}"
    if fmt == "png":
        assert overview.read_bytes()[:8] == PNG_MAGIC
        import matplotlib.image as mpimg

        # 7 x 3.2 inches at --dpi 50.
        assert mpimg.imread(overview).shape[:2] == (160, 350)
        assert "as PNG at 50 dpi" in result.output
    else:
        assert overview.read_bytes()[:5] == b"%PDF-"
        assert "(file: overview_coverage.pdf)" in page


def test_figures_carry_no_title_unless_asked(run_dir, tmp_path):
    title = "Pooled coverage with 95 % intervals"
    svgs = []
    for flag in ("--no-titles", "--titles"):
        out = tmp_path / flag
        result = CliRunner().invoke(report_command, [str(run_dir), "--out", str(out), flag])
        assert result.exit_code == 0, result.output
        svgs.append((out / "figures" / "overview_coverage.svg").read_text(encoding="utf-8"))
        # The caption says it either way.
        page = (out / "report.html").read_text(encoding="utf-8")
        assert "<figcaption>Pooled coverage with its 95 % interval" in page
    assert title not in svgs[0] and title in svgs[1]


def test_page_is_self_contained_and_embeds_every_figure(built):
    out, _ = built
    page = (out / "report.html").read_text(encoding="utf-8")
    n_svg = len(list((out / "figures").glob("*.svg")))
    srcs = re.findall(r'<img [^>]*src="([^"]+)"', page)
    # Page one: the pooled-coverage overview and one per-user figure per strategy.
    assert len(srcs) == n_svg == 4 + 3 * len(EXPECTED_PER_PAIR) + 1 + 3
    assert all(s.startswith("data:image/svg+xml;base64,") for s in srcs)
    assert not re.search(r'(src|href)="(https?:)?//', page)
    assert "<link" not in page
    # Provenance, configuration and versions are stated.
    for text in ("provenance_sha256", "0" * 64, "seed_base", "scikit-learn", "format_version"):
        assert text in page
    # Every test is named; the study's stars are explained.
    for text in (
        "Welch t-test",
        "Nadeau-Bengio corrected resampled t-test",
        "Wilcoxon signed-rank over users",
        "**** &lt;= 0.0001",
    ):
        assert text in page


def test_per_user_table_lists_the_users_below_target(built, run_dir):
    out, _ = built
    page = (out / "report.html").read_text(encoding="utf-8")
    preds = pd.read_parquet(run_dir / "predictions.parquet")
    uim = preds[preds.strategy == "uim"].groupby(["userid", "iteration"])["covered"].mean()
    per_user = uim.groupby(level=0).mean()
    below = per_user[per_user < 1 - ALPHA]
    # Noisy users calibrated on other users' data fall short: the page must say who.
    assert len(below) >= 1
    for u, v in below.items():
        assert f"{u} ({v:.3f})" in page


def test_report_escapes_text(built):
    out, _ = built
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "<script>alert(1)</script>" not in page
    assert "digits &lt;script&gt;alert(1)&lt;/script&gt; &amp; users" in page


def test_missing_file_is_a_clear_error(tmp_path, run_dir):
    import shutil

    bad = tmp_path / "run"
    shutil.copytree(run_dir, bad)
    (bad / "splits.parquet").unlink()
    result = CliRunner().invoke(report_command, [str(bad)])
    assert result.exit_code == 1
    assert "missing splits.parquet" in result.output
    with pytest.raises(RunFolderError, match="missing splits.parquet"):
        read_run_folder(bad)


@pytest.mark.parametrize("version", [0, 2, "1", None])
def test_unknown_format_version_is_a_clear_error(tmp_path, run_dir, version):
    import shutil

    bad = tmp_path / "run"
    shutil.copytree(run_dir, bad)
    run = json.loads((bad / "run.json").read_text())
    run["format_version"] = version
    (bad / "run.json").write_text(json.dumps(run))
    result = CliRunner().invoke(report_command, [str(bad)])
    assert result.exit_code == 1
    assert f"format_version {version!r} is not supported" in result.output
    assert "reads format_version 1" in result.output


def test_missing_column_is_named(tmp_path, run_dir):
    import shutil

    bad = tmp_path / "run"
    shutil.copytree(run_dir, bad)
    pd.read_parquet(run_dir / "predictions.parquet").drop(columns=["proba"]).to_parquet(
        bad / "predictions.parquet"
    )
    with pytest.raises(RunFolderError, match=r"predictions.parquet: missing columns \['proba'\]"):
        read_run_folder(bad)


def test_usage_errors_exit_2(run_dir, tmp_path):
    result = CliRunner().invoke(report_command, [str(run_dir), "--strategy", "nope"])
    assert result.exit_code == 2
    assert "nope" in result.output
    result = CliRunner().invoke(report_command, [str(tmp_path / "absent")])
    assert result.exit_code == 2


def test_compare_command_names_every_test(run_dir, tmp_path):
    out = tmp_path / "cmp.csv"
    result = CliRunner().invoke(compare_command, [str(run_dir), "--out", str(out)])
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out)
    # 3 pairs of strategies x 3 tests, one classifier.
    assert len(table) == 9
    assert set(table.test.str.split(" ").str[0]) == {"Welch", "Nadeau-Bengio", "Wilcoxon"}
    # MM has no users in its splits; its per-user values come from the predictions.
    wil = table[table.test.str.startswith("Wilcoxon")]
    assert (wil.n == 6).all()
    assert "Nadeau-Bengio" in result.output


def test_compare_two_runs_of_one_dataset_prefixes_repeated_strategies(run_dir, tmp_path):
    import shutil

    second = tmp_path / "second"
    shutil.copytree(run_dir, second)
    result = CliRunner().invoke(compare_command, [str(run_dir), str(second), "--metric", "setsize"])
    assert result.exit_code == 0, result.output
    assert "second/mm" in result.output
    assert "warning" not in result.stderr


def test_compare_warns_when_runs_differ_in_alpha(run_dir, tmp_path):
    import json
    import shutil

    second = tmp_path / "other-alpha"
    shutil.copytree(run_dir, second)
    info = json.loads((second / "run.json").read_text(encoding="utf-8"))
    info["config"]["alpha"] = 0.1
    (second / "run.json").write_text(json.dumps(info), encoding="utf-8")
    result = CliRunner().invoke(compare_command, [str(run_dir), str(second)])
    assert result.exit_code == 0, result.output
    assert "warning: the runs differ in alpha" in result.stderr
    assert "other-alpha: 0.1" in result.stderr


GESTURES = SHARED_DATA / "gestures"


@pytest.mark.skipif(
    not (GESTURES / "gestures-dataset.zip").exists(), reason="needs the official gestures archive"
)
def test_report_from_a_real_evaluate_run_on_gestures(tmp_path):
    """`mueval evaluate` for real (2 iterations), then report and compare on its folder."""
    from mueval.cli.main import main

    run_dir = tmp_path / "run"
    result = CliRunner().invoke(
        main,
        [
            "evaluate",
            "--dataset",
            "gestures",
            "--manual-dir",
            str(GESTURES),
            "--data-home",
            str(tmp_path / "home"),
            "-s",
            "mm",
            "-s",
            "ucm",
            "-c",
            "nb",
            "--iterations",
            "2",
            "--out",
            str(run_dir),
            "--no-progress",
        ],
    )
    assert result.exit_code == 0, result.output
    run = read_run_folder(run_dir)
    assert len(run.classes) == 20
    out = tmp_path / "report"
    result = CliRunner().invoke(
        report_command,
        [str(run_dir), "--out", str(out), "--n-boot", "20", "--strategy", "ucm", *_ALL],
    )
    assert result.exit_code == 0, result.output
    assert "figures as SVG in" in result.output
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "(file: ucm_nb_confusion.svg)" in page
    for key in EXPECTED_PER_PAIR:
        assert ET.parse(out / "figures" / f"ucm_nb_{key}.svg").getroot().tag.endswith("svg")
    # run.json keeps the classes in text order (n1, n10, ..., n2); figures use natural order.
    assert run.classes.index("n10") < run.classes.index("n2")
    svg = (out / "figures" / "ucm_nb_confusion.svg").read_text(encoding="utf-8")
    ticks = re.findall(r">(n\d+)<", svg)[:20]
    assert ticks == [f"n{i}" for i in range(1, 21)]
    page = (out / "report.html").read_text(encoding="utf-8")
    assert run.run["dataset"]["provenance_sha256"] in page
    # the run's default diagnostics (--diagnostics basic) are shown beside the summary
    assert "Conditional-coverage diagnostics" in page and "wcovgap_user" in page
    result = CliRunner().invoke(compare_command, [str(run_dir)])
    assert result.exit_code == 0, result.output
    assert "Wilcoxon signed-rank over users" in result.output


@pytest.mark.parametrize(
    ("name", "content", "kind"),
    [
        ("splits.parquet", b"garbage", "Parquet"),
        ("predictions.parquet", b"", "Parquet"),
        ("summary.csv", b"", "CSV"),
    ],
)
def test_corrupt_file_is_a_clear_error(tmp_path, run_dir, name, content, kind):
    import shutil

    bad = tmp_path / "run"
    shutil.copytree(run_dir, bad)
    (bad / name).write_bytes(content)
    for command in (report_command, compare_command):
        result = CliRunner().invoke(command, [str(bad)])
        assert result.exit_code == 1, result.output
        assert not isinstance(result.exception, ValueError)  # no raw traceback
        assert f"{bad / name}: expected a {kind} file written by `mueval evaluate`" in (
            result.output
        )


def test_compare_out_that_cannot_be_written_is_a_clear_error(run_dir, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    out = blocker / "cmp.csv"
    result = CliRunner().invoke(compare_command, [str(run_dir), "--out", str(out)])
    assert result.exit_code == 1, result.output
    assert not isinstance(result.exception, OSError)
    assert f"cannot write the comparison table to {out}" in result.output


def test_compare_with_one_strategy_names_what_it_found(run_dir, tmp_path):
    import shutil

    one = tmp_path / "one"
    shutil.copytree(run_dir, one)
    for name in ("splits.parquet", "predictions.parquet"):
        frame = pd.read_parquet(one / name)
        frame[frame.strategy == "ucm"].to_parquet(one / name)
    # summary.csv too: a folder whose summary names strategies it has no splits of
    # is refused as inconsistent before compare looks at it.
    summary = pd.read_csv(one / "summary.csv")
    summary[summary.strategy == "ucm"].to_csv(one / "summary.csv", index=False)
    result = CliRunner().invoke(compare_command, [str(one)])
    assert result.exit_code == 1, result.output
    assert "found strategies: ucm" in result.output and str(one) in result.output


def test_compare_warns_when_runs_differ_in_split_seeds(run_dir, tmp_path):
    """Runs of other split seeds scored other splits: said, and an old folder counts
    as the protocol's seeds (it was written before the setting existed)."""
    import json
    import shutil

    independent, unrecorded = tmp_path / "independent", tmp_path / "unrecorded"
    for copy, seeds in ((independent, "independent"), (unrecorded, None)):
        shutil.copytree(run_dir, copy)
        info = json.loads((copy / "run.json").read_text(encoding="utf-8"))
        if seeds is None:
            info["config"].pop("split_seeds", None)
        else:
            info["config"]["split_seeds"] = seeds
        (copy / "run.json").write_text(json.dumps(info), encoding="utf-8")
    result = CliRunner().invoke(compare_command, [str(run_dir), str(independent)])
    assert result.exit_code == 0, result.output
    assert "warning: the runs differ in split_seeds" in result.stderr
    assert "independent: independent" in result.stderr
    same = CliRunner().invoke(compare_command, [str(run_dir), str(unrecorded)])
    assert same.exit_code == 0, same.output
    assert "split_seeds" not in same.stderr
