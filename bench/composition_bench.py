"""The composition endpoint (SPEC §8) for the lens target, split into its pieces.

GET /api/agents/{slug}/composition of an agent with 40 sections, 2,000 authored entries
and 1,000 memories, in process: the whole request through Django's test client, then
each piece on its own — loading the rows, decoding and validating them (cold: the first
read of these rows; warm: every later one), the fold and render, and writing the answer.
"""

from __future__ import annotations

import uuid
import zlib
from collections.abc import Callable

from django.http import HttpRequest
from django.test import Client

from bench.data import big_memory_config
from bench.lens_bench import save_planned
from lens.actors import SYSTEM
from lens.agents import config_of, forget_validated, get_agent, load_entry_values
from lens.models import Agent, ApiToken, Team
from lens.rows import decode_values
from lens.serving.compression import LEVEL, MIN_BYTES
from memory.composition import compose
from memory.configuring import store_agent
from web.api.root import api

_RUN = uuid.uuid4().hex[:8]


def run(median_ms: Callable[..., float], report: Callable[..., None]) -> None:
    team = Team.objects.create(slug=f"bench-comp-{_RUN}", name="Bench composition")
    store_agent(team, "remembers", big_memory_config())
    save_planned(Agent.objects.get(team=team, slug="remembers"), SYSTEM)
    _token, raw = ApiToken.objects.issue(team, "bench")
    client = Client()
    path = "/api/agents/remembers/composition"
    plain = {"Authorization": f"Bearer {raw}"}
    gzipped = {**plain, "Accept-Encoding": "gzip"}
    body = client.get(path, headers=plain)
    assert body.status_code == 200, body.content[:200]
    packed = client.get(path, headers=gzipped)
    print(
        "\nComposition endpoint, 40 sections/2,000 entries/1,000 memories:"
        f" {len(body.content):,} bytes; {len(packed.content):,} gzipped (level {LEVEL},"
        f" answers of {MIN_BYTES:,} bytes and more)"
    )
    report(
        "whole request through the test client",
        median_ms(lambda: _get(client, path, plain), 50),
        20,
    )
    report("  … accepting gzip", median_ms(lambda: _get(client, path, gzipped), 50), 20)

    def load() -> Agent:
        return get_agent(team, "remembers")

    def load_entries() -> Agent:
        agent = load()
        load_entry_values([agent])
        return agent

    loaded = load_entries()
    texts = [text for rows in loaded._lens_entries.values() for _key, text in rows]
    load_ms = median_ms(load, 50)
    report("load the agent (agent + 3 prefetches)", load_ms)
    report("  + its 2,000 entries as JSON text (1 query)", median_ms(load_entries, 50) - load_ms)
    report("decode the 2,000 values together", median_ms(lambda: decode_values(texts), 50))

    def cold() -> object:
        forget_validated()
        return config_of(loaded)

    report("config, first read of these rows (decode + validate)", median_ms(cold, 20))
    config_ms = median_ms(lambda: config_of(loaded), 50)
    report("config, any later read (cached by its rows)", config_ms)
    report(
        "fold + render (compose less the config)",
        median_ms(lambda: compose(loaded), 30) - config_ms,
    )
    composition = compose(loaded)
    dump_ms = median_ms(composition.model_dump, 50)
    data = composition.model_dump()
    report("serialise: model_dump", dump_ms)
    report("serialise: render to JSON", median_ms(lambda: _render(data), 50))
    content = body.content
    for level in (1, 3, 6, 9):
        size = len(zlib.compress(content, level, 31))
        report(
            f"gzip level {level}: {size:,} bytes",
            median_ms(lambda level=level: zlib.compress(content, level, 31), 30),
        )


def _render(data: object) -> object:
    request = HttpRequest()  # the renderer does not read it
    return api.renderer.render(request, data, response_status=200)


def _get(client: Client, path: str, headers: dict[str, str]) -> None:
    response = client.get(path, headers=headers)
    assert response.status_code == 200


def cleanup() -> None:
    forget_validated()
    Team.objects.filter(slug=f"bench-comp-{_RUN}").delete()
