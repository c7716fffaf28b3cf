"""``manage.py worker``'s thread count is bounded: each thread holds a database
connection (the runs themselves are in test_workers.py and test_isolation.py)."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command


@pytest.mark.parametrize("threads", ["0", "-1", "33"])
def test_a_thread_count_out_of_bounds_is_refused(threads: str) -> None:
    with pytest.raises(CommandError, match="--threads: from 1 to 32"):
        call_command("worker", "--batch", "--threads", threads)
