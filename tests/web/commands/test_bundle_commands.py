"""``export_agent`` and ``import_agent`` (SPEC §10, §15): a bundle written to a file and
read back, and every refusal one line naming the problem, with nothing written.
"""

from __future__ import annotations

import gzip
import json
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError

from lens.agents import get_agent
from lens.models import Agent, Team
from tests.api_calls import ApiClient
from tests.factories import Unchanged, agent_state, bundle_story, bundle_text, rebundle

pytestmark = pytest.mark.django_db


def run(name: str, *args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(name, *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.fixture
def wren(team: Team, api: ApiClient, reviewer: User) -> Agent:
    bundle_story(team, api, reviewer)
    return get_agent(team, "wren")


def test_export_agent_writes_the_bundle_and_says_what_it_holds(wren: Agent, tmp_path: Path) -> None:
    path = tmp_path / "wren.bundle.jsonl.gz"
    out, _ = run("export_agent", "wren", "--team", "acme", "-o", str(path))
    manifest = json.loads(gzip.decompress(path.read_bytes()).partition(b"\n")[0])
    first, second = out.splitlines()
    assert first.startswith(f"Exported agent wren of team acme to {path} (")
    assert first.endswith(
        "1 agent, 3 revisions, 2 routing cases, 7 memories, 7 promotions, 0 migrated promotions, "
        f"{manifest['counts']['event']} events, 3 compositions, 4 deliveries, "
        f"{manifest['counts']['audit']} audit events."
    )
    assert second == f"sha256 {manifest['sha256']}"
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no partial file left


def test_export_agent_replaces_the_file_only_once_the_bundle_is_whole(
    wren: Agent, tmp_path: Path
) -> None:
    path = tmp_path / "wren.gz"
    path.write_bytes(b"an older bundle")
    run("export_agent", "wren", "--team", "acme", "-o", str(path))
    assert bundle_text(path.read_bytes())[0].startswith(b'{"format":"composition-lens-bundle"')


def test_import_agent_refuses_a_line_of_nested_brackets_in_one_line(
    wren: Agent, other_team: Team, tmp_path: Path
) -> None:
    """100,000 nested brackets went past the JSON parser's recursion: a traceback."""
    path = tmp_path / "wren.gz"
    run("export_agent", "wren", "--team", "acme", "-o", str(path))
    lines = bundle_text(path.read_bytes())
    lines[4] = b"[" * 100_000 + b"]" * 100_000 + b"\n"
    bad = tmp_path / "deep.gz"
    bad.write_bytes(rebundle(lines, rehash=False))
    unchanged = Unchanged()
    with pytest.raises(CommandError) as caught:
        run("import_agent", str(bad), "--team", "globex", "--slug", "copy")
    unchanged.check()
    assert (
        str(caught.value) == f"{bad}: line 5: the line nests arrays and objects more than 64 deep"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("ghost", "--team", "acme"), "No agent 'ghost' in this team."),
        (("wren", "--team", "nope"), "No team 'nope'."),
    ],
)
def test_export_agent_refuses_an_unknown_agent_or_team(
    wren: Agent, tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    with pytest.raises(CommandError, match=message):
        run("export_agent", *args, "-o", str(tmp_path / "x.gz"))
    assert list(tmp_path.iterdir()) == []


def test_import_agent_recreates_the_agent_and_says_so(
    wren: Agent, reviewer: User, other_team: Team, tmp_path: Path
) -> None:
    path = tmp_path / "wren.gz"
    run("export_agent", "wren", "--team", "acme", "-o", str(path))
    before = agent_state(wren)
    wren.delete()
    other_team.memberships.create(user=reviewer)
    out, _ = run("import_agent", str(path), "--team", "globex")
    assert out.startswith("Imported agent wren into team globex: 1 agent, 3 revisions,")
    assert "; at revision 3." in out
    assert agent_state(get_agent(other_team, "wren")) == before


def test_import_agent_refuses_a_bundle_in_one_line_naming_it_and_writes_nothing(
    wren: Agent, other_team: Team, tmp_path: Path
) -> None:
    path = tmp_path / "wren.gz"
    run("export_agent", "wren", "--team", "acme", "-o", str(path))
    lines = bundle_text(path.read_bytes())
    lines[4] = b'{"type": "memory", oops\n'
    bad = tmp_path / "bad.gz"
    bad.write_bytes(rebundle(lines, rehash=False))
    unchanged = Unchanged()
    with pytest.raises(CommandError) as caught:
        run("import_agent", str(bad), "--team", "globex", "--slug", "copy")
    unchanged.check()
    (message,) = str(caught.value).splitlines()
    assert message.startswith(f"{bad}: line 5: the line is not valid JSON")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--team", "nope"), "No team 'nope'; create it with create_team."),
        (("--team", "globex", "--slug", "Bad Slug"), "Agent slug 'Bad Slug' must be"),
    ],
)
def test_import_agent_refuses_an_unknown_team_or_a_bad_slug(
    wren: Agent, other_team: Team, tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    path = tmp_path / "wren.gz"
    run("export_agent", "wren", "--team", "acme", "-o", str(path))
    with pytest.raises(CommandError, match=message):
        run("import_agent", str(path), *args)


def test_import_agent_says_when_the_file_cannot_be_read(other_team: Team, tmp_path: Path) -> None:
    missing = tmp_path / "missing.gz"
    with pytest.raises(CommandError, match=f"Cannot read {missing}: No such file"):
        run("import_agent", str(missing), "--team", "globex")
