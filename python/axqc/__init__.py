"""axqc: conformance checker for quantized ONNX QDQ models against the ax quant spec (Axera NPUs).

Check a model in this process::

    import axqc

    report = axqc.check("model.onnx")            # a path, bytes or an onnx.ModelProto
    assert report.conformant, report.summary()
    for f in report.errors:
        print(f.rule, f.node, f.message)

or on an axqc-server (hash first, upload only unknown models)::

    with axqc.Client("axqc.internal:50051", token=...) as client:
        report = client.check("model.onnx", labels={"project": "detector"})

Remove exporter artifacts (Constant nodes, de-duplication Identities, shape subgraphs, missing
value_info, ...) without changing what the model computes, as ``axqc fix`` does::

    result = axqc.fix("raw_export.onnx", "fixed.onnx")
    print(result.changed, result.before.error_count, "->", result.after.error_count)

In pytest: ``axqc.testing.assert_conformant(model)``. The rule catalog: :func:`rules`. The
report formats (text, JSON, SARIF, JUnit, GitHub) come from the same renderers as the ``axqc``
command line. See docs/python.md.
"""

from typing import TYPE_CHECKING

from . import _native
from ._errors import Error, InputError, NonConformantError, ServiceError
from ._fix import FixRefusedError, FixResult, RewriteInfo, RewriteOutcome, fix, rewrites
from ._report import (Counts, Finding, FindingGroup, Hint, ModelFacts, ModelInput, Opset,
                      RemoteInfo, Report, Rule, Severity, TargetBlocker, TargetResult, Unit, Value,
                      Verdict, check, pulsar2_config, rules, to_github, to_gitlab, to_junit,
                      to_sarif)
from ._version import __version__

#: Version of the rule set (the ax quant spec rule catalog) of this checker; part of every
#: report and of the service's cache keys.
RULE_SET_VERSION: str = _native.RULE_SET_VERSION
#: Version of the ONNX library built into the checker (its ONNX checker and shape inference).
ONNX_VERSION: str = _native.ONNX_VERSION

if _native.TOOL_VERSION != __version__:  # pragma: no cover - a mixed installation
    raise ImportError(f"axqc {__version__} found the native module of axqc "
                      f"{_native.TOOL_VERSION}: reinstall the package")


if TYPE_CHECKING:  # pragma: no cover
    from ._client import Catalog, Client, RuleCount, Stats, VerdictCounts


def __getattr__(name: str):
    # The client needs grpcio and protobuf; import them only when it is used.
    if name in ("Client", "Stats", "VerdictCounts", "RuleCount", "Catalog"):
        from . import _client

        return getattr(_client, name)
    raise AttributeError(f"module 'axqc' has no attribute {name!r}")


__all__ = [
    "Catalog", "Client", "Counts", "Error", "Finding", "FindingGroup", "FixRefusedError",
    "FixResult", "Hint", "InputError", "ModelFacts", "ModelInput", "NonConformantError",
    "ONNX_VERSION", "Opset", "RULE_SET_VERSION", "RemoteInfo", "Report", "RewriteInfo",
    "RewriteOutcome", "Rule", "RuleCount", "ServiceError", "Severity", "Stats", "TargetBlocker",
    "TargetResult", "Unit", "Value", "Verdict", "VerdictCounts",
    "__version__", "check", "fix", "pulsar2_config", "rewrites", "rules", "to_github", "to_gitlab", "to_junit",
    "to_sarif",
]
