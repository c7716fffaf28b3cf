"""``/favicon.ico``: browsers ask for it on any page that names no icon of its own (a
download, a JSON answer opened in a tab); it redirects to the product's icon rather than
answering 404, which the browser reports as a console error."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.templatetags.static import static
from django.views.decorators.http import require_GET


@require_GET
def favicon(request: HttpRequest) -> HttpResponse:
    return redirect(static("lens/favicon.svg"), permanent=True)
