"""What a model reads about the MCP server and each tool: the strongest guidance it has,
in context at the moment of every call. Each says when to call the tool, what it
returns and its limits. Nothing here speaks of where a saved memory goes: the model
would learn to rephrase until it landed where it wanted.
"""

from __future__ import annotations

from kvstore.core.bootstrap import BOOTSTRAP_BUDGET
from kvstore.core.keys import KEY_MAX, PAYLOAD_MAX_RUNES
from memory.core.records import CONTENT_MAX, LABEL_MAX, SESSION_MAX, TAG_MAX, TAGS_MAX
from memory.recall import MESSAGE_MAX_CHARS
from memory.search import QUERY_MAX_CHARS, QUERY_MAX_TERMS

INSTRUCTIONS = f"""\
Composition Lens: memories and a versioned key/value store for agents of one team.
Start a session with kv_bootstrap (your entry point, `root`, and the notes every session \
needs). Use memory_save for durable things you learn about the user or the work, \
memory_recall for the memories relevant to a message, memory_search to look something \
up by words. Use kv_store for things you read by name (plans, notes, configuration), \
never for things you would find by a question. Every error is JSON: \
{{"error": {{"code", "message", ...}}}}. Sizes are counted in characters (Unicode code \
points); a payload is at most {PAYLOAD_MAX_RUNES:,}.
"""

SESSION = (
    "The id of the conversation you are in: pass your conversation id, the same for "
    "every save of one conversation."
)

AGENT = "Your agent's slug, e.g. `wren`. An unknown agent is the error `agent_not_found`."

MEMORY_SAVE = f"""\
Save one durable thing you learned, so that you remember it in later sessions.

Call it when you learn something that will still matter later: a fact about the user \
(their name, timezone, job), a preference, a convention, a decision, an episode worth \
remembering. One thing per call. Do not save secrets, nor what only matters for this \
turn. A memory cannot be edited: to correct one, save the new version with \
`supersedes` set to the old one's id; the old one is then forgotten.

Fields:
- `kind`: what this is, one lowercase word: `profile` (a fact about the user), \
`preference`, `fact`, `convention`, `decision`, `episode`, ... (1-32 characters: a \
lowercase letter, then lowercase letters, digits, `_` or `-`).
- `content`: the memory itself, a plain sentence or a few (1 to {CONTENT_MAX:,} \
characters; line breaks allowed).
- `tags`: optional keywords to find it by (at most {TAGS_MAX}, each 1-{TAG_MAX} \
characters, no control characters).
- `label`: optional short name for the thing learned, on one line (1-{LABEL_MAX} \
characters), e.g. `name`, `timezone`, `theme`. Give one whenever the memory answers a \
question that has one answer at a time, so a later correction can replace it.
- `supersedes`: optional id of an earlier memory of yours that this one replaces.
- `session`: optional id of the conversation you are in (1-{SESSION_MAX} characters, \
no control characters): pass your conversation id with every save, the same one for \
the whole conversation.
- `valid_until`: optional moment (ISO 8601, e.g. `2030-01-31T12:00:00Z`; no zone: UTC) after which the memory is no longer true, e.g. the end of a trip or a temporary arrangement; it must be in the future. Leave it out for lasting things.

Returns JSON: {{"status": "saved", "id": "..."}}; or, when an earlier memory already \
holds this (for example the same kind and label), nothing is saved and the answer is \
{{"status": "conflict", "existing": {{"id", "kind", "content", "tags", "label", \
"supersedes", "created_at", "valid_until"}}, "message": "... supersede it or use a different label."}}: \
if yours corrects the existing one, save it again with `supersedes` set to \
`existing.id`; if it is a different thing, use a different label.

Errors: `invalid_kind`, `invalid_content`, `invalid_tags`, `invalid_label`, \
`invalid_valid_until` (not a date and time, or not in the future), \
`invalid_request` (a `session` that is empty, too long or holds control characters), \
`unknown_supersedes` (no such memory of this agent), `agent_not_found`.
"""

MEMORY_SEARCH = f"""\
Search your saved memories by words, when you need something you may have saved \
before: "which editor does the user prefer" -> query `editor`.

Matches whole words, ignoring case and accents (`cafe` finds `Café`; `prefer` does not \
find `prefers`), in the content, label and tags; a memory matches when any word of \
the query does, best matches first. A query is at most {QUERY_MAX_CHARS:,} characters \
and {QUERY_MAX_TERMS} different words; one without words finds nothing. `kind` keeps \
one kind only; `limit` is 1-200 (default 50).

Returns JSON: {{"memories": [{{"id", "kind", "content", "tags", "label", "supersedes", \
"created_at", "valid_until"}}], "skipped", "limit", "offset", "next_offset"}}. An empty list means \
nothing matched; `skipped` counts stored memories that could not be read.
"""

MEMORY_RECALL = f"""\
The memories relevant to a message, as text ready to read: call it with the user's \
message before you answer it.

Returns JSON: {{"text", "memory_ids", "tiers": [{{"tier", "memory_ids"}}]}}. `text` is \
a `### Recalled Memories` block with one `- ...` line per memory: what you know about \
the user first, then approved memories that did not fit your prompt ("spilled"), then \
memories that share words with the message, within a budget of characters (4,000 \
unless the deployment sets another). `tiers` lists every tier in that order (profile, \
pinned, spilled, hits), empty ones too, with the ids each brought. It is empty when \
nothing is recalled; memories already in your prompt and memories that were replaced \
(superseded) never appear. The message is at most {MESSAGE_MAX_CHARS:,} characters.
"""

KV_STORE = f"""\
The team's versioned key/value store, for what you read by name: your entry point \
`root`, notes every session must read (`must.*`), reference material (`ref.*`), plans \
and state. Not for what you would find by a question: save that with memory_save. \
There is no search: you address a key by its name, and list keys by prefix.

`command` (required), with `id`:
- `read`: the latest version of key `id`, or version `version`. Returns {{"id", \
"version", "payload", "written_at", "runes"}}. A missing key is the error \
`key_not_found`, never an empty answer; a missing version is `version_not_found`.
- `write`: store `payload` as the next version of key `id` (the first is 1). Returns \
{{"id", "version", "written_at", "runes"}}. With `if_version` the write happens only if \
the key is at that version now (`if_version: 0`: only if the key does not exist yet); \
otherwise nothing is written and the error is `version_conflict` with \
`current_version` (0 when the key does not exist): read it again, merge, retry. A \
payload is at most {PAYLOAD_MAX_RUNES:,} characters; a longer one is refused with \
`payload_too_large` (with `limit` and `runes`), never truncated.
- `delete`: remove key `id` and every version of it. Returns {{"id", \
"deleted_versions"}}. A later write starts again at version 1.
- `list`: the keys that start with `id` as a plain prefix (`""` for all of them; end \
it with `.` for a namespace: `must.` is the must tier, while `must.craft` also matches \
`must.crafty`), in code-point order. Returns {{"keys": [{{"id", "version", \
"written_at", "runes"}}], "total", "limit", "offset", "next_offset"}}.
- `history`: the versions of key `id`, newest first, without payloads: {{"id", \
"versions": [{{"version", "written_at", "runes", "first_line"}}], "total_versions", \
"limit", "offset", "next_offset"}}. Read an old one with `read` and `version`.

Keys are 1-{KEY_MAX} characters: dot-separated segments of letters, digits, `_`, `:` \
and `-`, e.g. `root`, `must.craft.traps`, `agentmemories.root`; no `/`, spaces, empty \
segments or leading or trailing dots. Anything else is the error `invalid_key`.
`payload` and `if_version` are for `write` only, `version` for `read` only, `limit` \
(1-200, default 50) and `offset` (default 0) for `list` and `history` only; any other \
combination is refused. `runes` counts characters (code points).
"""

KV_BOOTSTRAP = f"""\
Everything a session needs from the key/value store, in one call: call it first, at \
the start of a session.

Returns JSON: {{"root": {{"id", "version", "payload", "runes"}}, "must": [{{"id", \
"version", "payload", "runes"}}], "ref": [{{"id", "version", "runes", "first_line"}}], \
"omitted": ["must...."], "budget", "used"}}. `root` is the entry point; `must` holds \
the `must.*` keys with their payloads, in key order, as many as fit a budget of \
{BOOTSTRAP_BUDGET:,} characters together with `root`; each `must.*` key that did not \
fit is named in `omitted`: read those with kv_store `read` before relying on the must \
tier. `ref` lists the `ref.*` keys without payloads: read one with kv_store when you \
need it. When there is no `root` key yet the error is `key_not_found`: create it with \
kv_store `write`.
"""

COMMAND = "What to do: `read`, `write`, `delete`, `list` or `history`."
KEY = (
    "The key, e.g. `root` or `must.craft.traps`; for `list`, the prefix of the keys to "
    'list (`""` for all, `must.` for a namespace).'
)
PAYLOAD = f"`write` only: the text to store, at most {PAYLOAD_MAX_RUNES:,} characters."
VERSION = "`read` only: the version to read (1 or more); omit it for the latest."
IF_VERSION = (
    "`write` only: write only if the key is at this version now; 0 means only if the key "
    "does not exist. A mismatch is the error `version_conflict` with `current_version`."
)
LIMIT = "`list` and `history` only: how many to return, 1-200 (default 50)."
OFFSET = "`list` and `history` only: how many to skip (default 0); use `next_offset`."

# --- the agents' composed prompts: resources and a prompt (SPEC §16) -------------------
# Read by whoever chooses what goes into the model's context: the client's user or the
# application. Reading any of them records nothing; a runtime starting a session asks
# for its prompt with `POST /api/agents/{slug}/deliveries`, which records the delivery.

PROMPT_RESOURCE = (
    "The composed prompt of agent `{slug}` as plain text: what a delivery would hand the "
    "model now. Reading it records nothing."
)
COMPOSITION_RESOURCE = (
    "The composition of agent `{slug}` as JSON, exactly as GET "
    "/api/agents/{slug}/composition answers: the prompt's sections and fragments, the "
    "memories each holds, the routing report, counts and tokens. Reading it records "
    "nothing."
)
PROMPT_TEMPLATE = "The composed prompt of any agent of your team, by slug (text/plain)."
COMPOSITION_TEMPLATE = (
    "The composition of any agent of your team, by slug (JSON, as GET "
    "/api/agents/{slug}/composition answers)."
)
AGENT_SYSTEM_PROMPT = (
    "The system prompt of one agent of your team, composed now from its declarations "
    "and approved memories: one message whose text is the whole prompt. Put it in the "
    "model's system prompt where the client can. Getting it records nothing (an agent "
    "runtime starting a session records its delivery with POST "
    "/api/agents/{slug}/deliveries). An unknown agent is the error `agent_not_found`."
)
PROMPT_AGENT = "The agent's slug, e.g. `wren`."
