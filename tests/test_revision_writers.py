"""One function writes revisions (SPEC §14): ``lens.revisions.record_revision``, which
every change of declarations calls, in its transaction. The only other writer of
revision rows is a bundle's import replaying the bundle's history as it was (numbers,
times, authors): that history is no change made now. Read from the source alone.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("lens", "memory", "kvstore", "webhooks")
WRITES = re.compile(r"\bRevision\.objects\.(create|bulk_create|get_or_create|update_or_create)\b")
# The file, and the one write it may hold.
ALLOWED = {
    "lens/revisions.py": "create",  # record_revision
    "memory/bundles/importing.py": "bulk_create",  # the bundle's history, as it was
}


def test_only_record_revision_and_a_bundles_history_write_revisions() -> None:
    found = {
        f"{path.relative_to(ROOT)}": [match.group(1) for match in WRITES.finditer(path.read_text())]
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if "migrations" not in path.parts
    }
    writers = {path: kinds for path, kinds in found.items() if kinds}
    assert writers == {path: [kind] for path, kind in ALLOWED.items()}
