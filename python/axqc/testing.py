"""Test helpers for models in pytest (or any test framework that reports AssertionError).

::

    from axqc.testing import assert_conformant

    def test_exported_model_conforms(tmp_path):
        export(model, tmp_path / "model.onnx")
        assert_conformant(tmp_path / "model.onnx")

A failure reads like the command line's report: the verdict, then every finding group with its
rule ID, spec section, first locations (node, message) and how to fix it.
"""

from __future__ import annotations

from typing import Iterable, Optional, Union

from ._report import ModelInput, Report, Verdict, check

__all__ = ["assert_conformant", "assert_violates"]


def _report(model: Union[ModelInput, Report], check_value: bool, max_locations: int,
            name: Optional[str]) -> Report:
    if isinstance(model, Report):
        return model
    return check(model, check_value=check_value, max_locations=max_locations, name=name)


def assert_conformant(model: Union[ModelInput, Report], *, check_value: bool = False,
                      max_locations: int = 5, allow_not_applicable: bool = False,
                      allow_warnings: bool = True, name: Optional[str] = None) -> Report:
    """Checks ``model`` (a path, bytes, an ``onnx.ModelProto``, or an existing
    :class:`~axqc.Report`) and fails with the text report unless it is conformant.

    ``allow_not_applicable`` also accepts a model without any quantized edge (spec 2.1);
    ``allow_warnings=False`` fails on warn findings too. Returns the report.
    """
    __tracebackhide__ = True  # pytest: show the caller's line, not this helper
    report = _report(model, check_value, max_locations, name)
    ok = report.conformant or (allow_not_applicable and report.verdict is Verdict.NOT_APPLICABLE)
    if ok and (allow_warnings or report.warning_count == 0):
        return report
    if not ok:
        why = {
            Verdict.NON_CONFORMANT: f"{report.error_count} error finding"
                                    f"{'' if report.error_count == 1 else 's'} "
                                    f"({', '.join(report.rules_violated)})",
            Verdict.NOT_APPLICABLE: "no Q/DQ edge is owned by an operator or pattern rule "
                                    "(spec 2.1): the model is not quantized in QDQ form "
                                    "(allow_not_applicable=True accepts it)",
        }[report.verdict]
        head = f"{report.file} is {report.verdict.value.upper()}: {why}"
    else:
        head = (f"{report.file} is conformant but has {report.warning_count} warning"
                f"{'' if report.warning_count == 1 else 's'} (allow_warnings=False)")
    raise AssertionError(f"{head}\n\n{report.summary()}")


def assert_violates(model: Union[ModelInput, Report], rules: Union[str, Iterable[str]], *,
                    node: Optional[str] = None, check_value: bool = False,
                    name: Optional[str] = None) -> Report:
    """Asserts that ``model`` has error findings of every rule ID in ``rules`` (at ``node`` when
    given): for tests of a broken fixture or of an exporter's known defect. Returns the report.
    """
    __tracebackhide__ = True
    wanted = [rules] if isinstance(rules, str) else list(rules)
    report = _report(model, check_value, 1000, name)
    missing = []
    for rule in wanted:
        hits = [f for f in report.errors if f.rule == rule and (node is None or node in f.nodes)]
        if not hits:
            missing.append(rule)
    if missing:
        where = f" at node {node}" if node is not None else ""
        raise AssertionError(
            f"{report.file}: expected error findings of {', '.join(missing)}{where}, got "
            f"{', '.join(report.rules_violated) or 'none'} ({report.verdict.value})\n\n"
            f"{report.summary()}")
    return report
