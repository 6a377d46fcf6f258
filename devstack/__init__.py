"""The development stack: `make run`'s launcher, its private Redis, and the one catalog of
process command lines that every way of running the service takes from."""
