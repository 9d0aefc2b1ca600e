"""The experiment layer: one module per chapter, composing the library for one paper section into tidy frames."""

from dataclasses import fields


def params_from_namespace(cls, ns: dict):
    """The dataclass ``cls`` built from the names of its fields in ``ns`` (a notebook's globals after
    its parameters cell); a missing one raises ValueError naming every missing field."""
    missing = [f.name for f in fields(cls) if f.name not in ns]
    if missing:
        raise ValueError(f"missing parameter(s) {missing}")
    return cls(**{f.name: ns[f.name] for f in fields(cls)})
