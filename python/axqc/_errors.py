"""Exceptions of axqc."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from ._report import Report


class Error(Exception):
    """Base class of every exception raised by axqc."""


class InputError(Error, ValueError):
    """The model could not be checked: not an ONNX model, unreadable, unsafe external data, or a
    request the server refused for the model's sake (bad path, too big, ...).

    This is "no verdict", not a verdict: a model that violates the spec is not an error (see
    :class:`NonConformantError`). For the service, ``code`` is the gRPC status code name (e.g.
    ``"INVALID_ARGUMENT"``) and ``request_id`` the server's request id; both are ``None`` for a
    local check.
    """

    def __init__(self, message: str, *, code: Optional[str] = None,
                 request_id: Optional[str] = None) -> None:
        super().__init__(message)
        self.code = code
        self.request_id = request_id


class ServiceError(Error):
    """axqc-server gave no verdict: unreachable, TLS or token refused, deadline, overload or a
    server failure. ``code`` is the gRPC status code name (``"UNAVAILABLE"``,
    ``"UNAUTHENTICATED"``, ``"DEADLINE_EXCEEDED"``, ...), ``request_id`` the server's request id
    when the request reached it."""

    def __init__(self, message: str, *, code: str, request_id: Optional[str] = None) -> None:
        super().__init__(message)
        self.code = code
        self.request_id = request_id


class NonConformantError(Error):
    """Raised by ``check(..., raise_on_error=True)`` (and ``Client.check``) when the verdict is
    ``non_conformant``. ``report`` is the full :class:`~axqc.Report`; ``str(error)`` is its text
    report (headline, every finding group with its locations and fix)."""

    def __init__(self, report: "Report") -> None:
        super().__init__(report.summary())
        self.report = report

    def __reduce__(self):  # picklable (multiprocessing): the report travels as JSON
        return (_non_conformant_from_json, (self.report.to_json(indent=-1),))


def _non_conformant_from_json(text: str) -> NonConformantError:
    from ._report import Report

    return NonConformantError(Report.from_json(text))
