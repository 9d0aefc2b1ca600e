"""Loading a masked LM, the lab's folder or a hub model (``bert-base-uncased``), by one code path."""

from __future__ import annotations

import os
from pathlib import Path

from mimirlib.core.hub import is_local_path

__all__ = ["load_masked_lm"]


def load_masked_lm(name_or_path, revision: str | None = None, device="cpu"):
    """(model, tokenizer) for a masked LM: a local folder or a hub name, in eval mode.

    Same `from_pretrained` code for both (`trust_remote_code=False`). A fast tokenizer is
    required: neighbours are spliced in at its character offsets. Errors name the model:
    a missing folder raises FileNotFoundError; a hub name that cannot be fetched (no
    network, HF_HUB_OFFLINE) raises OSError suggesting a local folder.
    """
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    name = os.fspath(name_or_path)
    local = Path(name).expanduser()
    is_local = is_local_path(name_or_path)
    if is_local and not local.exists():
        raise FileNotFoundError(f"masked LM folder {name!r} does not exist")
    if is_local and not local.is_dir():
        raise NotADirectoryError(f"masked LM path {name!r} is a file; expected a folder written by save_pretrained")
    source = str(local) if is_local else name
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, revision=revision, trust_remote_code=False)
        model = AutoModelForMaskedLM.from_pretrained(source, revision=revision, trust_remote_code=False)
    except Exception as exc:
        if is_local:
            msg = f"could not load a masked LM from the folder {name!r}: {exc}"
        else:
            msg = (
                f"could not load the masked LM {name!r} (revision {revision!r}) from the Hugging Face hub: "
                f"{exc}\nWithout network access (or with HF_HUB_OFFLINE=1 and no cached copy) a hub name "
                "cannot be resolved: pass a local folder instead, e.g. one written by save_pretrained or "
                "by mimirlib.samplers.mlm.train_masked_lm."
            )
        raise OSError(msg) from exc
    if not getattr(tokenizer, "is_fast", False):
        raise TypeError(f"masked LM {name!r}: its tokenizer is not a fast tokenizer; offsets are needed")
    if tokenizer.mask_token_id is None:
        raise ValueError(f"masked LM {name!r}: its tokenizer has no mask token")
    model.to(device)
    model.eval()
    return model, tokenizer
