from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from lens import views
from lens.api import api
from memory import approval_views
from memory import views as memory_views

urlpatterns = [
    path("", views.agent_list, name="agent-list"),
    path("agents/<str:slug>/", views.agent_lens, name="agent-lens"),
    path("approvals/", approval_views.queue, name="approvals"),
    path("approvals/bulk/", approval_views.decide_bulk, name="approvals-bulk"),
    path("approvals/<str:record_id>/decide/", approval_views.decide_one, name="approvals-decide"),
    path("memories/", memory_views.memory_list, name="memory-list"),
    path("memories/<str:record_id>/revoke/", approval_views.revoke_one, name="memory-revoke"),
    path("memories/<str:record_id>/", memory_views.memory_detail, name="memory-detail"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("admin/", admin.site.urls),
    path("api/", api.urls),
]
