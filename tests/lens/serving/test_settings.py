"""Settings come from the environment and fail loudly on bad values."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from lens.core.context_windows import DEFAULT_WINDOWS
from lens.envconf import env_bool, env_choice, env_context_windows, env_int, env_list

ROOT = Path(__file__).resolve().parents[3]  # tests/lens/ -> the project


def run_django(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("DEBUG", "SECRET_KEY", "DATABASE_URL")}
    base.update(DJANGO_SETTINGS_MODULE="lens.settings", **env)
    return subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {code}"],
        cwd=ROOT,
        env=base,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_env_bool_accepts_the_documented_spellings(monkeypatch: pytest.MonkeyPatch) -> None:
    for raw, expected in [("1", True), ("true", True), ("0", False), ("false", False)]:
        monkeypatch.setenv("LENS_FLAG", raw)
        assert env_bool("LENS_FLAG", default=not expected) is expected


def test_env_bool_refuses_anything_else(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LENS_FLAG", "maybe")
    with pytest.raises(ImproperlyConfigured, match="LENS_FLAG"):
        env_bool("LENS_FLAG", default=False)


def test_env_int_and_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LENS_N", "x")
    with pytest.raises(ImproperlyConfigured):
        env_int("LENS_N", 1)
    monkeypatch.setenv("LENS_HOSTS", " a.example, ,b.example ")
    assert env_list("LENS_HOSTS", []) == ["a.example", "b.example"]


def test_env_choice_folds_case_and_refuses_anything_else(monkeypatch: pytest.MonkeyPatch) -> None:
    levels = ("DEBUG", "INFO", "WARNING")
    assert env_choice("LENS_LEVEL", "WARNING", levels) == "WARNING"
    monkeypatch.setenv("LENS_LEVEL", " info ")
    assert env_choice("LENS_LEVEL", "WARNING", levels) == "INFO"
    monkeypatch.setenv("LENS_LEVEL", "loud")
    with pytest.raises(ImproperlyConfigured, match="LENS_LEVEL must be one of DEBUG, INFO"):
        env_choice("LENS_LEVEL", "WARNING", levels)


def test_context_windows_extend_and_override_the_built_in_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("LENS_WINDOWS", raising=False)
    assert env_context_windows("LENS_WINDOWS") == dict(DEFAULT_WINDOWS)
    monkeypatch.setenv("LENS_WINDOWS", "Team-Llama=65536, gpt-4o=64000")
    windows = env_context_windows("LENS_WINDOWS")
    assert windows == {**DEFAULT_WINDOWS, "team-llama": 65_536, "gpt-4o": 64_000}


def test_a_bad_context_window_item_is_refused_naming_the_setting_and_the_item(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LENS_WINDOWS", "ok=1000,broken")
    with pytest.raises(ImproperlyConfigured, match=r"^LENS_WINDOWS: item 2 \('broken'\)"):
        env_context_windows("LENS_WINDOWS")


def test_a_bad_model_context_windows_stops_start_up() -> None:
    result = run_django("", DEBUG="1", MODEL_CONTEXT_WINDOWS="my-model=32k")
    assert result.returncode != 0
    assert "MODEL_CONTEXT_WINDOWS: item 1 ('my-model=32k')" in result.stderr
    code = "from django.conf import settings; print(settings.MODEL_CONTEXT_WINDOWS['my-model'])"
    result = run_django(code, DEBUG="1", MODEL_CONTEXT_WINDOWS="My-Model=32000")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "32000"


def test_a_bad_log_level_stops_start_up() -> None:
    result = run_django("", DEBUG="1", LOG_LEVEL="chatty")
    assert result.returncode != 0
    assert "LOG_LEVEL must be one of" in result.stderr


def test_a_missing_secret_key_is_refused_when_debug_is_off() -> None:
    result = run_django("", DEBUG="0")
    assert result.returncode != 0
    assert "SECRET_KEY is required" in result.stderr


def test_a_bad_debug_value_is_refused() -> None:
    result = run_django("", DEBUG="sometimes")
    assert result.returncode != 0
    assert "DEBUG must be one of" in result.stderr


def test_an_unsupported_database_url_is_refused() -> None:
    result = run_django("", DEBUG="1", DATABASE_URL="mysql://root@127.0.0.1/test")
    assert result.returncode != 0
    assert "SQLite or PostgreSQL" in result.stderr


def test_sqlite_files_run_in_wal_mode_with_immediate_transactions(tmp_path: Path) -> None:
    code = (
        "from django.db import connection; c = connection.cursor(); "
        "c.execute('PRAGMA journal_mode'); print(c.fetchone()[0]); "
        "c.execute('PRAGMA secure_delete'); print(c.fetchone()[0]); "
        "print(connection.settings_dict['OPTIONS']['transaction_mode']); "
        "print('secure_delete=ON' in connection.settings_dict['OPTIONS']['init_command'])"
    )
    result = run_django(code, DEBUG="1", DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}")
    assert result.returncode == 0, result.stderr
    # secure_delete: what SQLite frees is zeroed (an erasure, SPEC §15), whatever the
    # library's compiled-in default.
    assert result.stdout.split() == ["wal", "1", "IMMEDIATE", "True"]


def test_secret_key_and_allowed_hosts_come_from_the_environment() -> None:
    code = "from django.conf import settings; print(settings.SECRET_KEY, settings.ALLOWED_HOSTS)"
    result = run_django(
        code, DEBUG="0", SECRET_KEY="s3cret", ALLOWED_HOSTS="lens.example,x.example"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "s3cret ['lens.example', 'x.example']"
