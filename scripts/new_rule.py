#!/usr/bin/env python3
"""Adds a rule to the catalog: its entry in core/src/rules.def, its page under docs/rules with
the row of the index, and a test to fill in. After it, the build compiles and these tests fail until the
rule is written, each naming what is missing:

  RuleIds.EachRowNamesExactlyTheFilesThatUseItsHandle   no code emits the rule yet
  RuleDocs.NoPageLeftAsWritten                          the page's sections are still stubs
  <Handle>.FiresOnAModelThatBreaksIt                    the test's model is still to be built

  scripts/new_rule.py op/foo-bar --severity error --section 5.3 \\
      --summary "One line: what is wrong." --fix "One line: how it is usually fixed."

Then: emit it from the check file that owns the concern (`c.out.Emit({.rule = rules::kOpFooBar,
...})`) and name that file in the entry's implementation list, build the test's model, write the
page, and regenerate the page's "Code and tests" section (docs/contributing.md, "Add a rule").
Rule IDs are a public contract: also add the ID to the spec's RULES.md.
"""
import argparse
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
FAMILIES = ("scope", "onnx", "closure", "pattern", "qdq", "role", "op", "target", "pulsar2")
STUB = "<!-- new_rule.py: write this section -->"


def handle_name(rule_id):
    """The typed handle: "qdq/scale-value" -> "kQdqScaleValue" (tests/support/rule_handles.h)."""
    return "k" + "".join(w[:1].upper() + w[1:] for w in re.split(r"[/-]", rule_id))


def cpp_string(text, indent, width=100):
    """`text` as adjacent C++ string literals, each line within `width` columns."""
    esc = text.replace("\\", "\\\\").replace('"', '\\"')
    room = width - indent - 3  # quotes and the trailing comma
    words, lines, line = esc.split(" "), [], ""
    for w in words:
        cand = w if not line else line + " " + w
        if len(cand) + 1 > room and line:
            lines.append(line + " ")
            line = w
        else:
            line = cand
    lines.append(line)
    return ("\n" + " " * indent).join('"' + l + '"' for l in lines)


def fail(msg):
    print(f"new_rule.py: {msg}", file=sys.stderr)
    sys.exit(2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("id", help="family/short-name, e.g. op/foo-bar")
    ap.add_argument("--severity", required=True, choices=["error", "warn", "info"])
    ap.add_argument("--section", required=True, help='spec section, e.g. "5.3"')
    ap.add_argument("--summary", required=True, help="one line: what is wrong")
    ap.add_argument("--fix", required=True, help="one line: how it is usually fixed")
    ap.add_argument("--check-value", action="store_true",
                    help="runs only with check_value (-c, spec 2.5)")
    ap.add_argument("--root", default=str(ROOT), help=argparse.SUPPRESS)
    a = ap.parse_args()
    root = pathlib.Path(a.root)

    m = re.fullmatch(r"([a-z0-9]+)/([a-z0-9]+(?:-[a-z0-9]+)*)", a.id)
    if not m:
        fail(f"'{a.id}' is not family/short-name (lowercase letters, digits and single dashes)")
    family, name = m.groups()
    if family not in FAMILIES:
        fail(f"unknown family '{family}' (one of {', '.join(FAMILIES)})")
    for field, text in (("summary", a.summary), ("fix", a.fix), ("section", a.section)):
        if not text.strip() or "\n" in text or "|" in text:
            fail(f"--{field} must be one non-empty line without '|'")
    if not re.fullmatch(r"[0-9]+(\.[0-9]+)*|target|pulsar2", a.section):
        fail(f"--section '{a.section}' is not a spec section such as 5.3")

    handle = handle_name(a.id)
    page_name = f"{family}--{name}.md"
    test_rel = f"tests/unit/rule_{family}_{name.replace('-', '_')}_test.cc"
    registry = root / "core/src/rules.def"
    page = root / "docs/rules" / page_name
    index = root / "docs/rules/README.md"
    test = root / test_rel

    text = registry.read_text()
    if f'"{a.id}"' in text:
        fail(f"{a.id} is already in core/src/rules.def")
    for p in (page, test):
        if p.exists():
            fail(f"{p.relative_to(root)} exists already")
        p.parent.mkdir(parents=True, exist_ok=True)

    # The entry goes after the last entry of its family (catalog order is spec order).
    entries = list(re.finditer(r'^AXQC_RULE\(k\w+, "([a-z0-9]+)/[^"]+".*?\)$', text,
                               re.M | re.S))
    same = [e for e in entries if e.group(1) == family]
    if same:
        at = same[-1].end()
    else:  # the first of its family: after the families listed before it
        before = FAMILIES[:FAMILIES.index(family)]
        prior = [e for e in entries if e.group(1) in before]
        at = prior[-1].end() if prior else len(text.rstrip("\n"))
    sev = {"error": "S::kError", "warn": "S::kWarn", "info": "S::kInfo"}[a.severity]
    cv = "kCv" if a.check_value else "kAlways"
    ind = len("AXQC_RULE(")
    entry = (f'AXQC_RULE({handle}, "{a.id}", {sev}, {cv}, "{a.section}",\n'
             f"{' ' * ind}{cpp_string(a.summary, ind)},\n"
             f"{' ' * ind}{cpp_string(a.fix, ind)},\n"
             f'{" " * ind}"",\n'
             f'{" " * ind}"{test_rel}")')
    registry.write_text(text[:at] + "\n" + entry + text[at:])

    # The index row, after the last row of the family's table (or a note to place it).
    idx = index.read_text().split("\n")
    rows = [i for i, l in enumerate(idx) if l.startswith(f"| [`{family}/")]
    group = "Rules"
    cv_word = "yes" if a.check_value else "no"
    row = (f"| [`{a.id}`]({page_name}) | {a.severity} | {cv_word} | {a.section} | "
           f"{a.summary} |")
    if rows:
        idx.insert(rows[-1] + 1, row)
        heads = [l for l in idx[:rows[-1]] if l.startswith("## ")]
        group = heads[-1][3:] if heads else group
    else:
        idx += ["", f"## {family}", "", "| rule | severity | check_value | section | summary |",
                "|---|---|---|---|---|", row]
        group = family
    index.write_text("\n".join(idx))

    cv_text = ("yes: runs only with check_value (`-c`)" if a.check_value
               else "no: always runs")
    verdict = {"error": "An `error` finding makes the verdict `non_conformant`.",
               "warn": "A `warn` finding never changes the verdict.",
               "info": "An `info` finding never changes the verdict."}[a.severity]
    page.write_text(f"""# `{a.id}`

{a.summary}

| | |
|---|---|
| severity | {a.severity} |
| check_value | {cv_text} |
| spec section | {a.section} |
| group | {group} |

{verdict}

## What it checks

{STUB}

## Minimal failing graph

```text
{STUB}
```

## How to fix

{a.fix}

## Related

{STUB}
""")

    test.write_text(f"""// {a.id} (docs/rules/{page_name}): a model that breaks the rule, and its conformant twin.
#include "check_helpers.h"

namespace axqc::test {{
namespace {{

using B = ModelBuilder;

TEST({handle[1:]}, FiresOnAModelThatBreaksIt) {{
  // Build the smallest model that breaks {a.id} (see ConvModel in check_helpers.h and the
  // builder's methods in tools/modelgen/model_builder.h), then name the node and a piece of the
  // message.
  B b = ConvModel();
  const auto r = RunCheck(b);
  EXPECT_FINDING(r, "{a.id}", "conv", "");
}}

TEST({handle[1:]}, StaysQuietOnTheConformantTwin) {{
  EXPECT_CLEAN(RunCheck(ConvModel()));
}}

}}  // namespace
}}  // namespace axqc::test
""")
    for p in (registry, index, page, test):
        print(f"wrote {p.relative_to(root)}")
    print(f"next: emit rules::{handle} in the check file that owns it and name that file in the "
          f"entry; build the test's model; write the page; then\n"
          f"  AXQC_UPDATE_RULE_PAGES=1 build/release/tests/operators_doc_test "
          f"--gtest_filter=RuleDocs.*")


if __name__ == "__main__":
    main()
