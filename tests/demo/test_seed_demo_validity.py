"""``seed_demo``'s validity window (SPEC §19.2): Wren holds one memory true for a few
days from seeding, in the prompt now and marked "expires in 4 days" by the lens."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from lens.models import Agent
from memory.models import MemoryRecord
from tests.factories import in_prompt
from tests.pages import dom

pytestmark = pytest.mark.django_db


def test_wren_holds_a_memory_that_expires_within_a_week(settings: Any) -> None:
    settings.DEBUG = True
    call_command("seed_demo", stdout=StringIO())
    [record] = MemoryRecord.objects.filter(agent__slug="wren", valid_until__isnull=False)
    assert record.valid_until is not None
    left = record.valid_until - timezone.now()
    assert timedelta(days=4) < left <= timedelta(days=5)
    wren = Agent.objects.get(slug="wren")
    assert in_prompt(wren, record.pk)
    client = Client()
    client.force_login(User.objects.get(username="maya"))
    page = dom(client.get("/agents/wren/"))
    fragments = {
        e.get("data-memory-ids"): e for e in page.elements if e.get("data-source") == "memory"
    }
    assert fragments[record.pk].get("data-expires") == "expires in 4 days"
