import json

import pytest
from memvm.server.http import is_loopback, transport_security
from memvm.server.tokens import NamespaceTokens, TokenFileError, load_tokens

from tests.commands import run

pytestmark = pytest.mark.anyio

GOOD = "a-long-enough-token-1234"


def write(tmp_path, content):
    path = tmp_path / "tokens.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def test_a_tokens_file_maps_each_token_to_its_namespace(tmp_path):
    assert load_tokens(write(tmp_path, {GOOD: "alice"})) == {GOOD: "alice"}


@pytest.mark.parametrize(
    ("content", "complaint"),
    [
        ("not json", "is not JSON .* give a JSON object mapping tokens to namespaces"),
        ("", "is empty, not JSON; give a JSON object mapping tokens to namespaces"),
        ("\xff\xfe{}".encode("latin-1"), "is not UTF-8 text"),
        ([GOOD], "JSON object"),
        ({}, "JSON object"),
        ({"short": "alice"}, "shorter than 16"),
        ({f" {GOOD}": "alice"}, "holds a space, a control character"),
        ({GOOD: "no spaces allowed"}, "namespace"),
        ({GOOD: 7}, "namespace"),
        # `$` of a pattern passes a final newline unless the whole name is matched.
        ({GOOD: "alice\n"}, "namespace"),
    ],
)
def test_an_unusable_tokens_file_is_refused_with_the_reason(tmp_path, content, complaint):
    with pytest.raises(TokenFileError, match=complaint):
        load_tokens(write(tmp_path, content))


@pytest.mark.parametrize(
    ("content", "complaint"),
    [
        # json keeps the last of two equal keys: alice's token would silently serve bob.
        (f'{{"{GOOD}": "alice", "{GOOD}": "bob"}}', "a token appears twice"),
        ({"a" * 16: "alice"}, "fewer than 6 different characters"),
        ({"abababababababab": "alice"}, "fewer than 6 different characters"),
        ({GOOD[:8] + "\x00" + GOOD[8:]: "alice"}, "control character"),
        ({GOOD + "\r\n": "alice"}, "control character"),
        ({GOOD[:8] + "\r\n" + GOOD[8:]: "alice"}, "control character"),
        ({GOOD[:8] + " " + GOOD[8:]: "alice"}, "control character"),
        ({GOOD: {"namespace": "alice"}}, "namespace"),
    ],
)
def test_a_weak_repeated_or_malformed_token_is_refused_in_one_line(tmp_path, content, complaint):
    with pytest.raises(TokenFileError, match=complaint) as refused:
        load_tokens(write(tmp_path, content))
    assert "\n" not in str(refused.value)


def test_a_tokens_file_anyone_may_write_is_refused(tmp_path):
    path = write(tmp_path, {GOOD: "alice"})
    path.chmod(0o666)
    with pytest.raises(TokenFileError, match="writable by every user; chmod o-w"):
        load_tokens(path)
    path.chmod(0o640)
    assert load_tokens(path) == {GOOD: "alice"}


@pytest.mark.parametrize("sticky", [False, True])
def test_a_tokens_file_in_a_folder_anyone_may_write_is_refused_unless_the_folder_is_sticky(tmp_path, sticky):
    shared = tmp_path / "shared"
    shared.mkdir()
    path = write(shared, {GOOD: "alice"})
    path.chmod(0o600)
    shared.chmod(0o1777 if sticky else 0o777)
    link = tmp_path / "tokens-link.json"
    link.symlink_to(path)
    for named in (path, link):
        if sticky:
            assert load_tokens(named) == {GOOD: "alice"}
        else:
            with pytest.raises(TokenFileError, match="where every user may replace it") as refused:
                load_tokens(named)
            assert "\n" not in str(refused.value)


def _serve_refused(tmp_path, *flags: str) -> str:
    """The one line `memvm serve` refuses its settings with (exit 2, nothing on stdout)."""
    return run("serve", "--db", tmp_path / "m.db", *flags).refusal()


def test_the_cli_says_an_empty_tokens_file_is_not_json_in_one_sentence(tmp_path):
    assert _serve_refused(tmp_path, "--transport", "streamable-http", "--tokens", "/dev/null") == (
        "memvm: the tokens file /dev/null is empty, not JSON; give a JSON object mapping tokens to namespaces"
    )


def test_the_cli_refuses_a_repeated_token_in_one_line_without_a_traceback(tmp_path):
    tokens = write(tmp_path, f'{{"{GOOD}": "alice", "{GOOD}": "bob"}}')
    line = _serve_refused(tmp_path, "--transport", "streamable-http", "--tokens", str(tokens))
    assert line.startswith("memvm: a token appears twice")


async def test_only_an_exact_token_is_accepted_and_it_carries_its_namespace():
    verifier = NamespaceTokens({GOOD: "alice", "another-token-56789012": "bob"})
    assert (await verifier.verify_token(GOOD)).client_id == "alice"
    assert (await verifier.verify_token("another-token-56789012")).client_id == "bob"
    for guess in (GOOD[:-1], GOOD + "x", GOOD.upper(), "", "alice"):
        assert await verifier.verify_token(guess) is None


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("localhost", True),
        ("::1", True),
        ("[::1]", True),
        ("0.0.0.0", False),
        ("10.0.0.5", False),
        ("example.com", False),
    ],
)
def test_loopback_addresses_are_recognised(host, loopback):
    assert is_loopback(host) is loopback


def test_a_wide_bind_keeps_dns_rebinding_protection_with_explicit_hosts():
    settings = transport_security("0.0.0.0", 9000, ["memvm.lan"])
    assert settings.enable_dns_rebinding_protection is True
    assert settings.allowed_hosts == ["0.0.0.0:9000", "memvm.lan:9000"]
    assert "http://memvm.lan:9000" in settings.allowed_origins


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--transport", "streamable-http", "--host", "0.0.0.0"],
            "refusing to listen on 0.0.0.0 without --tokens",
        ),
        (
            ["--transport", "sse", "--host", "192.168.1.20"],
            "refusing to listen on 192.168.1.20 without --tokens",
        ),
        (["--tokens", "whatever.json"], "--tokens applies to the HTTP transports"),
        # A budget the reserve for the rules and the manifest eats whole: nothing could ever load.
        (["--budget-tokens", "1000"], "a budget of 1,000 tokens leaves 0 for pages once the 1,"),
        (["--budget-tokens", "1800"], "a budget of 1,800 tokens leaves "),
        (["--budget-tokens", "0"], "invalid setting: budget-tokens must be greater than or equal to 1000"),
    ],
)
def test_settings_that_would_expose_the_memory_or_hold_nothing_are_refused_with_one_line(
    tmp_path, flags, message
):
    assert _serve_refused(tmp_path, *flags).startswith(f"memvm: {message}")
    assert not (tmp_path / "m.db").exists()
