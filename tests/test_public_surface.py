"""One test guards the public surface: every name in __all__ resolves, nothing heavy on import."""

from __future__ import annotations

import subprocess
import sys

import invtools


def test_every_public_name_resolves():
    for name in invtools.__all__:
        assert getattr(invtools, name) is not None, name


def test_import_does_not_pull_in_matplotlib_or_ipywidgets():
    code = ("import sys, invtools; "
            "print(sorted(m for m in ('matplotlib', 'ipywidgets') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
