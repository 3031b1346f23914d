"""Secret-shaped strings are cut out of everything memvm stores, before it is stored.

Memory outlives the conversation that wrote it, is searched by every later one, is exported and
backed up: an API key that a tool printed once must not live on in a page, a call log or a bound
value. Each shape of secret (secret_shapes) is a provider's documented key, a private key block,
or a password or token in the context people give one in (a setting, a header, a command's flag),
so that ordinary text, hashes and ids are left alone. A secret is replaced by `[REDACTED:kind]`,
which says what was there without any of it; redacting twice changes nothing more.
"""

import re
from functools import partial
from typing import Any

from memvm.engine.secret_shapes import SHAPES, Shape, is_reference, is_secret_literal

_MARK = "[REDACTED:{kind}]"

# Characters that show as nothing: one inside a key (pasted from a web page or a chat, or put there
# on purpose) would hide it from every shape. They are taken out of a run of the characters keys
# are made of when the run without them is or holds a secret; elsewhere (emoji sequences, scripts
# that join letters with them, a word that holds no secret) the text keeps them.
_INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff"
_KEY_CHARACTERS = "A-Za-z0-9_\\-+/=.:"
_RUN_WITH_INVISIBLES = re.compile(
    f"(?<![{_KEY_CHARACTERS}{_INVISIBLE}])[{_KEY_CHARACTERS}]*+(?:[{_INVISIBLE}]++[{_KEY_CHARACTERS}]++)+"
)
_INVISIBLES = re.compile(f"[{_INVISIBLE}]+")
_CUES = tuple(dict.fromkeys(cue for shape in SHAPES for cue in shape.cues))


def redact(text: str) -> str:
    """`text` with every secret-shaped string replaced by `[REDACTED:kind]`."""
    if any(character in text for character in _INVISIBLE):
        text = _RUN_WITH_INVISIBLES.sub(_visible_if_secret, text)
    return _redacted(text)


def _visible_if_secret(run: re.Match[str]) -> str:
    visible = _INVISIBLES.sub("", run[0])
    return visible if _redacted(visible) != visible else run[0]


def _redacted(text: str) -> str:
    # Each shape runs only where one of its cues is: most texts hold few of them, and looking for
    # a plain string costs a fraction of running a pattern. The cues are looked for once: what the
    # shapes replace on the way adds a cue only inside a marker, which no pattern matches again.
    lowered = text.lower()
    cued = {cue for cue in _CUES if cue in lowered}
    for shape in SHAPES:
        if cued.isdisjoint(shape.cues):
            continue
        replaced = _replaced(shape, text, lowered)
        if replaced != text:
            text, lowered = replaced, replaced.lower()
    return text


def _replaced(shape: Shape, text: str, lowered: str) -> str:
    replace = partial(_replacement, shape=shape)
    lines = _cued_lines(shape.cues, lowered) if shape.in_lines and len(lowered) == len(text) else None
    if lines is None:
        return shape.pattern.sub(replace, text)
    pieces: list[str] = []
    done = 0
    for start, end in lines:
        for match in shape.pattern.finditer(text, start, end):
            pieces += [text[done : match.start()], replace(match)]
            done = match.end()
    pieces.append(text[done:])
    return "".join(pieces)


# Past this many lines holding a cue per character, searching line by line saves nothing.
_LINES_PER_CHAR = 1 / 64


def _cued_lines(cues: tuple[str, ...], lowered: str) -> list[tuple[int, int]] | None:
    """The (start, end) of each line of `lowered` that holds one of `cues`, in order, or None when
    so many do that searching the whole text is quicker. (The lowered text's positions are the
    text's: the caller checks that lowering kept its length.)"""
    found: set[tuple[int, int]] = set()
    most = int(len(lowered) * _LINES_PER_CHAR) + 8
    for cue in cues:
        at = lowered.find(cue)
        while at != -1:
            end = lowered.find("\n", at)
            end = len(lowered) if end == -1 else end
            found.add((lowered.rfind("\n", 0, at) + 1, end))
            if len(found) > most:
                return None
            at = lowered.find(cue, end)
    return sorted(found)


_MARKED = re.compile(r"\[REDACTED:([a-z_]+)\]")


def marked_kinds(text: str) -> list[str]:
    """The kind of every `[REDACTED:kind]` marker in `text`, in order, repeats kept."""
    return _MARKED.findall(text)


def secret_kinds(text: str) -> list[str]:
    """The kinds of secret `text` holds, in order of appearance, each once (none: [])."""
    redacted = redact(text)
    return [] if redacted == text else list(dict.fromkeys(_MARKED.findall(redacted)))


# Keys whose value is a secret whatever its shape (the AWS CLI's SecretAccessKey, a password
# field): the value goes whole.
_SECRET_KEYS = re.compile(
    r"(?i)^(?:aws_?)?secret_?access_?key$|^(?:password|passwd|pwd|passphrase|secret|client_?secret"
    r"|private_?key|api_?key|x-api-key|token|access_?token|refresh_?token|auth_?token|authorization)$"
)
# Keys named for a secret as environment variables and headers are (GITHUB_TOKEN, db_password,
# X-Auth-Token, githubToken): a string under one goes whole, as it would after `NAME=` in an env
# file (see secret_shapes), unless it is a reference or, for a key or token, a number or a word
# too short to be one. `pass` must end a name of several words (bypass and compass are not).
_NAMED_FOR_A_SECRET = re.compile(
    r"(?i)^[a-z0-9_\-]{0,64}?(?:(?P<password>password|passwd|passphrase)|api_?key|secret(?:_?key)?|token"
    r"|private_?key)$|^[a-z0-9_\-]{0,64}[_\-](?P<pass>pass)$"
)


def redact_value(value: Any) -> Any:
    """A JSON value with every string in it, keys too, redacted."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [redact_value(item) for item in value]
    if isinstance(value, dict):
        return {_redact_key(key): _redact_field(key, item) for key, item in value.items()}
    return value


def _redact_key(key: Any) -> Any:
    return redact(key) if isinstance(key, str) else key


def _redact_field(key: Any, item: Any) -> Any:
    """A field's value; under a key named for a secret, any value but nothing at all goes whole,
    named for its shape if it has one."""
    redacted = redact_value(item)
    if redacted != item or item in (None, "", [], {}) or isinstance(item, bool) or not isinstance(key, str):
        return redacted
    if _SECRET_KEYS.match(key):
        return _MARK.format(kind="password" if "pass" in key.lower() or key.lower() == "pwd" else "secret")
    named = _NAMED_FOR_A_SECRET.match(key) if isinstance(item, str) else None
    if named is None or is_reference(item):
        return redacted
    if named["password"] or named["pass"]:
        return _MARK.format(kind="password")
    return _MARK.format(kind="secret") if is_secret_literal(item) else redacted


def _replacement(match: re.Match[str], shape: Shape) -> str:
    keep = match.groupdict().get("keep") or ""
    if not shape.holds_secret(match, match[0][len(keep) :]):
        return match[0]
    return keep + _MARK.format(kind=shape.kind)
