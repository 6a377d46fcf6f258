"""Live events for the dashboard: a bounded window of recent requests and their fan-out.

Workers and the web process PUBLISH small JSON events on one Redis channel
(`predictions.progress`); one relay process (`manage.py relay_events`) folds them into a
`LiveWindow` and, once per tick, sends one batched message per websocket group.
"""
