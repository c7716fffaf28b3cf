"""Two revisions of an agent side by side (SPEC §14): what changed in words, the config
diff, and the diff of the prompts each composes with the agent's memories as they are now.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lens.core.diffs import unified_diff
from lens.core.revisions import indented_config, summarise
from lens.core.token_prefix import token_totals
from lens.models import Agent
from lens.revisions import get_revision, stored_config
from memory.composition import prompt_texts


@dataclass(frozen=True)
class RevisionDiff:
    from_number: int  # 0: before the agent's first revision
    to_number: int
    summary: list[dict[str, Any]]
    config_diff: str
    prompt_diff: str
    tokens_from: int
    tokens_to: int


def revision_diff(agent: Agent, number: int, against: int | None = None) -> RevisionDiff:
    """Revision ``number`` against ``against`` (by default the one before it; revision 1
    is compared with nothing). Raises RevisionNotFound for either number."""
    new = stored_config(get_revision(agent, number))
    base = number - 1 if against is None else against
    old = stored_config(get_revision(agent, base)) if against is not None or base > 0 else None
    before_label, after_label = f"revision {base}", f"revision {number}"
    if old is None:
        before_label = "(nothing)"  # the agent before its first revision
        (after,) = prompt_texts(agent, [new])
        return RevisionDiff(
            from_number=0,
            to_number=number,
            summary=[change.as_json() for change in summarise(None, new)],
            config_diff=unified_diff("", indented_config(new), before_label, after_label),
            prompt_diff=unified_diff("", after, before_label, after_label),
            tokens_from=0,
            tokens_to=token_totals("", after)[1],
        )
    # Only the totals are shown: the prompts are rendered without counting each
    # section, and the two totals cost one count of the stretch that changed when
    # either prompt was counted before (the usual case: the revision before it, or
    # the prompt the lens shows).
    before, after = prompt_texts(agent, [old, new])
    tokens_from, tokens_to = token_totals(before, after)
    return RevisionDiff(
        from_number=base,
        to_number=number,
        summary=[change.as_json() for change in summarise(old, new)],
        config_diff=unified_diff(
            indented_config(old), indented_config(new), before_label, after_label
        ),
        prompt_diff=unified_diff(before, after, before_label, after_label),
        tokens_from=tokens_from,
        tokens_to=tokens_to,
    )
