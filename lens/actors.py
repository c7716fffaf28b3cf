"""Who did something: a person (in a page, or with a token of theirs), a service's API
token, or the system itself."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lens.models import ApiToken

# Events store the label in a column of this many characters (memory.models.MemoryEvent).
LABEL_MAX = 200


@dataclass(frozen=True)
class Actor:
    """``user``: the person acting (in a page, or through a token of theirs); ``token``:
    the API token the change came with (a person's or a service's)."""

    label: str
    user: Any = None
    token: ApiToken | None = None

    @classmethod
    def for_token(cls, token: ApiToken) -> Actor:
        """Whoever holds ``token``: its person, when it belongs to one (SPEC §14 "Whose
        token": what they do with it is theirs, a proposal included, which they then
        never decide), else the service the token's label names."""
        user = token.user if token.user_id is not None else None
        if user is not None:
            return cls(label=user.get_username(), user=user, token=token)
        head = f"token {token.prefix}…"
        if not token.name:
            return cls(label=head, token=token)
        # The name is a note that can be long; the prefix is what identifies the token,
        # so the name gives way (with an ellipsis) and the label always fits its column.
        room = LABEL_MAX - len(head) - len(" ()")
        name = token.name if len(token.name) <= room else token.name[: room - 1] + "…"
        return cls(label=f"{head} ({name})", token=token)

    @classmethod
    def for_user(cls, user: Any) -> Actor:
        return cls(label=user.get_username(), user=user)


SYSTEM = Actor(label="system")
