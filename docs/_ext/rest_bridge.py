"""A Markdown extension for the docs site: the docstrings are written for ``help()`` and
doctest (reST-flavoured plain text), the reference renders them as Markdown. This bridges the
two without changing a docstring:

- a doctest example (``>>>`` lines, their continuation and output lines, up to a blank line)
  becomes a fenced ``pycon`` block, shown as a Python session;
- a reST simple table (``====  ====`` borders) becomes a preformatted block, as it reads in
  ``help()``;
- a reST role (``:func:`~invtools.frames.lines_df```) becomes inline code (``lines_df``), and
  a paragraph's closing ``::`` (a literal block follows, indented) a single colon.

Loaded by mkdocs.yml (``markdown_extensions``) with ``docs/_ext`` on the path; nothing else.

>>> import markdown
>>> html = markdown.markdown(">>> 1 + 1\\n2", extensions=[RestBridge(), "fenced_code"])
>>> "<pre>" in html and "&gt;&gt;&gt;" in html
True
>>> _roles("see :func:`~invtools.frames.lines_df` and :class:`pandas.DataFrame`")
'see `lines_df` and `pandas.DataFrame`'
"""

from __future__ import annotations

import re

from markdown import Extension
from markdown.preprocessors import Preprocessor

_ROLE = re.compile(r":(?:func|class|meth|data|attr|mod|exc|obj|py:\w+):`(~?)([^`]+)`")
_BORDER = re.compile(r"^\s*=+(\s+=+)+\s*$")


def _roles(line: str) -> str:
    return _ROLE.sub(
        lambda m: f"`{m.group(2).rsplit('.', 1)[-1] if m.group(1) else m.group(2)}`", line
    )


class _Bridge(Preprocessor):
    def run(self, lines: list[str]) -> list[str]:
        out: list[str] = []
        fence: str | None = None  # the open ``` or ~~~ of an existing code block
        mode: str | None = None  # "session" or "table" while one is being wrapped
        borders = 0
        indent = ""
        for line in lines:
            stripped = line.lstrip()
            if mode is None and fence is None and stripped.startswith(("```", "~~~")):
                fence = stripped[:3]
            elif fence is not None:
                if stripped.startswith(fence):
                    fence = None
            elif mode == "session" and not stripped:
                out.append(f"{indent}```")
                mode = None
            elif mode == "table":
                out.append(line)
                borders += bool(_BORDER.match(line))
                if borders == 3:
                    out.append(f"{indent}```")
                    mode = None
                continue
            elif mode is None and stripped.startswith(">>>"):
                indent = line[: len(line) - len(stripped)]
                out.append(f"{indent}```pycon")
                mode = "session"
            elif mode is None and _BORDER.match(line):
                indent = line[: len(line) - len(stripped)]
                out += [f"{indent}```text", line]
                mode, borders = "table", 1
                continue
            elif mode is None:
                line = _roles(line)
                if line.endswith("::") and not line.strip() == "::":
                    line = line[:-1]
            out.append(line)
        if mode is not None:
            out.append(f"{indent}```")
        return out


class RestBridge(Extension):
    def extendMarkdown(self, md) -> None:  # noqa: N802 - Markdown's API
        md.preprocessors.register(_Bridge(md), "rest_bridge", 30)


def makeExtension(**kwargs) -> RestBridge:  # noqa: N802 - Markdown's entry point
    return RestBridge(**kwargs)
