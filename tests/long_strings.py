"""Long unbroken strings as real data holds them, on every kind of page: an agent named
up to its column's limit, a 300-character word, URLs with long query strings, SHA-256
hex digests, base64 blobs, a key/value key of 256 characters, sessions and models of
128. ``seed_long_strings`` puts them in the demo team (``seed_demo`` first) with the real
operations and returns the pages that show them.

A browser may break a line only at a space or a hyphen unless told otherwise, so each
of these is one box as wide as its text until the stylesheet lets it wrap or scroll
inside its own box.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass

from django.contrib.auth.models import User

from kvstore import store
from kvstore.core.keys import KEY_MAX
from lens.actors import SYSTEM, Actor
from lens.core.background import KEY_MAX as ENTRY_KEY_MAX
from lens.core.background import SECTION_ID_MAX, TITLE_MAX
from lens.core.config import NAME_MAX, AgentConfig
from lens.models import Agent, Team
from memory.configuring import store_agent, store_config
from memory.core.deliveries import DeliveryInput
from memory.core.records import CONTENT_MAX, LABEL_MAX, MemoryInput
from memory.core.routing_eval import CaseInput
from memory.decisions import decide
from memory.deliveries.ledger import deliver
from memory.routing_cases import replace_cases
from memory.saving import Saved, save_memory
from webhooks.core.addresses import URL_MAX
from webhooks.endpoints import DESCRIPTION_MAX, create_endpoint
from webhooks.models import Attempt, Dispatch
from webhooks.posting import ERROR_MAX

TEAM = "demo"
REVIEWER = "demo"


def _fill(pattern: str, size: int) -> str:
    """``pattern`` repeated to exactly ``size`` characters."""
    return (pattern * (size // len(pattern) + 1))[:size]


# One word of 300 letters: no space, no hyphen, nothing a browser breaks at.
WORD = _fill("Donaudampfschifffahrtsgesellschaftskapitaen", 300)
SHA256 = hashlib.sha256(b"composition lens").hexdigest()
BLOB = base64.b64encode(hashlib.sha512(b"lens").digest() * 4).decode()  # 344 characters
URL = (
    "https://storage.example.com/buckets/agent-artifacts/objects/"
    f"{SHA256}?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE"
    f"%2F20250101%2Feu-west-1%2Fs3%2Faws4_request&X-Amz-Signature={SHA256}"
)
# As wide as the columns allow.
SLUG = _fill("supportescalationtriage", 64)
NAME = _fill("SupportEscalationTriageAgent", NAME_MAX)
SECTION_ID = _fill("incident_runbooks", SECTION_ID_MAX)
TITLE = _fill("IncidentRunbooksAndEscalationContacts", TITLE_MAX)
ENTRY_KEY = _fill("pagerduty_service_integration_key", ENTRY_KEY_MAX)
LABEL = _fill("customer_account_identifier", LABEL_MAX)
SESSION = _fill(f"sess_{SHA256}", 128)
MODEL = _fill("ft:gpt-4o-2024-08-06:acme-corp:support-triage:9aBcDeFg", 128)
# A key of the store's own shape, dot-separated segments, at its full length.
KV_KEY = (
    f"ref.integrations.webhooks.sha256:{SHA256}.payload-"
    + BLOB.translate(str.maketrans("+/=", "-_:"))
)[:KEY_MAX]
TEAM_NAME = _fill("PlatformInfrastructureReliability", 200)
# A token's label as revisions keep it, at its column's length.
ACTOR = f"token {SHA256[:8]}… ({_fill('ContinuousDeploymentPipelineBot', 200 - 18)})"


@dataclass(frozen=True)
class LongStrings:
    """What was seeded: the agent, a memory in the prompt, a pending one, one as long as
    a memory may be, and three deliveries (the live prompt differs from the first)."""

    agent: Agent
    composed: str
    pending: str
    longest: str
    deliveries: list[str]
    proposal: int
    webhook: int

    def pages(self) -> list[str]:
        slug = self.agent.slug
        first, second, _third = self.deliveries
        return [
            "/",
            f"/agents/{slug}/",
            f"/agents/{slug}/?only=memory",
            f"/agents/{slug}/routing/",
            "/approvals/",
            f"/approvals/?agent={slug}",
            "/memories/",
            f"/memories/?q={WORD[:40]}",
            f"/memories/{self.composed}/",
            f"/memories/{self.pending}/",
            f"/memories/{self.longest}/",
            "/kv/",
            f"/kv/{KV_KEY}/",
            f"/kv/{KV_KEY}/?from=1&to=2",
            f"/agents/{slug}/deliveries/",
            f"/agents/{slug}/deliveries/?session={SESSION}",
            f"/deliveries/{second}/",
            f"/deliveries/{second}/diff/",
            f"/deliveries/{first}/live/",
            f"/agents/{slug}/revisions/",
            f"/agents/{slug}/revisions/1/",
            f"/agents/{slug}/revisions/2/",
            f"/proposals/{self.proposal}/",
            "/settings/webhooks/",
            f"/settings/webhooks/{self.webhook}/",
            f"/settings/webhooks/{self.webhook}/delete/",
        ]


def long_config() -> AgentConfig:
    """An agent whose every text field holds one of the long strings."""
    return AgentConfig.model_validate(
        {
            "name": NAME,
            "persona": f"You are {NAME}. Your handle is {WORD}.",
            "tone": f"Terse. Cite {URL} when asked.",
            "objective": f"Keep {WORD} running.",
            "capabilities": [{"name": "memory_save", "description": f"Save to {URL}."}],
            "manual": f"Attach digests like sha256:{SHA256} and blobs like {BLOB}.",
            "routing_spec": "user-background",
            "background": {
                "sections": [
                    {"id": "user_profile", "title": "About the User", "promotion": "auto"},
                    {
                        "id": "user_preferences",
                        "title": "User Preferences",
                        "promotion": "guarded",
                    },
                    {
                        "id": SECTION_ID,
                        "title": TITLE,
                        "promotion": "locked",
                        "entries": [
                            {"key": ENTRY_KEY, "value": URL},
                            {"key": "digest", "value": SHA256},
                            {"key": "certificate", "value": BLOB},
                        ],
                    },
                ]
            },
            "awareness": [{"name": "Artifacts", "description": URL, "access_method": f"GET {URL}"}],
        }
    )


def _save(agent: Agent, kind: str, content: str, label: str | None = None) -> str:
    saved = save_memory(
        agent, MemoryInput(kind=kind, content=content, label=label, tags=[SHA256]), SYSTEM
    )
    assert isinstance(saved, Saved), saved
    return saved.id


def seed_long_strings() -> LongStrings:
    """The long strings in the demo team (after ``seed_demo``), by the real operations."""
    team = Team.objects.get(slug=TEAM)
    team.name = TEAM_NAME
    team.save(update_fields=["name"])
    agent, _ = store_agent(team, SLUG, long_config())
    reviewer = Actor.for_user(User.objects.get(username=REVIEWER))
    request = DeliveryInput(session=SESSION, model=MODEL)
    deliveries = [deliver(agent, SYSTEM, request).delivery.id]
    composed = _save(agent, "profile", f"Their account is {WORD} at {URL}", label=LABEL)
    decide(
        _save(agent, "preference", f"Prefers blobs inline: {BLOB}", label="blobs"), True, reviewer
    )
    deliveries.append(deliver(agent, SYSTEM, request).delivery.id)
    _save(agent, "profile", f"Signing key fingerprint {SHA256}{SHA256}", label="fingerprint")
    deliveries.append(deliver(agent, SYSTEM, request).delivery.id)
    pending = _save(agent, "preference", f"{WORD} {BLOB} {URL}", label=_fill("p", LABEL_MAX))
    # A pasted image: one base64 word as long as a memory may be.
    longest = _save(agent, "fact", _fill(BLOB, CONTENT_MAX), label="screenshot")
    # Revision 2, by a token whose label is as long as an actor may be.
    revised = long_config().model_dump(mode="json")
    revised["tone"] = f"Terse. Cite {URL} always."
    revised["background"]["sections"][2]["entries"].append({"key": LABEL, "value": WORD})
    store_agent(team, SLUG, AgentConfig.model_validate(revised), actor=Actor(label=ACTOR))
    # Revision 3 protects it; then the same token proposes a long title and entry, which
    # moves the profile memories to a section titled as long as a title may be.
    revised["protected"] = True
    store_agent(team, SLUG, AgentConfig.model_validate(revised), actor=Actor(label=ACTOR))
    revised["background"]["sections"][0]["title"] = _fill("AboutTheCustomerAccount", TITLE_MAX)
    revised["background"]["sections"][2]["entries"].append({"key": "certificate-2", "value": BLOB})
    proposal = store_config(
        team, SLUG, AgentConfig.model_validate(revised), actor=Actor(label=ACTOR)
    ).proposal
    assert proposal is not None
    # Routing cases named as long as a name may be, expecting the longest section id
    # and one the agent does not declare.
    cases = [
        {"name": _fill(f"Case{i}{WORD}", 64), "kind": kind, "content": f"{WORD} {BLOB} {URL}",
         "label": LABEL, "tags": [_fill(BLOB, 64)], "expect": {"section": expect}}
        for i, (kind, expect) in enumerate(
            [("profile", SECTION_ID), ("preference", _fill("undeclared_", SECTION_ID_MAX)),
             ("profile", "user_profile"), ("fact", None)]
        )
    ]  # fmt: skip
    replace_cases(agent, [CaseInput.model_validate(case) for case in cases], SYSTEM)
    store.write(team, KV_KEY, f"{URL}\n{SHA256}\n")
    store.write(team, KV_KEY, f"{URL}&page=2\n{BLOB}\n{WORD}\n")
    webhook = _webhook(team, reviewer)
    return LongStrings(
        agent=agent,
        composed=composed,
        pending=pending,
        longest=longest,
        deliveries=deliveries,
        proposal=proposal.pk,
        webhook=webhook,
    )


def _webhook(team: Team, actor: Actor) -> int:
    """A webhook whose URL, description and a try's error are as long as they may be."""
    url = _fill(f"https://93.184.215.14/hooks/{SHA256}?sig={BLOB}&", URL_MAX)
    endpoint = create_endpoint(team, actor, url, ["*"], _fill(WORD, DESCRIPTION_MAX)).endpoint
    dispatch = Dispatch.objects.filter(endpoint=endpoint).earliest("pk")
    Attempt.objects.create(
        dispatch=dispatch,
        endpoint=endpoint,
        at=dispatch.created_at,
        status_code=None,
        duration_ms=10_000,
        error=_fill(f"could not connect: {WORD} ", ERROR_MAX),
    )
    return endpoint.pk
