"""A chapter's parameters as one read-only object, derived from its parameters cell.

The parameters cell is the one list of a chapter's names (the runner reads their types and help
from it); :meth:`Params.from_cell` takes the plain values the cell left in the notebook's
namespace, so no second list of names exists anywhere. The scoring options and the attacks'
parameters are derived from it in one place each.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from mimirlib.core.attacks import min_k_params
from mimirlib.core.engines import engine_from
from mimirlib.core.signals import ScoringOptions, SignalCache

# What a parameters cell may assign (the runner's declared types); anything else in a namespace
# (modules, functions, a loaded lab) is not a parameter.
PLAIN_TYPES = (type(None), bool, int, float, str, list, dict, tuple)
# Names IPython puts in every kernel's namespace.
KERNEL_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython"})


class Params(Mapping):
    """Read-only parameters with attribute access: ``p.min_k``. A name the cell did not set raises
    AttributeError naming it."""

    def __init__(self, values: Mapping[str, object]):
        object.__setattr__(self, "_values", dict(values))

    @classmethod
    def from_cell(cls, namespace: Mapping[str, object]) -> "Params":
        """The plain values in ``namespace`` (a notebook's ``globals()`` right after its parameters
        cell and its imports): public names, not IPython's, of the types a parameter may have."""
        return cls(
            {
                k: v
                for k, v in namespace.items()
                if not k.startswith("_") and k not in KERNEL_NAMES and isinstance(v, PLAIN_TYPES)
            }
        )

    def __getattr__(self, name: str):
        if name.startswith("_"):  # pickle and copy look up dunder hooks on a bare instance: no parameter
            raise AttributeError(name)
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"parameter {name!r} is not set by this chapter's parameters cell") from None

    def __setattr__(self, name, value):
        raise AttributeError("Params is read-only; use replace()")

    def __getitem__(self, name: str):
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return "Params(" + ", ".join(f"{k}={v!r}" for k, v in self._values.items()) + ")"

    def replace(self, **changes) -> "Params":
        return Params({**self._values, **changes})

    def scoring(self, cache: SignalCache | None = None) -> ScoringOptions:
        """The chapter's :class:`ScoringOptions`: the scoring parameters it declares, defaults for
        the ones it does not (a chapter without ``window`` scores in each model's trained context)."""
        v, d = self._values, ScoringOptions()
        return ScoringOptions(
            window=v.get("window", d.window),
            stride=v.get("stride", d.stride),
            batch_size=v.get("batch_size", d.batch_size),
            dtype=v.get("dtype", d.dtype),
            engine=engine_from(v),  # "local", or a RayEngine with the chapter's ray_* settings
            ray_address=None,
            cache=cache,
        )

    def attack_params(self) -> dict[str, dict]:
        """Per-attack keyword arguments: the chapter's ``min_k`` for Min-K% and Min-K%++."""
        return min_k_params(self.min_k) if "min_k" in self._values else {}
