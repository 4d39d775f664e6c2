#!/usr/bin/python3
"""Differential test of capabilities/discoverV2 and capabilityRoots/discoverV1:
execd against the reference.

Each case writes a tree (a HOME with its .codex and .agents, the plugin
cache, what /etc/codex holds), starts both servers with the same HOME,
CODEX_HOME and working directory, sends the same requests and compares
the answers byte for byte (results and errors alike).  Output is TAP.
/etc/codex cases run in a private mount namespace as tests/envconfig.py
does (root and unshare(1)), and are skipped otherwise.

  EXECD, CODEX_REF        as tests/envconfig.py
  DISCOVER_ONLY=REGEX     run only the cases whose name matches
  DISCOVER_VERBOSE=1      print both answers of every case
"""
import json
import os
import sys
import time

from refdiff import run, run_cases, write_tree

V2 = "capabilities/discoverV2"
V1 = "capabilityRoots/discoverV1"
CH = "home/.codex/"
AG = "home/.agents/skills/"
CACHE = CH + "plugins/cache/"


def sk(name, desc, extra=""):
    s = "---\n"
    if name is not None:
        s += "name: %s\n" % name
    if desc is not None:
        s += "description: %s\n" % desc
    return s + extra + "---\nbody\n"


def v2(cwd="@R", **kw):
    p = {"cwd": "file://" + cwd}
    p.update(kw)
    return {"__method": V2, "params": p}


def v1(*roots):
    return {"__method": V1, "params": {"roots": [
        {"id": i, "path": "file://" + p} if isinstance(p, str) else p for i, p in roots]}}


def sb(entries, cwd="file:///", **kw):
    d = {"permissions": {"type": "managed", "network": "restricted",
                         "file_system": {"type": "restricted", "entries": entries}},
         "windowsSandboxLevel": "disabled"}
    if cwd is not None:
        d["cwd"] = cwd
    d.update(kw)
    return d


def ent(path, access):
    return {"path": {"type": "path", "path": "file://" + path}, "access": access}


SKILLS = {
    CH + "skills/b/SKILL.md": sk("bee", "B skill"),
    CH + "skills/a/SKILL.md": sk("zzz", '"quoted desc"', "metadata:\n  short-description: short one\n"),
    CH + "skills/deep/x/y/SKILL.md": sk("deep", "deep one"),
    CH + "skills/.hidden/SKILL.md": sk("hidden", "hidden one"),
    CH + "skills/Z/SKILL.md": sk("upper", "sorted before lower case"),
    AG + "ag/SKILL.md": sk("ag", "agents one"),
}

ONE_SKILL = [
    ("no name: the directory's", "---\ndescription: no name\n---\n"),
    ("no description", "---\nname: nodesc\n---\n"),
    ("empty description", '---\nname: e\ndescription: ""\n---\n'),
    ("no front matter", "no front matter\n"),
    ("name of 64", sk("y" * 64, "d")),
    ("name of 65", sk("x" * 65, "d")),
    ("name of 64 characters, more bytes", sk("\u00e9" * 64, "d")),
    ("name of 65 characters", sk("\u00e9" * 65, "d")),
    ("name with a colon", sk("a b: c", "d")),
    ("empty name", sk('""', "d")),
    ("null name", sk("", "d")),
    ("single-quoted", sk("'it''s'", "'single'")),
    ("long description", sk("x", "d" * 1100)),
    ("numbers and booleans", sk("123", "true")),
    ("block scalar", "---\nname: x\ndescription: |\n  multi\n  line\n---\n"),
    ("folded scalar", "---\nname: x\ndescription: >-\n  folded\n   more\n---\n"),
    ("whitespace runs", sk("x", "a   b\tc")),
    ("comment after a value", sk("x", "desc # comment")),
    ("blank line first", "\n" + sk("x", "y")),
    ("CRLF", sk("x", "y").replace("\n", "\r\n")),
    ("front matter not closed", "---\nname: x\ndescription: y\n"),
    ("closing fence at the end", "---\nname: x\ndescription: y\n---"),
    ("short-description empty", sk("x", "y", "metadata:\n  short-description: \"\"\n")),
    ("short-description block", sk("x", "y", "metadata:\n  short-description: |\n    s d\n  other: 1\n")),
    ("metadata with other keys", sk("x", "y", "metadata:\n  a: 1\n  short-description: sd\n")),
    ("not UTF-8", b"---\nname: x\ndescription: \xff\n---\n"),
]


# agents/openai.yaml beside a SKILL.md: (group, [(what, contents)]); each group
# is one case, a skill per file
TOOL = "dependencies:\n  tools:\n  - type: mcp\n    value: foo\n"
POL = "policy:\n  allow_implicit_invocation: true\n"
TOOLS = "dependencies:\n  tools:\n  - type: %s\n    value: %s\n    description: %s\n" \
    "    transport: %s\n    command: %s\n    url: %s\n"


def sized(n):
    s = POL + "#"
    return s + "x" * (n - len(s) - 1) + "\n"


META = [
    ("fields", [
        ("all of them", "interface:\n  display_name: X\n  short_description: s\n" + TOOL +
         "    description: d\n    transport: stdio\n    command: c\n    url: u\n"
         "policy:\n  allow_implicit_invocation: false\n  products: [codex, chatgpt, atlas]\n"),
        ("interface only", "interface:\n  display_name: X\n  brand_color: '#aabbcc'\n"),
        ("tool without a value", "dependencies:\n  tools:\n  - type: mcp\n  - type: env\n    value: X\n"),
        ("no tools", "dependencies:\n  tools: []\n" + POL),
        ("dependencies without tools", "dependencies: {}\n" + POL),
        ("policy empty", "policy: {}\n"),
        ("policy null", "policy: null\n" + TOOL),
        ("unknown keys", POL + "x: 1\nx: 2\n5: b\n~: c\nother: [1, {a: b}]\n"),
        ("oauth_callback_port is not read", TOOL + "    oauth_callback_port: 8080\n"),
        ("lengths at the limit", TOOLS % ("t" * 64, "v" * 1024, "d" * 1024, "r" * 64, "c" * 1024, "u" * 1024)),
        ("type too long", TOOLS % ("t" * 65, "v", "d", "r", "c", "u")),
        ("value too long", TOOLS % ("t", "v" * 1025, "d", "r", "c", "u")),
        ("optional ones too long", TOOLS % ("t", "v", "d" * 1025, "r" * 65, "c" * 1025, "u")),
        ("characters, not bytes", TOOLS % ("\u00e9" * 64, "v", "d", "\u00e9" * 65, "c", "u")),
        ("whitespace folded", TOOLS % ("'  a   b  '", '"x\\ty\\nz"', "'   '", "''", "c", "u")),
        ("Unicode whitespace", TOOLS % ('"a\\u00a0b\\u3000c\\u0085d\\u2028e\\u200bf\\u001cg"', "v",
                                        '"a\\0b"', "r", "c", "u")),
        ("block scalars", "dependencies:\n  tools:\n  - type: |\n      multi\n      line\n"
         "    value: >\n      folded\n      text\n"),
        ("flow style", "{policy: {allow_implicit_invocation: false, products: [atlas]}, "
         "dependencies: {tools: [{type: a, value: b}]}}\n"),
    ]),
    ("wrong types spoil the file", [
        ("tools a map", POL + "dependencies:\n  tools:\n    type: mcp\n    value: foo\n"),
        ("tools null", POL + "dependencies:\n  tools: null\n"),
        ("a tool a scalar", POL + "dependencies:\n  tools: [x]\n"),
        ("a type a list", POL + "dependencies:\n  tools:\n  - type: [x]\n    value: y\n"),
        ("interface field a list", POL + "interface:\n  display_name: [x]\n"),
        ("icon a map", POL + "interface:\n  icon_small: {}\n"),
        ("interface a number", POL + "interface: 5\n"),
        ("policy a list", TOOL + "policy: []\n"),
        ("policy a string", TOOL + "policy: x\n"),
        ("dependencies a string", POL + "dependencies: x\n"),
        ("allow yes", TOOL + "policy:\n  allow_implicit_invocation: yes\n"),
        ("allow quoted", TOOL + "policy:\n  allow_implicit_invocation: 'true'\n"),
        ("allow 1", TOOL + "policy:\n  allow_implicit_invocation: 1\n"),
        ("unknown product", TOOL + "policy:\n  products: [codex, bogus]\n"),
        ("product in capitals", TOOL + "policy:\n  products: [Codex]\n"),
        ("products a scalar", TOOL + "policy:\n  products: codex\n"),
        ("products null", TOOL + "policy:\n  products: ~\n"),
        ("product a map", TOOL + "policy:\n  products: [{codex: ~}]\n"),
        ("known key twice", TOOL + POL + POL),
        ("nested key twice", POL + "dependencies:\n  tools:\n  - type: a\n    type: b\n    value: c\n"),
        ("a list key", POL + "? [a]\n: b\n"),
        ("a top-level list", "- a\n"),
        ("a top-level scalar", "foo\n"),
    ]),
    ("scalars as serde_yaml reads them", [
        ("numbers and booleans are strings", "dependencies:\n  tools:\n  - type: 5\n    value: 1.5\n"
         "    description: true\n"),
        ("True and TRUE", TOOL + "policy:\n  allow_implicit_invocation: TRUE\n"),
        ("tRUE", TOOL + "policy:\n  allow_implicit_invocation: tRUE\n"),
        ("null words", TOOL + "policy:\n  allow_implicit_invocation: Null\n"),
        ("empty is null", TOOL + "policy:\n  allow_implicit_invocation:\n"),
        ("quoted null is a string", TOOL + "policy:\n  allow_implicit_invocation: 'null'\n"),
        ("!!str true is a boolean", TOOL + "policy:\n  allow_implicit_invocation: !!str true\n"),
        ("!!str null is not null", TOOL + "policy:\n  allow_implicit_invocation: !!str null\n"),
        ("!!null null", TOOL + "policy:\n  allow_implicit_invocation: !!null null\n"),
        ("!!null x", POL + "dependencies: !!null x\n"),
        ("!!null empty", TOOL + "policy: !!null\n"),
        ("a tag on a string", POL + "dependencies:\n  tools:\n  - type: !foo bar\n    value: !!int 5\n"),
        ("an empty tagged scalar is an empty map", TOOL + "policy: !foo\n"),
        ("an empty tagged scalar is an empty list", POL + "dependencies:\n  tools: !foo\n"),
        ("a quoted empty string is not", TOOL + "policy: ''\n"),
        ("an empty tool", POL + "dependencies:\n  tools:\n  -\n"),
        ("a product as a tag", TOOL + "policy:\n  products: [!codex , !atlas ~, !chatgpt null, "
         "!<!codex> ]\n"),
        ("a tagged product with a value", TOOL + "policy:\n  products: [!codex x]\n"),
        ("!!codex", TOOL + "policy:\n  products: [!!codex ]\n"),
        ("a non-specific tag", TOOL + "policy:\n  products: [! codex]\n"),
        ("a core tag on a product", TOOL + "policy:\n  products: [!<tag:yaml.org,2002:str> codex, "
         "!!str atlas]\n"),
        ("quoted products and keys", "'policy':\n  \"products\": ['codex', \"atlas\"]\n"),
        ("a tagged map", "!foo\npolicy: !bar\n  allow_implicit_invocation: true\n"),
    ]),
    ("YAML documents", [
        ("empty", ""),
        ("comments only", "# c\n"),
        ("a document marker only", "---\n"),
        ("start and end markers", "---\n" + POL + "...\n"),
        ("two documents", POL + "---\n" + POL),
        ("%YAML 1.1", "%YAML 1.1\n---\n" + POL),
        ("%YAML 1.3", "%YAML 1.3\n---\n" + POL),
        ("%TAG", "%TAG !e! !\n---\npolicy:\n  products: [!e!codex ]\n"),
        ("anchors and aliases", "t: &t {type: a, value: b}\np: &p codex\n" + POL +
         "dependencies:\n  tools: [*t, *t]\n"),
        ("an alias for a map", "p: &p {allow_implicit_invocation: false}\npolicy: *p\n"),
        ("an alias for a key", "a: &k policy\n*k :\n  allow_implicit_invocation: true\n"),
        ("an anchor defined again", "a: &x codex\npolicy:\n  products: [*x]\nb: &x atlas\n"
         "c: &y codex\nd: &y atlas\ndependencies:\n  tools: [{type: *y, value: v}]\n"),
        ("an alias to nothing", POL + "x: *nope\n"),
        ("an alias inside its anchor", "a: &x [*x]\n" + POL),
        ("a merge key is a key", "base: &b\n  allow_implicit_invocation: true\npolicy:\n  <<: *b\n" + TOOL),
        ("a tab for indentation", "policy:\n\tallow_implicit_invocation: true\n"),
        ("a key of 1100 characters", POL + "k" * 1100 + ": v\n"),
        ("CRLF", POL.replace("\n", "\r\n")),
        ("CR", POL.replace("\n", "\r")),
        ("a byte order mark", "\ufeff" + POL),
        ("NUL", POL + "x: a\0b\n"),
        ("nesting at execd's bound", POL + "x: " + "[" * 63 + "a, " * 1000 + "]" * 63 + "\n"),
        ("an alias bomb", POL + "a0: &a0 [x]\n" + "".join(
            "a%d: &a%d [%s]\n" % (i, i, ", ".join(["*a%d" % (i - 1)] * 9)) for i in range(1, 9))),
    ]),
    ("what cannot be read", [
        ("not UTF-8", POL.encode() + b"x: \xff\n"),
        ("not UTF-8 in a comment", POL.encode() + b"# \xfe\n"),
        ("UTF-16", ("\ufeff" + POL).encode("utf-16-le")),
        ("1 MiB", sized(1 << 20)),
        ("1 MiB and a byte", sized((1 << 20) + 1)),
    ]),
]


def meta_case(group, items):
    files = {}
    for i, (_, text) in enumerate(items):
        d = CH + "skills/m%02d/" % i
        files[d + "SKILL.md"] = sk("m%02d" % i, "d")
        files[d + "agents/openai.yaml"] = text
    return "openai.yaml: " + group, files, None, {}, [v2()]


def cases():
    """(name, files, etc, env, requests); etc None: /etc/codex absent."""
    yield "nothing installed", {}, None, {}, [v2()]
    yield "skills of both home roots", SKILLS, None, {}, [v2()]
    for name, text in ONE_SKILL:
        yield "skill: " + name, {CH + "skills/s/SKILL.md": text}, None, {}, [v2()]
    yield "invalid skills: one warning per root", {
        CH + "skills/ok/SKILL.md": sk("ok", "d"), CH + "skills/b/SKILL.md": "bad\n",
        CH + "skills/c/SKILL.md": "bad\n", AG + "d/SKILL.md": "bad\n"}, None, {}, [v2()]
    yield "skill.md in lower case", {CH + "skills/a/skill.md": sk("x", "y")}, None, {}, [v2()]
    yield "SKILL.md at the root", {CH + "skills/SKILL.md": sk("top", "y")}, None, {}, [v2()]
    yield "nested skills", {CH + "skills/a/SKILL.md": sk("x", "y"),
                            CH + "skills/a/b/SKILL.md": sk("x2", "y")}, None, {}, [v2()]
    yield "same name twice", {CH + "skills/a/SKILL.md": sk("dup", "y"),
                              CH + "skills/b/SKILL.md": sk("dup", "z")}, None, {}, [v2()]
    yield "symlinked skill directory", {CH + "skills/a/SKILL.md": sk("x", "y"),
                                        "elsewhere/s/SKILL.md": sk("linked", "y"),
                                        CH + "skills/l->elsewhere/s": ""}, None, {}, [v2()]
    yield "skills a file", {CH + "skills": "x"}, None, {}, [v2()]
    yield "cwd has no effect", {CH + "skills/a/SKILL.md": sk("x", "y"),
                                "p/.agents/skills/q/SKILL.md": sk("proj", "y"),
                                "p/.codex/skills/r/SKILL.md": sk("proj2", "y")}, None, {}, [
        v2(), v2("@R/p"), v2("/nonexistent")]
    yield "CODEX_HOME elsewhere", {"ch2/skills/a/SKILL.md": sk("x", "y"),
                                   CH + "skills/b/SKILL.md": sk("not", "y")}, None, {
        "CODEX_HOME": "@R/ch2"}, [v2()]
    yield "CODEX_HOME empty", {CH + "skills/b/SKILL.md": sk("b", "y")}, None, {"CODEX_HOME": ""}, [v2()]
    yield "skill unreadable", {CH + "skills/a/SKILL.md": sk("x", "y"), CH + "skills/b/SKILL.md": sk("b", "y"),
                               "chmod000": CH + "skills/b/SKILL.md"}, None, {"@nobody": True}, [v2()]
    for group, items in META:
        yield meta_case(group, items)
    yield "openai.yaml: files", {
        CH + "skills/dir/SKILL.md": sk("dir", "d"), CH + "skills/dir/agents/openai.yaml/": "",
        CH + "skills/link/SKILL.md": sk("link", "d"), "elsewhere/o.yaml": POL,
        CH + "skills/link/agents/openai.yaml->elsewhere/o.yaml": "",
        CH + "skills/dangling/SKILL.md": sk("dangling", "d"),
        CH + "skills/dangling/agents/openai.yaml->nowhere": "",
        CH + "skills/agentsfile/SKILL.md": sk("agentsfile", "d"),
        CH + "skills/agentsfile/agents": "x",
        CH + "skills/bad/SKILL.md": "x", CH + "skills/bad/agents/openai.yaml": POL,
        AG + "ag/SKILL.md": sk("ag", "d"), AG + "ag/agents/openai.yaml": TOOL}, None, {}, [v2()]
    yield "openai.yaml: unreadable", {
        CH + "skills/a/SKILL.md": sk("a", "d"), CH + "skills/a/agents/openai.yaml": POL,
        CH + "skills/b/SKILL.md": sk("b", "d"), CH + "skills/b/agents/openai.yaml": POL,
        "chmod000": CH + "skills/a/agents/openai.yaml"}, None, {"@nobody": True}, [v2()]
    yield "openai.yaml: unreadable directory", {
        CH + "skills/a/SKILL.md": sk("a", "d"), CH + "skills/a/agents/openai.yaml": POL,
        "chmod000": CH + "skills/a/agents"}, None, {"@nobody": True}, [v2()]
    S = CH + "skills/a/"
    yield "openai.yaml: sandbox", {S + "SKILL.md": sk("a", "d"), S + "agents/openai.yaml": POL}, None, {}, [
        v2(sandbox=sb([ent("@R", "read")])),
        v2(sandbox=sb([ent("@R", "read"), ent("@R/" + S + "agents", "deny")])),
        v2(sandbox=sb([ent("@R", "read"), ent("@R/" + S + "agents/openai.yaml", "deny")])),
        v2(sandbox=sb([ent("@R/" + S + "SKILL.md", "read")]))]
    # plugins
    P = CACHE + "mk/pl/"
    M = "/.codex-plugin/plugin.json"
    yield "plugin: highest version", {P + "1.0.0" + M: '{"name":"pl"}', P + "2.0.0" + M: '{"name":"pl"}',
                                      P + "10.0.0" + M: '{"name":"pl"}',
                                      P + "10.0.0/skills/s/SKILL.md": sk("ps", "d")}, None, {}, [v2()]
    yield "plugin: local wins", {P + "1.0.0" + M: '{"name":"pl"}', P + "local" + M: '{"name":"pl"}',
                                 P + "9" + M: "{}"}, None, {}, [v2()]
    yield "plugin: pre-release and text versions", {P + "1.0.0-beta" + M: "{}", P + "1.0.0" + M: "{}",
                                                    P + "1.0.1-rc.1" + M: "{}"}, None, {}, [v2()]
    yield "plugin: manifest name, files, skills", {
        P + "1" + M: '{"name":"other"}', P + "1/skills/q/SKILL.md": sk("q", "d"),
        P + "1/skills/bad/SKILL.md": "x", P + "1/.mcp.json": "{}", P + "1/.app.json": "{}"}, None, {}, [v2()]
    yield "plugin: no manifest", {P + "1/skills/q/SKILL.md": sk("q", "d")}, None, {}, [v2()]
    yield "plugin: manifest not JSON", {P + "1" + M: "{", P + "2" + M: "[]"}, None, {}, [v2()]
    yield "plugin: a skill's openai.yaml", {P + "1" + M: '{"name":"pl"}', P + "1/skills/q/SKILL.md": sk("q", "d"),
                                            P + "1/skills/q/agents/openai.yaml": TOOL + POL,
                                            P + "1/skills/r/SKILL.md": sk("r", "d"),
                                            P + "1/skills/r/agents/openai.yaml": b"\xff"}, None, {}, [v2()]
    yield "plugin: two marketplaces", {CACHE + "b/x/1" + M: "{}", CACHE + "a/y/1" + M: "{}",
                                       CACHE + "a/b/1" + M: "{}"}, None, {}, [v2()]
    # sandbox
    base = {CH + "skills/a/SKILL.md": sk("a", "d"), AG + "b/SKILL.md": sk("b", "d"),
            CACHE + "m/p/1" + M: "{}"}
    yield "sandbox", base, None, {}, [
        v2(sandbox=sb([ent("@R/home/.codex", "read")])),
        v2(sandbox=sb([ent("@R/home/.agents", "read")])),
        v2(sandbox=sb([ent("@R", "read"), ent("@R/home/.codex/skills", "deny")])),
        v2(sandbox=sb([ent("@R", "read"), ent("@R/home/.codex/skills/a", "deny")])),
        v2(sandbox=sb([ent("@R", "read"), ent("@R/home/.codex/skills/a/SKILL.md", "deny")])),
        v2(sandbox=sb([ent("@R/home/.codex/skills", "read")])),
        v2(sandbox=sb([ent("@R/home/.codex/plugins", "read")])),
        v2(sandbox=sb([ent("@R", "read"), ent("@R/" + CACHE + "m/p/1", "deny")])),
        v2(sandbox=sb([ent("@R", "read"), ent("@R/" + CACHE + "m/p/1" + M, "deny")])),
        # not asked: a deny of the plugin cache itself, which the reference never answers
        v2(sandbox=sb([ent("@R", "read"), ent("@R/" + CACHE + "m", "deny")])),
        v2(sandbox=sb([ent("@R", "read"), ent("@R/" + CACHE + "m/p", "deny")])),
        v2(sandbox=sb([ent("@R", "read"), ent("@R/home/.agents", "deny")])),
        v2(sandbox=sb([ent("@R/" + CACHE + "m/p/1/.codex-plugin", "read")])),
        v2(sandbox=sb([])),
        v2(sandbox=sb([ent("@R", "write")])),
        v2(sandbox={"permissions": {"type": "disabled"}, "windowsSandboxLevel": "disabled",
                    "cwd": "file:///"})]
    yield "bad params", base, None, {}, [
        {"__method": V2, "params": {}}, {"__method": V2, "params": None},
        {"__method": V2, "params": {"cwd": "rel"}}, {"__method": V2, "params": {"cwd": 5}},
        {"__method": V2, "params": ["file:///"]}, {"__method": V2, "params": {"cwd": "file:///", "x": 1}},
        {"__method": V2, "params": {"cwd": "http://x/"}},
        v2(sandbox=sb([ent("@R", "read")], cwd=None)),
        v2(sandbox={"permissions": {"type": "disabled"}, "windowsSandboxLevel": "disabled"}),
        v2(sandbox={"permissions": {"type": "bogus"}, "windowsSandboxLevel": "disabled"}),
        v2(sandbox=sb([ent("@R", "read")], cwd="rel")),
        v2(sandbox=5), v2(sandbox=None), v2(sandbox=[])]
    # the legacy method
    yield "discoverV1", dict(SKILLS, **{CH + "skills/meta/agents/openai.yaml": "interface: {}\n"}), None, {}, [
        v1(("h", "@R/home/.codex/skills"), ("g", "@R/home/.agents/skills")),
        v1(("x", "@R/nowhere")), v1(("f", "@R/home/.codex/skills/a/SKILL.md")), v1(),
        {"__method": V1, "params": {}}, {"__method": V1, "params": {"roots": [{"id": "x"}]}},
        v1(("s", {"id": "s", "path": "file://@R/home/.codex/skills",
                  "sandbox": sb([ent("@R/home/.agents", "read")])})),
        v1(("s", {"id": "s", "path": "file://@R/home/.codex/skills",
                  "sandbox": sb([ent("@R", "read"), ent("@R/home/.codex/skills", "deny")])})),
        v1(("s", {"id": "s", "path": "file://@R/home/.codex/skills",
                  "sandbox": sb([ent("@R", "read"), ent("@R/home/.codex/skills/a", "deny")])})),
        v1(("s", {"id": "s", "path": "file://@R/home/.codex/skills",
                  "sandbox": sb([ent("@R", "read"), ent("@R/home/.codex/skills/meta/agents", "deny")])})),
        v1(("s", {"id": "s", "path": "file://@R/home/.codex/skills",
                  "sandbox": sb([ent("@R", "read")], cwd=None)})),
        v1(("s", {"id": "s", "path": "file://@R/home/.codex/skills", "sandbox": 5})),
        v1(("s", {"id": "s", "path": "file://@R/home/.codex/skills", "sandbox": None})),
        v1(("s", {"id": "s", "path": "file://@R/home/.codex/skills",
                  "sandbox": {"permissions": {"type": "bogus"}, "windowsSandboxLevel": "disabled"}}))]
    # a skill's files linked to what the sandbox denies or does not show: never read
    LK = {CH + "skills/s1/SKILL.md": sk("s1", "d"), CH + "skills/s1/agents/openai.yaml->secret/key": "",
          CH + "skills/s2/SKILL.md": sk("s2", "d"), CH + "skills/s2/agents/openai.yaml->out/o": "",
          CH + "skills/s3/SKILL.md->secret/S.md": "", CH + "skills/s4/SKILL.md->out/S.md": "",
          "secret/key": POL, "secret/S.md": sk("sec", "d"), "out/o": TOOL, "out/S.md": sk("out", "d")}
    yield "sandbox: links out of it", LK, None, {}, [
        v1(("s", {"id": "s", "path": "file://@R/home/.codex/skills",
                  "sandbox": sb([ent("@R/home", "read"), ent("@R/secret", "deny")])})),
        v1(("s", {"id": "s", "path": "file://@R/home/.codex/skills",
                  "sandbox": sb([ent("@R", "read"), ent("@R/secret", "deny")])})),
        v2(sandbox=sb([ent("@R/home", "read"), ent("@R/secret", "deny")])),
        v2(sandbox=sb([ent("@R", "read"), ent("@R/secret", "deny")])), v2(),
        v1(("s", "@R/home/.codex/skills"))]
    # issue 34: what an independent differential run found
    for vs in [["1.0.0", "1.0.0-beta"], ["1.9", "1.10"], ["2", "10"], ["1.10.0", "1.9"], ["2.0.0", "10"],
               ["1.0.0-beta", "1.0.0+b"], ["a b", "0"], ["1.0.0 ", "1.0.0"], ["x~"], ["a@b", "a:b"],
               ["0", "1.10.0", "1.9.0"], ["1.0.0-beta.2", "1.0.0-beta.10"], ["1.0.0+1", "1.0.0+01"]]:
        yield "plugin versions " + " ".join(map(repr, vs)), {
            CACHE + "m/pl/" + v + "/.codex-plugin/plugin.json": '{"name": "pl"}' for v in vs}, None, {}, [v2()]
    for name, ch in [("missing", "@R/nowhere"), ("relative", "rel/x"), ("a regular file", "@R/file"),
                     ("dangling", "@R/dangling"), ("a symlink", "@R/chl")]:
        yield "CODEX_HOME " + name, {"file": "x", "dangling->nowhere": "", "chl->home/.codex": "",
                                     CH + "skills/a/SKILL.md": sk("a", "d")}, None, {"CODEX_HOME": ch}, [v2()]
    PL = {"pl/.codex-plugin/plugin.json": '{"name": "pl", "version": "1"}', "pl/.mcp.json": '{"mcpServers": {}}',
          "pl/.app.json": '{"apps": {}}', "pl/skills/a/SKILL.md": sk("s", "d"),
          "cl/.claude-plugin/plugin.json": '{"name": "cl"}', "cu/.cursor-plugin/plugin.json": '{"name": "cu"}',
          "bad/.codex-plugin/plugin.json": '{nope', "both/.codex-plugin/plugin.json": '{"name": "b1"}',
          "both/.claude-plugin/plugin.json": '{"name": "b2"}'}
    yield "discoverV1: plugin roots", PL, None, {}, [
        v1(("pl", "@R/pl"), ("cl", "@R/cl"), ("cu", "@R/cu"), ("bad", "@R/bad"), ("both", "@R/both"))]
    yield "discoverV1: an unreadable SKILL.md", {"sk/a/SKILL.md": sk("s", "d"), "sk/b/SKILL.md": sk("t", "d"),
                                                  "chmod000": "sk/b/SKILL.md"}, None, {"@nobody": True}, [
        v1(("sk", "@R/sk"))]
    # issue 34: found by tests/gendiff.py (seed 34), kept
    FM = ["[x]", "{a: b}", "[x, y]", "[]", "{}", "{a: b", "[x", "- x", "a: b", "&a x", "*a", "!x y", "x]",
          "{a}", "[x]y", "| x", ">", "@x", "%x"]
    fm = {}
    for i, v in enumerate(FM):
        fm[CH + "skills/n%02d/SKILL.md" % i] = "---\nname: %s\ndescription: d\n---\n" % v
        fm[CH + "skills/d%02d/SKILL.md" % i] = "---\nname: d%02d\ndescription: %s\n---\n" % (i, v)
        fm[CH + "skills/s%02d/SKILL.md" % i] = \
            "---\nname: s%02d\ndescription: d\nmetadata:\n  short-description: %s\n---\n" % (i, v)
    yield "gendiff: front matter values", fm, None, {}, [v2()]
    yield "gendiff: plugin names and manifests", {
        CACHE + "a b/pl/1.0.0/.codex-plugin/plugin.json": '{"name": "pl"}',
        CACHE + "m/p@/1.0.0/.codex-plugin/plugin.json": '{"name": "pl"}',
        CACHE + "m/pl/.hidden/.cursor-plugin/plugin.json": '{"name": "pl"}',
        CACHE + "m/p2/1.0.0/.claude-plugin/plugin.json": '{"name": 5}',
        CACHE + "m/p3/1.0.0/.claude-plugin/plugin.json": '{"name": ""}',
        CACHE + "m/p4/2.0.0/.cursor-plugin/plugin.json": '{"name": "x"}',
        CACHE + "m/p4/2.0.0/.mcp.json": "bad"}, None, {}, [v2()]
    for n, (what, mode) in enumerate([("a manifest directory", "r/.claude-plugin/plugin.json"),
                                      ("the root", "r"), ("the manifest", "r/.codex-plugin/plugin.json"),
                                      ("a directory", "r/deep/x")]):
        yield "gendiff: discoverV1, mode 000 on %s" % what, {
            "r/.claude-plugin/plugin.json/": "", "r/.mcp.json": "{}", "r/.codex-plugin/plugin.json": '{"name": 5}',
            "r/S0/SKILL.md": sk("a", "b"), "r/deep/x/SKILL.md": sk("c", "d"), "chmod000": mode}, None, {
            "@nobody": True}, [v1(("r", "@R/r"))]
    yield "gendiff: discoverV1, not UTF-8, a space", {
        "r/z/SKILL.md": b"---\nname: x\ndescription: \xff\n---\n", "a b/s/SKILL.md": sk("s", "d")}, None, {}, [
        v1(("r", "@R/r"), ("sp", "@R/a b"))]
    yield "gendiff: discoverV1 walks breadth first", {
        "r/s1/SKILL.md": sk("a", "b"), "r/deep/s0/x/SKILL.md": sk("c", "d"), "r/deep/s2/x/SKILL.md": sk("e", "f"),
        "r/a/b/c/d/SKILL.md": sk("g", "h"), "chmod000": ["r/deep/s0/x", "r/s1", "r/a/b/c"]}, None, {
        "@nobody": True}, [v1(("r", "@R/r"))]
    yield "gendiff: discoverV1 warnings in order", {
        "r/.cursor-plugin/plugin.json": "{nope", "r/.mcp.json": "{}", "r/skills/s0/SKILL.md": b"---\n\xff\n---\n",
        "r/skills/.h1/SKILL.md": sk("a", "b"),
        "chmod000": ["r/.cursor-plugin/plugin.json", "r/skills/.h1"]}, None, {"@nobody": True}, [v1(("r", "@R/r"))]
    yield "gendiff: discoverV1 plugin files before skills", {
        "r/.codex-plugin/plugin.json": "[]", "r/.mcp.json": "{}", "r/skills/.h1/SKILL.md": sk("a", "b"),
        "r/skills/s2/SKILL.md": b"---\n\xff\n---\n", "chmod000": ["r/.mcp.json", "r/skills/.h1/SKILL.md"]}, None, {
        "@nobody": True}, [v1(("r", "@R/r"))]
    yield "gendiff: discoverV1 unreadable .mcp.json", {
        "r/.codex-plugin/plugin.json": '{"name": "pl"}', "r/.mcp.json": "bad", "r/.app.json": "{}",
        "r/skills/.h1/SKILL.md": sk("a", "b"), "chmod000": ["r/skills/.h1", "r/.mcp.json"]}, None, {
        "@nobody": True}, [v1(("r", "@R/r"))]
    yield "gendiff: discoverV2 unreadable plugin files", {
        CACHE + "m/p2/2.0.0/.codex-plugin/plugin.json": "{}", CACHE + "m/p2/2.0.0/.mcp.json": "{}",
        CACHE + "m/p2/2.0.0/.app.json": "bad", "chmod000": [CACHE + "m/p2/2.0.0/.mcp.json"]}, None, {
        "@nobody": True}, [v2()]
    yield "gendiff: one warning for a plugin", {
        CACHE + "m/p2/2.0.0/.codex-plugin/plugin.json": "{}", CACHE + "m/p2/2.0.0/.mcp.json": "{}",
        CACHE + "m/p2/2.0.0/skills/s1/SKILL.md": "---\nname: |\n  block\n---\nbody\n",
        CACHE + "m/zz/10/": "", CACHE + "m/zz/1.0.0+b1/.codex-plugin/plugin.json": "{nope",
        "chmod000": [CACHE + "m/p2/2.0.0/.mcp.json"]}, None, {"@nobody": True}, [v2()]
    yield "gendiff: plugin versions in directory order", {
        CACHE + "m/pl/1.0.0-01/": "", CACHE + "m/pl/1.0.0/": "",
        CACHE + "m/pl/1.0.0-alpha.1/.claude-plugin/plugin.json": '{"name": "other"}'}, None, {}, [v2()]
    # /etc/codex
    yield "etc: system skills come last", SKILLS, {"skills/z/SKILL.md": sk("etc", "d")}, {}, [v2()]
    yield "etc: invalid system skill", {}, {"skills/z/SKILL.md": "x"}, {}, [v2()]


def deep_bound(execd, scratch):
    """Not differential: a file nested deeper than execd reads (64) is
    refused at once; the reference reads it, in time quadratic in its depth
    (1 MiB of "[" takes it minutes; execd 0.2 s: the 60 s bound tells a
    refusal from a hang, not a speed).  (ok, detail)"""
    root = os.path.join(scratch, "deep")
    d = CH + "skills/s/"
    os.makedirs(os.path.join(root, "home", ".codex"))
    write_tree(root, {d + "SKILL.md": sk("s", "d"), d + "agents/openai.yaml":
                      POL + "x: " + "[" * 500000 + "]" * 500000 + "\n"})
    e = {"PATH": "/usr/bin:/bin", "HOME": root + "/home", "CODEX_HOME": root + "/home/.codex"}
    start = time.time()
    got, _ = run([execd, "--stdio", "--kill-grace-ms", "0"], e, root,
                 json.loads(json.dumps([v2()]).replace("@R", root)))
    took = time.time() - start
    skills = (got[0] or {}).get("skills") or [{}]
    ok = got[0] is not None and skills[0].get("policy", 0) is None and took < 60
    return ok, "answered in %.1f s: %s" % (took, json.dumps(got[0])[:200])


def alias_bound(execd, scratch):
    """Not differential: aliases that make the reading visit a map of 40000
    keys for each of 100000 tools (4e9 node visits, minutes) are refused
    once the reading has cost 4 Mi visits; the file is then worthless, as
    a syntax error makes it.  A 20 s bound tells a refusal from a hang.
    (ok, detail)"""
    root = os.path.join(scratch, "aliases")
    d = CH + "skills/s/"
    os.makedirs(os.path.join(root, "home", ".codex"))
    big = "t: &t {%s}\n" % ", ".join("k%d: 0" % i for i in range(40000))
    tools = "dependencies:\n  tools: [%s]\n" % ", ".join(["*t"] * 100000)
    text = POL + big + tools
    write_tree(root, {d + "SKILL.md": sk("s", "d"), d + "agents/openai.yaml": text})
    e = {"PATH": "/usr/bin:/bin", "HOME": root + "/home", "CODEX_HOME": root + "/home/.codex"}
    start = time.time()
    got, _ = run([execd, "--stdio", "--kill-grace-ms", "0"], e, root,
                 json.loads(json.dumps([v2()]).replace("@R", root)), timeout=20)
    took = time.time() - start
    skills = (got[0] or {}).get("skills") or [{}]
    ok = len(text) <= 1 << 20 and got[0] is not None and skills[0].get("policy", 0) is None
    return ok, "%d bytes, answered in %.1f s: %s" % (len(text), took, json.dumps(got[0])[:200])


def main():
    return run_cases(((name, files, etc, env, "@R", reqs) for name, files, etc, env, reqs in cases()),
                     "DISCOVER",
                     [("openai.yaml: nested deeper than execd reads (not differential)", deep_bound),
                      ("openai.yaml: aliases past execd's reading bound (not differential)",
                       alias_bound)])


if __name__ == "__main__":
    sys.exit(main())
