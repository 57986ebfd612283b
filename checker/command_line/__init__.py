"""The ``isrcheck`` command line: the console script, the commands, settings files and what they changed, which
specs --spec can name, ``list``, and a check's report."""
