"""Load experiments: Locust users, an open-loop runner, and the experiment that compares
deployments (worker counts) and scheduling strategies on the same workload.

Nothing here imports Locust except `locustfile.py`, which runs in its own process: Locust
monkey-patches the standard library with gevent on import.
"""
