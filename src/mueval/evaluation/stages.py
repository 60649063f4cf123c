"""Progress through the stages that follow the tasks of a run, on stderr.

After the last task, ``mueval evaluate`` still pools the diagnostics, builds
the summary, writes the last predictions, computes the per-user guarantees
(the exact verdicts, the intervals, the validity tests: half a minute on
WISDM) and saves the run folder. On a terminal a second tqdm bar, in the
style of the tasks' bar, names the stage running and, within the guarantees,
the strategy and classifier; elsewhere (CI logs, ``nohup``, a pipe) it prints
nothing unless asked.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from tqdm import tqdm

__all__ = ["BAR_FORMAT", "StageProgress"]

#: tqdm's default bar without the rate and the time left, which stages of
#: such different lengths make meaningless; the elapsed time goes on counting
#: at each step of the guarantees.
BAR_FORMAT = "{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}{postfix}]"


class StageProgress:
    """A bar over named stages, or nothing.

    Parameters
    ----------
    stages : sequence of str
        The stages, in the order they run: the bar's total.
    enabled : bool, optional
        True: the bar, wherever stderr goes; False: nothing; None (the
        default): the bar only when stderr is a terminal.

    Examples
    --------
    >>> progress = StageProgress(["summary", "saving"], enabled=False)
    >>> with progress.stage("summary"):
    ...     progress.detail("mm/nb")
    >>> progress.close()
    """

    def __init__(self, stages: Sequence[str], enabled: bool | None = None) -> None:
        self.stages = list(stages)
        self._shown = sys.stderr.isatty() if enabled is None else enabled
        # Drawn at the first stage, not here: the tasks' bar comes first.
        self._bar: tqdm | None = None

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Name ``name`` on the bar while the block runs, then count it done."""
        if not self._shown:
            yield
            return
        if self._bar is None:
            self._bar = tqdm(
                total=len(self.stages),
                desc=f"mueval: {name}",
                unit="stage",
                file=sys.stderr,
                bar_format=BAR_FORMAT,
            )
        else:
            self._bar.set_description_str(f"mueval: {name}", refresh=False)
            self._bar.set_postfix_str("", refresh=True)
        yield
        self._bar.update(1)

    def detail(self, text: str) -> None:
        """What the running stage is at (a strategy and classifier), after its name."""
        if self._bar is not None:
            self._bar.set_postfix_str(text, refresh=True)

    def close(self, *, done: bool = True) -> None:
        """End the bar; its last state stays on the terminal, as the tasks' bar does.

        Parameters
        ----------
        done : bool, default True
            Every stage ran: the bar says so. False (a stage failed): the bar
            keeps that stage's name.
        """
        if self._bar is not None:
            if done:
                self._bar.set_description_str("mueval: checks done", refresh=False)
                self._bar.set_postfix_str("", refresh=False)
            self._bar.close()
            self._bar = None
        self._shown = False
