"""Local checks and reports: the Python view of the report schema ``axqc.report/v1``
(docs/report-schema.md). Every rendering (text, JSON, SARIF, JUnit, GitHub, GitLab) is done by the same
C++ renderers as the ``axqc`` command line."""

from __future__ import annotations

import enum
import html
import json
import os
from dataclasses import dataclass
from typing import (Any, Dict, Iterable, List, Mapping, NamedTuple, Optional, Protocol, Set,
                    Tuple, Union)

from . import _native
from ._errors import InputError, NonConformantError


class ModelProtoLike(Protocol):
    """What :func:`check` needs of an ``onnx.ModelProto``: its serialization (the object must also
    be an ``onnx.ModelProto``, checked at run time by its protobuf descriptor)."""

    def SerializeToString(self, **kwargs: Any) -> bytes: ...


#: What :func:`check` and :meth:`Client.check` take: a path, the model's bytes, or an
#: ``onnx.ModelProto``.
ModelInput = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, ModelProtoLike]

#: Display name of a model checked from memory when no ``name`` is given (the service's default
#: for inline content too).
INLINE_NAME = "inline.onnx"


class Verdict(str, enum.Enum):
    """Verdict of a report. A ``str`` enum: ``report.verdict == "conformant"`` works."""

    CONFORMANT = "conformant"
    """In scope and no error finding."""
    NON_CONFORMANT = "non_conformant"
    """At least one error finding."""
    NOT_APPLICABLE = "not_applicable"
    """Valid ONNX without any Q/DQ edge owned by an operator or pattern rule (spec 2.1)."""

    def __str__(self) -> str:
        return self.value


class Severity(str, enum.Enum):
    """Severity of a finding or rule. Only ``error`` findings make a model non-conformant."""

    ERROR = "error"
    WARN = "warn"
    INFO = "info"

    def __str__(self) -> str:
        return self.value


class Value(NamedTuple):
    """A named value involved in a finding, e.g. ``Value("scale[3]", "0")``."""

    name: str
    value: str


@dataclass(frozen=True)
class Hint:
    """The producer artifact behind a root cause and what to do about it (docs/causes.md)."""

    id: str
    """Stable ID of the artifact, e.g. ``"qparams-as-numbers"``."""
    title: str
    """Short name, e.g. ``"qparams given as Python numbers"``."""
    text: str
    """What the producer did and what to change."""
    rewrite: Optional[str] = None
    """The ``axqc fix`` rewrite that repairs it (:func:`axqc.fix`), ``None`` when only the producer
    can."""

    @classmethod
    def _from(cls, d: Optional[Mapping[str, Any]]) -> Optional["Hint"]:
        if not d:
            return None
        return cls(id=d["id"], title=d.get("title", ""), text=d.get("text", ""),
                   rewrite=d.get("rewrite"))


@dataclass(frozen=True)
class Finding:
    """One violation (or note) at one place in the graph."""

    rule: str
    """Rule ID from the catalog, e.g. ``"qdq/scale-value"`` (see :func:`axqc.rules`)."""
    severity: Severity
    section: str
    """Section of the ax quant spec, e.g. ``"3.1"``."""
    message: str
    """Specific message naming the node, tensors and values."""
    nodes: Tuple[str, ...]
    """Node names involved; the first is the primary one (:attr:`node`)."""
    tensors: Tuple[str, ...]
    """Tensor names involved."""
    values: Tuple[Value, ...]
    """Values involved, in order (``dict(finding.values)`` gives a mapping)."""
    op_type: str
    """Op type of the unit or node involved (``""`` if none)."""
    group: str
    """Name-free text; findings with the same rule and group form one :class:`FindingGroup`."""
    fingerprint: str = ""
    """16 hex digits identifying the finding across runs, node and tensor renames and file renames
    (built from the rule, op types and the graph structure around the node, not from names;
    docs/report-schema.md, "Fingerprints"). Findings at structurally identical places share it.
    What ``axqc.toml`` waivers (``fingerprint = ...``) and baselines match; ``""`` in reports of
    servers that predate fingerprints."""
    id: str = ""
    """``"<fingerprint>:<occurrence>"``: unique within the report and as stable as the
    fingerprint; what :attr:`cause` of other findings refers to."""
    cause: Optional[str] = None
    """The :attr:`id` of the finding that causes this one; ``None`` for a root cause."""
    hint: Optional[Hint] = None
    """For a root cause recognised as a producer artifact: what it is and what to do."""

    @property
    def is_root(self) -> bool:
        """True when no other finding causes this one."""
        return self.cause is None

    @property
    def node(self) -> Optional[str]:
        """The primary node, or ``None`` for a finding about the whole model."""
        return self.nodes[0] if self.nodes else None

    @classmethod
    def _from(cls, d: Mapping[str, Any], group: str = "") -> "Finding":
        return cls(rule=d["rule"], severity=Severity(d["severity"]), section=d["section"],
                   message=d["message"], nodes=tuple(d.get("nodes", ())),
                   tensors=tuple(d.get("tensors", ())),
                   values=tuple(Value(v["name"], v["value"]) for v in d.get("values", ())),
                   op_type=d.get("op_type", ""), group=d.get("group", group),
                   fingerprint=d.get("fingerprint", ""), id=d.get("id", ""),
                   cause=d.get("cause") or None, hint=Hint._from(d.get("hint")))

    def __str__(self) -> str:
        where = f" (node {self.node})" if self.node else ""
        return f"{self.severity} {self.rule} [{self.section}]: {self.message}{where}"


@dataclass(frozen=True)
class FindingGroup:
    """Findings with the same rule and kind: a count and the first locations (at most
    ``max_locations``), in graph order."""

    rule: str
    severity: Severity
    section: str
    summary: str
    count: int
    first: Tuple[Finding, ...]


@dataclass(frozen=True)
class Opset:
    """One opset import; domain ``""`` is ai.onnx."""

    domain: str
    version: int


@dataclass(frozen=True)
class ModelFacts:
    """Facts about the checked model."""

    file: str
    sha256: str
    size_bytes: int
    ir_version: int
    opsets: Tuple[Opset, ...]
    producer_name: str
    producer_version: str
    node_count: int
    q_count: int
    dq_count: int
    initializer_count: int


@dataclass(frozen=True)
class Unit:
    """One unit of the ownership map: a single-operator unit or a pattern instance."""

    id: int
    kind: str
    """``"op"``, ``"pattern:silu"``, ``"passive"``, ``"requantize"``, ..."""
    op_type: str
    mode: str
    """``"quantized"``, ``"non_quant"``, ``"native_int"``, ..."""
    nodes: Tuple[str, ...]
    input_qdq: Tuple[str, ...]
    output_qdq: Tuple[str, ...]


@dataclass(frozen=True)
class Counts:
    """The report's counts (the ``summary`` object of the JSON report)."""

    errors: int
    warnings: int
    infos: int
    by_rule: Dict[str, int]
    units_by_kind: Dict[str, int]
    units_by_op: Dict[str, int]
    errors_by_op: Dict[str, int]
    qdq_edges: int
    owned_qdq_edges: int
    causes: int = 0
    """Root causes among the errors and warnings (findings that no other finding causes; those
    with one hint count once)."""


@dataclass(frozen=True)
class Rule:
    """One rule of the catalog. Rule IDs are a public contract: they are never renamed."""

    id: str
    severity: Severity
    check_value: bool
    """True when the rule runs only with ``check_value=True`` (spec 2.5)."""
    section: str
    summary: str
    fix: str
    """How a fix usually looks."""

    @classmethod
    def _from(cls, d: Mapping[str, Any]) -> "Rule":
        return cls(id=d["id"], severity=Severity(d["severity"]), check_value=bool(d["check_value"]),
                   section=d["section"], summary=d["summary"], fix=d["fix"])


@dataclass(frozen=True)
class TargetBlocker:
    """A node that keeps the model off a chip (the first error of a ``target/*`` rule there)."""

    rule: str
    op_type: str
    node: str


@dataclass(frozen=True)
class TargetResult:
    """The model against one chip's documented NPU operator table (docs/targets.md); judged
    beside the spec verdict, never part of it."""

    chip: str
    """``"ax650"``, ``"ax620e"``, ``"ax615"``, ``"ax637"`` or ``"m57"``."""
    name: str
    verdict: str
    """``"fits"``, ``"does_not_fit"`` or ``"fits_with_notes"``."""
    errors: int
    notes: int
    blocking: Tuple[TargetBlocker, ...]
    source: str
    """The profile's source: ``repository@commit:file`` of the Pulsar2 documentation."""
    doc_version: str

    @property
    def fits(self) -> bool:
        """True unless the verdict is ``does_not_fit``."""
        return self.verdict != "does_not_fit"


@dataclass(frozen=True)
class RemoteInfo:
    """Where a report of :class:`axqc.Client` came from."""

    server: str
    request_id: str
    cache: str
    """``"miss"`` (checked for this request), ``"memory_hit"``, ``"store_hit"`` or ``"shared"``."""
    uploaded: bool
    """True when the model's bytes were uploaded (the server did not know its hash)."""


class Report:
    """A conformance report.

    ``verdict``, ``conformant``, ``findings`` (every finding), ``errors``/``warnings``/``infos``
    (findings by severity), ``groups`` (the grouped view), ``model`` (facts), ``counts``, ``units``
    (the ownership map), ``summary()`` (the text report, for ``assert r.conformant, r.summary()``),
    and the same renderings as the command line: :meth:`to_json`, :meth:`to_sarif`,
    :meth:`to_junit`, :meth:`to_github`, :meth:`to_gitlab`, :meth:`to_text`. Reports are immutable and picklable.
    """

    __slots__ = ("_native", "_data", "remote")

    def __init__(self, native: "_native.NativeReport",
                 remote: Optional[RemoteInfo] = None) -> None:
        self._native = native
        self._data: Optional[Dict[str, Any]] = None
        #: For reports of :class:`axqc.Client`: server, request id, cache result, whether the
        #: model was uploaded. ``None`` for local checks.
        self.remote = remote

    @classmethod
    def from_json(cls, text: Union[str, bytes]) -> "Report":
        """Reads a report in the JSON schema ``axqc.report/v1`` (:meth:`to_json`, the service's
        ``report_json``, an entry of ``reports`` in ``axqc check --format json``), or the document
        ``axqc check --format json`` prints for one model (``axqc.report/v2`` with one report;
        :meth:`list_from_json` reads any number)."""
        if isinstance(text, (bytes, bytearray)):
            text = bytes(text).decode("utf-8")
        if '"axqc.report/v2"' in text[:64]:
            reports = cls.list_from_json(text)
            if len(reports) != 1:
                raise ValueError(f"the axqc.report/v2 document holds {len(reports)} reports, not "
                                 "one: use Report.list_from_json")
            return reports[0]
        return cls(_native.report_from_json(text))

    @classmethod
    def list_from_json(cls, text: Union[str, bytes]) -> List["Report"]:
        """The reports of an ``axqc check --format json`` document (schema ``axqc.report/v2``), in
        its order. A model that could not be checked (an entry with ``input_error``) raises
        ValueError naming it."""
        doc = json.loads(text)
        if not isinstance(doc, dict) or doc.get("schema") != "axqc.report/v2":
            raise ValueError("not an axqc.report/v2 document (axqc check --format json)")
        out = []
        for entry in doc.get("reports", []):
            if entry.get("verdict") is None:
                raise ValueError(f"{entry.get('model', {}).get('file', '?')}: "
                                 f"{entry.get('input_error', 'no report')}")
            out.append(cls(_native.report_from_json(json.dumps(entry))))
        return out

    # ---- the JSON document, parsed once on first use
    def _doc(self) -> Dict[str, Any]:
        if self._data is None:
            self._data = json.loads(self._native.to_json(-1))
        return self._data

    def to_dict(self) -> Dict[str, Any]:
        """The report as plain Python objects (the parsed :meth:`to_json`)."""
        return json.loads(self._native.to_json(-1))

    # ---- verdict and headline numbers (no JSON needed)
    @property
    def verdict(self) -> Verdict:
        """:class:`Verdict` of the report."""
        return Verdict(self._native.verdict)

    @property
    def conformant(self) -> bool:
        """True only for :attr:`Verdict.CONFORMANT` (``not_applicable`` is not conformant)."""
        return self._native.verdict == Verdict.CONFORMANT.value

    @property
    def file(self) -> str:
        """The model's path or display name."""
        return self._native.file

    @property
    def error_count(self) -> int:
        """Number of error findings."""
        return self._native.errors

    @property
    def warning_count(self) -> int:
        """Number of warn findings."""
        return self._native.warnings

    # ---- contents
    @property
    def findings(self) -> List[Finding]:
        """Every finding, in deterministic (graph) order."""
        return [Finding._from(f) for f in self._doc()["findings"]]

    @property
    def errors(self) -> List[Finding]:
        """The error findings (they make the model non-conformant)."""
        return [f for f in self.findings if f.severity is Severity.ERROR]

    @property
    def warnings(self) -> List[Finding]:
        """The warn findings."""
        return [f for f in self.findings if f.severity is Severity.WARN]

    @property
    def infos(self) -> List[Finding]:
        """The info findings."""
        return [f for f in self.findings if f.severity is Severity.INFO]

    @property
    def root_causes(self) -> List[Finding]:
        """The findings that no other finding causes, in report order (:attr:`Finding.cause`)."""
        return [f for f in self.findings if f.cause is None]

    def consequences(self, finding: Finding) -> List[Finding]:
        """The findings whose :attr:`Finding.cause` chain leads to ``finding``."""
        fs = self.findings
        by_id = {f.id: f for f in fs if f.id}

        def leads(f: Finding) -> bool:
            seen: Set[str] = set()
            while f.cause is not None and f.cause not in seen:
                seen.add(f.cause)
                if f.cause == finding.id:
                    return True
                nxt = by_id.get(f.cause)
                if nxt is None:
                    return False
                f = nxt
            return False

        return [f for f in fs if leads(f)]

    @property
    def rules_violated(self) -> List[str]:
        """Sorted IDs of the rules with at least one error finding."""
        return sorted({f.rule for f in self.errors})

    @property
    def groups(self) -> List[FindingGroup]:
        """Findings grouped by rule and kind (errors, then warnings, then infos)."""
        return [FindingGroup(rule=g["rule"], severity=Severity(g["severity"]),
                             section=g["section"], summary=g["summary"], count=g["count"],
                             first=tuple(Finding._from(f, g["summary"]) for f in g["first"]))
                for g in self._doc()["groups"]]

    @property
    def model(self) -> ModelFacts:
        """Facts about the model (file, sha256, size, IR version, opsets, counts)."""
        m = self._doc()["model"]
        return ModelFacts(
            file=m["file"], sha256=m["sha256"], size_bytes=m["size_bytes"],
            ir_version=m["ir_version"],
            opsets=tuple(Opset(o["domain"], o["version"]) for o in m["opsets"]),
            producer_name=m["producer_name"], producer_version=m["producer_version"],
            node_count=m["node_count"], q_count=m["q_count"], dq_count=m["dq_count"],
            initializer_count=m["initializer_count"])

    @property
    def sha256(self) -> str:
        """Lowercase hex sha256 of the model bytes."""
        return self._doc()["model"]["sha256"]

    @property
    def counts(self) -> Counts:
        """Counts by severity, rule, unit kind and operator."""
        s = self._doc()["summary"]
        return Counts(errors=s["errors"], warnings=s["warnings"], infos=s["infos"],
                      by_rule=dict(s["by_rule"]), units_by_kind=dict(s["units_by_kind"]),
                      units_by_op=dict(s["units_by_op"]), errors_by_op=dict(s["errors_by_op"]),
                      qdq_edges=s["qdq_edges"], owned_qdq_edges=s["owned_qdq_edges"],
                      causes=s.get("causes", 0))

    @property
    def units(self) -> List[Unit]:
        """The ownership map: which unit (operator or pattern) owns which nodes and Q/DQ."""
        return [Unit(id=u["id"], kind=u["kind"], op_type=u["op_type"], mode=u["mode"],
                     nodes=tuple(u["nodes"]), input_qdq=tuple(u["input_qdq"]),
                     output_qdq=tuple(u["output_qdq"]))
                for u in self._doc()["units"]]

    @property
    def targets(self) -> List[TargetResult]:
        """The chip targets requested with ``check(..., target=...)``, one per chip (empty
        without targets). Their findings (rules ``target/*``) are in :attr:`findings`."""
        return [TargetResult(chip=t["chip"], name=t["name"], verdict=t["verdict"],
                             errors=t["errors"], notes=t["notes"],
                             blocking=tuple(TargetBlocker(rule=b["rule"], op_type=b["op_type"],
                                                          node=b["node"])
                                            for b in t["blocking"]),
                             source=t["source"], doc_version=t["doc_version"])
                for t in self._doc().get("targets", [])]

    @property
    def check_value(self) -> bool:
        """Whether the value checks ([cv] rules, spec 2.5) ran."""
        return bool(self._doc()["check_value"])

    @property
    def tool_version(self) -> str:
        """Version of the checker that produced the report."""
        return self._doc()["tool"]["version"]

    @property
    def rule_set_version(self) -> str:
        """Rule-set version the report was produced with."""
        return self._doc()["rule_set_version"]

    # ---- renderings (core/src/render*.cc)
    def summary(self, explain: bool = False) -> str:
        """The text report of ``axqc check``: headline, model facts, every finding group with its
        first locations and the fix; ``explain`` adds the ownership map."""
        return self._native.to_text(explain, False)

    def to_text(self, explain: bool = False, color: bool = False) -> str:
        """The text report of ``axqc check`` (``color``: ANSI colours)."""
        return self._native.to_text(explain, color)

    def to_json(self, indent: int = 2) -> str:
        """JSON text (schema ``axqc.report/v1``): the model's entry of ``reports`` in ``axqc check
        --format json`` (which indents it by four more spaces); ``indent=-1`` gives one line."""
        return self._native.to_json(indent)

    def to_sarif(self) -> str:
        """SARIF 2.1.0 (GitHub code scanning) of this report; :func:`axqc.to_sarif` takes
        several."""
        return _native.render_sarif([self._native])

    def to_junit(self) -> str:
        """JUnit XML of this report (one testcase per rule); :func:`axqc.to_junit` takes
        several."""
        return _native.render_junit([self._native])

    def to_github(self) -> str:
        """GitHub Actions workflow commands (annotations) of this report."""
        return _native.render_github([self._native])

    def to_gitlab(self) -> str:
        """GitLab Code Quality JSON of this report (``axqc check --format gitlab``);
        :func:`axqc.to_gitlab` takes several."""
        return _native.render_gitlab([self._native])

    def raise_for_verdict(self) -> "Report":
        """Raises :class:`NonConformantError` when the verdict is ``non_conformant``; returns the
        report otherwise."""
        if self._native.verdict == Verdict.NON_CONFORMANT.value:
            raise NonConformantError(self)
        return self

    def _repr_html_(self) -> str:
        """A compact summary for notebooks (Jupyter, VS Code): the verdict, the finding groups
        with their first locations, the chip targets. Every name is escaped: node names come
        from the model. The HTML report with graph views is ``axqc check --format html``."""
        esc = html.escape
        colors = {"conformant": "#1a7f37", "non_conformant": "#cf222e",
                  "not_applicable": "#6e7781"}
        verdict = self.verdict.value
        counts = self.counts
        out = [
            '<div class="axqc-report" style="font-family:sans-serif;font-size:13px">',
            f'<div><b>{esc(self.file)}</b>: <span style="color:#fff;background:'
            f'{colors.get(verdict, "#6e7781")};padding:1px 6px;border-radius:3px">'
            f'{esc(verdict.upper())}</span> {counts.errors} error'
            f'{"" if counts.errors == 1 else "s"}, {counts.warnings} warning'
            f'{"" if counts.warnings == 1 else "s"}, {counts.infos} info</div>',
        ]
        if self.groups:
            out.append('<table style="border-collapse:collapse;margin-top:4px">'
                       '<tr style="text-align:left"><th>severity</th><th>rule</th><th>count</th>'
                       '<th>first location</th><th>message</th></tr>')
            for g in self.groups:
                first = g.first[0] if g.first else None
                where = ""
                if first is not None:
                    where = ", ".join(first.nodes[:2] or first.tensors[:2])
                message = first.message if first is not None else g.summary
                out.append(
                    f'<tr><td>{esc(g.severity.value)}</td><td><code>{esc(g.rule)}</code></td>'
                    f'<td style="text-align:right">{g.count}</td><td><code>{esc(where)}</code></td>'
                    f'<td>{esc(message)}</td></tr>')
            out.append('</table>')
        for t in self.targets:
            blocking = ", ".join(f"{b.op_type} '{b.node}'" for b in t.blocking[:3])
            out.append(f'<div>{esc(t.name)}: {esc(t.verdict)}'
                       f'{" (" + esc(blocking) + ")" if blocking else ""}</div>')
        out.append('</div>')
        return "".join(out)

    def __repr__(self) -> str:
        return f"<axqc.Report {self._native.headline()}>"

    def __str__(self) -> str:
        return self.summary()

    def __reduce__(self):
        return (_report_from_state, (self._native.to_json(-1), self.remote))


def _report_from_state(text: str, remote: Optional[RemoteInfo]) -> Report:
    return Report(_native.report_from_json(text), remote)


# ------------------------------------------------------------------------------------------------
# Model inputs


def _is_model_proto(obj: Any) -> bool:
    descriptor = getattr(obj, "DESCRIPTOR", None)
    return (getattr(descriptor, "full_name", None) == "onnx.ModelProto"
            and callable(getattr(obj, "SerializeToString", None)))


def _model_input(model: Any) -> Tuple[Optional[str], Optional[bytes]]:
    """(path, None) or (None, serialized bytes)."""
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        return (os.fsdecode(path) if isinstance(path, bytes) else path), None
    if isinstance(model, bytes):
        return None, model
    if isinstance(model, (bytearray, memoryview)):
        return None, bytes(model)
    if _is_model_proto(model):
        try:
            return None, model.SerializeToString()
        except ValueError as e:  # over protobuf's 2 GiB limit
            raise InputError(
                f"the ModelProto cannot be serialized ({e}): save it with external data "
                "(onnx.save_model(..., save_as_external_data=True)) and check the path") from None
    raise TypeError("axqc: expected a model path (str or os.PathLike), its bytes or an "
                    f"onnx.ModelProto, got {type(model).__module__}.{type(model).__qualname__}")


def _check_options(check_value: Any, max_locations: Any) -> Tuple[bool, int]:
    if not isinstance(max_locations, int) or isinstance(max_locations, bool):
        raise TypeError(f"max_locations must be an int, got {type(max_locations).__name__}")
    if max_locations < 0:
        raise ValueError(f"max_locations must be >= 0, got {max_locations}")
    return bool(check_value), max_locations


def _targets(target: Union[None, str, Iterable[str]]) -> List[str]:
    if target is None:
        return []
    if isinstance(target, str):
        return [target]
    out = list(target)
    for t in out:
        if not isinstance(t, str):
            raise TypeError(f"target must be a chip name or names, got {type(t).__name__}")
    return out


# Bound of a Pulsar2 build configuration (axqc/pulsar2.h kMaxPulsar2ConfigBytes); one byte more is
# read so that the checker reports a larger file as pulsar2/config-invalid.
_PULSAR2_CONFIG_MAX = 1 << 20


def _pulsar2_config(config: Union[None, str, "os.PathLike[str]", Mapping[str, Any]]
                    ) -> Optional[str]:
    if config is None:
        return None
    if isinstance(config, Mapping):
        return json.dumps(config)
    if isinstance(config, (str, os.PathLike)):
        with open(config, "rb") as f:
            return f.read(_PULSAR2_CONFIG_MAX + 1).decode("utf-8", errors="replace")
    raise TypeError("pulsar2_config must be a path or a mapping, got "
                    f"{type(config).__name__}")


def pulsar2_config(model: Union[str, "os.PathLike[str]"], target: str = "ax650") -> Dict[str, Any]:
    """A Pulsar2 build configuration for a QDQ model file (``axqc pulsar2-config``,
    docs/pulsar2.md): ``model_type`` QuantONNX, ``target_hardware``, the model's inputs, its
    16-bit regions as ``quant.layer_configs`` and its Conv bias type; nothing the model does not
    decide. Raises :class:`InputError` for a model that cannot be read and ``ValueError`` for an
    unknown chip."""
    try:
        text = _native.pulsar2_config(os.fspath(model), target)
    except _native.InputError as e:
        raise InputError(str(e)) from None
    out: Dict[str, Any] = json.loads(text)
    return out


def check(model: ModelInput, *, check_value: bool = False, max_locations: int = 5,
          raise_on_error: bool = False, name: Optional[str] = None,
          target: Union[None, str, Iterable[str]] = None,
          pulsar2_config: Union[None, str, "os.PathLike[str]", Mapping[str, Any]] = None
          ) -> Report:
    """Checks a quantized ONNX QDQ model against the ax quant spec, in this process.

    ``model`` is a path (``str`` or ``os.PathLike``; required for models with external data,
    which is resolved next to the model file only), the model's bytes (``bytes``, ``bytearray``,
    ``memoryview``) or an ``onnx.ModelProto`` (serialized for the check; the checker never shares
    protobuf objects with the ``onnx`` package).

    ``check_value`` also runs the value checks ([cv] rules, spec 2.5; ``axqc check -c``);
    ``max_locations`` bounds the locations listed per finding group (``findings`` always has
    every finding). ``raise_on_error`` raises :class:`NonConformantError` (carrying the report)
    when the verdict is ``non_conformant``, like ``onnx.checker.check_model`` raises. ``name`` is
    the display name of an in-memory model (default ``"inline.onnx"``) or replaces the path in
    the report. ``target`` names chip targets (``"ax650"``, ``"ax620e"``, ..., aliases, or
    ``"all"``; one name or several): the model is also judged against each chip's documented NPU
    operator table (``axqc check --target``, docs/targets.md): ``target/*`` findings and
    :attr:`Report.targets`; the verdict stays the spec's. An unknown chip is a ``ValueError``.
    ``pulsar2_config`` is a Pulsar2 build configuration (a path to ``config.json``, or the
    configuration as a mapping) judged against the model and its documented schema (``axqc check
    --pulsar2-config``, docs/pulsar2.md): ``pulsar2/*`` findings; the verdict stays the spec's.

    Raises :class:`InputError` when the model cannot be checked (not ONNX, unreadable, unsafe or
    missing external data). The GIL is released while the check runs: checks from several
    threads run in parallel.
    """
    cv, locations = _check_options(check_value, max_locations)
    targets = _targets(target)
    config = _pulsar2_config(pulsar2_config)
    path, data = _model_input(model)
    try:
        if path is not None:
            native = _native.check_file(path, cv, locations, name or "", targets, config)
        else:
            assert data is not None
            native = _native.check_bytes(data, name if name is not None else INLINE_NAME, cv,
                                         locations, targets, config)
    except _native.InputError as e:
        raise InputError(str(e)) from None
    report = Report(native)
    if raise_on_error:
        report.raise_for_verdict()
    return report


def rules() -> List[Rule]:
    """The rule catalog of this checker, in catalog order (``axqc rules``)."""
    return [Rule._from(r) for r in _native.rules()]


def _errors_list(errors: Union[None, Mapping[str, str], Iterable[Tuple[str, str]]]
                 ) -> List[Tuple[str, str]]:
    if errors is None:
        return []
    if isinstance(errors, Mapping):
        return [(str(k), str(v)) for k, v in errors.items()]
    return [(str(k), str(v)) for k, v in errors]


def _natives(reports: Iterable[Report]) -> List["_native.NativeReport"]:
    out = []
    for r in reports:
        if not isinstance(r, Report):
            raise TypeError(f"expected axqc.Report, got {type(r).__name__}")
        out.append(r._native)
    return out


def to_junit(reports: Iterable[Report],
             errors: Union[None, Mapping[str, str], Iterable[Tuple[str, str]]] = None) -> str:
    """JUnit XML of several reports, one ``<testsuite>`` per model (``axqc check --format junit``).
    ``errors`` maps models that could not be checked to the reason (a testsuite with an
    ``<error>`` each)."""
    return _native.render_junit(_natives(reports), _errors_list(errors))


def to_sarif(reports: Iterable[Report],
             errors: Union[None, Mapping[str, str], Iterable[Tuple[str, str]]] = None) -> str:
    """SARIF 2.1.0 of several reports, one run (``axqc check --format sarif``). ``errors``: as
    :func:`to_junit` (tool execution notifications)."""
    return _native.render_sarif(_natives(reports), _errors_list(errors))


def to_github(reports: Iterable[Report],
              errors: Union[None, Mapping[str, str], Iterable[Tuple[str, str]]] = None) -> str:
    """GitHub Actions workflow commands of several reports (``axqc check --format github``)."""
    return _native.render_github(_natives(reports), _errors_list(errors))


def to_gitlab(reports: Iterable[Report],
              errors: Union[None, Mapping[str, str], Iterable[Tuple[str, str]]] = None) -> str:
    """GitLab Code Quality JSON of several reports (``axqc check --format gitlab``): one issue per
    finding with a fingerprint unique per finding and stable across runs. ``errors``: as
    :func:`to_junit` (a ``blocker`` issue each)."""
    return _native.render_gitlab(_natives(reports), _errors_list(errors))
