"""Null classes below half of the rows (issue 28, releases in the wild).

PAMAP2's code 0 ("transient activities", 25 % of the rows) runs between every
two activities; Daphnet's code 0 ("not part of the experiment", 40 %) opens
and closes each recording and is named in a one-line legend of its README;
MHEALTH's README says ``Label (0 for the null class)``. Generated here with
other phrasings, separators, file names, shares, codes and run counts; the
negative cases (a code 0 recorded as an activity of its own, a code 0 once
between two activities, a numbered list that is no legend) keep code 0.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mudata.drafting.draft import draft_entry
from mudata.drafting.nulls import class_runs, interleaved, legend, null_classes


@pytest.mark.parametrize(
    "line",
    [
        "Annotations: 0: not part of the experiment, 1: experiment, no freeze, 2: freeze",
        "Labels; 0 = not part of the protocol; 1 = walking; 2 = freezing",
        "activityID (0 = transient/null/other), 1: lying, 2: sitting",
        "Codes: 1: walk, 2: stand, 0: transient activities (discard)",
        "class: 0 - background, 1: gait, 2: freeze",
    ],
)
@pytest.mark.parametrize("document", ["README", "readme.txt", "labels.txt"])
@pytest.mark.parametrize("share", [0.1, 0.25, 0.4])
def test_a_one_line_legend_naming_a_null_class_flags_it_at_any_share(line, document, share):
    rows = 10_000
    counts = {"0": int(share * rows), "1": int((1 - share) * rows * 0.6)}
    counts["2"] = rows - counts["0"] - counts["1"]
    text = f"Some release\n\n{line}\nSampling at 64 Hz.\n"
    flagged = null_classes(counts, {document: text})
    assert [f.code for f in flagged] == ["0"], flagged
    assert flagged[0].reason.startswith(f"{document} documents it as ")
    # The legend's other entries are read too: codes 1 and 2 are activities.
    names, source = legend({document: text})
    assert source == document and {"1", "2"} <= set(names)


@pytest.mark.parametrize(
    "text",
    [
        "Column 24: Label (0 for the null class)\n",
        "The label column uses 0 = transient/null/other.\n",
        "0 means unlabelled data.\n",
    ],
)
def test_one_mention_of_code_0_as_no_activity_flags_it(text):
    flagged = null_classes({"0": 300, "1": 400, "2": 300, "24": 200}, {"README.txt": text})
    assert [f.code for f in flagged] == ["0"]


def test_a_number_in_a_sentence_names_no_other_code():
    text = "Step 2: unknown sensors are removed.\nColumn 3 for the other hand.\n"
    assert null_classes({"0": 10, "1": 40, "2": 30, "3": 30}, {"notes.txt": text}) == []


def sequences(rng: np.random.Generator, activities: list[int], files: int, layout: str):
    """Per file, the runs of a protocol: code 0 between the activities ("between"),
    only before the first and after the last ("ends"), or each activity in a file
    of its own, code 0 one of them ("own files")."""
    out = []
    for _ in range(files):
        order = list(rng.permutation(activities))
        if layout == "between":
            runs = [0]
            for code in order:
                runs += [int(code), 0]
        elif layout == "ends":
            runs = [0, *map(int, order), 0]
        else:
            return [[str(c)] for c in [0, *activities] for _ in range(files)]
        out.append([str(c) for c in runs])
    return out


@pytest.mark.parametrize("activities", [[1, 2], [1, 2, 3, 4, 12], [1, 2, 3, 4, 5, 6, 7], [3, 5, 9]])
@pytest.mark.parametrize("files", [1, 3, 8])
def test_code_0_between_the_activities_is_flagged_and_elsewhere_kept(activities, files):
    rng = np.random.default_rng(len(activities) * 10 + files)
    counts = {"0": 900, **{str(c): 1000 for c in activities}}  # 0 below half
    between = sequences(rng, activities, files, "between")
    flagged = null_classes(counts, runs=between)
    # Every run of 0 but the first and the last of each file lies between two activities.
    expected_between = files * (len(activities) + 1) - 2 * files
    if expected_between >= 2:
        assert [f.code for f in flagged] == ["0"]
        assert (
            f"{expected_between} of its {files * (len(activities) + 1)} runs" in flagged[0].reason
        )
    else:
        assert flagged == []  # once between two activities is no pattern
    assert null_classes(counts, runs=sequences(rng, activities, files, "ends")) == []
    assert null_classes(counts, runs=sequences(rng, activities, files, "own files")) == []


def test_code_0_between_a_few_of_many_changes_is_kept():
    runs = [["1", "2", "3", "1", "2", "0", "3", "1", "0", "2", "3"]]
    assert interleaved(runs) == (2, 2, 6)
    assert null_classes({"0": 10, "1": 30, "2": 30, "3": 30}, runs=runs) == []


def test_text_codes_are_never_flagged_by_their_runs():
    runs = [["0", "walk", "0", "run", "0", "sit", "0"]]
    assert null_classes({"0": 10, "walk": 30, "run": 30, "sit": 30}, runs=runs) == []


def test_runs_are_read_per_recording_with_blanks_between_runs_joined():
    labels = pd.Series([0.0, 0.0, 1.0, 1.0, np.nan, 1.0, 0.0, 2.0, 2.0, 0.0, 3.0])
    recordings = pd.Series(["a"] * 7 + ["b"] * 4)
    runs = class_runs(labels, recordings)
    assert runs == [["0", "1", "<blank>", "1", "0"], ["2", "0", "3"]]
    assert interleaved(runs) == (1, 3, 0)


def _headerless(root: Path, share: float, separator: str, rate: int, rng, *, readme=None):
    """PAMAP2's shape: ``time code x y z`` without a header, one file per subject."""
    root.mkdir(parents=True)
    null_seconds = 10 * share / (1 - share)  # of every activity's 10 s
    for subject in (1, 2, 3):
        codes = [0, 1, 0, 2, 0, 3, 0, 4, 0]
        lengths = [int(rate * (null_seconds * 4 / 5 if c == 0 else 10)) for c in codes]
        labels = np.concatenate([np.full(n, c) for c, n in zip(codes, lengths, strict=True)])
        xyz = rng.normal(size=(len(labels), 3)) * (1 + labels[:, None])
        lines = [
            separator.join([f"{5 + i / rate:.2f}", str(code), *(f"{v:.4f}" for v in row)])
            for i, (code, row) in enumerate(zip(labels, xyz, strict=True))
        ]
        (root / f"subject10{subject}.dat").write_text("\n".join(lines) + "\n")
    if readme:
        (root / "README").write_text(readme)


@pytest.mark.parametrize(
    ("share", "separator", "readme", "reason"),
    [
        (0.25, " ", None, r"code 0 runs between the other classes, as transitions do: 9 of its 15"),
        (0.15, "\t", None, r"code 0 runs between the other classes"),
        (0.4, ",", "Annotations: 0: not part of the experiment, 1: a, 2: b, 3: c, 4: d\n",
         r"README documents it as 'not part of the experiment'"),
    ],
)  # fmt: skip
def test_init_leaves_out_a_null_class_below_half_and_says_why(
    tmp_path, share, separator, readme, reason
):
    rng = np.random.default_rng(int(share * 100))
    _headerless(tmp_path / "release", share, separator, 50, rng, readme=readme)
    draft = draft_entry([tmp_path / "release"], "nulls", output=tmp_path / "n.toml")
    assert [c.code for c in draft.entry.classes] == [1, 2, 3, 4]
    line = next(line for line in draft.report if line.strip().startswith("0: "))
    assert "left out, not an activity" in line and re.search(reason, line), line
    assert "--keep-class 0 keeps it" in line
