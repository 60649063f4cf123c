"""What a run's models are fed: the feature table's rows, or the windows of samples.

``input="features"`` (the protocol) gives every model the 16-features-per-sensor
rows; ``input="windows"`` gives the models of the user's (and ``cnn`` of
``mueval[deep]``) the float32 windows of shape ``(n, T, C)`` that mudata
stores beside the same rows (:func:`mueval.data.table.load_registered_windows`).
The built-ins are the protocol's models of features and stay on them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from mueval.errors import UsageError
from mueval.names import CLASSIFIERS

__all__ = ["INPUTS", "check_input"]

#: The inputs a run may feed its models.
INPUTS: tuple[str, ...] = ("features", "windows")


def check_input(input: str, names: tuple[str, ...], models: Iterable[Any]) -> None:
    """Refuse, before any work, a run whose models cannot take ``input``.

    Parameters
    ----------
    input : {"features", "windows"}
    names : tuple of str
        The run's classifier names.
    models : iterable of UserModel
        Its models of the user's (:func:`mueval.evaluation.estimators.user_models`).

    Raises
    ------
    UsageError
        An unknown input; on windows, a built-in classifier (they take the
        feature rows) or a model with ``--scale minmax`` (the protocol's
        scaler takes feature rows, not windows).
    """
    if input not in INPUTS:
        message = f"unknown input {input!r}; valid: {', '.join(INPUTS)}"
        raise UsageError(message)
    own = {model.name: model for model in models}
    if input != "windows":
        needs = [
            n
            for n in names
            if getattr(own.get(n), "estimator", None) is not None
            and getattr(own[n].estimator, "mueval_input", "features") == "windows"
        ]
        if needs:
            message = (
                f"{', '.join(needs)} takes windows of samples (n, T, C), not feature rows; "
                "evaluate it with --input windows (input='windows') on a dataset with windows"
            )
            raise UsageError(message)
        return
    builtins = [n for n in names if n in CLASSIFIERS and n not in own]
    if builtins:
        message = (
            f"input windows (--input windows): the built-in classifiers {', '.join(builtins)} take the feature "
            "rows of the protocol, not windows; evaluate them without --input windows, and "
            "give windows to a model that takes (n, T, C) arrays (-c cnn with mueval[deep], "
            "or an estimator of your own)"
        )
        raise UsageError(message)
    scaled = [n for n in names if n in own and own[n].scale]
    if scaled:
        message = (
            f"input windows (--input windows): {', '.join(scaled)} asks for the protocol's min-max scaling "
            "(--scale minmax), which scales feature rows, not windows; use --scale none and "
            "let the model normalise its windows"
        )
        raise UsageError(message)
