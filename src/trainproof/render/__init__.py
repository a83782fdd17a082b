"""Renderers: a list of reports -> text (rich) or JSON. They never compute verdicts."""
