"""Secret-shaped strings never reach storage: each provider's key shape, on every write path."""

import json
import random
import string
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st
from memvm.engine import EngineConfig
from memvm.engine.errors import InvalidArgument
from memvm.engine.models.pages import Role
from memvm.engine.models.procedures import Outcome, ToolOutcome
from memvm.engine.models.writes import IngestMessage
from memvm.engine.paging import memory
from memvm.engine.paging.history_write import HistoryMessage, write_history
from memvm.engine.paging.memory import Writer
from memvm.engine.procedures import outcomes
from memvm.engine.redaction import redact, redact_value, secret_kinds

from tests.bench.redaction import HOSTILE
from tests.conftest import NS, note, stored_state
from tests.stored import export_of

pytestmark = pytest.mark.anyio

_RNG = random.Random(15)
ALNUM = string.ascii_letters + string.digits
URLSAFE = ALNUM + "_-"


def chars(alphabet: str, count: int) -> str:
    """Random characters: a key of the documented shape, made up here so no real key is in the tree."""
    return "".join(_RNG.choice(alphabet) for _ in range(count))


# (kind, secret): the shapes the providers document, at their documented lengths.
SECRETS = [
    ("anthropic_key", "sk-ant-api03-" + chars(URLSAFE, 93) + "AA"),
    ("openai_key", "sk-proj-" + chars(URLSAFE, 74) + "T3BlbkFJ" + chars(URLSAFE, 74)),
    ("openai_key", "sk-" + chars(ALNUM, 20) + "T3BlbkFJ" + chars(ALNUM, 20)),
    ("openai_key", "sk-" + chars(ALNUM, 48)),
    ("aws_access_key_id", "AKIA" + chars(string.ascii_uppercase + string.digits, 16)),
    ("github_token", "ghp_" + chars(ALNUM, 36)),
    ("github_token", "gho_" + chars(ALNUM, 36)),
    ("github_token", "github_pat_" + chars(ALNUM, 22) + "_" + chars(ALNUM, 59)),
    ("gitlab_token", "glpat-" + chars(URLSAFE, 20)),
    (
        "slack_token",
        "xoxb-" + chars(string.digits, 12) + "-" + chars(string.digits, 13) + "-" + chars(ALNUM, 24),
    ),
    (
        "slack_webhook",
        "https://hooks.slack.com/services/T"
        + chars(ALNUM, 8)
        + "/B"
        + chars(ALNUM, 10)
        + "/"
        + chars(ALNUM, 24),
    ),
    ("stripe_key", "sk_live_" + chars(ALNUM, 24)),
    ("stripe_key", "rk_test_" + chars(ALNUM, 99)),
    ("google_api_key", "AIza" + chars(URLSAFE, 35)),
    ("google_oauth_secret", "GOCSPX-" + chars(URLSAFE, 28)),
    ("sendgrid_key", "SG." + chars(URLSAFE, 22) + "." + chars(URLSAFE, 43)),
    ("twilio_key", "SK" + chars(string.hexdigits.lower()[:16], 32)),
    ("npm_token", "npm_" + chars(ALNUM, 36)),
    ("pypi_token", "pypi-AgEIcHlwaS5vcmc" + chars(URLSAFE, 70)),
    ("huggingface_token", "hf_" + chars(ALNUM, 34)),
    ("jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0." + chars(URLSAFE, 43)),
]
# (text with a secret in context, what stays of it, the secret)
IN_CONTEXT = [
    (
        "aws_secret_access_key = " + (aws := chars(ALNUM + "/+", 40)),
        "aws_secret_access_key = [REDACTED:aws_secret_access_key]",
        aws,
    ),
    (
        "Authorization: Bearer " + (bearer := chars(URLSAFE + ".", 40)),
        "Authorization: Bearer [REDACTED:bearer_token]",
        bearer,
    ),
    (
        "Authorization: Basic dXNlcjpodW50ZXIyLXBhc3N3b3Jk",
        "Authorization: Basic [REDACTED:basic_auth]",
        "dXNlcjpodW50ZXIyLXBhc3N3b3Jk",
    ),
    (
        "postgres://app:" + (password := "s3cr3t-" + chars(ALNUM, 10)) + "@db.internal:5432/prod",
        "postgres://app:[REDACTED:url_password]@db.internal:5432/prod",
        password,
    ),
    (
        "-----BEGIN OPENSSH PRIVATE KEY-----\n"
        + (block := "\n".join(chars(ALNUM + "+/", 70) for _ in range(5)))
        + "\n-----END OPENSSH PRIVATE KEY-----",
        "[REDACTED:private_key]",
        block,
    ),
]
# Ordinary text that looks a little like a secret and must stay as it is.
ORDINARY = [
    "commit 3f1c2a9b8e7d6c5b4a39281706f5e4d3c2b1a098 fixed it",
    "request id 123e4567-e89b-12d3-a456-426614174000",
    "pip install scikit-learn; the sk-learn alias is gone",
    "https://user@example.com/path and https://example.com/a:b@c",
    "Bearer of bad news; basic arithmetic",
    "the disk key AKIA is short",
    "ghp_short and hf_small are not tokens",
]


@pytest.mark.parametrize(("kind", "secret"), SECRETS, ids=[kind for kind, _ in SECRETS])
def test_each_providers_key_shape_is_redacted_and_its_surroundings_kept(kind, secret):
    text = f"export KEY={secret} # from the console"
    redacted = redact(text)
    assert secret not in redacted
    assert redacted == f"export KEY=[REDACTED:{kind}] # from the console"
    assert redact(redacted) == redacted


@pytest.mark.parametrize(("text", "kept", "secret"), IN_CONTEXT)
def test_tokens_passwords_and_private_keys_are_redacted_in_their_context(text, kept, secret):
    assert redact(text) == kept
    assert secret not in redact(text)


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_that_resembles_a_secret_is_left_alone(text):
    assert redact(text) == text


def test_every_string_in_a_json_value_is_redacted_and_its_keys_kept():
    secret = SECRETS[5][1]
    value = {"headers": {"token": secret}, "list": [1, secret, None], "ok": True}
    assert redact_value(value) == {
        "headers": {"token": "[REDACTED:github_token]"},
        "list": [1, "[REDACTED:github_token]", None],
        "ok": True,
    }


async def _stored(db_path) -> str:
    return "\n".join(await export_of(db_path))


@pytest.mark.sqlite_only
async def test_no_write_path_stores_a_secret(engine, db_path):
    secrets = [secret for _, secret in SECRETS] + [secret for _, _, secret in IN_CONTEXT]
    payloads = [secret for _, secret in SECRETS] + [text for text, _, _ in IN_CONTEXT]
    for index, payload in enumerate(payloads):
        await engine.session(NS, "s").remember(
            page=note(f"note {index}: {payload}", summary=f"key {payload}")
        )
        await engine.session(NS, "s").ingest(
            messages=[IngestMessage(role=Role.USER, content=f"use {payload}")]
        )
        await engine.session(NS, "s").record_tool_outcome(
            call=ToolOutcome(
                tool="deploy",
                args={"token": payload, "step": index},
                outcome=Outcome.FAILURE,
                result={"echo": payload},
                error_type="AuthError",
                error_message=f"bad token {payload}",
                goal=f"deploy with {payload}",
            )
        )
        await engine.session(NS, "s").bind_value(tool="vault", args={"id": index}, value={"secret": payload})
    stored = await _stored(db_path)
    assert [secret for secret in secrets if secret in stored] == []
    assert stored.count("[REDACTED:") >= 6 * len(secrets)
    found = await engine.session(NS, "s").search(query=SECRETS[5][1])
    assert found.results == [] or all(SECRETS[5][1] not in hit.snippet for hit in found.results)


@pytest.mark.sqlite_only
async def test_the_write_functions_redact_by_themselves_whoever_calls_them(engine, db_path):
    """Redaction is the write path's, not its caller's: the engine's write functions, called as
    another part of the engine would call them, store no secret either."""
    writer = Writer(db=engine.db, config=engine.config, counter=engine.counter)
    secret = SECRETS[0][1]
    done = await memory.remember(
        writer, namespace=NS, session="s", page=note(f"the key is {secret}"), key=None
    )
    assert done.redacted
    await memory.ingest(
        writer, namespace=NS, session="s", messages=[IngestMessage(role=Role.USER, content=secret)]
    )
    said = HistoryMessage(role=Role.USER, content=f"use {secret}", created_at=1.0, source_id=f"m-{secret}")
    await write_history(writer, namespace=NS, session="h", source="chat", title=secret, messages=[said])
    call = ToolOutcome(tool="deploy", args={"token": secret}, outcome=Outcome.FAILURE, error_message=secret)
    await outcomes.record_tool_outcome(writer, namespace=NS, session="s", call=call)
    stored = await _stored(db_path)
    assert secret not in stored and stored.count("[REDACTED:") >= 5


async def test_remember_reports_each_kind_it_replaced_once_and_not_markers_the_writer_wrote(engine):
    secret = SECRETS[5][1]
    written = await engine.session(NS, "s").remember(
        page=note(f"token {secret}, again {secret}; [REDACTED:password] was already here")
    )
    assert written.redacted == ["github_token"]
    plain = await engine.session(NS, "s").remember(page=note("[REDACTED:password] quoted"))
    assert plain.redacted == []


@pytest.mark.sqlite_only
async def test_redaction_can_be_turned_off(open_engine, db_path):
    engine = await open_engine(EngineConfig(redact_secrets=False))
    secret = SECRETS[5][1]
    await engine.session(NS, "s").remember(page=note(f"keep {secret}"))
    assert secret in await _stored(db_path)


def test_the_aws_cli_json_a_cut_private_key_and_password_settings_are_redacted():
    secret = "".join(_RNG.choice(string.ascii_letters + string.digits + "/+") for _ in range(40))
    printed = f'{{"AccessKeyId": "AKIA{_RNG.randrange(10**15, 10**16)}", "SecretAccessKey": "{secret}"}}'
    assert secret not in redact(printed) and "[REDACTED:aws_secret_access_key]" in redact(printed)

    cut = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAAB\nAAABlwAAAAdzc2gtcn"
    assert redact("key:\n" + cut) == "key:\n[REDACTED:private_key]"

    word = "".join(_RNG.choice(string.ascii_letters) for _ in range(14))
    for setting in (f"password={word}", f'"password": "{word}"', f"PGPASSWORD={word} psql"):
        assert word not in redact(setting), setting
    assert redact("the password is in the vault") == "the password is in the vault"


def test_a_field_named_for_a_secret_loses_its_value_whatever_its_shape():
    value = {
        "SecretAccessKey": "short-but-secret",
        "password": "x1",
        "user": "bob",
        "nested": [{"client_secret": "abc"}],
    }
    assert redact_value(value) == {
        "SecretAccessKey": "[REDACTED:secret]",
        "password": "[REDACTED:password]",
        "user": "bob",
        "nested": [{"client_secret": "[REDACTED:secret]"}],
    }


@pytest.mark.sqlite_only
async def test_speaker_names_error_types_guard_reasons_and_hook_answers_are_stored_redacted(engine, db_path):
    secret = SECRETS[5][1]
    await engine.session(NS, "s").ingest(
        messages=[IngestMessage(role=Role.USER, content="hello", name=secret)]
    )
    await engine.session(NS, "s").record_tool_outcome(
        call=ToolOutcome(tool="deploy", args={}, outcome=Outcome.FAILURE, error_type=f"Auth {secret}")
    )
    # The guard's reason quotes the argument's path, here a secret.
    checked = await engine.session(NS, "s").check_tool_call(tool="pay", args={secret: 12.5})
    assert secret in " ".join(reason.message for reason in checked.reasons)
    await engine.hook_events.record(
        namespace=NS,
        host="claude-code",
        session="s",
        digest="d1",
        event="PreToolUse",
        answer=f"denied {secret}",
    )
    on_disk = stored_state(db_path)
    assert secret.encode() not in on_disk
    assert b"[REDACTED:github_token]" in on_disk


async def test_a_key_or_alias_that_looks_like_a_secret_is_refused_and_kept_with_redaction_off(open_engine):
    secret = SECRETS[5][1]
    engine = await open_engine()
    with pytest.raises(InvalidArgument, match="github_token"):
        await engine.session(NS, "s").remember(page=note("the deploy token"), key=secret)
    with pytest.raises(InvalidArgument, match="github_token"):
        await engine.session(NS, "s").bind_value(tool="t", args={}, value=1, name=secret)
    keeping = await open_engine(EngineConfig(redact_secrets=False))
    stored = await keeping.session(NS, "s").remember(page=note("the deploy token"), key=secret)
    assert stored.page_id == secret


@pytest.mark.parametrize("text", HOSTILE.values(), ids=list(HOSTILE))
def test_redaction_takes_time_linear_in_the_text_whatever_it_holds(text):
    started = time.perf_counter()
    redact(text)
    # A sanity bound, not a measurement (a busy machine is slow): a linear pass over 300 KB takes
    # milliseconds, a quadratic one billions of steps.
    assert time.perf_counter() - started < 60


MISSED_BEFORE = [
    ('{"out": "line1\\nghp_' + (gh := chars(ALNUM, 36)) + '"}', gh),
    ("id_AKIA" + (aws_id := chars(string.ascii_uppercase + string.digits, 16)) + " in the log", aws_id),
    ("ghp_" + (gh2 := chars(ALNUM, 36)) + "_suffix", gh2),
    ("redis://:" + (redis := "Hook" + chars(ALNUM, 10)) + "@cache:6379", redis),
    ("HTTPS://alice:" + (upper := "pw" + chars(ALNUM, 10)) + "@example.com", upper),
    ('password="correct horse battery staple"', "horse battery staple"),
    ("password=ab,S3cretRest", "S3cretRest"),
]


@pytest.mark.parametrize(("text", "secret"), MISSED_BEFORE)
def test_secrets_after_escapes_prefixes_and_in_passphrases_are_redacted(text, secret):
    assert secret not in redact(text)


PROSE = [
    "We need basic understanding of the basic implementation of quicksort",
    "Basic authentication is disabled",
    "PWD=/home/alice/project and pwd: /home/alice",
    "password: required; reset your password: click here",
    "The bearer instrument-of-choice",
]


@pytest.mark.parametrize("text", PROSE)
def test_prose_after_words_that_precede_secrets_is_left_alone(text):
    assert redact(text) == text


def test_fields_named_for_secrets_lose_any_value_and_keys_are_redacted_too():
    key = "ghp_" + chars(ALNUM, 36)
    value = {"secret": "plain", "api_key": "x", "token": 12345678, "password": ["x"], key: "keyed"}
    assert redact_value(value) == {
        "secret": "[REDACTED:secret]",
        "api_key": "[REDACTED:secret]",
        "token": "[REDACTED:secret]",
        "password": "[REDACTED:password]",
        "[REDACTED:github_token]": "keyed",
    }


def password() -> str:
    """A made-up password with letters and digits (as a password checker asks for)."""
    return chars(string.ascii_letters, 6) + chars(string.digits, 3) + chars(ALNUM, 3)


def key(count: int = 32) -> str:
    return chars(string.ascii_letters, 4) + chars(string.digits, 2) + chars(ALNUM, count - 6)


def typed(case: str, around: str, kind: str, secret: str | None = None) -> tuple[str, str, str, str]:
    """(case, text, secret, kind): `around` with %s replaced by `secret`, by default a made-up one
    of its kind."""
    value = secret or (password() if kind == "password" else key())
    return case, around.replace("%s", value), value, kind


def in_json(depth: int, field: str) -> str:
    """A JSON object with `field` set to %s, as a JSON string inside another `depth` times."""
    text = json.dumps({field: "%s"})
    for _ in range(depth):
        text = json.dumps({"body": text})
    return text


# Secrets in the shapes people type into a prompt or a command, or that a command prints, each in
# the context it comes in.
TYPED = [
    typed("--password VALUE", "deploy --password %s --verbose", "password"),
    typed("--db-password=VALUE", "app migrate --db-password=%s", "password"),
    typed("mysql -pVALUE", "mysql -u root -p%s -e 'select 1'", "password", password() + "!"),
    typed("mysqldump -p'VALUE'", "mysqldump -uroot -p'%s' shop > shop.sql", "password", password() + " x"),
    typed("curl -u user:pass", "curl -u deploy:%s https://ci.example.com/api", "password"),
    typed("curl --user 'user:pass'", "curl -s --user 'deploy:%s' https://x.test", "password"),
    typed("sshpass -p 'x'", "sshpass -p '%s' ssh -p 2222 admin@10.0.0.5", "password"),
    typed("htpasswd -b f user x", "htpasswd -b /etc/nginx/.htpasswd alice %s", "password"),
    typed("htpasswd -nbB user x", "htpasswd -nbB alice '%s' >> users", "password"),
    typed("docker login -p", "docker login -u bob -p %s registry.example.com", "password"),
    typed("openssl -pass pass:x", "openssl enc -aes-256-cbc -pass pass:%s -in a", "password"),
    typed("PHP array", "$db = ['host' => 'localhost', 'password' => '%s'];", "password"),
    typed("PHP define", "define( 'DB_PASSWORD', '%s' );", "password"),
    typed("YAML pass", "database:\n  user: app\n  pass: %s\n", "password"),
    typed("env DB_PASS", "DB_HOST=db.internal\nDB_PASS=%s\n", "password"),
    typed("export SMTP_PASS quoted", 'export SMTP_PASS="%s"', "password", password() + " and more"),
    typed("env *_API_KEY", "OPENAI_API_KEY=%s", "secret"),
    typed("env *_SECRET_KEY quoted", "DJANGO_SECRET_KEY='%s'", "secret", key(50)),
    typed("export *_TOKEN", "export SLACK_BOT_TOKEN=%s", "secret"),
    typed("compose *_SECRET", "    environment:\n      STRIPE_WEBHOOK_SECRET: %s", "secret"),
    typed("X-Api-Key header", "curl -H 'X-Api-Key: %s' https://api.example.com", "secret"),
    typed("PRIVATE-TOKEN header", "PRIVATE-TOKEN: %s", "secret", key(20)),
    typed("--token VALUE", "npm publish --token %s", "secret"),
    typed("JSON api_key", json.dumps({"service": "maps", "api_key": "%s"}), "secret"),
    typed("api key in a URL's query", "GET https://x.test/v1?api_key=%s&q=oslo", "secret"),
    typed("password in JSON in a JSON string", in_json(1, "password"), "password"),
    typed("password in doubly escaped JSON", in_json(2, "password"), "password"),
    typed(
        "Bearer and 24 lowercase letters",
        "Authorization: Bearer %s",
        "bearer_token",
        chars(string.ascii_lowercase, 24),
    ),
]
# Provider keys with a character that shows as nothing inside them (pasted, or put there to slip by).
INVISIBLE = [
    ("U+200B in a Stripe key", "sk_live_" + chars(ALNUM, 12), "\u200b", chars(ALNUM, 12), "stripe_key"),
    ("U+200C in a GitHub token", "ghp_" + chars(ALNUM, 18), "\u200c", chars(ALNUM, 18), "github_token"),
    (
        "U+200D in an AWS key id",
        "AKIA" + chars(string.ascii_uppercase, 8),
        "\u200d",
        chars(string.ascii_uppercase, 8),
        "aws_access_key_id",
    ),
    ("U+2060 in a Google key", "AIza" + chars(URLSAFE, 20), "\u2060", chars(ALNUM, 15), "google_api_key"),
    (
        "U+FEFF in a Slack token",
        "xoxb-" + chars(string.digits, 12),
        "\ufeff",
        chars(ALNUM, 20),
        "slack_token",
    ),
]
# (case, text): what a person expects to find as they wrote it. A lone `mysql -p` or `curl -u user`
# asks for the password; a variable names a secret without holding it; code passes names around.
UNTOUCHED = [
    ("a password policy", "the password policy requires 12 characters"),
    ("mysql asks for the password", "mysql -u root -p"),
    ("mysql -p, then the database", "mysql -u root -p shop"),
    ("docker's port flag", "docker run -p 8080:80 nginx"),
    ("ssh's port flag", "ssh -p 2222 admin@example.com"),
    ("ls -p", "ls -p"),
    ("pytest's plugin flag", "python -m pytest -p no:cacheprovider"),
    ("a commit message", "git commit -m 'fix token refresh'"),
    ("export PATH", "export PATH=/usr/local/bin:$PATH"),
    ("MAX_TOKENS", "MAX_TOKENS=4096"),
    ("a count named _TOKEN", "MAX_TOKEN=4096"),
    ("max_tokens as an argument", "client.create(model=m, max_tokens=4096)"),
    ("--max-tokens", "llm --max-tokens 4096 'hello'"),
    ("curl asks for the password", "curl -u alice https://example.com"),
    ("docker's user flag", "docker run -u 1000:1000 alpine id"),
    ("sshpass reads a file", "sshpass -f ~/.pw ssh -p 2222 host"),
    ("htpasswd asks for the password", "htpasswd -c .htpasswd alice"),
    ("variables, not their values", 'curl -H "X-Api-Key: $API_KEY" -u "$USER:$PASS" https://x.test'),
    ("a flag given a variable", "gh release upload --token $GITHUB_TOKEN && mysql -uroot -p$MYSQL_PWD"),
    ("a template's secret", "GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}\nAPI_KEY=${API_KEY}"),
    ("a header named in prose", "the X-Api-Key header is required"),
    ("an empty setting", "GITHUB_TOKEN="),
    ("a URL named for a token", "TOKEN_URL=https://example.com/oauth/token"),
    ("code reading a token", "token = tokens[0]\napi_key = os.environ['API_KEY']"),
    ("type annotations", "def sign(private_key: PKCS7PrivateKeyTypes, api_key: str) -> None:"),
    ("names passed as arguments", "login(token=hf_token, password=password)"),
    ("a default of None", "def connect(user, password=None):"),
    ("a comparison", "if self.password == other.password:"),
    ("PHP hashing a password", "'password' => Hash::make($request->password),"),
    ("pass as a verb", "pass: the ball to Tom"),
    ("a test count", "Pass: 12, Fail: 0"),
    ("pass inside words", "bypass: true\ncompass: north"),
    ("a keyword argument ending in _pass", "demote(pages, single_pass=True)"),
    ("a flag named in prose", "run it with the --password option"),
    ("bearer in prose", "Bearer tokens must be refreshed hourly"),
    (
        "joiners in an emoji and in Persian",
        "\U0001f469\u200d\U0001f4bb and \u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645",
    ),
]


@pytest.mark.parametrize(("text", "secret", "kind"), [case[1:] for case in TYPED], ids=[c[0] for c in TYPED])
def test_a_secret_typed_in_a_command_or_setting_is_redacted_and_named(text, secret, kind):
    redacted = redact(text)
    assert secret not in redacted
    assert secret_kinds(text) == [kind]
    assert redact(redacted) == redacted


@pytest.mark.parametrize(
    ("head", "invisible", "tail", "kind"), [case[1:] for case in INVISIBLE], ids=[c[0] for c in INVISIBLE]
)
def test_a_provider_key_with_an_invisible_character_inside_is_redacted(head, invisible, tail, kind):
    text = f"the key is {head}{invisible}{tail}, keep it safe"
    redacted = redact(text)
    assert head not in redacted and tail not in redacted
    assert redacted == f"the key is [REDACTED:{kind}], keep it safe"


@pytest.mark.parametrize("text", [text for _, text in UNTOUCHED], ids=[case for case, _ in UNTOUCHED])
def test_ordinary_commands_code_and_prose_are_left_as_written(text):
    assert redact(text) == text


async def test_remember_names_the_kind_of_each_typed_secret_and_stores_none(engine):
    for case, text, secret, kind in TYPED:
        written = await engine.session(NS, "s").remember(page=note(text))
        page = await engine.namespace(NS).get_page(page_id=written.page_id)
        assert (written.redacted, secret in page.levels[0]) == ([kind], False), case


def test_fields_named_like_environment_variables_for_secrets_lose_their_values():
    token, word = key(), password()
    value = {
        "env": {"GITHUB_TOKEN": token, "DB_PASSWORD": word, "SMTP_PASS": word, "MAX_TOKENS": 4096},
        "headers": {"X-Auth-Token": token},
        "pagination": {"first_pass": 3, "bypass": "on", "next_token": "$CURSOR"},
    }
    assert redact_value(value) == {
        "env": {
            "GITHUB_TOKEN": "[REDACTED:secret]",
            "DB_PASSWORD": "[REDACTED:password]",
            "SMTP_PASS": "[REDACTED:password]",
            "MAX_TOKENS": 4096,
        },
        "headers": {"X-Auth-Token": "[REDACTED:secret]"},
        "pagination": {"first_pass": 3, "bypass": "on", "next_token": "$CURSOR"},
    }


# Lines of the cases above, and of ordinary text: what redaction does to one line does not depend on
# the lines around it (each shape but a private key block lies within a line).
_LINES = st.sampled_from(
    [line for _, text, _, _ in TYPED for line in text.splitlines()]
    + [line for _, text in UNTOUCHED for line in text.splitlines()]
    + [line for text in ORDINARY + PROSE for line in text.splitlines()]
)


@given(st.lists(_LINES, min_size=1, max_size=8))
def test_each_line_is_redacted_as_it_would_be_alone(lines):
    assert redact("\n".join(lines)) == "\n".join(redact(line) for line in lines)


@given(st.lists(_LINES, min_size=1, max_size=8).map(" ".join))
def test_redacting_twice_changes_nothing_more(text):
    once = redact(text)
    assert redact(once) == once
