"""client-go's tools/cache for asyncio: reflector, FIFO, indexer, listers, shared informers."""
