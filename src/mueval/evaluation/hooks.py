"""Models of any framework: a ``fit_predict`` function in place of an estimator.

``mueval.evaluate(..., models={"name": fit_predict})`` evaluates a model that is
no scikit-learn estimator (Keras, JAX, PyTorch, plain numpy) under the same
splits, conformalisation, metrics, per-user guarantees and run folder as a
built-in. The contract of ``fit_predict``::

    fit_predict(X_train, y_train, X_eval, seed) -> proba

- ``X_train`` : float64 array (n_train, n_features), the training rows of one
  split; raw features, or min-max scaled on the training rows when the run
  asks ``scale="minmax"`` (as for an own estimator; the built-ins are always
  scaled). ``X_eval`` (n_eval, n_features) is scaled the same way.
- ``y_train`` : int array (n_train,), class indices ``0 .. K-1`` of the
  dataset's sorted class labels (``Run.classes``); a training set may lack
  some classes (a small user's rows).
- ``seed`` : int, the iteration's seed (the same under any ``jobs``), to seed
  the framework's own random numbers.
- ``proba`` : array (n_eval, m) of class probabilities, one column per class
  present in ``y_train``, in increasing order (``numpy.unique(y_train)``); the
  classes absent from training get probability 0. Every value finite and
  non-negative, every row summing to 1 within :data:`SUM_TOLERANCE`;
  anything else stops the run with an error naming the model.

The function is called once per fitted model (one split, or one UXC fold)
with every row that model must score. :class:`FitPredictClassifier` wraps it
as a scikit-learn classifier, so the splits clone and seed it as they do an
estimator, and ``jobs > 1`` or Dask send it to the workers pickled (with
cloudpickle when plain pickle fails: a function defined in a script or a
notebook travels too).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from mueval.errors import EvaluationError, UsageError
from mueval.evaluation.estimators import UserModel, package_version
from mueval.names import MODEL_NAME_RULE, is_model_name

__all__ = [
    "SUM_TOLERANCE",
    "FitPredictClassifier",
    "check_probabilities",
    "fit_predict_models",
    "fit_predict_record",
    "qualified_name",
]

#: How far from 1 a row of a ``fit_predict``'s probabilities may sum: float32
#: softmax outputs (a deep model's) sum to 1 within about 1e-7 per class.
SUM_TOLERANCE = 1e-6


def qualified_name(function: Any) -> tuple[str, str]:
    """The module and qualified name of a callable (of its class for an instance)."""
    target = function if hasattr(function, "__qualname__") else type(function)
    return str(getattr(target, "__module__", "?")), str(target.__qualname__)


def check_probabilities(proba: Any, *, name: str, n_rows: int, n_classes: int) -> np.ndarray:
    """``proba`` as float64 when it keeps the ``fit_predict`` contract, else raise.

    Parameters
    ----------
    proba : array-like, expected shape (n_rows, n_classes)
        What the model returned.
    name : str
        The model's name, for the message.
    n_rows, n_classes : int
        Evaluation rows, and classes present in the training rows.

    Raises
    ------
    EvaluationError
        Naming the model and the first broken rule: shape, finiteness,
        a value outside [0, 1], or a row sum further than :data:`SUM_TOLERANCE`
        from 1.
    """
    what = f"model {name!r}: fit_predict returned"
    try:
        out = np.asarray(proba, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        message = f"{what} {type(proba).__name__}, not an array of floats: {exc}"
        raise EvaluationError(message[:400]) from exc
    if out.shape != (n_rows, n_classes):
        message = (
            f"{what} shape {out.shape}; expected ({n_rows}, {n_classes}): one row per "
            f"evaluation row, one column per class of the training rows (sorted)"
        )
        raise EvaluationError(message)
    bad = ~np.isfinite(out)
    if bad.any():
        row = int(np.argwhere(bad)[0][0])
        message = f"{what} {int(bad.sum())} values that are not finite (first in row {row})"
        raise EvaluationError(message)
    if (out < 0).any():
        row, col = (int(i) for i in np.argwhere(out < 0)[0])
        message = (
            f"{what} negative probabilities (first: row {row}, column {col}: {out[row, col]!r})"
        )
        raise EvaluationError(message)
    if (out > 1).any():
        row, col = (int(i) for i in np.argwhere(out > 1)[0])
        message = (
            f"{what} probabilities above 1 (first: row {row}, column {col}: {out[row, col]!r})"
        )
        raise EvaluationError(message)
    sums = out.sum(axis=1)
    off = np.abs(sums - 1.0) > SUM_TOLERANCE
    if off.any():
        row = int(np.argmax(off))
        message = (
            f"{what} rows that do not sum to 1 within {SUM_TOLERANCE:g} ({int(off.sum())} of "
            f"{n_rows}; row {row} sums to {sums[row]!r}): return probabilities, e.g. a softmax"
        )
        raise EvaluationError(message)
    return out


class FitPredictClassifier(ClassifierMixin, BaseEstimator):
    """A ``fit_predict`` function as a scikit-learn classifier.

    ``fit`` keeps the training rows; ``predict_proba`` calls
    ``fit_predict(X_train, y_train, X, random_state)`` and checks what comes
    back (:func:`check_probabilities`). ``predict`` is the argmax of those
    probabilities, reusing the last call's when asked for the same rows, so a
    split trains the user's model once.

    Parameters
    ----------
    fit_predict : callable
        ``fit_predict(X_train, y_train, X_eval, seed) -> proba`` (the module
        docstring states the contract).
    name : str
        The model's name, for messages.
    random_state : int, optional
        The seed given to ``fit_predict``; each split sets it to the
        iteration's seed.
    """

    def __init__(
        self,
        fit_predict: Callable[..., Any] | None = None,
        name: str = "model",
        random_state: int | None = None,
    ) -> None:
        self.fit_predict = fit_predict
        self.name = name
        self.random_state = random_state

    def fit(self, X: np.ndarray, y: np.ndarray) -> FitPredictClassifier:
        self.X_train_ = np.asarray(X, dtype=np.float64)
        self.y_train_ = np.asarray(y, dtype=int)
        self.classes_ = np.unique(self.y_train_)
        self._last: tuple[np.ndarray, np.ndarray] | None = None
        return self

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        if self._last is not None and self._last[0] is X:
            return self._last[1]
        X_eval = np.asarray(X, dtype=np.float64)
        seed = None if self.random_state is None else int(self.random_state)
        # None is the default scikit-learn's get_params needs; the models are made with a function.
        assert self.fit_predict is not None
        try:
            proba = self.fit_predict(self.X_train_, self.y_train_, X_eval, seed)
        except Exception as exc:  # whatever the user's framework raises, named
            module, qualname = qualified_name(self.fit_predict)
            message = (
                f"model {self.name!r}: fit_predict {module}.{qualname} raised "
                f"{type(exc).__name__}: {exc}"
            )
            raise EvaluationError(message[:500]) from exc
        out = check_probabilities(
            proba, name=self.name, n_rows=len(X_eval), n_classes=len(self.classes_)
        )
        self._last = (X, out)
        return out

    def predict(self, X: np.ndarray) -> np.ndarray:
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]


def fit_predict_record(model: UserModel) -> dict[str, Any]:
    """What run.json records of a ``fit_predict`` model: its name, the callable's
    module and qualified name, its package's version, the scaling."""
    function = model.estimator.fit_predict
    module, qualname = qualified_name(function)
    return {
        "name": model.name,
        "kind": "fit_predict",
        "callable": f"{module}.{qualname}",
        "module": module,
        "qualname": qualname,
        "version": package_version(module),
        "scaling": "minmax" if model.scale else "none",
        "source": model.source,
    }


def fit_predict_models(
    hooks: Mapping[str, Any], *, taken: set[str], scale: bool
) -> tuple[UserModel, ...]:
    """The user models of ``models={"name": fit_predict}``.

    Parameters
    ----------
    hooks : mapping of str to callable
    taken : set of str
        Names already used (case-folded): the built-in codes and the other models.
    scale : bool
        Min-max scaling before the function (``scale="minmax"``).

    Raises
    ------
    UsageError
        Not a mapping, a bad or taken name, or a value that is not callable.
    """
    if not isinstance(hooks, Mapping):
        message = (
            f"models must be a dict of name -> fit_predict function; found {type(hooks).__name__}"
        )
        raise UsageError(message)
    out = []
    for name, function in hooks.items():
        if not isinstance(name, str) or not is_model_name(name):
            message = f"model name {name!r}: expected {MODEL_NAME_RULE}"
            raise UsageError(message)
        if name.casefold() in taken:
            message = (
                f"model name {name!r} is taken (a built-in code or another model, "
                "compared without case); give another"
            )
            raise UsageError(message)
        if not callable(function) or isinstance(function, type):
            shown = " ".join(repr(function).split())[:80]
            message = (
                f"model {name!r}: expected a function fit_predict(X_train, y_train, X_eval, "
                f"seed) -> probabilities; found {shown}"
            )
            raise UsageError(message)
        taken.add(name.casefold())
        module, qualname = qualified_name(function)
        estimator = FitPredictClassifier(function, name=name)
        out.append(
            UserModel(name, estimator, scale=scale, source=f"fit_predict:{module}.{qualname}")
        )
    return tuple(out)
