"""The manager's side of ``informers.watchlist``, in a process of its own so that its peak
memory is the sync's alone: ``python -m bench._watchlist_child KUBECONFIG NAMESPACE MODE``
(MODE ``stream`` or ``paged``) syncs one pod informer with the factory's defaults and prints
``{"seconds": …, "peak_growth": …, "items": …}``: the time from starting the informer to its
cache synced, and how far the process's resident memory rose above what it held just before
(its peak, VmHWM, reset then — Linux's ``clear_refs`` 5 — less the RSS at that moment)."""

from __future__ import annotations

import asyncio
import sys
import time

import orjson

from pycm.cache.factory import SharedInformerFactory
from pycm.kube import Client, load_config
from pycm.kube.resources import PODS
from pycm.trace.bus import Bus


def proc_kib(pid: int | str, field: str) -> int:
    """A ``/proc/PID/status`` figure in KiB (VmRSS, VmHWM)."""
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/{pid}/status")


def reset_peak(pid: int | str) -> int:
    """Reset the process's peak RSS to its current RSS (Linux ≥ 4.0); returns that RSS, KiB."""
    with open(f"/proc/{pid}/clear_refs", "w", encoding="ascii") as refs:
        refs.write("5")
    return proc_kib(pid, "VmRSS")


async def main(kubeconfig: str, namespace: str, mode: str) -> dict[str, float]:
    kube = await Client.connect(await load_config(kubeconfig=kubeconfig, qps=-1))
    async with kube:
        factory = SharedInformerFactory(
            kube, namespace=namespace, bus=Bus(), watch_list=mode == "stream"
        )
        informer = factory.informer_for(PODS)
        base = reset_peak("self")
        start = time.perf_counter()
        factory.start()
        synced = await factory.wait_for_cache_sync(timeout=600)
        took = time.perf_counter() - start
        peak = proc_kib("self", "VmHWM")
        items = len(informer.indexer)
        streamed = informer.reflector.watch_list_fallbacks == 0 and mode == "stream"
        await factory.shutdown(timeout=10)
    if not all(synced.values()):
        raise SystemExit("the informer did not sync")
    if mode == "stream" and not streamed:
        raise SystemExit("the informer fell back to a list")
    return {"seconds": took, "peak_growth": (peak - base) * 1024.0, "items": items}


if __name__ == "__main__":
    print(orjson.dumps(asyncio.run(main(*sys.argv[1:4]))).decode(), flush=True)
