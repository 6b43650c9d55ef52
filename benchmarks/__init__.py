"""Benchmarks: token-mask speed of structgen and its peers (`bench_masks.py`)."""
