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
import sys

from refdiff import run_cases

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
    # /etc/codex
    yield "etc: system skills come last", SKILLS, {"skills/z/SKILL.md": sk("etc", "d")}, {}, [v2()]
    yield "etc: invalid system skill", {}, {"skills/z/SKILL.md": "x"}, {}, [v2()]


def main():
    return run_cases(((name, files, etc, env, "@R", reqs) for name, files, etc, env, reqs in cases()),
                     "DISCOVER")


if __name__ == "__main__":
    sys.exit(main())
