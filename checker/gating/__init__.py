"""``isrcheck gate``: every spec and configuration against its expected verdicts and saved traces, which specs a
change can affect, and the gate's reports."""
