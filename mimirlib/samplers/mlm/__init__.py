"""The masked-LM engine: train or load a masked LM, and the sampling primitives that the
neighbourhood attack (:mod:`mimirlib.samplers.neighbors`), the modified members (:mod:`mimirlib.samplers.perturb`)
and RaMIA's range samplers (:mod:`mimirlib.samplers.ranges`) are built from.

- :mod:`.wordpiece`, :mod:`.train`: the lab's small BERT-style masked LM (deterministic
  WordPiece vocabulary, then the model), the stand-in for BERT offline;
- :mod:`.load`: a trained folder or a hub model (``bert-base-uncased``) by one code path;
- :mod:`.vocab`: the vocabulary as the samplers see it (swap classes, samplable ids);
- :mod:`.sampling`: per-text generators, masked-position logits, inverse-CDF draws, splicing;
- :mod:`.words`: whole-word masking and filling (:class:`MaskedLMSetup`);
- :mod:`.inputs`: the checks on the texts every entry point is given.
"""

from mimirlib.samplers.mlm.load import load_masked_lm
from mimirlib.samplers.mlm.train import TRAINING_INFO, train_masked_lm
from mimirlib.samplers.mlm.wordpiece import SPECIAL_TOKENS
from mimirlib.samplers.mlm.words import MaskedLMSetup, masked_lm_setup

__all__ = ["SPECIAL_TOKENS", "TRAINING_INFO", "train_masked_lm", "load_masked_lm", "MaskedLMSetup", "masked_lm_setup"]
