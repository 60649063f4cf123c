"""Every figure the report draws, drawn from a real run on the official gestures data,
measured with the renderer: no legend covers a data point, no two tick labels
overlap, and the class-by-class matrices have the true class down the rows.

The figures are the report's own: ``save_figure`` is wrapped so that each figure
the build writes is kept after it is written (the real function still writes it).
"""

from __future__ import annotations

import itertools
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import Collection, LineCollection
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle
from matplotlib.transforms import Bbox

import mueval
from mueval.report import figures as F
from mueval.report import setstats as S

#: Every figure of a report with ``figures="all"``, by the end of its file name.
FIGURE_KINDS = (
    "overview_coverage",
    "user_coverage_mm",
    "coverage_box_nb",
    "setsize_lollipop",
    "per_user_coverage_nb",
    "per_user_setsize_nb",
    *(
        f"_{kind}"
        for kind in (
            "cooccurrence_matrix",
            "cooccurrence_graph",
            "confusion",
            "confusion_zero_diagonal",
            "multiset",
            "inclusion",
            "comembership",
            "phi",
            "soft_confusion",
            "coverage_confusion",
        )
    ),
)


@pytest.fixture(scope="module")
def gestures_run(gestures_zip: Path, tmp_path_factory) -> mueval.Run:
    """Two iterations of two strategies and one classifier on gestures (20 classes,
    8 users): the smallest real run that has every kind of figure."""
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MUDATA_HOME", str(home))
        return mueval.evaluate(
            "gestures",
            strategies="mm,ucm",
            classifiers="nb",
            iterations=2,
            progress=False,
            manual_dir=gestures_zip.parent,
        )


@pytest.fixture(scope="module")
def drawn(gestures_run, tmp_path_factory) -> dict[str, Figure]:
    """Every figure the report writes (``figures="all"``), by file name, as written."""
    kept: dict[str, Figure] = {}
    real = F.save_figure

    def keep(fig, stem, **options):
        path = real(fig, stem, **options)
        kept[path.name] = fig
        return path

    out = tmp_path_factory.mktemp("report")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(F, "save_figure", keep)
        gestures_run.report(out / "r", figures="all", n_boot=10, jobs=1, progress=False)
    assert set(kept) == {p.name for p in (out / "r" / "figures").iterdir()}
    return kept


@pytest.fixture(scope="module")
def measured(drawn) -> dict[str, tuple[Figure, object]]:
    """Each figure drawn once more, on an Agg canvas, with the renderer that drew it."""
    return {name: (fig, _draw(fig)) for name, fig in drawn.items()}


def _points(ax) -> np.ndarray:
    """Display coordinates (pixels) of every data point the axes draw: line
    vertices, marker and collection offsets, segment ends, bar and image corners."""
    found = [np.zeros((0, 2))]
    for artist in ax.get_children():
        if not artist.get_visible():
            continue
        if isinstance(artist, Line2D):
            xy = artist.get_xydata()
            found.append(artist.get_transform().transform(xy[np.isfinite(xy).all(axis=1)]))
        elif isinstance(artist, LineCollection):
            for segment in artist.get_segments():
                found.append(artist.get_transform().transform(segment))
        elif isinstance(artist, Collection) and len(artist.get_offsets()):
            offsets = np.asarray(artist.get_offsets(), dtype=float)
            offsets = offsets[np.isfinite(offsets).all(axis=1)]
            found.append(artist.get_offset_transform().transform(offsets))
        elif isinstance(artist, Rectangle) and artist is not ax.patch:
            corners = artist.get_bbox().get_points()
            if np.isfinite(corners).all() and artist.get_width() and artist.get_height():
                found.append(artist.get_data_transform().transform(corners))
        elif isinstance(artist, AxesImage):
            x0, x1, y0, y1 = artist.get_extent()
            found.append(ax.transData.transform([(x0, y0), (x0, y1), (x1, y0), (x1, y1)]))
    return np.concatenate(found)


def _strictly_inside(box: Bbox, points: np.ndarray) -> np.ndarray:
    return (
        (points[:, 0] > box.x0)
        & (points[:, 0] < box.x1)
        & (points[:, 1] > box.y0)
        & (points[:, 1] < box.y1)
    )


def _draw(fig: Figure):
    """Draw ``fig`` on an Agg canvas (a written figure is closed: it has none) and
    return the renderer, whose measures are those of the drawing."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


def _legends(fig: Figure) -> list:
    return [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend() is not None)]


def test_the_report_draws_every_kind_of_figure(drawn):
    for kind in FIGURE_KINDS:
        assert any(name.removesuffix(".svg").endswith(kind) for name in drawn), kind


def test_no_legend_covers_a_data_point(measured):
    with_legend = 0
    for name, (fig, renderer) in measured.items():
        legends = _legends(fig)
        with_legend += bool(legends)
        for legend in legends:
            box = legend.get_window_extent(renderer)
            for ax in fig.axes:
                points = _points(ax)
                inside = _strictly_inside(box, points)
                assert not inside.any(), (name, points[inside][:3], box)
                # Outside the axes altogether, so no later point can land under it.
                if len(points):
                    assert not box.overlaps(ax.get_window_extent(renderer)), name
    # The figures with a legend were measured (a legend-free report proves nothing).
    assert with_legend >= 8


def test_no_two_tick_labels_overlap(measured):
    for name, (fig, renderer) in measured.items():
        for ax in fig.axes:
            for axis in ("x", "y"):
                labels = ax.get_xticklabels() if axis == "x" else ax.get_yticklabels()
                labels = [t for t in labels if t.get_visible() and t.get_text().strip()]
                boxes = [t.get_window_extent(renderer) for t in labels]
                for (a, ta), (b, tb) in itertools.combinations(zip(boxes, labels), 2):
                    assert not a.overlaps(b), (name, axis, ta.get_text(), tb.get_text())


def test_no_figure_has_a_title_by_default(drawn):
    for name, fig in drawn.items():
        assert not fig.get_suptitle(), name
        assert all(not ax.get_title() for ax in fig.axes), name


def test_matrices_have_the_true_class_down_the_rows(drawn, gestures_run):
    """The confusion matrix of the real run, from its predictions by hand: row t, the
    rows of true class t, as shares of them; soft and coverage confusion alike."""
    p = gestures_run.predictions
    p = p[(p.strategy == "ucm") & (p.classifier == "nb")]
    classes = sorted(gestures_run.classes, key=lambda c: int(c[1:]))  # n1, n2, ..., n20
    index = {c: i for i, c in enumerate(classes)}
    counts = np.zeros((len(classes), len(classes)))
    for t, q in zip(p.y_true, p.y_pred, strict=True):
        counts[index[t], index[q]] += 1
    fig = drawn["ucm_nb_confusion.svg"]
    ax = fig.axes[0]
    (image,) = ax.images
    np.testing.assert_allclose(
        image.get_array().filled(np.nan), counts / counts.sum(axis=1, keepdims=True)
    )
    assert (ax.get_ylabel(), ax.get_xlabel()) == ("true class", "predicted class")
    assert [t.get_text() for t in ax.get_yticklabels()] == classes
    for name, xlabel in (
        ("ucm_nb_confusion_zero_diagonal.svg", "predicted class"),
        ("ucm_nb_soft_confusion.svg", "predicted class b (mean probability)"),
        ("ucm_nb_coverage_confusion.svg", "class b in the set"),
    ):
        ax = drawn[name].axes[0]
        assert ax.get_ylabel().startswith("true class") and ax.get_xlabel() == xlabel, name


def test_confusion_orientation_on_three_rows_by_hand():
    """Two rows of class a, both predicted b, and one row of c predicted c: the cell
    (row a, column b) holds both of a's rows; the row of b, which has no row, is blank."""
    y_true, y_pred = np.array([0, 0, 2]), np.array([1, 1, 2])
    m = S.confusion_matrix_rows(y_true, y_pred, 3)
    np.testing.assert_array_equal(m[0], [0.0, 1.0, 0.0])
    assert np.isnan(m[1]).all()
    np.testing.assert_array_equal(m[2], [0.0, 0.0, 1.0])
    fig = F.confusion_figure(m, ["a", "b", "c"])
    ax = fig.axes[0]
    (image,) = ax.images
    assert image.get_array()[0, 1] == 1.0
    # Row 0 is drawn at the top, labelled a; column 1 is labelled b.
    assert ax.get_yticklabels()[0].get_text() == "a" and ax.get_xticklabels()[1].get_text() == "b"
    assert ax.get_ylim()[0] > ax.get_ylim()[1]  # y runs downwards: row 0 on top
    assert (ax.get_ylabel(), ax.get_xlabel()) == ("true class", "predicted class")
    # The coverage confusion of sets {b}, {b}, {c}: row a, column b again.
    sets = np.array([[False, True, False], [False, True, False], [False, False, True]])
    assert S.coverage_confusion(sets, y_true)[0, 1] == 1.0
    plt.close(fig)


def test_long_labels_are_wrapped_or_turned_upright():
    names = {"a": "a name far too long to sit flat under its box", "b": "short", "c": "x"}
    fig = F.coverage_boxplot_figure(
        {names[k]: np.linspace(0.9, 1.0, 5) for k in names}, target=0.95
    )
    renderer = _draw(fig)
    boxes = [t.get_window_extent(renderer) for t in fig.axes[0].get_xticklabels()]
    assert not any(a.overlaps(b) for a, b in itertools.combinations(boxes, 2))
    # Not simply because they were drawn flat with room to spare: they had to move.
    assert any(
        "\n" in t.get_text() or t.get_rotation() == 90 for t in fig.axes[0].get_xticklabels()
    )
    plt.close(fig)
