"""Snapshots of the exhaustive search at level boundaries, to resume it after a crash or a stop.

A checkpoint directory holds ``snapshot.json`` (the manifest: what was searched,
which isrcheck, the counters, a SHA-256 per array over its dtype, shape and bytes,
and a SHA-256 of the manifest itself) and the snapshot it names, a folder of
``.npy`` arrays. A new snapshot is written to a fresh folder, flushed, and only
then named by a new manifest (written to a temp file and renamed over the old
one): a crash at any moment leaves the previous snapshot usable. Older folders
are removed after the switch; a snapshot that cannot be written completely (a
full disk) leaves nothing of itself behind.

Nothing read from a snapshot is trusted: the manifest must match its digest, every
array its digest and the dtype and shape the search writes, every counter and
array its range (state numbers, parents in the level before, actions of the spec,
frontier cells within the layout's bounds), each file must be a regular file (a
FIFO is refused, never waited on). Anything else is a CheckpointError (exit 2).
"""
from __future__ import annotations

import bisect
import hashlib
import json
import math
import os
import re
import shutil
import time
import uuid

import numpy as np

from isrcheck.checker import __version__
from isrcheck.checker.guards import userfile

MANIFEST = "snapshot.json"
FORMAT = 2                          # the manifest's layout: 2 has its own digest and arrays hashed with their shape
MAX_MANIFEST_BYTES = 64 << 20       # a manifest holds a number per level: a few KB
SNAPSHOT_NAME = re.compile(r"depth-[0-9]+-[0-9a-f]{8}")


class CheckpointError(ValueError):
    """A checkpoint that cannot be resumed here (one line, for exit code 2)."""


def identity(spec, invariants, symmetry):
    """What a snapshot must agree on to be resumed: tool version, spec, bounds, invariants, the model's shape, and
    the fingerprints' multipliers (the visited set it keeps is theirs)."""
    shape = [[a.label for a in spec.actions], list(spec.layout.fields),
             spec.layout.lo.tolist(), spec.layout.hi.tolist()]
    model = hashlib.sha256(json.dumps(shape).encode()).hexdigest()[:16]
    from isrcheck.checker.exhaustive.fingerprint import SCHEME
    return {"version": __version__, "spec": spec.name, "bounds": dict(spec.bounds),
            "invariants": list(invariants), "symmetry": bool(symmetry), "model": model, "fingerprints": SCHEME}


def _digest(a):
    """SHA-256 of an array's dtype, shape and bytes (the same bytes read as another dtype or shape differ)."""
    h = hashlib.sha256(f"{a.dtype.str}{a.shape}".encode())
    h.update(np.ascontiguousarray(a).view(np.uint8))
    return h.hexdigest()


def manifest_digest(manifest):
    """SHA-256 of a manifest without its own ``digest`` key, as canonical JSON."""
    body = {k: v for k, v in manifest.items() if k != "digest"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def _fsync_dir(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write(directory, ident, arrays, counters):
    """Write a snapshot of ``arrays`` (name -> ndarray) and ``counters`` (JSON values); returns its size in bytes.
    An OSError (a full disk) leaves the previous snapshot as it was and nothing of this one."""
    os.makedirs(directory, exist_ok=True)
    name = f"depth-{counters['depth']}-{uuid.uuid4().hex[:8]}"
    folder = os.path.join(directory, name)
    tmp = os.path.join(directory, f".{MANIFEST}.tmp-{os.getpid()}")
    try:
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
        manifest = {**ident, "format": FORMAT, "snapshot": name, "written": time.time(), "counters": counters,
                    "sha256": files}
        manifest["digest"] = manifest_digest(manifest)
        with open(tmp, "w") as fh:
            json.dump(manifest, fh, indent=1)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, os.path.join(directory, MANIFEST))
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        if os.path.lexists(tmp):
            os.remove(tmp)
        raise
    _fsync_dir(directory)
    for old in os.listdir(directory):           # older snapshots, and what a crash mid-write left behind
        if old.startswith("depth-") and old != name:
            shutil.rmtree(os.path.join(directory, old), ignore_errors=True)
        elif old.startswith(f".{MANIFEST}.tmp-"):
            os.remove(os.path.join(directory, old))
    return size


def schema(layout, n_actions, wide=False):
    """{array: (dtype, shape with None for a count)} of what the exhaustive search snapshots: the visited
    fingerprints (sorted; for 96-bit keys, lane 2's high halves beside them in ``visited_high``), each state's
    parent number and action id, the frontier's rows (one column per state) and fingerprints, and the coverage
    counts per action instance."""
    return {"visited": ("<u8", (None,)), "parents": ("<u4", (None,)), "actions": ("<u2", (None,)),
            "frontier": ("|i1", (layout.width, None)), "frontier_fps": ("<u8", (None,)),
            "coverage": ("<i8", (3, n_actions)), **({"visited_high": ("<u4", (None,))} if wide else {})}


def read(directory, ident, layout, n_actions):
    """The arrays and counters of the snapshot in ``directory``, every one checked (the module doc) against this
    search: ``ident`` (:func:`identity`), the spec's ``layout`` and its number of action instances; CheckpointError
    naming what is wrong otherwise."""
    where = f"--resume {directory}"
    manifest = _manifest(directory, where, ident)
    name = manifest.get("snapshot")
    if not isinstance(name, str) or not SNAPSHOT_NAME.fullmatch(name):
        raise CheckpointError(f"{where}: {MANIFEST} names no snapshot folder of this directory")
    counters = _counters(where, manifest, ident["invariants"])
    hashes = manifest.get("sha256")
    expected = schema(layout, n_actions, wide=isinstance(hashes, dict) and "visited_high" in hashes)
    if not isinstance(hashes, dict) or sorted(hashes) != sorted(expected) \
            or not all(isinstance(h, str) for h in hashes.values()):
        raise CheckpointError(f"{where}: {MANIFEST} does not list the arrays {', '.join(expected)} with their hashes")
    arrays = {key: _array(where, os.path.join(directory, name, f"{key}.npy"), dtype, shape, hashes[key])
              for key, (dtype, shape) in expected.items()}
    _check_search(where, arrays, counters, layout, n_actions)
    return arrays, counters


def read_manifest(path, where, what):
    """The JSON object a snapshot's manifest at ``path`` holds (``what``: "snapshot", "Spark snapshot"); a
    CheckpointError naming ``where`` when it is missing, not a regular file, too large, not JSON (NaN included),
    nested too deeply or not an object."""
    name = os.path.basename(path)
    if not os.path.lexists(path):
        raise CheckpointError(f"{where}: no {what} there ({name} missing)")
    try:
        manifest = json.loads(userfile.read_text(path, f"{what} manifest", MAX_MANIFEST_BYTES),
                              parse_constant=userfile.no_json_constant)
    except userfile.UserFileError as e:
        raise CheckpointError(f"{where}: {e}") from None
    except RecursionError:
        raise CheckpointError(f"{where}: unreadable {name} (nested too deeply)") from None
    except ValueError as e:
        raise CheckpointError(f"{where}: unreadable {name} ({e})") from None
    if not isinstance(manifest, dict):
        raise CheckpointError(f"{where}: {name} is not a {what} manifest")
    return manifest


def _manifest(directory, where, ident):
    """The manifest, if it is of this search (``ident``, said first: another search's is no damage), in this
    isrcheck's format, and matches its digest."""
    manifest = read_manifest(os.path.join(directory, MANIFEST), where, "snapshot")
    for key, want in ident.items():
        got = manifest.get(key)
        if got != want:
            raise CheckpointError(f"{where}: the snapshot is of {key} {json.dumps(got)}, "
                                  f"this run has {json.dumps(want)}")
    if manifest.get("format") != FORMAT:
        raise CheckpointError(f"{where}: {MANIFEST} is not a snapshot manifest of this isrcheck (format "
                              f"{json.dumps(manifest.get('format'))}, this one writes {FORMAT})")
    if manifest.get("digest") != manifest_digest(manifest):
        raise CheckpointError(f"{where}: {MANIFEST} does not match its digest (edited or damaged)")
    return manifest


def _int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _counters(where, manifest, invariants):
    """The manifest's counters, each of its type and range (CheckpointError otherwise)."""
    c = manifest.get("counters")

    def bad(what):
        return CheckpointError(f"{where}: {MANIFEST}: {what}")
    if not isinstance(c, dict):
        raise bad("no counters")
    depth, level_start, violations = c.get("depth"), c.get("level_start"), c.get("violations")
    if not _int(depth) or depth < 1:
        raise bad("'depth' is not a positive integer")
    if not _int(c.get("transitions")) or c["transitions"] < 0:
        raise bad("'transitions' is not a count")
    for key, value in (("seconds", c.get("seconds")), ("written", manifest.get("written"))):
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value < 0:
            raise bad(f"{key!r} is not a time")
    if not isinstance(level_start, list) or len(level_start) != depth or not all(_int(x) for x in level_start) \
            or level_start[0] != 0 or any(b <= a for a, b in zip(level_start, level_start[1:])):
        raise bad(f"'level_start' is not {depth} increasing state numbers from 0")
    if not isinstance(violations, dict):
        raise bad("'violations' is not an object")
    if c.get("wide_from") is not None and not (_int(c["wide_from"]) and 0 <= c["wide_from"] <= level_start[-1]):
        raise bad("'wide_from' is not a state count")
    for name, found in violations.items():
        if name not in invariants:
            raise bad(f"a violation of {name!r}, which this search does not check")
        if not (isinstance(found, list) and len(found) == 2 and all(_int(x) and x >= 0 for x in found)):
            raise bad(f"the violation of {name!r} is not [state number, level]")
    return {**c, "written": manifest["written"]}


def _array(where, path, dtype, shape, digest):
    """The array in ``path``: a regular file holding a .npy of ``dtype`` and ``shape`` (None: any length) whose
    size is what its header says, matching ``digest`` (CheckpointError otherwise)."""
    name = os.path.basename(path)
    try:
        fd = userfile.open_regular(path, "snapshot array")
    except userfile.UserFileError as e:
        raise CheckpointError(f"{where}: {e}") from None
    with os.fdopen(fd, "rb") as fh:
        try:
            version = np.lib.format.read_magic(fh)
            read_header = {(1, 0): np.lib.format.read_array_header_1_0,
                           (2, 0): np.lib.format.read_array_header_2_0}.get(version)
            if read_header is None:
                raise ValueError(f"format version {version}")
            header = read_header(fh)
            got_shape, _, got_dtype = header
            data_at = fh.tell()
        except (ValueError, OSError, SyntaxError, TypeError) as e:
            raise CheckpointError(f"{where}: {name} is not a .npy array ({e})") from None
        if got_dtype.str != dtype or len(got_shape) != len(shape) \
                or any(want is not None and got != want for got, want in zip(got_shape, shape)):
            raise CheckpointError(f"{where}: {name} holds {got_dtype.str} {got_shape}, the search writes {dtype} "
                                  f"({', '.join('n' if n is None else str(n) for n in shape)}{',' if len(shape) == 1 else ''})")
        if os.fstat(fh.fileno()).st_size != data_at + math.prod(got_shape) * got_dtype.itemsize:
            raise CheckpointError(f"{where}: {name} is not as long as its header says (damaged)")
        try:
            fh.seek(0)
            a = np.load(fh, allow_pickle=False)
        except (ValueError, OSError) as e:
            raise CheckpointError(f"{where}: {name} cannot be read ({e})") from None
    if _digest(a) != digest:
        raise CheckpointError(f"{where}: {name} does not match its hash (damaged)")
    return a


def _check_search(where, arrays, counters, layout, n_actions):
    """The arrays and counters make one search: every state numbered once, level by level (``level_start``),
    each with a parent in the level before and an action of the spec, the frontier the last level, within the
    layout's bounds; the violations at states of the level they name (CheckpointError otherwise)."""
    level_start = counters["level_start"]
    visited, parents, actions = arrays["visited"], arrays["parents"], arrays["actions"]
    frontier = arrays["frontier"]
    total = level_start[-1] + frontier.shape[1]

    def bad(what):
        return CheckpointError(f"{where}: the snapshot is not one search: {what}")
    if not (parents.size == actions.size == visited.size == total):
        raise bad(f"{visited.size:,} fingerprints, {parents.size:,} parents and {actions.size:,} actions for "
                  f"{total:,} states")
    if frontier.shape[1] == 0 or arrays["frontier_fps"].size != frontier.shape[1]:
        raise bad("the frontier is empty, or has not a fingerprint per state")
    if total >= np.iinfo(np.uint32).max:
        raise bad(f"{total:,} states, more than 32-bit state numbers name")
    high = arrays.get("visited_high")
    if high is None and np.any(visited[1:] <= visited[:-1]):
        raise bad("the visited fingerprints are not sorted and distinct")
    if high is not None and (high.size != visited.size or not np.all(
            (visited[1:] > visited[:-1]) | ((visited[1:] == visited[:-1]) & (high[1:] > high[:-1])))):
        raise bad("the visited keys are not sorted and distinct")
    if np.any(arrays["coverage"] < 0):
        raise bad("a negative coverage count")
    ends = level_start[1:] + [total]
    if np.any(parents[:ends[0]] != np.iinfo(np.uint32).max) or np.any(actions[:ends[0]] != np.iinfo(np.uint16).max):
        raise bad("an initial state with a parent or an action")
    for level in range(1, len(level_start)):
        lo, hi = level_start[level], ends[level]
        p, a = parents[lo:hi], actions[lo:hi]
        if p.size and (p.min() < level_start[level - 1] or p.max() >= lo or a.max() >= n_actions):
            raise bad(f"level {level + 1} has a parent outside level {level} or an action the spec does not have")
    cells_ok = (frontier >= layout.lo[:, None]) & (frontier <= layout.hi[:, None])
    if not cells_ok.all():
        raise bad("a frontier cell outside its field's bounds")
    for name, (state, level) in counters["violations"].items():
        if state >= total or bisect.bisect_right(level_start, state) != level:
            raise bad(f"the violation of {name!r} names state {state}, not a state of level {level}")
