"""Offline evidence for the service's decisions (model health, promotions): daily
out-of-sample errors of the project's own models on the offline sample, and the benchmarks
that measure a decision rule's error rates on them."""
