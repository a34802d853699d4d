"""The one error type for rejected expressions: a message plus the 1-based column it points at."""


class ExpressionError(ValueError):
    """A user expression (or option value) that gradcli refuses to read.

    ``str(error)`` is a single line such as ``unexpected '*' at column 4 in 'x+**2'`` so the CLI can print
    it as-is and exit 2 without a traceback.
    """

    def __init__(self, message, column=None, text=None, source="expression"):
        self.message = message
        self.column = column
        self.text = text
        self.source = source
        super().__init__(self._one_line())

    def _one_line(self):
        where = f" at column {self.column}" if self.column is not None else ""
        if self.text is None:
            return f"{self.message}{where}"
        shown = self.text if len(self.text) <= 60 else self.text[:57] + "..."
        return f"{self.message}{where} in {self.source} {shown!r}"

    def in_source(self, source):
        """The same error re-labelled, e.g. as coming from ``--at`` instead of the expression."""
        return ExpressionError(self.message, self.column, self.text, source)
