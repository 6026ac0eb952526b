"""Client of axqc-server (the gRPC service ``axqc.v1.Checker``, proto/axqc/v1/axqc.proto).

Built on grpcio with the message classes and stubs generated from proto/ at build time
(``axqc.v1.axqc_pb2``, ``axqc.v1.axqc_pb2_grpc``). ``check`` works like ``axqc check --server``:
it hashes the model, asks the server for a stored report of that hash (``GetReport`` with
``record_check``, so a hit counts as this check, with its labels) and uploads the model only when
the server does not know it (``Upload``).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import os
import random
import re
import threading
import time
from dataclasses import dataclass
from typing import (Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional,
                    Tuple, TypeVar, Union)

from ._errors import InputError, ServiceError
from ._report import (INLINE_NAME, ModelInput, RemoteInfo, Report, Rule, _check_options,
                      _model_input, _pulsar2_config, _targets)
from ._version import __version__

_CHUNK = 1 << 20  # Upload chunk, as the command line
_MAX_MESSAGE = 1 << 30  # big non-conformant reports
# Status codes that are about the request or the model (the command line's "input error", exit 2);
# every other failure means the server gave no verdict (ServiceError, exit 4).
_INPUT_CODES = {"INVALID_ARGUMENT", "NOT_FOUND", "PERMISSION_DENIED", "FAILED_PRECONDITION",
                "OUT_OF_RANGE"}
_CACHE_NAMES = {0: "unspecified", 1: "miss", 2: "memory_hit", 3: "store_hit", 4: "shared"}
_WINDOW = re.compile(r"^([0-9]{1,9})([smhdw])$")
_WINDOW_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}

T = TypeVar("T")


def _grpc_modules() -> Tuple[Any, Any, Any]:
    try:
        import grpc

        from .v1 import axqc_pb2, axqc_pb2_grpc
    except ImportError as e:
        raise ImportError(_missing_module_message("axqc.Client", "the grpcio and protobuf",
                                                  "grpcio protobuf",
                                                  "python3-grpcio python3-protobuf", e)) from e
    return grpc, axqc_pb2, axqc_pb2_grpc


def _missing_module_message(what: str, packages: str, pip_names: str, debian_names: str,
                            error: ImportError) -> str:
    """Says which interpreter lacks the packages and how to install them for that one: Debian's
    packages serve only Debian's /usr/bin/python3 (and venvs made with --system-site-packages);
    pyenv, conda and plain venvs need pip in that interpreter."""
    import sys  # noqa: PLC0415

    exe = sys.executable or "python3"
    debian = exe.startswith("/usr/bin/python3") and sys.prefix == sys.base_prefix
    how = (f"apt-get install {debian_names}" if debian else
           f"{exe} -m pip install {pip_names} (this interpreter is not Debian's /usr/bin/python3, "
           f"so Debian's {debian_names} do not reach it"
           + ("; or recreate the virtual environment with --system-site-packages"
              if sys.prefix != sys.base_prefix else "") + ")")
    return (f"{what} needs {packages} Python packages, which {exe} cannot import ({error}): "
            f"{how}")


def _read_pem(value: Union[None, str, bytes, "os.PathLike[str]"], what: str) -> Optional[bytes]:
    if value is None:
        return None
    if isinstance(value, bytes):
        return value
    try:
        with open(value, "rb") as f:
            return f.read()
    except OSError as e:
        raise InputError(f"cannot read the {what} {os.fspath(value)}: {e.strerror}") from None


def _backoff(attempt: int) -> float:
    """Seconds before retry ``attempt`` (0-based): 0.2 s * 2^attempt, at most 5 s, +-20 %."""
    return min(0.2 * (2 ** min(attempt, 10)), 5.0) * random.uniform(0.8, 1.2)


def parse_window(text: str) -> int:
    """``"7d"``, ``"24h"``, ``"30m"``, ``"90s"``, ``"2w"`` -> seconds (as ``axqc stats
    --since``). A bare number is refused: it could mean days as well as seconds."""
    m = _WINDOW.match(text)
    if not m or int(m.group(1)) <= 0:
        raise ValueError(f"expected a duration with a unit, like 2w, 7d, 24h, 30m or 90s, "
                         f"got {text!r}")
    return int(m.group(1)) * _WINDOW_SECONDS[m.group(2)]


@dataclass(frozen=True)
class VerdictCounts:
    """Counts of history rows per verdict (GetStats)."""

    requests: int
    conformant: int
    non_conformant: int
    not_applicable: int
    invalid_input: int
    pass_rate: Optional[float]
    """conformant / (conformant + non_conformant); ``None`` without a decided request."""


@dataclass(frozen=True)
class RuleCount:
    """A rule with how often it failed: ``requests`` with at least one error finding of it, and
    its error ``findings`` over those requests."""

    rule: str
    requests: int
    findings: int


@dataclass(frozen=True)
class Stats:
    """Pass rates from the server's request history (``axqc stats``)."""

    since: Optional[_dt.datetime]
    """Start of the window (UTC), ``None`` for the beginning of the history."""
    until: _dt.datetime
    total: VerdictCounts
    groups: Dict[str, VerdictCounts]
    """Counts per value of the ``group_by`` label (``""`` for requests without it)."""
    top_failing_rules: List[RuleCount]


@dataclass(frozen=True)
class Catalog:
    """The rule catalog of a server (ListRules)."""

    rule_set_version: str
    tool_version: str
    rules: List[Rule]


class Client:
    """A connection to axqc-server.

    ``target`` is ``"host:port"``. ``token`` is the bearer token (default: the environment
    variable ``AXQC_TOKEN``, like the command line). TLS: ``tls=True`` verifies the server
    against the system's CA certificates; ``ca`` (a CA certificate: path or PEM bytes) implies
    TLS; ``cert`` and ``key`` add a client certificate (mutual TLS). ``timeout`` is the deadline
    of one call in seconds; a call that finds the server UNAVAILABLE is retried up to ``retries``
    times with exponential backoff. Thread-safe; use it as a context manager or call
    :meth:`close`.
    """

    def __init__(self, target: str, *, token: Optional[str] = None, tls: bool = False,
                 ca: Union[None, str, bytes, "os.PathLike[str]"] = None,
                 cert: Union[None, str, bytes, "os.PathLike[str]"] = None,
                 key: Union[None, str, bytes, "os.PathLike[str]"] = None,
                 timeout: float = 600.0, retries: int = 4) -> None:
        grpc, pb, pb_grpc = _grpc_modules()
        self._grpc = grpc
        self._pb = pb
        self.target = target
        self.timeout = float(timeout)
        self.retries = int(retries)
        if token is None:
            token = os.environ.get("AXQC_TOKEN") or None
        self._token = token
        if (cert is None) != (key is None):
            raise ValueError("mutual TLS needs both cert and key")
        self.tls = bool(tls) or ca is not None or cert is not None
        options = [("grpc.max_receive_message_length", _MAX_MESSAGE),
                   ("grpc.max_send_message_length", _MAX_MESSAGE),
                   ("grpc.primary_user_agent", f"axqc-python/{__version__}")]
        if self.tls:
            creds = grpc.ssl_channel_credentials(
                root_certificates=_read_pem(ca, "CA certificate"),
                private_key=_read_pem(key, "client key"),
                certificate_chain=_read_pem(cert, "client certificate"))
            self._channel = grpc.secure_channel(target, creds, options)
        else:
            self._channel = grpc.insecure_channel(target, options)
        self._stub = pb_grpc.CheckerStub(self._channel)
        # grpc.health.v1.Health/Check, with the two one-field messages encoded here (a generated
        # health_pb2 would clash with grpcio-health-checking's in protobuf's descriptor pool).
        self._health = self._channel.unary_unary(
            "/grpc.health.v1.Health/Check",
            request_serializer=_encode_health_request, response_deserializer=_decode_health)
        self._closed = threading.Event()

    # ---- lifecycle
    def close(self) -> None:
        """Closes the channel."""
        if not self._closed.is_set():
            self._closed.set()
            self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<axqc.Client {self.target}{' tls' if self.tls else ''}>"

    # ---- plumbing
    def _metadata(self) -> List[Tuple[str, str]]:
        return [("authorization", f"Bearer {self._token}")] if self._token else []

    def _call(self, attempt: Callable[[float, List[Tuple[str, str]]], Tuple[T, Any]]
              ) -> Tuple[T, str]:
        """Runs ``attempt(timeout, metadata) -> (response, call)``, retrying UNAVAILABLE.
        Returns the response and the server's request id; raises the mapped error."""
        grpc = self._grpc
        for i in range(self.retries + 1):
            try:
                response, call = attempt(self.timeout, self._metadata())
                return response, _request_id(call)
            except grpc.RpcError as e:
                code = e.code()
                request_id = _request_id(e)
                # An UNAVAILABLE without the server's request id never reached axqc-server.
                if code == grpc.StatusCode.UNAVAILABLE and i < self.retries:
                    time.sleep(_backoff(i))
                    continue
                raise self._error(e, request_id, attempts=i + 1) from None
        raise AssertionError("unreachable")

    def _error(self, e: Any, request_id: str, attempts: int) -> Exception:
        grpc = self._grpc
        code = e.code()
        name = code.name if code is not None else "UNKNOWN"
        msg = f"{name}: {e.details()}"
        if request_id:
            msg += f" (request id {request_id})"
        if code == grpc.StatusCode.UNAUTHENTICATED:
            msg = (f"the server {self.target} refused the request: {msg}; "
                   + ("it needs a bearer token: pass token= or set AXQC_TOKEN" if not self._token
                      else "check the token"))
        elif code == grpc.StatusCode.UNAVAILABLE and not request_id:
            msg = (f"cannot reach axqc-server at {self.target} (after {attempts} attempt"
                   f"{'' if attempts == 1 else 's'}): {msg}")
        elif code == grpc.StatusCode.DEADLINE_EXCEEDED:
            msg += f" (timeout {self.timeout:g} s; raise it with Client(timeout=...))"
        if name in _INPUT_CODES:
            return InputError(msg, code=name, request_id=request_id or None)
        return ServiceError(msg, code=name, request_id=request_id or None)

    def _options(self, check_value: bool, max_locations: int,
                 target: Union[None, str, Iterable[str]] = None,
                 pulsar2_config: Union[None, str, "os.PathLike[str]", Mapping[str, Any]] = None
                 ) -> Any:
        cv, locations = _check_options(check_value, max_locations)
        options = self._pb.CheckOptions(check_value=cv, max_locations=min(locations, 1000),
                                        format=self._pb.REPORT_FORMAT_JSON,
                                        targets=_targets(target))
        config = _pulsar2_config(pulsar2_config)
        if config is not None:
            options.pulsar2_config = config
        return options

    def _report(self, response: Any, request_id: str, uploaded: bool) -> Report:
        report = Report.from_json(response.report_json)
        report.remote = RemoteInfo(server=self.target, request_id=request_id,
                                   cache=_CACHE_NAMES.get(response.cache, str(response.cache)),
                                   uploaded=uploaded)
        return report

    # ---- checks
    def check(self, model: ModelInput, *, labels: Optional[Mapping[str, str]] = None,
              check_value: bool = False, max_locations: int = 5, name: Optional[str] = None,
              record: bool = True, raise_on_error: bool = False,
              target: Union[None, str, Iterable[str]] = None,
              full_upload: bool = False,
              pulsar2_config: Union[None, str, "os.PathLike[str]", Mapping[str, Any]] = None
              ) -> Report:
        """Checks a model on the server, like ``axqc check --server``: hash first, upload on a
        miss.

        ``model`` is a path, bytes or an ``onnx.ModelProto`` (as :func:`axqc.check`). A path to
        a model with external data files sends them with it (found beside it): by default only
        the byte ranges of the data files that the check reads (a ranged upload, docs/api.md);
        ``full_upload=True`` sends the files whole, after a lookup by the bundle hash of the model
        and its data files. Either way the report's ``sha256`` is the key of the graph file and
        the bytes the check read. ``labels`` are recorded in the request history
        (:meth:`stats`), e.g. ``{"project": "detector"}``. ``record=False`` makes the hash lookup
        a plain lookup that is not counted as a check (``--no-record``). ``report.remote`` says
        whether the model was uploaded and where the report came from. ``target`` names chip
        targets as in :func:`axqc.check` (judged by the server; part of its cache key), and
        ``pulsar2_config`` a Pulsar2 build configuration (a path or a mapping, as in
        :func:`axqc.check`; sent as text of at most 1 MiB, its sha256 part of the cache key).
        Raises :class:`InputError` (the server refused the model or an option),
        :class:`ServiceError` (no verdict), and with ``raise_on_error`` :class:`NonConformantError`.
        """
        options = self._options(check_value, max_locations, target, pulsar2_config)
        path, data = _model_input(model)
        data_files: List[Tuple[str, str, int, str]] = []
        graph_sha = ""
        if path is not None:
            sha, size = _hash_file(path)
            graph_sha = sha
            if not full_upload:
                ranged = _local_data_files(path, hash_files=False)
                if ranged:
                    return self._check_ranged(path, name if name is not None else path, size,
                                              sha, ranged, options, dict(labels or {}),
                                              raise_on_error)
            data_files = _local_data_files(path)
            if data_files:
                sha = _bundle_sha256(sha, data_files)
            display = name if name is not None else path
        else:
            assert data is not None
            sha, size = hashlib.sha256(data).hexdigest(), len(data)
            display = name if name is not None else INLINE_NAME
        labels = dict(labels or {})
        pb = self._pb

        get = pb.GetReportRequest(sha256=sha, options=options, name=display, record_check=record,
                                  labels=labels)
        report = None
        try:
            response, request_id = self._call(
                lambda timeout, md: self._stub.GetReport.with_call(get, timeout=timeout,
                                                                   metadata=md))
            report = self._report(response, request_id, uploaded=False)
        except InputError as e:
            if e.code != "NOT_FOUND":
                raise
        if report is None:
            # Unknown to the server: stream the model.
            metadata = pb.UploadMetadata(
                file_name=display, labels=labels, options=options, size_bytes=size,
                sha256=graph_sha or sha,
                data_files=[pb.UploadDataFile(name=n, size_bytes=sz, sha256=h)
                            for n, _, sz, h in data_files])

            def requests() -> Iterator[Any]:
                yield pb.UploadRequest(metadata=metadata)
                for chunk in (_file_chunks(path) if path is not None else _bytes_chunks(data)):
                    yield pb.UploadRequest(chunk=chunk)
                for index, (_, file_path, _, _) in enumerate(data_files):
                    for chunk in _file_chunks(file_path):
                        yield pb.UploadRequest(
                            data_chunk=pb.UploadDataChunk(file=index, data=chunk))

            response, request_id = self._call(
                lambda timeout, md: self._stub.Upload.with_call(requests(), timeout=timeout,
                                                                metadata=md))
            report = self._report(response, request_id, uploaded=True)
        if raise_on_error:
            report.raise_for_verdict()
        return report

    def _check_ranged(self, path: str, display: str, size: int, graph_sha: str,
                      files: List[Tuple[str, str, int, str]], options: Any,
                      labels: Dict[str, str], raise_on_error: bool) -> Report:
        """A ranged upload: the graph file and the data files' sizes, then the byte ranges the
        server names in ``CheckResponse.external_ranges``, until it answers with a report."""
        pb = self._pb
        ranges: List[List[Tuple[int, int]]] = [[] for _ in files]
        for _ in range(_RANGED_ROUNDS):
            metadata = pb.UploadMetadata(
                file_name=display, labels=labels, options=options, size_bytes=size,
                sha256=graph_sha, ranged_data=True,
                data_files=[pb.UploadDataFile(
                    name=n, size_bytes=sz,
                    ranges=[pb.ByteRange(offset=o, length=ln) for o, ln in ranges[i]])
                    for i, (n, _, sz, _) in enumerate(files)])
            sent = [list(r) for r in ranges]

            def requests() -> Iterator[Any]:
                yield pb.UploadRequest(metadata=metadata)
                for chunk in _file_chunks(path):
                    yield pb.UploadRequest(chunk=chunk)
                for index, (_, file_path, _, _) in enumerate(files):
                    if not sent[index]:
                        continue
                    with open(file_path, "rb") as f:
                        for offset, length in sent[index]:
                            f.seek(offset)
                            while length > 0:
                                chunk = f.read(min(length, _CHUNK))
                                if not chunk:
                                    raise ServiceError(f"{file_path}: shorter than the ranges "
                                                       "the server asked for", code="UNKNOWN")
                                length -= len(chunk)
                                yield pb.UploadRequest(
                                    data_chunk=pb.UploadDataChunk(file=index, data=chunk))

            response, request_id = self._call(
                lambda timeout, md: self._stub.Upload.with_call(requests(), timeout=timeout,
                                                                metadata=md))
            if not response.external_ranges:
                report = self._report(response, request_id, uploaded=True)
                if raise_on_error:
                    report.raise_for_verdict()
                return report
            wanted: List[List[Tuple[int, int]]] = [[] for _ in files]
            for fr in response.external_ranges:
                index = next((i for i, f in enumerate(files) if f[0] == fr.name), None)
                if index is None:
                    raise ServiceError(f"the server asked for ranges of data file "
                                       f"{fr.name[:200]!r}, which was not sent", code="UNKNOWN")
                wanted[index] = [(r.offset, r.length) for r in fr.ranges]
                end = 0
                for offset, length in wanted[index]:
                    if length <= 0 or offset < end or offset + length > files[index][2]:
                        raise ServiceError("the server asked for byte ranges of "
                                           f"{fr.name[:200]!r} that are not valid", code="UNKNOWN")
                    end = offset + length + 1
            if wanted == ranges:
                break
            ranges = wanted
        raise ServiceError(f"{path}: the server kept asking for other byte ranges of the external "
                           "data files; try full_upload=True", code="UNKNOWN")

    def check_ref(self, ref: str, *, labels: Optional[Mapping[str, str]] = None,
                  check_value: bool = False, max_locations: int = 5,
                  expected_sha256: Optional[str] = None, name: Optional[str] = None,
                  raise_on_error: bool = False,
                  target: Union[None, str, Iterable[str]] = None,
                  pulsar2_config: Union[None, str, "os.PathLike[str]", Mapping[str, Any]] = None
                  ) -> Report:
        """Checks a model the server reads itself (``axqc check --ref``): a path under its
        allowed roots (``file://`` prefix optional) or an http(s) URL of an allowlisted host.
        ``expected_sha256`` pins the exact bytes; ``target`` and ``pulsar2_config`` as in
        :meth:`check`."""
        pb = self._pb
        req = pb.CheckRequest(name=name if name is not None else ref, labels=dict(labels or {}),
                              options=self._options(check_value, max_locations, target,
                                                    pulsar2_config),
                              expected_sha256=expected_sha256 or "")
        if ref.startswith(("http://", "https://")):
            req.url = ref
        else:
            req.path = ref[len("file://"):] if ref.startswith("file://") else ref
        response, request_id = self._call(
            lambda timeout, md: self._stub.Check.with_call(req, timeout=timeout, metadata=md))
        report = self._report(response, request_id, uploaded=False)
        if raise_on_error:
            report.raise_for_verdict()
        return report

    def get_report(self, sha256: str, *, check_value: bool = False, max_locations: int = 5,
                   name: str = "",
                   target: Union[None, str, Iterable[str]] = None,
                   pulsar2_config: Union[None, str, "os.PathLike[str]", Mapping[str, Any]] = None
                   ) -> Optional[Report]:
        """The stored report of the model with this sha256 (checked before with the same
        options under the server's current rule set), or ``None`` when the server does not know
        it. A plain lookup: not recorded as a check."""
        req = self._pb.GetReportRequest(sha256=sha256.lower(),
                                        options=self._options(check_value, max_locations,
                                                              target, pulsar2_config),
                                        name=name)
        try:
            response, request_id = self._call(
                lambda timeout, md: self._stub.GetReport.with_call(req, timeout=timeout,
                                                                   metadata=md))
        except InputError as e:
            if e.code == "NOT_FOUND":
                return None
            raise
        return self._report(response, request_id, uploaded=False)

    # ---- service information
    def stats(self, *, since: Union[None, str, _dt.timedelta, _dt.datetime] = None,
              until: Optional[_dt.datetime] = None, group_by: Optional[str] = None,
              labels: Optional[Mapping[str, str]] = None,
              top_rules: Optional[int] = None) -> Stats:
        """Pass rates from the request history (``axqc stats``). ``since``: a window like
        ``"7d"`` / ``"24h"`` / a ``timedelta`` ending at ``until`` (default now), or a
        ``datetime``; ``None`` is the whole history. ``group_by`` a label key; ``labels`` only
        requests with all these labels; ``top_rules`` how many failing rules (default 10)."""
        pb = self._pb
        req = pb.GetStatsRequest(group_by=group_by or "", label_filter=dict(labels or {}),
                                 top_rules=top_rules or 0)
        if isinstance(since, str):
            req.window.seconds = parse_window(since)
        elif isinstance(since, _dt.timedelta):
            if since.total_seconds() <= 0:
                raise ValueError("since must be a positive duration")
            req.window.FromTimedelta(since)
        elif isinstance(since, _dt.datetime):
            req.since.FromNanoseconds(int(since.timestamp() * 1e9))
        elif since is not None:
            raise TypeError("since: expected a duration like '7d', a timedelta or a datetime")
        if until is not None:
            req.until.FromNanoseconds(int(until.timestamp() * 1e9))
        response, _ = self._call(
            lambda timeout, md: self._stub.GetStats.with_call(req, timeout=timeout, metadata=md))

        def counts(c: Any) -> VerdictCounts:
            return VerdictCounts(requests=c.requests, conformant=c.conformant,
                                 non_conformant=c.non_conformant,
                                 not_applicable=c.not_applicable, invalid_input=c.invalid_input,
                                 pass_rate=c.pass_rate if c.HasField("pass_rate") else None)

        def when(ts: Any) -> _dt.datetime:
            return _dt.datetime.fromtimestamp(ts.seconds + ts.nanos / 1e9, _dt.timezone.utc)

        return Stats(
            since=when(response.since) if response.HasField("since") else None,
            until=when(response.until), total=counts(response.total),
            groups={g.label_value: counts(g.counts) for g in response.groups},
            top_failing_rules=[RuleCount(r.rule, r.requests, r.findings)
                               for r in response.top_failing_rules])

    def rules(self) -> Catalog:
        """The server's rule catalog and versions (``axqc rules --server``)."""
        response, _ = self._call(
            lambda timeout, md: self._stub.ListRules.with_call(self._pb.ListRulesRequest(),
                                                               timeout=timeout, metadata=md))
        severity = {1: "error", 2: "warn", 3: "info"}
        return Catalog(
            rule_set_version=response.rule_set_version, tool_version=response.tool_version,
            rules=[Rule._from({"id": r.id, "severity": severity.get(r.severity, "error"),
                               "check_value": r.check_value, "section": r.section,
                               "summary": r.summary, "fix": r.fix}) for r in response.rules])

    def health(self, service: str = "") -> str:
        """The server's health (``axqc health``): ``"SERVING"``, ``"NOT_SERVING"``, ... for the
        whole server (``service=""``) or one service (``"axqc.v1.Checker"``)."""
        response, _ = self._call(
            lambda timeout, md: self._health.with_call(service, timeout=timeout, metadata=md))
        return response


# ------------------------------------------------------------------------------------------------
# Helpers


def _request_id(call: Any) -> str:
    try:
        for k, v in call.initial_metadata() or ():
            if k == "x-request-id":
                return v if isinstance(v, str) else v.decode("ascii", "replace")
    except Exception:  # a call that failed before the server answered has no metadata
        pass
    return ""


def _hash_file(path: str) -> Tuple[str, int]:
    """sha256 and size of a file, read in chunks (models can be large)."""
    if not os.path.isfile(path):
        raise InputError(f"{path}: not a regular file")
    h = hashlib.sha256()
    size = 0
    try:
        with open(path, "rb") as f:
            while True:
                chunk = f.read(_CHUNK)
                if not chunk:
                    break
                h.update(chunk)
                size += len(chunk)
    except OSError as e:
        raise InputError(f"{path}: cannot read the file: {e.strerror}") from None
    return h.hexdigest(), size


# Field numbers of onnx.proto that lead to TensorProto.external_data, per message type.
_ONNX_MESSAGES: Dict[str, Dict[int, str]] = {
    "model": {7: "graph", 25: "function"},
    "graph": {1: "node", 5: "tensor", 15: "sparse"},
    "function": {7: "node"},
    "node": {5: "attribute"},
    "attribute": {5: "tensor", 6: "graph", 10: "tensor", 11: "graph", 22: "sparse",
                  23: "sparse"},
    "sparse": {1: "tensor", 2: "tensor"},
    "tensor": {13: "entry"},
    "entry": {},
}
_MAX_DATA_FILES = 32  # the server's limit (isolate/protocol.h kMaxDataFiles)


def _wire_varint(buf: memoryview, pos: int, end: int) -> Tuple[int, int]:
    value = shift = 0
    while pos < end and shift < 64:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
    raise ValueError("truncated varint")


def _external_data_locations(model: memoryview) -> List[str]:
    """The distinct ``location`` values of the model's external-data tensors, read from the
    protobuf wire format without parsing the model (as the server's ExternalDataLocations)."""
    found: List[str] = []
    # Work list of (message type, start, end); a tensor's fields are collected as it is read.
    todo: List[Tuple[str, int, int]] = [("model", 0, len(model))]
    try:
        while todo:
            kind, pos, end = todo.pop()
            external = False
            location: Optional[str] = None
            while pos < end:
                tag, pos = _wire_varint(model, pos, end)
                number, wire = tag >> 3, tag & 7
                if wire == 0:
                    value, pos = _wire_varint(model, pos, end)
                    if kind == "tensor" and number == 14:
                        external = value == 1
                elif wire == 1:
                    pos += 8
                elif wire == 5:
                    pos += 4
                elif wire == 2:
                    length, pos = _wire_varint(model, pos, end)
                    if pos + length > end:
                        raise ValueError("truncated field")
                    child = _ONNX_MESSAGES[kind].get(number)
                    if child == "entry":
                        key, text = _entry(model[pos:pos + length])
                        if key == "location":
                            location = text
                    elif child is not None:
                        if len(todo) > 100000:
                            raise ValueError("too many messages")
                        todo.append((child, pos, pos + length))
                    pos += length
                else:
                    raise ValueError("unsupported wire type")
            if kind == "tensor" and external and location and location not in found:
                found.append(location)
                if len(found) > _MAX_DATA_FILES:
                    break
    except (ValueError, IndexError):
        pass  # malformed bytes end the scan; the server's check names the problem
    return found


def _entry(buf: memoryview) -> Tuple[str, str]:
    key = value = ""
    pos = 0
    while pos < len(buf):
        tag, pos = _wire_varint(buf, pos, len(buf))
        if tag & 7 != 2:
            raise ValueError("unexpected field in StringStringEntryProto")
        length, pos = _wire_varint(buf, pos, len(buf))
        text = bytes(buf[pos:pos + length]).decode("utf-8", "replace")
        pos += length
        if tag >> 3 == 1:
            key = text
        elif tag >> 3 == 2:
            value = text
    return key, value


def _normalized_data_name(location: str) -> Optional[str]:
    """The server's normalized name of a data file, or None when the checker refuses the
    location (absolute, '..', backslash, control characters)."""
    if (not location or len(location.encode("utf-8")) > 1024 or location.startswith("/")
            or "\\" in location or any(ord(c) < 0x20 or ord(c) == 0x7F for c in location)):
        return None
    parts = location.split("/")
    if ".." in parts:
        return None
    kept = [p for p in parts if p not in ("", ".")]
    return "/".join(kept) if kept else None


def _local_data_files(path: str, hash_files: bool = True) -> List[Tuple[str, str, int, str]]:
    """The external data files a local model names, found beside it as the command line does:
    (name, path, size, sha256). Locations the checker refuses and files outside the model's folder
    are not sent (the server's check then names them)."""
    import mmap

    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size == 0:
                return []
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
                with memoryview(m) as view:
                    locations = _external_data_locations(view)
    except (OSError, ValueError):
        return []
    folder = os.path.realpath(os.path.dirname(os.path.abspath(path)))
    out: List[Tuple[str, str, int, str]] = []
    for location in locations:
        name = _normalized_data_name(location)
        if name is None or any(n == name for n, _, _, _ in out):
            continue
        target = os.path.realpath(os.path.join(folder, name))
        if not target.startswith(folder + os.sep) or not os.path.isfile(target):
            continue
        if hash_files:
            sha, size = _hash_file(target)
        else:
            sha, size = "", os.path.getsize(target)
        out.append((name, target, size, sha))
    return out


def _bundle_sha256(graph_sha256: str, files: List[Tuple[str, str, int, str]]) -> str:
    """The server's key of a model with data files (docs/api.md, the bundle hash)."""
    text = "axqc-external-data/1\n" + graph_sha256 + "\n"
    for name, _, size, sha in sorted(files):
        text += f"{name}\n{size}\n{sha}\n"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_RANGED_ROUNDS = 4


def _file_chunks(path: str) -> Iterator[bytes]:
    with open(path, "rb") as f:
        while True:
            chunk = f.read(_CHUNK)
            if not chunk:
                return
            yield chunk


def _bytes_chunks(data: Optional[bytes]) -> Iterator[bytes]:
    assert data is not None
    view = memoryview(data)
    for i in range(0, len(view), _CHUNK):
        yield bytes(view[i:i + _CHUNK])


_HEALTH_STATUS = {0: "UNKNOWN", 1: "SERVING", 2: "NOT_SERVING", 3: "SERVICE_UNKNOWN"}


def _encode_health_request(service: str) -> bytes:
    # HealthCheckRequest { string service = 1; }
    raw = service.encode("utf-8")
    if not raw:
        return b""
    return b"\x0a" + _varint(len(raw)) + raw


def _decode_health(data: bytes) -> str:
    # HealthCheckResponse { ServingStatus status = 1; } (an absent field is 0, UNKNOWN)
    status, i = 0, 0
    while i < len(data):
        tag, i = _read_varint(data, i)
        field, wire = tag >> 3, tag & 7
        if wire == 0:
            value, i = _read_varint(data, i)
            if field == 1:
                status = value
        elif wire == 2:
            n, i = _read_varint(data, i)
            i += n
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        else:
            raise ValueError("malformed HealthCheckResponse")
    return _HEALTH_STATUS.get(status, str(status))


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _read_varint(data: bytes, i: int) -> Tuple[int, int]:
    shift = result = 0
    while True:
        if i >= len(data):
            raise ValueError("truncated varint")
        b = data[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7
