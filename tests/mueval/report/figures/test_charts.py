"""What the report's figures plot: the arrays behind their artists, checked against
the statistics computed here from the sets (not the pixels), and the PNG written in
one drawing pass against the one ``savefig`` writes."""

from __future__ import annotations

import dataclasses
import io
from collections import Counter

import matplotlib
import matplotlib.image as mpimg
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import LineCollection, PathCollection
from matplotlib.font_manager import FontProperties
from matplotlib.textpath import TextPath

import mueval
from mueval.report import figures as F
from mueval.report import setstats as S
from mueval.report.run_sections import per_user_tables
from mueval.runfolder import RunFolder, RunFolderError
from mueval.runfolder.arrays import pair_rows

CLASSES = ["a", "b", "c", "d", "e"]


def random_sets(seed: int, n: int = 300, k: int = 5) -> np.ndarray:
    rng = np.random.default_rng(seed)
    # Few distinct sets, so that counts tie; some empty sets too.
    pool = rng.random((9, k)) < 0.35
    pool[0] = False
    return pool[rng.integers(0, len(pool), size=n)]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(("top", "min_count"), [(20, 1), (4, 1), (20, 40)])
def test_multiset_chart_plots_the_most_frequent_sets(seed, top, min_count):
    z = random_sets(seed)
    # The reference: Counter's order (most frequent first, ties by first occurrence).
    freq = Counter(map(tuple, z.astype(np.int8)))
    shown = [(s, f) for s, f in freq.most_common() if f >= min_count][:top]
    fig = F.multiset_figure(z, CLASSES, title="t", top=top, min_count=min_count)
    ax_bar, ax_dot = fig.axes
    heights = [p.get_height() for p in ax_bar.patches]
    np.testing.assert_array_equal(heights, [f / len(z) for _, f in shown])
    assert [t.get_text() for t in ax_bar.texts] == [str(f) for _, f in shown]
    title = ax_bar.get_title()
    assert f"{len(shown)} most frequent of {len(freq)} distinct sets" in title
    assert f"covering {sum(f for _, f in shown)} of {len(z)} rows" in title
    # Black dots: (column, class) of every member of every shown set.
    grey, black = [c for c in ax_dot.collections if isinstance(c, PathCollection)]
    expected = {(x, i) for x, (s, _) in enumerate(shown) for i in np.flatnonzero(s)}
    assert {tuple(map(int, xy)) for xy in black.get_offsets()} == expected
    assert len(grey.get_offsets()) == len(shown) * len(CLASSES)
    # One span per non-empty set, from its first to its last member.
    (spans,) = [c for c in ax_dot.collections if isinstance(c, LineCollection)]
    found = sorted(
        (int(seg[0][0]), int(min(seg[:, 1])), int(max(seg[:, 1]))) for seg in spans.get_segments()
    )
    want = sorted(
        (x, int(np.flatnonzero(s).min()), int(np.flatnonzero(s).max()))
        for x, (s, _) in enumerate(shown)
        if any(s)
    )
    assert found == want
    empties = [x for x, (s, _) in enumerate(shown) if not any(s)]
    assert [round(t.get_position()[0]) for t in ax_dot.texts] == empties
    labels = [t.get_text() for t in ax_dot.get_xticklabels()]
    assert labels == [str(sum(s)) for s, _ in shown]
    plt.close(fig)


def test_multiset_chart_of_no_rows_is_empty_not_an_error():
    fig = F.multiset_figure(np.zeros((0, 3), bool), CLASSES[:3], title="t")
    assert not fig.axes[0].patches
    assert "0 most frequent of 0 distinct sets" in fig.axes[0].get_title()
    plt.close(fig)


@pytest.mark.parametrize("seed", [0, 3])
def test_cooccurrence_graph_draws_one_edge_per_pair_with_its_count(seed):
    counts = S.cooccurrence_matrix(random_sets(seed))
    fig = F.cooccurrence_graph_figure(counts, CLASSES, title="t")
    (ax,) = fig.axes
    (edges,) = [c for c in ax.collections if isinstance(c, LineCollection)]
    k = len(CLASSES)
    angles = np.pi / 2 - 2 * np.pi * np.arange(k) / k
    xy = np.column_stack([np.cos(angles), np.sin(angles)])
    top = counts.max()
    want = {}
    for i in range(k):
        for j in range(i + 1, k):
            if counts[i, j] > 0:
                want[(i, j)] = 0.5 + 9.5 * counts[i, j] / top
    found = {}
    for seg, width in zip(edges.get_segments(), edges.get_linewidths(), strict=True):
        i = int(np.argmin(np.linalg.norm(xy - seg[0], axis=1)))
        j = int(np.argmin(np.linalg.norm(xy - seg[1], axis=1)))
        found[(min(i, j), max(i, j))] = width
    assert found.keys() == want.keys()
    for pair, width in want.items():
        assert found[pair] == pytest.approx(width)
    # Node sizes: the weighted degree.
    (nodes,) = [c for c in ax.collections if isinstance(c, PathCollection)]
    degree = counts.sum(axis=1)
    np.testing.assert_allclose(nodes.get_sizes(), 60 + 1400 * degree / degree.max())
    plt.close(fig)


def test_heatmap_shows_the_matrix_with_undefined_cells_masked():
    m = S.phi_matrix(random_sets(4)).phi
    m[0, 1] = np.nan
    fig = F.heatmap_figure(m, CLASSES, title="t", xlabel="x", ylabel="y", cbar_label="c")
    (image,) = fig.axes[0].images
    shown = image.get_array()
    np.testing.assert_array_equal(shown.mask, ~np.isfinite(m))
    np.testing.assert_array_equal(shown.filled(np.nan), m)
    # The printed values: one glyph outline per finite cell, at its centre, the
    # outline of the value's two-decimal text.
    (glyphs,) = [c for c in fig.axes[0].collections if isinstance(c, PathCollection)]
    rows, cols = np.nonzero(np.isfinite(m))
    np.testing.assert_array_equal(glyphs.get_offsets(), np.column_stack([cols, rows]))
    for path, value in zip(glyphs.get_paths(), m[rows, cols], strict=True):
        want = TextPath((0, 0), f"{value:.2f}", prop=FontProperties(size=7))
        centre = want.get_extents().get_points().mean(axis=0)
        np.testing.assert_allclose(path.vertices, want.vertices - centre)
    plt.close(fig)


def test_heatmap_values_as_text_print_the_same_strings_in_the_same_colours():
    """For SVG copies the values stay text: the same strings, cells and colours
    as the glyph outlines."""
    m = S.comembership_rate(random_sets(6))
    m[2, 3] = np.nan
    kw = {"title": "t", "xlabel": "x", "ylabel": "y", "cbar_label": "c"}
    fig = F.heatmap_figure(m, CLASSES, values_as_text=True, **kw)
    texts = fig.axes[0].texts
    rows, cols = np.nonzero(np.isfinite(m))
    assert [t.get_text() for t in texts] == [f"{v:.2f}" for v in m[rows, cols]]
    assert [tuple(map(round, t.get_position())) for t in texts] == list(zip(cols, rows))
    assert not [c for c in fig.axes[0].collections if isinstance(c, PathCollection)]
    outlines = F.heatmap_figure(m, CLASSES, **kw)
    (glyphs,) = [c for c in outlines.axes[0].collections if isinstance(c, PathCollection)]
    np.testing.assert_array_equal(
        [matplotlib.colors.to_rgba(t.get_color()) for t in texts], glyphs.get_facecolors()
    )
    plt.close("all")


def test_heatmap_prints_no_values_for_a_large_matrix_unless_asked():
    m = np.linspace(0, 1, 13 * 13).reshape(13, 13)
    names = [f"c{i}" for i in range(13)]
    fig = F.heatmap_figure(m, names, title="t", xlabel="x", ylabel="y", cbar_label="c")
    assert not [c for c in fig.axes[0].collections if isinstance(c, PathCollection)]
    fig = F.heatmap_figure(
        m, names, title="t", xlabel="x", ylabel="y", cbar_label="c", annotate=True
    )
    (glyphs,) = [c for c in fig.axes[0].collections if isinstance(c, PathCollection)]
    assert len(glyphs.get_paths()) == 13 * 13
    # Dark text on light cells, light text on dark cells (viridis: 0 dark, 1 light).
    faces = glyphs.get_facecolors()
    assert tuple(faces[0][:3]) == (1.0, 1.0, 1.0) and tuple(faces[-1][:3]) == (0.0, 0.0, 0.0)
    plt.close("all")


def test_the_png_written_in_one_pass_has_the_pixels_savefig_writes(tmp_path):
    z = random_sets(5)
    makers = [
        lambda: F.multiset_figure(z, CLASSES, title="t"),
        lambda: F.confusion_figure(
            S.confusion_matrix_rows(np.arange(300) % 5, np.arange(300) % 4, 5),
            CLASSES,
            title="t",
        ),
    ]
    for make in makers:
        reference = io.BytesIO()
        fig = make()
        fig.savefig(reference, format="png", dpi=100)
        plt.close(fig)
        png = F.save_figure(make(), tmp_path / "figure", fmt="png", dpi=100)
        np.testing.assert_array_equal(
            mpimg.imread(png), mpimg.imread(io.BytesIO(reference.getvalue()))
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["figure.png"]


def test_figures_are_svg_by_default_the_same_bytes_each_time_and_pdf_or_png_on_request(
    tmp_path,
):
    z = random_sets(5)
    svg = F.save_figure(F.multiset_figure(z, CLASSES), tmp_path / "a")
    again = F.save_figure(F.multiset_figure(z, CLASSES), tmp_path / "b")
    assert svg.name == "a.svg" and svg.read_bytes()[:5] == b"<?xml"
    # No date, fixed ids: the same figure gives the same file (a paper's build diffs).
    assert svg.read_bytes() == again.read_bytes()
    # Text stays text: the class names are in the file, not outlines.
    assert ">a</text>" in svg.read_text(encoding="utf-8") or ">a<" in svg.read_text(
        encoding="utf-8"
    )
    pdf = F.save_figure(F.multiset_figure(z, CLASSES), tmp_path / "c", fmt="pdf")
    assert pdf.name == "c.pdf" and pdf.read_bytes()[:5] == b"%PDF-"
    png = F.save_figure(F.multiset_figure(z, CLASSES), tmp_path / "d", fmt="png")
    height, width = mpimg.imread(png).shape[:2]
    # 300 dpi unless asked: the figure's size in inches times 300.
    w_in, h_in = F.multiset_figure(z, CLASSES).get_size_inches()
    assert (width, height) == (round(w_in * 300), round(h_in * 300))
    plt.close("all")
    with pytest.raises(ValueError, match="figure format must be one of svg, pdf, png, not 'jpg'"):
        F.save_figure(F.multiset_figure(z, CLASSES), tmp_path / "e", fmt="jpg")
    with pytest.raises(ValueError, match="dpi must be a whole number from 10 to 2400, not 0"):
        F.save_figure(F.multiset_figure(z, CLASSES), tmp_path / "e", fmt="png", dpi=0)
    plt.close("all")


def _hostile_frame(seed: int = 0) -> pd.DataFrame:
    """Three users of 90 rows, a fourth with two rows (one test row per split), a
    class ("hop") whose few rows sit inside "walk" so that it is never predicted;
    classes overlap, so that at alpha = 0.4 many sets are empty."""
    rng = np.random.default_rng(seed)
    parts = []
    for user in (1, 2, 3):
        for c, label in enumerate(("sit", "walk", "run")):
            part = pd.DataFrame(rng.normal(c * 1.0, 1.2, (30, 3)), columns=["a", "b", "c"])
            part.insert(0, "label", label)
            part.insert(0, "userid", user)
            parts.append(part)
    parts.append(
        pd.DataFrame(
            {"userid": [4, 4], "label": ["run", "run"], "a": [2.0, 2.5], "b": [2.0, 1.0]}
            | {"c": [2.0, 0.5]}
        )
    )
    hop = pd.DataFrame(rng.normal(1.0, 1.2, (6, 3)), columns=["a", "b", "c"])
    hop.insert(0, "label", "hop")
    hop.insert(0, "userid", 2)
    parts.append(hop)
    return pd.concat(parts, ignore_index=True)


@pytest.fixture(scope="module")
def hostile_run() -> RunFolder:
    run = mueval.evaluate(
        _hostile_frame(),
        strategies="mm,uim,ucm",
        classifiers="nb",
        iterations=2,
        alpha=0.4,
        small_cal="full-set",  # user 4 calibrates UCM on one row
        progress=False,
    )
    folder = run.folder()
    p = folder.predictions
    # The run is as hostile as meant: else the test below would prove less.
    assert (p.set_size == 0).any()
    assert "hop" in set(p.y_true) and "hop" not in set(p.y_pred)
    one = p[(p.strategy == "uim") & (p.userid == "4")]
    assert one.groupby("iteration").size().tolist() == [1, 1]
    return folder


def _pairs(run: RunFolder) -> dict[tuple[str, str], np.ndarray]:
    groups = run.predictions.groupby(["strategy", "classifier"], sort=False)
    return {(str(s), str(c)): rows for (s, c), rows in groups.indices.items()}


@pytest.mark.parametrize(("metric", "column"), [("coverage", "covered"), ("setsize", "set_size")])
def test_per_user_tables_from_the_splits_equal_the_predictions(hostile_run, metric, column):
    """The per-user figures read splits.parquet (MM, which has no per-user split,
    its predictions): each user's mean and SD over iterations, as grouped here
    from the test rows of each (strategy, classifier, user, iteration)."""
    cov, size = per_user_tables(hostile_run, _pairs(hostile_run))
    found = {"coverage": cov, "setsize": size}[metric]
    p = hostile_run.predictions
    per_it = p.groupby(["strategy", "classifier", "userid", "iteration"])[column].mean()
    want = per_it.astype(float).groupby(level=[0, 1, 2]).agg(["mean", "std", "count"])
    found = found.set_index(["strategy", "classifier", "user"]).sort_index()
    want.index.names = found.index.names
    want = want.sort_index()
    assert list(found.index) == list(want.index)
    # Up to the rounding of a mean (the run sums in its own order).
    np.testing.assert_allclose(found["value"], want["mean"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(found["sd"], want["std"], rtol=0, atol=1e-12)  # NaN: 1 iteration
    np.testing.assert_array_equal(found["n"], want["count"])
    assert found.loc[("mm", "nb", "4"), "n"] == 1  # MM drew user 4 in one iteration


def test_per_user_figure_plots_each_users_value_and_circles_those_below(hostile_run):
    cov, _ = per_user_tables(hostile_run, _pairs(hostile_run))
    cov = cov.assign(strategy_label=cov.strategy)
    target = 0.6
    fig = F.per_user_figure(cov, title="t", ylabel="y", target=target)
    (ax,) = fig.axes
    users = sorted(set(cov.user), key=int)
    assert [t.get_text() for t in ax.get_xticklabels()] == users
    circles = [c for c in ax.collections if isinstance(c, PathCollection)]
    for container, circled, s in zip(
        ax.containers, circles, dict.fromkeys(cov.strategy), strict=True
    ):
        want = cov[cov.strategy == s].set_index("user").reindex(users)["value"].to_numpy()
        x, y = container.lines[0].get_data()
        np.testing.assert_array_equal(np.asarray(y, float), want)
        below = want < target
        np.testing.assert_array_equal(circled.get_offsets()[:, 1], want[below])
        np.testing.assert_allclose(circled.get_offsets()[:, 0], np.asarray(x)[below])
    plt.close(fig)


def _set_matrix_row_by_row(classes: list[str], pred_sets: pd.Series) -> np.ndarray:
    """Indicators of the prediction sets, one row and one member at a time."""
    out = np.zeros((len(pred_sets), len(classes)), dtype=bool)
    for r, members in enumerate(pred_sets):
        for name in members:
            out[r, classes.index(name)] = True
    return out


def test_the_run_folders_set_matrix_and_class_indices_equal_a_row_by_row_decoding(
    hostile_run,
):
    sets = hostile_run.predictions["pred_set"]
    want = _set_matrix_row_by_row(hostile_run.classes, sets)
    assert want.any() and not want.all()
    np.testing.assert_array_equal(hostile_run.set_matrix(sets), want)
    labels = hostile_run.predictions["y_true"]
    np.testing.assert_array_equal(
        hostile_run.class_indices(labels), [hostile_run.classes.index(n) for n in labels]
    )
    np.testing.assert_array_equal(hostile_run.set_matrix(sets.iloc[:0]), np.zeros((0, 4), bool))
    forged = sets.copy()
    forged.iloc[5] = np.array(["sit", "jump"], dtype=object)
    forged.iloc[7] = np.array(["leap", "sit"], dtype=object)
    # The first unknown name in row order is the one named.
    with pytest.raises(RunFolderError, match="prediction set holds 'jump'"):
        hostile_run.set_matrix(forged)
    with pytest.raises(RunFolderError, match=r"found \['jump', 'leap'\]"):
        hostile_run.class_indices(pd.Series(["sit", "leap", "jump", "leap"]))


def _phi_like(seed: int, title: str | None, *, nan: bool = True) -> plt.Figure:
    m = np.random.default_rng(seed).uniform(-1, 1, (5, 5))
    if nan:
        m[0, 0] = np.nan
    marks = np.zeros((5, 5), bool)
    marks[1, 2] = marks[2, 1] = True
    return F.heatmap_figure(
        m,
        CLASSES,
        title=title,
        xlabel="class j",
        ylabel="class i",
        cbar_label="phi",
        cmap="RdBu_r",
        vmin=-1.0,
        vmax=1.0,
        marks=marks,
        marks_label="never share a set",
        nan_label="undefined",
    )


@pytest.mark.parametrize(
    ("fmt", "first", "second"),
    [
        ("png", "Phi\nfirst pair", "Phi\nsecond"),
        # The report's default: SVG, no title (titles of one height on 72 dpi
        # text metrics differ by a fraction of a point, and then solve their own).
        ("svg", None, None),
    ],
)
def test_a_heat_map_on_a_settled_layout_has_the_pixels_constrained_layout_gives(
    tmp_path, fmt, first, second
):
    def read(path):
        return mpimg.imread(path) if fmt == "png" else path.read_bytes()

    def save(fig, stem):
        return F.save_figure(fig, tmp_path / stem, fmt=fmt, dpi=100)

    F.clear_layouts()
    save(_phi_like(0, first), "first")
    assert F.layout_counts() == {"reused": 0, "solved": 1}
    reused = save(_phi_like(1, second), "reused")
    assert F.layout_counts() == {"reused": 1, "solved": 1}
    F.clear_layouts()
    fresh = save(_phi_like(1, second), "fresh")
    assert F.layout_counts() == {"reused": 0, "solved": 1}
    np.testing.assert_array_equal(read(reused), read(fresh))
    # Another shape (no undefined cell: the legend differs) solves its own.
    save(_phi_like(2, second, nan=False), "other")
    assert F.layout_counts() == {"reused": 0, "solved": 2}
    # A title wider than the matrix widens the margins: constrained layout again.
    save(_phi_like(3, "Phi\n" + "a title wider than the matrix " * 3), "wide")
    assert F.layout_counts() == {"reused": 0, "solved": 3}


def test_pair_rows_hold_the_pairs_sets_labels_and_probabilities(hostile_run):
    """The arrays a section is drawn from (made once for the run, sliced per pair)
    equal a row-by-row decoding of the pair's rows."""
    for rows in _pairs(hostile_run).values():
        sub = hostile_run.predictions.iloc[rows]
        got = pair_rows(hostile_run, rows)
        classes = hostile_run.classes
        np.testing.assert_array_equal(got.sets, _set_matrix_row_by_row(classes, sub["pred_set"]))
        np.testing.assert_array_equal(got.y, [classes.index(n) for n in sub["y_true"]])
        np.testing.assert_array_equal(got.yp, [classes.index(n) for n in sub["y_pred"]])
        np.testing.assert_array_equal(got.proba, np.stack(list(sub["proba"])))
        assert list(got.users) == list(sub["userid"]) and got.n_iterations == 2
    preds = hostile_run.predictions.copy()
    preds.loc[preds.index[3], "proba"] = np.array([0.5, 0.5])
    forged = dataclasses.replace(hostile_run, predictions=preds)
    strategy = preds["strategy"].iloc[3]
    with pytest.raises(
        RunFolderError, match=f"proba of {strategy}/nb: expected vectors of length 4"
    ):
        pair_rows(forged, np.arange(len(preds)))


@pytest.mark.parametrize("fmt", ["svg", "pdf"])
def test_the_vector_file_written_in_one_pass_is_the_one_savefig_writes(tmp_path, fmt):
    def make():
        return F.coverage_boxplot_figure(
            {
                "MM (mixed)": np.linspace(0.9, 1, 20),
                "UCM (user-calibrated)": np.linspace(0.92, 0.99, 20),
            },
            target=0.95,
            comparisons=[("MM (mixed)", "UCM (user-calibrated)", "ns")],
        )

    reference = io.BytesIO()
    fig = make()
    settings = {"svg.fonttype": "none", "pdf.fonttype": 42, "svg.hashsalt": "mueval"}
    with matplotlib.rc_context(settings):
        date = {"svg": {"Date": None}, "pdf": {"CreationDate": None}}[fmt]
        fig.savefig(reference, format=fmt, metadata=date)
    plt.close(fig)
    written = F.save_figure(make(), tmp_path / "figure", fmt=fmt)
    assert written.read_bytes() == reference.getvalue()
