"""Model families: one registry, one row or one module per family (see registry.py)."""
