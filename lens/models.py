"""Teams, API tokens, agents and their authored declarations."""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models

from lens.core.background import (
    KEY_MAX,
    SECTION_ID_MAX,
    TIERS,
    TITLE_MAX,
    section_id_problem,
    title_problem,
)
from lens.core.config import AGENT_SLUG_PATTERN, NAME_MAX

TOKEN_PREFIX = "cl_"


class Team(models.Model):
    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="Membership", related_name="teams", blank=True
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.name or self.slug


class Role(models.TextChoices):
    """What a member may do in a team. A reviewer also decides its guarded promotions."""

    MEMBER = "member", "member"
    REVIEWER = "reviewer", "reviewer"


class Membership(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(
        max_length=16,
        choices=Role.choices,
        default=Role.MEMBER,
        help_text="A reviewer may approve, reject, revoke and reopen this team's memories.",
    )
    joined_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["team", "user"], name="membership_unique_user")
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.team}"


def hash_token(raw: str) -> str:
    # Tokens are 256 random bits, so a plain SHA-256 is enough: there is nothing to
    # brute-force, and an indexed equality lookup on the digest stays O(1).
    return hashlib.sha256(raw.encode()).hexdigest()


class ApiTokenManager(models.Manager["ApiToken"]):
    def issue(self, team: Team, name: str = "", user: Any = None) -> tuple[ApiToken, str]:
        """Create a token and return it with its raw value, which is never stored.
        A name longer than the column is refused (``ValueError``), never cut silently.

        ``user``: the person the token belongs to (SPEC §14 "Whose token"), whose changes
        made with it are theirs; None, a service token named by its label. Whether the
        person may hold one is the caller's to check (``lens.token_issuing``)."""
        limit = ApiToken._meta.get_field("name").max_length or 0
        if len(name) > limit:
            raise ValueError(
                f"A token's name is at most {limit} characters; this one has {len(name)}."
            )
        raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
        token = self.create(
            team=team, name=name, prefix=raw[:10], digest=hash_token(raw), user=user
        )
        return token, raw


class ApiToken(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="tokens")
    # The person the token belongs to; NULL: a service token (SPEC §14 "Whose token").
    # PROTECT, not SET_NULL: a person's token must never turn into a service token, whose
    # proposals its holder could then decide. A person who holds tokens is deactivated
    # (their tokens stop working: ``lens.api_tokens``), not deleted.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="api_tokens",
    )
    name = models.CharField(max_length=200, blank=True)
    prefix = models.CharField(max_length=16, help_text="The first characters, to recognise it")
    digest = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ApiTokenManager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.team.slug})"

    @property
    def personal(self) -> bool:
        return self.user_id is not None


class Agent(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="agents")
    slug = models.CharField(
        max_length=64,
        validators=[RegexValidator(AGENT_SLUG_PATTERN, "Lowercase letters, digits and '-'.")],
    )
    name = models.CharField(max_length=NAME_MAX)
    persona = models.TextField(blank=True)
    tone = models.TextField(blank=True)
    objective = models.TextField(blank=True)
    manual = models.TextField(
        blank=True, help_text="How the agent should use memory_save: kinds and labels."
    )
    # NULL is "no routing spec selected" (the API's null), distinct from any spec key.
    routing_spec = models.CharField(max_length=100, null=True, blank=True)  # noqa: DJ001
    recall_pinned_candidates = models.BooleanField(default=False)
    protected = models.BooleanField(
        default=False,
        help_text="Changes to a protected agent wait as proposals until another "
        "reviewer of the team publishes them.",
    )
    # NULL: no model declared. Well-formed model names only (lens.core.context_windows).
    model = models.CharField(  # noqa: DJ001
        max_length=128,
        null=True,
        blank=True,
        help_text="The model this agent mostly runs on (e.g. gpt-4o): its prompt is shown "
        "against that model's context window.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    # Not a field: the authored entries of every agent loaded with this one, by section
    # pk, cached by ``lens.agents.load_entry_values`` (unset until then).
    _lens_entries: dict[int, list[tuple[str, Any]]]

    class Meta:
        ordering = ["team", "slug"]
        constraints = [
            models.UniqueConstraint(fields=["team", "slug"], name="agent_unique_slug_per_team")
        ]

    def __str__(self) -> str:
        return self.name


class Capability(models.Model):
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="capabilities")
    name = models.CharField(max_length=NAME_MAX)
    description = models.TextField(blank=True)
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["position", "id"]
        verbose_name_plural = "capabilities"

    def __str__(self) -> str:
        return self.name


class AwarenessSource(models.Model):
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="awareness_sources")
    name = models.CharField(max_length=NAME_MAX)
    description = models.TextField(blank=True)
    access_method = models.CharField(max_length=NAME_MAX * 5, blank=True)
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["position", "id"]

    def __str__(self) -> str:
        return self.name


def _validate_section_id(value: str) -> None:
    if problem := section_id_problem(value):
        raise ValidationError(problem)


def _validate_title(value: str) -> None:
    if problem := title_problem(value):
        raise ValidationError(problem)


class SectionDeclaration(models.Model):
    """A declared Background section. Promotion rows refer to it by its string id."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="sections")
    section_id = models.CharField(
        "section id", max_length=SECTION_ID_MAX, validators=[_validate_section_id]
    )
    title = models.CharField(max_length=TITLE_MAX, validators=[_validate_title])
    promotion = models.CharField(
        max_length=8, choices=[(tier, tier) for tier in TIERS], default="locked"
    )
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["position", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "section_id"], name="section_unique_id_per_agent"
            )
        ]

    def __str__(self) -> str:
        return f"{self.title} ({self.section_id})"


class AuthoredEntry(models.Model):
    section = models.ForeignKey(
        SectionDeclaration, on_delete=models.CASCADE, related_name="entries"
    )
    key = models.CharField(max_length=KEY_MAX)
    # JSON keeps the scalar's type (string, integer, float, boolean) on both backends.
    value = models.JSONField()
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["position", "id"]
        verbose_name_plural = "authored entries"
        constraints = [
            models.UniqueConstraint(fields=["section", "key"], name="entry_unique_key_per_section")
        ]

    def __str__(self) -> str:
        return self.key


class StoredConfig(models.Model):
    """An agent's whole config as a revision recorded it: the canonical JSON text
    (``lens.core.revisions.canonical_config``), stored once however many revisions of
    however many agents hold it."""

    sha256 = models.CharField(max_length=64, primary_key=True)
    text = models.TextField()

    def __str__(self) -> str:
        return self.sha256[:12]


class Via(models.TextChoices):
    """Which way a revision came in (SPEC §14)."""

    API = "api", "API"
    ADMIN = "admin", "admin"
    RESTORE = "restore", "restore"
    PROPOSAL = "proposal", "proposal"
    IMPORT = "import", "import"


class Revision(models.Model):
    """One immutable version of an agent's declarations: who made it, which way, what
    changed (``summary``, SPEC §14) and the whole config it left."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="revisions")
    number = models.PositiveIntegerField()
    created_at = models.DateTimeField()
    # A username or a token's label (``lens.actors.Actor``), kept as text: the record
    # outlives the user or the token.
    actor = models.CharField(max_length=200)
    via = models.CharField(max_length=16, choices=Via.choices)
    approved_by = models.CharField(max_length=150, null=True, blank=True)  # noqa: DJ001
    config = models.ForeignKey(
        StoredConfig, on_delete=models.PROTECT, db_column="config_sha256", related_name="+"
    )
    summary = models.JSONField()

    class Meta:
        ordering = ["agent", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["agent", "number"], name="revision_unique_number")
        ]
        indexes = [models.Index(fields=["agent", "created_at"], name="revision_agent_at")]

    def __str__(self) -> str:
        return f"{self.agent.slug} revision {self.number}"


class ProposalStatus(models.TextChoices):
    PENDING = "pending", "pending"
    PUBLISHED = "published", "published"
    REJECTED = "rejected", "rejected"
    STALE = "stale", "stale"
    WITHDRAWN = "withdrawn", "withdrawn"


class Proposal(models.Model):
    """A change to a protected agent, waiting for a reviewer other than its proposer
    (SPEC §14). It holds the whole config it would leave, made on ``base_revision``: once
    the agent has moved past that revision it is stale and can never be published."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="proposals")
    base_revision = models.PositiveIntegerField()
    # The actor's label, as a revision's ``actor``; ``proposer`` is the person behind it
    # (None for a service token), who may not decide it.
    proposed_by = models.CharField(max_length=200)
    proposer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # The API token it was proposed with, if any: a person's token (``proposer`` is then
    # its person) or a service token (``proposer`` None). The page says which and whose.
    token = models.ForeignKey(
        ApiToken, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # Which way it was proposed (API, admin, restore); publishing it writes ``proposal``.
    via = models.CharField(max_length=16, choices=Via.choices)
    created_at = models.DateTimeField()
    config = models.ForeignKey(
        StoredConfig, on_delete=models.PROTECT, db_column="config_sha256", related_name="+"
    )
    summary = models.JSONField()
    status = models.CharField(
        max_length=16, choices=ProposalStatus.choices, default=ProposalStatus.PENDING
    )
    decided_by = models.CharField(max_length=150, null=True, blank=True)  # noqa: DJ001
    decided_at = models.DateTimeField(null=True, blank=True)
    reason = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["agent", "status", "-id"], name="proposal_agent_status"),
            models.Index(fields=["status", "-id"], name="proposal_status"),
        ]

    def __str__(self) -> str:
        return f"{self.agent.slug} proposal {self.pk}"


class AuditEvent(models.Model):
    """One change, appended to its team's log in the change's own transaction (SPEC §15).

    Each event seals the one before it: ``sha256`` is the SHA-256 of the event's
    canonical JSON (``lens.audit``) without ``sha256``, which holds ``prev_sha256``. The
    database refuses UPDATE and DELETE on this table (triggers, migration 0005), except
    the deletion of a whole team's log while that team is being deleted. Details hold ids, sizes and hashes, never a
    memory's content or a key's payload.
    """

    # Deleting a team deletes its log: the one way rows leave it (``lens.audit``).
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    seq = models.PositiveBigIntegerField()
    at = models.DateTimeField()
    actor = models.CharField(max_length=200)
    action = models.CharField(max_length=40)
    object_type = models.CharField(max_length=20)
    object_id = models.CharField(max_length=300)
    agent = models.CharField(max_length=64, null=True, blank=True)  # noqa: DJ001
    details = models.JSONField(default=dict)
    prev_sha256 = models.CharField(max_length=64)
    sha256 = models.CharField(max_length=64)

    class Meta:
        ordering = ["team", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["team", "seq"], name="audit_unique_seq"),
        ]
        indexes = [
            models.Index(fields=["team", "agent", "seq"], name="audit_team_agent"),
            models.Index(fields=["team", "action", "seq"], name="audit_team_action"),
            models.Index(fields=["team", "at"], name="audit_team_at"),
        ]

    def __str__(self) -> str:
        return f"{self.action} #{self.seq}"


class AuditHead(models.Model):
    """The newest event of a team's log: its number and hash. Appending locks this row,
    so a team's events are numbered one after another with no gap, whoever writes."""

    team = models.OneToOneField(Team, on_delete=models.CASCADE, primary_key=True, related_name="+")
    seq = models.PositiveBigIntegerField(default=0)
    sha256 = models.CharField(max_length=64)

    def __str__(self) -> str:
        return f"{self.team_id} at {self.seq}"


class AuditPurge(models.Model):
    """A team being deleted, for the length of its deletion's transaction: the audit
    triggers let its events go, and no others."""

    team_id = models.BigIntegerField(primary_key=True)

    def __str__(self) -> str:
        return f"purging {self.team_id}"


class LoginFailure(models.Model):
    """One failed sign-in for a username, kept for the login throttle (lens/serving/throttle.py).

    In the database so that every server process counts the same failures; rows older
    than the throttle's window are pruned as new ones arrive.
    """

    # The username as typed, case-folded: not a foreign key, unknown names count too.
    username = models.CharField(max_length=150)
    at = models.DateTimeField(db_index=True)

    class Meta:
        indexes = [models.Index(fields=["username", "at"], name="loginfailure_user_at")]

    def __str__(self) -> str:
        return f"{self.username} at {self.at:%Y-%m-%d %H:%M:%S}"
