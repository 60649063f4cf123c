"""A small table of several users whose classes are separable but whose users differ:
the evaluation's tests read it as a feature table of their own."""

from __future__ import annotations

import numpy as np
import pandas as pd


def make_frame(n_users: int = 4, per_class: int = 35, seed: int = 0) -> pd.DataFrame:
    """Users with 3 classes; features = class centre + user offset + noise."""
    rng = np.random.default_rng(seed)
    parts = []
    for u in range(n_users):
        offset = rng.normal(0, 0.7, 5)
        for c, name in enumerate(["run", "sit", "walk"]):
            X = rng.normal(0, 1.0, (per_class, 5)) + c * 1.2 + offset
            part = pd.DataFrame(X, columns=[f"f{i}" for i in range(5)])
            part.insert(0, "label", name)
            part.insert(0, "userid", 10 + u)
            parts.append(part)
    return pd.concat(parts, ignore_index=True)
