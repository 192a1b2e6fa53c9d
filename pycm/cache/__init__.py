"""client-go's tools/cache for asyncio: reflector, FIFO, indexer, listers, shared informers.

The pipeline, one task each::

    ListerWatcher ──list/watch──▶ Reflector ──deltas──▶ RealFIFO ──▶ SharedIndexInformer
                                                                     ├─▶ Indexer (Lister reads)
                                                                     └─▶ Registration ×N ──▶ handler

- :mod:`pycm.cache.listwatch` — the :class:`ListerWatcher` protocol, :class:`ClientListWatch`
  over ``pycm.kube.Client``, and the :class:`FakeListWatch` test double.
- :mod:`pycm.cache.reflector` — list, watch, relist, back off, resync.
- :mod:`pycm.cache.fifo` — the ordered FIFO (client-go RealFIFO) with Replace tombstones.
- :mod:`pycm.cache.indexer`, :mod:`pycm.cache.listers`, :mod:`pycm.cache.store` — the cache.
- :mod:`pycm.cache.shared_informer`, :mod:`pycm.cache.processor` — delivery to handlers.
- :mod:`pycm.cache.factory` — informer factories (full objects and metadata-only).
- :mod:`pycm.cache.transform`, :mod:`pycm.cache.mutation` — memory and the no-mutation rule
  (the collector's tuning is :mod:`pycm.util.gc_tuning`, process-wide).

Exceptions::

    PycmError (pycm.errors) ── KubeError ── ApiError
                                              └── StatusError   a watch ERROR event (or a
                                                  scripted failure) with code and reason
    Exception
     ├── ValueError
     │    ├── KeyError_         an object without metadata.name has no key
     │    └── IndexerError      an unknown or duplicate index name
     └── AssertionError
          └── CacheMutationError  a cached object was mutated in place (mutation detector)

Test doubles shipped here: :class:`FakeListWatch` (with :class:`WatchStream`).
"""

from pycm.cache.factory import MetadataInformerFactory, SharedInformerFactory, resource_name
from pycm.cache.fifo import Delta, DeltaType, RealFIFO
from pycm.cache.indexer import (
    CONTROLLER_UID_INDEX,
    NAMESPACE_INDEX,
    Indexer,
    IndexerError,
    IndexFunc,
)
from pycm.cache.listers import Lister
from pycm.cache.listwatch import (
    ClientListWatch,
    FakeListWatch,
    ListerWatcher,
    ListPage,
    StatusError,
    WatchStream,
)
from pycm.cache.mutation import CacheMutationError, MutationDetector
from pycm.cache.processor import HandlerFuncs, Registration, ResourceEventHandler
from pycm.cache.reflector import Reflector
from pycm.cache.shared_informer import SharedIndexInformer, wait_for_cache_sync
from pycm.cache.store import DeletedFinalStateUnknown, KeyError_, meta_namespace_key
from pycm.cache.transform import SubtreeInterner, chain, drop_managed_fields

__all__ = [
    "CONTROLLER_UID_INDEX",
    "NAMESPACE_INDEX",
    "CacheMutationError",
    "ClientListWatch",
    "DeletedFinalStateUnknown",
    "Delta",
    "DeltaType",
    "FakeListWatch",
    "HandlerFuncs",
    "IndexFunc",
    "Indexer",
    "IndexerError",
    "KeyError_",
    "ListPage",
    "Lister",
    "ListerWatcher",
    "MetadataInformerFactory",
    "MutationDetector",
    "RealFIFO",
    "Reflector",
    "Registration",
    "ResourceEventHandler",
    "SharedIndexInformer",
    "SharedInformerFactory",
    "StatusError",
    "SubtreeInterner",
    "WatchStream",
    "chain",
    "drop_managed_fields",
    "meta_namespace_key",
    "resource_name",
    "wait_for_cache_sync",
]
