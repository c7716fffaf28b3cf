"""The demo's delivery history (SPEC §11): a week of sessions for each demo agent, with
memories saved, approved, superseded and revoked between them, so the timeline, the
delivered prompts and their diffs have a story to show after ``make run``.

Every step is the real operation (``save_memory``, ``decide``, ``revoke``, ``deliver``).
Sessions open between the memories of ``demo.memories`` (``History.during``), so
those appear and disappear from one delivery to the next; ``History.after`` then goes
on with memories of its own. The one liberty is time: ``deliver`` records a delivery as
of now, and the demo moves it back to its session's hour in the past week; once the story
is told, its memories follow (``demo.backdating``), each saved and decided shortly
before the session after it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from django.utils import timezone

from demo.backdating import Moved, backdate
from demo.memories import Demo, seed_memories
from lens.actors import Actor
from lens.agents import with_config
from lens.models import Agent, ApiToken
from memory.core.deliveries import DeliveryInput
from memory.core.records import MemoryInput
from memory.decisions import decide, revoke
from memory.deliveries.ledger import deliver
from memory.models import HOLDING, Delivery, MemoryRecord
from memory.saving import Saved, save_memory


@dataclass(frozen=True)
class Session:
    """A runtime session opening: one delivery, ``days_ago`` days back at ``at`` (UTC).

    In ``History.during``, ``before`` is the start of the demo memory (of
    ``demo.memories``) just before which the session opens.
    """

    days_ago: int
    at: time
    model: str
    before: str | None = None


@dataclass(frozen=True)
class Save:
    """Save a memory; ``replaces``: it supersedes the memory holding that label now."""

    ref: str
    kind: str
    content: str
    label: str
    replaces: bool = False


@dataclass(frozen=True)
class Approve:
    ref: str


@dataclass(frozen=True)
class Revoke:
    ref: str
    reason: str


Step = Session | Save | Approve | Revoke


@dataclass(frozen=True)
class History:
    during: tuple[Session, ...] = ()
    after: tuple[Step, ...] = ()


WREN = History(
    during=(
        # Before anything was learned: the authored prompt alone.
        Session(7, time(9, 12), "gpt-4o-2024-08-06", before="The user's name is Doug."),
        # Name and Denver are in; Lisbon is saved next and supersedes Denver.
        Session(6, time(8, 47), "gpt-4o-2024-08-06", before="Doug moved to Lisbon"),
        Session(5, time(19, 5), "gpt-4o-2024-08-06", before="Takes his coffee black"),
        # Black coffee approved; the evening session (a smaller model) gets the same prompt.
        Session(4, time(9, 30), "gpt-4o-2024-08-06", before="Switched to oat flat whites"),
        Session(4, time(21, 15), "gpt-4o-mini", before="Switched to oat flat whites"),
    ),
    after=(
        # Oat flat whites wait for approval and superseded black coffee: it is gone.
        Session(3, time(8, 55), "gpt-4o-2024-08-06"),
        Save(
            "training",
            "profile",
            "Training for the Lisbon half marathon in April; long runs on Sundays.",
            label="training",
        ),
        Save("units", "preference", "Wants distances in kilometres, never miles.", label="units"),
        Approve("units"),
        Session(2, time(9, 20), "gpt-4o-2024-08-06"),
        Revoke("units", "He mixes kilometres and miles himself; not a real preference."),
        Save(
            "job",
            "profile",
            "Promoted to staff engineer at the logistics startup.",
            label="job",
            replaces=True,
        ),
        Session(1, time(8, 58), "gpt-4o-2024-08-06"),
        # Learned after the last delivery: the live prompt differs from it.
        Save(
            "family",
            "profile",
            "His sister Ana visits from Porto in the second week of December.",
            label="family",
        ),
    ),
)

SENTINEL = History(
    during=(
        Session(6, time(10, 2), "claude-sonnet-4-20250514", before="Wrap external HTTP calls"),
        Session(
            5, time(14, 31), "claude-sonnet-4-20250514", before="The ledger migration is 60% done"
        ),
        Session(4, time(11, 10), "claude-sonnet-4-20250514", before="Reviewed PR #812"),
    ),
    after=(
        Save(
            "release",
            "state",
            "Release 4.2 shipped on Tuesday; main is open for 4.3 features again.",
            label="release",
            replaces=True,
        ),
        Session(3, time(10, 45), "claude-sonnet-4-20250514"),
        Save(
            "money-helpers",
            "convention",
            "Currency maths goes through payments.money; no ad-hoc Decimal rounding.",
            label="money-helpers",
        ),
        Approve("money-helpers"),
        Session(2, time(16, 20), "claude-sonnet-4-20250514"),
        Revoke("money-helpers", "payments.money is being rewritten; the rule waits for it."),
        Session(1, time(10, 5), "claude-3-5-haiku-20241022"),
    ),
)

# Memory cannot reach Atlas's prompt (locked and earned sections): the same prompt twice,
# stored once.
ATLAS = History(
    after=(
        Session(5, time(9, 0), "gpt-4o-mini"),
        Session(2, time(13, 40), "gpt-4o-mini"),
    )
)

DEMO_HISTORY = {"wren": WREN, "sentinel": SENTINEL, "atlas": ATLAS}


class _Story:
    """One agent's history, told step by step."""

    def __init__(self, agent: Agent, token: ApiToken, reviewer: Actor, history: History) -> None:
        # Loaded as the API loads it; the config does not change during the story.
        self.agent = with_config(Agent.objects.filter(pk=agent.pk)).get()
        self.runtime = Actor.for_token(token)
        self.reviewer = reviewer
        self.history = history
        self.today = timezone.now().astimezone(UTC).date()
        self.per_day: dict[date, int] = {}
        self.opened = 0  # of history.during
        self.delivered = 0
        self.saved = 0
        self.refs: dict[str, str] = {}
        self.moved: list[Moved] = []

    def before(self, demo: Demo) -> None:
        """Open the sessions that start just before ``demo`` is saved."""
        during = self.history.during
        while self.opened < len(during) and demo.content.startswith(
            during[self.opened].before or ""
        ):
            self.open(during[self.opened])
            self.opened += 1

    def open(self, session: Session) -> None:
        day = self.today - timedelta(days=session.days_ago)
        rank = self.per_day[day] = self.per_day.get(day, 0) + 1
        # ``sess-YYYY-MM-DD-a``: the session's day, then a letter for its rank that day.
        name = f"sess-{day.isoformat()}-{chr(ord('a') + rank - 1)}"
        delivered = deliver(
            self.agent, self.runtime, DeliveryInput(session=name, model=session.model)
        )
        at = datetime.combine(day, session.at, UTC)
        # The demo is the only place a delivery is ever changed (SPEC §11: never once
        # written): deliver() records it as of now, and the story needs it back on its
        # session's day. The sessions are listed in the order they are told, so the
        # timeline keeps the order of the deliveries and the memory events between them.
        Delivery.objects.filter(pk=delivered.delivery.pk).update(delivered_at=at)
        self.moved.append(Moved(recorded=delivered.delivery.delivered_at, to=at))
        self.delivered += 1

    def finish(self, fresh: bool) -> None:
        """The sessions of ``during`` no demo memory opened (a fresh agent only: on an
        agent seeded before the history existed they would all show one prompt), then
        the steps of ``after``.
        """
        if fresh:
            for session in self.history.during[self.opened :]:
                self.open(session)
        for step in self.history.after:
            if isinstance(step, Session):
                self.open(step)
            elif isinstance(step, Save):
                self.save(step)
            elif (record_id := self.refs.get(step.ref)) is None:
                continue  # its memory could not be saved (the address was taken)
            elif isinstance(step, Approve):
                decide(record_id, True, self.reviewer)
            else:
                revoke(record_id, self.reviewer, step.reason)

    def save(self, step: Save) -> None:
        older = None
        if step.replaces:
            older = (
                MemoryRecord.objects.filter(
                    agent=self.agent, label=step.label, promotion__status__in=HOLDING
                )
                .order_by("-created_at")
                .values_list("pk", flat=True)
                .first()
            )
        data = MemoryInput(kind=step.kind, content=step.content, label=step.label, supersedes=older)
        result = save_memory(self.agent, data, self.runtime)
        if isinstance(result, Saved):
            self.refs[step.ref] = result.id
            self.saved += 1


def seed_history(agent: Agent, token: ApiToken, reviewer: Actor) -> tuple[int, int]:
    """Save the agent's demo memories with its delivery history between them, once:
    an agent that has deliveries already gets none. Returns (memories saved, deliveries).

    The story is told in real time, then moved into the past (``backdate``): the demo
    is the only place that rewrites history, and it does so once, in the run that tells
    the story (a later run finds the deliveries, or the memories, and changes nothing).
    """
    history = DEMO_HISTORY.get(agent.slug)
    if Delivery.objects.filter(agent=agent).exists():
        # Told already (or delivered by a runtime): whatever is saved now is new.
        return seed_memories(agent, token, reviewer), 0
    if history is None:
        saved = seed_memories(agent, token, reviewer)
        if saved:
            # No deliveries to follow: the memories were saved a while ago all the same.
            backdate(agent, ())
        return saved, 0
    fresh = not agent.memories.exists()
    story = _Story(agent, token, reviewer, history)
    saved = seed_memories(agent, token, reviewer, before_each=story.before)
    story.finish(fresh)
    # Every memory of the agent, including those an earlier run saved before the
    # history existed (they come before its first delivery).
    backdate(agent, story.moved)
    return saved + story.saved, story.delivered
