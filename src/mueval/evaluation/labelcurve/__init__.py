"""How many labelled windows does a new user need? The label curve: coverage, set
size and accuracy against ``k`` labelled windows of the target user.

:mod:`.rows` says how each point is made; :mod:`.config` holds what the curve
sweeps, :mod:`.summary` the points and their intervals, :mod:`.figure` the
figure, and :mod:`.run` the run and its folder.
"""

from mueval.evaluation.labelcurve.config import (
    CURVE_SETTINGS,
    CurveConfig,
    auto_ks,
    parse_ks,
    parse_uses,
)
from mueval.evaluation.labelcurve.figure import curve_figure, curve_label, write_curve_figure
from mueval.evaluation.labelcurve.run import CurveResult, curve, curve_run
from mueval.evaluation.labelcurve.summary import informative_notes, summarise

__all__ = [
    "CURVE_SETTINGS",
    "CurveConfig",
    "CurveResult",
    "auto_ks",
    "curve",
    "curve_figure",
    "curve_label",
    "curve_run",
    "informative_notes",
    "parse_ks",
    "parse_uses",
    "summarise",
    "write_curve_figure",
]
