"""The ``mueval report`` and ``mueval compare`` commands.

Both are plain :func:`click.command` objects; the ``mueval`` group attaches them.
Bad arguments exit 2 (click's usage errors); a run folder that cannot be read or
reported exits 1 through :class:`click.ClickException`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click
import pandas as pd

from mueval.errors import MuevalError, UsageError
from mueval.report.compare import compare_strategies
from mueval.report.runfolder import RunFolder, read_run_folder
from mueval.safeio import neutralise_formulas, write_atomic

__all__ = ["compare_command", "report_command", "run_labels"]

_METRICS = ("coverage", "setsize", "accuracy", "jaccard", "pctempty", "weighted_F1", "F1",
            "sensitivity", "specificity", "MCriterion", "FCriterion", "OM", "OF", "OU", "OE")


def _read(path: Path) -> RunFolder:
    try:
        return read_run_folder(path)
    except MuevalError as exc:
        raise click.ClickException(str(exc)) from exc


def _printable(text: str) -> str:
    """Folder names as labels: control characters (terminal escapes) shown as ``?``."""
    return "".join(ch if ch.isprintable() else "?" for ch in text)


def run_labels(paths: list[Path]) -> list[str]:
    """One distinct label per run folder: its name, with as many parent folders as it
    takes to tell it from the others (``a/run`` and ``b/run``, not ``run`` twice).

    Parameters
    ----------
    paths : list of Path

    Returns
    -------
    list of str

    Raises
    ------
    click.BadParameter
        The same folder is given twice.
    """
    real = [p.resolve() for p in paths]
    for i, r in enumerate(real):
        if r in real[:i]:
            msg = f"{paths[i]} is given twice (it is {r}); give each run folder once"
            raise click.BadParameter(msg, param_hint="RUN_DIRS")
    depth = [1] * len(real)
    while True:
        labels = ["/".join(r.parts[-d:]).lstrip("/") or "/" for r, d in zip(real, depth)]
        clashes = {label for label in labels if labels.count(label) > 1}
        if not clashes:
            return [_printable(label) for label in labels]
        for i, label in enumerate(labels):
            if label in clashes:
                depth[i] += 1


@click.command("report")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", "out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Output folder (default: RUN_DIR/report).")
@click.option("--strategy", "strategies", multiple=True,
              help="Strategy code to include (repeatable; default: all in the run).")
@click.option("--classifier", "classifiers", multiple=True,
              help="Classifier code to include (repeatable; default: all in the run).")
@click.option("--n-boot", type=click.IntRange(min=10), default=200, show_default=True,
              help="Bootstrap resamples for the diagnostics' intervals.")
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
@click.option("--top-sets", type=click.IntRange(min=1), default=20, show_default=True,
              help="Most frequent prediction sets shown in the multiset chart.")
@click.option("--min-count", type=click.IntRange(min=1), default=2, show_default=True,
              help="Sets seen fewer times are left out of the multiset chart.")
@click.option("--progress/--no-progress", default=None,
              help="Progress bar on stderr. [default: only when stderr is a terminal]")
def report_command(run_dir: Path, out: Path | None, strategies: tuple[str, ...],
                   classifiers: tuple[str, ...], n_boot: int, seed: int, top_sets: int,
                   min_count: int, progress: bool | None) -> None:
    """Build an HTML report (report.html + figures/) from a run folder."""
    from mueval.report.build import build_report  # matplotlib only when needed

    run = _read(run_dir)
    present_s = set(run.predictions["strategy"])
    present_c = set(run.predictions["classifier"])
    for opt, asked, present in (("--strategy", strategies, present_s),
                                ("--classifier", classifiers, present_c)):
        unknown = sorted(set(asked) - present)
        if unknown:
            msg = f"{unknown} not in the run; choose from {sorted(present)}"
            raise click.BadParameter(msg, param_hint=opt)
    target = out if out is not None else run_dir / "report"
    try:
        result = build_report(run, target, strategies=strategies or None,
                              classifiers=classifiers or None, n_boot=n_boot, seed=seed,
                              top_sets=top_sets, min_count=min_count,
                              progress=sys.stderr.isatty() if progress is None else progress)
    except UsageError as exc:
        raise click.UsageError(str(exc)) from exc
    except (MuevalError, OSError) as exc:
        raise click.ClickException(str(exc)) from exc
    n_png = sum(1 for p in result.figures if p.suffix == ".png")
    click.echo(f"wrote {result.html} ({n_png} figures as PNG and SVG in {target / 'figures'})")
    for w in result.warnings:
        click.echo(f"warning: {w}", err=True)


def _merge(runs: list[RunFolder]) -> tuple[pd.DataFrame, pd.DataFrame, int]:
    """Stack several runs; a strategy found in more than one run is prefixed by its run's
    label (:func:`run_labels`), so that two runs never merge into one."""
    labels = run_labels([r.path for r in runs])
    hashes = {r.run["dataset"].get("provenance_sha256") for r in runs}
    if len(hashes) > 1:
        names = ", ".join(f"{r.path}: {r.run['dataset'].get('name')}" for r in runs)
        msg = f"runs evaluate different datasets ({names}); compare runs of one dataset"
        raise click.ClickException(msg)
    # Runs at other levels or with other scores answer other questions; comparing
    # them is allowed (that may be the point) but must not go unnoticed.
    for key in ("alpha", "score", "threshold", "mondrian"):
        values = {str(r.run.get("config", {}).get(key)) for r in runs}
        if len(values) > 1:
            found = ", ".join(f"{label}: {r.run.get('config', {}).get(key)}"
                              for label, r in zip(labels, runs))
            click.echo(f"warning: the runs differ in {key} ({found})", err=True)
    seen: dict[str, int] = {}
    for r in runs:
        for s in set(r.splits["strategy"]):
            seen[s] = seen.get(s, 0) + 1
    splits, preds = [], []
    for label, r in zip(labels, runs):
        sp, pr = r.splits.copy(), r.predictions[["strategy", "classifier", "iteration", "userid",
                                                 "covered", "set_size"]].copy()
        if len(runs) > 1:
            rename = {s: f"{label}/{s}" for s in seen if seen[s] > 1}
            sp["strategy"] = sp["strategy"].replace(rename)
            pr["strategy"] = pr["strategy"].replace(rename)
        splits.append(sp)
        preds.append(pr)
    return pd.concat(splits, ignore_index=True), pd.concat(preds, ignore_index=True), \
        runs[0].n_rows


@click.command("compare")
@click.argument("run_dirs", nargs=-1, required=True,
                type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--metric", type=click.Choice(_METRICS), default="coverage", show_default=True,
              help="Metric compared between strategies.")
@click.option("--out", "out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the table as CSV here.")
def compare_command(run_dirs: tuple[Path, ...], metric: str, out: Path | None) -> None:
    """Test differences between strategies in one or more run folders of one dataset.

    Every pair of strategies, per classifier, under three labelled tests: the
    study's Welch t-test over iterations (uncorrected), Nadeau and Bengio's
    corrected resampled t-test (paired by iteration) and a Wilcoxon signed-rank
    test over users (paired by user).
    """
    runs = [_read(p) for p in run_dirs]
    splits, preds, n_rows = _merge(runs)
    if metric not in splits.columns:
        msg = f"splits.parquet has no column {metric!r}"
        raise click.ClickException(msg)
    try:
        table = compare_strategies(splits, preds, n_rows, metric=metric)
    except MuevalError as exc:
        raise click.ClickException(str(exc)) from exc
    if table.empty:
        found = ", ".join(dict.fromkeys(splits["strategy"])) or "none"
        msg = (
            f"nothing to compare: expected at least two strategies evaluated with one "
            f"classifier in {', '.join(map(str, run_dirs))}, found strategies: {found} "
            "(run `mueval evaluate` with more than one --strategy, or give several runs)"
        )
        raise click.ClickException(msg)
    shown = table.drop(columns=["note"]).copy()
    for col in ("mean_a", "mean_b", "statistic", "df"):
        shown[col] = shown[col].map(lambda v: f"{v:.4g}")
    shown["p_value"] = shown["p_value"].map(lambda v: f"{v:.3g}")
    with pd.option_context("display.max_rows", None, "display.max_columns", None,
                           "display.width", 250, "display.max_colwidth", 70):
        click.echo(f"metric: {metric}")
        click.echo(shown.to_string(index=False))
    notes = table[table.note != ""][["classifier", "strategy_a", "strategy_b", "test", "note"]]
    for r in notes.drop_duplicates("note").itertuples():
        click.echo(f"note ({r.classifier} {r.strategy_a} vs {r.strategy_b}, {r.test}): {r.note}")
    if out is not None:
        _write_csv(table, out)
        click.echo(f"wrote {out}")


def _write_csv(table: pd.DataFrame, out: Path) -> None:
    """The table as CSV at ``out``: formula-leading text neutralised, written beside and
    renamed over (a link or FIFO at ``out`` is refused, never written through)."""
    folder = out.parent
    if not folder.is_dir():
        msg = f"cannot write the comparison table to {out}: {folder} is not a folder"
        raise click.ClickException(msg)
    try:
        write_atomic(folder, out.name,
                     lambda p: neutralise_formulas(table).to_csv(p, index=False))
    except OSError as exc:  # OutputError included
        msg = f"cannot write the comparison table to {out}: {exc}"
        raise click.ClickException(msg) from exc
