"""Smoke-and-structure tests for mimirlib.display.plots on the Agg backend."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure

from mimirlib.core import metrics as M
from mimirlib.display import plots as P


@pytest.fixture(autouse=True)
def _no_show_and_close(monkeypatch):
    def _boom(*a, **k):
        raise AssertionError("plots must never call plt.show")

    monkeypatch.setattr(plt, "show", _boom)
    P.set_style()
    yield
    plt.close("all")


def _curves(n_n=200):
    rng = np.random.default_rng(0)
    out = {}
    for name, shift in (("loss", 0.3), ("zlib", 0.6), ("min_k++", 1.0)):
        fpr, tpr, _ = M.roc(rng.normal(shift, 1, 150), rng.normal(0, 1, n_n))
        out[name] = (fpr, tpr)
    return out


def _real_lines(ax):
    return [ln for ln in ax.get_lines()]


def _metric_df():
    rows = []
    for attack in ("loss", "zlib", "ref"):
        for dom in ("arxiv", "github"):
            for size in (70e6, 160e6, 1.4e9):
                a = 0.5 + 0.02 * np.log10(size / 1e7) + (0.05 if attack == "ref" else 0)
                rows.append(dict(attack=attack, domain=dom, params=size, auc=a, auc_lo=a - 0.02, auc_hi=a + 0.02))
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- palette


def test_attack_palette_is_consistent_across_calls():
    a = P.attack_palette(["loss", "zlib", "my_new_attack"])
    b = P.attack_palette(["my_new_attack", "min_k", "zlib"])
    assert list(a) == ["loss", "zlib", "my_new_attack"]
    assert a["zlib"] == b["zlib"] and a["loss"] == P.attack_palette(["loss"])["loss"]
    assert P.attack_palette(["Min-K++"])["Min-K++"] == P.attack_palette(["min_k++"])["min_k++"]
    assert P.attack_palette(["min_k_pp"])["min_k_pp"] == P.attack_palette(["min_k++"])["min_k++"]
    assert P.attack_palette(["ref (AUC 0.70)"])["ref (AUC 0.70)"] == P.attack_palette(["ref"])["ref"]
    assert P.attack_palette(["ref:ref-disjoint-h128"])["ref:ref-disjoint-h128"] == P.attack_palette(["ref"])["ref"]


def test_attack_palette_gives_other_names_the_free_palette_colours_in_order():
    pal = P.attack_palette(["target-h32", "target-h64", "target-h64-sched69"])
    assert list(pal.values()) == P.PALETTE[:3]
    pal = P.attack_palette(["loss", "my_new_attack"])  # loss holds blue: the newcomer takes the next one
    assert pal["my_new_attack"] == P.PALETTE[1]
    two_refs = P.attack_palette(["ref:a", "ref:b"])  # two references of one attack stay apart
    assert two_refs["ref:a"] == P.attack_palette(["ref"])["ref"] and two_refs["ref:b"] != two_refs["ref:a"]


def test_attack_palette_distinct_within_a_call():
    names = [
        "loss",
        "ref",
        "zlib",
        "min_k",
        "min_k++",
        "ne",
        "gradnorm",
        "recall",
        "dc_pdd",
        "baseline",
        "foo",
        "bar",
        "baz",
        "qux",
    ]
    pal = P.attack_palette(names)
    assert len(set(pal.values())) == len(names)


# ----------------------------------------------------------------------------- ROC


@pytest.mark.parametrize("log", [False, True])
def test_plot_roc(log):
    curves = _curves(n_n=200)
    fig = P.plot_roc(curves, log=log, title="t")
    assert isinstance(fig, Figure)
    assert len(fig.axes) == 1
    ax = fig.axes[0]
    assert len(_real_lines(ax)) == len(curves) + 1  # curves + chance diagonal
    assert len(ax.get_legend().get_texts()) == len(curves)
    if log:
        assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
        assert ax.get_xlim()[0] == pytest.approx(1 / 200)  # smallest resolvable FPR
    else:
        assert ax.get_xscale() == "linear"
    colours = P.attack_palette(curves)
    for ln in _real_lines(ax)[: len(curves)]:
        assert matplotlib.colors.to_rgb(ln.get_color()) == pytest.approx(colours[ln.get_label()])


def test_plot_roc_on_given_ax_and_bad_input():
    fig, ax = plt.subplots()
    assert P.plot_roc(_curves(), ax=ax) is fig
    with pytest.raises(ValueError, match="curves"):
        P.plot_roc({"x": ([0, 1], [0, 0.5, 1])})
    with pytest.raises(ValueError, match="curves"):
        P.plot_roc({})


def test_plot_roc_panels():
    curves = _curves()
    fig = P.plot_roc_panels(curves, title="ROC")
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    lin, log = fig.axes
    assert lin.get_xscale() == "linear" and log.get_xscale() == "log"
    for ax in fig.axes:
        assert len(_real_lines(ax)) == len(curves) + 1


# ----------------------------------------------------------------------------- histograms


def test_plot_score_hist():
    rng = np.random.default_rng(1)
    scores = {
        "members": rng.normal(1, 1, 300),
        "non-members": rng.normal(0, 1, 300),
        "modified members": rng.normal(0.5, 1, 200),
    }
    fig = P.plot_score_hist(scores, xlabel="-NLL", title="loss")
    assert isinstance(fig, Figure) and len(fig.axes) == 1
    ax = fig.axes[0]
    assert len(ax.get_lines()) == 3  # one KDE per group
    assert len(ax.get_legend().get_texts()) == 3
    assert ax.get_xlabel() == "-NLL"


def test_plot_score_hist_degenerate_group_and_errors():
    fig, ax = plt.subplots()
    out = P.plot_score_hist({"a": [1.0, 1.0, 1.0], "b": np.linspace(0, 2, 50)}, ax=ax, kde=True)
    assert out is fig
    assert len(ax.get_lines()) == 1  # no KDE for a constant group
    with pytest.raises(ValueError, match="'a'"):
        P.plot_score_hist({"a": []})


# ----------------------------------------------------------------------------- metric vs x


def test_plot_metric_vs_single_axes():
    df = _metric_df()
    df = df[(df.domain == "arxiv") & (df.attack != "ref")]
    fig = P.plot_metric_vs(df, x="params", logx=True, title="AUC vs size")
    assert isinstance(fig, Figure) and len(fig.axes) == 1
    ax = fig.axes[0]
    assert len(ax.get_lines()) == 2 + 1  # attacks + chance line
    assert sum(isinstance(c, PolyCollection) for c in ax.collections) == 2  # CI bands (two series)
    assert ax.get_xscale() == "log"
    xs = ax.get_lines()[0].get_xdata()
    assert np.all(np.diff(xs) > 0)  # sorted along x


def test_plot_metric_vs_facets():
    df = _metric_df()
    fig = P.plot_metric_vs(df, x="params", col="domain", logx=True)
    assert len(fig.axes) == 2
    for ax in fig.axes:  # three series: error bars instead of bands
        assert len(ax.containers) == 3 and not any(isinstance(c, PolyCollection) for c in ax.collections)
    assert len(fig.legends) == 1


def test_plot_metric_vs_categorical_x_and_no_band():
    df = pd.DataFrame(
        {
            "attack": ["loss"] * 3 + ["zlib"] * 3,
            "split": ["ngram_7_0.2", "ngram_13_0.2", "ngram_13_0.8"] * 2,
            "auc": [0.52, 0.55, 0.6, 0.51, 0.54, 0.58],
        }
    )
    fig = P.plot_metric_vs(df, x="split", chance=None)
    ax = fig.axes[0]
    assert len(ax.get_lines()) == 2
    assert not any(isinstance(c, PolyCollection) for c in ax.collections)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["ngram_7_0.2", "ngram_13_0.2", "ngram_13_0.8"]


def test_plot_metric_vs_errors():
    df = _metric_df()
    with pytest.raises(ValueError, match="rows share"):
        P.plot_metric_vs(df, x="params")  # two domains per (attack, params) without col=
    with pytest.raises(ValueError, match="missing"):
        P.plot_metric_vs(df, x="nope", col="domain")
    _, ax = plt.subplots()
    with pytest.raises(ValueError, match="ax"):
        P.plot_metric_vs(df, x="params", col="domain", ax=ax)


# ----------------------------------------------------------------------------- heatmap


def test_plot_heatmap():
    df = _metric_df()
    piv = df[df.params == 1.4e9].pivot(index="attack", columns="domain", values="auc")
    fig = P.plot_heatmap(piv, title="AUC")
    assert isinstance(fig, Figure)
    assert len(fig.axes) == 2  # heatmap + colour bar
    assert len(fig.axes[0].texts) == piv.size  # one annotation per cell
    fig2, ax = plt.subplots()
    assert P.plot_heatmap(piv, ax=ax) is fig2
    with pytest.raises(ValueError, match="df_pivot"):
        P.plot_heatmap(pd.DataFrame({"a": ["x", "y"]}))


# ----------------------------------------------------------------------------- readability checks
# Measured on the drawn figure, independently of mimirlib.display.plots' own layout code.

# Machado, Oliveira & Fernandes (2009), severity 1.0, applied to linear RGB.
_CVD = {
    "deuteranopia": np.array(
        [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]]
    ),
    "protanopia": np.array(
        [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]]
    ),
}


def _lab(linear_rgb):
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ linear_rgb
    t = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(t > (6 / 29) ** 3, np.cbrt(t), t / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def _delta_e(a, b) -> float:
    """Smallest CIELAB distance (CIE76) of two colours under normal vision, deuteranopia, protanopia."""
    lin = [
        np.where((c := np.asarray(matplotlib.colors.to_rgb(x))) <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
        for x in (a, b)
    ]
    views = [(lin[0], lin[1])] + [(np.clip(m @ lin[0], 0, 1), np.clip(m @ lin[1], 0, 1)) for m in _CVD.values()]
    return min(float(np.linalg.norm(_lab(u) - _lab(v))) for u, v in views)


def _shown_tick_labels(axis):
    lo, hi = sorted(axis.get_view_interval())
    span = max(hi - lo, 1e-12)
    out = []
    for locs, ticks in (
        (axis.get_majorticklocs(), axis.get_major_ticks),
        (axis.get_minorticklocs(), axis.get_minor_ticks),
    ):
        for loc, tick in zip(locs, ticks(len(locs))):
            if lo - 1e-9 * span <= loc <= hi + 1e-9 * span:
                out += [t for t in (tick.label1, tick.label2) if t.get_visible() and t.get_text().strip()]
    return out


def _overlapping_pairs(texts, renderer):
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in texts]
    return [(a, b) for i, (a, ba) in enumerate(boxes) for b, bb in boxes[i + 1 :] if ba.overlaps(bb)]


def _draw(fig):
    """Draw as a display would (a closed figure gets an Agg canvas) and return the renderer."""
    if not hasattr(fig.canvas, "get_renderer"):
        FigureCanvasAgg(fig)
    fig.canvas.draw()
    return fig.canvas.get_renderer()


def _axes_of(fig):
    return [ax for ax in fig.axes if ax.get_visible() and ax.axison]


def tick_label_overlaps(fig) -> list:
    r = _draw(fig)
    return [
        (ax.get_title(), p)
        for ax in _axes_of(fig)
        for axis in (ax.xaxis, ax.yaxis)
        for p in _overlapping_pairs(_shown_tick_labels(axis), r)
    ]


def text_collisions(fig) -> list:
    """Titles, axis labels and tick labels of one axes overlapping those of another."""
    r = _draw(fig)
    per_ax = []
    for ax in _axes_of(fig):
        texts = [t for t in (ax.title, ax.xaxis.label, ax.yaxis.label) if t.get_text()]
        per_ax.append(texts + _shown_tick_labels(ax.xaxis) + _shown_tick_labels(ax.yaxis))
    out = []
    for i, a in enumerate(per_ax):
        for b in per_ax[i + 1 :]:
            out += [
                (x.get_text(), y.get_text())
                for x in a
                for y in b
                if x.get_window_extent(r).overlaps(y.get_window_extent(r))
            ]
    return out


def _legends(fig):
    return [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None] + list(fig.legends)


def legend_problems(fig) -> list:
    """Legend entries overlapping each other (run-together), or a legend over another panel."""
    r = _draw(fig)
    out = []
    for leg in _legends(fig):
        out += _overlapping_pairs([t for t in leg.get_texts() if t.get_text()], r)
        box = leg.get_window_extent(r)
        owner = leg.axes
        out += [
            ("legend over", ax.get_title())
            for ax in _axes_of(fig)
            if ax is not owner and ax.get_window_extent(r).overlaps(box)
        ]
    return out


def legends_over_data(fig) -> list:
    """Data points of an axes hidden under that axes' own legend."""
    r = _draw(fig)
    out = []
    for ax in _axes_of(fig):
        leg = ax.get_legend()
        if leg is None:
            continue
        box = leg.get_window_extent(r)
        for line in ax.get_lines():
            c = matplotlib.colors.to_rgb(line.get_color())
            if max(c) - min(c) < 0.05 and 0.3 < c[0] < 0.9:  # a grey reference line (chance), not data
                continue
            xy = line.get_transform().transform(np.asarray(line.get_xydata(), dtype=float))
            inside = (xy[:, 0] > box.x0) & (xy[:, 0] < box.x1) & (xy[:, 1] > box.y0) & (xy[:, 1] < box.y1)
            if inside.any():
                out.append((ax.get_title(), line.get_label(), int(inside.sum())))
    return out


def _handle_style(h):
    if hasattr(h, "lines"):  # an errorbar container
        h = h.lines[0]
    if hasattr(h, "get_linestyle") and hasattr(h, "get_color"):
        return matplotlib.colors.to_rgb(h.get_color()), str(h.get_linestyle())
    return matplotlib.colors.to_rgb(h.get_edgecolor() if h.get_fill() is False else h.get_facecolor()), "patch"


def series_colour_problems(fig) -> list:
    """Per legend: series colours outside PALETTE (grey excepted), two entries alike, or two
    palette colours a colour-blind reader could confuse (CIELAB distance < 15)."""
    out = []
    for leg in _legends(fig):
        styles = [_handle_style(h) for h in leg.legend_handles]
        if len(set(styles)) < len(styles):
            out.append(("alike", styles))
        colours = list(dict.fromkeys(c for c, _ in styles))
        for c in colours:
            grey = max(c) - min(c) < 0.05
            if not grey and not any(np.allclose(c, p, atol=0.02) for p in P.PALETTE):
                out.append(("not in the palette", c))
        out += [("close", a, b) for i, a in enumerate(colours) for b in colours[i + 1 :] if _delta_e(a, b) < 15]
    return out


def unlabelled_axes(fig) -> list:
    _draw(fig)
    out = []
    for ax in _axes_of(fig):
        if _shown_tick_labels(ax.xaxis) and not ax.get_xlabel().strip():
            out.append(("x", ax.get_title()))
        if _shown_tick_labels(ax.yaxis) and not ax.get_ylabel().strip():
            out.append(("y", ax.get_title()))
    return out


def assert_readable(fig):
    assert tick_label_overlaps(fig) == []
    assert text_collisions(fig) == []
    assert legend_problems(fig) == []
    assert legends_over_data(fig) == []
    assert series_colour_problems(fig) == []
    assert unlabelled_axes(fig) == []


def test_the_checks_catch_the_books_old_defects():
    """The checks fail on what the book showed before: EngFormatter ticks '537.472k 1.1241M ...',
    attack names run together under a heatmap, three near-identical oranges, an unlabelled axis."""
    fig, ax = plt.subplots(figsize=(3.0, 2.5))
    sizes = [537_472, 1_124_100, 2_900_000, 7_260_000]
    ax.plot(sizes, [0.5, 0.6, 0.55, 0.7])
    ax.set_xscale("log")
    ax.set_xticks(sizes)
    ax.xaxis.set_major_formatter(matplotlib.ticker.EngFormatter(sep=""))
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    assert tick_label_overlaps(fig) and unlabelled_axes(fig)
    fig, ax = plt.subplots(figsize=(3.0, 2.0))
    ax.set_xticks(range(5), ["loss", "min_k", "min_k_pp", "ref", "zlib"])
    assert tick_label_overlaps(fig)
    fig, ax = plt.subplots()
    import seaborn as sns

    for k, c in enumerate(sns.color_palette("colorblind", 6)[1::2]):  # orange, vermillion, brown
        ax.plot([0, 1], [k, k], color=c, label=f"s{k}")
    ax.legend()
    assert any(p[0] == "close" for p in series_colour_problems(fig))
    fig, ax = plt.subplots()  # the old lab-curves legend, drawn over the lines
    for k in range(4):
        ax.plot(np.linspace(0, 1, 50), np.linspace(0, 1, 50) + 0.02 * k, label=f"model {k}")
    ax.legend(loc="center")
    assert legends_over_data(fig)


def test_palette_is_colour_blind_safe():
    first = P.PALETTE[:4]
    assert min(_delta_e(a, b) for i, a in enumerate(first) for b in first[i + 1 :]) >= 25
    assert len(set(P.PALETTE)) == len(P.PALETTE) == 8
    book = P.attack_palette(["loss", "ref", "zlib", "min_k", "min_k_pp", "ne", "baseline"])
    cs = list(book.values())
    assert min(_delta_e(a, b) for i, a in enumerate(cs) for b in cs[i + 1 :]) >= 15
    assert all(c in P.PALETTE for c in cs)


def test_human_number_axis_and_score_labels():
    assert [P.human_number(v) for v in (0, 4, 1024, 32768, 537_472, 1_124_100, 7.26e6, 999_999, 1.2e9)] == [
        "0",
        "4",
        "1k",
        "33k",
        "537k",
        "1.1M",
        "7.3M",
        "1M",
        "1.2B",
    ]
    assert P.axis_label("params") == "model size (parameters)" and P.axis_label("auc") == "AUC"
    assert P.axis_label("something else") == "something else"
    assert "nats" in P.score_label("loss") and P.score_label("min_k_pp").startswith("min_k_pp score:")
    assert P.score_label("new_attack") == "new_attack score"


def test_score_plots_refuse_more_than_four_distributions():
    groups = {f"g{i}": np.arange(10.0) + i for i in range(5)}
    for plot in (P.plot_score_hist, P.plot_score_ecdf):
        with pytest.raises(ValueError, match="at most 4"):
            plot(groups)
        fig = plot(dict(list(groups.items())[:4]))
        assert len(fig.axes[0].get_legend().get_texts()) == 4


def test_histogram_legend_sits_above_the_bars():
    rng = np.random.default_rng(0)
    fig = P.plot_score_hist({k: rng.normal(i, 1, 200) for i, k in enumerate(["a", "b", "c", "d"])})
    r = _draw(fig)
    ax = fig.axes[0]
    legend_bottom = ax.transData.inverted().transform(ax.get_legend().get_window_extent(r).p0)[1]
    assert ax.dataLim.y1 < legend_bottom


def test_many_series_get_error_bars_and_markers_not_bands():
    df = _metric_df()
    df = pd.concat([df, df.assign(attack=df.attack + "_2")])
    fig = P.plot_metric_vs(df[df.domain == "arxiv"], x="params", logx=True)
    ax = fig.axes[0]
    assert not any(isinstance(c, PolyCollection) for c in ax.collections)
    assert len(ax.containers) == 6 and len({c.lines[0].get_marker() for c in ax.containers}) == 6


# Every kind of figure the book draws, on data shaped like the lab's (sizes, names, counts).
_DOMAINS = ["code", "licenses", "math", "docs", "encyclopedia", "changelog"]
_ATTACKS = ["loss", "ref", "zlib", "min_k", "min_k_pp", "ne"]


def _grid(rng, **axes):
    keys = list(axes)
    rows = [dict(zip(keys, combo)) for combo in pd.MultiIndex.from_product(list(axes.values()))]
    for r in rows:
        r["auc"] = a = float(rng.uniform(0.45, 0.8))
        r["auc_lo"], r["auc_hi"] = a - 0.1, a + 0.1
    return pd.DataFrame(rows)


def _book_figures():
    from mimirlib.experiments import lab as L
    from mimirlib.experiments import modified_members as MM
    from mimirlib.experiments import ngram_overlap as NO
    from mimirlib.experiments import ramia as R
    from mimirlib.experiments.ramia import aggregation as RA
    from tests.test_experiments_modified_members import make_run

    rng = np.random.default_rng(0)
    sizes = [537_472, 1_124_100, 2_900_000, 7_260_000]
    tokens = [s * 4096 for s in (131, 262, 1000, 2000, 3000, 4000, 5000, 6000)]
    names = [
        "target-h32",
        "target-h64",
        "target-h128",
        "target-h256",
        "target-h64-natural",
        "target-h64-sched69",
        "epochs-1x-h64",
        "epochs-2x-h64",
        "epochs-4x-h64",
        "epochs-8x-h64",
        "epochs-8x-h64-ref",
        "ref-disjoint-h128",
    ]
    curves = pd.DataFrame(
        [
            dict(model=m, tokens=t, split=s, loss=7 - 0.1 * i)
            for m in names
            for i, t in enumerate(np.geomspace(1024, 4e6, 8))
            for s in ("train", "heldout")
        ]
    )
    roc = {a: M.roc(rng.normal(0.2 * k, 1, 150), rng.normal(0, 1, 150))[:2] for k, a in enumerate(_ATTACKS)}
    overlaps = pd.DataFrame(
        [dict(domain=d, n=n, overlap=v) for d in _DOMAINS for n in (4, 7, 13) for v in rng.beta(1, 8, 20)]
    )
    dec = pd.DataFrame(
        [
            {"domain": d, "set": s, "overlap": v}
            for d in _DOMAINS
            for s in ("all held-out", "kept (13-gram <= 80%)")
            for v in rng.beta(1, 8, 20)
        ]
    )
    gain = pd.DataFrame(
        rng.uniform(-0.1, 0.15, (3, 5)),
        index=pd.Index(["changelog", "code", "math"], name="domain"),
        columns=pd.Index(["loss", "min_k", "min_k_pp", "ref", "zlib"], name="attack"),
    )
    f6 = _grid(rng, backbone=["LOSS", "RMIA"], method=["RaMIA", "MIA (exact text)"], **{"range size d": [4, 8, 16, 32]})
    dens = _grid(rng, backbone=["LOSS", "RMIA"], **{"training-text density": [0.0, 0.1, 0.2, 0.5, 1.0]})
    sweep = _grid(
        rng,
        backbone=["LOSS", "RMIA"],
        trim=["drop the lowest", "drop the highest"],
        **{"share trimmed": [0, 0.25, 0.5, 0.75]},
    )
    corr = R.Correlation(
        pd.DataFrame({"backbone": ["LOSS", "RMIA"], "r": [0.4, float("nan")]}),
        {b: (rng.uniform(0, 100, 30), rng.uniform(0, 100, 30)) for b in ("LOSS", "RMIA")},
    )
    res = pd.DataFrame(
        [
            {
                "backbone": b,
                "method": m,
                "iteration": i,
                "auc": rng.uniform(0.5, 1),
                "tpr@1%fpr": 1.0,
                "tpr@0.1%fpr": 1.0,
            }
            for b in ("LOSS", "RMIA")
            for m in RA.METHODS
            for i in range(3)
        ]
    )
    y = np.r_[np.ones(20, bool), np.zeros(20, bool)]
    scores = {b: {"centre": rng.normal(y, 1), RA.RAMIA: [rng.normal(y, 1)]} for b in ("loss", "rmia")}
    agg = R.Aggregation(res, None, None, scores, type("G", (), {"y": y})(), None, ["loss", "rmia"])
    shift = _grid(
        rng,
        attack=_ATTACKS[:5] + ["baseline"],
        benchmark=["natural", "temporal_2020", "temporal_2021", "temporal_2022-23"],
    )
    return {
        "auc vs size": lambda: P.plot_metric_vs(
            _grid(rng, attack=_ATTACKS, domain=_DOMAINS, params=sizes), x="params", col="domain", logx=True
        ),
        "reference ablation": lambda: P.plot_metric_vs(
            _grid(rng, attack=["ref:ref-disjoint-h128", "ref:small-h32"], params=sizes), x="params", logx=True
        ),
        "roc panels": lambda: P.plot_roc_panels(roc, title="target-h256 on code"),
        "by step": lambda: P.plot_metric_vs(
            _grid(rng, target=names[:4], attack=_ATTACKS[:5], tokens=tokens),
            x="tokens",
            hue="target",
            col="attack",
            logx=True,
        ),
        "recency": lambda: P.plot_metric_vs(
            _grid(rng, target=names[:3], attack=_ATTACKS[:5], steps_before_end=[0, 250, 500, 750, 1000]),
            x="steps_before_end",
            hue="target",
            col="attack",
        ),
        "epochs": lambda: P.plot_metric_vs(_grid(rng, attack=_ATTACKS[:5], epochs=[1, 2, 4, 8]), x="epochs", logx=True),
        "temporal shift": lambda: P.plot_metric_vs(
            shift, x="benchmark", title="target-h256: natural non-members, then later ones"
        ),
        "temporal overlap": lambda: P.plot_score_ecdf(
            {k: rng.beta(1, 9, 40) for k in ("natural", "temporal_2020", "temporal_2021", "temporal_2022-23")},
            xlabel="7-gram overlap with the training data",
            title="non-members: natural vs later-dated",
        ),
        "audit scores": lambda: P.plot_score_hist(
            {"members": rng.normal(1, 1, 40), "non-members": rng.normal(0, 1, 40)}, xlabel="ref:ref-disjoint-h32 score"
        ),
        "ecdf": lambda: P.plot_score_ecdf(
            {k: rng.beta(1, 9, 40) for k in ("natural", "temporal_2020")}, xlabel="overlap"
        ),
        "gain heatmap": lambda: P.plot_heatmap(
            gain, center=0.0, cbar_label="AUC gain", title="target-h32: AUC(7-gram <= 20%) - AUC(natural)"
        ),
        "lab curves": lambda: L.curves_figure(curves),
        "modified members": lambda: MM.distribution_figure(make_run()),
        "ngram overlap": lambda: NO.overlap_figure(overlaps),
        "decontamination": lambda: NO.decontamination_figure(dec),
        "ramia trims": lambda: R.Trims({}, sweep, 10, 10, "epochs-4x-h16-ref").figure(),
        "ramia roc": agg.roc_figure,
        "ramia aggregators": agg.aggregator_figure,
        "ramia size": lambda: R.SizeSweep(f6, pd.DataFrame(), 10, 10, 5).figure(),
        "ramia density": lambda: R.Density(dens, pd.DataFrame(), 0.1).figure(),
        "ramia correlation": corr.figure,
    }


@pytest.mark.parametrize("name", list(_book_figures()))
def test_every_book_figure_is_readable(name):
    fig = _book_figures()[name]()
    assert_readable(fig)
    for ax in fig.axes:  # at most four distributions overlaid on a panel
        if any(isinstance(p, matplotlib.patches.Polygon) for p in ax.patches) or ax.get_ylabel().startswith("density"):
            assert len(ax.get_legend().get_texts()) <= P.MAX_OVERLAID


def test_a_curve_on_fewer_texts_starts_at_its_own_resolution_on_log_axes():
    from mimirlib.core import metrics

    rng = np.random.default_rng(0)
    curves = {
        "loss": metrics.roc(rng.normal(0.3, 1, 150), rng.normal(0, 1, 150))[:2],
        "ne": metrics.roc(rng.normal(0.3, 1, 25), rng.normal(0, 1, 25))[:2],
    }
    ax = P.plot_roc(curves, log=True).axes[0]
    lines = {ln.get_label(): ln for ln in _real_lines(ax)}
    assert ax.get_xlim()[0] == pytest.approx(1 / 150)
    assert min(lines["ne"].get_xdata()) == pytest.approx(1 / 25)  # not drawn from the axis's edge
    assert min(lines["loss"].get_xdata()) == pytest.approx(1 / 150)
    linear = P.plot_roc(curves, log=False).axes[0]
    assert min({ln.get_label(): ln for ln in _real_lines(linear)}["ne"].get_xdata()) == 0.0
