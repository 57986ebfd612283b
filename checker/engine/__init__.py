"""The contract between the command line and every engine: the Budget a run may spend, the Result every engine
returns, the stop requests every engine polls, and the registry through which ``isrcheck check --engine NAME``
reaches an engine."""
