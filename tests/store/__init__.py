"""The store's conformance suite: one run per database (DATABASE_URL picks it)."""
