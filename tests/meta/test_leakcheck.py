"""The suite's own guard: an asyncio test that leaks a task must fail."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

_LEAKY = """
import asyncio
import pytest

@pytest.mark.asyncio
async def test_leaks():
    asyncio.get_running_loop().create_task(asyncio.sleep(3600), name="forgotten-sleeper")

@pytest.mark.asyncio
async def test_tidy():
    task = asyncio.get_running_loop().create_task(asyncio.sleep(3600))
    task.cancel()
"""


def test_leakcheck_leaked_task_fails_the_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_leaky=_LEAKY)
    result = pytester.runpytest_subprocess("-p", "tests.leakcheck", "-p", "asyncio")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*leaked 1 asyncio task(s): forgotten-sleeper*"])
