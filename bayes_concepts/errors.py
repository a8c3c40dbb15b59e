"""Errors the toolkit raises for bad input.  Each names what was wrong and where;
the command line prints ``str(error)`` on one line and exits with status 2."""


class BayesConceptsError(ValueError):
    """Base class of every user-facing input error."""


class ProgramError(BayesConceptsError):
    """A program string that does not parse or type-check.

    ``position`` is the 0-based index of the offending token in the program as
    given (``lambda``/``S.`` included), or ``None`` for whole-program errors.
    """

    def __init__(self, message: str, program: str = "", position: int | None = None):
        self.program = program
        self.position = position
        where = f"token {position}" if position is not None else "program"
        text = f"{where}: {message}"
        if program:
            text = f"in program {program!r}, {text}"
        super().__init__(text)


class GrammarError(BayesConceptsError):
    """A grammar file that cannot be read; names the file and line."""


class SceneError(BayesConceptsError):
    """A scene (or scene file) that is not valid; names file, line and field."""
