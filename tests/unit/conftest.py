"""Fixtures shared by the unit tests."""
import pytest


@pytest.fixture(scope="module")
def dask_client():
    """A LocalCluster of two single-thread workers in this process: threads, not processes,
    so workers see this process's patched module state and start in milliseconds."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as c:
        yield c
