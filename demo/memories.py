"""Demo memories that exercise every routing outcome the lens reports."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from django.utils import timezone

from lens.actors import Actor
from lens.models import Agent, ApiToken
from memory.core.records import MemoryInput
from memory.decisions import decide
from memory.saving import Saved, save_memory


@dataclass(frozen=True)
class Demo:
    kind: str
    content: str
    label: str | None = None
    tags: tuple[str, ...] = ()
    supersedes: str | None = None  # the ``ref`` of an earlier demo memory
    ref: str | None = None
    decision: str | None = None  # "approve" or "reject" (with a reason)
    reason: str = ""
    session: str | None = None  # the conversation it was saved in (earned sections)
    # True for this long after seeding (``valid_until``, SPEC §19.2); None: no window.
    valid_for: timedelta | None = None


WREN = [
    Demo("profile", "The user's name is Doug.", label="name", tags=("identity",)),
    Demo("profile", "Doug lives in Denver, Colorado.", label="city", ref="city"),
    Demo("profile", "Doug moved to Lisbon in March.", label="city", supersedes="city"),
    Demo("profile", "Works as a backend engineer at a logistics startup.", label="job"),
    Demo("profile", "Uses he/him pronouns.", label="pronouns"),
    # True for a few days only: the lens marks it "expires in 5 days", then it leaves.
    Demo(
        "profile",
        "Doug is at a conference in Berlin this week; message him rather than call.",
        label="travel",
        valid_for=timedelta(days=5),
    ),
    Demo(
        "preference", "Wants reminders the evening before, never in the morning.", label="reminders"
    ),
    Demo(
        "preference",
        "Takes his coffee black; suggest cafés that do pour-over.",
        label="coffee",
        decision="approve",
        ref="coffee",
    ),
    Demo(
        "preference",
        "Likes to be called 'boss'.",
        label="nickname",
        decision="reject",
        reason="Joke from one conversation, not a real preference.",
    ),
    Demo(
        "episode",
        "Had a rough week: a production incident on Tuesday ran until 2am.",
        tags=("work",),
    ),
    # Waits in the queue with a diff against the approved memory it supersedes.
    Demo(
        "preference",
        "Switched to oat flat whites; still likes cafés that do pour-over.",
        label="coffee",
        supersedes="coffee",
    ),
]

SENTINEL = [
    Demo(
        "convention",
        "Wrap external HTTP calls in the retry helper; never hand-roll loops.",
        label="http-retries",
        decision="approve",
    ),
    Demo(
        "convention",
        "Name feature flags team.feature.purpose, all lowercase.",
        label="feature-flags",
    ),
    Demo(
        "convention",
        "Log amounts with their currency code, never bare numbers.",
        label="logging-amounts",
    ),
    # An authored entry holds this key: the queue warns that approving changes nothing.
    Demo(
        "convention",
        "Amounts are integer minor units, even in analytics exports.",
        label="money",
    ),
    Demo(
        "decision",
        "We chose PostgreSQL advisory locks over Redis for payout dedupe.",
        label="payout-locks",
    ),
    Demo(
        "state", "Release 4.2 is frozen; only fixes for the refund flow may merge.", label="release"
    ),
    Demo(
        "state",
        "The ledger migration is 60% done; tables ledger_v2_* are write-only until cut-over on the 14th. Reviewers must reject reads from them.",
        label="ledger-migration",
    ),
    Demo(
        "state",
        "Card tokenisation moved to the vault service; any PR touching pan_* columns needs a security review from the platform team before merge.",
        label="tokenisation",
    ),
    Demo(
        "state",
        "Flaky test quarantine: test_refund_race and test_payout_retry are skipped on CI until the clock fixture lands; do not block PRs on them.",
        label="quarantine",
    ),
    Demo(
        "state",
        "On-call handover: payouts to SEPA are delayed by the bank until Friday; support has a macro, do not open incidents for SEPA delays this week.",
        label="sepa-delay",
    ),
    Demo(
        "state",
        "Staging is on the new Kubernetes cluster; the old staging hostnames redirect but webhooks must be re-registered by hand after each deploy.",
        label="staging",
    ),
    Demo(
        "state",
        "Rate limits for the public API changed to 600/min per key; the old 1000/min figure in the docs is wrong until the docs PR merges.",
        label="rate-limits",
    ),
    Demo(
        "state",
        "The fraud model v7 shadow-run ends next Monday; PRs changing feature extraction must keep v6 and v7 outputs identical until then.",
        label="fraud-shadow",
    ),
    Demo(
        "state",
        "Quarter-end freeze starts on the 28th: only P0 fixes with two approvals may merge to main between the 28th and the 3rd.",
        label="quarter-end",
    ),
    Demo(
        "state",
        "The accounting export now runs at 02:00 UTC instead of midnight; anything scheduled near it must not lock the ledger tables.",
        label="export-time",
    ),
    Demo(
        "state",
        "Legacy webhook v1 endpoints are deprecated; new integrations must use v2 signatures and every PR adding a v1 consumer should be sent back.",
        label="webhooks",
    ),
    Demo(
        "state",
        "Load test results: checkout p99 is 480ms at 2x traffic; any PR adding a synchronous call in checkout needs a benchmark attached to it.",
        label="load-test",
    ),
    Demo(
        "state",
        "Dependency upgrade window is open for Django and psycopg; other upgrades wait until after the quarter-end freeze is over.",
        label="upgrades",
    ),
    Demo(
        "state",
        "Refund flow rewrite: the new state machine lives in refunds/machine.py; the old handlers stay wired until the feature flag payments.refunds.v2 reaches 100% of traffic.",
        label="refund-rewrite",
    ),
    Demo(
        "state",
        "Currency rounding bug (#1190) is fixed in main but not yet in the 4.1 branch; PRs touching rounding must cherry-pick the fix or wait for the 4.1.3 patch release.",
        label="rounding-bug",
    ),
    Demo(
        "state",
        "The payouts team owns the settlement jobs from this sprint; route reviews for jobs/settlement/* to them and do not approve those PRs without one of their approvals.",
        label="settlement-owner",
    ),
    Demo(
        "state",
        "Observability: every new endpoint needs a latency histogram and an error counter in the dashboards before launch; reviewers should ask for the dashboard link in the PR.",
        label="observability",
    ),
    Demo(
        "state",
        "Secrets moved from environment files to the vault agent; any PR adding a new secret must add it to vault/policies and never to .env.example or the Helm values files.",
        label="secrets",
    ),
    Demo(
        "state",
        "Chargeback evidence uploads are capped at 10 MB per file by the card network; validation must reject larger files client-side and server-side with a readable error.",
        label="chargebacks",
    ),
    Demo("episode", "Reviewed PR #812 with Priya; she prefers comments grouped by file."),
]

ATLAS = [
    # About the Customer is earned: the plan was saved in three conversations, so it
    # earned its place; the city in two, so it is still earning.
    Demo(
        "profile",
        "Customer account is on the Enterprise plan since 2023.",
        label="plan",
        session="chat-1041",
    ),
    Demo("profile", "Customer is based in Porto.", label="city", session="chat-1041"),
    Demo(
        "profile",
        "Customer account is on the Enterprise plan since 2023.",
        label="plan",
        session="chat-1077",
    ),
    Demo("profile", "customer is based in  Porto.", label="city", session="chat-1077"),
    Demo(
        "profile",
        "Customer account is on the enterprise plan since 2023.",
        label="plan",
        session="chat-1102",
    ),
    Demo("preference", "Customer wants every reply in Portuguese.", label="language"),
    Demo("episode", "Customer asked about invoice 1042 twice this month."),
]

DEMO_MEMORIES = {"wren": WREN, "sentinel": SENTINEL, "atlas": ATLAS}


def seed_memories(
    agent: Agent,
    token: ApiToken,
    reviewer: Actor,
    before_each: Callable[[Demo], object] | None = None,
) -> int:
    """Save the agent's demo memories through the real service, once.

    ``before_each`` is called before each one is saved (the delivery history opens its
    sessions there, ``demo.sessions``).
    """
    actor = Actor.for_token(token)
    if agent.memories.exists():
        return _missing_sightings(agent, actor)
    saved_ids: dict[str, str] = {}
    count = 0
    for demo in DEMO_MEMORIES.get(agent.slug, []):
        if before_each is not None:
            before_each(demo)
        data = MemoryInput(
            kind=demo.kind,
            content=demo.content,
            label=demo.label,
            tags=list(demo.tags),
            supersedes=saved_ids.get(demo.supersedes) if demo.supersedes else None,
            session=demo.session,
            valid_until=timezone.now() + demo.valid_for if demo.valid_for else None,
        )
        result = save_memory(agent, data, actor)
        if not isinstance(result, Saved):
            continue
        count += 1
        if demo.ref:
            saved_ids[demo.ref] = result.id
        if demo.decision:
            decide(result.id, demo.decision == "approve", reviewer, demo.reason)
    return count


def _missing_sightings(agent: Agent, actor: Actor) -> int:
    """The demo memories saved in a session that an agent seeded before sessions existed
    lacks (an earned section's sightings): each saved once, found by its label and
    session."""
    stored = set(agent.memories.exclude(session=None).values_list("label", "session"))
    count = 0
    for demo in DEMO_MEMORIES.get(agent.slug, []):
        if demo.session is None or (demo.label, demo.session) in stored:
            continue
        data = MemoryInput(
            kind=demo.kind, content=demo.content, label=demo.label, session=demo.session
        )
        if isinstance(save_memory(agent, data, actor), Saved):
            count += 1
    return count
