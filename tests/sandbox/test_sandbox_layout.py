"""The stand-in server's house rules: it imports nothing of the client side, its modules import
each other without cycles and without each other's private names, each is readable in one
sitting, and the package docstring names every module."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import invtools.sandbox

PACKAGE = Path(invtools.sandbox.__file__).parent
MODULES = {p.stem: ast.parse(p.read_text(), str(p)) for p in sorted(PACKAGE.glob("*.py"))}
MAX_LINES = 450


def imported(tree: ast.Module) -> list[tuple[str, list[str]]]:
    """(module, names) of every import statement, at any depth."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "relative import"
            out.append((node.module, [alias.name for alias in node.names]))
    return out


def sandbox_deps(tree: ast.Module) -> set[str]:
    prefix = "invtools.sandbox."
    return {mod[len(prefix) :].split(".")[0] for mod, _ in imported(tree) if mod.startswith(prefix)}


@pytest.mark.parametrize("name", sorted(MODULES))
def test_imports_nothing_of_invtools_outside_the_sandbox(name):
    for mod, _names in imported(MODULES[name]):
        if mod == "invtools" or mod.startswith("invtools."):
            assert mod.startswith("invtools.sandbox"), f"{name} imports {mod}"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_private_names_of_another_module(name):
    tree = MODULES[name]
    for mod, names in imported(tree):
        assert not [n for n in names if n.startswith("_")], f"{name}: from {mod} import {names}"
    own = {
        n.name
        for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
    }
    own |= {
        t.attr
        for n in ast.walk(tree)
        if isinstance(n, (ast.Assign, ast.AnnAssign))
        for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
        if isinstance(t, ast.Attribute)
    }
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            receiver = node.value.id if isinstance(node.value, ast.Name) else None
            assert receiver in ("self", "cls") or node.attr in own, (
                f"{name}.py line {node.lineno}: .{node.attr} belongs to another module"
            )


def test_no_import_cycles():
    graph = {
        name: sandbox_deps(tree) - {name} for name, tree in MODULES.items() if name != "__init__"
    }
    done: set[str] = set()

    def visit(name: str, path: tuple[str, ...]) -> None:
        assert name not in path, " -> ".join((*path, name))
        if name not in done:
            for dep in graph[name]:
                visit(dep, (*path, name))
            done.add(name)

    for name in graph:
        visit(name, ())


@pytest.mark.parametrize("path", sorted(PACKAGE.glob("*.py")), ids=lambda p: p.name)
def test_each_module_is_readable_in_one_sitting(path):
    assert len(path.read_text().splitlines()) <= MAX_LINES


def declared_deps(doc: str) -> dict[str, set[str]]:
    """The package docstring's module map: module -> the modules its ``->`` names."""
    block = doc.split("What lives where", 1)[1].split("\n\n", 2)[1]
    deps: dict[str, set[str]] = {}
    current = None
    for line in block.splitlines():
        if line[4:5].strip():  # a module's first line
            current = line.split()[0]
            deps[current] = set()
        if "->" in line:
            deps[current] |= {d.strip() for d in line.split("->", 1)[1].split(",")}
    return deps


def test_the_package_docstring_says_what_lives_where_and_what_it_imports():
    declared = declared_deps(invtools.sandbox.__doc__)
    for name, tree in MODULES.items():
        assert ast.get_docstring(tree), f"{name}.py has no docstring"
        if name != "__init__":
            assert name in declared, f"the package docstring does not mention {name}"
            assert declared[name] == sandbox_deps(tree) - {name}, name
