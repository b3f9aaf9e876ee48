"""The cache of answers, devices and limits: what cannot be written is said, with its cause."""

import warnings

from study.storage_faults import fill, full_disk

from autoplace.host import Cache, CacheWarning


def test_a_cache_on_a_full_disk_is_said_with_its_cause(tmp_path):
    disk = tmp_path / "disk"
    with full_disk(disk):
        cache = Cache(disk / "cache")
        fill(disk)
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            assert not cache.write(cache.answer_path("slot"), {"answer": {"x": 1}})
    (line,) = [str(w.message) for w in said if w.category is CacheWarning]
    assert "is full" in line and "going on without caching" in line and "\n" not in line
