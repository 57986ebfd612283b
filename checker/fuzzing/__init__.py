"""The fuzzer: random executions driven by Hypothesis and steered by a spec's fuzz targets, at bounds beyond
exhaustive reach."""
