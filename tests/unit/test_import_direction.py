"""Imports run one way (docs/ARCHITECTURE.md): client/ imports no broker or NameServer code,
and the shared etcdstate/ (auto-failover's layout in etcd) imports none of the processes."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def imported(package: str) -> list[tuple[str, str]]:
    """(file, module) for every module imported anywhere in ``package``'s files."""
    found = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found += [(str(path.relative_to(ROOT)), alias.name) for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.append((str(path.relative_to(ROOT)), node.module))
    return found


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [
        ("client", ("broker", "namesrv", "proxy", "console")),
        ("etcdstate", ("broker", "namesrv", "client", "proxy", "console", "deploy")),
    ],
)
def test_imports_run_one_way(package: str, forbidden: tuple[str, ...]) -> None:
    wrong = [
        (path, module) for path, module in imported(package) if module.split(".")[0] in forbidden
    ]
    assert wrong == []
