"""Follow one value through the code as it runs: the modules whose functions take it.

Two walks, each of a value that cannot be mistaken for another:

- ``fetch``: the dataset name and its registry entry, through ``mudata.fetch``
  of the embedded ``demo`` dataset: once building the table, once answering
  from the cache, once from the cache with ``verify=True``.
- ``alpha``: a miscoverage level of 0.0731, through ``mueval.evaluate`` of a
  small synthetic table (UCM, naive Bayes, 2 iterations, in this process). A function takes
  alpha when a local holds that float itself; it carries alpha when a local
  holds the settings object or the configuration that holds it.

Each function call of ``src/`` is inspected on entry (``sys.setprofile``), so
what the static reading of the code cannot follow (a value in a dataclass, a
keyword dictionary) is seen here. Run from the project root::

    python scripts/value_walk.py fetch
    python scripts/value_walk.py alpha
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

SRC = str(Path(__file__).resolve().parents[1] / "src") + "/"

#: The level the alpha walk follows: no default and no other setting equals it.
ALPHA = 0.0731


def walk(run: Callable[[], object], takes: Callable[[object], str | None]) -> dict[str, set[str]]:
    """The modules of ``src/`` whose functions held a value ``takes`` names, by kind.

    ``takes(value)`` returns a kind (``"takes"``, ``"carries"``) or None for
    each local of each function called while ``run()`` runs.
    """
    found: dict[str, set[str]] = {"ran": set()}

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        code = frame.f_code
        # A module's own code runs once, as it is imported: not a call.
        if event != "call" or code.co_name == "<module>" or not code.co_filename.startswith(SRC):
            return
        module = code.co_filename[len(SRC) :].removesuffix(".py")
        found["ran"].add(module)
        for value in frame.f_locals.values():
            kind = takes(value)
            if kind is not None:
                found.setdefault(kind, set()).add(module)

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return found


def _say(label: str, found: dict[str, set[str]]) -> None:
    print(f"{label}: code of {len(found['ran'])} modules ran")
    for kind in ("takes", "carries"):
        modules = sorted(found.get(kind, set()))
        if modules:
            print(f"  {kind} it: {len(modules)} modules: {', '.join(modules)}")


#: The three fetches of the walk of the dataset name, with their keywords.
FETCHES = (
    ("fetch, building", {}),
    ("fetch, cached", {}),
    ("fetch, cached, verify=True", {"verify": True}),
)


def fetch_walks(home: str) -> dict[str, dict[str, set[str]]]:
    """The walks of the dataset name and its entry through three fetches of ``demo``
    in the data home ``home`` (empty at first), by the labels of :data:`FETCHES`."""
    from mudata import api
    from mudata.records.entry import DatasetEntry

    def takes(value: object) -> str | None:
        named = isinstance(value, str) and value == "demo"
        return "takes" if named or isinstance(value, DatasetEntry) else None

    return {
        label: walk(lambda o=options: api.fetch("demo", data_home=home, **o), takes)
        for label, options in FETCHES
    }


def alpha_walk_found() -> dict[str, set[str]]:
    """The walk of alpha = :data:`ALPHA` through one small evaluation."""
    import mueval
    from mueval.conformal.settings import ConformalSettings
    from mueval.data.synthetic import make_users
    from mueval.evaluation.config import EvalConfig

    def takes(value: object) -> str | None:
        if isinstance(value, float) and value == ALPHA:
            return "takes"
        if isinstance(value, ConformalSettings | EvalConfig):
            return "carries"
        return None

    frame = make_users(6, n_classes=3, rows_per_user=60, n_features=4, seed=3)
    return walk(
        lambda: mueval.evaluate(
            frame, strategies=["ucm"], classifiers=["nb"], iterations=2, alpha=ALPHA, jobs=1
        ),
        takes,
    )


def fetch_walk() -> None:
    """Print the walk of the dataset name and its entry through three fetches of ``demo``."""
    with tempfile.TemporaryDirectory() as home:
        for label, found in fetch_walks(home).items():
            _say(label, found)


def alpha_walk() -> None:
    """Print the walk of alpha = :data:`ALPHA` through one small evaluation."""
    _say(f"evaluate, alpha={ALPHA}", alpha_walk_found())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("walk", choices=("fetch", "alpha"))
    args = parser.parse_args()
    fetch_walk() if args.walk == "fetch" else alpha_walk()


if __name__ == "__main__":
    main()
