from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from lens import views
from lens.api import api

urlpatterns = [
    path("", views.agent_list, name="agent-list"),
    path("agents/<str:slug>/", views.agent_lens, name="agent-lens"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("admin/", admin.site.urls),
    path("api/", api.urls),
]
