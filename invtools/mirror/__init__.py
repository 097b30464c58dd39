"""TransactionMirror: a local SQLite copy of one team's transactions, kept in sync by revision.

The API has no change feed and no "updated since" filter: the only way to see edits is to walk
the transaction list and compare each row's ``revision`` with the one stored (spec, part 4).
Lines (the items of a transaction) come only from the detail endpoint, one request each, so the
mirror fetches a detail only when a transaction is new or its revision went up, and keeps it
for good: a transaction's detail at a given revision does not change.

One file per team and service. It records the team's id and name and the API's base URL (never
a token) and refuses to sync a client of another team or another service into it. One sync at
a time: ``sync()`` holds an OS lock on ``<file>.lock`` and refuses to start while another sync
of the same file runs (another notebook, say). Inside (all plain SQLite, readable with any
tool)::

    meta          team id/name/mode, API base URL, schema version
    transactions  one row per transaction ever seen: current revision, removed_at (or NULL)
    revisions     every (id, revision) row ever applied, as the raw JSON the list returned
    details       every (id, revision) detail fetched, raw JSON with its lines
    staging       list rows of the running sync, committed page by page
    changes       the change log: one row per new / edited / removed transaction per sync
    names         the team's items, partners, locations and members as the last sync read
                  them: a rename raises no revision, so the frames name each reference so
    syncs         one row per completed sync (kind, look-back, counts, requests sent)

``sync()`` is four plain steps, each safe to interrupt:

1. walk the list (fresh pages, ``refresh=True``) into ``staging``, committed a page (a window
   sync: ``sync(look_back="90D")``) or a hundred rows (a full one) at a time; a full sync
   walks several chains at once, from the seams the client's last whole walk of the list
   recorded beside its cache (:mod:`invtools.api.walk`);
2. fetch the details that are not stored yet (new rows, raised revisions), each committed as
   it arrives, so a killed or failed sync keeps every detail that arrived;
3. window syncs only: ask the detail endpoint about stored rows from the cutoff on that the
   walk did not see (404 = deleted; otherwise the row was edited to before the cutoff); then
   read the team's lists (items, partners, locations, members: their pages) for the names;
4. apply: update current rows, mark the missing ones removed, append history and change log,
   replace the names (the report says what they renamed), record the run -- all in ONE SQLite
   transaction, so the file is always consistent.

A sync that died anywhere is simply run again: it re-walks the list (cheap) and skips every
detail already stored.

>>> import tempfile, os
>>> from invtools.api import Client
>>> from invtools.sandbox import serve
>>> with serve(rate_limit=0, size=50) as sb, tempfile.TemporaryDirectory() as tmp:
...     client = Client(sb.tokens["shop"], base_url=sb.base_url, cache=False, rate_limit=0,
...                     progress=False)
...     mirror = TransactionMirror(os.path.join(tmp, "shop.sqlite"), client)
...     first, again = mirror.sync(), mirror.sync()
...     client.close()
>>> first.kind, first.new, again.new, again.unchanged, again.details_fetched, again.list_pages
('full', 50, 0, 50, 0, 1)

What lives where:

- :mod:`~invtools.mirror.store` -- the file: default path, schema and version, connection,
  write transactions, one sync at a time (the per-file OS lock), meta, its frames' provenance
  and its summary, staging and storing a detail;
- :mod:`~invtools.mirror.sync` -- the four steps above;
- :mod:`~invtools.mirror.report` -- :class:`SyncReport`, the change-log frame, formatting;
- :mod:`~invtools.mirror.names` -- the team's lists a sync reads, stores and compares (what was
  renamed), which name the frames' references;
- :mod:`~invtools.mirror.export` -- reading a file for a loader (:mod:`invtools.dlt`): its
  rows in batches;
- :mod:`~invtools.mirror.mirror` -- :class:`TransactionMirror`: opening a file for a team
  (its team and service checked, a new file claimed), ``sync()``, and the offline reading
  methods (the client's ``since``/``until``/``type`` on its frames, which carry a
  ``source="mirror"`` provenance);
- :mod:`~invtools.mirror.background` -- :class:`BackgroundSync`: a sync in a background thread
  (``mirror.sync_in_background()``), whose frames hold the newest stretch stored in full while
  a first fill runs (``frames.complete_since``).

May import :mod:`invtools.api` (the client, used through its public methods only),
:mod:`invtools.frames`, and the foundation (``errors``, ``_types``, ``_files``, ``_progress``,
``_clock``);
never ``viz``, ``notebook`` or ``sandbox`` (the example above uses the
sandbox; the code does not).
"""

from __future__ import annotations

from invtools.mirror.background import BackgroundSync
from invtools.mirror.export import batches
from invtools.mirror.mirror import TransactionMirror
from invtools.mirror.report import CHANGE_KINDS, SyncReport
from invtools.mirror.store import default_path

__all__ = [
    "TransactionMirror",
    "BackgroundSync",
    "SyncReport",
    "CHANGE_KINDS",
    "default_path",
    "batches",
]
