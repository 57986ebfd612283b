"""Snapshots of the exhaustive search at level boundaries, to resume it after a crash or a stop.

A checkpoint directory holds ``snapshot.json`` (the manifest: what was searched,
which isrcheck, the counters, a SHA-256 per array) and the snapshot it names, a
folder of ``.npy`` arrays. A new snapshot is written to a fresh folder, flushed,
and only then named by a new manifest (written to a temp file and renamed over
the old one): a crash at any moment leaves the previous snapshot usable. Older
folders are removed after the switch.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
import uuid

import numpy as np

from isrcheck.checker import __version__

MANIFEST = "snapshot.json"


class CheckpointError(ValueError):
    """A checkpoint that cannot be resumed here (one line, for exit code 2)."""


def identity(spec, invariants, symmetry):
    """What a snapshot must agree on to be resumed: tool version, spec, bounds, invariants, the model's shape, and
    the fingerprints' multipliers (the visited set it keeps is theirs)."""
    shape = [[a.label for a in spec.actions], list(spec.layout.fields),
             spec.layout.lo.tolist(), spec.layout.hi.tolist()]
    model = hashlib.sha256(json.dumps(shape).encode()).hexdigest()[:16]
    from isrcheck.checker.fingerprint import SCHEME
    return {"version": __version__, "spec": spec.name, "bounds": dict(spec.bounds),
            "invariants": list(invariants), "symmetry": bool(symmetry), "model": model, "fingerprints": SCHEME}


def _digest(a):
    return hashlib.sha256(np.ascontiguousarray(a).view(np.uint8)).hexdigest()


def _fsync_dir(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write(directory, ident, arrays, counters):
    """Write a snapshot of ``arrays`` (name -> ndarray) and ``counters`` (JSON values); returns its size in bytes."""
    os.makedirs(directory, exist_ok=True)
    name = f"depth-{counters['depth']}-{uuid.uuid4().hex[:8]}"
    folder = os.path.join(directory, name)
    os.makedirs(folder)
    files, size = {}, 0
    for key, a in arrays.items():
        path = os.path.join(folder, f"{key}.npy")
        with open(path, "wb") as fh:
            np.save(fh, a, allow_pickle=False)
            fh.flush()
            os.fsync(fh.fileno())
        files[key] = _digest(a)
        size += os.path.getsize(path)
    _fsync_dir(folder)
    manifest = {**ident, "snapshot": name, "written": time.time(), "counters": counters, "sha256": files}
    tmp = os.path.join(directory, f".{MANIFEST}.tmp-{os.getpid()}")
    with open(tmp, "w") as fh:
        json.dump(manifest, fh, indent=1)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, os.path.join(directory, MANIFEST))
    _fsync_dir(directory)
    for old in os.listdir(directory):           # older snapshots, and what a crash mid-write left behind
        if old.startswith("depth-") and old != name:
            shutil.rmtree(os.path.join(directory, old), ignore_errors=True)
        elif old.startswith(f".{MANIFEST}.tmp-"):
            os.remove(os.path.join(directory, old))
    return size


def read(directory, ident):
    """The arrays and counters of the snapshot in ``directory``; CheckpointError if it is not this search's."""
    path = os.path.join(directory, MANIFEST)
    try:
        with open(path) as fh:
            manifest = json.load(fh)
    except FileNotFoundError:
        raise CheckpointError(f"--resume {directory}: no snapshot there ({MANIFEST} missing)") from None
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise CheckpointError(f"--resume {directory}: unreadable {MANIFEST} ({e})") from None
    if not isinstance(manifest, dict):
        raise CheckpointError(f"--resume {directory}: {MANIFEST} is not a snapshot manifest")
    for key, want in ident.items():
        got = manifest.get(key)
        if got != want:
            raise CheckpointError(f"--resume {directory}: the snapshot is of {key} {json.dumps(got)}, "
                                  f"this run has {json.dumps(want)}")
    folder = os.path.join(directory, str(manifest.get("snapshot")))
    arrays = {}
    try:
        for key, digest in dict(manifest["sha256"]).items():
            a = np.load(os.path.join(folder, f"{key}.npy"), allow_pickle=False)
            if _digest(a) != digest:
                raise CheckpointError(f"--resume {directory}: {key}.npy does not match its hash (damaged)")
            arrays[key] = a
        counters = {**dict(manifest["counters"]), "written": manifest.get("written")}
    except CheckpointError:
        raise
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise CheckpointError(f"--resume {directory}: damaged snapshot ({e})") from None
    return arrays, counters
