"""Bearer tokens for the HTTP transports: each token names the one namespace it may use.

The tokens file is a JSON object, token -> namespace. A request's namespace comes from its
verified token alone, never from a tool argument or the MCP session id. Tokens are compared in
constant time, so response timing says nothing about how much of a guess was right.
"""

import hmac
import json
import re
from pathlib import Path

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken, TokenVerifier
from memvm.server.settings import NAME_PATTERN

MIN_TOKEN_CHARS = 16


class TokenFileError(Exception):
    """The tokens file cannot be used; the message says why, in one line."""


def load_tokens(path: str | Path) -> dict[str, str]:
    """token -> namespace from a JSON file; refuses short tokens and unusable namespaces."""
    try:
        data = json.loads(Path(path).expanduser().read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TokenFileError(f"cannot read the tokens file {path}: {exc}") from exc
    if not isinstance(data, dict) or not data:
        raise TokenFileError(f"the tokens file {path} must hold a JSON object of token -> namespace")
    for token, namespace in data.items():
        if len(token) < MIN_TOKEN_CHARS or token != token.strip():
            raise TokenFileError(f"a token in {path} is shorter than {MIN_TOKEN_CHARS} characters or padded")
        if not isinstance(namespace, str) or not re.match(NAME_PATTERN, namespace):
            raise TokenFileError(f"a namespace in {path} is not a name of letters, digits and _ . : -")
    return dict(data)


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
