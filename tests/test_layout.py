"""The architecture, checked: dependencies point server -> ui -> resources -> engine and hooks ->
engine, only server/ imports mcp, and server/cli/, which assembles the program, is the one place
that imports every package."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ALLOWED = {
    "engine": {"engine"},
    "resources": {"resources", "engine"},
    "server": {"server", "resources", "engine", "ui"},
    "hooks": {"hooks", "engine"},
    "ui": {"ui", "resources", "engine"},
}
# The program's composition root: it gives every package its command (`memvm hook` to the hooks,
# `memvm serve` to the server), so it alone may import them all. It sits inside server/ only
# because the top level holds the product's folders and no other; the rest of server/, the MCP
# server, knows nothing of the hooks.
COMPOSITION_ROOT = Path("server") / "cli"


def allowed_for(path: Path, package: str) -> set[str]:
    if path.relative_to(ROOT).is_relative_to(COMPOSITION_ROOT):
        return set(ALLOWED)
    return ALLOWED[package]


def imported_modules(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_imports_only_point_down_the_layers(package):
    offences = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for name in imported_modules(path):
            parts = name.split(".")
            if parts[0] == "memvm" and len(parts) > 1 and parts[1] not in allowed_for(path, package):
                offences.append(f"{path.relative_to(ROOT)} imports {name}")
            if parts[0] in ("mcp", "mcp_types") and package != "server":
                offences.append(f"{path.relative_to(ROOT)} imports {name}")
            if parts[0] in ALLOWED:
                offences.append(f"{path.relative_to(ROOT)} imports {name} outside the memvm namespace")
    assert offences == []


# Inside the engine: storage is the seam a second backend plugs into, so it knows nothing of what
# the capabilities (paging, guards, procedures) store; they, and the operator's commands, sit on it.
# It knows the engine's errors, settings and clock (each transaction's moment is the clock's).
STORAGE_MAY_IMPORT = {
    "memvm.engine.storage",
    "memvm.engine.errors",
    "memvm.engine.config",
    "memvm.engine.clock",
}


def test_storage_knows_nothing_of_the_capabilities_it_stores():
    offences = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in sorted((ROOT / "engine" / "storage").rglob("*.py"))
        for name in imported_modules(path)
        if name.startswith("memvm.") and not any(name.startswith(allowed) for allowed in STORAGE_MAY_IMPORT)
    ]
    assert offences == []


# Only storage opens a database or asks which backend a name means: everything else reaches a
# database through the storage seam (a Database and its transactions), one code for both backends.
DRIVERS = ("sqlite3", "aiosqlite", "psycopg", "psycopg_pool")
BACKEND_QUESTIONS = ("is_postgres_url",)


def test_only_storage_opens_a_database_or_asks_which_backend():
    offences = []
    for package in ALLOWED:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path.is_relative_to(ROOT / "engine" / "storage"):
                continue
            offences += [
                f"{path.relative_to(ROOT)} imports {name}"
                for name in imported_modules(path)
                if name.split(".")[0] in DRIVERS or name.endswith(BACKEND_QUESTIONS)
            ]
            text = path.read_text()
            offences += [
                f"{path.relative_to(ROOT)} asks {asked}" for asked in BACKEND_QUESTIONS if asked in text
            ]
    assert offences == []


def test_every_model_is_imported_from_the_module_that_owns_it():
    # engine/models/__init__.py is a docstring: a re-export there would hide where a name lives.
    package = ast.parse((ROOT / "engine" / "models" / "__init__.py").read_text())
    assert len(package.body) == 1 and isinstance(package.body[0], ast.Expr)
    owners = {path.stem for path in (ROOT / "engine" / "models").glob("*.py")} - {"__init__"}
    offences = [
        f"{path.relative_to(ROOT)} imports {name}"
        for folder in [*ALLOWED, "tests"]
        for path in sorted((ROOT / folder).rglob("*.py"))
        for name in imported_modules(path)
        if name.startswith("memvm.engine.models") and name.removeprefix("memvm.engine.models.") not in owners
    ]
    assert offences == []


# The engine's settings, which storage reads: they import only each other, so that reading them
# brings in no capability from above storage (the guards' settings once sat in guards/).
SETTINGS = ("config.py", "guard_config.py", "settings_limits.py")


def test_the_engine_settings_sit_below_the_capabilities():
    offences = [
        f"engine/{module} imports {name}"
        for module in SETTINGS
        for name in imported_modules(ROOT / "engine" / module)
        if name.startswith("memvm.") and name.removeprefix("memvm.engine.") + ".py" not in SETTINGS
    ]
    assert offences == []


def test_the_top_level_holds_only_the_product_layout():
    visible = {p.name for p in ROOT.iterdir() if not p.name.startswith(".")}
    visible -= {"memvm.egg-info", "build", "dist"}
    assert visible == {
        "pyproject.toml",
        "engine",
        "resources",
        "server",
        "hooks",
        "ui",
        "tests",
        "docs",
        "claude_desktop_config.example.json",
        "README.md",
    }


def test_the_source_folders_install_under_the_memvm_namespace():
    import memvm.engine
    import memvm.hooks
    import memvm.resources
    import memvm.server
    import memvm.ui

    for module, folder in (
        (memvm.engine, "engine"),
        (memvm.resources, "resources"),
        (memvm.server, "server"),
        (memvm.hooks, "hooks"),
        (memvm.ui, "ui"),
    ):
        assert Path(module.__file__).resolve().parent == ROOT / folder


_DOCUMENTED = {("os", "_exit")}


def private_attributes_reached(path: Path) -> list[str]:
    """`other._name` and `getattr(other, "_name")` in a module: private attributes of objects it does not own."""
    reached = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Attribute):
            owner, name = node.value, node.attr
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) in (
            "getattr",
            "hasattr",
            "setattr",
        ):
            if len(node.args) < 2 or not isinstance(node.args[1], ast.Constant):
                continue
            owner, name = node.args[0], str(node.args[1].value)
        else:
            continue
        private = name.startswith("_") and not name.startswith("__")
        owned = isinstance(owner, ast.Name) and owner.id in ("self", "cls")
        # The standard library's documented underscore names: os._exit ends a process at once.
        documented = isinstance(owner, ast.Name) and (owner.id, name) in _DOCUMENTED
        if private and not owned and not documented:
            reached.append(f"{path.relative_to(ROOT)}:{node.lineno} reaches {name}")
    return reached


def test_only_sdk_internals_reaches_private_attributes_of_the_sdk():
    # One module to update when an mcp release moves them; tests/server/test_sdk_internals.py
    # says which.
    reached = [
        offence
        for path in sorted((ROOT / "server").rglob("*.py"))
        if path.name != "sdk_internals.py"
        for offence in private_attributes_reached(path)
    ]
    assert reached == []
    assert private_attributes_reached(ROOT / "server" / "sdk_internals.py") != []
