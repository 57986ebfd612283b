"""The exhaustive engine: breadth-first search level by level over batches of states, its visited set, levels on
disk, fingerprints and replica symmetry, snapshots, action coverage, and liveness on the reachable state graph."""
