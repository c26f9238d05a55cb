"""A module that fails on import, as a half-deployed tasks module might."""

raise RuntimeError("this module is broken on purpose")
