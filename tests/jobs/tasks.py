"""Task functions the test-suite enqueues and runs."""
