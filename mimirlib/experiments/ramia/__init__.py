"""The RaMIA chapter's experiments: the range game on the lab's multi-epoch model with the
attacker's shadow model, the trim chosen on the shadow, Tables III/IV, Figures 5, 6, 7 and 11,
redacted text, and the benchmark's neighbours as ranges; :func:`run` runs every step, in the
chapter's order, and holds their tidy frames.

The steps, one module each: :mod:`.setting` (models, texts, the scoring they share), :mod:`.game`
(the range game, the trim chosen on the reference), :mod:`.aggregation` (Tables III/IV, Figure 11), :mod:`.seeds`
(the same over the target's seed replicates),
:mod:`.sweeps` (Figures 6, 5 and 7), :mod:`.distance` (the distance curve) and :mod:`.other_ranges`
(section V-H, the benchmark's neighbours as ranges).

Point scores come from one registry (:data:`mimirlib.core.range_scores.BACKBONES`: LOSS, reference,
RMIA), which fixes their direction (higher = member) once; every comparison is scored on the same
ranges both ways, and :func:`mimirlib.core.range_stats.paired_difference` gives the paired bootstrap
the verdicts rest on (:mod:`mimirlib.verdicts.ramia`).
"""

from __future__ import annotations

from dataclasses import dataclass

from mimirlib.display import report
from mimirlib.experiments.params import Params
from mimirlib.experiments.ramia.aggregation import Aggregation, compare_aggregators
from mimirlib.experiments.ramia.distance import Distance, distance_sweep
from mimirlib.experiments.ramia.game import Game, Trims, choose_trims, play_range_game, trim_notations
from mimirlib.experiments.ramia.other_ranges import Beyond, Redaction, beyond_the_papers, redaction
from mimirlib.experiments.ramia.seeds import Seeds, over_seeds
from mimirlib.experiments.ramia.setting import Setting, label, load_setting
from mimirlib.experiments.ramia.sweeps import (
    Correlation,
    Density,
    SizeSweep,
    density_sweep,
    range_size_sweep,
    vulnerability,
)
from mimirlib.core.metrics import budget_key
from mimirlib.experiments.ramia.aggregation import MIA
from mimirlib.verdicts import Verdict
from mimirlib.verdicts import ramia as rules
from mimirlib.verdicts import regime as fidelity
from mimirlib.verdicts.regime import Regime

__all__ = ["Params", "Run", "Seeds", "run", "verdicts", "regime", "glue_numbers", "trim_notations", "label"]


@dataclass
class Run:
    """Every step of the chapter, as the chapter shows them."""

    setting: Setting
    game: Game
    trims: Trims
    agg: Aggregation
    seeds: Seeds
    sizes: SizeSweep
    density: Density
    dist: Distance
    corr: Correlation
    red: Redaction
    beyond: Beyond

    @property
    def p(self) -> Params:
        return self.setting.p


def run(p: Params, lab=None) -> Run:
    """The chapter's steps in its order (each reads the ones before it): the setting, the range
    game, the trim on the reference, Tables III/IV, the same over the target's seeds, Figure 6,
    Figure 5, the distance curve, Figure 7, redaction and the benchmark's neighbours. ``lab``: the built lab (default:
    ``lab_for(p)``)."""
    setting = load_setting(p, lab)
    game = play_range_game(setting)
    trims = choose_trims(setting)
    agg = compare_aggregators(setting, game, trims)
    seeds = over_seeds(setting, game, trims, agg)
    sizes = range_size_sweep(setting, trims)
    density = density_sweep(setting, game, trims, agg)
    dist = distance_sweep(setting, game, trims, agg)
    corr = vulnerability(game, agg)
    red = redaction(setting, trims)
    beyond = beyond_the_papers(setting)
    return Run(setting, game, trims, agg, seeds, sizes, density, dist, corr, red, beyond)


def glue_numbers(*steps) -> None:
    """Glue every number a step offers for the prose (its ``numbers()``)."""
    for s in steps:
        report.glue_values(s.numbers())


def regime(run: Run) -> list[Regime]:
    """The chapter's fidelity rows: per backbone, the target's MIA at the range centre (its AUC and
    TPR at 1% FPR, judged by range membership), saturated or in the paper's regime."""
    res = run.agg.res
    mia = res[res.method == MIA].groupby("backbone", sort=False).first()
    n_out, n_in = int((~run.game.y).sum()), int(run.game.y.sum())
    return [fidelity.centre(b, r.auc, r[budget_key(0.01)] / 100, n_out, n_in) for b, r in mia.iterrows()]


def verdicts(run: Run) -> list[Verdict]:
    """The chapter's seven verdicts, in the prose's order, each from its rule in :mod:`mimirlib.verdicts.ramia`:
    Table III and Figure 11 read over the target's seeds (:mod:`.seeds`), the others on the target."""
    p, y = run.p, run.game.y
    sizes, corr, red, dist = run.sizes, run.corr, run.red, run.dist
    k = run.seeds.n_seeds
    one = (
        f"one target (its {k - 1} seed replicates are read by Table III and Figure 11 only)"
        if k > 1
        else "one target (the lab has no seed replicates of the multi-epoch run)"
    )
    seeds = f"the mean over {k} seeds of the target, each scoring the same ranges" if k > 1 else one
    size_n = (
        f"{sizes.n_in} + {sizes.n_out} ranges around the same texts at each of {len(p.range_sizes)} sizes, "
        f"{p.fig6_samples} samples each; {one}"
    )
    ranges_n = (
        f"{int(y.sum())} IN + {int((~y).sum())} OUT ranges, {p.n_iterations} fresh draws of {p.n_samples} samples each"
    )
    game_n, seeds_n = f"{ranges_n}; {one}", f"{ranges_n}; {seeds}"
    rows = regime(run)
    return [
        rules.ramia_beats_mia(run.seeds.gains, seeds_n, rows),
        rules.trimmed_beats_glrt_and_bayes(run.seeds.versus, seeds_n, rows),
        rules.larger_range_lowers_auc(sizes.paired, size_n, rows),
        rules.density_raises_auc(run.density.paired, game_n, rows),
        rules.vulnerability_correlated(
            corr.frame,
            f"{int(corr.frame.n.max()) if len(corr.frame) else 0} members' "
            f"ranges against {int((~y).sum())} OUT ranges; {one}",
        ),
        rules.redaction_beats_completion(
            red.paired,
            f"{red.n_members} + {red.n_nonmembers} redacted texts, {red.n_candidates} completions each; {one}",
            rows,
        ),
        rules.closer_samples_raise_gain(
            dist.summary,
            f"{int(y.sum())} IN + {int((~y).sum())} OUT ranges, {dist.n_samples} samples each restored at "
            f"p = {', '.join(f'{q:g}' for q in sorted(dist.frame.p.unique()))}; {one}",
            rows,
        ),
    ]
