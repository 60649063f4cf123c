"""
Evaluate and read a Run
=======================

:func:`mueval.evaluate` runs multi-user evaluation strategies with split
conformal prediction and returns a :class:`mueval.Run`: the study-style
tables, the per-iteration rows, the prediction sets and the warnings. Saved,
it is a run folder that :meth:`mueval.Run.load` reads back, checking every
file. Two strategies, one classifier and two iterations keep it quick; the
study's protocol is 4 x 4 x 20 (``mueval evaluate --dataset gestures``).
"""

# %%
# Evaluate
# --------
# ``mm`` mixes every user's rows; ``ucm`` trains on the other users and
# calibrates on the target user's own rows. Keywords of :func:`mueval.evaluate`
# not its own (``data_home``, ``manual_dir``) go to :func:`mudata.load`.
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

run = mueval.evaluate(
    "gestures",
    strategies=["mm", "ucm"],
    classifiers=["nb"],
    iterations=2,
    progress=False,
    data_home=home,
    manual_dir=shared / "gestures",
)
print(run.table())

# %%
# The summary as a DataFrame
# --------------------------
# One row per strategy, classifier and metric: mean, SD and the number of
# iterations, the table above in long form.
summary = run.summary
print(summary[summary["metric"].isin(["coverage", "setsize", "accuracy"])])

# %%
# Per iteration, per prediction
# -----------------------------
# ``splits`` holds one row per strategy, classifier, iteration and evaluated
# subset (a user, for ``ucm``); ``predictions`` one row per test window with its
# prediction set.
print(run.splits[["strategy", "classifier", "iteration", "coverage", "setsize"]].head())
print(run.predictions[["strategy", "userid", "y_true", "pred_set", "covered"]].head())

fig, ax = plt.subplots(figsize=(6, 3))
for strategy, rows in run.predictions.groupby("strategy"):
    ax.hist(rows["set_size"], bins=range(1, 22), alpha=0.6, label=strategy)
ax.set_xlabel("prediction set size (classes)")
ax.set_ylabel("test windows")
ax.set_title("Smartwatch Gestures, naive Bayes, alpha = 0.05")
ax.legend()
fig.tight_layout()

# %%
# Warnings
# --------
# The run checks itself: a severity (``error``: the coverage guarantee fails
# or cannot hold; ``warning``: it holds but deserves a look), a kind and one
# sentence each.
for warning in run.warnings:
    print(f"{warning['severity']} ({warning['kind']}): {warning['message'][:120]}")

# %%
# Save and load
# -------------
# The run folder is plain files (``run.json``, Parquet and CSV tables); loading
# it checks them for contradictions. ``again.report(folder)`` would write the
# HTML report (``report.html`` and its figures), as ``mueval report`` does.
out = home / "runs" / "gestures"
run.save(out)
again = mueval.Run.load(out)
print(sorted(p.name for p in out.iterdir()))
print(again.config["strategies"], again.config["iterations"])

shutil.rmtree(home)
