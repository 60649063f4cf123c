"""``-c cnn``: a small 1-D convolutional network for HAR windows (extra ``mueval[deep]``).

After the benchmark card of Tang et al. (2020, arXiv:2005.03948; the card is
``../shared/seeds/har-weighted-f1-eval.txt``): fixed-width windows of raw
multi-channel signals in, a softmax over the activity classes out, small
filters. Three 1-D convolutions (kernels of 5, 5 and 3 samples, 16, 32 and 32
filters by default, batch normalisation and ReLU, max-pooling by 2 after the first two),
global average pooling, then one linear layer and a softmax. Trained with Adam
on the cross-entropy of the softmax (skorch's ``NeuralNetClassifier`` with its
``NLLLoss`` of the log of the probabilities), on the CPU.

It is a scikit-learn estimator: :func:`sklearn.base.clone` copies its
parameters, and mueval's seeded clone sets ``random_state`` to the iteration's
seed, from which the weights' initialisation and the batches' order are drawn
(``torch.manual_seed``). Each fit and prediction runs on one torch thread, so
the result does not depend on ``--jobs`` or the backend. The windows are
standardised per channel with the training windows' mean and SD (the network's
own scaling; use ``--scale none``).

It takes windows ``(n, T, C)`` only (``--input windows``): torch and skorch are
imported when it is fitted, so ``mueval`` starts without them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

__all__ = ["CNNClassifier"]


def _window_net() -> type:
    """The network's class, made once torch is imported: (batch, T, C) windows to softmax rows."""
    # Here, not at the top: torch is the optional extra [deep], and heavy.
    import torch
    from torch import nn

    class WindowNet(nn.Module):
        def __init__(self, n_channels: int, n_classes: int, filters: tuple[int, ...]) -> None:
            super().__init__()
            first, second, third = filters
            self.features = nn.Sequential(
                nn.Conv1d(n_channels, first, kernel_size=5, padding=2),
                nn.BatchNorm1d(first),
                nn.ReLU(),
                nn.MaxPool1d(2),
                nn.Conv1d(first, second, kernel_size=5, padding=2),
                nn.BatchNorm1d(second),
                nn.ReLU(),
                nn.MaxPool1d(2),
                nn.Conv1d(second, third, kernel_size=3, padding=1),
                nn.BatchNorm1d(third),
                nn.ReLU(),
                nn.AdaptiveAvgPool1d(1),
            )
            self.classify = nn.Linear(third, n_classes)

        def forward(self, X: torch.Tensor) -> torch.Tensor:
            # Windows come as (batch, T, C); convolutions run along T.
            hidden = self.features(X.transpose(1, 2)).squeeze(-1)
            return torch.softmax(self.classify(hidden), dim=-1)

    # A fitted model pickles (loky, Dask, a saved estimator): its network's class
    # must be found by name in this module.
    WindowNet.__module__, WindowNet.__qualname__ = __name__, "WindowNet"
    return WindowNet


def __getattr__(name: str) -> Any:
    """``WindowNet``, made on first use (also when a pickled model is read back)."""
    if name == "WindowNet":
        cls = _window_net()
        globals()["WindowNet"] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@contextlib.contextmanager
def _one_thread() -> Iterator[None]:
    """Run torch on one thread: the sums, hence the weights, do not depend on the cores."""
    # Here, not at the top: torch is the optional extra [deep], and heavy.
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class CNNClassifier(ClassifierMixin, BaseEstimator):
    """A small 1-D CNN over windows of samples, with ``predict_proba`` (softmax).

    Parameters
    ----------
    max_epochs : int
        Passes over the training windows.
    lr : float
        Adam's learning rate.
    batch_size : int
        Windows per batch (the batches are shuffled, from ``random_state``).
    filters : tuple of three int
        Filters of the three convolutions.
    random_state : int, optional
        Seed of the weights' initialisation and of the batches' order; mueval
        sets it to the iteration's seed. None is 0.

    Attributes
    ----------
    classes_ : ndarray
        The labels seen in training, in sorted order.
    net_ : skorch.NeuralNetClassifier
        The trained network.
    mean_, scale_ : ndarray of shape (C,)
        The training windows' per-channel mean and SD.
    """

    #: What mueval feeds it: windows of samples (``--input windows``), never feature rows.
    mueval_input = "windows"

    def __init__(
        self,
        max_epochs: int = 10,
        lr: float = 1e-3,
        batch_size: int = 64,
        filters: tuple[int, int, int] = (16, 32, 32),
        random_state: int | None = None,
    ) -> None:
        self.max_epochs = max_epochs
        self.lr = lr
        self.batch_size = batch_size
        self.filters = filters
        self.random_state = random_state

    def _windows(self, X: Any) -> np.ndarray:
        X = np.asarray(X, dtype=np.float32)
        if X.ndim != 3:
            message = (
                f"CNNClassifier takes windows of samples of shape (n, T, C), got an array of "
                f"shape {X.shape}; evaluate it with --input windows (input='windows')"
            )
            raise ValueError(message)
        if not np.isfinite(X).all():
            raise ValueError("CNNClassifier: the windows hold missing or infinite samples")
        return X

    def fit(self, X: Any, y: Any) -> CNNClassifier:
        """Train on windows ``X`` (n, T, C) and labels ``y`` (n,)."""
        # Here, not at the top: torch and skorch are the optional extra [deep].
        import torch
        from skorch import NeuralNetClassifier

        X = self._windows(X)
        self.classes_, codes = np.unique(np.asarray(y), return_inverse=True)
        self.mean_ = X.mean(axis=(0, 1))
        spread = X.std(axis=(0, 1))
        self.scale_ = np.where(spread > 0, spread, 1.0).astype(np.float32)
        filters = tuple(int(f) for f in self.filters)
        if len(filters) != 3 or min(filters) < 1:
            message = f"CNNClassifier: filters must be three positive counts, got {self.filters!r}"
            raise ValueError(message)
        with _one_thread():
            torch.manual_seed(0 if self.random_state is None else int(self.random_state))
            self.net_ = NeuralNetClassifier(
                __getattr__("WindowNet"),
                module__n_channels=int(X.shape[2]),
                module__n_classes=len(self.classes_),
                module__filters=filters,
                max_epochs=int(self.max_epochs),
                lr=float(self.lr),
                batch_size=int(self.batch_size),
                optimizer=torch.optim.Adam,
                iterator_train__shuffle=True,
                train_split=None,  # every training window trains; calibration is mueval's
                device="cpu",
                verbose=0,
            )
            self.net_.fit(self._standardised(X), codes.astype(np.int64))
        return self

    def _standardised(self, X: np.ndarray) -> np.ndarray:
        return ((X - self.mean_) / self.scale_).astype(np.float32)

    def predict_proba(self, X: Any) -> np.ndarray:
        """Softmax probabilities, shape (n, len(classes_)), columns in ``classes_`` order."""
        X = self._windows(X)
        with _one_thread():
            return np.asarray(self.net_.predict_proba(self._standardised(X)), dtype=float)

    def predict(self, X: Any) -> np.ndarray:
        """The most probable class of each window."""
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]
