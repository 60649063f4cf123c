"""The four classifiers of the reference protocol, the user's models, and their training step.

Each split gets fresh estimators built by :func:`make_classifier` with the
iteration's seed; features are scaled with a :class:`MinMaxScaler` fitted on the
training rows only (the protocol's rule), then applied to every other row. A
user model (:mod:`mueval.evaluation.estimators`) is a seeded clone of the user's
estimator, scaled so only when asked (``--scale minmax``): its own Pipeline
decides otherwise.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.ensemble import RandomForestClassifier
from sklearn.naive_bayes import GaussianNB
from sklearn.neighbors import KNeighborsClassifier
from sklearn.preprocessing import FunctionTransformer, MinMaxScaler
from sklearn.svm import SVC

from mueval.errors import UsageError
from mueval.evaluation.estimators import UserModel, estimator_record, seeded_clone
from mueval.evaluation.hooks import FitPredictClassifier, fit_predict_record
from mueval.names import CLASSIFIER_NAMES, CLASSIFIERS

__all__ = [
    "CLASSIFIERS",
    "CLASSIFIER_NAMES",
    "fit_scaled",
    "full_proba",
    "make_classifier",
    "model_records",
]


def make_classifier(code: str, seed: int) -> ClassifierMixin:
    """Build an unfitted classifier with the protocol's exact settings.

    Parameters
    ----------
    code : {"nb", "rf", "svm", "knn"}
        Classifier code.
    seed : int
        The iteration's seed (used by RF and SVM; NB and KNN are deterministic).

    Returns
    -------
    ClassifierMixin
        A new scikit-learn estimator.
    """
    if code == "nb":
        return GaussianNB()
    if code == "rf":
        return RandomForestClassifier(n_estimators=50, random_state=seed)
    if code == "svm":
        # probability=True is what the reference study used (Platt scaling with an
        # internal 5-fold CV, seeded). scikit-learn 1.9 deprecates it (removal in
        # 1.11); pyproject pins <1.11 so the numbers stay the study's.
        return SVC(probability=True, random_state=seed)
    if code == "knn":
        return KNeighborsClassifier(3)
    message = f"unknown classifier {code!r}; valid: {', '.join(CLASSIFIERS)}"
    raise UsageError(message)


def fit_scaled(
    code: str,
    seed: int,
    X_train: np.ndarray,
    y_train: np.ndarray,
    models: Mapping[str, UserModel] | None = None,
) -> tuple[MinMaxScaler | FunctionTransformer, ClassifierMixin]:
    """Fit the scaler and the classifier on the training rows.

    Parameters
    ----------
    code : str
        Classifier code, or the name of one of ``models``.
    seed : int
        The iteration's seed.
    X_train : ndarray of shape (n_train, n_features)
        Unscaled training features.
    y_train : ndarray of shape (n_train,)
        Integer-encoded training labels.
    models : mapping of str to UserModel, optional
        The run's user models by name.

    Returns
    -------
    scaler : MinMaxScaler or FunctionTransformer
        Fitted on ``X_train`` only; the identity for a user model without
        ``--scale minmax``.
    model : ClassifierMixin
        Fitted on the scaled training rows.
    """
    if models and code in models:
        own = models[code]
        scaler = (MinMaxScaler() if own.scale else FunctionTransformer()).fit(X_train)
        model = seeded_clone(own.estimator, seed)
        model.fit(scaler.transform(X_train), y_train)
        return scaler, model
    scaler = MinMaxScaler().fit(X_train)
    model = make_classifier(code, seed)
    with warnings.catch_warnings():
        # scikit-learn >= 1.9 warns that SVC(probability=True) is deprecated; the
        # protocol needs it and pyproject keeps a version range where it works.
        warnings.filterwarnings("ignore", message=".*probability.*", category=FutureWarning)
        model.fit(scaler.transform(X_train), y_train)
    return scaler, model


def full_proba(model: ClassifierMixin, X: np.ndarray, n_classes: int) -> np.ndarray:
    """``predict_proba`` widened to every class of the dataset.

    A model trained on a subset lacking some class (possible for small users)
    knows only ``model.classes_``; the missing classes get probability 0.

    Parameters
    ----------
    model : ClassifierMixin
        Fitted on integer labels in ``0..n_classes-1``.
    X : ndarray of shape (n, n_features)
        Scaled features.
    n_classes : int
        Number of classes K of the dataset.

    Returns
    -------
    ndarray of shape (n, K)
    """
    proba = model.predict_proba(X)
    known = np.asarray(model.classes_, dtype=int)
    if len(known) == n_classes and np.array_equal(known, np.arange(n_classes)):
        return proba
    out = np.zeros((proba.shape[0], n_classes), dtype=float)
    out[:, known] = proba
    return out


def model_records(
    classifiers: tuple[str, ...], models: Mapping[str, UserModel]
) -> list[dict[str, Any]]:
    """run.json's ``models``: name, class, parameters and version of each classifier.

    A built-in is recorded as :func:`make_classifier` builds it (seed 0; every
    ``*random_state`` reads "the iteration's seed").
    """
    out = []
    for code in classifiers:
        if code in models and isinstance(models[code].estimator, FitPredictClassifier):
            out.append(fit_predict_record(models[code]))
        elif code in models:
            own = models[code]
            out.append(estimator_record(code, own.estimator, scale=own.scale, source=own.source))
        else:
            record = estimator_record(code, make_classifier(code, 0), scale=True, source="built-in")
            out.append({**record, "display_name": CLASSIFIER_NAMES[code]})
    return out
