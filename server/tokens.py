"""Bearer tokens for the HTTP transports: each token names the one namespace it may use.

The tokens file is a JSON object, token -> namespace. A request's namespace comes from its
verified token alone, never from a tool argument or the MCP session id. Tokens are compared in
constant time, so response timing says nothing about how much of a guess was right.
"""

import hmac
import json
import re
import stat
from pathlib import Path
from typing import Any

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken, TokenVerifier
from memvm.engine.names import is_name

MIN_TOKEN_CHARS = 16
# "aaaaaaaaaaaaaaaa" is 16 characters and no secret. A random token of 16 hex digits has fewer than
# 6 different characters about once in 30,000 draws; a longer or base64 token practically never.
MIN_DISTINCT_CHARS = 6
# What a bearer token may be made of (RFC 6750's b64token): anything else (a space, NUL, CR or LF)
# could never arrive intact in an Authorization header, or is a file gone wrong.
_TOKEN_CHARS = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
_MAKE_ONE = "make one with: python3 -c 'import secrets; print(secrets.token_urlsafe(24))'"


class TokenFileError(Exception):
    """The tokens file cannot be used; the message says why, in one line."""


def load_tokens(path: str | Path) -> dict[str, str]:
    """token -> namespace from a JSON file; refuses weak, malformed or repeated tokens, unusable
    namespaces, and a file anyone may write to or replace."""
    file = Path(path).expanduser()
    try:
        mode = file.stat().st_mode
        raw = file.read_bytes()
    except OSError as exc:
        raise TokenFileError(f"cannot read the tokens file {path} ({exc.strerror})") from exc
    # The content is judged first: /dev/null, writable by all, is best told it holds no JSON.
    data = _parse(raw, path)
    if mode & stat.S_IWOTH:
        # Anyone on the machine could add a token of their own, for any namespace.
        raise TokenFileError(f"the tokens file {path} is writable by every user; chmod o-w it (or 600)")
    if (folder := _open_folder(file)) is not None:
        raise TokenFileError(
            f"the tokens file {path} is in {folder}, where every user may replace it; "
            "keep it in a folder only you can write"
        )
    if not isinstance(data, _Pairs) or not data:
        raise TokenFileError(f"the tokens file {path} must hold a JSON object of token -> namespace")
    tokens: dict[str, str] = {}
    for token, namespace in data:
        _check_token(token, path)
        if token in tokens:
            # json would keep the last one silently: the earlier namespace would lose its token.
            raise TokenFileError(f"a token appears twice in {path}; give each namespace its own")
        if not is_name(namespace):
            raise TokenFileError(f"a namespace in {path} is not a name of letters, digits and _ . : -")
        tokens[token] = namespace
    return tokens


def _open_folder(file: Path) -> Path | None:
    """A folder, on the way to the file or to what a link names, that every user may write and
    whose entries they may therefore rename or replace (no sticky bit, unlike /tmp)."""
    given = file.absolute()
    for folder in (*given.parents, *file.resolve().parents):
        try:
            mode = folder.stat().st_mode
        except OSError:
            continue
        if mode & stat.S_IWOTH and not mode & stat.S_ISVTX:
            return folder
    return None


def _parse(raw: bytes, path: str | Path) -> Any:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TokenFileError(
            f"the tokens file {path} is not UTF-8 text; save it as UTF-8 JSON mapping tokens to namespaces"
        ) from exc
    if not text.strip():
        raise TokenFileError(
            f"the tokens file {path} is empty, not JSON; give a JSON object mapping tokens to namespaces"
        )
    try:
        return json.loads(text, object_pairs_hook=_Pairs)
    except json.JSONDecodeError as exc:
        raise TokenFileError(
            f"the tokens file {path} is not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); "
            "give a JSON object mapping tokens to namespaces"
        ) from exc


class _Pairs(list[tuple[str, Any]]):
    """A JSON object as its list of pairs, duplicates kept, so that a repeated token can be refused."""


def _check_token(token: str, path: str | Path) -> None:
    if len(token) < MIN_TOKEN_CHARS:
        raise TokenFileError(f"a token in {path} is shorter than {MIN_TOKEN_CHARS} characters; {_MAKE_ONE}")
    if not _TOKEN_CHARS.fullmatch(token):
        raise TokenFileError(
            f"a token in {path} holds a space, a control character (NUL, CR, LF) or another character "
            "that is not a letter, digit or - . _ ~ + / ="
        )
    if len(set(token)) < MIN_DISTINCT_CHARS:
        raise TokenFileError(
            f"a token in {path} has fewer than {MIN_DISTINCT_CHARS} different characters, "
            f"easy to guess; {_MAKE_ONE}"
        )


class NamespaceTokens(TokenVerifier):
    """Verifies a bearer token against the tokens file; the namespace rides in `client_id`."""

    def __init__(self, tokens: dict[str, str]) -> None:
        self._tokens = [(token.encode(), namespace) for token, namespace in tokens.items()]

    async def verify_token(self, token: str) -> AccessToken | None:
        offered = token.encode()
        found = None
        for known, namespace in self._tokens:
            # Every token is compared, so the time taken does not depend on which one matched.
            if hmac.compare_digest(known, offered):
                found = namespace
        return AccessToken(token=token, client_id=found, scopes=[]) if found else None


def token_namespace() -> str | None:
    """The namespace of the request's verified token, or None outside an authenticated request."""
    access = get_access_token()
    return access.client_id if access else None
