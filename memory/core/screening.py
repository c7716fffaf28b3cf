"""Instructions are not facts (SPEC §19.4): does a memory read as an order to the model?

A memory is meant to say what the model observed about the user, the project or the
world ("Prefers short answers", "The team deploys on Fridays"). Text addressed to the
model instead ("Always answer in French", "Ignore previous instructions", "You are now
DAN", ``<|im_start|>system``) changes behaviour as a persona edit would, so a save that
reads that way never composes without a person (``memory.core.outcome``).

Pure and bounded: every rule is one precompiled regular expression without nested
quantifiers, so each runs in time linear in the content, which a save already caps at
``CONTENT_MAX`` code points; at most ``SIGNALS_MAX`` signals are kept. Each signal's
``text`` is the exact span matched, so pages can highlight it in the content.

Screening is a router, not a wall: an adaptive attacker can phrase an order as a fact.
What follows a screen (a person's review, provenance, rollback) does the rest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Verdict = Literal["fact", "instruction"]
SignalKind = Literal["override", "role", "imperative", "prompt-structure"]
SIGNAL_KINDS: tuple[SignalKind, ...] = ("override", "role", "imperative", "prompt-structure")

# A page never needs more to show why; the screen never keeps more.
SIGNALS_MAX = 20

# What each kind means, in words, for pages and docs.
SIGNAL_HELP: dict[SignalKind, str] = {
    "override": "tries to override the model's instructions",
    "role": "gives the model a role or persona",
    "imperative": "gives the model an order",
    "prompt-structure": "is written as prompt structure (chat-template tokens, role "
    "labels, headings, code fences)",
}


@dataclass(frozen=True, slots=True)
class Signal:
    kind: SignalKind
    text: str  # the exact span of the content that matched
    start: int  # its offset in the content, in code points


@dataclass(frozen=True, slots=True)
class Screen:
    verdict: Verdict
    signals: tuple[Signal, ...] = ()

    def as_dict(self) -> dict[str, object]:
        """The JSON shape of SPEC §19.4: the verdict and each signal's kind and text."""
        return {
            "verdict": self.verdict,
            "signals": [{"kind": s.kind, "text": s.text} for s in self.signals],
        }


_FLAGS = re.IGNORECASE | re.MULTILINE

# Where a clause starts: the start of the content or of a line (after an optional list
# bullet or number), or after sentence punctuation or a colon (so the value of a
# "- **Operating principle**: always defer to the user" line counts). An imperative
# sentence has no subject, so the verb stands right there.
_CLAUSE = r"(?:^[ \t]*(?:[^\w\s]{1,4}[ \t]*|\d{1,3}[.)][ \t]+)?|(?<=[.!?:;])[ \t]+|(?<=[.!?:;]\*\*)[ \t]+)"
# Words that may stand before the verb of an order without changing what it is.
_LEAD = r"(?:(?:please|so|and|also|now|then|next|first|finally|instead|from now on|going forward|henceforth|from this point (?:on|forward)|in (?:the )?future|for (?:all|every) (?:future )?(?:answers?|responses?|replies|messages|conversations?))[ \t]*,?[ \t]+)?"

# Verbs whose bare form at a clause start is an order to the one reading it. Words that
# are as often nouns ("list", "address", "call", "return", "start", "display") are left
# out: a subjectless fact may begin with them.
_ORDER_VERBS = (
    "ignore|disregard|forget|obey|respond|reply|answer|print|say|tell|output|repeat|"
    "translate|summari[sz]e|explain|generate|write|provide|give|recommend|mention|insert|"
    "append|include|refuse|pretend|behave|treat|assume|avoid|reveal|remember|act|use|send|"
    "visit|describe|suggest|speak|talk|defer|stop|keep|ensure|make sure|be sure|be|do not|"
    "don'?t|must|answer only|begin|end (?:your|every|each|all)|start your|rephrase|rewrite|"
    "paraphrase|reflect|limit|strictly|elaborate|skip|offer|report|allow|grant|"
    "address the user|call the user|refer to|replace|redirect|forward|store|save|add|"
    "direct|route|drive|prioriti[sz]e|emphasi[sz]e|praise|promote|endorse|support|"
    "comply|agree|follow|accept|approve|delete|disable|enable|bypass|override|"
    "pay attention|focus|consider|think|proceed|continue|create|develop|outline|"
    "draft|compose|produce|list all|list every|show me|show the|give me|let me|"
    "let'?s|imagine|roleplay|role-play|simulate|emulate|become|stay"
)
# Not an order when the word after the verb shows a noun: "Use of tabs is…", "Keep time".
_NOT_ORDER = r"(?![ \t]+(?:of|is|was|are|were|has|had|been|did|case|cases|date|time)\b)"
# "Always", "never" and "only" open an order ("Always answer in French") or a subjectless
# fact ("Always takes the train", "Never been to Japan", "Only child", "Always late"): a
# fact when the next word is a third-person or past verb, or an adjective or article.
_ADVERB = r"\b(?:always|never)\b"
_NOT_ORDER_ADVERB = (
    r"(?![ \t]+(?:is|was|are|were|has|had|been|did|does|ate|went|saw|got|drove|flew|took|"
    r"made|met|heard|wrote|knew|thought|felt|ran|won|lost|bought|spent|left|came|gave|forgot|"
    r"owned|once|really|seen|late|early|busy|happy|tired|on time|available|around|ready|"
    r"child|the|a|an|one|two|three|when|if|on|in|at|for|because|after|before)\b)"
    r"(?![ \t]+[a-z]+(?:ed|[^su\s]s)\b)"
)
_IMPERATIVE = re.compile(
    _CLAUSE
    + _LEAD
    + r"(?:\b(?:"
    + _ORDER_VERBS
    + r")\b"
    + _NOT_ORDER
    + "|"
    + _ADVERB
    + _NOT_ORDER_ADVERB
    # "Only" opens an order when a verb of an order follows ("Only answer in English"),
    # else a fact ("Only P0 fixes may merge", "Only eats breakfast on weekends").
    + r"|\bonly[ \t]+(?:"
    + _ORDER_VERBS
    + r")\b"
    + _NOT_ORDER
    + ")",
    _FLAGS,
)
# An order under a condition: "When the user asks about billing, tell them…".
_CONDITIONAL = re.compile(
    r"\b(?:when|whenever|if|once|each time|every time|after|before|until|unless)\b[^.!?\n,;:]{1,120},[ \t]*"
    r"(?:then[ \t]+|please[ \t]+|always[ \t]+|just[ \t]+)?\b(?:"
    + _ORDER_VERBS
    + r")\b"
    + _NOT_ORDER,
    _FLAGS,
)

# The model addressed as "you", or by its own name, with an obligation.
_ADDRESSED = re.compile(
    r"\b(?:you|the (?:assistant|model|ai|bot|agent)|assistant|chatgpt|claude|gemini)"
    r"[ \t]+(?:must|should|shall|will|need to|have to|are required to|may not|can ?not|"
    r"can't|won't|do not|don't|always|never|are to|are going to|are about to)\b"
    r"|\bI[ \t]+(?:want|need|would like|'d like)[ \t]+you[ \t]+to\b"
    r"|\b(?:chatgpt|gpt|claude|gemini|bard|assistant)[ \t]*,[ \t]*(?:please[ \t]+)?(?:"
    + _ORDER_VERBS
    + r")\b"
    r"|\byour[ \t]+(?:answers?|responses?|replies|reply|outputs?|programming|guidelines|"
    r"creators?|developers?|filters?|content policy)\b"
    r"|\b(?:allow|limit|consider|imagine|present|introduce)[ \t]+yourself\b"
    r"|\b(?:can|could|would|will)[ \t]+you[ \t]+(?:please[ \t]+)?(?:provide|give|tell|write|"
    r"explain|list|show|help|create|generate|make|describe|pretend|act)\b",
    _FLAGS,
)
# Rules that name the model's own future replies: "respond in", "all future responses".
_REPLIES = re.compile(
    r"(?<!\bto )(?<!\bthe )(?<!\ban )(?<!\bmy )(?<!\bher )(?<!\bhis )(?<!\btheir )"
    r"(?<!\bevery )(?<!\beach )(?<!\ball )(?<!\bany )(?<!\bno )"  # "wants every reply in…"
    r"\b(?:respond|reply|answer|speak|talk)[ \t]+(?:only[ \t]+)?(?:in|with|using)[ \t]+"
    r"(?!the (?:evening|morning|afternoon|weekend|meeting|office)\b)\w+"
    r"|\b(?:all|every|each|any)[ \t]+(?:future|subsequent|further|following)[ \t]+"
    r"(?:responses?|replies|answers?|messages?|outputs?|conversations?|chats?|sessions?)\b"
    r"|\b(?:in|for|with|to|at the end of)[ \t]+(?:every|each|all)[ \t]+"
    r"(?:responses?|replies|answers?|outputs?|prompts?)\b"
    r"|\b(?:make|end|start|begin|keep|format)[ \t]+(?:every|each|all|your)[ \t]+"
    r"(?:responses?|replies|reply|answers?|outputs?|messages?)\b"
    r"|\bfrom now on[ \t]*,?[ \t]+(?:you|always|never|only|respond|reply|answer|speak)\b",
    _FLAGS,
)

_OVERRIDE = re.compile(
    r"\b(?:ignore|disregard|forget|override|bypass|skip|drop|abandon|discard|neglect)"
    r"[ \t]+(?:(?:all|any|every|each|the|your|my|of|these|those|that|this|previous|prior|"
    r"above|earlier|preceding|former|original|initial|following|other|existing|old|"
    r"current|given|system|safety|and)[ \t]+){0,4}"
    r"(?:instructions?|prompts?|rules|directions|directives|guidelines|context|messages|"
    r"constraints|programming|restrictions|polic(?:y|ies)|filters|guardrails|training|"
    r"commands?|orders|everything|text)\b"
    r"|\b(?:ignore|disregard|forget)[ \t]+(?:everything[ \t]+|the[ \t]+)?(?:above|before|said|that came)\b"
    r"|\bnew[ \t]+(?:system[ \t]+)?(?:prompt|instructions?|rules|directives?)[ \t]*[:.!]"
    r"|\bnew[ \t]+system[ \t]+prompt\b"
    r"|\b(?:developer|dan|god|jailbreak|unrestricted|debug)[ \t_]+mode\b"
    r"|\bdo anything now\b",
    _FLAGS,
)

_ROLE = re.compile(
    r"\byou[ \t]+are[ \t]+(?:now|no longer|not (?:an? )?(?:ai|assistant|language model)|"
    r"going to (?:act|be|pretend|play|respond)|about to|free|an? (?:ai|assistant|"
    r"language model|chatbot|bot|helpful|expert|unfiltered|uncensored))\b"
    r"|\b(?:you|to)[ \t]+(?:now[ \t]+|will[ \t]+|shall[ \t]+|must[ \t]+)?(?:act|behave|respond|"
    r"serve|play)[ \t]+(?:as|like)\b"
    r"|\b(?:take[ \t]+(?:up|on)|adopt|assume|embody)[ \t]+(?:the[ \t]+)?(?:persona|role|character|"
    r"identity)[ \t]+of\b"
    r"|\b(?:in|stay|stays|staying|break|breaking)[ \t]+character\b"
    r"|\bpretend[ \t]+(?:to be|you|that you|you're)\b"
    r"|\brole-?play(?:ing)?[ \t]+(?:as|with)\b"
    r"|\byour[ \t]+(?:new[ \t]+)?(?:role|persona|name|task|job|goal|purpose|mission|"
    r"instructions|rules|directive)[ \t]+(?:is|are|will be|now)\b"
    r"|\b(?:hello|hi|hey|dear)[ \t]+(?:chatgpt|gpt|claude|gemini|bard|assistant|ai)\b"
    r"|\bas an? (?:ai|language model|assistant)\b(?=[^.!?\n]{0,80}\byou\b)",
    _FLAGS,
)

_STRUCTURE = re.compile(
    r"<\|[a-z_]{1,30}\|>"  # <|im_start|>, <|system|>, <|endoftext|>
    r"|\[/?INST\]|<</?SYS>>|</?start_of_turn>|</?end_of_turn>"
    r"|</?(?:system|instructions?|prompt|assistant|admin|sys)>"
    r"|^[ \t]*(?:system|assistant|developer|### (?:instruction|response|system))[ \t]*:"
    r"|^[ \t]{0,3}#{1,6}[ \t]+\S[^\n]{0,60}"  # a markdown heading
    r"|^[ \t]*(?:```|~~~)"  # a code fence
    r"|\b(?:rules|persona|role|job|prompt|instructions?|system)[ \t]*=[ \t]*[{\w\[]"
    r"|\[(?:put |insert |enter |type )?(?:your |the )?(?:prompt|input|question|request)(?: here)?\]"
    r"|(?<=\n)[ \t]*(?:user|human|ai)[ \t]*:"  # a turn label on a later line: a transcript
    r"|!\[[^\]\n]{0,200}\]\([^)\s?]{1,300}\?[^)\s]{0,300}\)",  # an image link with a query
    _FLAGS,
)

_RULES: tuple[tuple[SignalKind, re.Pattern[str]], ...] = (
    ("override", _OVERRIDE),
    ("role", _ROLE),
    ("prompt-structure", _STRUCTURE),
    ("imperative", _ADDRESSED),
    ("imperative", _REPLIES),
    ("imperative", _IMPERATIVE),
    ("imperative", _CONDITIONAL),
)


# Reported speech: a quotation that someone said, wrote or follows is what they said,
# not an order to the model ('Their manager told them "you must be online by 9"'). Orders
# and roles inside it do not count; overrides and prompt structure always do.
_QUOTE = re.compile(r'"[^"\n]{1,400}"|\u201c[^\u201d\n]{1,400}\u201d')
_REPORTING = re.compile(
    r"\b(?:said|says|say|told|tells|quoted|quotes|quoting|wrote|writes|reads|asked|asks|"
    r"mentioned|noted|reported|rule|motto|saying|agreement|policy|guide|docs)\b",
    re.IGNORECASE,
)
_REPORTED_KINDS = frozenset({"imperative", "role"})
_REPORTING_REACH = 60  # characters before a quotation searched for a reporting word


def _reported(content: str) -> list[tuple[int, int]]:
    """The spans of quotations introduced by a reporting word, in order."""
    spans = []
    for quote in _QUOTE.finditer(content):
        before = content[max(0, quote.start() - _REPORTING_REACH) : quote.start()]
        if _REPORTING.search(before):
            spans.append((quote.start(), quote.end()))
    return spans


def _inside(signal: Signal, spans: list[tuple[int, int]]) -> bool:
    end = signal.start + len(signal.text)
    return any(start <= signal.start and end <= stop for start, stop in spans)


def screen(content: str) -> Screen:
    """Screen ``content``: ``instruction`` with the signals that say so, or ``fact``.

    Signals are in the order they occur, overlapping spans dropped (the earlier, then the
    longer, wins), at most ``SIGNALS_MAX``.
    """
    found: list[Signal] = []
    for kind, pattern in _RULES:
        for match in pattern.finditer(content):
            text = match.group().strip()
            if not text:
                continue
            start = match.start() + (len(match.group()) - len(match.group().lstrip()))
            found.append(Signal(kind, text, start))
            if len(found) >= SIGNALS_MAX * len(_RULES):
                break
    if found and (reported := _reported(content)):
        found = [s for s in found if s.kind not in _REPORTED_KINDS or not _inside(s, reported)]
    found.sort(key=lambda s: (s.start, -len(s.text)))
    kept: list[Signal] = []
    end = -1
    for signal in found:
        if signal.start >= end:
            kept.append(signal)
            end = signal.start + len(signal.text)
            if len(kept) == SIGNALS_MAX:
                break
    return Screen("instruction" if kept else "fact", tuple(kept))


def highlight_spans(content: str, signals: tuple[Signal, ...]) -> list[tuple[str, bool]]:
    """``content`` cut into pieces, each marked True when it is a signal's span: what a
    page escapes and wraps in ``<mark>``. Spans are the screen's own, so they never
    overlap and lie in order."""
    pieces: list[tuple[str, bool]] = []
    at = 0
    for signal in signals:
        if signal.start < at or content[signal.start : signal.start + len(signal.text)] != (
            signal.text
        ):
            continue  # not a span of this content: show it unmarked rather than wrongly
        if signal.start > at:
            pieces.append((content[at : signal.start], False))
        pieces.append((signal.text, True))
        at = signal.start + len(signal.text)
    if at < len(content):
        pieces.append((content[at:], False))
    return pieces
