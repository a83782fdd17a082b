"""One module per command (or pair of commands), each a thin click command: parse the
options, call the layer that does the work, hand the reports to
:func:`trainproof.cli.output.emit_reports`, return its exit code. A module is imported
only when its command runs (:data:`trainproof.cli.app.COMMANDS`)."""
