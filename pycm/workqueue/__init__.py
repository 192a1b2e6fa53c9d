"""Work queues with client-go util/workqueue semantics, traced and measured.

The queues, each adding one capability to the one above (client-go embeds the same way)::

    Queue[T]                  queue.py: dirty set de-duplicates; one worker per item at a time;
     │                        FIFO; add / get / done / shut_down / shut_down_with_drain
     └── DelayingQueue[T]     delaying_queue.py: + add_after(item, delay), a heap and one
          │                   waiting-loop task on the injected clock (async with queue: …)
          └── RateLimitingQueue[T]
               │              rate_limiting_queue.py: + add_rate_limited, forget,
               │              num_requeues, drop (emits queue.drop)
               └── PriorityQueue[T]
                              priority_queue.py: + a priority on every add (highest first,
                              promoted on a higher re-add, kept across requeues);
                              LOW_PRIORITY for initial-list adds and resyncs

The rate limiters they take (rate_limiters.py), composed rather than inherited::

    RateLimiter (protocol: when, forget, num_requeues)
     ├── ItemExponentialFailureRateLimiter   base × 2^n, capped (5 ms … 1000 s)
     ├── ItemFastSlowRateLimiter             fast for n attempts, then slow
     ├── BucketRateLimiter                   overall pycm.util.ratelimit.TokenBucket
     └── MaxOfRateLimiter(*limiters)         default_controller_rate_limiter() =
                                             max(exponential 5 ms→1000 s, bucket 10 qps/100)

What a queue holds right now (inspect.py): :func:`~pycm.workqueue.inspect.inspect_queue` reads
the keys waiting, backing off and processing (and by which worker) through a read-only protocol,
for ``GET /debug/pycm/queues`` and the stuck-worker watcher.

Metrics (metrics.py): :class:`QueueMetrics` registers the ``workqueue_*`` families on a
registry; pass it as ``metrics=`` (:func:`default_queue_metrics` for the process registry).
``workqueue_depth`` has controller-runtime's ``priority`` label ("" on a plain queue).

Exceptions::

    Exception
     └── ShutDown   get() on a queue that is shutting down with nothing left to hand out
"""

from pycm.workqueue.delaying_queue import DelayingQueue
from pycm.workqueue.metrics import QueueMetrics, QueueRecorder, default_queue_metrics
from pycm.workqueue.priority_queue import DEFAULT_PRIORITY, LOW_PRIORITY, PriorityQueue
from pycm.workqueue.queue import Queue, ShutDown
from pycm.workqueue.rate_limiters import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    default_controller_rate_limiter,
)
from pycm.workqueue.rate_limiting_queue import RateLimitingQueue

__all__ = [
    "DEFAULT_PRIORITY",
    "LOW_PRIORITY",
    "BucketRateLimiter",
    "DelayingQueue",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "PriorityQueue",
    "Queue",
    "QueueMetrics",
    "QueueRecorder",
    "RateLimiter",
    "RateLimitingQueue",
    "ShutDown",
    "default_controller_rate_limiter",
    "default_queue_metrics",
]
