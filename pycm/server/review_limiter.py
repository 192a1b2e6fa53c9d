"""How many TokenReviews unknown tokens may cost: token buckets per client and in all.

The review cache (:mod:`pycm.server.tokenreview`) answers a token seen in the last ten seconds,
but every *distinct* token is a cache miss, and so a TokenReview sent to the API server: a
client inventing bearer tokens would turn each of its requests into an API call. kube's
delegating authenticator has no bound here (its cache and singleflight only fold repeats);
pycm bounds the reviews a client can cause:

- per client: ``client_qps`` a second, ``client_burst`` at once. A client is its IPv4 address,
  or its IPv6 /64 (one host commonly holds a whole /64, so per-address buckets would be free
  to multiply);
- in all: ``total_qps`` / ``total_burst``, because buckets are kept for at most
  ``max_clients`` clients (least recently seen dropped) and many addresses would otherwise
  each get a fresh burst.

A review refused here is not sent; the request is 401 (its credential could not be checked),
as when the review fails. Cached answers cost nothing and are never refused, so a scraper
whose token was reviewed keeps working while another client floods.
"""

from __future__ import annotations

import ipaddress
from collections import OrderedDict

from pycm.util.clock import REAL_CLOCK, Clock
from pycm.util.ratelimit import TokenBucket

__all__ = [
    "DEFAULT_CLIENT_BURST",
    "DEFAULT_CLIENT_QPS",
    "DEFAULT_TOTAL_BURST",
    "DEFAULT_TOTAL_QPS",
    "ReviewRateLimiter",
    "client_key",
]

# A scraper with one token needs one review per cache TTL (10 s); a person trying a few tokens
# a handful. Unknown tokens from one client cost the API server at most 2 reviews a second.
DEFAULT_CLIENT_QPS, DEFAULT_CLIENT_BURST = 2.0, 5
DEFAULT_TOTAL_QPS, DEFAULT_TOTAL_BURST = 10.0, 20


def client_key(address: str) -> str:
    """The client a limit applies to: the IPv4 address, the IPv6 /64, else the text itself."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


class ReviewRateLimiter:
    """Invariant: ``len(_clients) <= max_clients``; the most recently seen client is last."""

    def __init__(
        self,
        *,
        client_qps: float = DEFAULT_CLIENT_QPS,
        client_burst: int = DEFAULT_CLIENT_BURST,
        total_qps: float = DEFAULT_TOTAL_QPS,
        total_burst: int = DEFAULT_TOTAL_BURST,
        max_clients: int = 4096,
        clock: Clock = REAL_CLOCK,
    ) -> None:
        self._client_qps = client_qps
        self._client_burst = client_burst
        self._max_clients = max_clients
        self._clock = clock
        self._total = TokenBucket(total_qps, total_burst, clock=clock)
        self._clients: OrderedDict[str, TokenBucket] = OrderedDict()
        self.refused = 0

    def try_accept(self, client: str) -> bool:
        """Take a review for ``client`` (an address) if both its bucket and the total allow."""
        key = client_key(client)
        bucket = self._clients.get(key)
        if bucket is None:
            bucket = TokenBucket(self._client_qps, self._client_burst, clock=self._clock)
            self._clients[key] = bucket
            while len(self._clients) > self._max_clients:
                self._clients.popitem(last=False)
        else:
            self._clients.move_to_end(key)
        # The total is looked at first so a refusal there does not spend the client's token.
        if self._total.tokens() < 1 or not bucket.try_accept():
            self.refused += 1
            return False
        self._total.try_accept()
        return True
