"""Batch predictions: many (symbol, horizon) pairs through the same workers, into a file.

`plan` checks what was asked, `runner` sends each pair the way the API does (a fresh
cached answer, else a request through admission control and the pipeline), `rows` turns
a finished prediction into one row per forecast day, `files` writes CSV or Parquet and
reads back what an interrupted run already finished.
"""
