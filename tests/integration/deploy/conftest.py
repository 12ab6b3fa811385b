from tests.integration.deploy.clusterkit import layout_up  # noqa: F401  (fixture)
