"""Root conftest: the repository's own fixtures (fixtures/plugin.py) for every test folder."""

pytest_plugins = ["fixtures.plugin"]
