"""The runjobs worker: inline drain, outcomes, and real worker processes."""
