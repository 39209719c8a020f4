"""Scripts that regenerate the README's tables (``python -m baselines.scripts.<name>``)."""
