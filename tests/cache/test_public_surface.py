from __future__ import annotations

import pycm.cache


def test_cache_public_surface_every_name_importable_once() -> None:
    names = pycm.cache.__all__
    assert len(names) == len(set(names))
    missing = [name for name in names if not hasattr(pycm.cache, name)]
    assert missing == []
    assert "SharedIndexInformer" in names and "FakeListWatch" in names
