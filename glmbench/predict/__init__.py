"""Predictions (evidence="predicted"): hardware profiles (`hardware`), the cost model
(`costmodel`) and predicted grids (`sweep`). Plain Python: nothing here imports the C core or the
measurement side (tests/test_layout.py checks)."""
