"""Autoscaling across machines: a controller that adds and drains workers on queue wait."""
