"""One Python process that draws a report's sections in workers, then evaluates in workers.

loky keeps one reusable pool of worker processes per process. The report's
sections (``figures="all"``, ``jobs`` > 1) and the evaluation's tasks
(joblib's ``Parallel``, every CPU by default) both use it; a pool made by loky
directly lacked what joblib reads when it takes the pool over, so an
evaluation after a report failed with an AttributeError. A fresh process
makes the order certain, whatever ran before in the test worker.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from tests.conftest import PROJECT_ROOT

SCRIPT = textwrap.dedent(
    """
    import sys
    import mueval
    from tests.user_tables import make_frame

    frame = make_frame(n_users=3)
    args = dict(strategies=["mm", "ucm"], classifiers=["nb"], iterations=1, progress=False)
    # In this process: the pool is first made by the report.
    first = mueval.evaluate(frame, jobs=1, out=sys.argv[1] + "/one", **args)
    # Two (strategy, classifier) sections: two workers draw them.
    first.report(sys.argv[1] + "/report", jobs=2, figures="all", n_boot=10)
    again = mueval.evaluate(frame, jobs=2, out=sys.argv[1] + "/two", **args)
    print("ok")
    """
)


def test_evaluate_after_a_parallel_report_in_one_process(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=PROJECT_ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "ok"
    one = (tmp_path / "one" / "predictions.parquet").read_bytes()
    assert one == (tmp_path / "two" / "predictions.parquet").read_bytes()
