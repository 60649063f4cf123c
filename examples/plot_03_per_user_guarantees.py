"""
Per-user guarantees and the label curve
=======================================

Split conformal prediction promises 95 % coverage on average over the test
rows. Whether each *user* gets it depends on the strategy: calibrating on
other users (``uim``) can leave some users far below target, calibrating on
the user's own rows (``ucm``) restores it. A :class:`mueval.Run` says so user
by user, with an exact interval and a test per user; :func:`mueval.curve`
shows how many of the user's own windows that takes.
"""

# %%
# Two strategies on the same users
# --------------------------------
import os
import shutil
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt

import mueval

# The project root: the gallery runs each example in examples/, a shell usually at the root.
root = Path.cwd() if Path("examples").is_dir() else Path.cwd().parent
shared = Path(os.environ.get("MUDATA_SHARED_DATA", root.parent / "shared" / "data"))
home = Path(tempfile.mkdtemp(prefix="mudata-example-"))
source = {"data_home": home, "manual_dir": shared / "gestures"}

run = mueval.evaluate(
    "gestures",
    strategies=["uim", "ucm"],
    classifiers=["nb"],
    iterations=2,
    progress=False,
    **source,
)

# %%
# Coverage per user
# -----------------
# One row per strategy, classifier and user: the test rows pooled over
# iterations, the covered count, an exact (Clopper-Pearson) interval of the
# observed rate, and the verdict ``below``: the exact test of the covered count
# against the target, corrected across the users of the cell (Holm).
users = run.user_coverage
print(users[["strategy", "user", "n", "coverage", "low", "high", "p_adjusted", "below"]])

fig, ax = plt.subplots(figsize=(7, 3.5))
for offset, (strategy, rows) in zip((-0.15, 0.15), users.groupby("strategy"), strict=True):
    x = [int(u) + offset for u in rows["user"]]
    ax.errorbar(
        x,
        rows["coverage"],
        yerr=[rows["coverage"] - rows["low"], rows["high"] - rows["coverage"]],
        fmt="o",
        capsize=3,
        label=strategy,
    )
ax.axhline(0.95, color="k", lw=1, ls="--", label="target 0.95")
ax.set_xlabel("user")
ax.set_ylabel("coverage (95 % interval)")
ax.set_title("Smartwatch Gestures, naive Bayes: coverage of each user")
ax.legend()
fig.tight_layout()

# %%
# The cell summary and the warnings
# ---------------------------------
# ``coverage_summary`` counts the users below target and names the worst one;
# the warnings say the same in sentences.
print(run.coverage_summary[["strategy", "n_users", "n_below", "worst_user", "worst_coverage"]])
for warning in run.warnings:
    print(f"{warning['severity']} ({warning['kind']}): {warning['message'][:100]} ...")

# %%
# How many of the user's own windows?
# -----------------------------------
# :func:`mueval.curve` calibrates on ``k`` windows of the target user (``use=
# "calibration"``); with fewer than 20 (at alpha 0.05) no threshold exists and
# the set is every class (``small_cal="full-set"``), valid but useless.
curve = mueval.curve("gestures", classifier="nb", ks=(0, 5, 20, 50), iterations=2, **source)
print(curve[["use", "k", "coverage", "setsize", "accuracy", "n_small_cal"]])

fig, (left, right) = plt.subplots(1, 2, figsize=(8, 3))
left.plot(curve["k"], curve["coverage"], "o-")
left.fill_between(curve["k"], curve["coverage_low"], curve["coverage_high"], alpha=0.3)
left.axhline(0.95, color="k", lw=1, ls="--")
left.set_xlabel("k, target user's calibration windows")
left.set_ylabel("coverage")
right.plot(curve["k"], curve["setsize"], "o-")
right.set_xlabel("k")
right.set_ylabel("mean set size")
fig.suptitle("Smartwatch Gestures, naive Bayes: the label curve")
fig.tight_layout()

shutil.rmtree(home)
