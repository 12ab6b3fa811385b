"""The plugin tested as its users use it: scratch projects run by pytester in a subprocess."""

pytest_plugins = ["pytester"]
