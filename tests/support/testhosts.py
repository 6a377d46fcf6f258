"""The provisioning test's hosts: network namespaces with an sshd each.

They live in `devstack.testhosts`, shared with `make -C lab cluster-bench`, which provisions real
workers onto the same kind of hosts.
"""

from devstack.testhosts import TestHost, TestNetwork, unavailable_reason

__all__ = ["TestHost", "TestNetwork", "unavailable_reason"]
