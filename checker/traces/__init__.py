"""Traces: ITF JSON saved, loaded and replayed (typed ITF, traces from other tools), delta debugging, and how a
trace reads (text, Mermaid and dot, one HTML page)."""
