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
#
# Every pattern runs in time linear in the text, whatever the text: a greedy run that must be
# followed by something (a JWT's dot, a URL's "://") starts only where such a run starts (a
# lookbehind), or is bounded in length, so that no input makes the regex engine rescan the rest of
# the text from every position (a 200 KB tool result once held a write for 38 s). Provider prefixes
# are distinctive enough to need no word boundary before them: a key right after an escaped
# newline ("\nghp_...") or inside an identifier ("id_AKIA...") is still found.
_SHAPES: tuple[tuple[str, str], ...] = (
    # A whole block, or one cut short (`head`, a truncated tool result): everything from its start.
    (
        "private_key",
        r"-----BEGIN (?:[A-Z0-9]+ ){0,4}PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
        r"(?:-----END (?:[A-Z0-9]+ ){0,4}PRIVATE KEY(?: BLOCK)?-----|\Z)",
    ),
    ("anthropic_key", r"sk-ant-[a-z]{1,20}\d{0,4}-[A-Za-z0-9_\-]{32,}"),
    ("openai_key", r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,200}T3BlbkFJ[A-Za-z0-9_\-]{20,200}"),
    ("openai_key", r"(?<![A-Za-z0-9])sk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{40,}"),
    ("openai_key", r"(?<![A-Za-z0-9])sk-[A-Za-z0-9]{48}(?![A-Za-z0-9])"),
    ("aws_access_key_id", r"(?<![A-Z])(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}(?![0-9A-Z])"),
    (
        "aws_secret_access_key",
        # Also the AWS CLI's JSON ("SecretAccessKey": "...") and SDK settings.
        r"(?i)(?P<keep>(?:aws_?)?secret_?access_?key[\"']?\s*[:=]\s*[\"']?)[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])",
    ),
    ("github_token", r"gh[pousr]_[A-Za-z0-9]{36,255}"),
    ("github_token", r"github_pat_[A-Za-z0-9_]{80,}"),
    ("gitlab_token", r"glpat-[A-Za-z0-9_\-]{20,}"),
    ("slack_token", r"xox[abposr]-[A-Za-z0-9\-]{10,}"),
    ("slack_webhook", r"https://hooks\.slack\.com/services/T[A-Za-z0-9_]+/B[A-Za-z0-9_]+/[A-Za-z0-9_]+"),
    ("stripe_key", r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"),
    ("google_api_key", r"AIza[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])"),
    ("google_oauth_secret", r"GOCSPX-[A-Za-z0-9_\-]{28}(?![A-Za-z0-9_\-])"),
    ("sendgrid_key", r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}(?![A-Za-z0-9_\-])"),
    ("twilio_key", r"(?<![A-Za-z])SK[0-9a-f]{32}(?![0-9a-f])"),
    ("npm_token", r"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])"),
    ("pypi_token", r"pypi-AgE[A-Za-z0-9_\-]{50,}"),
    ("huggingface_token", r"(?<![A-Za-z0-9])hf_[A-Za-z0-9]{34,}"),
    ("jwt", r"(?<![A-Za-z0-9_\-])eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    # After the provider shapes, so that a provider's key after "Bearer" is named for what it is.
    # A token holds a digit or both cases (see _PLAUSIBLE): "the bearer instrument-of-choice" is prose.
    ("bearer_token", r"(?i)(?P<keep>\bbearer\s+)(?!\[REDACTED:)[A-Za-z0-9\-._~+/]{16,}=*"),
    # Base64 of user:password, in whole groups of four (see _PLAUSIBLE): "basic understanding" is not.
    ("basic_auth", r"(?i)(?P<keep>\bbasic\s+)(?!\[REDACTED:)[A-Za-z0-9+/]{12,}={0,2}(?![A-Za-z0-9+/=])"),
    # A password given as a setting: quoted whole (a passphrase has spaces), or up to a space.
    (
        "password",
        r"(?i)(?P<keep>(?:password|passwd|passphrase|pwd)[\"']?\s*[:=]\s*(?P<quote>[\"']))"
        r"(?!\[REDACTED:)[^\"'\n]{1,512}(?=(?P=quote))",
    ),
    (
        "password",
        r"(?i)(?P<keep>(?:password|passwd|passphrase|pwd)\s*(?P<sep>[:=])\s*)(?![\"'\[])[^\s\"']{1,512}",
    ),
    # scheme://user:password@host, the user possibly empty (redis://:password@host).
    (
        "url_password",
        r"(?P<keep>(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]{0,31}://[^\s:/?#@\[\]]{0,256}:)"
        r"(?!\[REDACTED:)[^\s/?#@]{1,256}(?=@[^\s@]+)",
    ),
)
_COMPILED = tuple((kind, re.compile(pattern)) for kind, pattern in _SHAPES)
# Every shape starts with one of these: text holding none of them is returned at once.
_CUES = re.compile(
    r"PRIVATE KEY|sk-|AKIA|ASIA|ABIA|ACCA|(?i:secret)|gh[pousr]_|github_pat_|glpat-|xox|hooks\.slack"
    r"|_live_|_test_|AIza|GOCSPX-|SG\.|SK[0-9a-f]|npm_|pypi-|hf_|eyJ|(?i:bearer|basic|passw|passphrase|pwd)|://"
)


def redact(text: str) -> str:
    """`text` with every secret-shaped string replaced by `[REDACTED:kind]`."""
    if not _CUES.search(text):
        return text
    for kind, pattern in _COMPILED:
        text = pattern.sub(partial(_replacement, kind=kind), text)
    return text


_MARKED = re.compile(r"\[REDACTED:([a-z_]+)\]")


def marked_kinds(text: str) -> list[str]:
    """The kind of every `[REDACTED:kind]` marker in `text`, in order, repeats kept."""
    return _MARKED.findall(text)


def secret_kinds(text: str) -> list[str]:
    """The kinds of secret `text` holds, in order of appearance, each once (none: [])."""
    redacted = redact(text)
    return [] if redacted == text else list(dict.fromkeys(_MARKED.findall(redacted)))


# Keys whose string value is a secret whatever its shape (the AWS CLI's SecretAccessKey, a
# password field): the value goes whole.
_SECRET_KEYS = re.compile(
    r"(?i)^(?:aws_?)?secret_?access_?key$|^(?:password|passwd|pwd|passphrase|secret|client_?secret"
    r"|private_?key|api_?key|x-api-key|token|access_?token|refresh_?token|auth_?token|authorization)$"
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
    if redacted != item or item in (None, "", [], {}) or isinstance(item, bool):
        return redacted
    if isinstance(key, str) and _SECRET_KEYS.match(key):
        return _MARK.format(kind="password" if "pass" in key.lower() or key.lower() == "pwd" else "secret")
    return redacted


def _replacement(match: re.Match[str], kind: str) -> str:
    keep = match.groupdict().get("keep") or ""
    if not _plausible(kind, match[0][len(keep) :], match.groupdict().get("sep")):
        return match[0]
    return keep + _MARK.format(kind=kind)


def _plausible(kind: str, value: str, separator: str | None) -> bool:
    """Whether what a pattern matched after its context is a secret, not prose the pattern's context
    words happen to precede ("basic understanding", "password: required", "PWD=/home/alice")."""
    has_digit = any(c.isdigit() for c in value)
    uppers, lowers = sum(c.isupper() for c in value), sum(c.islower() for c in value)
    if kind == "bearer_token":
        return has_digit or (uppers > 0 and lowers > 0)
    if kind == "basic_auth":
        token = value.rstrip("=")
        groups_of_four = len(value) % 4 == 0
        return groups_of_four and (
            has_digit or "+" in token or "/" in token or value.endswith("=") or (uppers >= 2 and lowers >= 2)
        )
    if kind == "password" and separator is not None:
        # Unquoted: a path (PWD=/home/alice) is not a password, nor one word of prose after a colon.
        if value[:1] in "/~":
            return False
        return separator == "=" or not value.rstrip(".,;:!?)").isalpha()
    return True
