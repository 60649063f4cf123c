"""
Register a dataset from files
=============================

A dataset of your own needs no code: ``mudata init`` drafts a registry entry
(one TOML file) from the files you have and says what it found; you fill in
what only you know (title, homepage, licence, citation), ``mudata register``
checks and installs it, and from then on it is a dataset like the built-in
ones, for :func:`mudata.load`, ``mudata fetch`` and ``mueval evaluate``.

Here the files are a feature table in CSV with a README beside it, as a lab
might share them; the rows are those of WISDM's transformed ARFF.
"""

# %%
# The files
# ---------
# The ARFF's ``@attribute`` lines name the columns; ``?`` marks a missing
# value. One CSV file and a README go into ``release/``.
import contextlib
import io
import os
import re
import shutil
import tempfile
from pathlib import Path

import pandas as pd

import mudata
from mudata.cli import main as mudata_cli

# The project root: the gallery runs each example in examples/, a shell usually at the root.
root = Path.cwd() if Path("examples").is_dir() else Path.cwd().parent
shared = Path(os.environ.get("MUDATA_SHARED_DATA", root.parent / "shared" / "data"))
home = Path(tempfile.mkdtemp(prefix="mudata-example-"))

arff = shared / "wisdm" / "WISDM_ar_v1.1_transformed.arff"
lines = arff.read_text(encoding="latin-1").splitlines()
names = [
    re.match(r'@attribute\s+"?([^"\s{]+)', line, re.IGNORECASE).group(1)
    for line in lines
    if line.lower().startswith("@attribute")
]
start = next(i for i, line in enumerate(lines) if line.lower().startswith("@data")) + 1
rows = [line.split(",") for line in lines[start:] if line.strip()]
table = pd.DataFrame(rows, columns=names).replace("?", "")

release = home / "release"
release.mkdir()
table.to_csv(release / "features.csv", index=False)
(release / "README.txt").write_text("One row per 10 s window of phone accelerometer data.\n")
print(table.shape, list(table.columns[:4]), "...", list(table.columns[-2:]))


# %%
# Draft the entry
# ---------------
# The command line, called in this process (``mudata init release --name
# my-wisdm --kind features``; ``--kind features``: the rows are windows
# already, not raw samples). Its report says which files it left out, which
# columns hold the user and the label, which are not features and why, the
# classes and what the user filter keeps. Here the filter keeps only 2 of 36
# users:
def run_mudata(*args: str) -> str:
    """Run one ``mudata`` command, as ``mudata ARGS`` would in a shell; return what it says.

    ``init`` prints the path of the draft on stdout and its report on stderr.
    """
    output = io.StringIO()
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        mudata_cli.main(
            ["--data-home", str(home), *args], prog_name="mudata", standalone_mode=False
        )
    return output.getvalue()


entry = home / "my-wisdm.toml"
report = run_mudata(
    "init", str(release), "--name", "my-wisdm", "--kind", "features", "-o", str(entry)
)
print("\n".join(line for line in report.splitlines() if not line.startswith("  dropped")))

# %%
# The missing cells are the reason: the ``PEAK`` columns are empty for most
# windows of sitting and standing (no peak to time), and a row with a missing
# feature is dropped before the filter. Naming the features without them
# (as the built-in ``wisdm`` entry does) keeps 16 users.
print(table[table["XPEAK"] == ""]["class"].value_counts())
features = [
    c for c in table.columns if c not in {"UNIQUE_ID", "user", "class", "XAVG"} and "PEAK" not in c
]
report = run_mudata(
    "init", str(release), "--name", "my-wisdm", "--kind", "features",
    "--features", ",".join(features), "-o", str(entry), "--force",
)  # fmt: skip
print("\n".join(line for line in report.splitlines() if not line.startswith("  dropped")))
print(entry.read_text())

# %%
# Fill in what only you know, then register
# -----------------------------------------
# ``mudata register`` refuses a draft whose homepage, citation or licence still
# hold ``init``'s placeholders, naming each field.
draft = entry.read_text()
for line in draft.splitlines():
    key = line.split("=")[0].strip()
    replacement = {
        "title": 'title = "WISDM v1.1 features, shared as CSV"',
        "homepage": 'homepage = "https://www.cis.fordham.edu/wisdm/dataset.php"',
        "citation": 'citation = "Kwapisz, Weiss and Moore (2010). Activity Recognition using Cell Phone Accelerometers."',
        "licence": 'licence = { name = "LicenseRef-WISDM-v1.1", title = "free for research; cite the authors" }',
    }.get(key)
    if replacement:
        draft = draft.replace(line, replacement)
entry.write_text(draft)
print(run_mudata("register", str(entry)))

# %%
# Load it like any dataset
# ------------------------
# The files are pinned by the SHA-256 ``init`` saw (``hashes = "first-use"``):
# a file changed since is an error that says so.
mine = mudata.load("my-wisdm", data_home=home)
print(mine.DESCR.splitlines()[0])
print(mine.frame.shape, "rows x columns;", mine.groups.nunique(), "users")
print(mine.provenance["files"][0]["hashes"], mine.provenance["files"][0]["verified_at_build"])

shutil.rmtree(home)
