"""How long redaction takes: it runs on every write, over every text a write stores.

    .venv/bin/python tests/bench/redaction.py [--kb 256] [--runs 9]

Times `redact` over texts of about `--kb` KB each: prose that names no secret, prose about
passwords and tokens that holds none, a shell session holding a secret of every shape memvm
redacts, a tool result as JSON, and memvm's own engine sources. Also one hook event's prompt
(2 KB) and the texts built to make a backtracking pattern rescan (those of the tests). Prints
the median time of each and its throughput. Only `memvm.engine.redaction.redact` is imported, so
the same script times another checkout's redaction when run by that checkout's interpreter.
"""

import argparse
import json
import random
import statistics
import string
import time
from collections.abc import Callable
from pathlib import Path

from memvm.engine import redaction
from memvm.engine.redaction import redact

# Texts shaped to make a backtracking pattern rescan the rest of the text from every position:
# each took tens of seconds to minutes when a pattern did (200 KB of "a." before a URL: 38 s).
# The tests time them too (tests/engine/test_redaction.py).
HOSTILE = {
    "dots before a url": "a." * 150_000 + " http://x",
    "jwt starts": "eyJ-" * 75_000,
    "openai starts": "sk-" * 100_000,
    "key blocks never ended": "-----BEGIN PRIVATE KEY-----\n" * 10_000,
    "url users": "http://" + "u" * 300_000,
    "passwords": "password=" * 30_000,
    "bearers": "Bearer " * 40_000,
    "mysql commands": "mysql -u root " * 20_000,
    "curl arguments": "curl " + "-H x " * 60_000,
    "htpasswd commands": "htpasswd -b f u " * 20_000,
    "secret names": "A_" * 100_000 + "TOKEN=x",
    "escaped quotes": "password" + "\\" * 300_000,
    "lines of settings": "token=x\n" * 40_000,
}
_RNG = random.Random(11)
_COMMON = (
    "the of and to in is that it for was on are as with they be at one have this from or had by word but "
    "what some we can out other were all there when up use your how said an each she which do their time "
    "if will way about many then them write would like so these her long make thing see him two has look"
)
_WORDS = _COMMON.split()
# Words that draw redaction's closer look, in sentences that hold no secret.
_NEAR = (
    "The password policy requires 12 characters. Rotate the token before it expires; the api key is in "
    "the vault.\n$ mysql -u root -p\n$ curl -u alice https://example.com\nexport PATH=/usr/local/bin:$PATH\n"
    "MAX_TOKENS=4096\nBearer tokens are refreshed hourly."
)


def _random(alphabet: str, count: int) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(count))


def _prose(chars: int) -> str:
    """Paragraphs of a few sentences, a blank line between them."""
    sentences: list[str] = []
    size = 0
    while size < chars:
        sentence = " ".join(_RNG.choice(_WORDS) for _ in range(_RNG.randint(6, 18))).capitalize() + "."
        sentences.append(sentence + ("\n\n" if _RNG.random() < 0.2 else " "))
        size += len(sentences[-1])
    return "".join(sentences)[:chars]


def _near(chars: int) -> str:
    text = _prose(2_000) + "\n\n" + _NEAR + "\n\n"
    return (text * (chars // len(text) + 1))[:chars]


def _shell(chars: int) -> str:
    alnum = string.ascii_letters + string.digits
    lines = [
        f"$ mysql -u root -p{_random(alnum, 12)} -e 'select 1'",
        f"$ curl -u deploy:{_random(alnum, 14)} https://ci.example.com/api",
        f"$ sshpass -p '{_random(alnum, 10)}' ssh admin@10.0.0.5",
        f"$ htpasswd -b .htpasswd alice {_random(alnum, 12)}",
        f"$ export OPENAI_API_KEY=sk-proj-{_random(alnum, 80)}",
        f"DB_PASS={_random(alnum, 16)}",
        f"STRIPE_SECRET_KEY={_random(alnum, 24)}",
        f"GITHUB_TOKEN=ghp_{_random(alnum, 36)}",
        f"X-Api-Key: {_random(alnum, 32)}",
        f"Authorization: Bearer {_random(string.ascii_lowercase, 24)}",
        f"$ app --password {_random(alnum, 12)} --verbose",
        "total 48\ndrwxr-xr-x  5 user staff  160 Jan  2 10:00 src\n-rw-r--r--  1 user staff 1024 main.py",
    ]
    text = "\n".join(lines) + "\n" + _prose(3_000) + "\n"
    return (text * (chars // len(text) + 1))[:chars]


def _rows(chars: int) -> list[dict[str, object]]:
    return [
        {"id": n, "name": _RNG.choice(_WORDS), "status": "ok", "score": _RNG.random(), "tags": ["a", "b"]}
        for n in range(chars // 60)
    ]


def _json(chars: int) -> str:
    return json.dumps(_rows(chars), indent=1)[:chars]


def _json_one_line(chars: int) -> str:
    return json.dumps(_rows(chars * 2))[:chars]


def _sources(chars: int) -> str:
    folder = Path(redaction.__file__).parent
    text = "".join(path.read_text() for path in sorted(folder.rglob("*.py")))
    return (text * (chars // len(text) + 1))[:chars]


def _timed(text: str, runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        redact(text)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kb", type=int, default=256, help="size of each text, in KB")
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    chars = args.kb * 1024
    makers: dict[str, Callable[[int], str]] = {
        "prose": _prose,
        "prose near secrets": _near,
        "shell session": _shell,
        "json result": _json,
        "json result, one line": _json_one_line,
        "engine sources": _sources,
    }
    texts = {name: make(chars) for name, make in makers.items()}
    texts["hook prompt (2 KB)"] = _near(2_048)
    texts.update({f"hostile: {name}": text for name, text in HOSTILE.items()})
    for name, text in texts.items():
        seconds = _timed(text, args.runs)
        rate = len(text) / seconds / 1e6 if seconds else float("inf")
        print(f"{name:30s} chars={len(text):>9,d}  median {seconds * 1e3:9.3f} ms  {rate:8.1f} M chars/s")


if __name__ == "__main__":
    main()
