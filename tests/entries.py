"""Registry entries built in memory for the tests of the generic readers and the pipeline."""

from __future__ import annotations

from typing import Any

from mudata.records.entry import DatasetEntry
from mudata.registry.lookup import parse_entry


def entry(
    reader: str,
    options: dict[str, Any],
    classes: list[tuple[str | int, str]],
    *,
    recipe: dict[str, Any] | None = None,
    channels: tuple[str, str, str] | None = ("ax", "ay", "az"),
    min_per_class: int = 1,
    name: str = "own",
    sampling_rate_hz: float = 50.0,
) -> DatasetEntry:
    """A valid entry for ``reader`` with ``options``, ``classes`` as (code, name) pairs."""
    data: dict[str, Any] = {
        "name": name,
        "title": "Own data",
        "version": "1",
        "homepage": "https://example.org",
        "licence": "CC-BY-4.0",
        "citation": "Own, 2026.",
        "sampling_rate_hz": sampling_rate_hz,
        "reader": reader,
        "reader_options": options,
        "recipe": recipe
        or (
            {"name": "precomputed"}
            if reader == "feature-table"
            else {"name": "study-window", "window": 10, "smoothing": 1}
        ),
        "min_per_class": min_per_class,
        "classes": [{"code": c, "name": n} for c, n in classes],
        "files": [{"name": "data", "path": "data"}],
    }
    if channels and data["recipe"]["name"] != "precomputed":
        data["sensors"] = [{"name": "acc", "channels": list(channels)}]
    return parse_entry(data)
