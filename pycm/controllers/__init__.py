"""The controllers pycm runs: each registers a descriptor in :func:`pycm.app.registry`-style
registries through its ``DESCRIPTOR``; pycm.app collects them."""
