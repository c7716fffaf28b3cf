"""``GET /healthz``: whether this server process can reach its database (SPEC §13).

For load balancers and orchestrators: no login, no API token, no team, and exempt from
the HTTPS redirect (lens/settings.py), so a plain-HTTP probe gets a real answer.
"""

from __future__ import annotations

import logging

from django.contrib.auth.decorators import login_not_required
from django.db import DatabaseError, connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

logger = logging.getLogger(__name__)


@login_not_required
@never_cache
@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            answered = cursor.fetchone() == (1,)
    except DatabaseError:
        logger.exception("health check: the database did not answer")
        answered = False
    if not answered:
        return JsonResponse({"status": "unavailable"}, status=503)
    return JsonResponse({"status": "ok"})
