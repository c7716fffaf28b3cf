from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from lens.serving import health
from lens.web.api.root import api
from lens.web.pages import agent_pages as views
from lens.web.pages import approval_pages as approval_views
from lens.web.pages import delivery_pages as delivery_views
from lens.web.pages import kv_pages as kv_views
from lens.web.pages import login_forms as auth_views
from lens.web.pages import memory_pages as memory_views
from lens.web.pages.accounts import account_urlpatterns

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    # First after the probe: agents call the API far more often than people open pages,
    # and URL resolution tries the patterns in order.
    path("api/", api.urls),
    path("", views.agent_list, name="agent-list"),
    path("agents/<str:slug>/", views.agent_lens, name="agent-lens"),
    path("agents/<str:slug>/try/", views.agent_try, name="agent-try"),
    path("agents/<str:slug>/deliveries/", delivery_views.timeline, name="delivery-timeline"),
    path("deliveries/<str:delivery_id>/", delivery_views.delivery_detail, name="delivery-detail"),
    path(
        "deliveries/<str:delivery_id>/prompt.txt",
        delivery_views.delivery_prompt,
        name="delivery-prompt",
    ),
    path(
        "deliveries/<str:delivery_id>/prompt.txt.sha256",
        delivery_views.delivery_prompt_sha256,
        name="delivery-prompt-sha256",
    ),
    path(
        "deliveries/<str:delivery_id>/diff/",
        delivery_views.delivery_diff_page,
        name="delivery-diff",
    ),
    path(
        "deliveries/<str:delivery_id>/diff/download/",
        delivery_views.delivery_diff_download,
        name="delivery-diff-download",
    ),
    path("deliveries/<str:delivery_id>/live/", delivery_views.live_diff_page, name="delivery-live"),
    path(
        "deliveries/<str:delivery_id>/live/download/",
        delivery_views.live_diff_download,
        name="delivery-live-download",
    ),
    path("approvals/", approval_views.queue, name="approvals"),
    path("approvals/bulk/", approval_views.decide_bulk, name="approvals-bulk"),
    path("approvals/impacts/", approval_views.impacts, name="approvals-impacts"),
    path("approvals/undo/", approval_views.undo_bulk, name="approvals-undo-bulk"),
    path("approvals/<str:record_id>/decide/", approval_views.decide_one, name="approvals-decide"),
    path("approvals/<str:record_id>/undo/", approval_views.undo_one, name="approvals-undo"),
    path("memories/", memory_views.memory_list, name="memory-list"),
    path("memories/<str:record_id>/revoke/", approval_views.revoke_one, name="memory-revoke"),
    path("memories/<str:record_id>/reopen/", approval_views.reopen_one, name="memory-reopen"),
    path("memories/<str:record_id>/", memory_views.memory_detail, name="memory-detail"),
    path("kv/", kv_views.key_list, name="kv-list"),
    # Before kv-detail, whose <path:key> would take "key/raw" (never a valid key).
    path("kv/<path:key>/raw/", kv_views.key_raw, name="kv-raw"),
    path("kv/<path:key>/", kv_views.key_detail, name="kv-detail"),
    # Before the auth URLs: the throttled sign-in (lens/serving/throttle.py).
    path("accounts/login/", auth_views.login, name="login"),
    path("accounts/", include(account_urlpatterns())),
    path("admin/", admin.site.urls),
]
