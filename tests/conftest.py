"""Tests marked ``long`` run first: pytest-xdist hands tests out in collection order, so a long test
collected last would leave one worker running it alone while the other idles."""


def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: item.get_closest_marker("long") is None)      # stable: otherwise in order
