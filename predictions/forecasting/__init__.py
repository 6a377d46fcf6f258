"""Stock price forecasting: arrays of prices in, forecasts out.

Knows nothing of Django, Celery or HTTP. Modules:

- base: Forecaster contract, ForecastError/StateError, MAX_HORIZON
- catalog: the five models by name, resolved lazily (TensorFlow only when needed)
- warmup: TensorFlow warmed up in a worker process before its first task
- naive, ridge, arima: TensorFlow-free models; lstm, tcn (+ _deep, _windows): Keras models
- backtest: walk-forward scoring and evaluate_and_forecast() for workers
- combine: inverse-error ensemble, sentiment tilt, interval, doubt flag
  (weighting: the weights; calibration: the band and its conformal stretch,
  calibration.json; doubt: the `unsure` rule)
- bench: cost/skill benchmark table
- evaluation, replay, nested, significance: the offline nested walk-forward evaluation
  (benchmarks/evaluate.py); scorecard: its per-symbol results (scorecard.json)

Importing this package (or any module above except lstm, tcn, _deep) never imports TensorFlow.
"""

from __future__ import annotations

from .base import MAX_HORIZON, Forecaster, ForecastError, StateError

__all__ = ["MAX_HORIZON", "ForecastError", "Forecaster", "StateError"]
