"""Comparison tables and plots, computed as plain data first, then drawn."""
