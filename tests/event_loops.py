"""Running a coroutine to completion from a test, whatever the worker ran before.

Playwright's sync API (the browser tests) keeps an event loop running in the main thread
of the pytest worker that ran them, and ``asyncio.run`` refuses to start another there;
so coroutines run in a thread of their own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

_T = TypeVar("_T")


def run_async(function: Callable[..., Awaitable[_T]], *args: Any) -> _T:
    """``function(*args)`` awaited in a fresh event loop on a thread of its own."""

    async def main() -> _T:
        return await function(*args)

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, main()).result()
