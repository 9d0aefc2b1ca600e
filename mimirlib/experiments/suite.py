"""What a chapter runs on: the embedded lab's models and benchmarks, or real ones by name.

Notebooks take the same parameters in both cases (``models``, ``reference_models``,
``benchmark_source``, ``domains``, ``split``); :func:`resolve_suite` turns them into one
object, so a chapter's code does not branch on where its inputs come from (:func:`suite_for`
reads them from a chapter's parameters).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from mimirlib.core.data import Benchmark, load_benchmark
from mimirlib.core.models import LoadedModel, describe, load_model


@dataclass
class Suite:
    targets: list[str]  # model names/paths, in increasing size for the lab
    references: dict[str, str]  # label -> model name/path
    domains: list[str]
    benchmark_source: str
    natural_twin: dict[str, str] = field(default_factory=dict)  # dedup target -> natural-data twin
    revision: str | None = None
    dtype: str | None = None
    lab: object | None = None
    weights: bool = True  # False: a model's weights are read on first use (the ray engine never needs them here)
    _loaded: dict = field(default_factory=dict, repr=False)

    def label(self, name: str) -> str:
        """Short display name: a lab model's folder name, a hub model's name."""
        return Path(name).name if Path(name).exists() else name

    def model(self, name: str) -> LoadedModel:
        """Load once per notebook; references are loaded at their default revision."""
        if name not in self._loaded:
            rev = self.revision if name in self.targets else None
            self._loaded[name] = load_model(name, rev, dtype=self.dtype, weights=self.weights)
        return self._loaded[name]

    def params(self, name: str) -> int:
        if self.lab is not None:
            meta = self.lab.manifest["models"].get(Path(name).name)
            if meta:
                return meta["params"]
        return describe(self.model(name))["params"]

    def benchmark(self, domain: str, split: str) -> Benchmark:
        return load_benchmark(self.benchmark_source, domain, split)

    def replicates(self, name: str, dedup: bool = False) -> list[str]:
        """Paths of ``name``'s independently trained seed replicates (other initialisation and data
        order), in seed order and without ``name`` itself; empty for real models and for lab
        models trained with one seed only (see ``Lab.seed_replicates``, and for ``dedup``)."""
        if self.lab is None or not Path(name).exists():
            return []
        return [str(self.lab.model_dir(r)) for r in self.lab.seed_replicates(Path(name).name, dedup)[1:]]


def resolve_suite(
    profile: str,
    *,
    models=None,
    reference_models=None,
    benchmark_source=None,
    domains=None,
    revision=None,
    dtype=None,
    weights: bool = True,
    draw: int | None = None,
) -> Suite:
    """The lab's suite (built if missing; ``draw``: the lab drawn with that seed) unless real
    models/benchmarks are named; ``weights=False``: its models read their weights on first use (see
    :func:`mimirlib.core.models.load_model`)."""
    lab = None
    if models is None or benchmark_source is None or reference_models is None:
        if profile == "paper":
            raise ValueError(
                "the paper profile names its models and benchmarks; set models, reference_models and benchmark_source"
            )
        from mimirlib.lab.build import ensure_lab

        lab = ensure_lab(profile, draw)
    targets = list(models) if models is not None else [str(lab.model_dir(n)) for n in lab.target_names()]
    if reference_models is not None:
        refs = {Path(r).name if Path(r).exists() else r.split("/")[-1]: r for r in reference_models}
    else:
        refs = {r["name"]: str(lab.model_dir(r["name"])) for r in lab.config["references"]}
    source = str(benchmark_source) if benchmark_source is not None else str(lab.benchmarks_dir)
    if domains is None:
        if lab is None:
            raise ValueError("name the domains (MIMIR configs) to evaluate when benchmark_source is given")
        domains = list(lab.config["domains"])
    elif lab is not None and benchmark_source is None:
        unknown = sorted(set(domains) - set(lab.config["domains"]))
        if unknown:
            raise ValueError(f"unknown domain(s) {unknown}; the lab has {lab.config['domains']}")
    twin = {}
    if lab is not None and models is None:
        twin = {str(lab.model_dir(lab.target(lab.config["natural_variant"]))): str(lab.model_dir(lab.natural_twin()))}
    return Suite(targets, refs, list(domains), source, twin, revision, dtype, lab, weights)


# The parameters of a chapter that name its suite, besides ``profile``.
SUITE_PARAMETERS = ("models", "reference_models", "benchmark_source", "domains", "revision", "dtype")


def suite_for(p: Mapping) -> Suite:
    """:func:`resolve_suite` of a chapter's parameters (a :class:`mimirlib.experiments.params.Params`):
    its ``profile``, its ``draw`` and those of :data:`SUITE_PARAMETERS` it declares (None for the others). With the
    ``ray`` engine the driver reads no weights until a pass of its own needs them."""
    weights = p.get("engine", "local") != "ray"
    named = {name: p.get(name) for name in SUITE_PARAMETERS}
    return resolve_suite(p["profile"], weights=weights, draw=p.get("draw"), **named)
