"""The options of ``mueval evaluate``, declared once, in the order ``--help``
lists them: the data, what to evaluate, the conformal settings, how the splits
are made, where the tasks run, and the output.

The values offered come from :mod:`mueval.names`; nothing here imports pandas,
scikit-learn or MAPIE, so that ``mueval --help`` starts at once.
"""

from __future__ import annotations

from pathlib import Path

import click

from mudata.cli_options import (
    FiniteFloatRange,
    dataset_source_options,
    list_option,
    stack,
    table_option,
)
from mueval.cli.options import (
    choice_option,
    jobs_option_of,
    level_option,
    strategy_option,
    whole_option,
)
from mueval.names import (
    BACKENDS,
    CLASSIFIERS,
    DIAGNOSTIC_LEVELS,
    SCORES,
    SMALL_CAL_POLICIES,
    SPLIT_METHODS,
    SPLIT_SEEDS,
    THRESHOLD_RULES,
    UKM_ASSIGN_RULES,
    USER_CORRECTIONS,
    USER_FAMILIES,
)

__all__ = ["evaluate_options"]

#: ``mueval evaluate``: the data, what to evaluate, how, where the tasks run, the output.
evaluate_options = stack(
    click.option("--dataset", "dataset", metavar="NAME", help="A mudata dataset (e.g. wisdm)."),
    click.option(
        "--data",
        "data_file",
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        help="Your own table, .parquet or .csv: a user column, a label column, every "
        "other column a numeric feature.",
    ),
    click.option("--user-col", default="userid", show_default=True, help="User column of --data."),
    click.option("--label-col", default="label", show_default=True, help="Label column of --data."),
    strategy_option(),
    list_option(
        "--classifier",
        "-c",
        "classifiers",
        help=f"Classifiers; repeat or comma list: {', '.join(CLASSIFIERS)}, all, cnn (a small "
        "1-D CNN, extra mueval[deep], with --input windows), or a model "
        "of your own as an import path module:attribute (a scikit-learn classifier class "
        "or a factory; NAME=module:attribute names it), e.g. "
        "sklearn.linear_model:LogisticRegression. [default: all; mueval curve takes one "
        "built-in, rf by default]",
    ),
    click.option(
        "--classifier-param",
        "classifier_params",
        multiple=True,
        metavar="NAME=VALUE",
        help="A keyword argument of the import-path models; repeat it, no comma lists (a "
        "TOML value may hold a comma). VALUE is a TOML literal: C=0.5, max_iter=500, "
        'solver="lbfgs", class_weight="balanced".',
    ),
    click.option(
        "--classifier-config",
        "classifier_config",
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        help="A TOML file of named models, one table each: [NAME] with path = "
        '"module:attribute", optional params = { C = 0.5 } and scale = "minmax". '
        "They are evaluated beside -c's (the built-ins only when -c names them).",
    ),
    choice_option(
        "--scale",
        ("none", "minmax"),
        "none",
        "Your own models only: fit the protocol's min-max scaling first, or none "
        "(your Pipeline decides). The built-ins are always min-max scaled.",
    ),
    level_option(
        "--alpha",
        0.05,
        "Miscoverage level (0.05 = 95% confidence).",
    ),
    whole_option(
        "--iterations",
        1,
        20,
        "Repetitions; iteration i uses seed seed-base + i. (mueval curve defaults "
        "to 5: it fits models per target user and iteration.)",
    ),
    click.option(
        "--seed-base",
        type=int,
        default=100,
        show_default=True,
        help="Seed of iteration 0; iteration i uses seed-base + i (splits and models).",
    ),
    choice_option(
        "--score",
        SCORES,
        "lac",
        "Conformity score (MAPIE's names; larger = stranger). lac: 1 - p(y), the "
        "protocol's. aps: probability of the classes ranked above y, plus p(y). raps: aps + "
        "lambda * max(0, rank(y) - k_reg): give --raps-lambda and --raps-k-reg, or use "
        "--threshold mapie for MAPIE 1.x's own tuned RAPS (refused otherwise). top_k: the "
        "rank of y.",
    ),
    click.option(
        "--raps-lambda",
        type=FiniteFloatRange(min=0),
        default=None,
        metavar="FLOAT",
        help="raps: the penalty lambda per rank beyond --raps-k-reg (Angelopoulos et al. "
        "try 0.001 to 0.5). [default: none; MAPIE 1.x tunes it, --threshold mapie only]",
    ),
    whole_option(
        "--raps-k-reg",
        0,
        None,
        "raps: the rank from which the penalty applies. [default: none; MAPIE 1.x "
        "tunes it, --threshold mapie only]",
        metavar="INT",
    ),
    click.option(
        "--randomized/--no-randomized",
        default=False,
        show_default=True,
        help="aps, raps: break ties at random (subtract u * p(y), u uniform, seeded by "
        "the iteration), so tied scores no longer push coverage above 1 - alpha + "
        "1/(n+1). The default is deterministic (the study's numbers).",
    ),
    click.option(
        "--mondrian/--no-mondrian",
        default=False,
        show_default=True,
        help="Class-conditional (Mondrian) calibration: one threshold per class "
        "(the same as --condition class).",
    ),
    click.option(
        "--condition",
        metavar="class|cohort[:COL]|class+cohort[:COL]|cohorts:COL1,COL2,...",
        default=None,
        help="Conditional (Mondrian) calibration: one threshold per class, per cohort of "
        "users (COL: a user-level attribute such as an age band or a device, from --cohorts "
        "or a numeric column of the table, which then is no feature), or per cohort and "
        "class. cohorts:COL1,COL2,... covers every cohort of every column at once "
        "(overlapping cohorts; COL1*COL2 adds their intersections) by the conditional "
        "quantile regression of Gibbs, Cherian and Candes (2023). Coverage per class and "
        "cohort goes to conditional_coverage.csv. "
        "[default: none, one threshold per calibration set, as the protocol]",
    ),
    click.option(
        "--cohorts",
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        help="CSV of each user's cohort for --condition cohort or cohorts: a userid column "
        "and the cohort column(s) (one value per user).",
    ),
    choice_option(
        "--threshold",
        THRESHOLD_RULES,
        "study",
        "Conformal threshold rule. study: the reference study's (MAPIE 0.8.6: "
        "numpy.quantile(scores, (n+1)(1-alpha)/n, method='higher'), machine-epsilon "
        "tolerance), which reproduces its tables. mapie: MAPIE 1.x's finite-sample rule "
        "(the ceil((n+1)(1-alpha))-th smallest score, 1e-8 tolerance); one rank lower for "
        "some calibration sizes.",
    ),
    level_option(
        "--adapt-frac",
        0.5,
        "uam: share of the target user's rows added to training.",
    ),
    whole_option(
        "--min-own",
        0,
        None,
        "ukm: a target user with fewer own calibration rows than this calibrates on "
        "the other users of its k-means cluster (none: on every other user). "
        "[default: max(1/alpha, 1/(1-alpha)), 20 at alpha 0.05, the smallest set a "
        "threshold is taken from]",
    ),
    whole_option(
        "--clusters",
        1,
        None,
        "ukm: k-means clusters of the other users' score quantiles. [default: Ding et "
        "al.'s heuristic, floor(floor(N K/(75+K))/2) for K users of N calibration rows]",
    ),
    whole_option(
        "--own-rows",
        0,
        None,
        "ukm: keep only the first this many of the target's calibration rows, as a "
        "new user with few labelled windows (ucm keeps all). [default: all]",
    ),
    choice_option(
        "--assign",
        UKM_ASSIGN_RULES,
        "rank",
        "ukm: how a target below --min-own finds its cluster. rank: the cluster under "
        "whose pooled scores its own scores have a mean mid-rank closest to 1/2 (unbiased "
        "however few its rows); centroid: the nearest k-means centroid to its own rows' "
        "score quantiles (Ding et al.'s embedding, biased towards easier clusters by a few "
        "rows' upper quantiles).",
    ),
    choice_option(
        "--small-cal",
        SMALL_CAL_POLICIES,
        "error",
        "A calibration set below max(1/alpha, 1/(1-alpha)) rows (20 at alpha 0.05; "
        "both threshold rules refuse it): stop with an error; skip it (NaN conformal "
        "metrics); or full-set: answer every class (an infinite threshold, the valid "
        "conservative answer). Skipped and full-set tasks are noted in run.json. "
        "(mueval curve defaults to full-set: its small k are below the minimum by design.)",
    ),
    choice_option(
        "--split",
        SPLIT_METHODS,
        "random",
        "How udm, ucm (and uim's test rows) and uam split a user's own rows: the "
        "study's stratified random split, or contiguous blocks in time order per class "
        "(udm: earliest 60 % train, next 20 % calibration, last 20 % test; ucm: earlier "
        "half calibrates, later half tests; uam: adapt, calibrate, test) with --gap rows "
        "left out between blocks, so neighbouring windows cannot leak.",
    ),
    whole_option(
        "--gap",
        0,
        1,
        "--split blocked: rows left out between two blocks.",
    ),
    choice_option(
        "--split-seeds",
        SPLIT_SEEDS,
        "protocol",
        "protocol: every split of an iteration draws from its one seed, as the study "
        "(the other users' split, which picks the model's training rows, and the target "
        "user's own split under uim, ucm and ukm among them); independent: each role gets "
        "its own seed, a child of numpy's SeedSequence(seed). Recorded in run.json.",
    ),
    whole_option(
        "--user-folds",
        2,
        None,
        "uim and ucm: fit one model per fold of users in K grouped folds "
        "(GroupKFold, shuffled with each iteration's seed) instead of one per user "
        "(leave-one-user-out, the protocol), so many users cost K fits per classifier. "
        "Each held-out user keeps its own test and ucm calibration halves; the model "
        "also leaves out the other users of its fold. uxc: K grouped calibration folds "
        "of the non-target users instead of one per user. [default: leave-one-user-out]",
        metavar="K",
    ),
    jobs_option_of(None, "running the tasks"),
    choice_option(
        "--backend",
        BACKENDS,
        "loky",
        "loky: worker processes on this machine. dask: a Dask cluster, the one "
        "at --scheduler or else a local one of --workers processes "
        "(pip install 'mudata-mueval[dask]').",
    ),
    click.option(
        "--scheduler",
        metavar="ADDRESS",
        help="Address of a running dask.distributed scheduler (with --backend dask), "
        "e.g. tcp://10.0.0.5:8786.",
    ),
    whole_option(
        "--workers",
        1,
        None,
        "--backend dask without --scheduler: worker processes of the local "
        "cluster. [default: --jobs if above 1, else the number of cores]",
    ),
    click.option(
        "--out",
        "-o",
        type=click.Path(file_okay=False, path_type=Path),
        help="Write the run folder here (atomically).",
    ),
    table_option,
    click.option("--overwrite", is_flag=True, help="Replace an existing --out folder."),
    dataset_source_options,
    click.option(
        "--progress/--no-progress",
        default=None,
        help="Progress on stderr. [default: a bar on a terminal; elsewhere (CI logs, "
        "nohup) a line every 10 % of the tasks or every minute]",
    ),
    choice_option(
        "--diagnostics",
        DIAGNOSTIC_LEVELS,
        "basic",
        "Conditional-coverage diagnostics on the pooled test rows of each strategy, "
        "classifier and iteration. basic: coverage gap and weighted coverage gap over users "
        "and over classes, HSIC(set size, coverage), size-stratified coverage. full: also "
        "worst-slab coverage and ERT (slower).",
    ),
    level_option(
        "--user-level",
        0.05,
        "Level of the per-user verdict 'below target': a user is flagged when the "
        "exact test of its covered count (Beta-Binomial null, exchangeable calibration and "
        "test rows; under UDM, UCM and UAM the exact law of the class-stratified split) "
        "rejects at this level after --user-correction. Changes no set.",
    ),
    choice_option(
        "--user-correction",
        USER_CORRECTIONS,
        "holm",
        "Correction of the per-user verdicts across the users of each strategy and "
        "classifier: holm (the chance of any false flag is at most --user-level, whatever "
        "the dependence), bh (Benjamini-Hochberg: false discovery rate, under independence "
        "or positive dependence), none (each user at --user-level).",
    ),
    choice_option(
        "--user-family",
        USER_FAMILIES,
        "run",
        "Over which users --user-correction runs, and so what --user-level bounds: run "
        "(every user of every strategy and classifier of the run, one family; the pooled "
        "coverage tests likewise, one per strategy and classifier) or pair (the users of "
        "each strategy and classifier apart, the level holding per pair).",
    ),
)
