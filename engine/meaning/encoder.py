"""The sentence encoder: texts to unit vectors, with onnxruntime on the calling thread.

all-MiniLM-L6-v2's recipe: word pieces cut at 128 (its own limit is 256; 128 keeps quality on
conversation turns and doubles the speed on long pages), the last hidden state averaged over the
real tokens, then scaled to length 1, so that a dot product is the cosine. One thread per call:
the machines memvm runs on are shared, and onnxruntime's spinning thread pools cost more than they
give there.
"""

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from memvm.engine.meaning.model_files import DIMENSIONS, ModelFiles, verify

MAX_PIECES = 128
# The text given to the tokenizer: it splits a whole text before cutting it at MAX_PIECES, so a
# page of 100,000 characters cost as much as hundreds of short ones. 128 pieces never need more
# than this many characters (a piece is rarely over 8 characters, never over 16 here).
MAX_CHARS = 16 * MAX_PIECES

Vectors = npt.NDArray[np.float32]


class Encoder:
    """One loaded model; `embed` may be called from several threads at once."""

    def __init__(self, files: ModelFiles) -> None:
        verify(files)
        # Imported here: a process that never embeds (a pre-tool hook) never loads them.
        import onnxruntime
        from tokenizers import Tokenizer

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        options.log_severity_level = 3  # its warnings about unused initialisers are not the user's
        # Basic graph optimisations only: the extended ones (fusions) double the time a process takes
        # to load the model (0.5 s against 0.25 s here) and embedded no faster here (the same vectors:
        # cosine 1.0000 on 104 texts; 175 against 134 short texts a second, 5.1 ms a query either way).
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
        self._session = onnxruntime.InferenceSession(
            str(files.weights), options, providers=["CPUExecutionProvider"]
        )
        self._tokenizer = Tokenizer.from_file(str(files.tokenizer))
        self._tokenizer.enable_truncation(MAX_PIECES)
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One unit vector (float32, DIMENSIONS long) per text, in order."""
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        encoded = self._tokenizer.encode_batch([text[:MAX_CHARS] for text in texts])
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        inputs: dict[str, Any] = {
            "input_ids": ids,
            "attention_mask": mask,
            "token_type_ids": np.zeros_like(ids),
        }
        hidden: Vectors = self._session.run(None, inputs)[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit: Vectors = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return unit


_loaded: dict[ModelFiles, Encoder] = {}
_loading = threading.Lock()


def load(files: ModelFiles) -> Encoder:
    """The encoder for `files`, loaded once per process (blocking: call it off the event loop)."""
    with _loading:
        encoder = _loaded.get(files)
        if encoder is None:
            encoder = _loaded[files] = Encoder(files)
        return encoder
