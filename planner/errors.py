"""One error hierarchy for the planner.

``PlannerError`` and its subclasses are the user's problem (bad spec, infeasible
request, unsupported op, no plan within the time limit); the CLI turns them into a short
message and an exit code. ``InternalError`` is ours (a solver result that fails
validation, a simulator that disagrees with the plan): it is not a ``PlannerError`` and
library code never catches it.

Exit codes (stable; the CLI's and the README's):

====  =====================  =============================================================
code  constant               meaning
====  =====================  =============================================================
0     ``EXIT_OK``            solved (optimal, or feasible at the time limit) or verified
1     ``EXIT_INFEASIBLE``    the spec is valid but no plan satisfies it (:class:`InfeasibleError`)
2     ``EXIT_BAD_INPUT``     bad input: spec, flags, a tampered plan directory (:class:`SpecError`...)
3     ``EXIT_INTERNAL``      a bug in the planner (:class:`InternalError`, any unexpected exception)
4     ``EXIT_NO_SOLUTION``   no plan found within the time limit (:class:`TimeLimitError`): neither
                             a bug nor a proof of infeasibility; a longer limit may find one
130   (SIGINT)               interrupted
====  =====================  =============================================================
"""

from __future__ import annotations

__all__ = [
    "PlannerError",
    "SpecError",
    "UnsupportedError",
    "InfeasibleError",
    "SolverError",
    "TimeLimitError",
    "BinaryFormatError",
    "VerificationError",
    "InternalError",
    "EXIT_OK",
    "EXIT_INFEASIBLE",
    "EXIT_BAD_INPUT",
    "EXIT_INTERNAL",
    "EXIT_NO_SOLUTION",
]

EXIT_OK = 0
EXIT_INFEASIBLE = 1
EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 3
EXIT_NO_SOLUTION = 4


class PlannerError(Exception):
    """Base of every error the user can act on."""

    exit_code = EXIT_BAD_INPUT


class SpecError(PlannerError, ValueError):
    """Bad input: carries the file, the line and the spec path when known.

    Examples
    --------
    >>> str(SpecError("capacity must be > 0", file="s.yaml", line=7,
    ...               path="hardware.devices[1].memory[0].capacity"))
    's.yaml:7: hardware.devices[1].memory[0].capacity: capacity must be > 0'
    """

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 column: int | None = None, path: str | None = None) -> None:
        self.message, self.file, self.line, self.column, self.path = message, file, line, column, path
        super().__init__(self._render())

    def _render(self) -> str:
        where = ""
        if self.file:
            where = self.file + (f":{self.line}" if self.line else "") + ": "
        elif self.line:
            where = f"line {self.line}: "
        return where + (f"{self.path}: " if self.path else "") + self.message


class UnsupportedError(PlannerError):
    """An op or ISA combination that is not implemented."""


class InfeasibleError(PlannerError):
    """The spec is valid but no plan satisfies it; the message says which constraint."""

    exit_code = EXIT_INFEASIBLE


class SolverError(PlannerError):
    """The optimization backend failed (crashed or returned nothing usable)."""

    exit_code = EXIT_INTERNAL


class TimeLimitError(PlannerError):
    """No plan was found within the time limit: not infeasible (nothing was proved), not a bug.

    Examples
    --------
    >>> TimeLimitError("no plan found within 0.01 s").exit_code
    4
    """

    exit_code = EXIT_NO_SOLUTION


class BinaryFormatError(PlannerError):
    """A binary or plan on disk is malformed or was tampered with."""


class VerificationError(BinaryFormatError):
    """A plan directory whose files disagree with each other or with the replay of its binaries.

    Names the first disagreement: the file, the field, what the binaries (or the file that
    is checked against) say, and what the file says.

    Examples
    --------
    >>> e = VerificationError("plan.json", "transfers[0].link", expected="'l0'", found="'bogus'")
    >>> str(e)
    "plan.json: transfers[0].link: expected 'l0', found 'bogus'"
    >>> e.exit_code
    2
    """

    def __init__(self, file: str, field: str, *, expected: str | None = None, found: str | None = None,
                 detail: str | None = None) -> None:
        self.file, self.field, self.expected, self.found, self.detail = file, field, expected, found, detail
        parts = [f"{file}: {field}" if field else file]
        if expected is not None or found is not None:
            parts.append(f"expected {expected}, found {found}")
        if detail:
            parts.append(detail)
        super().__init__(": ".join(parts))


class InternalError(Exception):
    """A bug in the planner: a plan that fails its own checks. Never caught in library code."""

    exit_code = EXIT_INTERNAL
