"""isrcheck's engines, traces and command line."""
__version__ = "0.1.0"
