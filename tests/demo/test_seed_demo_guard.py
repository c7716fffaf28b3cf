"""``seed_demo`` refuses with DEBUG off unless given ``--force`` (SPEC §10): its demo
superuser has a published password.
"""

from __future__ import annotations

import os
import subprocess
import sys
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError

from lens.models import Team

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]


def test_seed_demo_refuses_with_debug_off_and_writes_nothing(settings: Any) -> None:
    settings.DEBUG = False
    with pytest.raises(CommandError, match=r"DEBUG off.*demo.*--force"):
        call_command("seed_demo", stdout=StringIO())
    assert not User.objects.filter(username="demo").exists()
    assert not Team.objects.filter(slug="demo").exists()


def test_seed_demo_seeds_with_force_even_with_debug_off(settings: Any) -> None:
    settings.DEBUG = False
    call_command("seed_demo", "--force", stdout=StringIO())
    assert User.objects.get(username="demo").is_superuser
    assert Team.objects.filter(slug="demo").exists()


def test_seed_demo_seeds_with_debug_on(settings: Any) -> None:
    settings.DEBUG = True
    call_command("seed_demo", stdout=StringIO())
    assert User.objects.filter(username="demo").exists()


def test_the_command_line_exits_non_zero_with_the_reason(tmp_path: Path) -> None:
    database = tmp_path / "db.sqlite3"
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DEBUG")}
    env.update(DEBUG="0", SECRET_KEY="k" * 50, DATABASE_URL=f"sqlite:///{database}")
    result = subprocess.run(
        [sys.executable, "manage.py", "seed_demo"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "Refusing to seed the demo with DEBUG off" in result.stderr
    assert "--force" in result.stderr
    # Refused before touching the database: not even a table was created.
    assert not database.exists() or database.stat().st_size == 0
