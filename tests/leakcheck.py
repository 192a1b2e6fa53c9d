"""A pytest plugin (``-p tests.leakcheck``): an asyncio test that leaks a task fails.

pytest-asyncio's runner silently cancels whatever is left when a test's loop closes, which would
hide a component that forgot to stop a task. This fixture is put first on every asyncio test, so
it is set up first and torn down last, after every other fixture has stopped what it owns; any
task still pending then was leaked by the test or by the code under test.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

_FIXTURE = "_fail_on_leaked_tasks"


@pytest_asyncio.fixture
async def _fail_on_leaked_tasks() -> AsyncIterator[None]:
    before = set(asyncio.all_tasks())
    yield
    # Let tasks that were cancelled or finished during teardown run their last step.
    for _ in range(3):
        await asyncio.sleep(0)
    me = asyncio.current_task()
    leaked = [t for t in asyncio.all_tasks() - before if t is not me and not t.done()]
    if leaked:
        names = ", ".join(sorted(t.get_name() for t in leaked))
        for task in leaked:
            task.cancel()
        await asyncio.gather(*leaked, return_exceptions=True)
        pytest.fail(f"the test leaked {len(leaked)} asyncio task(s): {names}", pytrace=False)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        is_async = item.get_closest_marker("asyncio") is not None
        if is_async and isinstance(item, pytest.Function) and _FIXTURE not in item.fixturenames:
            item.fixturenames.insert(0, _FIXTURE)
