"""Smoke-and-structure tests for mimirlib.plots on the Agg backend."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure

from mimirlib import metrics as M
from mimirlib import plots as P


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
    assert a["zlib"] == b["zlib"] and a["my_new_attack"] == b["my_new_attack"]
    assert P.attack_palette(["Min-K++"])["Min-K++"] == P.attack_palette(["min_k++"])["min_k++"]
    assert P.attack_palette(["ref (AUC 0.70)"])["ref (AUC 0.70)"] == P.attack_palette(["ref"])["ref"]


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
    df = df[df.domain == "arxiv"]
    fig = P.plot_metric_vs(df, x="params", logx=True, title="AUC vs size")
    assert isinstance(fig, Figure) and len(fig.axes) == 1
    ax = fig.axes[0]
    assert len(ax.get_lines()) == 3 + 1  # attacks + chance line
    assert sum(isinstance(c, PolyCollection) for c in ax.collections) == 3  # CI bands
    assert ax.get_xscale() == "log"
    xs = ax.get_lines()[0].get_xdata()
    assert np.all(np.diff(xs) > 0)  # sorted along x


def test_plot_metric_vs_facets():
    df = _metric_df()
    fig = P.plot_metric_vs(df, x="params", col="domain", logx=True)
    assert len(fig.axes) == 2
    for ax in fig.axes:
        assert len(ax.get_lines()) == 3 + 1
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
