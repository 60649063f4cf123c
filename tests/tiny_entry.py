"""A tiny registered dataset (a CSV feature table beside its TOML entry), for fast mudata tests."""

from __future__ import annotations

import hashlib
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd

TINY_USERS = (10, 20, 30)
TINY_CLASSES = ("up", "down")


def tiny_rows(seed: int = 0) -> pd.DataFrame:
    """Three users, six rows of each class each, two features."""
    rng = np.random.default_rng(seed)
    n = len(TINY_USERS) * 12
    return pd.DataFrame(
        {
            "who": np.repeat(TINY_USERS, 12),
            "what": np.tile(["up"] * 6 + ["down"] * 6, len(TINY_USERS)),
            "f1": rng.normal(size=n),
            "f2": np.arange(n, dtype=float),
        }
    )


def write_tiny_entry(folder: Path, *, name: str = "tiny", licence: str = '"CC0-1.0"') -> Path:
    """Write ``features.csv`` and ``<name>.toml`` into ``folder``; return the TOML file.

    ``licence`` is the TOML value of the ``licence`` key, as written.
    """
    folder.mkdir(parents=True, exist_ok=True)
    table = folder / "features.csv"
    tiny_rows().to_csv(table, index=False)
    sha = hashlib.sha256(table.read_bytes()).hexdigest()
    text = textwrap.dedent(
        f"""\
        name = "{name}"
        title = "A tiny study"
        version = "1"
        homepage = "https://example.org/tiny"
        licence = {licence}
        citation = "Someone (2026). A tiny study."
        sampling_rate_hz = 50
        reader = "feature-table"
        min_per_class = 5

        [reader_options]
        format = "csv"
        user_col = "who"
        label_col = "what"

        [recipe]
        name = "precomputed"

        [[files]]
        name = "features.csv"
        path = "{table.as_posix()}"
        sha256 = "{sha}"

        [[classes]]
        code = "up"
        name = "up"

        [[classes]]
        code = "down"
        name = "down"
        """
    )
    entry = folder / f"{name}.toml"
    entry.write_text(text, encoding="utf-8")
    return entry
