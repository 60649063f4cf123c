"""The classic metrics against R's caret itself, where R and caret are installed.

``.ci/run`` installs Debian's ``r-cran-caret``; elsewhere the test is skipped
with its reason. Random subsets include predictions of labels absent from the
ground truth and classes never predicted, the two places where caret's
handling matters.
"""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from mueval.metrics.classic import classification_metrics

_SCRIPT = r"""
suppressMessages(library(caret))
cases <- readLines(file("stdin"))
for (line in cases) {
  parts <- strsplit(line, ";")[[1]]
  gt <- strsplit(parts[1], ",")[[1]]
  pr <- strsplit(parts[2], ",")[[1]]
  L <- unique(gt)
  cm <- confusionMatrix(factor(pr, levels = L), factor(gt, levels = L))
  v <- c(cm$overall["Accuracy"], colMeans(cm$byClass, na.rm = TRUE)[c("Sensitivity", "Specificity", "F1")])
  cat(sprintf("%.17g", v), "\n")
}
"""


def _caret_available() -> bool:
    if shutil.which("Rscript") is None:
        return False
    probe = subprocess.run(
        ["Rscript", "-e", "suppressMessages(library(caret))"],
        capture_output=True,
        timeout=120,
        check=False,
    )
    return probe.returncode == 0


@pytest.mark.caret
@pytest.mark.skipif(not _caret_available(), reason="Rscript with the caret package not found")
def test_classic_metrics_equal_caret_on_random_subsets() -> None:
    rng = np.random.default_rng(3)
    k = 5
    cases = []
    for _ in range(200):
        n = int(rng.integers(6, 40))
        # three or more ground-truth labels (caret's byClass is a matrix only then)
        truth = rng.integers(0, 4, n)
        truth[:3] = [0, 1, 2]
        pred = np.where(rng.random(n) < 0.6, truth, rng.integers(0, k, n))
        cases.append((truth, pred))
    stdin = "\n".join(
        ",".join(f"c{t}" for t in truth) + ";" + ",".join(f"c{p}" for p in pred)
        for truth, pred in cases
    )
    proc = subprocess.run(
        ["Rscript", "-e", _SCRIPT],
        input=stdin + "\n",
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    lines = [line.split() for line in proc.stdout.strip().splitlines()]
    assert len(lines) == len(cases)
    outside = 0
    for (truth, pred), values in zip(cases, lines):
        outside += int((~np.isin(pred, truth)).sum())
        ours = classification_metrics(truth, pred, k)
        for name, theirs in zip(("accuracy", "sensitivity", "specificity", "F1"), values):
            expected = float("nan") if theirs == "NaN" else float(theirs)
            np.testing.assert_allclose(ours[name], expected, rtol=1e-12, err_msg=name)
    assert outside > 0  # predictions outside the ground-truth labels were exercised
