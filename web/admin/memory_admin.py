"""Read-only admin views of memory: records are immutable, decisions happen in the lens."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from django.contrib import admin
from django.contrib.admin.views.main import ChangeList
from django.db import models
from django.http import HttpRequest

from memory.models import MemoryEvent, MemoryRecord, MigratedPromotion, Promotion

if TYPE_CHECKING:
    from django.contrib.admin.filters import _ListFilterChoices

_M = TypeVar("_M", bound=models.Model)


class ReadOnlyAdmin(admin.ModelAdmin[_M]):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Records, promotions and their events are the history deliveries, causes and
        # compositions as of a moment are read from: nothing removes them here.
        return False


class PromotionInline(admin.StackedInline[Promotion, MemoryRecord]):
    model = Promotion
    fk_name = "record"
    can_delete = False
    readonly_fields = [f.name for f in Promotion._meta.fields]

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class EventInline(admin.TabularInline[MemoryEvent, MemoryRecord]):
    model = MemoryEvent
    can_delete = False
    readonly_fields = ("kind", "actor", "detail", "at")
    fields = readonly_fields
    extra = 0

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class MigratedPromotionInline(admin.TabularInline[MigratedPromotion, MemoryRecord]):
    """The promotion rows migrations replaced (SPEC §18.3), oldest first: history only."""

    model = MigratedPromotion
    fk_name = "record"
    can_delete = False
    verbose_name = "migrated promotion"
    readonly_fields = (
        "section",
        "key",
        "previous_status",
        "reason",
        "tier",
        "spec_key",
        "spec_version",
        "promoted_at",
        "migrated_at",
        "migrated_by",
        "new_section",
        "new_key",
    )
    fields = readonly_fields
    extra = 0

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(MemoryRecord)
class MemoryRecordAdmin(ReadOnlyAdmin[MemoryRecord]):
    list_display = ["id", "agent", "kind", "label", "created_at"]
    list_filter = ["kind", "agent__team"]
    list_select_related = ["agent"]
    search_fields = ["id", "label", "agent__slug"]
    inlines = [PromotionInline, MigratedPromotionInline, EventInline]


class ReasonFilter(admin.AllValuesFieldListFilter):
    """The reasons stored, with the blank one (a promotion nothing blocked) in words: the
    admin would show it as a link without text."""

    def choices(self, changelist: ChangeList) -> Iterator[_ListFilterChoices]:
        for choice in super().choices(changelist):
            if not str(choice["display"]).strip():
                choice["display"] = "no reason"
            yield choice


@admin.register(Promotion)
class PromotionAdmin(ReadOnlyAdmin[Promotion]):
    list_display = ["record", "agent", "section", "key", "status", "reason", "tier", "promoted_at"]
    list_filter = ["status", ("reason", ReasonFilter), "tier"]
    list_select_related = ["agent", "record"]


@admin.register(MigratedPromotion)
class MigratedPromotionAdmin(ReadOnlyAdmin[MigratedPromotion]):
    """Every row a migration replaced: where a memory was, and where it went."""

    list_display = [
        "record",
        "agent",
        "section",
        "key",
        "previous_status",
        "spec_version",
        "new_section",
        "new_key",
        "migrated_at",
        "migrated_by",
    ]
    list_filter = ["previous_status", "agent__team"]
    list_select_related = ["agent", "record"]
    search_fields = ["record__id", "agent__slug"]
