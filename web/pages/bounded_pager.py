"""A pager for lists that grow without end (the audit log, a delivery timeline): it
counts at most ``COUNT_CAP`` rows, so a page view costs the same at a million rows as at
ten thousand, and says "10,000+" beyond that.

Django's ``Paginator`` asks ``COUNT(*)`` of the whole list to number its pages; on a
team's million audit events that count was most of the page's time. Here the count is
``SELECT COUNT(*) FROM (SELECT … LIMIT cap + 1)``, and whether a next page exists comes
from reading one row more than the page, so the links work past the counted rows too.
It answers to what ``_pager.html`` reads of a Django page (``number``,
``has_previous``, ``has_next``, their page numbers, ``paginator.count`` and
``paginator.num_pages``) and adds ``paginator.exact``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import ceil
from typing import Any, Generic, TypeVar

from django.db.models import Model, QuerySet

# Ten thousand index entries are counted in a few milliseconds on either database.
COUNT_CAP = 10_000

M = TypeVar("M", bound=Model)


def bounded_count(queryset: QuerySet[Any, Any], cap: int) -> tuple[int, bool]:
    """How many rows ``queryset`` has, counting no more than ``cap + 1`` of them: the
    count and whether it is exact (when not, there are more than ``cap``; ``cap`` is
    returned). One query; ordering and joined columns are dropped, the filters kept."""
    counted = queryset.order_by().values("pk")[: cap + 1].count()
    return (counted, True) if counted <= cap else (cap, False)


@dataclass(frozen=True)
class Counted:
    """The list's size as the pager shows it: ``count`` rows, ``exact`` or more."""

    count: int
    exact: bool
    per_page: int

    @property
    def num_pages(self) -> int:
        """Pages of the counted rows (at least one); more follow when not ``exact``."""
        return max(1, ceil(self.count / self.per_page))

    @property
    def shown(self) -> str:
        """``12,345`` or, past the cap, ``10,000+``."""
        return f"{self.count:,}" if self.exact else f"{self.count:,}+"


@dataclass(frozen=True)
class BoundedPage(Generic[M]):
    """One page: its rows, and ``fetched``, the rows read (one more than the page when a
    next page exists: the timeline compares its last row with that one)."""

    number: int
    fetched: list[M]
    per_page: int
    paginator: Counted
    object_list: list[M] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "object_list", self.fetched[: self.per_page])

    def has_previous(self) -> bool:
        return self.number > 1

    def has_next(self) -> bool:
        return len(self.fetched) > self.per_page

    def previous_page_number(self) -> int:
        return self.number - 1

    def next_page_number(self) -> int:
        return self.number + 1


def bounded_page(queryset: QuerySet[M], number: Any, per_page: int) -> BoundedPage[M]:
    """Page ``number`` of the ordered ``queryset`` (its text as a query string gives it;
    anything but a whole number from 1 is page 1), in two queries: the bounded count and
    the page's rows with one more. A number past the end falls back to the last page,
    which takes an exact count: only a hand-made address asks for one."""
    counted, exact = bounded_count(queryset, COUNT_CAP)
    wanted = _page_number(number)
    if exact:
        wanted = min(wanted, max(1, ceil(counted / per_page)))
    fetched = _rows(queryset, wanted, per_page)
    if not fetched and wanted > 1:
        counted, exact = queryset.order_by().count(), True
        wanted = max(1, ceil(counted / per_page))
        fetched = _rows(queryset, wanted, per_page)
    return BoundedPage(wanted, fetched, per_page, Counted(counted, exact, per_page))


def _page_number(number: Any) -> int:
    try:
        wanted = int(number)
    except (TypeError, ValueError):
        return 1
    return max(1, wanted)


def _rows(queryset: QuerySet[M], number: int, per_page: int) -> list[M]:
    bottom = (number - 1) * per_page
    return list(queryset[bottom : bottom + per_page + 1])
