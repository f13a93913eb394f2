"""A `VerifyReport` as JUnit XML (the Jenkins/Ant schema that CI systems read): one `<testsuite>` per
stage, one `<testcase>` per check of an op (static), per build, and per unittest result (tests). A
skipped stage is one skipped testcase carrying the reason, so a report never shows a pass for
something that did not run."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from mpsgen.commands.verify import FAILED, SKIPPED, VerifyReport


def report_to_junit(report: VerifyReport) -> str:
    root = ET.Element("testsuites", name="mpsgen verify")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for stage in report.stages:
        suite = ET.SubElement(root, "testsuite", name=f"mpsgen.verify.{stage.name}")
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}

        def case(classname: str, name: str, status: str, message: str = "", text: str = "") -> None:
            element = ET.SubElement(suite, "testcase", classname=classname, name=name, time="0")
            counts["tests"] += 1
            if status == FAILED:
                failure = ET.SubElement(element, "failure", message=message, type="failure")
                failure.text = text or message
                counts["failures"] += 1
            elif status == SKIPPED:
                ET.SubElement(element, "skipped", message=message)
                counts["skipped"] += 1

        if stage.tests:
            for test in stage.tests:
                status = FAILED if test.bad else SKIPPED if test.outcome == "skipped" else "passed"
                case(f"mpsgen.verify.tests.{test.op}", test.test, status, f"{test.outcome} {test.detail}".strip())
            for check in stage.checks:
                if check.status == SKIPPED or (check.status == FAILED and not any(t.op == check.op for t in stage.tests)):
                    case(f"mpsgen.verify.tests.{check.op}", "run", check.status, check.reason or _summary(check.findings),
                         "\n".join(str(f) for f in check.findings))
        elif stage.checks:
            for check in stage.checks:
                classname = f"mpsgen.verify.{stage.name}" + (f".{check.op}" if check.op else "")
                case(classname, check.check, check.status, check.reason or _summary(check.findings),
                     "\n".join(str(f) for f in check.findings))
        else:
            case(f"mpsgen.verify.{stage.name}", stage.name, stage.status, stage.reason)
        suite.set("time", f"{stage.duration:.3f}")
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
        if stage.log:
            ET.SubElement(suite, "system-out").text = f"log: {stage.log}"
    for key, value in totals.items():
        root.set(key, str(value))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _summary(findings) -> str:
    if not findings:
        return ""
    first = str(findings[0])
    return first if len(findings) == 1 else f"{first} (+{len(findings) - 1} more)"
