"""Hostile input kept at the door: user code loaded behind a fence, files read capped, files written whole or not at
all, output paths checked before any work, room for native libraries under ulimit -v."""
