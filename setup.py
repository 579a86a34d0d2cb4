"""Packaging beyond pyproject.toml: the wheel carries the checkout's project-level folders.

``templates/`` and ``skills/`` (and ``site/``, the docs site, when ``mkdocs build`` made it) live beside
the packages in a checkout; ``build_py`` copies them into ``project/bundled/``, where settings look for
them when the checkout's are not there (``RESOURCES_DIR``). So ``pip install`` of the wheel serves:
``agui-hub serve``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
BUNDLED = ("templates", "skills", "site")


class BuildWithResources(build_py):
    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / "project" / "bundled"
        shutil.rmtree(target, ignore_errors=True)
        for name in BUNDLED:
            if (ROOT / name).is_dir():
                shutil.copytree(ROOT / name, target / name, ignore=shutil.ignore_patterns("__pycache__"))


setup(cmdclass={"build_py": BuildWithResources})
