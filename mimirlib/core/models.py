"""Loading causal language models: hub names, local folders and lab models through one path.

Lab models are saved with ``save_pretrained`` (safetensors), so the code that reads
``EleutherAI/pythia-160m-deduped`` at ``revision="step99000"`` reads ``.cache/lab/.../target-h128``
too. ``trust_remote_code`` stays off: a benchmark should never execute a model repo's code.
"""

from __future__ import annotations

import hashlib
import json
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import torch

from mimirlib.core.hub import is_local_path
from mimirlib.paths import note_read


# Tokens per scoring window for a model whose config states no context length (GPT-NeoX/Pythia's).
DEFAULT_CONTEXT = 2048
# Config fields that state a model's context length, in the order they are tried.
_CONTEXT_FIELDS = ("max_position_embeddings", "n_positions", "n_ctx", "max_sequence_length", "seq_length")


class ModelLoadError(RuntimeError):
    """A model that cannot be loaded; the message names it and says what to try."""


@dataclass(eq=False)
class LoadedModel:
    """A model with its tokenizer and the identity used to key cached signals.

    ``model`` is the network; loaded with ``weights=False`` (:func:`load_model`) it is read on first
    use, so a driver whose forward passes run elsewhere (the Ray engine) needs only the tokenizer,
    the config and the identity, never the weights' memory."""

    name: str
    revision: str | None
    tokenizer: object
    device: torch.device
    dtype: torch.dtype
    config: object
    read_weights: Callable[[], torch.nn.Module] = field(repr=False)
    _model: torch.nn.Module | None = field(default=None, repr=False)

    @property
    def model(self) -> torch.nn.Module:
        if self._model is None:
            self._model = self.read_weights()
        return self._model

    @property
    def weights_loaded(self) -> bool:
        return self._model is not None

    @property
    def cache_id(self) -> str:
        """Identity of (weights, tokenizer): the model name + revision + a fingerprint.

        For a local folder the fingerprint digests its config, tokenizer and weight files, so a
        retrained lab model never reuses stale signals.
        """
        if self.revision and Path(self.name).is_dir():
            key = model_fingerprint(str(Path(self.name) / "revisions" / self.revision))
        else:
            key = model_fingerprint(self.name, self.revision)
        # Signals computed in another precision are not the same signals (float32 keys stay bare).
        return key if self.dtype == torch.float32 else f"{key}|{str(self.dtype).replace('torch.', '')}"

    @property
    def context_length(self) -> int:
        """The context the model was trained on, in tokens: the default scoring window.

        A lab model records it in ``lab_meta.json`` (``seq_len``: its config allows 512 positions, but
        it only ever saw 256-token windows); any other model states it in its config
        (``max_position_embeddings``, ``n_positions``, ...); failing both, :data:`DEFAULT_CONTEXT`.
        """
        meta = Path(self.name) / "lab_meta.json"
        if meta.is_file():
            return int(json.loads(meta.read_text())["config"]["seq_len"])
        for name in _CONTEXT_FIELDS:
            value = getattr(self.config, name, None)
            if isinstance(value, int) and value >= 2:
                return value
        return DEFAULT_CONTEXT


def pick_device(device: str | None = None) -> torch.device:
    """``cuda`` when available unless told otherwise; CPU is always correct."""
    if device:
        return torch.device(device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def native_bf16(device: torch.device) -> bool:
    """Whether ``device`` computes bfloat16 natively: a GPU that supports it, or a CPU with AVX512-BF16
    or AMX. Elsewhere (AVX2 CPUs, e.g. most AMD EPYC before Zen 4) bfloat16 is emulated: a matmul
    measured 44x slower than in float32 on such a machine."""
    if device.type == "cuda":
        return bool(torch.cuda.is_bf16_supported())
    if device.type == "cpu":
        return bool(torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported())
    return False


_TORCH_DTYPES = {
    "float32": torch.float32,
    "fp32": torch.float32,
    "bfloat16": torch.bfloat16,
    "bf16": torch.bfloat16,
    "float16": torch.float16,
    "fp16": torch.float16,
}
DTYPES = ("auto", "fast", *_TORCH_DTYPES)  # every name :func:`pick_dtype` takes (None too: auto)
DTYPE_CHOICES = "auto, fast, float32, bfloat16 or float16"


def pick_dtype(dtype: str | None, device: torch.device) -> torch.dtype:
    """``auto``: float32 on CPU (exact, and bf16 gains little for tiny models), bfloat16 on GPU;
    ``fast``: bfloat16 where the device computes it natively (:func:`native_bf16`), else float32."""
    if dtype in (None, "auto"):
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    if dtype == "fast":
        return torch.bfloat16 if native_bf16(device) else torch.float32
    try:
        return _TORCH_DTYPES[dtype]
    except KeyError:
        raise ModelLoadError(f"unknown dtype {dtype!r}; use {DTYPE_CHOICES}") from None


def _dir_digest(path: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(path.iterdir()):
        if f.is_file() and (f.suffix in (".json", ".safetensors", ".txt", ".model") or f.name == "tokenizer.json"):
            h.update(f.name.encode())
            if f.suffix == ".safetensors":
                # Hash the header and size: cheap, and changes with any retraining (tensors' data offsets,
                # dtype and the metadata we write); plus the first and last MiB of data.
                with f.open("rb") as fh:
                    head = fh.read(1 << 20)
                    fh.seek(max(0, f.stat().st_size - (1 << 20)))
                    tail = fh.read()
                h.update(head)
                h.update(tail)
                h.update(str(f.stat().st_size).encode())
            else:
                h.update(f.read_bytes())
    return h.hexdigest()[:16]


def model_fingerprint(name: str, revision: str | None = None) -> str:
    """A stable key for a model: hub name@revision, or a local folder's content digest."""
    p = Path(name)
    if p.is_dir():
        return f"local:{p.name}:{_dir_digest(p)}"
    return f"hub:{name}@{revision or 'main'}"


def load_model(
    name: str,
    revision: str | None = None,
    *,
    device: str | None = None,
    dtype: str | None = None,
    gguf_file: str | None = None,
    weights: bool = True,
) -> LoadedModel:
    """Load a causal LM and its tokenizer by hub name or local path (and revision).

    The tokenizer gets a pad token if it lacks one by *reusing* EOS (no new embedding row: the
    reference implementation added ``[PAD]`` without resizing). Padding is masked out of
    every score, so which id pads does not matter. ``weights=False`` reads the tokenizer and the
    config now (a missing or unreadable model fails here all the same) and the weights on first use
    of ``.model``.
    """
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    dev = pick_device(device)
    dt = pick_dtype(dtype, dev)
    local = is_local_path(name)
    if local:
        folder = Path(name).expanduser()
        if not folder.exists():
            raise ModelLoadError(f"model {name!r}: no such folder (a local path; a hub name is 'name' or 'org/name')")
        if not folder.is_dir():
            raise ModelLoadError(f"model {name!r}: is a file, expected a model folder or hub name")
        if str(name).startswith("~"):
            name = str(folder)
    if local and revision:
        # A lab model keeps its checkpoints as revisions/<step...>, mirroring Pythia's hub branches.
        revisions = Path(name) / "revisions"
        rev_dir = revisions / revision
        if not rev_dir.is_dir():
            have = sorted(p.name for p in revisions.glob("*")) if revisions.is_dir() else []
            raise ModelLoadError(f"model {name!r} has no revision {revision!r}; available: {have or 'none'}")
        note_read(rev_dir)
        loaded = load_model(str(rev_dir), None, device=device, dtype=dtype, weights=weights)
        loaded.name, loaded.revision = str(name), revision
        return loaded
    kwargs = dict(revision=revision, trust_remote_code=False)
    if gguf_file:
        kwargs["gguf_file"] = gguf_file
    where = f"model {name!r}{'@' + revision if revision else ''}"
    with model_errors(where, local):
        tok = AutoTokenizer.from_pretrained(name, **kwargs)
        config = AutoConfig.from_pretrained(name, **kwargs)

    def read_weights() -> torch.nn.Module:
        with model_errors(where, local):
            model = AutoModelForCausalLM.from_pretrained(name, dtype=dt, **kwargs)
        return model.to(dev).eval()

    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token if tok.eos_token is not None else tok.convert_ids_to_tokens(0)
    # Weights now (a local run fails here, before any work), or on first use.
    return LoadedModel(str(name), revision, tok, dev, dt, config, read_weights, read_weights() if weights else None)


@contextmanager
def model_errors(where: str, local: bool):
    """Any failure to read a model as one :class:`ModelLoadError` line naming it."""
    try:
        yield
    except Exception as e:
        hint = "" if local else " (hub models need network access; offline, pass a folder saved with save_pretrained)"
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ModelLoadError(f"{where} could not be loaded: {first}{hint}") from e


def count_params(m: LoadedModel) -> int:
    """The network's parameters: counted on the loaded weights, or on a weightless copy (meta device)
    built from the config when they are not loaded."""
    if m.weights_loaded:
        return sum(p.numel() for p in m.model.parameters())
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        skeleton = AutoModelForCausalLM.from_config(m.config)
    return sum(p.numel() for p in skeleton.parameters())


def describe(m: LoadedModel) -> dict:
    """A small JSON-able record for tables and notes."""
    return {
        "name": m.name,
        "revision": m.revision,
        "params": count_params(m),
        "device": str(m.device),
        "dtype": str(m.dtype).replace("torch.", ""),
    }


def right_pad(seqs, pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(input_ids, attention_mask)`` of token-id sequences padded on the right with ``pad_id`` to the
    longest one: two ``[len(seqs), width]`` long tensors, the mask 1 on real tokens and 0 on padding."""
    width = max(map(len, seqs))
    ids = torch.full((len(seqs), width), int(pad_id), dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for r, s in enumerate(seqs):
        ids[r, : len(s)] = torch.as_tensor(s, dtype=torch.long)
        mask[r, : len(s)] = 1
    return ids, mask
