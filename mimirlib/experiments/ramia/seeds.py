"""Tables III and Figure 11 of the RaMIA chapter over the target's training seeds.

One target's gain is one training run's: between two lab draws RaMIA's Table III gain moved far beyond its paired
interval over the ranges (that interval holds the ranges and the samplings, not the training). The lab trains seed
replicates of the attacked epoch run (``replicates.epoch_runs``: the same documents, another initialisation and data
order), so the same attack is played against each: the same ranges and samples (the masked LM's, which no target
touches) and the same IN labels, scored under that seed, RMIA calibrated on its own population scores, and the trim
swept afresh on the attacker's reference with that seed calibrating (the attacker of each target tunes on it). Each
comparison is then the mean over the seeds of the paired differences, with one bootstrap over the ranges for every
seed (:func:`mimirlib.core.range_stats.seed_averaged_difference`) and the seeds' spread beside it: the verdicts hold
that mean to the seed bar (``verdicts.SEED_MEAN_BAR``), as the main results hold their seed-averaged effects.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pandas as pd

from mimirlib.core.range_stats import seed_averaged_difference
from mimirlib.experiments.ramia.aggregation import BAYES, GLRT, RAMIA, Aggregation, compare_aggregators
from mimirlib.experiments.ramia.game import Game, Trims, choose_trims
from mimirlib.experiments.ramia.setting import Setting, label, load_weights
from mimirlib.progress import log


def seed_names(setting: Setting) -> list[str]:
    """The attacked run and its seed replicates (the lab's ``seed_replicates``; just the run without any)."""
    return setting.lab.seed_replicates(setting.target_name)


def replicate_setting(setting: Setting, name: str) -> Setting:
    """``setting`` with the seed replicate ``name`` as the target, its population scores z its own; ValueError
    if the replicate trained on other documents than the target (the range labels would not be its)."""
    lab = setting.lab
    if set(lab.data_order(name).spans) != set(lab.data_order(setting.target_name).spans):
        raise ValueError(f"{name}: a seed replicate of {setting.target_name} must train on the same documents")
    rep = dataclasses.replace(setting, target_name=name, target=load_weights(setting.p, lab, name))
    rep.z_t = rep.mean_logp(rep.population, rep.target, f"population z ({name})")
    return rep


def rescored(setting: Setting, game: Game) -> Game:
    """``game`` (its ranges, samples, labels and draws) with the target's scores those of ``setting``'s target."""
    name, target = setting.target_name, setting.target
    flat = [s for r in game.ranges for s in r.samples]
    pool_t = setting.mean_logp(flat, target, f"range samples ({name})").reshape(game.pool_t.shape)
    cen_t = setting.mean_logp([r.centre for r in game.ranges], target, f"range centres ({name})")
    src_t = setting.mean_logp([r.source for r in game.ranges], target, f"source texts ({name})")
    return dataclasses.replace(game, pool_t=pool_t, cen_t=cen_t, src_t=src_t)


@dataclass
class Seeds:
    """RaMIA against MIA at the centre and the trimmed average against GLRT and the Bayes factor, per seed of the
    target and averaged over them (module docstring)."""

    models: list
    aggs: list  # one Aggregation per seed, the target's first
    gains: pd.DataFrame  # RaMIA minus MIA, the mean over seeds, per backbone (seed_sd, n_seeds, per_seed)
    versus: pd.DataFrame  # trimmed minus GLRT / Bayes factor, the mean over seeds, per (backbone, baseline)

    @property
    def n_seeds(self) -> int:
        return len(self.models)

    @property
    def columns(self) -> list[str]:
        """Short column names of the seeds: "target", then each replicate's suffix (``seed1``, ...)."""
        return ["target"] + [m.removeprefix(f"{self.models[0]}-") for m in self.models[1:]]

    def table(self) -> pd.DataFrame:
        """Per backbone and comparison: each seed's difference (AUC points) with its paired interval (columns
        :attr:`columns`), and the mean over seeds with the seed-averaged interval and the seeds' sd."""
        rows = []
        comparisons = [("RaMIA - MIA (centre)", self.gains, lambda a: a.gains)]
        comparisons += [
            (f"trimmed - {base}", self.versus[self.versus.baseline == base], lambda a, base=base: vs(a, base))
            for base in (GLRT, BAYES)
        ]
        for what, mean, per_seed in comparisons:
            for r in mean.itertuples():
                row = {"backbone": r.backbone, "comparison": what}
                for m, agg in zip(self.columns, self.aggs):
                    g = per_seed(agg).set_index("backbone").loc[r.backbone]
                    row[m] = in_points(g)
                row[f"mean of {self.n_seeds} seeds [95% CI]"] = in_points(r)
                row["seed sd"] = round(100 * r.seed_sd, 2) if self.n_seeds > 1 else float("nan")
                rows.append(row)
        return pd.DataFrame(rows).set_index(["backbone", "comparison"])

    def trims_table(self) -> pd.DataFrame:
        """The trim (q_s, q_e) the attacker chose on the reference with each seed calibrating, per backbone."""
        return pd.DataFrame(
            {
                f"trim (q_s, q_e), {m}": {label(b): f"({q[0]:g}, {q[1]:g})" for b, q in a.trims.q.items()}
                for m, a in zip(self.columns, self.aggs)
            }
        )

    def numbers(self) -> dict:
        return {
            "n_seeds": self.n_seeds,
            "seed_replicates_text": f"{self.n_seeds - 1} seed replicate{'s' if self.n_seeds > 2 else ''}"
            if self.n_seeds > 1
            else "no seed replicates",
            "seeds_gain_text": ", ".join(
                f"{r.backbone} {in_points(r)} (seeds: " + ", ".join(f"{100 * x:+.2f}" for x in r.per_seed) + ")"
                for r in self.gains.itertuples()
            ),
        }


def in_points(r) -> str:
    """A difference row (``estimate``, ``lo``, ``hi`` in AUC units) in AUC points with its interval."""
    return f"{100 * r.estimate:+.2f} [{100 * r.lo:+.2f}, {100 * r.hi:+.2f}]"


def vs(agg: Aggregation, base: str) -> pd.DataFrame:
    """An Aggregation's trimmed-minus-``base`` rows."""
    return agg.versus[agg.versus.baseline == base]


def over_seeds(setting: Setting, game: Game, trims: Trims, agg: Aggregation) -> Seeds:
    """The range game's comparisons against every seed of the target (module docstring): ``agg`` is the target's
    own; each replicate scores the same ranges and re-sweeps the trim on the reference's ranges."""
    names = seed_names(setting)
    aggs = [agg]
    for name in names[1:]:
        log(f"ramia: the range game against {name}")
        rep = replicate_setting(setting, name)
        aggs.append(compare_aggregators(rep, rescored(rep, game), choose_trims(rep, trims.ref_game)))
    p, y = setting.p, game.y
    kw = dict(n_bootstrap=p.n_bootstrap, seed=p.seed)
    gains, versus = [], []
    for b in p.backbones:
        s = [a.scores[b] for a in aggs]
        gains.append(
            {"backbone": label(b), **seed_averaged_difference([x[RAMIA] for x in s], [x["centre"] for x in s], y, **kw)}
        )
        for base in (GLRT, BAYES):
            ties = [bool(vs(a, base).set_index("backbone").loc[label(b), "tie"]) for a in aggs]
            versus.append(
                {
                    "backbone": label(b),
                    "baseline": base,
                    "tie": all(ties),
                    **seed_averaged_difference([x[RAMIA] for x in s], [x[base] for x in s], y, **kw),
                }
            )
    return Seeds(names, aggs, pd.DataFrame(gains), pd.DataFrame(versus))


__all__ = ["Seeds", "over_seeds", "seed_names", "replicate_setting", "rescored"]
