"""Stock price forecasting: arrays of prices in, forecasts out.

Knows nothing of Django, Celery or HTTP. Modules:

- base: Forecaster contract, ForecastError/StateError, MAX_HORIZON
- catalog: the models by name, resolved lazily (TensorFlow only when needed)
- warmup: TensorFlow warmed up in a worker process before its first task
- naive, ridge, arima: TensorFlow-free models; lstm, tcn (+ _deep, _windows): Keras models
- batching: every deep forward pass, batched across requests (AIMD), its wait bounded
- training_pause: where a training may stop between epochs (the spare lane's worker)
- backtest: walk-forward scoring and evaluate_and_forecast() for workers
- combine: inverse-error ensemble, the band, the sentiment tilt beside it, unsure flag
  (weighting: the weights; calibration: which band serves and its stretch,
  calibration.json; volatility: σ(t, h) for the volatility band; unsure: the `unsure` rule)
- health: the sequential test of model health
- bench: cost/skill benchmark table
- scorecard: the offline evaluation's per-symbol results (scorecard.json); the evaluation
  itself is forecasting/evaluation/, which nothing here imports

Importing this package (or any module above except lstm, tcn, _deep) never imports TensorFlow.
"""

from __future__ import annotations

from .base import MAX_HORIZON, Forecaster, ForecastError, StateError

__all__ = ["MAX_HORIZON", "ForecastError", "Forecaster", "StateError"]
