"""Windows counted before the user decides (issue 16, point 6), by hand."""

from __future__ import annotations

import pandas as pd

from mudata.drafting.windows import (
    calibration_sizes,
    label_segments,
    needed,
    sequence_lengths,
    window_report,
    windows_per_user_class,
)


def test_the_calibration_floor_is_max_of_one_over_alpha_and_its_complement():
    assert (needed(0.05), needed(0.1), needed(0.5), needed(0.9)) == (20, 10, 2, 10)


def test_calibration_sizes_follow_the_protocol_splits():
    # windows per user: a 60, b 40, c 50; N = 150
    table = pd.DataFrame({"x": [30, 20, 25], "y": [30, 20, 25]}, index=["a", "b", "c"])
    sizes = calibration_sizes(table, ["a", "b", "c"])
    # mm: 150 - floor(90) = 60, half: 30. udm (b): 40 - 24 = 16, half: 8.
    # uim (a): others 90 - floor(54) = 36. ucm (b): 40 - 20 = 20.
    # uam (b): 40 - 20 = 20, half: 10. uxc (a): the others' 90.
    assert sizes == {"mm": 30, "udm": 8, "uim": 36, "ucm": 20, "uam": 10, "uxc": 90}


def test_windows_per_sequence_drop_the_last_start():
    frame = pd.DataFrame(
        {
            "userid": ["u"] * 17,
            "label": ["a"] * 10 + ["b"] * 4 + ["a"] * 3,
            "recording": [0] * 17,
        }
    )
    lengths = sequence_lengths(frame)  # a: 13 samples in one recording, b: 4
    table = windows_per_user_class(lengths, 4)
    assert table.loc["u", "a"] == 3 and table.loc["u", "b"] == 0  # ceil(13/4)-1, ceil(4/4)-1
    segments = label_segments(frame)
    assert segments["length"].tolist() == [10, 4, 3]


def test_short_recordings_are_named_and_a_window_proposed():
    rows = []
    for user in ("u1", "u2", "u3"):
        for recording, label in enumerate(["a", "b"] * 4):
            rows += [(user, label, f"{user}{recording}")] * 100  # 2 s at 50 Hz
    frame = pd.DataFrame(rows, columns=["userid", "label", "recording"])
    frame["recording"] = pd.factorize(frame["recording"])[0]
    report = window_report(frame, 150, 50.0, ["a", "b"], 4)
    text = "\n".join(report.lines)
    assert "24 of 24 recordings (user, class, recording) are not longer than one window" in text
    # 75 samples: ceil(100/75) - 1 = 1 window per recording, 4 per class; 100 samples: none
    assert report.proposed_seconds == 1.5
    assert "--window 1.5 is the longest window (in steps of 0.5 s) that keeps 3 users" in text
