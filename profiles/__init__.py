"""Data shipped with planner: hardware profiles (YAML) and bundled model configs (JSON)."""
