"""RaMIA beyond text (mimirlib.samplers.modalities): the split, the models' signal, the image and tabular
range samplers against the ground truth, offline RMIA with per-row OUT references, and the
tuning of its a on the shadows alone."""

import inspect

import numpy as np
import pytest

from mimirlib.core import range_scores
from mimirlib.samplers import modalities
from mimirlib.samplers.modalities import ImageRanges, TableRanges


@pytest.fixture(scope="module")
def digits():
    return modalities.load_data()


def brute_contains_images(R: ImageRanges, rs, rows) -> np.ndarray:
    """Ground truth the slow way: every transform of every centre against every row."""
    out = []
    for c in rs.centres:
        images = np.stack([R.apply(c[None], t)[0] for t in R.transforms()])
        out.append(bool(np.any(np.all(np.isclose(images[:, None, :], rows[None, :, :], atol=1e-6), axis=2))))
    return np.array(out)


def brute_contains_tables(R: TableRanges, rs, rows) -> np.ndarray:
    lo, hi = R.population.min(axis=0), R.population.max(axis=0)
    out = []
    for c, mask in zip(rs.centres, rs.extra):
        hit = False
        for r in rows:
            if np.array_equal(r[~mask], c[~mask]) and np.all((r[mask] >= lo[mask]) & (r[mask] <= hi[mask])):
                hit = True
        out.append(hit)
    return np.array(out)


# ----------------------------------------------------------------------------- data and models


def test_split_is_disjoint_and_gives_target_and_shadows_the_same_size(digits):
    X, _ = digits
    sp = modalities.split_data(len(X), n_population=200, n_shadows=4, seed=3)
    parts = [sp.target_members, sp.target_nonmembers, sp.pool, sp.population]
    allrows = np.concatenate(parts)
    assert len(np.unique(allrows)) == len(allrows)  # disjoint
    assert len(sp.population) == 200
    sizes = sp.shadow_keep.sum(axis=1)
    assert set(sizes) == {len(sp.pool) // 2}
    assert abs(len(sp.target_members) - sizes[0]) <= 1
    assert not np.array_equal(sp.shadow_keep[0], sp.shadow_keep[1])  # random halves, not one half
    again = modalities.split_data(len(X), n_population=200, n_shadows=4, seed=3)
    assert np.array_equal(again.shadow_keep, sp.shadow_keep) and np.array_equal(again.pool, sp.pool)


def test_split_with_train_rows_trains_every_model_on_that_many_rows(digits):
    X, _ = digits
    assert len(X) == modalities.N_ROWS  # the chapter's check bounds train_rows with it
    half = (len(X) - 200) // 2
    sp = modalities.split_data(len(X), n_population=200, n_shadows=4, seed=3, train_rows=80)
    assert len(sp.target_members) == 80 and len(sp.target_nonmembers) == half - 80  # the rest are non-members
    assert set(sp.shadow_keep.sum(axis=1)) == {80} and len(sp.pool) == half
    allrows = np.concatenate([sp.target_members, sp.target_nonmembers, sp.pool, sp.population])
    assert len(np.unique(allrows)) == len(allrows)
    for bad in (0, half // 2 + 1, 2.5, True):
        with pytest.raises(ValueError, match="train_rows"):
            modalities.split_data(len(X), n_population=200, n_shadows=4, seed=3, train_rows=bad)
    assert modalities.split_data(
        len(X), n_population=200, n_shadows=4, seed=3, train_rows=half // 2
    ).target_members.size


@pytest.mark.parametrize("kw", [{"n_population": 0, "n_shadows": 4}, {"n_population": 10, "n_shadows": 1}])
def test_split_refuses_bad_sizes(kw):
    with pytest.raises(ValueError, match="n_population|n_shadows"):
        modalities.split_data(100, seed=0, **kw)


@pytest.mark.parametrize("arch", ["cnn", "mlp"])
def test_trained_model_scores_its_training_rows_higher(digits, arch):
    X, y = digits
    train, test = np.arange(0, 300), np.arange(300, 600)
    model = modalities.train_classifier(X[train], y[train], arch=arch, epochs=15, seed=0)
    lp_train, lp_test = modalities.log_prob(model, X[train], y[train]), modalities.log_prob(model, X[test], y[test])
    assert (lp_train <= 0).all() and lp_train.mean() > lp_test.mean()
    assert modalities.accuracy(model, X[test], y[test]) > 0.5
    # one label per range broadcasts over the range's samples
    block = np.stack([X[:5], X[5:10]], axis=1)  # (5, 2, 64)
    lp = modalities.log_prob(model, block, y[:5])
    assert lp.shape == (5, 2)
    assert np.allclose(lp[:, 0], modalities.log_prob(model, X[:5], y[:5]))
    assert np.allclose(lp[:, 1], modalities.log_prob(model, X[5:10], y[:5]))


def test_unknown_architecture_is_refused(digits):
    X, y = digits
    with pytest.raises(ValueError, match="architecture"):
        modalities.train_classifier(X[:10], y[:10], arch="resnet", epochs=1)


# ----------------------------------------------------------------------------- image ranges


def test_every_transform_of_t_has_its_inverse_in_t_for_the_exact_ones(digits):
    X, _ = digits
    R = ImageRanges()
    T = R.transforms()
    assert T[0] == (False, 0, 0, 0.0) and len(T) == 2 * 9 * 3
    for t in [t for t in T if t[3] == 0.0]:
        moved = R.apply(X[:20], t)
        back = np.stack([R.apply(moved, u) for u in T], axis=1)
        assert np.all(np.all(back == X[:20, None, :], axis=2).any(axis=1)), t


def test_image_samples_stay_inside_their_range_and_avoid_the_source(digits):
    X, y = digits
    R = ImageRanges(angles=(-15.0, 15.0))
    rng = np.random.default_rng(0)
    rs = R.build(X[:40], y[:40], rng)
    assert not np.any(np.all(rs.centres == rs.sources, axis=1))  # never centred on the source
    s = R.sample(rs, 10, rng, exclude_source=True)
    assert s.shape == (40, 10, 64)
    assert R.within(rs, s).all()
    assert not np.any(np.all(np.isclose(s, rs.sources[:, None, :]), axis=2))
    # something outside: a different digit is not in the range
    assert not R.within(rs, np.repeat(X[40:80, None, :], 1, axis=1)).any()
    # with the source allowed and every image drawn, the source is among them
    full = R.sample(rs, len(R.transforms()), rng, exclude_source=False)
    assert np.all(np.all(np.isclose(full, rs.sources[:, None, :]), axis=2).any(axis=1))
    with pytest.raises(ValueError, match="samples"):
        R.sample(rs, len(R.transforms()), rng, exclude_source=True)


def test_image_ground_truth_in_ranges_contain_their_member_out_ranges_no_training_image(digits):
    X, y = digits
    train, others = np.arange(0, 200), np.arange(200, 260)
    R = ImageRanges()
    rng = np.random.default_rng(1)
    rs_in = R.build(X[train[:30]], y[train[:30]], rng)
    rs_out = R.build(X[others], y[others], rng)
    assert R.contains(rs_in, X[train]).all()
    truth = brute_contains_images(R, rs_out, X[train])
    assert np.array_equal(R.contains(rs_out, X[train]), truth)
    assert not truth.any()  # no other digit is a flip/shift/rotation of a training digit here
    assert np.array_equal(R.contains(rs_in, X[train]), brute_contains_images(R, rs_in, X[train]))


def test_image_ranges_refuse_bad_settings():
    with pytest.raises(ValueError, match="shift"):
        ImageRanges(shift=8)
    with pytest.raises(ValueError, match="angles"):
        ImageRanges(angles=(0.0,))
    with pytest.raises(ValueError, match="flip or shift"):
        ImageRanges(flips=False, shift=0).build(np.zeros((2, 64)), np.zeros(2), np.random.default_rng(0))


# ----------------------------------------------------------------------------- tabular ranges


def test_table_samples_stay_inside_their_range_first_is_the_imputed_row(digits):
    X, y = digits
    R = TableRanges(X[1000:], hidden=8)
    rng = np.random.default_rng(0)
    rs = R.build(X[:50], y[:50], rng)
    assert (rs.extra.sum(axis=1) == 8).all()
    assert np.isin(np.flatnonzero(rs.extra.any(axis=0)), R.varying).all()  # only varying columns are hidden
    s = R.sample(rs, 20, rng, exclude_source=False)
    assert s.shape == (50, 20, 64)
    assert R.within(rs, s).all()
    assert np.array_equal(s[:, 0], R.point_queries(rs))
    assert np.array_equal(R.point_queries(rs)[rs.extra], np.broadcast_to(R.modes, rs.extra.shape)[rs.extra])
    # hidden values come from the population's values of that column
    for i in range(5):
        for j in np.flatnonzero(rs.extra[i]):
            assert set(s[i, 1:, j]) <= set(R.population[:, j])
    # a changed observed column leaves the range
    moved = s.copy()
    obs = np.argmax(~rs.extra, axis=1)
    moved[np.arange(50), 1, obs] += 1
    assert not R.within(rs, moved)[:, 1].any()
    ex = R.sample(rs, 20, rng, exclude_source=True)
    assert not np.any(np.all(ex == rs.sources[:, None, :], axis=2))


def test_table_ground_truth_in_ranges_contain_their_member_out_ranges_no_training_row(digits):
    X, y = digits
    train, others = np.arange(0, 300), np.arange(300, 360)
    R = TableRanges(X[1000:], hidden=8)
    rng = np.random.default_rng(2)
    rs_in = R.build(X[train[:30]], y[train[:30]], rng)
    rs_out = R.build(X[others], y[others], rng)
    assert R.contains(rs_in, X[train]).all()
    truth = brute_contains_tables(R, rs_out, X[train])
    assert np.array_equal(R.contains(rs_out, X[train]), truth)
    assert not truth.any()
    # a range with nearly everything hidden contains some training row: relabelled IN
    wide = TableRanges(X[1000:], hidden=len(R.varying))
    rs_wide = wide.build(X[others[:3]], y[others[:3]], rng)
    assert np.array_equal(wide.contains(rs_wide, X[train]), brute_contains_tables(wide, rs_wide, X[train]))


def test_a_training_row_outside_the_populations_bounds_on_an_observed_column_is_in_its_own_range(digits):
    # the bounds hold the hidden columns only: a member whose observed value the population never takes
    # (here 17, above the digits' 16) lies in the range built around it, and so do its range's samples
    X, y = digits
    R = TableRanges(X[1000:], hidden=8)
    rs = R.build(X[:20], y[:20], np.random.default_rng(3))
    rows = X[:20].copy()
    col = int(np.flatnonzero(~rs.extra[0])[0])
    rows[0, col] = 17.0
    rs.centres[0, col], rs.sources[0, col] = 17.0, 17.0
    assert R.contains(rs, rows)[0] and np.array_equal(R.contains(rs, rows), brute_contains_tables(R, rs, rows))
    samples = R.sample(rs, 5, np.random.default_rng(4), exclude_source=False)
    assert R.within(rs, samples)[0].all()
    outside = samples.copy()
    outside[0, 1, rs.extra[0]] = 17.0  # a hidden value beyond the bounds leaves the range
    assert not R.within(rs, outside)[0, 1]


def test_table_ranges_refuse_more_hidden_columns_than_vary():
    pop = np.zeros((10, 64))
    pop[:5, :3] = 1.0  # three columns vary
    with pytest.raises(ValueError, match="hidden"):
        TableRanges(pop, hidden=4)


# ----------------------------------------------------------------------------- offline RMIA


def test_rmia_with_every_reference_out_is_offline_rmia():
    rng = np.random.default_rng(0)
    own, refs = -rng.random(30), -rng.random((30, 3))
    z_own, z_refs = -rng.random(40), -rng.random((40, 3))
    got = modalities.rmia_scores(own, refs, np.ones((30, 3), bool), z_own, z_refs, a=0.4)
    assert np.allclose(got, range_scores.offline_rmia(own, refs, z_own, z_refs, a=0.4))


def test_rmia_uses_only_the_out_references_of_each_row():
    rng = np.random.default_rng(1)
    own, refs = -rng.random(12), -rng.random((12, 3))
    z_own, z_refs = -rng.random(20), -rng.random((20, 3))
    mask = rng.random((12, 3)) < 0.6
    mask[:, 0] |= ~mask.any(axis=1)
    got = modalities.rmia_scores(own, refs, mask, z_own, z_refs, a=0.7)
    for i in range(12):
        cols = mask[i]
        want = range_scores.offline_rmia(own[i : i + 1], refs[i : i + 1][:, cols], z_own, z_refs[:, cols], a=0.7)
        assert got[i] == pytest.approx(want[0])
    refs_changed = refs.copy()
    refs_changed[~mask] = -5.0  # an IN reference's value must not matter
    assert np.allclose(modalities.rmia_scores(own, refs_changed, mask, z_own, z_refs, a=0.7), got)
    mask[3] = False
    with pytest.raises(ValueError, match="no OUT reference"):
        modalities.rmia_scores(own, refs, mask, z_own, z_refs, a=0.7)


def test_a_tuning_reads_only_the_shadows():
    """Its parameters are the shadows' scores, their training masks, z and the grid: nothing of a target."""
    assert list(inspect.signature(modalities.tune_rmia_a).parameters) == [
        "pool_logps",
        "shadow_keep",
        "z_logps",
        "grid",
    ]


def test_a_tuning_finds_the_a_that_separates_the_shadows_members():
    rng = np.random.default_rng(0)
    k, n, m = 4, 200, 50
    keep = rng.random((k, n)) < 0.5
    hardness = rng.normal(-1.0, 0.5, n)  # some rows are hard for every model
    logps = np.minimum(hardness[None, :] + 0.4 * keep + 0.05 * rng.normal(size=(k, n)), 0.0)
    z = np.minimum(rng.normal(-1.0, 0.5, m)[None, :] + 0.05 * rng.normal(size=(k, m)), 0.0)
    a, table = modalities.tune_rmia_a(logps, keep, z, grid=[0.0, 0.5, 1.0])
    assert list(table.a) == [0.0, 0.5, 1.0] and a in (0.0, 0.5, 1.0)
    assert table.auc.max() > 0.7  # calibrating by the references removes the shared hardness
    assert table.set_index("a").auc[a] == table.auc.max()
    with pytest.raises(ValueError, match="shadows"):
        modalities.tune_rmia_a(logps[:1], keep[:1], z[:1])
