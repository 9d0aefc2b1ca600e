"""Checks on the texts a masked-LM function is given, with errors that name the culprit's index."""

from __future__ import annotations

from typing import Sequence

__all__ = ["as_text_list", "check_texts"]


def as_text_list(texts) -> list:
    """Any iterable of texts (list, tuple, pandas Series), but not one bare string."""
    if isinstance(texts, (str, bytes)):
        raise TypeError("texts must be a list of strings, not a single string")
    try:
        return list(texts)
    except TypeError:
        raise TypeError(f"texts must be a list of strings, not {type(texts).__name__}") from None


def check_texts(texts: Sequence, blank: str | None = None) -> None:
    """TypeError naming the first item that is not a str; with `blank` (the reason a blank text
    cannot be used), also a ValueError naming the first empty or blank one, items checked in order."""
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise TypeError(f"texts[{i}] is {type(t).__name__}, not str")
        if blank is not None and not t.strip():
            raise ValueError(f"texts[{i}] is empty or blank: {blank}")
