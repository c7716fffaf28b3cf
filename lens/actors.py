"""Who did something: a person, an API token, or the system itself."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lens.models import ApiToken


@dataclass(frozen=True)
class Actor:
    label: str
    user: Any = None
    token: ApiToken | None = None

    @classmethod
    def for_token(cls, token: ApiToken) -> Actor:
        name = f" ({token.name})" if token.name else ""
        return cls(label=f"token {token.prefix}…{name}", token=token)

    @classmethod
    def for_user(cls, user: Any) -> Actor:
        return cls(label=user.get_username(), user=user)


SYSTEM = Actor(label="system")
