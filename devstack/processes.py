"""The process catalog, under the name the launcher, the tools and the tests know it by;
it lives in `launch.catalog` so the production autoscaler reads it without `devstack`."""

from launch.catalog import *  # noqa: F403
