"""HAR70+ and OPPORTUNITY end to end: official-format archives built here, served on
127.0.0.1, downloaded through Pooch, windowed, filtered, validated and published."""

from __future__ import annotations

import hashlib
import math
import re
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import mudata
import mudata.cli
from mudata._resources import builtin_registry_dir
from mudata.errors import MudataUsageError as UsageError
from tests.official_formats import make_har70_zip, make_opportunity_zip

HAR70_KEPT = {1: "walking", 3: "shuffling", 6: "standing", 7: "sitting", 8: "lying"}
FEATURES_PER_SENSOR = [
    "meanX",
    "meanY",
    "meanZ",
    "sdX",
    "sdY",
    "sdZ",
    "maxX",
    "maxY",
    "maxZ",
    "corXY",
    "corXZ",
    "corYZ",
    "meanMagnitude",
    "sdMagnitude",
    "auc",
    "meanDif",
]


def expected_windows(n_samples: int, window: int) -> int:
    """Starts 1, 1+w, ... <= n, the last one dropped (DATASETS.md, step 3)."""
    return max(0, math.ceil(n_samples / window) - 1)


def test_har70_from_local_server(tmp_path: Path, http_server) -> None:
    users = (503, 501, 502, 504)
    # user 504 has very little data: too few windows of some class, dropped by the rule
    written = make_har70_zip(
        http_server.root / "har70.zip",
        users,
        np.random.default_rng(7),
        n_samples=[15000, 15000, 15000, 1500],
        mean_run=200,
    )
    served_hash = hashlib.sha256((http_server.root / "har70.zip").read_bytes()).hexdigest()

    # No hash is published for har70.zip: refused before any request is made.
    with pytest.raises(UsageError, match="allow_unverified"):
        mudata.fetch("har70", data_home=tmp_path, mirror=http_server.url, progress=False)
    assert http_server.count() == 0

    frame = mudata.load(
        "har70", data_home=tmp_path, mirror=http_server.url, allow_unverified=True, progress=False
    ).frame

    windows = {
        (user, HAR70_KEPT[code]): expected_windows(int((data["label"] == code).sum()), 150)
        for user, data in written.items()
        for code in HAR70_KEPT
    }
    passing = sorted(u for u in written if all(windows[(u, c)] >= 5 for c in HAR70_KEPT.values()))
    assert 504 not in passing and len(passing) >= 2
    assert sorted(frame["userid"].unique(), key=int) == [str(u) for u in passing]
    assert len(frame) == sum(windows[(u, c)] for u in passing for c in HAR70_KEPT.values())
    assert list(frame.columns) == [
        "userid",
        "label",
        *FEATURES_PER_SENSOR,
        *[f + "2" for f in FEATURES_PER_SENSOR],
    ]
    # rows ordered by user, then class in the registry's order, then window
    order = (
        frame["userid"].astype(str)
        + "/"
        + frame["label"].map(list(HAR70_KEPT.values()).index).astype(str)
    )
    assert order.tolist() == sorted(
        order.tolist(), key=lambda s: (int(s.split("/")[0]), int(s.split("/")[1]))
    )

    record = frame.attrs["provenance"]
    assert record["files"][0] == {
        **record["files"][0],
        "sha256": served_hash,
        "verified_at_build": False,
    }
    assert sorted(map(int, record["counts"]["users_dropped"])) == sorted(
        set(written) - set(passing)
    )
    assert http_server.count("/har70.zip") == 1


def test_opportunity_from_local_server_with_member_hashes(
    tmp_path: Path, http_server, monkeypatch
) -> None:
    archive = http_server.root / "opportunity+activity+recognition.zip"
    written = make_opportunity_zip(
        archive, users=(1, 2, 3, 4), rng=np.random.default_rng(3), n_rows=1500, n_bursts=1
    )
    # The built-in entry with the hashes of these members: a registry folder in
    # $MUDATA_REGISTRY overrides the built-in entry of the same name.
    text = (builtin_registry_dir() / "opportunity.toml").read_text(encoding="utf-8")
    with zipfile.ZipFile(archive) as zf:
        digests = {
            key: hashlib.sha256(
                zf.read(f"OpportunityUCIDataset/dataset/S{key[0]}-ADL{key[1]}.dat")
            ).hexdigest()
            for key in written
        }
    for (user, run), digest in digests.items():
        text = re.sub(
            rf'(path = "OpportunityUCIDataset/dataset/S{user}-ADL{run}\.dat"\nsha256 = )"[0-9a-f]{{64}}"',
            rf'\1"{digest}"',
            text,
        )
    registry = tmp_path / "registry"
    registry.mkdir()
    (registry / "opportunity.toml").write_text(text, encoding="utf-8")
    monkeypatch.setenv("MUDATA_REGISTRY", str(registry))

    result = CliRunner().invoke(
        mudata.cli.main,
        [
            "fetch",
            "opportunity",
            "--mirror",
            http_server.url,
            "--data-home",
            str(tmp_path / "home"),
            "--no-progress",
        ],
    )
    assert result.exit_code == 0, result.output
    frame = pd.read_parquet(result.stdout.strip().splitlines()[-1])
    record = mudata.provenance("opportunity", data_home=tmp_path / "home")
    kept = sorted(int(u) for u in frame["userid"].unique())
    dropped = sorted(int(u) for u in record["counts"]["users_dropped"])
    assert kept and sorted(kept + dropped) == [1, 2, 3, 4]
    per_class = frame.groupby(["userid", "label"]).size().unstack()
    assert (per_class.reindex(columns=["Stand", "Walk", "Sit", "Lie"]) >= 5).all().all()
    assert list(frame.loc[frame["userid"] == str(kept[0]), "label"].unique()) == [
        "Stand",
        "Walk",
        "Sit",
        "Lie",
    ]
    assert frame.shape[1] == 2 + 32
    assert np.isfinite(frame.iloc[:, 2:].to_numpy()).all()
    assert record["files"][0]["verified_at_build"] is True
    assert len(record["files"][0]["members"]) == 20
    # the missing-value bursts of the recordings cost windows, and the count says how many
    assert record["counts"]["windows_dropped"]["missing value"] > 0


def test_opportunity_member_tampered_is_refused(tmp_path: Path, http_server) -> None:
    """With the built-in hashes, synthetic recordings are not the official ones."""
    make_opportunity_zip(
        http_server.root / "opportunity+activity+recognition.zip", users=(1, 2, 3, 4), n_rows=20
    )
    result = CliRunner().invoke(
        mudata.cli.main,
        [
            "fetch",
            "opportunity",
            "--mirror",
            http_server.url,
            "--data-home",
            str(tmp_path),
            "--no-progress",
        ],
    )
    assert result.exit_code == 1
    assert "sha256" in result.output and "S1-ADL1.dat" in result.output
    assert not (tmp_path / "opportunity" / "opportunity.parquet").exists()
