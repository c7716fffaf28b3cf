"""The audit log (SPEC §15): every change appends an event in its own transaction,
events seal the ones before them, the database refuses to change them, ``verify_audit``
names the first event that was changed, removed or reordered, and no event holds a
memory's content, label or tags, a key's payload or a person's note.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import DatabaseError, connection, transaction
from django.test import Client
from django.utils import timezone

from kvstore import store
from lens.actors import Actor
from lens.audit import GENESIS, Entry, append, canonical, event_data, seal, verify
from lens.audit_guard import install, uninstall
from lens.core.audit_actions import ACTIONS
from lens.models import Agent, ApiToken, AuditEvent, Membership, Team
from lens.proposals import reject_proposal, withdraw_proposal
from memory.configuring import publish_proposal
from memory.decisions import decide, reopen, revoke
from memory.deliveries.retention import prune
from memory.erasure import erase_memory
from memory.validity import change_validity
from tests.api_calls import ApiClient, assert_error, post_memory
from tests.factories import make_user, memory_config, propose

pytestmark = pytest.mark.django_db

# Marks every secret the story writes. The tilde cannot occur in what events rightly
# hold (hex hashes, base36 ids, base64 token prefixes, slugs, timestamps), so finding
# the marker anywhere means a secret leaked, and a random hash never trips the check.
MARK = "zq~xw"
SECRETS = (
    f"Secret content {MARK}",
    f"secret-label-{MARK}",
    f"secret-tag-{MARK}",
    f"Secret payload {MARK}",
)
NOTE = f"Secret note {MARK}"


def events(team: Team) -> list[dict[str, Any]]:
    return [event_data(row) for row in AuditEvent.objects.filter(team=team).order_by("seq")]


def actions(team: Team) -> list[str]:
    return [event["action"] for event in events(team)]


def story(api: ApiClient, team: Team, member: User, rhea: User, admin: Client) -> None:
    """One of each change the product offers: every action an event can name."""
    # A webhook whose URL carries a receiver's own token: the log names its host only.
    hook = api.post(
        "/api/webhooks",
        {"url": f"https://93.184.215.14/hook?token=secret-url-{MARK}", "events": ["*"]},
    ).json()["id"]
    api.put("/api/agents/wren", memory_config(preferences="guarded"))
    api.put("/api/agents/wren", memory_config(preferences="guarded", persona="Changed."))
    saved = post_memory(
        api,
        {
            "kind": "preference",
            "content": SECRETS[0],
            "label": SECRETS[1],
            "tags": [SECRETS[2]],
        },
    )
    newer = post_memory(
        api,
        {"kind": "preference", "content": "Newer " + SECRETS[0], "supersedes": saved},
    )
    reviewer = Actor.for_user(rhea)
    decide(newer, True, reviewer, NOTE)
    revoke(newer, reviewer, NOTE)
    reopen(newer, reviewer, NOTE)
    decide(newer, False, reviewer)
    # A reviewer sets a validity window (SPEC §19.2).
    change_validity(newer, timezone.now() + timedelta(days=3), reviewer)
    assert api.post("/api/agents/wren/deliveries", {"session": "s-1"}).status_code == 201
    case = {"name": "a case", "kind": "fact", "content": SECRETS[0], "label": SECRETS[1],
            "tags": [SECRETS[2]], "expect": {"section": None}}  # fmt: skip
    assert api.put("/api/agents/wren/routing-cases", {"cases": [case]}).status_code == 200
    assert api.put("/api/kv/notes.secret", {"payload": SECRETS[3]}).status_code == 201
    assert api.delete("/api/kv/notes.secret").status_code == 200
    api.put("/api/agents/wren", memory_config(preferences="guarded", protected=True))
    made = [
        api.put(
            "/api/agents/wren",
            memory_config(preferences="guarded", protected=True, tone=f"v{n}"),
        ).json()["proposal_id"]
        for n in range(3)
    ]
    reject_proposal(team, made[0], reviewer, NOTE)
    publish_proposal(team, made[1], reviewer)  # made[2] goes stale
    # A person's own proposal, taken back (only its proposer can).
    mine = propose(team, "wren", memory_config(preferences="guarded", protected=True), member)
    withdraw_proposal(team, mine.pk, Actor.for_user(member))
    # An agent made and deleted in the admin.
    assert api.put("/api/agents/finch", memory_config()).status_code == 201
    finch = Agent.objects.get(team=team, slug="finch")
    assert admin.post(f"/admin/lens/agent/{finch.pk}/delete/", {"post": "yes"}).status_code == 302
    assert not Agent.objects.filter(pk=finch.pk).exists()
    token, _raw = ApiToken.objects.issue(team, name="second")
    token.revoked_at = token.created_at
    token.save()
    Membership.objects.filter(user=member).delete()
    assert api.post(f"/api/webhooks/{hook}/rotate").status_code == 200
    assert api.delete(f"/api/webhooks/{hook}").status_code == 204
    erase_memory(saved, reviewer, "Asked by the person it names")
    assert prune(timedelta(0)).deliveries == 1
    # A memory declined in a section declared later, migrated into it (SPEC §18.3).
    api.put("/api/agents/solo", memory_config(preferences=None))
    post_memory(api, {"kind": "preference", "content": "Tea."}, slug="solo")
    api.put("/api/agents/solo", memory_config(preferences="guarded"))
    plan = api.get("/api/agents/solo/migration").json()["plan_sha256"]
    assert api.post("/api/agents/solo/migration", {"plan_sha256": plan}).status_code == 200


@pytest.fixture
def told(api: ApiClient, team: Team, member: User, rhea: User, admin_client: Client) -> Team:
    story(api, team, member, rhea, admin_client)
    return team


def test_every_change_appends_its_event(told: Team) -> None:
    assert set(actions(told)) == ACTIONS
    for event in events(told):
        assert list(event) == [
            "seq",
            "at",
            "actor",
            "action",
            "object",
            "agent",
            "details",
            "prev_sha256",
            "sha256",
        ]
        assert set(event["object"]) == {"type", "id"}, event
        assert event["object"]["type"], event
        assert event["object"]["id"], event
        assert isinstance(event["details"], dict), event
    by_action = {event["action"]: event for event in reversed(events(told))}  # the first
    saved = by_action["memory.saved"]
    assert saved["object"]["type"] == "memory"
    assert saved["agent"] == "wren"
    assert saved["details"]["size"] == len(SECRETS[0])
    assert len(saved["details"]["content_sha256"]) == 64
    assert by_action["kv.written"]["details"]["runes"] == len(SECRETS[3])
    assert by_action["agent.revised"]["details"]["via"] in ("api", "proposal")
    assert by_action["proposal.published"]["actor"] == "rhea"
    assert by_action["delivery.recorded"]["details"]["session"] == "s-1"
    cases = by_action["routing_cases.changed"]
    assert (cases["object"], cases["agent"]) == ({"type": "agent", "id": "wren"}, "wren")
    assert {k: v for k, v in cases["details"].items() if k != "cases_sha256"} == {
        "how": "replaced",
        "before": 0,
        "cases": 1,
    }
    withdrawn = by_action["proposal.withdrawn"]
    assert (withdrawn["object"]["type"], withdrawn["actor"], withdrawn["agent"]) == (
        "proposal",
        "mira",
        "wren",
    )
    deleted = by_action["agent.deleted"]
    assert (deleted["object"], deleted["actor"], deleted["agent"]) == (
        {"type": "agent", "id": "finch"},
        "root",
        "finch",
    )
    assert isinstance(deleted["details"]["agent_id"], int)
    erased = by_action["memory.erased"]
    assert (erased["object"]["id"], erased["actor"]) == (saved["object"]["id"], "rhea")
    assert erased["details"]["content_sha256"] == saved["details"]["content_sha256"]
    assert by_action["delivery.pruned"]["details"]["deliveries"] == 1


def test_no_event_holds_content_labels_tags_payloads_or_notes(told: Team) -> None:
    for event in events(told):
        text = canonical(event)
        for secret in (*SECRETS, NOTE):
            assert secret not in text, (event["action"], secret)
        assert MARK not in text, event
        assert "secret-url" not in text, event


def test_numbers_have_no_gaps_and_each_event_seals_the_one_before(told: Team) -> None:
    found = events(told)
    assert [event["seq"] for event in found] == list(range(1, len(found) + 1))
    assert found[0]["prev_sha256"] == GENESIS
    for before, event in zip(found, found[1:], strict=False):
        assert event["prev_sha256"] == before["sha256"]
    for event in found:
        assert event["sha256"] == seal(event)
    assert verify(told).first_bad is None
    assert verify(told).events == len(found)


def test_the_api_answers_events_exactly_as_sealed(told: Team, api: ApiClient) -> None:
    answered = api.get("/api/audit?limit=1000").json()
    assert answered["next_after"] is None
    assert answered["events"] == events(told)
    for event in answered["events"]:
        body = {k: v for k, v in event.items() if k != "sha256"}
        assert hashlib.sha256(canonical(body).encode()).hexdigest() == event["sha256"]


def test_the_api_pages_by_cursor_and_filters(told: Team, api: ApiClient) -> None:
    total = AuditEvent.objects.filter(team=told).count()
    seen: list[int] = []
    after = 0
    while True:
        page = api.get(f"/api/audit?after={after}&limit=7").json()
        seen += [event["seq"] for event in page["events"]]
        if page["next_after"] is None:
            break
        after = page["next_after"]
    assert seen == list(range(1, total + 1))
    kv = api.get("/api/audit?action=kv.written").json()["events"]
    assert [event["action"] for event in kv] == ["kv.written"]
    wren = api.get("/api/audit?agent=wren").json()["events"]
    assert wren
    assert {event["agent"] for event in wren} == {"wren"}
    assert api.get("/api/audit?agent=nobody").json() == {"events": [], "next_after": None}
    for bad in ("limit=0", "limit=1001", "after=-1", "after=x"):
        assert_error(api.get(f"/api/audit?{bad}"), 422, "invalid_request")


def test_the_api_answers_only_the_tokens_team(
    told: Team, other_api: ApiClient, anon_api: ApiClient
) -> None:
    other = other_api.get("/api/audit?limit=1000").json()["events"]
    # The other team's log holds only its own: the issuing of its token.
    assert [event["action"] for event in other] == ["token.issued"]
    assert anon_api.get("/api/audit").status_code == 401


def test_a_refused_change_logs_nothing(api: ApiClient, team: Team) -> None:
    api.put("/api/agents/wren", memory_config())
    before = AuditEvent.objects.count()
    assert_error(
        api.put("/api/agents/wren", {**memory_config(), "persona": "x", "if_revision": 9}),
        409,
        "revision_conflict",
    )
    assert_error(api.put("/api/kv/k", {"payload": "x" * 70_000}), 413, "payload_too_large")
    assert_error(api.put("/api/kv/k", {"payload": "x", "if_version": 3}), 409, "version_conflict")
    assert_error(api.post("/api/agents/wren/memories", {"kind": ""}), 422, "invalid_kind")
    assert AuditEvent.objects.count() == before


def test_a_rolled_back_change_logs_nothing(api: ApiClient, team: Team) -> None:
    before = AuditEvent.objects.count()

    def write_then_fail() -> None:
        with transaction.atomic():
            store.write(team, "k", "v")
            assert AuditEvent.objects.count() == before + 1
            raise RuntimeError("undo")

    with pytest.raises(RuntimeError):
        write_then_fail()
    assert AuditEvent.objects.count() == before
    assert verify(team).first_bad is None


# --- the database refuses, and verify_audit catches what gets past it ---------------


def test_the_database_refuses_to_update_or_delete_an_event(told: Team) -> None:
    for statement in (
        "UPDATE lens_auditevent SET actor = 'mallory'",
        "DELETE FROM lens_auditevent WHERE seq = 2",
    ):
        with (
            pytest.raises(DatabaseError, match="append-only"),
            transaction.atomic(),
            connection.cursor() as cursor,
        ):
            cursor.execute(statement)
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        AuditEvent.objects.filter(team=told).update(actor="mallory")
    assert verify(told).first_bad is None


@contextmanager
def triggers_dropped() -> Iterator[None]:
    """Someone allowed to drop triggers: what the hash chain is there to catch."""
    uninstall(connection)
    try:
        yield
    finally:
        install(connection)


def verify_output(team: Team) -> tuple[int, str, str]:
    out, err = StringIO(), StringIO()
    try:
        call_command("verify_audit", "--team", team.slug, stdout=out, stderr=err)
    except CommandError:
        return 1, out.getvalue(), err.getvalue()
    return 0, out.getvalue(), err.getvalue()


def test_verify_audit_passes_an_untouched_log(told: Team) -> None:
    code, out, _err = verify_output(told)
    count = AuditEvent.objects.filter(team=told).count()
    head = AuditEvent.objects.filter(team=told).order_by("-seq").first()
    assert head is not None
    assert code == 0
    assert out == f"{count} events verified, head {head.sha256}\n"  # SPEC §15's line


def test_verify_audit_names_each_team_before_its_line_when_it_checks_several(
    told: Team, other_team: Team
) -> None:
    """With one team, or --team, the line stands alone; over several, a line naming the
    team comes before each team's own."""
    out = StringIO()
    call_command("verify_audit", stdout=out)
    lines = []
    for team in (told, other_team):  # acme, globex: in the order of their slugs
        found = verify(team)
        lines += [f"team {team.slug}", f"{found.events} events verified, head {found.head}"]
    assert out.getvalue().splitlines() == lines
    other_team.delete()
    call_command("verify_audit", stdout=(alone := StringIO()))
    assert alone.getvalue().splitlines() == lines[1:2]


def test_a_changed_event_is_named(told: Team) -> None:
    with triggers_dropped():
        row = AuditEvent.objects.get(team=told, seq=5)
        AuditEvent.objects.filter(pk=row.pk).update(details={**row.details, "forged": True})
    code, _out, err = verify_output(told)
    assert code == 1
    assert "audit log broken at seq 5: event 5 was changed" in err


def test_a_resealed_change_is_named_by_the_next_event(told: Team) -> None:
    """Rewriting an event and its own hash still breaks the next event's seal."""
    with triggers_dropped():
        row = AuditEvent.objects.get(team=told, seq=5)
        row.actor = "mallory"
        row.sha256 = seal(event_data(row))
        AuditEvent.objects.filter(pk=row.pk).update(actor=row.actor, sha256=row.sha256)
    _code, _out, err = verify_output(told)
    assert "at seq 6: event 6 does not follow event 5" in err


def test_a_removed_event_is_named(told: Team) -> None:
    with triggers_dropped():
        AuditEvent.objects.filter(team=told, seq=4).delete()
    _code, _out, err = verify_output(told)
    assert "at seq 4: event 4 was removed (the next event is 5)" in err


def test_reordered_events_are_named(told: Team) -> None:
    with triggers_dropped():
        third = AuditEvent.objects.get(team=told, seq=3)
        fourth = AuditEvent.objects.get(team=told, seq=4)
        AuditEvent.objects.filter(pk=third.pk).update(seq=10**9)
        AuditEvent.objects.filter(pk=fourth.pk).update(seq=3)
        AuditEvent.objects.filter(pk=third.pk).update(seq=4)
    _code, _out, err = verify_output(told)
    assert "at seq 3: event 3 was changed" in err


def test_removed_newest_events_are_named(told: Team) -> None:
    count = AuditEvent.objects.filter(team=told).count()
    with triggers_dropped():
        AuditEvent.objects.filter(team=told, seq__gte=count - 1).delete()
    _code, _out, err = verify_output(told)
    assert f"at seq {count - 1}: event {count - 1} and after were removed" in err


def test_doctor_runs_verify_audit(told: Team) -> None:
    with triggers_dropped():
        AuditEvent.objects.filter(team=told, seq=2).update(actor="mallory")
    out, err = StringIO(), StringIO()
    with pytest.raises(CommandError):
        call_command("doctor", stdout=out, stderr=err)
    assert "audit log: 1 teams broken" in out.getvalue()
    assert "audit log broken at seq 2" in err.getvalue()


def test_an_unknown_team_is_refused(told: Team) -> None:
    with pytest.raises(CommandError, match="No team 'nope'"):
        call_command("verify_audit", "--team", "nope", stdout=StringIO())


def test_deleting_a_team_deletes_its_log_and_leaves_others_sealed(
    told: Team, other_team: Team
) -> None:
    make_user("otto", other_team)  # an event in the other team's log
    assert AuditEvent.objects.filter(team=other_team).exists()
    told.delete()
    assert not AuditEvent.objects.filter(team_id=told.pk).exists()
    assert verify(other_team).first_bad is None
    assert json.loads(json.dumps(events(other_team)))[0]["action"] == "member.added"


def test_a_large_batch_is_appended_in_chunks_as_one_chain(team: Team) -> None:
    entries = [Entry("kv.written", "kv", f"k{n}", details={"version": 1}) for n in range(1201)]
    with transaction.atomic():
        append(team.pk, "system", entries[:1])
        append(team.pk, "system", entries)
    found = verify(team)
    assert found.first_bad is None
    assert found.events == AuditEvent.objects.filter(team=team).count()
    assert AuditEvent.objects.filter(team=team, action="kv.written").count() == 1202


def test_an_unknown_action_writes_nothing(team: Team) -> None:
    before = AuditEvent.objects.count()
    with pytest.raises(ValueError, match="unknown audit action"), transaction.atomic():
        append(team.pk, "system", [Entry("kv.written", "kv", "a"), Entry("kv.read", "kv", "k")])
    assert AuditEvent.objects.count() == before


def test_odd_unicode_is_sealed_as_the_api_writes_it(team: Team, api: ApiClient) -> None:
    key = "notes.\u00e9\u200b\U0001f600"
    with transaction.atomic():
        append(team.pk, "Zoë \u202e", [Entry("kv.written", "kv", key, details={"n": 1})])
    [event] = api.get("/api/audit?action=kv.written").json()["events"]
    assert event["object"]["id"] == key
    assert event["actor"] == "Zoë \u202e"
    assert seal(event) == event["sha256"]
    assert verify(team).first_bad is None
