"""bin/benchmark: speed of the training and inference computations (docs/performance.md)."""
