"""Verdicts read over several lab draws: the pooling of a unit by hand, the rule that decided each draw
deciding over them, the Q test, and the command on builds made of glued records."""

import json
import re
from dataclasses import asdict

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from mimirlib import verdicts
from mimirlib.book import draws as cli
from mimirlib.core import power
from mimirlib.verdicts import INCONCLUSIVE, NOT_TESTED, PARTLY, REPRODUCED, Claim, Effect, Tally, tally
from mimirlib.verdicts import draws
from tests.test_scorecard import executed

CLAIM = Claim("Bigger models leak more", source="MIMIR §3.1", key="size", paper_effect=0.02)
Z = power.Z_TWO_SIDED


def effect(est, half, label, seed_sd=None, seeds=1, averaged=1, group=""):
    return Effect(est, est - half, est + half, seed_sd, seeds, label, averaged, group)


def record(v: verdicts.Verdict) -> dict:
    """A verdict as the scorecard reads it back from an executed chapter (JSON)."""
    return json.loads(json.dumps(asdict(v)))


def test_a_unit_is_pooled_as_the_docstring_says():
    # by hand: each interval +/- 0.02 is se 0.02 / 1.96; the mean's se is sqrt(2) x that / 2
    a = effect(0.02, 0.02, "code/loss", seed_sd=0.01, seeds=3, averaged=3, group="code")
    b = effect(0.04, 0.02, "code/loss", seed_sd=0.02, seeds=3, averaged=3, group="code")
    p = draws.pool_unit([a, b])
    se = (2**0.5) * (0.02 / Z) / 2
    assert p.estimate == pytest.approx(0.03)
    assert (p.lo, p.hi) == pytest.approx((0.03 - Z * se, 0.03 + Z * se))
    assert p.seed_sd == pytest.approx(((0.01**2 + 0.02**2) / 2) ** 0.5)
    assert (p.n_seeds, p.averaged, p.label, p.group) == (6, 6, "code/loss", "code")
    assert p.seed_se == pytest.approx(p.seed_sd / 6**0.5)
    assert draws.pool_unit([a]).seed_sd == 0.01 and draws.pool_unit([effect(0.1, 0.01, "x")]).seed_sd is None
    with pytest.raises(ValueError):
        draws.pool_unit([])


def test_a_tallied_verdict_records_its_units_and_one_draw_reads_as_itself():
    eff = [effect(0.05, 0.02, "a"), effect(0.01, 0.02, "b"), effect(0.04, 0.01, "c", seed_sd=0.01, seeds=3)]
    v = CLAIM.tallied(tally(eff), "e", "r", n="150")
    assert v.decision == "tally" and len(v.units) == 3 and v.claimed_sign == 1
    one = draws.read_over_draws([record(v)]).verdict
    assert (one.verdict, one.power, one.mde) == (v.verdict, v.power, pytest.approx(v.mde))
    assert one.decision == "tally" and one.key == "size"


def test_two_draws_of_the_same_size_decide_what_one_leaves_inside_the_noise():
    eff = [effect(0.015, 0.016, u) for u in "abcd"]  # each interval reaches below 0
    v = CLAIM.tallied(tally(eff), "e", "r")
    assert v.verdict == INCONCLUSIVE
    over = draws.read_over_draws([record(v), record(v)])
    assert over.verdict.verdict == REPRODUCED  # +/- 0.016 / sqrt(2): every unit clear
    assert (over.q, over.df, over.p) == (0.0, 4, 1.0)
    assert "read over 2 lab draws" in over.verdict.evidence and over.verdict.n.startswith("2 draws")


def test_a_claim_read_on_its_pooled_mean_is_read_so_over_the_draws():
    eff = [effect(0.008, 0.02, u, group=u) for u in "abc"]  # pooled z 1.36 in one draw, 2.35 over three
    v = CLAIM.pooled(tally(eff), "e", "r")
    assert v.decision == "pooled" and v.verdict == INCONCLUSIVE
    over = draws.read_over_draws([record(v)] * 3).verdict
    assert over.verdict == PARTLY and "Pooled (claimed direction)" in over.evidence  # the tally alone: inconclusive
    assert decide_tally_of(over) == INCONCLUSIVE


def decide_tally_of(v) -> str:
    return verdicts.decide_tally(tally([Effect(**u) for u in v.units]))


def test_q_by_hand_flags_draws_that_disagree_beyond_their_noise():
    se = 0.01
    up, down = (CLAIM.tallied(tally([effect(s * 0.05, Z * se, "a")]), "e", "r") for s in (1, -1))
    over = draws.read_over_draws([record(up), record(down)])
    assert over.q == pytest.approx(2 * (0.05 / se) ** 2) and over.df == 1 and over.p < 1e-9
    assert over.verdict.verdict == INCONCLUSIVE  # the mean, 0, is inside the noise
    unit = over.verdict.units[0]  # widened sqrt(50): se sqrt(2) x 0.01 / 2 x 7.07 = 0.05
    assert unit["hi"] == pytest.approx(Z * 0.05) and "widened 7.07x" in over.verdict.evidence


@pytest.mark.parametrize("q, df, widen", [(50.0, 1, 50**0.5), (3.0, 3, 1.0), (1.0, 3, 1.0), (0.0, 0, 1.0)])
def test_widening_only_where_the_draws_differ_beyond_their_noise(q, df, widen):
    assert draws.widening(q, df) == pytest.approx(widen)
    with pytest.raises(ValueError, match="widen"):
        draws.pool_unit([effect(0.1, 0.01, "a")], widen=0.5)


def test_claims_not_decided_on_unit_effects_are_not_read_over_the_draws():
    plain = verdicts.Verdict("c", REPRODUCED, "e", "r", key="k")
    assert plain.decision == "" and plain.units == ()
    o = draws.read_over_draws([record(plain), record(plain)])
    assert o.verdict is None and o.why == "its rule does not tally unit effects"
    tallied = CLAIM.tallied(tally([effect(0.05, 0.01, "a")]), "e", "r")
    pooled = CLAIM.pooled(tally([effect(0.05, 0.01, "a")]), "e", "r")
    assert "differently" in draws.read_over_draws([record(tallied), record(pooled)]).why
    untested = CLAIM.not_tested("no model")
    o = draws.read_over_draws([record(tallied), record(untested)])
    assert o.verdict is None and o.why == "not decided on its units in every draw (draw 1: not tested)"
    assert untested.verdict == NOT_TESTED


def test_a_tally_of_readings_made_another_way_publishes_no_units():
    inside = effect(0.001, 0.01, "a")  # inside the noise, but counted "for" by some other reading
    v = CLAIM.tallied(Tally(1, 0, 0, (inside,)), "e", "r")
    assert v.decision == "" and v.units == ()
    with pytest.raises(ValueError, match="decision"):
        verdicts.Verdict("c", REPRODUCED, "e", "r", decision="vote")


def test_the_command_reads_builds_of_several_draws(tmp_path, capsys):
    near = CLAIM.tallied(tally([effect(0.015, 0.016, u) for u in "abcd"]), "e", "r")
    other = verdicts.Verdict("A blind classifier separates", REPRODUCED, "e", "r", key="blind")
    for d in ("d0", "d1"):
        (tmp_path / d).mkdir()
        executed(tmp_path / d / "main_results.ipynb", [near, other], "main_results")
    assert cli.main([str(tmp_path / "d0"), str(tmp_path / "d1")]) == 0
    out = capsys.readouterr().out
    assert "size" in out and "[0] inconclusive (underpowered) | [1] inconclusive (underpowered)" in out
    assert "=> over the draws: reproduced" in out
    assert "blind" in out and "not read over the draws" in out
    assert "papers' claims decided per draw: 1, 1 of 2" in out
    assert (
        "1 of 2 papers' claims read over the draws: 1 decided over the draws; the other 1 keep their per-draw " in out
    )
    assert "1 decided the same in every draw, 0 undecided in every draw, 0 not the same in every draw (none)" in out
    # pooled over two identical draws (no widening): each unit 0.015, se 0.00577, on shared texts (they move together):
    # all four clear again when the new estimate exceeds 0.0113: Phi((0.015 - 0.0113) / (sqrt(2) 0.00577)) = 0.675
    share = re.search(r"a new set of as many draws would repeat about (\d+)% of the 1 papers' claims decided", out)
    assert share and int(share.group(1)) == pytest.approx(67.5, abs=3)


@pytest.mark.parametrize("args", [["only-one"], ["missing-a", "missing-b"]])
def test_the_command_names_a_bad_argument_and_exits_2(tmp_path, capsys, args):
    (tmp_path / "only-one").mkdir()
    assert cli.main([str(tmp_path / a) for a in args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mimirlib.book.draws: error: ") and err.count("\n") == 1


def test_a_skewed_interval_pools_side_by_side_so_more_draws_never_undecide_a_unit():
    skewed = [Effect(0.01, 0.001, 0.05, label=u) for u in "abcd"]  # clear, its interval not centred
    one = draws.pool_unit(skewed[:1])  # one draw pools to itself
    assert (one.estimate, one.lo, one.hi) == pytest.approx((0.01, 0.001, 0.05)) and one.seed_sd is None
    v = CLAIM.tallied(tally(skewed), "e", "r")
    assert v.verdict == REPRODUCED
    for k in (1, 2, 3):
        assert draws.read_over_draws([record(v)] * k).verdict.verdict == REPRODUCED, k


def test_the_seed_part_of_a_mean_over_unequal_designs_by_hand():
    a = effect(0.05, 0.01, "u", seed_sd=0.02, seeds=3, averaged=3)
    b = effect(0.05, 0.01, "u", seed_sd=0.02, seeds=1, averaged=1)
    p = draws.pool_unit([a, b])
    assert p.seed_se == pytest.approx(((0.02**2 / 3 + 0.02**2 / 1) ** 0.5) / 2)
    c = effect(0.05, 0.01, "u")  # no replicates: counts with the others' spread
    assert draws.pool_unit([a, c]).seed_se == pytest.approx(((0.02**2 / 3 + 0.02**2) ** 0.5) / 2)


def test_an_exact_unit_adds_nothing_to_q_and_repeated_units_are_refused():
    tie = Effect(0.0, 0.0, 0.0, label="tie")
    up, down = (CLAIM.tallied(tally([effect(s * 0.05, Z * 0.01, "a"), tie]), "e", "r") for s in (1, -1))
    q, df, _ = draws.heterogeneity([record(up), record(down)])
    assert (q, df) == (pytest.approx(50.0), 1)
    twice = CLAIM.tallied(tally([effect(0.05, 0.01, "a"), effect(0.04, 0.01, "a")]), "e", "r")
    o = draws.read_over_draws([record(twice), record(twice)])
    assert o.verdict is None and o.why == "a draw has the same unit twice (a)"
    same_label = CLAIM.tallied(
        tally([effect(0.05, 0.01, "a", group="x"), effect(0.04, 0.01, "a", group="y")]), "e", "r"
    )
    assert draws.read_over_draws([record(same_label)] * 2).verdict.verdict == REPRODUCED  # two units: label and group


def test_two_sets_of_draws_are_compared_as_two_builds_are(tmp_path, capsys):
    near = CLAIM.tallied(tally([effect(0.015, 0.016, u) for u in "abcd"]), "e", "r")  # reproduced over 2 draws
    against = CLAIM.tallied(tally([effect(-0.05, 0.01, u) for u in "abcd"]), "e", "r")
    other = verdicts.Verdict("A blind classifier separates", REPRODUCED, "e", "r", key="blind")
    unsure = verdicts.Verdict("A blind classifier separates", INCONCLUSIVE, "e", "r", key="blind")
    builds = {"a0": [near, other], "a1": [near, other], "b0": [against, other], "b1": [against, unsure]}
    for d, records in builds.items():
        (tmp_path / d).mkdir()
        executed(tmp_path / d / "main_results.ipynb", records, "main_results")
    diff = cli.compare_sets([tmp_path / "a0", tmp_path / "a1"], [tmp_path / "b0", tmp_path / "b1"])
    rows = diff.set_index("key")
    assert (rows.loc["size", "verdict_old"], rows.loc["size", "verdict_new"]) == (REPRODUCED, "not reproduced")
    assert rows.loc["blind", "verdict_old"] == REPRODUCED and pd.isna(rows.loc["blind", "verdict_new"])
    assert (
        cli.main([str(tmp_path / "a0"), str(tmp_path / "a1"), "--against", str(tmp_path / "b0"), str(tmp_path / "b1")])
        == 0
    )
    out = capsys.readouterr().out
    assert "blind" in out and "reproduced | no single reading" in out
    assert "0 of 2 claims decided by either set read the same in both (0%)" in out
    assert "1 opposite, 1 decided in one build only" in out


def test_each_pair_of_draws_is_compared_as_two_builds_are(tmp_path, capsys):
    near = CLAIM.tallied(tally([effect(0.015, 0.016, u) for u in "abcd"]), "e", "r")  # undecided in each draw
    other = verdicts.Verdict("A blind classifier separates", REPRODUCED, "e", "r", key="blind")
    unsure = verdicts.Verdict("A blind classifier separates", INCONCLUSIVE, "e", "r", key="blind")
    for d, records in {"d0": [near, other], "d1": [near, other], "d2": [near, unsure]}.items():
        (tmp_path / d).mkdir()
        executed(tmp_path / d / "main_results.ipynb", records, "main_results")
    assert cli.main([str(tmp_path / d) for d in ("d0", "d1", "d2")]) == 0
    out = capsys.readouterr().out
    assert "read the same: [0] v [1] 1/1 100%, [0] v [2] 0/1 0%, [1] v [2] 0/1 0% (mean 33%)" in out


@pytest.mark.parametrize(
    "args,match",
    [
        (["3"], "give two or more different seeds"),
        (["3", "3"], "give two or more different seeds"),
        (["x", "3"], "draw 'x': a lab draw is a seed"),
        (["0", "-1"], "draw -1: a lab draw is a seed"),
        (["0", "1", "--profile", "paper"], "no embedded lab"),
        (["0", "1", "--jobs", "0"], "--jobs 0"),
        (["0", "1", "--against", "a", "b"], "--against reads folders already built"),
    ],
)
def test_building_draws_checks_every_draw_before_building_any(monkeypatch, capsys, args, match):
    monkeypatch.setattr(cli, "build_draws", lambda *a: pytest.fail("built before every draw was checked"))
    assert cli.main(["--build", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mimirlib.book.draws: error: ") and err.count("\n") == 1 and match in err


def test_building_draws_runs_each_draw_then_reads_them(tmp_path, monkeypatch, capsys):
    import mimirlib.runner as runner

    near = CLAIM.tallied(tally([effect(0.015, 0.016, u) for u in "abcd"]), "e", "r")
    calls = []

    def fake_run(argv):  # mimir-run --all --draw N: the chapters of that draw in its folder
        calls.append(argv)
        d = tmp_path / "book" / "draws" / f"draw-{argv[-1]}"
        d.mkdir(parents=True)
        executed(d / "main_results.ipynb", [near], "main_results")
        return 1 if argv[-1] == "9" else 0

    monkeypatch.setattr(runner, "main", fake_run)
    monkeypatch.setattr(runner, "REPO_ROOT", tmp_path)
    assert cli.main(["--build", "0", "3", "--profile", "smoke", "--jobs", "2"]) == 0
    assert calls == [["--all", "--profile", "smoke", "--jobs", "2", "--draw", d] for d in ("0", "3")]
    out = capsys.readouterr().out
    assert "2 draws: [0] " in out and "=> over the draws: reproduced" in out
    assert (tmp_path / "book" / "draws" / "reading.txt").read_text() == out
    # a draw whose run fails stops the build, naming it; the draws before it keep their chapters
    assert cli.main(["--build", "4", "9", "--profile", "smoke"]) == 1
    assert "error: draw 9: mimir-run --all --draw 9 exited 1" in capsys.readouterr().err
    assert (tmp_path / "book" / "draws" / "draw-4" / "main_results.ipynb").is_file()


def test_replication_is_the_chance_a_new_draw_decides_the_same_by_hand():
    # one unit, se 0.01 (no seeds): a new draw's estimate ~ N(e, 2 se^2); clear for the claim when it exceeds Z se
    se, root2 = 0.01, 2**0.5
    near = record(CLAIM.tallied(tally([effect(Z * se + root2 * se, Z * se, "u")]), "e", "r"))
    assert near["verdict"] == REPRODUCED and near["decision"] == "tally"
    assert draws.replication(near, n_sim=4000) == pytest.approx(0.8413, abs=0.02)  # Phi(1)
    # inside the noise, a bit below the bar: the same when the new estimate stays within +/- Z se
    inside = record(CLAIM.tallied(tally([effect(Z * se - root2 * se, Z * se, "u")]), "e", "r"))
    assert inside["verdict"] == INCONCLUSIVE
    assert draws.replication(inside, n_sim=4000) == pytest.approx(0.8413 - 0.0382, abs=0.02)  # Phi(1) - Phi(-1.77)
    # exactly at the bar: a coin toss; far beyond it: always
    assert draws.replication(record(CLAIM.tallied(tally([effect(Z * se, Z * se, "u")]), "e", "r")), 4000) == (
        pytest.approx(0.5, abs=0.03)
    )
    far = [effect(0.2, 0.02, f"u{i}") for i in range(4)]
    assert draws.replication(record(CLAIM.tallied(tally(far), "e", "r"))) == 1.0
    # the same seed gives the same share; a record its rule did not decide on units has none
    assert draws.replication(near, n_sim=300, seed=1) == draws.replication(near, n_sim=300, seed=1)
    assert draws.replication(record(CLAIM.verdict(REPRODUCED, "e", "r"))) is None
    assert draws.replication({**near, "decision": ""}) is None


def test_replication_moves_units_as_their_power_reading_pools_them():
    # an average claim, 2 units at 0.012 (se 0.01 each), inconclusive: each unit inside, the pooled mean too
    avg = Claim("An average effect", key="avg", paper_effect=0.02, average=True)
    shared = record(avg.tallied(tally([effect(0.012, Z * 0.01, u) for u in "ab"]), "e", "r"))
    assert shared["decision"] == "pooled" and shared["verdict"] == INCONCLUSIVE
    # on shared texts they move together (~ N(0.012, 2 x 0.01^2)): inconclusive again while within +/- Z se
    together = stats.norm.cdf((Z * 0.01 - 0.012) / 0.01 / 2**0.5) - stats.norm.cdf((-Z * 0.01 - 0.012) / 0.01 / 2**0.5)
    assert draws.replication(shared, n_sim=4000) == pytest.approx(together, abs=0.02)  # 0.692
    # in two groups of texts they move apart, and the pooled se is 0.01 / sqrt(2): both units and the mean inside
    apart = record(avg.tallied(tally([effect(0.012, Z * 0.01, u, group=u) for u in "ab"]), "e", "r"))
    assert apart["verdict"] == INCONCLUSIVE
    grid = np.linspace(-0.08, 0.10, 1801)
    dens = stats.norm.pdf(grid, 0.012, 0.01 * 2**0.5) * (grid[1] - grid[0])
    a, b = np.meshgrid(grid, grid)
    inside = (np.abs(a) <= Z * 0.01) & (np.abs(b) <= Z * 0.01) & (np.abs((a + b) / 2) <= Z * 0.01 / 2**0.5)
    assert draws.replication(apart, n_sim=4000) == pytest.approx(float((np.outer(dens, dens) * inside).sum()), abs=0.02)
    # a seed part moves every unit together even across groups: two units clear only by their seed bar
    seeded = [Effect(0.06, 0.05, 0.07, 0.01, 3, u, 1, u) for u in "ab"]  # seed se 0.01, text se 0.01 / Z
    r = record(CLAIM.tallied(tally(seeded), "e", "r"))
    assert r["verdict"] == REPRODUCED
    # a unit stays clear while its shift d = sqrt(2) (0.01 / Z z_unit + 0.01 z_seed) > -0.04 (0.02 = 2 seed se); the
    # seed draw is shared: P = integral of phi(z_seed) P(unit clear | z_seed)^2
    zs = np.linspace(-8, 8, 4001)
    clear = stats.norm.sf((-0.04 / 2**0.5 - 0.01 * zs) / (0.01 / Z))
    both = float((stats.norm.pdf(zs) * clear**2).sum() * (zs[1] - zs[0]))
    assert draws.replication(r, n_sim=4000) == pytest.approx(both, abs=0.02)


def test_each_draws_own_prediction_is_held_against_what_the_other_draws_read(tmp_path, capsys):
    # "near": one unit sqrt(2) se beyond its bar, so a new draw keeps it clear with Phi(1) = 0.841 (the replication
    # test above); "far": four units 10 se beyond theirs, always repeated; "blind" is not decided on units (left out)
    se, root2 = 0.01, 2**0.5
    near = CLAIM.tallied(tally([effect(Z * se + root2 * se, Z * se, "u")]), "e", "r")
    far_claim = Claim("Epochs raise AUC", source="MIMIR §3.2.1", key="far", paper_effect=0.02)
    far = far_claim.tallied(tally([effect(0.2, 0.02, f"u{i}") for i in range(4)]), "e", "r")
    against = CLAIM.tallied(tally([effect(-0.05, 0.01, "u")]), "e", "r")
    blind = verdicts.Verdict("A blind classifier separates", REPRODUCED, "e", "r", key="blind")
    for d, records in {"d0": [near, far, blind], "d1": [against, far, blind]}.items():
        (tmp_path / d).mkdir()
        executed(tmp_path / d / "main_results.ipynb", records, "main_results")
    frames = cli.frames_of([tmp_path / "d0", tmp_path / "d1"])
    t = cli.prediction(frames[0], frames[1:]).set_index("key")
    assert list(t.index) == ["size", "far"] and list(t.repeated) == [0, 1]
    assert t.predicted["far"] == 1.0 and t.predicted["size"] == pytest.approx(0.8413, abs=0.03)
    assert cli.prediction(frames[1], frames[:1]).set_index("key").repeated.to_dict() == {"size": 0, "far": 1}
    text = cli.prediction_text(["[0]", "[1]"], frames)
    p = t.predicted["size"]
    assert text.startswith(
        f"each draw's own prediction, on the other draws: [0] predicted {(1 + p) / 2:.0%} of its 2 decided verdicts "
        f"read on units to repeat: {1 + p:.1f} of 2 expected (sd {(p * (1 - p)) ** 0.5:.1f}), 1 repeated; predicted "
        f"{p:.0%} for those not repeated everywhere, 100% for the others; [1] predicted "
    )
    assert cli.main([str(tmp_path / "d0"), str(tmp_path / "d1")]) == 0
    assert text in capsys.readouterr().out
    assert cli._span(pd.Series([0.28, 0.68])) == "28-68%" and cli._span(pd.Series([0.5])) == "50%"
    page = cli.render_page([tmp_path / "d0", tmp_path / "d1"])
    assert "- each draw's own prediction, on the other draws: d0 predicted" in page
