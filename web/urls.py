from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from lens.serving import health
from web.api.root import api
from web.pages import (
    agent_pages,
    approval_pages,
    audit_pages,
    delivery_pages,
    drop_pages,
    erasure_pages,
    favicon,
    kv_pages,
    login_forms,
    memory_pages,
    migration_pages,
    proposal_pages,
    revision_pages,
    routing_pages,
    stability_pages,
    token_pages,
    webhook_pages,
    what_if_pages,
)
from web.pages.accounts import account_urlpatterns

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("favicon.ico", favicon.favicon, name="favicon"),
    # First after the probe: agents call the API far more often than people open pages,
    # and URL resolution tries the patterns in order.
    path("api/", api.urls),
    path("", agent_pages.agent_list, name="agent-list"),
    path("agents/<str:slug>/", agent_pages.agent_lens, name="agent-lens"),
    path("agents/<str:slug>/try/", agent_pages.agent_try, name="agent-try"),
    path("agents/<str:slug>/drops/<str:reason>/", drop_pages.drop_group, name="agent-drops"),
    path("agents/<str:slug>/deliveries/", delivery_pages.timeline, name="delivery-timeline"),
    path("agents/<str:slug>/revisions/", revision_pages.revision_list, name="agent-revisions"),
    path("agents/<str:slug>/stability/", stability_pages.stability_page, name="agent-stability"),
    path("agents/<str:slug>/routing/", routing_pages.routing_page, name="agent-routing"),
    path(
        "agents/<str:slug>/stability/what-if/",
        what_if_pages.order_what_if,
        name="agent-stability-what-if",
    ),
    path(
        "agents/<str:slug>/stability/apply/",
        stability_pages.stability_apply,
        name="agent-stability-apply",
    ),
    path("agents/<str:slug>/migration/", migration_pages.migration_page, name="agent-migration"),
    path(
        "agents/<str:slug>/migration/what-if/",
        what_if_pages.migration_what_if,
        name="agent-migration-what-if",
    ),
    path(
        "agents/<str:slug>/migration/apply/",
        migration_pages.migration_apply,
        name="agent-migration-apply",
    ),
    path(
        "agents/<str:slug>/revisions/<int:number>/",
        revision_pages.revision_detail,
        name="agent-revision",
    ),
    path(
        "agents/<str:slug>/revisions/<int:number>/what-if/",
        what_if_pages.revision_what_if,
        name="agent-revision-what-if",
    ),
    path(
        "agents/<str:slug>/revisions/<int:number>/restore/",
        revision_pages.revision_restore,
        name="agent-revision-restore",
    ),
    path(
        "agents/<str:slug>/revisions/<int:number>/<str:part>.diff",
        revision_pages.revision_diff_download,
        name="agent-revision-diff",
    ),
    path("deliveries/<str:delivery_id>/", delivery_pages.delivery_detail, name="delivery-detail"),
    path(
        "deliveries/<str:delivery_id>/prompt.txt",
        delivery_pages.delivery_prompt,
        name="delivery-prompt",
    ),
    path(
        "deliveries/<str:delivery_id>/prompt.txt.sha256",
        delivery_pages.delivery_prompt_sha256,
        name="delivery-prompt-sha256",
    ),
    path(
        "deliveries/<str:delivery_id>/diff/",
        delivery_pages.delivery_diff_page,
        name="delivery-diff",
    ),
    path(
        "deliveries/<str:delivery_id>/diff/download/",
        delivery_pages.delivery_diff_download,
        name="delivery-diff-download",
    ),
    path("deliveries/<str:delivery_id>/live/", delivery_pages.live_diff_page, name="delivery-live"),
    path(
        "deliveries/<str:delivery_id>/live/download/",
        delivery_pages.live_diff_download,
        name="delivery-live-download",
    ),
    path("approvals/", approval_pages.queue, name="approvals"),
    path("approvals/bulk/", approval_pages.decide_bulk, name="approvals-bulk"),
    path("approvals/impacts/", approval_pages.impacts, name="approvals-impacts"),
    path("approvals/undo/", approval_pages.undo_bulk, name="approvals-undo-bulk"),
    path("approvals/<str:record_id>/decide/", approval_pages.decide_one, name="approvals-decide"),
    path("approvals/<str:record_id>/undo/", approval_pages.undo_one, name="approvals-undo"),
    path(
        "approvals/<str:record_id>/what-if/",
        what_if_pages.approval_what_if,
        name="approvals-what-if",
    ),
    path("proposals/<int:proposal_id>/", proposal_pages.proposal_detail, name="proposal"),
    path(
        "proposals/<int:proposal_id>/what-if/",
        what_if_pages.proposal_what_if,
        name="proposal-what-if",
    ),
    path(
        "proposals/<int:proposal_id>/publish/",
        proposal_pages.proposal_publish,
        name="proposal-publish",
    ),
    path(
        "proposals/<int:proposal_id>/reject/",
        proposal_pages.proposal_reject,
        name="proposal-reject",
    ),
    path(
        "proposals/<int:proposal_id>/withdraw/",
        proposal_pages.proposal_withdraw,
        name="proposal-withdraw",
    ),
    path(
        "proposals/<int:proposal_id>/<str:part>.diff",
        proposal_pages.proposal_diff_download,
        name="proposal-diff",
    ),
    path("memories/", memory_pages.memory_list, name="memory-list"),
    path("memories/<str:record_id>/revoke/", approval_pages.revoke_one, name="memory-revoke"),
    path("memories/<str:record_id>/reopen/", approval_pages.reopen_one, name="memory-reopen"),
    path("memories/<str:record_id>/erase/", erasure_pages.erase_one, name="memory-erase"),
    path(
        "memories/<str:record_id>/validity/",
        memory_pages.memory_validity,
        name="memory-validity",
    ),
    path(
        "memories/<str:record_id>/routing-case/",
        routing_pages.add_routing_case,
        name="memory-routing-case",
    ),
    path("memories/<str:record_id>/", memory_pages.memory_detail, name="memory-detail"),
    path("audit/", audit_pages.audit_log, name="audit-log"),
    path("settings/webhooks/", webhook_pages.webhook_list, name="webhook-list"),
    path("settings/webhooks/<int:pk>/", webhook_pages.webhook_detail, name="webhook-detail"),
    path("settings/webhooks/<int:pk>/rotate/", webhook_pages.webhook_rotate, name="webhook-rotate"),
    path("settings/webhooks/<int:pk>/delete/", webhook_pages.webhook_delete, name="webhook-delete"),
    path("settings/webhooks/<int:pk>/resend/", webhook_pages.webhook_resend, name="webhook-resend"),
    path("settings/tokens/", token_pages.my_tokens, name="my-tokens"),
    path("settings/tokens/<int:pk>/revoke/", token_pages.my_token_revoke, name="my-token-revoke"),
    path("kv/", kv_pages.key_list, name="kv-list"),
    # Before kv-detail, whose <path:key> would take "key/raw" (never a valid key).
    path("kv/<path:key>/raw/", kv_pages.key_raw, name="kv-raw"),
    path("kv/<path:key>/", kv_pages.key_detail, name="kv-detail"),
    # Before the auth URLs: the throttled sign-in (lens/serving/throttle.py).
    path("accounts/login/", login_forms.login, name="login"),
    path("accounts/", include(account_urlpatterns())),
    path("admin/", admin.site.urls),
]
