"""Every test here runs a real peer package: marked ``peers`` (deselected in the main suite)."""

import pytest


def pytest_collection_modifyitems(config, items):
    here = str(config.rootpath / "peers")
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(pytest.mark.peers)
