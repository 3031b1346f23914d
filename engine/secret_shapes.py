"""The shapes of secret that redaction cuts out (see redaction): one pattern per shape, each with
the reason it is drawn as it is.

A provider's key is recognised by itself (its documented prefix and length). A password or a
token of no particular shape is recognised by what stands before it: a setting named for it
(`password=`, `DB_PASS=`, `X-Api-Key:`), or the flag of a command that takes it (`mysql -p`,
`curl -u`, `sshpass -p`). Each pattern keeps that context (its group "keep") and only the value
is replaced; a check on the value then leaves alone what is not a secret but what such words
often precede in prose and code ("password: required", "MAX_TOKEN=4096", "--token $TOKEN").

Every pattern runs in time linear in the text, whatever the text: a greedy run that must be
followed by something (a JWT's dot, a URL's "://") starts only where such a run starts (a
lookbehind), or is bounded in length, and the arguments skipped to reach a command's flag are
bounded in number, so that no input makes the regex engine rescan the rest of the text from every
position (a 200 KB tool result once held a write for 38 s). Provider prefixes are distinctive
enough to need no word boundary before them: a key right after an escaped newline ("\\nghp_...")
or inside an identifier ("id_AKIA...") is still found.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Shape:
    """One shape of secret.

    `cues`: lowercase strings one of which every match holds, so that a text holding none of them
    skips the pattern. `in_lines`: every match lies within one line, so only the lines holding a
    cue need searching; said of the patterns that cannot start with a literal (a word in any case,
    a lookbehind), which the regex engine tries at every position of whatever it searches.
    `holds_secret`: whether what the pattern matched after its group "keep" is a secret rather
    than prose.
    """

    kind: str
    cues: tuple[str, ...]
    pattern: re.Pattern[str]
    in_lines: bool
    holds_secret: Callable[[re.Match[str], str], bool]


def _any(match: re.Match[str], value: str) -> bool:
    return True


def _shape(
    kind: str,
    cues: str,
    pattern: str,
    holds_secret: Callable[[re.Match[str], str], bool] = _any,
    *,
    in_lines: bool = True,
) -> Shape:
    return Shape(kind, tuple(cues.split()), re.compile(pattern), in_lines, holds_secret)


def _provider(kind: str, cues: str, pattern: str) -> Shape:
    """A provider's key: its pattern starts with a literal, so it is searched for in the whole text
    as fast as the literal is."""
    return _shape(kind, cues, pattern, in_lines=False)


def _key(prefix: str, not_after: str) -> str:
    """A provider's key `prefix` where it does not follow a character of the class `not_after`.
    The literal comes first, so that the regex engine jumps from one occurrence to the next; the
    lookbehind after it looks back past it."""
    literal = re.escape(prefix)
    return f"{literal}(?<!{not_after}{literal})"


# A value already replaced is not replaced again: redacting twice changes nothing more.
_FRESH = r"(?!\[REDACTED:)"
# A command's argument as the shell reads it, after a group "q" that holds its opening quote, if
# any: the quoted text (the quotes stay), or a word up to a space, a quote or the command's end.
_ARG = r"(?(q)[^'\"\n]{1,256}(?=(?P=q))|[^\s'\"`;|&<>]{1,256}+)"
_QUOTE = r"(?P<q>['\"])?"


def _args(most: int, flag: str) -> str:
    """Up to `most` other arguments of the same command (never past ; | &, a redirection or the
    line's end) before its `flag`: none of them that flag, so that only its first use is looked at
    (and once its value is replaced, no later argument is taken for it)."""
    return rf"(?:[ \t]+(?!{flag})[^\s;|&<>]++){{0,{most}}}?"


# A setting's value, after a group "q" that holds its opening quote, if any: the quoted text, or,
# unquoted, a password up to a space or a quote (it may hold any other character), a key or token
# up to anything code or a URL's query puts after a value (a comma, a bracket, a semicolon, &).
# The quote may come escaped any number of times, as JSON inside a JSON string has it
# (\"password\": \"x\"), or after a string prefix (Python's b'...').
_SETTING_QUOTE = r"(?:[bBrRuUfF]{1,2}(?=[\"']))?(?P<q>\\*[\"'])?"
_PASSWORD_VALUE = r"(?(q)[^\"'\n]{1,512}(?=(?P=q))|(?![\[{\\])[^\s\"'`]{1,512}+)"
_SECRET_VALUE = r"(?(q)[^\"'\n]{1,512}(?=(?P=q))|(?!\\)[^\s\"'`,;&()\[\]{}<>]{1,512}+)"
_KEY_QUOTE = r"(?:\\*[\"'])?"


def is_reference(value: str) -> bool:
    """Whether `value` is a shell or template variable or a placeholder: it names a secret
    without holding it ($TOKEN, ${{ secrets.TOKEN }}, %API_KEY%, <your-key>)."""
    return value.startswith(("$", "%", "<", "{{"))


def is_secret_literal(value: str) -> bool:
    """Whether a value given to a name for a key or token is one: not a reference, nor a number
    (MAX_TOKEN=4096), nor shorter than any key (a placeholder such as `xxx`)."""
    return not is_reference(value) and len(value) >= 8 and not value.isdigit()


def _command_value(match: re.Match[str], value: str) -> bool:
    """Not a reference, nor the command's next flag."""
    return not is_reference(value) and not value.startswith("-")


def _flag_value(match: re.Match[str], value: str) -> bool:
    """A flag's value, unless unquoted and one plain lower-case word: prose that names the flag
    ("the --password option") or a placeholder (--password secret)."""
    return _command_value(match, value) and (bool(match["q"]) or not (_plain_word(value) and value.islower()))


def _plain_word(value: str) -> bool:
    return value.rstrip(".,;:!?)").isalpha()


_CODE_CONSTANTS = frozenset({"none", "null", "nil", "true", "false", "undefined"})
_DOTTED_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")


def _code(value: str, separator: str, *, constant: bool = False) -> bool:
    """Whether an unquoted value reads as code rather than a literal: a call or an index
    (get_password(), config["password"]), a language's constant (None, null), a dotted name
    (self.password), a name with an underscore or named for a password itself (key_password,
    password=password), or after ` = ` a bare name (password = auth). After an upper-case
    `constant` only a spaced assignment of a call, an index or a name is code
    (CHALLENGE_PASSWORD = ObjectIdentifier(...)): DB_PASSWORD=my_secret_pw is an env file's."""
    bare = value.rstrip(",;:)")
    spaced = separator.startswith((" ", "\t"))
    called = "(" in bare or "[" in bare or _DOTTED_NAME.fullmatch(bare) is not None
    if constant:
        return spaced and called
    lowered = bare.lower()
    return (
        called
        or lowered in _CODE_CONSTANTS
        or (bare.isidentifier() and ("_" in bare or "pass" in lowered or "pwd" in lowered))
        or (spaced and re.fullmatch(r"[A-Za-z_]+", bare) is not None)
    )


def _password_value(match: re.Match[str], value: str) -> bool:
    """Quoted, a password goes whole. A path is not one (PWD=/home/alice, "OLDPWD": "/home"), nor,
    unquoted, one plain word after a colon (prose: "password: required"), nor what follows PHP's
    `=>`, nor code (password=None, password = self.password)."""
    if is_reference(value) or value[:1] in "/~":
        return False
    if match["q"]:
        return True
    separator = match["sep"]
    if "=>" in separator or ("=" not in separator and _plain_word(value)):
        return False
    return not _code(value, separator, constant=match["keep"][:4].isupper())


def _pass_value(match: re.Match[str], value: str) -> bool:
    """An environment variable named for a password (DB_PASS=, SMTP_PASS:) holds one, as after
    `password`. Otherwise `pass` is a common word (pass: the ball, Pass: 12, single_pass=True), so
    the value must look like a password: six characters or more, letters and others, not code."""
    before = match.string[match.start() - 1 : match.start()]
    if before in ("_", "-") and match["keep"].startswith("PASS"):
        return _password_value(match, value)
    bare = value.rstrip(".,;:!?)")
    return (
        not is_reference(bare)
        and bare[:1] not in "/~"
        and len(bare) >= 6
        and any(c.isalpha() for c in bare)
        and not bare.isalpha()
        and not _code(bare, match["sep"])
    )


def _looks_random(value: str) -> bool:
    """Whether an unquoted word reads as a key or token rather than a word or an identifier: at
    least 8 characters with letters and digits, or an unbroken run of 20 letters and digits."""
    has_digit = any(c.isdigit() for c in value)
    has_letter = any(c.isalpha() for c in value)
    return len(value) >= 8 and ((has_digit and has_letter) or (len(value) >= 20 and value.isalnum()))


def _secret_value(match: re.Match[str], value: str) -> bool:
    """A value set under a name for a secret. Quoted, or given to an environment variable (upper
    case, `=`), it is a literal: a secret unless short, a number (MAX_TOKEN=4096) or a reference.
    Unquoted elsewhere it may be code (`token = tokens[0]`, `token=hf_token`, the type in
    `private_key: PKCS7PrivateKeyTypes,`), so it must look random and not be followed by what
    follows a type; after ` = ` it is an expression and stays."""
    if not is_secret_literal(value):
        return False
    if match["q"]:
        return True
    separator = match["sep"]
    if separator.startswith((" ", "\t")) and "=" in separator:
        return False
    if separator == "=" and match["name"].isupper():  # GITHUB_TOKEN=..., not token=hf_token
        return True
    return _looks_random(value) and _TYPE_FOLLOWS.match(match.string, match.end()) is None


# What follows a type annotation's type: a comma or bracket of the signature, a union, a default.
_TYPE_FOLLOWS = re.compile(r"[ \t]*(?:[,)\[|]|=(?!=))")


def _bearer_value(match: re.Match[str], value: str) -> bool:
    """A token holds a digit, both cases, or is one unbroken run of 20 letters or more: "the bearer
    instrument-of-choice" is prose."""
    uppers, lowers = sum(c.isupper() for c in value), sum(c.islower() for c in value)
    has_digit = any(c.isdigit() for c in value)
    return has_digit or (uppers > 0 and lowers > 0) or (len(value) >= 20 and value.isalpha())


def _basic_value(match: re.Match[str], value: str) -> bool:
    """Base64 of user:password, in whole groups of four: "basic understanding" is not."""
    token = value.rstrip("=")
    has_digit = any(c.isdigit() for c in value)
    uppers, lowers = sum(c.isupper() for c in value), sum(c.islower() for c in value)
    return len(value) % 4 == 0 and (
        has_digit or "+" in token or "/" in token or value.endswith("=") or (uppers >= 2 and lowers >= 2)
    )


# In order: the provider shapes first, so that a provider's key in any context is named for what
# it is; then the contexts, each of which skips a value already replaced.
SHAPES: tuple[Shape, ...] = (
    # A whole block, or one cut short (`head`, a truncated tool result): everything from its start.
    _shape(
        "private_key",
        "private",
        r"-----BEGIN (?:[A-Z0-9]+ ){0,4}PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
        r"(?:-----END (?:[A-Z0-9]+ ){0,4}PRIVATE KEY(?: BLOCK)?-----|\Z)",
        in_lines=False,
    ),
    _provider("anthropic_key", "sk-ant-", r"sk-ant-[a-z]{1,20}\d{0,4}-[A-Za-z0-9_\-]{32,}"),
    _provider(
        "openai_key",
        "t3blbkfj",
        r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,200}T3BlbkFJ[A-Za-z0-9_\-]{20,200}",
    ),
    _provider(
        "openai_key",
        "sk-",
        _key("sk-", "[A-Za-z0-9]") + r"(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{40,}",
    ),
    _provider("openai_key", "sk-", _key("sk-", "[A-Za-z0-9]") + r"[A-Za-z0-9]{48}(?![A-Za-z0-9])"),
    # Searched line by line: a lookbehind comes first (the four prefixes share no literal).
    _shape(
        "aws_access_key_id",
        "akia asia abia acca",
        r"(?<![A-Z])(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}(?![0-9A-Z])",
    ),
    # Also the AWS CLI's JSON ("SecretAccessKey": "...") and SDK settings.
    _shape(
        "aws_secret_access_key",
        "secret",
        r"(?i)(?P<keep>(?:aws_?)?secret_?access_?key[\"']?[ \t]*[:=][ \t]*[\"']?)[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])",
    ),
    _provider("github_token", "ghp_ gho_ ghu_ ghs_ ghr_", r"gh[pousr]_[A-Za-z0-9]{36,255}"),
    _provider("github_token", "github_pat_", r"github_pat_[A-Za-z0-9_]{80,}"),
    _provider("gitlab_token", "glpat-", r"glpat-[A-Za-z0-9_\-]{20,}"),
    _provider("slack_token", "xox", r"xox[abposr]-[A-Za-z0-9\-]{10,}"),
    _provider(
        "slack_webhook",
        "hooks.slack",
        r"https://hooks\.slack\.com/services/T[A-Za-z0-9_]+/B[A-Za-z0-9_]+/[A-Za-z0-9_]+",
    ),
    _provider("stripe_key", "_live_ _test_", r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"),
    _provider("google_api_key", "aiza", r"AIza[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])"),
    _provider("google_oauth_secret", "gocspx-", r"GOCSPX-[A-Za-z0-9_\-]{28}(?![A-Za-z0-9_\-])"),
    _provider(
        "sendgrid_key",
        "sg.",
        r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}(?![A-Za-z0-9_\-])",
    ),
    _provider("twilio_key", "sk", _key("SK", "[A-Za-z]") + r"[0-9a-f]{32}(?![0-9a-f])"),
    _provider("npm_token", "npm_", r"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])"),
    _provider("pypi_token", "pypi-", r"pypi-AgE[A-Za-z0-9_\-]{50,}"),
    _provider("huggingface_token", "hf_", _key("hf_", "[A-Za-z0-9]") + r"[A-Za-z0-9]{34,}"),
    _provider(
        "jwt",
        "eyj",
        _key("eyJ", r"[A-Za-z0-9_\-]") + r"[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
    ),
    # After the provider shapes, so that a provider's key after "Bearer" is named for what it is.
    _shape(
        "bearer_token",
        "bearer",
        r"(?i)(?P<keep>\bbearer[ \t]+)" + _FRESH + r"[A-Za-z0-9\-._~+/]{16,}=*",
        _bearer_value,
    ),
    _shape(
        "basic_auth",
        "basic",
        r"(?i)(?P<keep>\bbasic[ \t]+)" + _FRESH + r"[A-Za-z0-9+/]{12,}={0,2}(?![A-Za-z0-9+/=])",
        _basic_value,
    ),
    # scheme://user:password@host, the user possibly empty (redis://:password@host).
    _shape(
        "url_password",
        "://",
        r"(?P<keep>(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]{0,31}://[^\s:/?#@\[\]]{0,256}:)"
        + _FRESH
        + r"[^\s/?#@]{1,256}(?=@[^\s@]+)",
    ),
    # Commands that take a password as an argument, as people type them (and hosts capture them).
    # mysql, mysqldump, mariadb...: the password is glued to -p (`-pS3cr3t!`); a lone `-p` asks
    # for it, and `-p 8080:80` (docker) or `-P 3306` (the port) is another flag.
    _shape(
        "password",
        "mysql mariadb",
        r"(?P<keep>\b(?:mysql|mariadb)[\w-]*" + _args(16, "-p") + r"[ \t]+-p" + _QUOTE + ")" + _FRESH + _ARG,
        _command_value,
    ),
    # curl -u user:password (or --user, or -su in a cluster of flags): without the colon curl asks
    # for the password.
    _shape(
        "password",
        "curl",
        r"(?P<keep>\bcurl\b"
        + _args(32, "-[A-Za-z]*u|--user")
        + r"[ \t]+(?:-[A-Za-z]*u[ \t]*|--user(?:[ \t]+|=))"
        + _QUOTE
        + r"(?![$-])[^\s:'\"]{0,256}+:)"
        + _FRESH
        + _ARG,
        _command_value,
    ),
    # sshpass -p password: only its own options may come first, since the command it runs (ssh -p
    # 2222) has a -p of its own.
    _shape(
        "password",
        "sshpass",
        r"(?P<keep>\bsshpass(?:[ \t]+-v)*[ \t]+-p[ \t]*" + _QUOTE + ")" + _FRESH + _ARG,
        _command_value,
    ),
    # docker login -p password (or podman's): the registry's password or token.
    _shape(
        "password",
        "login",
        r"(?P<keep>\b(?:docker|podman)[ \t]+login"
        + _args(8, "-p")
        + r"[ \t]+-p[ \t]+"
        + _QUOTE
        + ")"
        + _FRESH
        + _ARG,
        _command_value,
    ),
    # htpasswd -b FILE USER PASSWORD (-nb USER PASSWORD): in batch mode (a -b among its options)
    # the password is the argument after the file and the user, or the user alone, that ends the
    # command; without -b, htpasswd asks for it.
    _shape(
        "password",
        "htpasswd",
        r"(?P<keep>\bhtpasswd(?=(?:[ \t]+(?:-[A-Za-z]+|\d+)){0,8}?[ \t]+-[A-Za-z]*b)"
        + r"(?:[ \t]+(?:-[A-Za-z]+|\d+)){1,8}+(?:[ \t]+[^\s;|&<>-][^\s;|&<>]*+){1,2}?[ \t]+"
        + _QUOTE
        + ")"
        + _FRESH
        + _ARG
        + r"(?=(?(q)(?P=q))[ \t]*(?:[\n;|&)#<>]|[0-9]+>|\Z))",
        _command_value,
    ),
    # --password VALUE (--db-password, --passphrase...): a flag that takes the password itself;
    # --password-stdin and --password-file take none.
    _shape(
        "password",
        "pass",
        r"(?i)(?P<keep>(?<![\w-])--(?:[a-z0-9]+-){0,3}(?:password|passwd|passphrase)(?:=|[ \t]+)"
        + _QUOTE
        + ")"
        + _FRESH
        + _ARG,
        _flag_value,
    ),
    # --token VALUE, --api-key VALUE, --client-secret VALUE: the same for keys and tokens
    # (--max-tokens and --token-file are other flags).
    _shape(
        "secret",
        "token api secret",
        r"(?i)(?P<keep>(?<![\w-])--(?:[a-z0-9]+-){0,3}(?:token|api-?key|secret-?key|client-secret)(?:=|[ \t]+)"
        + _QUOTE
        + ")"
        + _FRESH
        + _ARG,
        lambda match, value: _flag_value(match, value) and is_secret_literal(value),
    ),
    # A password given as a setting, in any of the languages people paste: password=..., "password":
    # "...", 'password' => '...' (PHP), password: ... (YAML), DB_PASSWORD=..., with its quotes
    # escaped as JSON inside a JSON string has them. Quoted, it goes whole (a passphrase has spaces).
    _shape(
        "password",
        "pass pwd",
        r"(?i)(?P<keep>(?:password|passwd|passphrase|pwd)"
        + _KEY_QUOTE
        + r"(?P<sep>[ \t]*(?:=>|[:=](?![=>]))[ \t]*)"
        + _SETTING_QUOTE
        + ")"
        + _FRESH
        + _PASSWORD_VALUE,
        _password_value,
    ),
    # define('DB_PASSWORD', '...') in PHP (WordPress's wp-config.php), and its keys and salts
    # (define('AUTH_KEY', '...')).
    _shape(
        "password",
        "define",
        r"(?P<keep>\bdefine\([ \t]*(?P<name_quote>['\"])\w*PASSWORD(?P=name_quote)[ \t]*,[ \t]*(?P<q>['\"]))"
        + _FRESH
        + r"[^'\"\n]{1,512}(?=(?P=q))",
    ),
    _shape(
        "secret",
        "define",
        r"(?P<keep>\bdefine\([ \t]*(?P<name_quote>['\"])\w*(?:KEY|SALT|SECRET|TOKEN)(?P=name_quote)[ \t]*,[ \t]*"
        r"(?P<q>['\"]))" + _FRESH + r"[^'\"\n]{1,512}(?=(?P=q))",
        lambda match, value: is_secret_literal(value),
    ),
    # pass: x (YAML), DB_PASS=..., SMTP_PASS=...: `pass` at the end of a setting's name, not inside a
    # word (bypass, compass).
    _shape(
        "password",
        "pass",
        r"(?i)(?P<keep>(?<![A-Za-z0-9])pass"
        + _KEY_QUOTE
        + r"(?P<sep>:[ \t]*|=(?![=>]))"
        + _SETTING_QUOTE
        + ")"
        + _FRESH
        + _PASSWORD_VALUE,
        _pass_value,
    ),
    # A key or token given as a setting: OPENAI_API_KEY=..., DJANGO_SECRET_KEY=..., GITHUB_TOKEN=...
    # (env files, exports), "api_key": "..." and apiKey: '...' (JSON, YAML, JS), X-Api-Key: ...,
    # X-Auth-Token: ... and PRIVATE-TOKEN: ... (HTTP headers). The match starts at the word that
    # ends the name (whatever precedes it), which must be followed by the setting's separator:
    # MAX_TOKENS, TOKEN_URL and token_type are other settings.
    _shape(
        "secret",
        "token api secret private",
        r"(?i)(?P<keep>(?P<name>api[_\-]?key|secret(?:[_\-]?key)?|token|private[_\-]?key)"
        + _KEY_QUOTE
        + r"(?P<sep>[ \t]*(?:=>|[:=](?![=>]))[ \t]*)"
        + _SETTING_QUOTE
        + ")"
        + _FRESH
        + _SECRET_VALUE,
        _secret_value,
    ),
)
