"""Secret-shaped strings are cut out of everything memvm stores, before it is stored.

Memory outlives the conversation that wrote it, is searched by every later one, is exported and
backed up: an API key that a tool printed once must not live on in a page, a call log or a bound
value. Each pattern below is the documented shape of one kind of secret (a provider's key
prefix and length, a private key block, a bearer token, a password in a URL), so that ordinary
text, hashes and ids are left alone. A secret is replaced by `[REDACTED:kind]`, which says what
was there without any of it; redacting twice changes nothing more.
"""

import re
from functools import partial
from typing import Any

_MARK = "[REDACTED:{kind}]"

# (kind, pattern): the whole match is replaced, except a pattern's group "keep", which stays
# (the "Bearer " before a token, the user before a URL's password).
_SHAPES: tuple[tuple[str, str], ...] = (
    (
        "private_key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----",
    ),
    # A block cut short (`head`, a truncated tool result): everything from its start.
    ("private_key", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*"),
    ("anthropic_key", r"\bsk-ant-[a-z]+\d*-[A-Za-z0-9_\-]{32,}"),
    ("openai_key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}T3BlbkFJ[A-Za-z0-9_\-]{20,}"),
    ("openai_key", r"\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{40,}"),
    ("openai_key", r"\bsk-[A-Za-z0-9]{48}\b"),
    ("aws_access_key_id", r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b"),
    (
        "aws_secret_access_key",
        # Also the AWS CLI's JSON ("SecretAccessKey": "...") and SDK settings.
        r"(?i)(?P<keep>(?:aws_?)?secret_?access_?key[\"']?\s*[:=]\s*[\"']?)[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])",
    ),
    ("github_token", r"\bgh[pousr]_[A-Za-z0-9]{36,255}\b"),
    ("github_token", r"\bgithub_pat_[A-Za-z0-9_]{80,}\b"),
    ("gitlab_token", r"\bglpat-[A-Za-z0-9_\-]{20,}"),
    ("slack_token", r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"),
    ("slack_webhook", r"https://hooks\.slack\.com/services/T[A-Za-z0-9_]+/B[A-Za-z0-9_]+/[A-Za-z0-9_]+"),
    ("stripe_key", r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"),
    ("google_api_key", r"\bAIza[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])"),
    ("google_oauth_secret", r"\bGOCSPX-[A-Za-z0-9_\-]{28}(?![A-Za-z0-9_\-])"),
    ("sendgrid_key", r"\bSG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}(?![A-Za-z0-9_\-])"),
    ("twilio_key", r"\bSK[0-9a-f]{32}\b"),
    ("npm_token", r"\bnpm_[A-Za-z0-9]{36}\b"),
    ("pypi_token", r"\bpypi-AgE[A-Za-z0-9_\-]{50,}"),
    ("huggingface_token", r"\bhf_[A-Za-z0-9]{34,}\b"),
    ("jwt", r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    # After the provider shapes, so that a provider's key after "Bearer" is named for what it is.
    ("bearer_token", r"(?i)(?P<keep>\bbearer\s+)(?!\[REDACTED:)[A-Za-z0-9\-._~+/]{16,}=*"),
    ("basic_auth", r"(?i)(?P<keep>\bbasic\s+)(?!\[REDACTED:)[A-Za-z0-9+/]{12,}={0,2}(?![A-Za-z0-9+/=])"),
    # A password given as a setting (`password=...`, `"password": "..."`, `PGPASSWORD=...`).
    (
        "password",
        r"(?i)(?P<keep>(?:password|passwd|pwd)[\"']?\s*[:=]\s*[\"']?)(?!\[REDACTED:)[^\s\"',;&]{4,}",
    ),
    (
        "url_password",
        r"(?P<keep>\b[a-z][a-z0-9+.\-]*://[^\s:/?#@\[\]]+:)(?!\[REDACTED:)[^\s/?#@]+(?=@[^\s@]+)",
    ),
)
_COMPILED = tuple((kind, re.compile(pattern)) for kind, pattern in _SHAPES)
# Every shape starts with one of these: text holding none of them is returned at once.
_CUES = re.compile(
    r"PRIVATE KEY|sk-|AKIA|ASIA|ABIA|ACCA|(?i:secret)|gh[pousr]_|github_pat_|glpat-|xox|hooks\.slack"
    r"|_live_|_test_|AIza|GOCSPX-|SG\.|SK[0-9a-f]|npm_|pypi-|hf_|eyJ|(?i:bearer|basic|passw|pwd)|://"
)


def redact(text: str) -> str:
    """`text` with every secret-shaped string replaced by `[REDACTED:kind]`."""
    if not _CUES.search(text):
        return text
    for kind, pattern in _COMPILED:
        text = pattern.sub(partial(_replacement, kind=kind), text)
    return text


_MARKED = re.compile(r"\[REDACTED:([a-z_]+)\]")


def secret_kinds(text: str) -> list[str]:
    """The kinds of secret `text` holds, in order of appearance, each once (none: [])."""
    redacted = redact(text)
    return [] if redacted == text else list(dict.fromkeys(_MARKED.findall(redacted)))


# Keys whose string value is a secret whatever its shape (the AWS CLI's SecretAccessKey, a
# password field): the value goes whole.
_SECRET_KEYS = re.compile(
    r"(?i)^(?:aws_?)?secret_?access_?key$|^(?:password|passwd|pwd|client_?secret|private_?key)$"
)


def redact_value(value: Any) -> Any:
    """A JSON value with every string in it (keys left as they are) redacted."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [redact_value(item) for item in value]
    if isinstance(value, dict):
        return {key: _redact_field(key, item) for key, item in value.items()}
    return value


def _redact_field(key: Any, item: Any) -> Any:
    if isinstance(key, str) and isinstance(item, str) and item and _SECRET_KEYS.match(key):
        return _MARK.format(kind="password" if "pass" in key.lower() or key.lower() == "pwd" else "secret")
    return redact_value(item)


def _replacement(match: re.Match[str], kind: str) -> str:
    keep = match.groupdict().get("keep") or ""
    return keep + _MARK.format(kind=kind)
