"""What a reader receives and what it returns.

A reader turns the verified files of one release into one of two raw tables:

* :class:`FeatureTable` -- already one row per example with computed features
  (recipe ``precomputed``), or
* :class:`SignalTable` -- raw samples in long format, one row per sample, in
  file order, with a ``segment`` column that groups samples recorded together
  (recipe ``study-window`` windows each (user, class) sequence; recipe
  ``study-segment`` makes one feature row per segment).

Both keep the raw class code in ``label``; mapping codes to names, the user
filter and validation happen downstream, once, for every reader.

They are the contract of a reader, built in or plugged in: :data:`Reader`
takes an entry and the :class:`~mudata.readers.sources.Sources` it reads
through, and returns a :data:`RawTable`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mudata.readers.sources import Sources
from mudata.records.entry import DatasetEntry

if TYPE_CHECKING:
    # Annotations only: `mudata list` reads the registry, which checks reader
    # options here, and must not pay for importing pandas.
    import pandas as pd

__all__ = ["FeatureTable", "RawTable", "Reader", "SignalTable"]


@dataclass
class FeatureTable:
    """Feature rows: columns ``userid``, ``label`` (raw code), then numeric features."""

    frame: pd.DataFrame


@dataclass
class SignalTable:
    """Raw samples: columns ``userid``, ``label`` (raw code), ``segment``, then channels.

    Rows are in recording order. ``segment`` identifies a contiguous recording
    (a file, a repetition); the windowing recipe ignores it, the segment recipe
    makes one feature row per segment. An optional ``recording`` column (int)
    names recordings: the windowing recipe then never lets a window span two.
    """

    frame: pd.DataFrame


RawTable = FeatureTable | SignalTable


Reader = Callable[["DatasetEntry", Sources], RawTable]
