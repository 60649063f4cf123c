"""`mueval report --figures all --jobs N`: the sections drawn by worker processes give
the same page and the same figure files as one process."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from mueval.cli.report import report_command
from mueval.cpus import JOBS_RULE
from mueval.errors import UsageError
from mueval.report.build import build_report
from mueval.runfolder import read_run_folder
from tests.run_folders import make_run_folder


# Slow (tens of seconds): .ci/run runs it with -m slow; the default run stays under 5 min.
@pytest.mark.slow
def test_parallel_sections_give_the_same_page_and_files(tmp_path):
    run_dir = make_run_folder(tmp_path / "run", iterations=2, n_users=4)
    pages, files = [], []
    for jobs in ("1", "2"):
        out = tmp_path / f"report-{jobs}"
        args = [str(run_dir), "--out", str(out), "--figures", "all", "--n-boot", "20"]
        result = CliRunner().invoke(report_command, [*args, "--jobs", jobs])
        assert result.exit_code == 0, result.output
        pages.append((out / "report.html").read_text(encoding="utf-8"))
        files.append(sorted(p.name for p in (out / "figures").iterdir()))
    assert pages[0] == pages[1]
    assert files[0] == files[1]
    # Every pair's figures are there (the workers wrote into the report's folder).
    pairs = {
        name.split("_cooccurrence_matrix")[0] for name in files[1] if "cooccurrence_matrix" in name
    }
    assert len(pairs) >= 2
    assert pages[1].count("data:image/svg+xml;base64,") == len(
        [f for f in files[1] if f.endswith(".svg")]
    )


def test_jobs_must_be_positive_or_every_core(tmp_path):
    run = read_run_folder(make_run_folder(tmp_path / "run", iterations=2, n_users=3))
    with pytest.raises(UsageError, match="jobs"):
        build_report(run, tmp_path / "r", jobs=0)
    # The report and the evaluation's runner word the refusal alike (mueval.cpus.check_jobs).
    with pytest.raises(UsageError, match=f"jobs must be {JOBS_RULE}, got -2"):
        build_report(run, tmp_path / "r", jobs=-2)
