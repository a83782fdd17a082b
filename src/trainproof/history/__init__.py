"""Run history: every judged run recorded in a store (SQLite or PostgreSQL), and a run
judged against the recent runs of its experiment.

:mod:`.record` is what a stored run is (:class:`~.record.RunRecord`), :mod:`.store` where
it is kept. Nothing here is imported by the rest of the package unless a history is set.
"""
