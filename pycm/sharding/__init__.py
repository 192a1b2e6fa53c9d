"""Sharding: several active replicas, each reconciling its share of the keys (issue 42).

- :mod:`pycm.sharding.ring` — the hash ring over the members; each member's share as hash
  spans and as a KEP-5866 ``shardSelector``.
- :mod:`pycm.sharding.claims` — the rules that keep a key on one member at a time, as a pure
  state machine (the members' Leases carry their views and layouts).
- :mod:`pycm.sharding.layout` — where namespace hashes sit on the ring, so that names FNV-1a
  clusters (``team-0`` … ``team-9``) still spread; :mod:`pycm.sharding.layout_writer` — who
  writes the ring's shared layout, and when.

The wire form of shard selectors is :mod:`pycm.api.sharding`. The wiring into ``pycm run``
(the membership Lease, the worker's gate, the informers' selectors) is :mod:`pycm.app.membership`
and :mod:`pycm.app.sharding`.
"""
