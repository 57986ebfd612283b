"""Tests marked ``long`` run first, and xdist's workers steal work from each other: a long test collected last
would leave one worker running it alone while the other idles.

xdist's default ``load`` scheduling hands each worker a fixed first chunk of an eighth of the suite, in
collection order: the first worker got every long test while the second ran the rest, and the two could not
even out. Work stealing (``--dist worksteal``) splits the suite in two and lets an idle
worker take half of the other's queue; ``-n auto`` uses it unless ``--dist`` is given."""
import pytest


def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: item.get_closest_marker("long") is None)      # stable: otherwise in order


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") == "load" and "--dist" not in " ".join(config.invocation_params.args):
        from xdist.scheduler import WorkStealingScheduling
        return WorkStealingScheduling(config, log)
    return None
