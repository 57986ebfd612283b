"""The numpy kernels kept across processes (model/kernel_cache.py): a second process takes them from the cache
and finds what the first one found; kernels from the cache compute what freshly traced ones do; a file that
does not fit is ignored and rewritten."""
import json
import marshal
import os
import subprocess

import numpy as np
import pytest

from isrcheck.checker.exhaustive import bfs
from isrcheck.model import backends, kernel_cache, native
from isrcheck.specs import SPECS

SPEC = ["--spec", "tla-kip101", "--replicas", "2"]


def check(cache):
    run = subprocess.run(["isrcheck", "check", *SPEC, "--invariant", "type-ok", "--invariant", "leader-in-isr",
                          "--kernels", "numpy", "--format", "json", "--no-progress", "--coverage"],
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "ISRCHECK_CACHE_DIR": str(cache)})
    assert run.returncode == 1, run.stderr       # leader-in-isr is violated (tla-kip101 at 2 replicas), type-ok holds
    found = json.loads(run.stdout)
    assert found["verdicts"] == {"type-ok": "holds", "leader-in-isr": "violated"}
    return found


def test_a_second_process_takes_the_kernels_and_finds_the_same(tmp_path):
    first = check(tmp_path)
    [kept] = (tmp_path / "kernels").glob("batch-*.marshal")
    written = kept.stat().st_mtime_ns
    second = check(tmp_path)
    assert kept.stat().st_mtime_ns == written           # read, not rebuilt
    for key in ("distinct_states", "transitions", "depth", "verdicts", "coverage", "found"):
        assert second[key] == first[key], key
    assert first["distinct_states"] == 9045


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """Batch backends of tla-kip101 (2 replicas) built as in a new process, the cache in tmp_path: (make one,
    how many times the kernels were traced)."""
    monkeypatch.setattr(native, "cache_dir", lambda: str(tmp_path))
    traced = []
    real = backends.Batch._compile
    monkeypatch.setattr(backends.Batch, "_compile", lambda self: traced.append(1) or real(self))

    def make():
        b = backends.Batch(SPECS["tla-kip101"](replicas=2))
        b.guards(np.zeros((b.spec.layout.width, 1), dtype=np.int8))
        return b
    return make, traced


def reachable(spec):
    """Rows of states the search reaches (column-major), a few thousand."""
    seen = []
    bfs.search(spec, ["type-ok"], workers=1, kernels="numpy", on_states=seen.append)
    return np.concatenate(seen, axis=1)


def test_kernels_from_the_cache_compute_what_traced_ones_do(cache):
    make, traced = cache
    fresh = make()
    cached = make()
    assert traced == [1]
    rows = reachable(fresh.spec)
    assert rows.shape[1] == 9045
    g_fresh, g_cached = fresh.guards(rows), cached.guards(rows)
    for inst in fresh.spec.actions:
        assert (g_fresh[inst.id] == g_cached[inst.id]).all(), inst.label
        enabled = np.flatnonzero(g_fresh[inst.id])
        a, b = fresh.update(inst, rows, enabled), cached.update(inst, rows, enabled)
        assert list(a._written) == list(b._written), inst.label
        for c in a._written:
            assert np.array_equal(np.broadcast_to(a._written[c], enabled.shape),
                                  np.broadcast_to(b._written[c], enabled.shape)), (inst.label, c)
            assert np.array_equal(a.old[c], b.old[c])
    for inv in fresh.spec.invariants.values():
        assert (fresh.holds(inv, rows) == cached.holds(inv, rows)).all(), inv.name
    assert not cached.holds(fresh.spec.invariants["leader-in-isr"], rows).all()     # a check that can fail


@pytest.mark.parametrize("corrupt", [
    lambda data, key: data[:len(data) // 2],
    lambda data, key: data[:-1] + bytes([data[-1] ^ 1]),
    lambda data, key: b"\x00" * 40,
    lambda data, key: b"",
    lambda data, key: _sign(key, marshal.dumps((0, [], {}))),
    lambda data, key: _sign(key, _changed(data, lambda g, u, k: (g, u[:-1], k))),
    lambda data, key: _sign(key, _changed(data, lambda g, u, k: (g, u, {}))),
    lambda data, key: _sign(key, _changed(data, lambda g, u, k: (g, [(("0",), c) for _, c in u], k))),
    lambda data, key: _sign(key, _changed(data, lambda g, u, k: (g, [((999,), c) for _, c in u], k))),
    lambda data, key: _sign(key, b"\xff not marshal"),
    lambda data, key: _sign("0" * 64, data[kernel_cache.CHECK:]),
], ids=["truncated", "flipped", "zeros", "empty", "not-kernels", "dropped", "no-invariants", "columns",
        "column-out-of-range", "garbage", "other-key"])
def test_a_file_that_does_not_fit_is_ignored_and_rewritten(cache, tmp_path, corrupt):
    make, traced = cache
    make()
    [kept] = tmp_path.glob("batch-*.marshal")
    key = kept.name[len("batch-"):-len(".marshal")]
    kept.write_bytes(corrupt(kept.read_bytes(), key))
    make()
    assert traced == [1, 1]                   # traced again, not trusted
    make()
    assert traced == [1, 1]                   # the file was rewritten


def _changed(data, change):
    return marshal.dumps(change(*marshal.loads(data[kernel_cache.CHECK:])))


def _sign(key, payload):
    return kernel_cache._check(key, payload) + payload


def test_a_path_that_is_no_file_is_ignored(cache, tmp_path):
    make, traced = cache
    make()
    [kept] = tmp_path.glob("batch-*.marshal")
    kept.unlink()
    os.mkfifo(kept)                           # opening it must not wait for a writer
    make()
    assert len(traced) == 2
    kept.unlink()
    kept.mkdir()
    make()
    make()
    assert len(traced) == 4                   # nothing can be written there: traced every time


def test_a_local_class_is_never_kept():
    class Local(SPECS["tla-kip101"]):
        pass

    assert kernel_cache.key(Local(replicas=2)) is None
