"""What the report's figures plot: the arrays behind their artists, checked against
the statistics computed here from the sets (not the pixels), and the PNG written in
one drawing pass against the one ``savefig`` writes."""

from __future__ import annotations

import io
from collections import Counter

import matplotlib
import matplotlib.image as mpimg
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.collections import LineCollection, PathCollection
from matplotlib.font_manager import FontProperties
from matplotlib.textpath import TextPath

from mueval.report import figures as F
from mueval.report import setstats as S

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
            S.confusion_matrix_colnorm(np.arange(300) % 5, np.arange(300) % 4, 5),
            CLASSES,
            title="t",
        ),
    ]
    for make in makers:
        reference = io.BytesIO()
        fig = make()
        fig.savefig(reference, format="png", dpi=100)
        plt.close(fig)
        (png,) = F.save_figure(make(), tmp_path / "figure")
        np.testing.assert_array_equal(
            mpimg.imread(png), mpimg.imread(io.BytesIO(reference.getvalue()))
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["figure.png"]
    paths = F.save_figure(makers[0](), tmp_path / "both", svg=True)
    assert [p.name for p in paths] == ["both.png", "both.svg"]
