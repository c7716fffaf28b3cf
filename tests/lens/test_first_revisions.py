"""The data migration that gives every agent declared before revisions its revision 1
(``lens/migrations/0003_revisions.py``), run as a function over today's models."""

from __future__ import annotations

import importlib
import json

import pytest
from django.apps import apps

from lens.core.revisions import canonical_config, config_sha256
from lens.models import Agent, Revision, StoredConfig
from lens.revisions import stored_config
from tests.api_calls import ApiClient, without_revision
from tests.samples import SAMPLE_CONFIG

pytestmark = pytest.mark.django_db

migration = importlib.import_module("lens.migrations.0003_revisions")


def first_revisions() -> None:
    migration._first_revisions(apps, None)


def test_an_agent_without_revisions_gets_revision_1_holding_its_config(api: ApiClient) -> None:
    api.put("/api/agents/wren", SAMPLE_CONFIG)
    api.put("/api/agents/wren", {**SAMPLE_CONFIG, "persona": "Changed since."})
    Revision.objects.all().delete()  # as if declared before revisions existed

    first_revisions()

    row = Revision.objects.get(agent__slug="wren")
    assert (row.number, row.via, row.actor, row.approved_by) == (1, "import", "system", None)
    answered = without_revision(api.get("/api/agents/wren").json())
    assert stored_config(row).model_dump(mode="json") == answered
    assert row.config_id == config_sha256(canonical_config(stored_config(row)))
    assert row.config.text == StoredConfig.objects.get(pk=row.config_id).text
    assert row.summary == [
        {"change": "section_added", "section": section["id"]}
        for section in SAMPLE_CONFIG["background"]["sections"]
    ]
    # The API reads the history it made.
    assert api.get("/api/agents/wren").json()["revision"] == 1
    [listed] = api.get("/api/agents/wren/revisions").json()["revisions"]
    assert (listed["revision"], listed["via"], listed["actor"]) == (1, "import", "system")


def test_an_agent_whose_rows_no_longer_validate_is_skipped(api: ApiClient) -> None:
    for slug in ("wren", "broken", "atlas"):
        api.put(f"/api/agents/{slug}", {**SAMPLE_CONFIG, "name": slug.title()})
    Revision.objects.all().delete()
    # A rule added since: prose may not hold a line that reads as a `##` heading.
    Agent.objects.filter(slug="broken").update(persona="Fine.\n## Current State")
    stored_before = StoredConfig.objects.count()

    first_revisions()

    numbers = dict(Revision.objects.values_list("agent__slug", "number"))
    assert numbers == {"wren": 1, "atlas": 1}
    # Each valid config is stored once: the PUTs stored them already.
    assert StoredConfig.objects.count() == stored_before
    assert api.get("/api/agents/atlas").json()["revision"] == 1


protection = importlib.import_module("lens.migrations.0004_protected_proposals")


def test_configs_stored_before_protection_are_rewritten_with_it(api: ApiClient) -> None:
    """``0004`` gives every stored config ``"protected": false``: its hash is again the
    canonical config's, so a save that changes nothing still writes no revision."""
    api.put("/api/agents/wren", SAMPLE_CONFIG)
    api.put("/api/agents/wren", {**SAMPLE_CONFIG, "persona": "Changed since."})
    api.put("/api/agents/atlas", {**SAMPLE_CONFIG, "persona": "Changed since."})
    for stored in list(StoredConfig.objects.all()):
        # As 0003 stored it, before ``protected`` existed.
        data = json.loads(stored.text)
        del data["protected"]
        text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        StoredConfig.objects.create(sha256=config_sha256(text), text=text)
        Revision.objects.filter(config_id=stored.sha256).update(config_id=config_sha256(text))
        stored.delete()

    protection._configs_say_protected(apps, None)
    protection._configs_say_protected(apps, None)  # and again: nothing more to do

    assert StoredConfig.objects.count() == 2  # wren's two configs; atlas shares one
    for row in Revision.objects.select_related("config"):
        assert '"protected":false' in row.config.text
        assert row.config_id == config_sha256(canonical_config(stored_config(row)))
    answer = api.put("/api/agents/wren", {**SAMPLE_CONFIG, "persona": "Changed since."})
    assert answer.status_code == 200
    assert answer.json()["revision"] == 2
