"""Tuning: a costlab model inside MetaSchedule's evolutionary search (``adapter``, ``factory``),
one (workload, model, seed) session with its database and curve (``session``, ``recorder``,
``records``), and the builder and runners that measure (``builder``, ``runner``, ``farm``)."""
