"""`N sections · M entries`: the one-line size of an agent's Background."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from lens.core.background import Background


class Counts(BaseModel):
    model_config = ConfigDict(frozen=True)

    sections: int
    entries: int

    @classmethod
    def of(cls, declared: Background, composed: Background | None = None) -> Counts:
        """Declared sections of ``declared``; entries of the composed Background."""
        return cls(
            sections=len(declared.sections),
            entries=(composed or declared).entry_count,
        )

    def label(self) -> str:
        return format_counts(self.sections, self.entries)


def plural(n: int, singular: str, plural_form: str) -> str:
    return f"{n} {singular if n == 1 else plural_form}"


def format_counts(sections: int, entries: int) -> str:
    return f"{plural(sections, 'section', 'sections')} \u00b7 {plural(entries, 'entry', 'entries')}"
