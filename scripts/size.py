"""How big the package is, and how many files a call crosses (issue 24's figures).

    python scripts/size.py            # code lines per part, the walk engine, the pacing
    python scripts/size.py --trace    # and the files and functions two frame calls pass through

Code lines: lines of Python that are not blank, not comments and not docstrings (the doctests
in docstrings are kept but not counted). The walk engine and the pacing are named below.

``--trace`` starts the stand-in server (a shop of 600 transactions, no latency, no rate limit),
makes a client with a fresh cache and records, with ``sys.setprofile`` over every thread,
which files and functions of ``invtools`` run during ``client.transactions_df()`` and
``client.lines_df(since="90D")`` (the client's making, the server's code and the team lookup
are not counted).
"""

from __future__ import annotations

import argparse
import ast
import io
import sys
import tempfile
import threading
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "invtools"
#: The modules of the walk engine and of the pacing, as the issue counts them.
WALK_ENGINE = ["api/plan.py", "api/records.py", "api/chains.py", "api/walk.py"]
PACING = ["http/pacing.py", "http/budgetstore.py"]


def code_lines(path: Path) -> int:
    """Lines holding code: not blank, not only a comment, not part of a docstring."""
    source = path.read_text()
    docstrings: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                docstrings.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    lines: set[int] = set()
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in skip and tok.type != tokenize.ENDMARKER:
            lines.update(range(tok.start[0], tok.end[0] + 1))
    return len(lines - docstrings)


def sizes() -> None:
    parts: dict[str, int] = {}
    total = 0
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        part = rel.parts[0] if len(rel.parts) > 1 else "(top level)"
        n = code_lines(path)
        parts[part] = parts.get(part, 0) + n
        total += n
    for part, n in sorted(parts.items(), key=lambda kv: -kv[1]):
        print(f"{n:6,}  {part}")
    print(f"{total:6,}  code lines in invtools/ (issue 24: at most 10,000)")
    for name, files in (("walk engine", WALK_ENGINE), ("pacing", PACING)):
        present = [f for f in files if (PACKAGE / f).exists()]
        lines = sum(len((PACKAGE / f).read_text().splitlines()) for f in present)
        code = sum(code_lines(PACKAGE / f) for f in present)
        print(f"{name}: {len(present)} modules, {lines} lines ({code} of code): {present}")


def trace() -> None:
    import invtools
    from invtools.sandbox import serve

    seen: dict[str, set[str]] = {}
    active = {"on": False}

    def profile(frame, event, _arg):
        if event == "call" and active["on"]:
            file = frame.f_code.co_filename
            if file.startswith(str(PACKAGE)) and "/sandbox/" not in file:
                rel = str(Path(file).relative_to(PACKAGE))
                seen.setdefault(rel, set()).add(frame.f_code.co_qualname)

    with serve(size=600, rate_limit=0) as sb, tempfile.TemporaryDirectory() as tmp:
        client = invtools.Client(
            sb.tokens["shop"], base_url=sb.base_url, cache=Path(tmp) / "c.sqlite", progress=False
        )
        client.team()
        calls = {
            "transactions_df()": client.transactions_df,
            'lines_df(since="90D")': lambda: client.lines_df(since="90D"),
        }
        for call, run in calls.items():
            seen.clear()
            sys.setprofile(profile)
            threading.setprofile(profile)
            active["on"] = True
            try:
                run()
            finally:
                active["on"] = False
                sys.setprofile(None)
                threading.setprofile(None)  # type: ignore[arg-type]
            functions = sum(len(f) for f in seen.values())
            print(f"client.{call}: {len(seen)} files, {functions} functions")
            for file in sorted(seen):
                print(f"    {file} ({len(seen[file])})")
        client.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", action="store_true", help="also trace two frame calls")
    args = ap.parse_args(argv)
    sizes()
    if args.trace:
        trace()
    return 0


if __name__ == "__main__":
    sys.exit(main())
