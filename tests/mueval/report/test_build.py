"""`mueval report` / `mueval compare` on a run folder built from a real computation.

The fixture writes a run folder in exactly the format of `mueval evaluate`
(format_version 1): GaussianNB on scikit-learn's digits with six synthetic users
(each user's features carry their own noise level, so users differ), split as the
protocol's MM, UIM and UCM, LAC sets and p-values computed by hand with numpy.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from mueval.cli.report import compare_command, report_command
from mueval.runfolder import RunFolderError, read_run_folder
from tests.conftest import SHARED_DATA
from tests.run_folders import ALPHA, make_run_folder

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


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
