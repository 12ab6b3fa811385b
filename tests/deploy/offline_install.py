"""``python -m tests.deploy.offline_install VENV``: what ``VENV/bin/pip install .`` does for
this checkout, without the network (pip would fetch the build backend and the dependencies) or
a compiler: the packages copied into the virtualenv's site-packages (the C extension built for
the tests included), a ``.pth`` naming the directories where the tests' own interpreter has the
dependencies, and the console scripts pip writes from ``[project.scripts]``.

deploy/README.md's procedure test (test_deploy_readme.py) runs it in place of ``pip install``.
"""

from __future__ import annotations

import importlib.metadata
import re
import shutil
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SCRIPT = """#!{python}
import sys
from {module} import {function}
if __name__ == "__main__":
    sys.exit({function}())
"""


def dependency_dirs(requirements: list[str]) -> list[str]:
    """Where this interpreter has each dependency (its transitive ones sit beside it)."""
    found = []
    for requirement in requirements:
        name = re.match(r"[A-Za-z0-9_.-]+", requirement).group(0)  # type: ignore[union-attr]
        where = str(Path(importlib.metadata.distribution(name).locate_file("")).resolve())
        if where not in found:
            found.append(where)
    return found


def install(venv: Path) -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    (site,) = venv.glob("lib/python3*/site-packages")
    for pattern in project["tool"]["setuptools"]["packages"]["find"]["include"]:
        package = pattern.rstrip("*")
        shutil.copytree(
            REPO / package, site / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
        )
    dirs = dependency_dirs(project["project"]["dependencies"])
    (site / "rocketmq_trio_dependencies.pth").write_text("".join(f"{d}\n" for d in dirs))
    for name, target in project["project"]["scripts"].items():
        module, function = target.split(":")
        script = venv / "bin" / name
        script.write_text(
            SCRIPT.format(python=venv / "bin" / "python", module=module, function=function)
        )
        script.chmod(0o755)


if __name__ == "__main__":
    install(Path(sys.argv[1]))
