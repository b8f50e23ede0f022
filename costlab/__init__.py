"""costlab: learned cost models for TVM MetaSchedule."""
__version__ = "0.1.0"
