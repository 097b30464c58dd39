"""`python -m invtools` is the `invtools` command."""

from invtools.cli import main

raise SystemExit(main())
