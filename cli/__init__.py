"""The ``planner`` command line: a thin Typer layer over ``analysis``, ``hardware`` and ``runtime``."""
