"""The Spark engine: the same breadth-first search on a Spark cluster, partitioned by fingerprint, its visited
tables beside the tasks, and the driver's snapshots."""
