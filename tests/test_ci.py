"""The README's test instructions and the CI script agree on what a fresh machine needs."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_readme_lists_exactly_the_system_packages_ci_installs() -> None:
    readme = (REPO / "README.md").read_text()
    ci = (REPO / ".ci" / "run").read_text()
    [listed] = re.findall(r"^apt-get install ([a-z0-9. -]+)$", readme, re.MULTILINE)
    [installed] = re.findall(r"^PACKAGES=\(([^)]*)\)$", ci, re.MULTILINE)
    assert listed.split() == installed.split()
    for package in ("git", "chromium", "chromium-driver", "docker.io", "busybox-static",
                    "bubblewrap"):  # fmt: skip
        assert package in listed.split()
        assert f"`{package}`" in readme  # and the README says what it is for
