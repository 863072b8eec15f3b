"""The shutdown drain through the asyncio driver's ordinary loop: the core drops the
requests it no longer wants (a call that never answers), awaits a refresh in flight
and hands out its pair, then ``Stopped`` last. The service is an httpx mock transport
(no socket): the refresh answers late, the call never."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx
import onair
import onair.aio
from conftest import CLIENT_ID

SCOPE = "fans.read chat.send"


def saved_pair(now_ms: int) -> str:
    """A pair whose access token is due for a refresh at once (5 minutes left)."""
    return json.dumps(
        {
            "format": "onair.tokens", "version": 1, "generation": 1,
            "access_token": "A1", "access_expires_at_ms": now_ms + 300_000, "issued_at_ms": now_ms - 3_300_000,
            "refresh_token": "R1", "refresh_expires_at_ms": now_ms + 86_400_000, "scope": SCOPE,
        }
    )


def test_a_shutdown_awaits_the_refresh_in_flight_drops_a_call_and_stops_last() -> None:
    async def main() -> tuple[list[Any], float, onair.MemoryStore, int]:
        refresh_sent, never = asyncio.Event(), asyncio.Event()
        fans_sent = asyncio.Event()
        refreshes = 0

        async def service(request: httpx.Request) -> httpx.Response:
            nonlocal refreshes
            if request.url.path == "/v1/oauth/token":
                refreshes += 1
                refresh_sent.set()
                await asyncio.sleep(0.4)  # answered after the shutdown
                pair = {"access_token": "A2", "token_type": "Bearer", "expires_in": 3600,
                        "refresh_token": "R2", "scope": SCOPE}
                return httpx.Response(200, json=pair)
            fans_sent.set()
            await never.wait()  # the call never answers
            return httpx.Response(500)

        tokens = onair.MemoryStore(saved_pair(onair.now_ms()))
        client = httpx.AsyncClient(transport=httpx.MockTransport(service))
        config = onair.Config("http://onair.test", CLIENT_ID, "s", events=False, check_credentials=False)
        driver = onair.aio.Driver(config, tokens=tokens, client=client, seed=1)
        seen: list[Any] = []

        async def iterate() -> None:
            async with driver:
                async for action in driver:
                    seen.append(action)

        task = asyncio.ensure_future(iterate())
        while driver._bot is None:
            await asyncio.sleep(0.01)
        driver.fetch_fans()
        await asyncio.wait_for(asyncio.gather(refresh_sent.wait(), fans_sent.wait()), 5)
        started = time.monotonic()
        driver.shutdown()
        await asyncio.wait_for(task, 10)
        await client.aclose()
        return seen, time.monotonic() - started, tokens, refreshes

    seen, took, tokens, refreshes = asyncio.run(main())
    kinds = [type(a).__name__ for a in seen]
    # The call that never answered is dropped and answered, not waited for.
    done = [a for a in seen if isinstance(a, onair.Done)]
    assert len(done) == 1 and isinstance(done[0].result, onair.Failed), kinds
    assert done[0].result.failure == "cancelled"
    # The refresh was awaited: its pair handed out (and saved) before the stop, last.
    assert kinds[-2:] == ["PersistTokens", "Stopped"], kinds
    assert isinstance(seen[-1], onair.Stopped) and seen[-1].code == "shut_down"
    assert refreshes == 1
    saved = tokens.load()
    assert saved is not None and json.loads(saved)["access_token"] == "A2"
    assert 0.2 < took < 5, took


def test_a_shutdown_waits_no_longer_than_the_configured_grace() -> None:
    """``shutdown_grace_ms``: a refresh slower than the grace is dropped, not awaited;
    the bot stops with the pair it had."""

    async def main() -> tuple[list[Any], float, onair.MemoryStore]:
        refresh_sent = asyncio.Event()

        async def service(request: httpx.Request) -> httpx.Response:
            refresh_sent.set()
            await asyncio.sleep(5)  # longer than the grace
            return httpx.Response(500)

        tokens = onair.MemoryStore(saved_pair(onair.now_ms()))
        client = httpx.AsyncClient(transport=httpx.MockTransport(service))
        config = onair.Config(
            "http://onair.test", CLIENT_ID, "s", events=False, check_credentials=False, shutdown_grace_ms=200
        )
        driver = onair.aio.Driver(config, tokens=tokens, client=client, seed=1)
        seen: list[Any] = []

        async def iterate() -> None:
            async with driver:
                async for action in driver:
                    seen.append(action)

        task = asyncio.ensure_future(iterate())
        await asyncio.wait_for(refresh_sent.wait(), 5)
        started = time.monotonic()
        driver.shutdown()
        await asyncio.wait_for(task, 10)
        await client.aclose()
        return seen, time.monotonic() - started, tokens

    seen, took, tokens = asyncio.run(main())
    assert isinstance(seen[-1], onair.Stopped) and seen[-1].code == "shut_down"
    assert not any(isinstance(a, onair.PersistTokens) for a in seen)
    saved = tokens.load()
    assert saved is not None and json.loads(saved)["access_token"] == "A1"
    assert 0.15 < took < 2, took
