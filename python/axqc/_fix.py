"""``axqc.fix``: the semantics-preserving rewrites of ``axqc fix`` (docs/fixes/), in this process.

Same engine as the command line: the model is rewritten, checked before and after, and nothing a
rewrite cannot prove safe on the model is touched (it is reported as skipped instead)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import _native
from ._errors import Error, InputError
from ._report import INLINE_NAME, ModelInput, Report, _model_input


class FixRefusedError(Error, ValueError):
    """``axqc.fix`` could not do what was asked (an unknown rewrite ID, a rewrite in ``apply`` that
    is not opt-in or an opt-in one in ``only``, ``ir_version`` below what the model uses, a model
    that is not valid ONNX, ...); nothing was written. ``before`` is the
    report of the input when it was checked before the refusal, else ``None``."""

    def __init__(self, message: str, before: Optional[Report] = None) -> None:
        super().__init__(message)
        self.before = before


@dataclass(frozen=True)
class RewriteInfo:
    """A rewrite of ``axqc fix`` (``axqc fix --list``); its page is docs/fixes/<id>.md."""

    id: str
    summary: str
    by_default: bool
    """False for rewrites that run only when asked (``ir-version``: only with ``ir_version``;
    the opt-in rewrites: only when named in ``apply``)."""
    opt_in: bool = False
    """True for the opt-in rewrites (``int4-weight-storage``): they run only when named in
    :func:`fix`'s ``apply`` (``axqc fix --apply``), never by default and never through ``only``."""


@dataclass(frozen=True)
class RewriteOutcome:
    """What one rewrite did on the model."""

    id: str
    summary: str
    applied: int
    """Places rewritten."""
    first: Tuple[str, ...]
    """The first places rewritten (node or tensor names, graph order)."""
    skipped: int
    """Places the rewrite could not prove safe and left alone."""
    first_skips: Tuple[Tuple[str, str], ...]
    """The first skipped places with the reason: ``(place, reason)``."""
    note: str
    """E.g. ``"IR 10 -> 8"``; empty when there is nothing to add."""


@dataclass(frozen=True)
class FixResult:
    """The result of :func:`fix`: per rewrite what changed, the reports before and after, and the
    fixed model (``output`` on disk, and ``model`` bytes for an in-memory input)."""

    input: str
    output: Optional[str]
    """Where the fixed model was written; ``None`` for a dry run."""
    dry_run: bool
    written: bool
    data_file: Optional[str]
    """External data file written next to ``output``, if any."""
    rewrites: Tuple[RewriteOutcome, ...]
    before: Report
    """The report of the model as given."""
    after: Report
    """The report of the fixed model."""
    model: Optional[bytes]
    """The fixed model's bytes (in-memory inputs only; a path input is written to ``output``)."""

    @property
    def applied(self) -> int:
        """Places rewritten, over every rewrite (0: the findings are the model's own)."""
        return sum(r.applied for r in self.rewrites)

    @property
    def changed(self) -> Dict[str, int]:
        """Rewrite ID -> places rewritten, for the rewrites that changed something."""
        return {r.id: r.applied for r in self.rewrites if r.applied}

    def to_onnx(self) -> Any:
        """The fixed model as an ``onnx.ModelProto`` (needs the ``onnx`` package)."""
        try:
            import onnx  # noqa: PLC0415 - optional dependency
        except ImportError as e:
            from ._client import _missing_module_message  # noqa: PLC0415

            raise ImportError(_missing_module_message("FixResult.to_onnx()", "the onnx", "onnx",
                                                      "python3-onnx", e)) from e

        if self.model is not None:
            return onnx.load_model_from_string(self.model)
        if self.output is None:
            raise ValueError("a dry run has no fixed model")
        return onnx.load(self.output)


def rewrites() -> List[RewriteInfo]:
    """The rewrites of ``axqc fix`` in the order they run (``axqc fix --list``)."""
    return [RewriteInfo(id=str(d["id"]), summary=str(d["summary"]),
                        by_default=bool(d["by_default"]), opt_in=bool(d["opt_in"]))
            for d in _native.rewrites()]


def _result(d: Mapping[str, Any], model: Optional[bytes]) -> FixResult:
    outcomes = tuple(
        RewriteOutcome(id=r["id"], summary=r["summary"], applied=int(r["applied"]),
                       first=tuple(r["first"]), skipped=int(r["skipped"]),
                       first_skips=tuple((a, b) for a, b in r["first_skips"]), note=r["note"])
        for r in d["rewrites"])
    return FixResult(input=d["input"], output=d["output"] or None, dry_run=bool(d["dry_run"]),
                     written=bool(d["written"]), data_file=d["data_file"] or None,
                     rewrites=outcomes, before=Report(d["before"]), after=Report(d["after"]),
                     model=model)


def fix(model: ModelInput, output: Union[None, str, "os.PathLike[str]"] = None, *,
        only: Optional[Sequence[str]] = None, apply: Optional[Sequence[str]] = None,
        ir_version: Optional[int] = None, check_value: bool = False, dry_run: bool = False,
        max_locations: int = 5, name: Optional[str] = None) -> FixResult:
    """Applies the semantics-preserving rewrites of ``axqc fix`` to a model and checks it before
    and after.

    ``model`` is a path, the model's bytes or an ``onnx.ModelProto`` (as for :func:`check`).
    For a path, the fixed model is written to ``output`` (external data goes next to it); without
    ``output`` (or with ``dry_run=True``) nothing is written and the result says what would
    change. For bytes or a ``ModelProto``, the fixed model is returned in ``result.model`` (and
    also written to ``output`` when given, unless ``dry_run``).

    ``only`` restricts the rewrites to these IDs (see :func:`rewrites`; ``axqc fix --only``);
    ``apply`` also runs these opt-in rewrites, which never run otherwise (``axqc fix --apply``,
    e.g. ``apply=["int4-weight-storage"]``; they are the ones with ``RewriteInfo.opt_in`` and
    cannot be named in ``only``; with ``only`` both sets run); ``ir_version`` lowers the model's IR
    version (the ``ir-version`` rewrite); ``check_value`` runs the before/after checks with the
    value rules (``-c``). The outputs of the fixed model are those of the input (each
    rewrite is proven on onnxruntime in the test suite); a rewrite that cannot be proven safe on
    this model leaves the place alone and lists it in ``RewriteOutcome.first_skips``.

    Raises :class:`InputError` (the model cannot be read), :class:`FixRefusedError` (the fix
    cannot be done as asked) or ``OSError`` (the output cannot be written).
    """
    if not isinstance(max_locations, int) or isinstance(max_locations, bool) or max_locations < 0:
        raise ValueError(f"max_locations must be an int >= 0, got {max_locations!r}")
    if isinstance(only, str):
        raise TypeError("only must be a sequence of rewrite IDs, e.g. ['constant-to-initializer']")
    if isinstance(apply, str):
        raise TypeError("apply must be a sequence of rewrite IDs, e.g. ['int4-weight-storage']")
    ids = list(only or [])
    opt_in = list(apply or [])
    if ir_version is not None and (not isinstance(ir_version, int) or isinstance(ir_version, bool)):
        raise TypeError(f"ir_version must be an int, got {type(ir_version).__name__}")
    out = os.fspath(output) if output is not None else None
    if isinstance(out, bytes):
        out = os.fsdecode(out)
    path, data = _model_input(model)
    try:
        if path is not None:
            target = "" if dry_run or out is None else out
            try:
                d = _native.fix_file(path, target, ids, opt_in, ir_version, bool(check_value),
                                     max_locations)
            except RuntimeError as e:
                raise OSError(str(e)) from None
            return _result(d, None)
        assert data is not None
        d = _native.fix_bytes(data, name if name is not None else INLINE_NAME, ids, opt_in,
                              ir_version, bool(check_value), max_locations)
    except _native.InputError as e:
        raise InputError(str(e)) from None
    except _native.FixRefused as e:
        message, before = e.args
        raise FixRefusedError(message, Report(before) if before is not None else None) from None
    fixed = bytes(d["model"])
    written = False
    if out is not None and not dry_run:
        with open(out, "wb") as f:
            f.write(fixed)
        written = True
    result = _result(d, fixed)
    return FixResult(input=result.input, output=out if written else None, dry_run=bool(dry_run),
                     written=written, data_file=None, rewrites=result.rewrites,
                     before=result.before, after=result.after, model=fixed)
