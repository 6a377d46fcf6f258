"""The offline evaluation `make evaluate` runs (forecasting/evaluation/evaluate.py): walk-forward
forecasts of every model, the live combiner replayed on them, and every score and test.
Nothing the service runs imports it; the service reads only what `make adopt-evaluation`
writes (forecasting/calibration.json and scorecard.json)."""
