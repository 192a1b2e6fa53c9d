"""pycm's benchmarks: every figure is printed beside a named peer measured in the same run.

Run one with ``python -m bench NAME [--size tiny|full]`` (``all`` runs every one). Each module
``bench/<name>.py`` exposes ``run(size: str) -> list[Figure]``. These machines are shared and noisy,
so figures are medians of repeats and the ratio against the peer is what to trust.
"""
