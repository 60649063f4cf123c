"""Models of the user's own: any scikit-learn classifier beside the four built-ins.

A :class:`UserModel` holds a name (the ``classifier`` value of every table and
file of the run), an unfitted estimator (an instance or a Pipeline) and whether
the protocol's min-max scaling is applied before it. Each split fits
:func:`seeded_clone` of the estimator: a fresh :func:`sklearn.base.clone` whose
every ``*random_state`` parameter, nested ones included, is the iteration's
seed, so a run repeats and does not depend on ``--jobs`` or the backend.

:func:`user_models` turns what :func:`mueval.evaluate` and ``mueval evaluate``
are given (codes, estimators, a dict of names, import paths) into the
classifier names of the run and its user models, checked before any task runs.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import pickle
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from sklearn.base import clone

from mueval.errors import UsageError
from mueval.names import (
    CLASSIFIERS,
    MODEL_NAME_RULE,
    classifier_rank,
    is_model_name,
    parse_classifiers,
)

__all__ = [
    "SCALINGS",
    "UserModel",
    "check_picklable",
    "check_shippable",
    "estimator_record",
    "load_import_path",
    "package_version",
    "read_model_config",
    "seeded_clone",
    "user_models",
]

#: ``--scale`` for the user's models: the protocol's min-max scaling, or none.
SCALINGS: tuple[str, ...] = ("none", "minmax")

#: Models of an optional extra, by code: their import path, the extra, and the
#: packages it installs (checked when the code is given, before any work).
OPTIONAL_MODELS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "cnn": ("mueval.evaluation.cnn:CNNClassifier", "deep", ("torch", "skorch")),
}

#: What each record of run.json says of a ``*random_state`` parameter.
SEED_NOTE = "the iteration's seed"


@dataclass(frozen=True, eq=False)
class UserModel:
    """One model of the user's.

    Attributes
    ----------
    name : str
        The classifier's name in every table and file of the run.
    estimator : estimator
        Unfitted; never fitted itself (each split fits a clone).
    scale : bool
        Fit a :class:`~sklearn.preprocessing.MinMaxScaler` on the training rows
        first, as the built-ins do (``--scale minmax``).
    source : str
        Where it came from: an import path, or ``"python"``.
    """

    name: str
    estimator: Any
    scale: bool = False
    source: str = "python"


def seeded_clone(estimator: Any, seed: int) -> Any:
    """A fresh clone of ``estimator`` with every ``*random_state`` set to ``seed``.

    The parameters are those of ``get_params(deep=True)``: a Pipeline's
    ``rf__random_state`` is set as well as a plain ``random_state``.
    """
    model = clone(estimator)
    keys = [k for k in model.get_params(deep=True) if k.endswith("random_state")]
    if keys:
        model.set_params(**dict.fromkeys(keys, seed))
    return model


def _class_path(obj: Any) -> str:
    kind = type(obj)
    return f"{kind.__module__}.{kind.__qualname__}"


def _json_safe(value: Any) -> Any:
    """``value`` if JSON can hold it as it is, else its ``repr``."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return repr(value)
    return value


def _version_of(obj: Any) -> str | None:
    """The installed version of the package of ``obj``'s top-level module."""
    return package_version(type(obj).__module__)


def package_version(module: str) -> str | None:
    """The installed version of the distribution that provides ``module``
    (None for a script's or a notebook's own code)."""
    top = module.split(".")[0]
    try:
        dists = metadata.packages_distributions().get(top, [top])
    except Exception:  # a broken environment's metadata: no version, not a failure
        dists = [top]
    for dist in dists:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    version = getattr(sys.modules.get(top), "__version__", None)
    return version if isinstance(version, str) else None


def estimator_record(name: str, estimator: Any, *, scale: bool, source: str) -> dict[str, Any]:
    """What run.json records of one model: name, class, parameters, version.

    The parameters are ``get_params(deep=False)``, each JSON as it is or its
    ``repr``; a ``*random_state`` parameter reads :data:`SEED_NOTE`, as each
    split sets it.
    """
    params = {
        key: SEED_NOTE if key.endswith("random_state") else _json_safe(value)
        for key, value in estimator.get_params(deep=False).items()
    }
    return {
        "name": name,
        "class": _class_path(estimator),
        "params": params,
        "version": _version_of(estimator),
        "scaling": "minmax" if scale else "none",
        "source": source,
    }


def check_shippable(models: Sequence[UserModel], where: str) -> None:
    """Refuse, before any task runs, a model the workers cannot be sent.

    Loky and Dask send the tasks with cloudpickle when plain pickle fails, so
    a model passes when either can serialise it.

    Raises
    ------
    UsageError
        Naming the model and what the pickler said.
    """
    for model in models:
        origin = model.source if model.source.startswith("fit_predict:") else None
        what = f"classifier {model.name!r} ({origin or _class_path(model.estimator)})"
        check_picklable(model.estimator, what, where)


def check_picklable(obj: Any, what: str, where: str) -> None:
    """Refuse ``obj`` when neither pickle nor cloudpickle can serialise it.

    Raises
    ------
    UsageError
        ``what`` cannot be pickled, which ``where`` needs, and pickle's reason.
    """
    # Here, not at the top: only runs in worker processes need cloudpickle
    # (joblib's own copy, or the package where joblib is installed without it).
    try:
        from joblib.externals import cloudpickle
    except ImportError:
        import cloudpickle

    try:
        pickle.dumps(obj)
    except Exception as exc:  # any failure of pickling is the user's object's
        try:
            cloudpickle.dumps(obj)
        except Exception:  # neither pickler: report plain pickle's reason
            message = (
                f"{what} cannot be pickled, which {where} needs: {type(exc).__name__}: {exc}"[:400]
                + " (run it with jobs=1 / --jobs 1, or make it picklable)"
            )
            raise UsageError(message) from exc


def load_import_path(path: str) -> Any:
    """The object at ``module:attribute`` (``module.attribute`` also works).

    Raises
    ------
    UsageError
        Naming the path and what failed: the module import or the attribute.
    """
    if ":" in path:
        module_name, _, attribute = path.partition(":")
    else:
        module_name, _, attribute = path.rpartition(".")
    if not module_name or not attribute:
        message = f"import path {path!r}: expected module:attribute, e.g. sklearn.linear_model:LogisticRegression"
        raise UsageError(message)
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # ImportError, or any error the module raises
        message = f"import path {path!r}: cannot import module {module_name!r}: {type(exc).__name__}: {exc}"
        raise UsageError(message[:400]) from exc
    obj: Any = module
    for part in attribute.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError as exc:
            message = f"import path {path!r}: module {module_name!r} has no attribute {attribute!r}"
            raise UsageError(message) from exc
    return obj


def _from_path(path: str, params: Mapping[str, Any]) -> Any:
    """The estimator an import path names: a class or factory called with ``params``,
    or an estimator instance with ``params`` set."""
    obj = load_import_path(path)
    shown = ", ".join(f"{k}={v!r}" for k, v in params.items())
    if hasattr(obj, "get_params") and not isinstance(obj, type):
        try:
            return clone(obj).set_params(**params) if params else obj
        except Exception as exc:  # scikit-learn's ValueError for unknown names, or any
            message = f"import path {path!r}: cannot set {shown}: {type(exc).__name__}: {exc}"
            raise UsageError(message[:400]) from exc
    if not callable(obj):
        message = f"import path {path!r}: expected a classifier class or factory, found {type(obj).__name__}"
        raise UsageError(message)
    try:
        return obj(**params)
    except Exception as exc:  # whatever the user's class or factory raises
        message = (
            f"import path {path!r}: calling it with ({shown}) failed: {type(exc).__name__}: {exc}"
        )
        raise UsageError(message[:400]) from exc


def _optional_model(code: str) -> str:
    """The import path of the optional model ``code``, once its extra is installed.

    Raises
    ------
    UsageError
        A package of its extra is not installed; the message says how to install it.
    """
    path, extra, packages = OPTIONAL_MODELS[code]
    missing = [name for name in packages if importlib.util.find_spec(name) is None]
    if missing:
        message = (
            f"classifier {code!r} needs the optional extra [{extra}], which installs "
            f"{', '.join(packages)}; not installed: {', '.join(missing)}. Install it with "
            f"pip install 'mudata-mueval[{extra}]'"
        )
        raise UsageError(message)
    return path


def _check_estimator(name: str, estimator: Any) -> None:
    """A classifier the evaluation can fit, clone and ask for probabilities."""
    if isinstance(estimator, type):
        message = (
            f"classifier {name!r}: {estimator.__module__}.{estimator.__qualname__} is a "
            f"class; give an instance, e.g. {estimator.__name__}()"
        )
        raise UsageError(message)
    what = f"classifier {name!r} ({_class_path(estimator)})"
    for method in ("fit", "predict", "get_params"):
        if not callable(getattr(estimator, method, None)):
            message = f"{what} has no {method}(); expected a scikit-learn classifier"
            raise UsageError(message)
    if not hasattr(estimator, "predict_proba"):
        message = (
            f"{what} has no predict_proba(): the conformal scores need class probabilities "
            "(e.g. SVC(probability=True), or wrap it in CalibratedClassifierCV)"
        )
        raise UsageError(message)
    try:
        clone(estimator)
    except Exception as exc:  # clone's TypeError or RuntimeError, or the object's own
        message = f"{what} cannot be cloned by sklearn.base.clone: {type(exc).__name__}: {exc}"
        raise UsageError(message[:400]) from exc


def _taken(name: str, taken: set[str]) -> bool:
    return name.casefold() in taken


def _unique(base: str, taken: set[str]) -> str:
    """``base``, or ``base-2``, ``base-3`` ... the first not taken (case-insensitively:
    the report's file names are built from it)."""
    name, n = base, 1
    while _taken(name, taken):
        n += 1
        name = f"{base}-{n}"
    return name


def _add(
    out: list[UserModel],
    taken: set[str],
    name: str | None,
    estimator: Any,
    *,
    scale: bool,
    source: str,
) -> None:
    if isinstance(estimator, type):
        _check_estimator(name or estimator.__name__, estimator)  # a class: refused
    if name is None:
        base = re.sub(r"[^A-Za-z0-9_-]", "_", type(estimator).__name__)[:40] or "model"
        name = _unique(base if base[0].isalpha() else f"m{base}", taken)
    elif not is_model_name(name):
        message = f"classifier name {name!r}: expected {MODEL_NAME_RULE}"
        raise UsageError(message)
    elif _taken(name, taken):
        message = (
            f"classifier name {name!r} is taken (a built-in code or another model, "
            "compared without case); give another"
        )
        raise UsageError(message)
    _check_estimator(name, estimator)
    taken.add(name.casefold())
    out.append(UserModel(name, estimator, scale=scale, source=source))


def user_models(
    classifiers: Any,
    *,
    params: Mapping[str, Any] | None = None,
    scale: str = "none",
) -> tuple[tuple[str, ...], tuple[UserModel, ...]]:
    """The run's classifier names and its user models, from what the caller gave.

    Parameters
    ----------
    classifiers : str, estimator, sequence or dict
        Built-in codes (comma lists and ``all`` allowed), import paths
        ``module:attribute`` (or ``name=module:attribute``), estimator
        instances or Pipelines, a sequence mixing them, or a dict of name ->
        estimator, import path, code or entry ``{"path": "module:attribute",
        "params": {...}, "scale": "minmax"}`` (a table of
        :func:`read_model_config`; its ``params`` are its own, its ``scale``
        overrides ``scale``).
    params : mapping, optional
        Keyword arguments of every import-path model given as text
        (``--classifier-param``), not of the entries.
    scale : {"none", "minmax"}
        Whether the user's models get the protocol's min-max scaling first.

    Returns
    -------
    names : tuple of str
        Built-in codes in table order, then the user models' names
        (:func:`~mueval.names.classifier_rank`).
    models : tuple of UserModel

    Raises
    ------
    UsageError
        An unknown code, an import path that does not resolve, a model without
        ``predict_proba``, a bad or duplicate name.
    """
    if scale not in SCALINGS:
        message = f"unknown scaling {scale!r}; valid: {', '.join(SCALINGS)}"
        raise UsageError(message)
    params = dict(params or {})
    minmax = scale == "minmax"
    if isinstance(classifiers, (Mapping, str)) or hasattr(classifiers, "fit"):
        classifiers = [classifiers]
    items: list[tuple[str | None, Any]] = []
    for value in classifiers:
        if isinstance(value, Mapping):
            items.extend((str(k), v) for k, v in value.items())
        else:
            items.append((None, value))
    codes: list[str] = []
    taken = {c.casefold() for c in CLASSIFIERS}
    models: list[UserModel] = []
    used_params = False
    for name, value in items:
        if isinstance(value, Mapping):
            estimator, own_scale, path = _from_entry(name, value)
            _add(
                models,
                taken,
                name,
                estimator,
                scale=minmax if own_scale is None else own_scale,
                source=path,
            )
            continue
        if not isinstance(value, str):
            _add(models, taken, name, value, scale=minmax, source="python")
            continue
        parts = [p.strip() for p in value.split(",")] if name is None else [value.strip()]
        for part in parts:
            if not part:
                continue
            given, path = name, part
            if name is None and "=" in part:
                given, _, path = part.partition("=")
                given, path = given.strip(), path.strip()
            if ":" in path or "." in path:
                _add(models, taken, given, _from_path(path, params), scale=minmax, source=path)
                used_params = True
            elif path in OPTIONAL_MODELS:
                target = _optional_model(path)
                _add(
                    models,
                    taken,
                    given or path,
                    _from_path(target, params),
                    scale=minmax,
                    source=target,
                )
                used_params = True
            elif given is not None and given != path:
                message = f"classifier {given!r}: {path!r} is no import path (module:attribute)"
                raise UsageError(message)
            else:
                codes.extend(_builtin_codes(path))
    if params and not used_params:
        message = (
            "classifier parameters apply to import-path models (module:attribute), "
            "and none was given"
        )
        raise UsageError(message)
    if not codes and not models:
        message = f"no classifier given; valid: {', '.join(CLASSIFIERS)}, all, or module:attribute"
        raise UsageError(message)
    builtins = parse_classifiers(codes) if codes else []
    names = sorted([*builtins, *(m.name for m in models)], key=classifier_rank)
    return tuple(names), tuple(models)


#: The keys of one model's entry (a table of ``--classifier-config``).
ENTRY_KEYS: tuple[str, ...] = ("path", "params", "scale")


def _from_entry(name: str | None, entry: Mapping[str, Any]) -> tuple[Any, bool | None, str]:
    """The estimator, the scaling (None: the run's) and the path of one entry
    ``{"path": "module:attribute", "params": {...}, "scale": "minmax"}``."""
    what = f"classifier {name!r}"
    unknown = sorted(set(entry) - set(ENTRY_KEYS))
    if unknown:
        message = f"{what}: unknown keys {unknown}; an entry holds {', '.join(ENTRY_KEYS)}"
        raise UsageError(message)
    path = entry.get("path")
    if not isinstance(path, str) or not path.strip():
        message = f'{what}: expected path = "module:attribute", found {path!r}'
        raise UsageError(message[:300])
    own = entry.get("params", {})
    if not isinstance(own, Mapping) or not all(isinstance(k, str) for k in own):
        message = f"{what}: expected params as a table of NAME = VALUE, found {own!r}"
        raise UsageError(message[:300])
    scale = entry.get("scale")
    if scale is not None and scale not in SCALINGS:
        message = f"{what}: unknown scale {scale!r}; valid: {', '.join(SCALINGS)}"
        raise UsageError(message)
    return _from_path(path.strip(), dict(own)), None if scale is None else scale == "minmax", path


def read_model_config(path: Any) -> dict[str, dict[str, Any]]:
    """The named models of a TOML file: one table per model.

    ::

        [logreg]
        path = "sklearn.linear_model:LogisticRegression"
        params = { C = 0.5, max_iter = 500 }
        scale = "minmax"          # optional; else the run's --scale

    Raises
    ------
    UsageError
        The file cannot be read, is no TOML, or holds something else than tables.
    """
    # Here, not at the top: only --classifier-config reads TOML.
    import tomllib

    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except OSError as exc:
        message = f"classifier config {path}: cannot read it: {exc.strerror or exc}"
        raise UsageError(message) from exc
    except tomllib.TOMLDecodeError as exc:
        message = f"classifier config {path}: not TOML: {exc}"
        raise UsageError(message) from exc
    if not data:
        message = f"classifier config {path}: expected one [NAME] table per model, found none"
        raise UsageError(message)
    for name, entry in data.items():
        if not isinstance(entry, dict):
            message = (
                f"classifier config {path}: {name!r} is a {type(entry).__name__}; expected "
                f'a table [{name}] with path = "module:attribute"'
            )
            raise UsageError(message)
    return data


def _builtin_codes(part: str) -> list[str]:
    try:
        return parse_classifiers([part])
    except UsageError:
        message = (
            f"unknown classifier {part!r}; valid: {', '.join(CLASSIFIERS)}, all, or an "
            "import path module:attribute (e.g. sklearn.linear_model:LogisticRegression)"
        )
        raise UsageError(message) from None
