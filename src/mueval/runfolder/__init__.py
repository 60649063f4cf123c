"""The run folder: the one owner of its format, its writing and its reading.

- :mod:`.format`: the version, the marker and the names of files and columns;
- :mod:`.columns`: user ids as text, and no column that does not apply to a run;
- :mod:`.records`: the checked run folder, its error, and how its files are opened;
- :mod:`.arrays`: the prediction rows decoded as arrays, for the run and per pair;
- :mod:`.predictions`: the predictions table, built at once or streamed;
- :mod:`.write`: the files a run folder holds, written atomically;
- :mod:`.replace`: replacing a run folder and nothing else, and what a killed run left;
- :mod:`.read`: reading with every file checked;
- :mod:`.consistency`: the contradictions a reader refuses, checked in turn by
  :mod:`.checks` (with what the checks share), :mod:`.check_rows`,
  :mod:`.check_tables` and :mod:`.check_guarantees`;
- :mod:`.guarantees`: the stored per-user guarantees, read back and checked.
"""

from __future__ import annotations

from mueval.runfolder.format import FORMAT_VERSION, REQUIRED_FILES, RUN_FILES, RUN_FORMAT
from mueval.runfolder.predictions import PredictionStream, predictions_table
from mueval.runfolder.read import read_run_csv, read_run_folder
from mueval.runfolder.records import RunFolder, RunFolderError
from mueval.runfolder.replace import (
    check_target,
    open_run_folder,
    recover_leftovers,
    run_folder_problem,
)
from mueval.runfolder.write import finish_run_folder, write_run

__all__ = [
    "FORMAT_VERSION",
    "REQUIRED_FILES",
    "RUN_FILES",
    "RUN_FORMAT",
    "PredictionStream",
    "RunFolder",
    "RunFolderError",
    "check_target",
    "finish_run_folder",
    "open_run_folder",
    "predictions_table",
    "read_run_csv",
    "read_run_folder",
    "recover_leftovers",
    "run_folder_problem",
    "write_run",
]
