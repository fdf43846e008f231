"""Python client for the sessiondag daemon."""
