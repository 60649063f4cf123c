"""
Load a dataset as a Bunch and fit scikit-learn
==============================================

:func:`mudata.load` returns a scikit-learn :class:`~sklearn.utils.Bunch`:
the feature table with the user of each row in ``groups``. Splitting by those
groups (``LeaveOneGroupOut``) tests each user on a model that never saw them,
the user-independent setting of the evaluation protocol.
"""

# %%
# The official files and a temporary data home
# --------------------------------------------
# The WISDM release's transformed ARFF is read from a folder of official files
# (``--manual-dir`` of ``mudata fetch``): each file is checked against the
# SHA-256 the registry records before anything is read. The table is built in
# a temporary data home, so the example leaves nothing behind.
import os
import shutil
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
from sklearn.model_selection import LeaveOneGroupOut, cross_val_score
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MinMaxScaler

import mudata

# The project root: the gallery runs each example in examples/, a shell usually at the root.
root = Path.cwd() if Path("examples").is_dir() else Path.cwd().parent
shared = Path(os.environ.get("MUDATA_SHARED_DATA", root.parent / "shared" / "data"))
home = Path(tempfile.mkdtemp(prefix="mudata-example-"))

wisdm = mudata.load("wisdm", data_home=home, manual_dir=shared / "wisdm", progress=False)
print(wisdm.DESCR.splitlines()[0])
print(wisdm.frame.shape, "rows x columns;", wisdm.groups.nunique(), "users")
print("classes:", list(wisdm.target_names))

# %%
# Provenance
# ----------
# The table carries where it came from: the source files with their hashes
# (and whether each was verified against a pinned hash when the table was built), the recipe and a
# content hash of the table itself.
for source in wisdm.provenance["files"]:
    print(source["name"], "verified at build:", source["verified_at_build"])
    for member, sha256 in source["members"].items():
        print("  ", member, sha256[:16], "...")
print(
    "rows dropped by the user filter:",
    sum(wisdm.provenance["counts"]["rows_dropped_by_user_filter"].values()),
)
print("table sha256:", wisdm.provenance["sha256"][:16], "...")

# %%
# One model per left-out user
# ---------------------------
# ``groups`` holds the user of each row; ``LeaveOneGroupOut`` trains on all
# other users and tests on the one left out.
model = make_pipeline(MinMaxScaler(), GaussianNB())
scores = cross_val_score(
    model, wisdm.data, wisdm.target, groups=wisdm.groups, cv=LeaveOneGroupOut()
)
users = sorted(wisdm.groups.unique(), key=int)
print(f"accuracy per left-out user: mean {scores.mean():.3f}, min {scores.min():.3f}")

fig, ax = plt.subplots(figsize=(7, 3))
ax.bar([str(u) for u in users], scores)
ax.axhline(scores.mean(), color="k", lw=1, ls="--", label="mean over users")
ax.set_xlabel("left-out user")
ax.set_ylabel("accuracy")
ax.set_title("WISDM, Gaussian naive Bayes, one model per left-out user")
ax.legend()
fig.tight_layout()

# %%
# The same as arrays
# ------------------
# ``return_X_y=True`` gives the three objects alone; ``as_frame=False`` numpy
# arrays instead of pandas objects. The table is already built: this reads it
# again (checking its rows against the recorded hash).
X, y, groups = mudata.load("wisdm", data_home=home, return_X_y=True, as_frame=False)
print(type(X).__name__, X.shape, y[:3], groups[:3])

shutil.rmtree(home)
