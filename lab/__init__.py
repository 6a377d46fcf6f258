"""The lab: every measurement of the service that is not the product (`make -C lab help`,
lab/README.md). It sits on top of the import graph: it may import the product (the load
engine in loadtests/ included); nothing in the product imports it."""
