#!/usr/bin/python3
"""Differential test of environmentConfig/read: execd against the reference.

Each case writes a tree of files (a HOME with its .codex, projects, and
what /etc/codex holds), then sends the same requests to both servers,
started with the same HOME, CODEX_HOME and working directory, and compares
the answers byte for byte (results and errors alike).  Output is TAP.

/etc/codex is read by both servers.  Run as root with unshare(1), the test
re-runs itself in a mount namespace of its own with an overlay on /etc, so
that the cases can write /etc/codex without touching the host's; otherwise
the cases that need /etc/codex are skipped (and so are all cases when the
host has an /etc/codex of its own).

  EXECD      execd binary (default $top_builddir/src/execd)
  CODEX_REF  reference binary (default: the installed codex)
  ENVCONFIG_ONLY=REGEX  run only the cases whose name matches
  ENVCONFIG_VERBOSE=1   print both answers of every case
"""
import re
import sys

# BUILD and find_ref: tests/sandbox/rootwrite.py finds its servers through this module
from refdiff import BUILD, find_ref, run_cases  # noqa: F401


def trusted(*dirs):
    return "".join('[projects."@R/%s"]\ntrust_level = "trusted"\n' % d for d in dirs)


def paths(*keys):
    return [k.split(".") if isinstance(k, str) else k for k in keys]


def read(cwd="@R", config=(), requirements=()):
    return {"cwd": "file://" + cwd, "configPaths": paths(*config),
            "requirementsPaths": paths(*requirements)}


RESERIALISE = r"""
f1 = 6.626e-34
f2 = -nan
f3 = +inf
f4 = -inf
f5 = 1e10
f6 = 1.5
f7 = -0.0
f8 = 3e22
f9 = 1_000.5
f10 = 0.1
f11 = 123456789012345678.0
f12 = 5e-324
f13 = 1.7976931348623157e308
f14 = 0.30000000000000004
i1 = 0x10
i2 = -9223372036854775808
i3 = +5
i4 = 1_000
i5 = 0o777
i6 = 0b101
b = true
s1 = 'a"b'
s2 = "a\\b"
s3 = "it's"
s4 = "a\nb"
s5 = "tab\there"
s6 = "ctl\u0001x"
s7 = "both ' and \" "
s8 = '''
multi
line'''
s9 = 'C:\path'
s10 = "quote'''three"
s11 = "end'"
s12 = "nl\n'''x"
s13 = "\u00e9\u2028"
s14 = "cr\r\n"
s15 = "del\u007f"
s16 = "bs\\ and ' one"
s17 = "a\"b\nc"
s18 = "\e[0m\x41"
s19 = ""
s20 = "a\"\"\"b'"
s21 = "x\\\n\t"
s22 = '''two '' quotes'''
s23 = \"""line \
   joined\"""
d1 = 1979-05-27T07:32:00Z
d2 = 1979-05-27T00:32:00.999999-07:00
d3 = 1979-05-27T07:32:00
d4 = 1979-05-27
d5 = 07:32:00
d6 = 00:32:00.5
d7 = 1979-05-27 07:32:00Z
d8 = 1979-05-27T07:32:00.123456789123Z
d9 = 1979-05-27t07:32:00z
d10 = 1979-05-27T07:32:00+00:00
d11 = 07:32:00.000
d12 = 2000-02-29
a1 = [1, 2, 3]
a2 = []
a3 = [[1, 2], ["a"]]
a4 = [{x = 1}, {y = 2}]
a5 = [1, {x = 1}]
a6 = [ {} ]
a7 = [1.0, "x", [ ], { a = { b = 1 } }]
a8 = [
  1,  # one
  2,
]
it = { a = 1, b.c = 2, d = {} }
e = {}
"quoted key" = 1
"a.b" = 2
"" = 3
'lit' = 4
"k\"q" = 5
"ü" = 6
"a b" = 7
-_ = 8
"nl\nkey" = 9
"tab\tkey" = 10
""".replace('\\"""', '"""')

TABLES = """
a = 1
s = "x"
arr = [1,2]
[t]
x = 1
[t.u]
y = 2
[[aot]]
n = 1
[aot.sub]
k = 1
[[aot.inner]]
z = 1
[[aot]]
n = 2
[only]
[only.child]
q = 1
[ta]
[[ta.x]]
w = 1
[d]
p.q.r = 1
p.s = 2
[d.p.t]
u = 3
"""

MORE = r"""
m1 = "q\"\n\u0001"
m2 = "cr\r only"
m3 = 'a	"'
m4 = "tab\t and \"\"\" three"
m5 = "x\\y\ttab"
m6 = "\"\"\"\n@@@"
m7 = "q\"\n\tx"
m8 = "\"\"\"\"\"\n\u0002\""
m9 = "it's\ttab"
f1 = 1e300
f2 = -0
f3 = +0.0
f4 = 1E5
f5 = 1e-7
f6 = 123e-20
f7 = 9007199254740993.0
f8 = 1e22
f9 = 1e21
d1 = 1979-05-27T07:32:00-00:00
d2 = 1979-05-27T07:32:00.0
d3 = 1979-05-27T07:32:00.100Z
d4 = 0001-01-01
n1 = { a = [{ b = 1 }, { c = { d = 2 } }] }
n2 = [[{ x = 1 }], [{ y = 2 }]]
n3 = [{ a = [1, { b = [] }] }]
[ spaced . "quoted.part" ]
k = 1
[[ aot ]]
[aot.sub]
x = 1
[[aot.sub2]]
[[aot]]
y = 2
""".replace("@@@", "'" * 3)

BAD = [
    "a = \n", 'a = 1\nb = "x\n', "[t]\na=1\n[t]\n", "a=1\na=2\n", "x = 1979-13-01\n",
    "\u00e9 = 1\n", "a = [1,\n", "a = { b = 1\n", "a = 0x\n", 's = "\\q"\n', "\ufeffa = 1\n",
    "a = 1 b = 2\n", 'a = "\x01"\n', "a.b = 1\n[a]\n", "[a]\nb = 1\n[a.b]\n",
    "a = {}\n[a]\n", "a = [1]\n[[a]]\n", "a = 'x\n", "a = '''x\n", 'a = """x\n',
    "[a\n", "[[a]\n", "= 1\n", "a = tru\n", "a = 1\n\n\n   b = \n", "a = 1__0\n",
    "a = 01\n", "a = 1.\n", "a = .5\n", "a = 1e\n", "a = 2021-02-30\n", "a = 25:00:00\n",
    "a = { b = 1, }\n", "a = {\n b = 1 }\n", "a = \"\\uD800\"\n", "a = 1 # \x01\n",
    "a = 9223372036854775808\n", "[a]]\n", "a = [1 2]\n", "a = 'x' 'y'\n",
    "a = -\n", "a = 07:32\n", "a = 1979-05-27T07:32Z\n", "a = 1979-05-27T\n",
    "a = 18446744073709551616\n", "a = -9223372036854775809\n", "a = 0xG\n", "a = 0x_1\n",
    "a = 1_\n", "a = +0x1\n", "a = 1e1.5\n", "a = nan1\n", "a = -inf_\n",
    "a = 1979-05-27T07:32:60Z\n", "a = 1979-05-27T24:00:00\n", "a = 1979-05-27T07:60:00\n",
    "a = 1979-00-27\n", "a = 1979-05-00\n", 'a = "\\x4"\n', 'a = "\\u12"\n',
    'a = "\\U00110000"\n', "a = " + "'" * 3 + "x" + "'" * 6 + "\n", "a = '\x7f'\n", "[]\n",
    "[[]]\n", "[a.]\n", "a. = 1\n", "a = 1\r\nb = \n", "a\n", "a = { b = 1, b = 2 }\n",
    "a = { b.c = 1 }\n[a.b]\n", "[a]\nb.c = 1\n[a.b.d]\n", "x = [{a=1}]\n[[x]]\n",
    "[[x]]\n[x]\n", 'a = """\\ \n  x"""\n', "a = 'x\ty'\n", 'a = "x\ry"\n',
    "a = [\n  1,\n  # c\n  2\n  3]\n", "a = 1\r\n", "a = 1\rb = 2\n", "a = 1e400\n",
    "a = 0o8\n", "a = 0b2\n", "a = 0xFFFFFFFFFFFFFFFFF\n", "a = 1.5x\n", "a = ['a' 'b']\n",
    "a = [1, 'a'\n'b']\n", "a = 07:3\n", "a = 07:32:0\n", "a = 1979-05-27T07:32:00+25:00\n",
    # issue 34: the words and the caret's width
    "a b = 1\n", "a.\n", "a\tb = 1\n", "[a]\nb c\n", "a 'b'\n", "ab=1\nab=2\n", '"ab"=1\n"ab"=2\n',
    "[ t.uu ]\n[t.uu]\n", "a.bc=1\na . bc =2\n", "xx=1\n[[xx]]\n",
    "a = {b = 1}\na.c = 2\n", "a = 'x'\na.b = 1\n", "[[a]]\na.b = 1\n", "a = 1979-05-27\n[a.b]\n", "a = 1\n[a.b]\n", "a = [1]\n[a.b]\n", "a = \"\"\"x\"\"\"\"\"\"\n",
]


def cases():
    """(name, files, etc, env, cwd, requests); etc None: /etc/codex absent."""
    U = "home/.codex/config.toml"
    L3 = {"p/.codex/config.toml": "a = 1\n", "p/a/.codex/config.toml": "a = 2\n",
          "p/a/b/.codex/config.toml": "a = 3\n"}
    yield "user layer only", {U: 'model = "x"\n[mcp_servers.a]\ncommand = "foo"\n'}, None, {}, "@R", [
        read(config=["mcp_servers", "model"], requirements=["mcp_servers"])]
    yield "no layers at all", {}, None, {}, "@R", [read(config=["a"], requirements=["a"])]
    yield "CODEX_HOME empty: HOME/.codex", {U: "a = 1\n"}, None, {"CODEX_HOME": ""}, "@R", [
        read(config=["a"])]
    yield "CODEX_HOME unset", {U: "a = 1\n"}, None, {"CODEX_HOME": None}, "@R", [read(config=["a"])]
    yield "CODEX_HOME missing", {}, None, {"CODEX_HOME": "@R/nowhere"}, "@R", [read(config=["a"])]
    yield "CODEX_HOME a symlink", {U: "a = 1\n", "link->home/.codex": ""}, None, {
        "CODEX_HOME": "@R/link"}, "@R", [read(config=["a"])]
    yield "HOME unset, CODEX_HOME set", {U: "a = 1\n"}, None, {"HOME": None}, "@R", [read(config=["a"])]
    # projects and trust
    for name, extra, cwd in [
            ("root trusted: subdirectories inherit", {U: trusted("p"), "p/.git/HEAD": "x"}, "@R/p/a/b"),
            ("explicitly untrusted subdirectory", {U: trusted("p") + '[projects."@R/p/a"]\ntrust_level = "untrusted"\n', "p/.git": "x"}, "@R/p/a/b"),
            ("trusted subdirectory, root not", {U: trusted("p/a/b"), "p/.git": "x"}, "@R/p/a/b"),
            ("trusted middle directory", {U: trusted("p/a"), "p/.git": "x"}, "@R/p/a/b"),
            ("trust above the root does not count", {U: trusted(""), "p/.git": "x"}, "@R/p/a/b"),
            ("root below the trusted directory", {U: trusted("p"), "p/a/.git": "x"}, "@R/p/a/b"),
            ("empty .git directory marks nothing", {U: trusted("p/a"), "p/a/.git/": "", "p/.git": "x"}, "@R/p/a/b"),
            ("custom root marker", {U: 'project_root_markers = ["ROOT"]\n' + trusted("p"), "p/ROOT": "", "p/a/.git": "x"}, "@R/p/a/b"),
            ("custom marker directory", {U: 'project_root_markers = ["ROOT"]\n' + trusted("p"), "p/ROOT/": ""}, "@R/p/a/b"),
            ("nearest marker wins", {U: 'project_root_markers = ["ROOT"]\n' + trusted("p"), "p/ROOT": "", "p/a/ROOT": ""}, "@R/p/a/b"),
            ("no markers: cwd alone", {U: 'project_root_markers = []\n' + trusted("p", "p/a/b")}, "@R/p/a/b"),
            ("untrusted everywhere", {U: "", "p/.git": "x"}, "@R/p/a/b"),
            ("cwd does not exist", {U: trusted("p"), "p/.git": "x"}, "@R/p/zz/yy"),
            ("cwd is a file", {U: trusted("p"), "p/.git": "x", "p/f": "x"}, "@R/p/f"),
            ("cwd with a trailing slash", {U: trusted("p"), "p/.git": "x"}, "@R/p/a/"),
            ("cwd the root directory", {U: trusted("p")}, "/")]:
        files = dict(L3)
        files.update(extra)
        yield "project: " + name, files, None, {}, cwd, [read(cwd=cwd, config=["a"])]
    yield "project: dropped keys", {U: trusted("p"), "p/.git": "x", "p/.codex/config.toml":
        "a = 1\nprofile = 'x'\nprofiles = {}\nmodel_provider = 'm'\nmodel_providers = {}\n"
        "openai_base_url = 'u'\nchatgpt_base_url = 'c'\nnotify = ['a']\nmodel = 'k'\n"}, None, {}, "@R/p", [
        read(cwd="@R/p", config=["a", "profile", "profiles", "model_provider", "model_providers",
                                 "openai_base_url", "chatgpt_base_url", "notify", "model"])]
    yield "project: broken untrusted is ignored", {U: "", "p/.git": "x", "p/.codex/config.toml": "a = \n"}, None, {}, "@R/p", [
        read(cwd="@R/p", config=["a"])]
    yield "project: broken trusted fails", {U: trusted("p"), "p/.git": "x", "p/.codex/config.toml": "a = 1\n\n  b = [1,\n"}, None, {}, "@R/p", [
        read(cwd="@R/p", config=["a"])]
    yield "project: config.toml a directory", {U: trusted("p"), "p/.git": "x", "p/.codex/config.toml/": ""}, None, {}, "@R/p", [
        read(cwd="@R/p", config=["a"])]
    yield "project: .codex a file", {U: trusted("p"), "p/.git": "x", "p/.codex": "x"}, None, {}, "@R/p", [
        read(cwd="@R/p", config=["a"])]
    # projection
    yield "projection", {U: TABLES}, None, {}, "@R", [
        read(config=[k]) for k in ["a.b", "s.x.y", "t.missing", "t.u.missing", "nope", "aot",
                                   "aot.n", "only", "ta", "d", "d.p", "d.p.q", "arr.0",
                                   "nope.deeper", "t.missing.deeper"]] + [
        read(config=["t.u", "t"]), read(config=["t", "t.u"]), read(config=["t.x", "nope"]),
        read(config=["aot", "a", "t"]), read(config=["a"], requirements=["a"])]
    yield "empty paths", {U: TABLES}, None, {}, "@R", [
        read(), read(config=[[]]), read(config=["a", []]), read(requirements=[[]]),
        read(config=[[""]]), read(config=[["a"]] * 3)]
    yield "bad params", {U: "a = 1\n"}, None, {}, "@R", [
        {"__raw_params": {"configPaths": [["a"]], "requirementsPaths": []}},
        {"__raw_params": {"cwd": "file:///", "requirementsPaths": []}},
        {"__raw_params": {"cwd": "file:///", "configPaths": [["a"]]}},
        {"__raw_params": {"cwd": "/relative", "configPaths": [["a"]], "requirementsPaths": []}},
        {"__raw_params": {"cwd": 5, "configPaths": [["a"]], "requirementsPaths": []}},
        {"__raw_params": {"cwd": "file:///", "configPaths": "a", "requirementsPaths": []}},
        {"__raw_params": {"cwd": "file:///", "configPaths": ["a"], "requirementsPaths": []}},
        {"__raw_params": {"cwd": "file:///", "configPaths": [[1]], "requirementsPaths": []}},
        {"__raw_params": {"cwd": "file://host/x", "configPaths": [["a"]], "requirementsPaths": []}},
        {"__raw_params": {"cwd": "http://x/", "configPaths": [["a"]], "requirementsPaths": []}},
        {"__raw_params": ["file:///", [["a"]], []]},
        {"__raw_params": ["file:///", [["a"]]]},
        {"__raw_params": {"cwd": "file:///", "configPaths": [], "requirementsPaths": [], "x": 1}},
        {"__raw_params": None}]
    # re-serialisation
    keys = [m.group(1) for m in re.finditer(r"^([A-Za-z0-9_-]+) =", RESERIALISE, re.M)]
    yield "re-serialisation", {U: RESERIALISE}, None, {}, "@R", [
        read(config=keys), read(config=[["quoted key"], ["a.b"], [""], ["lit"], ['k"q'], ["\u00fc"],
                                        ["a b"], ["-_"], ["nl\nkey"], ["tab\tkey"]])]
    keys2 = [m.group(1) for m in re.finditer(r"^([A-Za-z0-9_-]+) =", MORE, re.M)]
    yield "re-serialisation 2", {U: MORE}, None, {}, "@R", [
        read(config=keys2 + ["spaced", "aot"]), read(config=[["spaced", "quoted.part", "k"]])]
    ml = "'" * 3
    yield "CRLF, comments, empty layers", {
        U: "# only a comment\r\n\r\n" + trusted("p", "q"), "p/.git": "x", "p/.codex/config.toml": "",
        "q/.git": "x", "q/.codex/config.toml": "a = 1\r\nb = %sx\r\ny%s\r\n# c\r\n" % (ml, ml)}, None, {}, "@R", [
        read(cwd="@R/p", config=["a"]), read(cwd="@R/q", config=["a", "b"]), read(config=["projects"])]
    # malformed and unreadable
    for i, bad in enumerate(BAD):
        yield "malformed user config %d %r" % (i, bad), {U: bad}, None, {}, "@R", [read(config=["a"])]
    yield "malformed project config 2", {U: trusted("p"), "p/.git": "x", "p/.codex/config.toml":
        "a = 1\n" * 12 + "x = [1,\n"}, None, {}, "@R/p", [read(cwd="@R/p", config=["a"])]
    yield "user config a directory", {"home/.codex/config.toml/": ""}, None, {}, "@R", [read(config=["a"])]
    yield "user config not UTF-8", {U: b"a = '\xff'\n"}, None, {}, "@R", [read(config=["a"])]
    yield "user config a dangling symlink", {"home/.codex/config.toml->nowhere": ""}, None, {}, "@R", [
        read(config=["a"])]
    # unreadable files: run as nobody when we are root (root reads anything)
    nobody = {"@nobody": True}
    yield "user config unreadable", {U: "a = 1\n", "chmod000": U}, None, nobody, "@R", [
        read(config=["a"])]
    yield "project config unreadable", {U: trusted("p"), "p/.git": "x", "p/.codex/config.toml": "a = 1\n",
                                        "chmod000": "p/.codex/config.toml"}, None, nobody, "@R/p", [
        read(cwd="@R/p", config=["a"])]
    yield "project .codex unsearchable", {U: trusted("p"), "p/.git": "x", "p/.codex/config.toml": "a = 1\n",
                                          "chmod000": "p/.codex"}, None, nobody, "@R/p", [
        read(cwd="@R/p", config=["a"])]
    yield "CODEX_HOME unsearchable", {U: "a = 1\n", "chmod000": "home/.codex"}, None, nobody, "@R", [
        read(config=["a"])]
    # issue 34: what an independent differential run found
    LK = dict(L3, **{"p/.git": "x", "alink->p": ""})
    yield "symlinked project: trust of where it leads", dict(LK, **{U: trusted("p")}), None, {}, \
        "@R/alink/a/b", [read(cwd="@R/alink/a/b", config=["a"])]
    yield "symlinked project: trust of the link", dict(LK, **{U: trusted("alink")}), None, {}, \
        "@R/alink/a/b", [read(cwd="@R/alink/a/b", config=["a"])]
    for d in ["p/a/b", "p/a"]:
        yield "unsearchable %s below a readable project" % d, dict(L3, **{
            U: trusted("p"), "p/.git": "x", "p/a/b/c/": "", "chmod000": d}), None, nobody, \
            "@R/p/a/b/c", [read(cwd="@R/p/a/b/c", config=["a"])]
    for name, ch in [("missing", "@R/nowhere"), ("relative", "rel/x"), ("a regular file", "@R/file"),
                     ("dangling", "@R/dangling")]:
        yield "CODEX_HOME " + name, {U: "a = 1\n", "file": "x", "dangling->nowhere": ""}, None, {
            "CODEX_HOME": ch}, "@R", [read(config=["a"])]
    yield "more than 10,000 keys in a table", {U: "[t]\n" + "".join(
        "k%d = 'v%d'\n" % (i, i) for i in range(150000)) + "[u]\nk0 = 1\nk0 = 2\n"}, None, {}, "@R", [
        read(config=["t.k149999", "u"])]
    yield "more than 10,000 keys: project layer", {U: trusted("p"), "p/.git": "x", "p/.codex/config.toml":
        "".join("k%d = %d\n" % (i, i) for i in range(20000)) + "model = 1\nk5 = 1\n"}, None, {}, "@R/p", [
        read(cwd="@R/p", config=["k19999", "model", "k3"])]
    # issue 34: found by tests/gendiff.py (seed 34), kept
    for t in ['"Trusted"', '""', "1", "true", "[]", "{}", "1979-05-27"]:
        yield "gendiff: trust_level %s" % t, {U: '[projects."@R/q"]\ntrust_level = %s\n' % t, "p/.git": "x"}, \
            None, {}, "@R/p", [read(cwd="@R/p", config=["a"])]
    for t in ["projects = 1\n", "projects = []\n", 'projects."@R/p" = 1\n', "[[projects]]\n"]:
        yield "gendiff: projects %r" % t, {U: t}, None, {}, "@R", [read(config=["a"])]
    yield "gendiff: untrusted project's unreadable config fails", {
        U: "", "p/.git": "x", "p/.codex/config.toml": "a = 1\n", "chmod000": "p/.codex/config.toml"}, \
        None, nobody, "@R/p", [read(cwd="@R/p", config=["a"])]
    yield "gendiff: untrusted project's config.toml a directory", {
        U: "", "p/.git": "x", "p/.codex/config.toml/": ""}, None, {}, "@R/p", [read(cwd="@R/p", config=["a"])]
    yield "gendiff: user error before requirements error", {U: "a = 'x\x7f'\n"}, {
        "requirements.toml": "a = {\n"}, {}, "@R", [read(config=["a"])]
    yield "gendiff: managed approval_policy unknown", {U: ""}, {
        "managed_config.toml": "approval_policy = 'x'\n", "requirements.toml": "a = {\n"}, {}, "@R", [
        read(config=["a"], requirements=["allowed_approval_policies"])]
    yield "gendiff: managed error before an unreadable project", {
        U: "", "p/.git": "x", "p/.codex/config.toml": "", "chmod000": "p/.codex/config.toml"}, {
        "managed_config.toml": "sandbox_mode = 'bogus'\n"}, nobody, "@R/p", [read(cwd="@R/p", config=["a"])]
    yield "gendiff: system projects typed", {U: '[projects."@R/p"]\ntrust_level = ""\n'}, {
        "config.toml": "projects.key = 0o17\n"}, {}, "@R", [read(config=["a"])]
    for i, bad in enumerate(['a = """x\x7fy"""\n', "a = '''x\x01'''\n", "a = b = 1\n", "a = 0o]17\n",
                             "a = 0o\n", "a = tru e\n", "a = x.y\n", "a = b]\n", "a = b c\n",
                             "sand = box_mode32 = 1\n", 'a."b"""59 = 1\n', "appr[[x]]oval = 1\n",
                             "a = 1979-05-27T00:32:00.999999-", "a = { b = 1\n[c]\n", '[["n\n',
                             'a = "\\u00\n', "a] = 1\r\nb = 2\r\n", "  1.5,]\n",
                             'a=1\na=2\nb = "\x7f"\n', "a=1\na=2\nb = \n", "model = {{}\n", '"x\n',
                             "a = { b = 1 =x }\n", 'a = { "m" =x = 1 y = 2 }\n']):
        yield "gendiff: TOML project %d %r" % (i, bad), {U: trusted("p"), "p/.git": "x",
                                                         "p/.codex/config.toml": bad}, None, {}, "@R/p", [
            read(cwd="@R/p", config=["a"])]
        yield "gendiff: TOML user %d %r" % (i, bad), {U: bad}, None, {}, "@R", [read(config=["a"])]
    yield "gendiff: projects entry an array of tables", {U: "a = 1\n"}, {
        "config.toml": '[[projects.m]]\n"b" = 07:32:00\n[[projects.m]]\nkey = {}\n'}, {}, "@R", [read(config=["a"])]
    yield "gendiff: projects entry an empty array", {U: "projects.b = []\n"}, None, {}, "@R", [read(config=["a"])]
    yield "gendiff: projects entry a date-time", {U: "a = 1\n"}, {
        "config.toml": "projects.projects = 1979-05-27T07:32:00\n"}, {}, "@R", [read(config=["a"])]
    yield "gendiff: projects entry a control string", {U: 'projects.s = "ctl\\u0001"\n'}, None, {}, "@R", [
        read(config=["a"])]
    yield "gendiff: system projects replaced by the user's", {U: '[projects."@R/p"]\ntrust_level = "trusted"\n'}, {
        "config.toml": 'projects = "a\\\\b"\n'}, {}, "@R", [read(config=["a"])]
    yield "gendiff: requirements features typed", {U: ""}, {"requirements.toml": "features = 1e-7\n"}, {}, "@R", [
        read(config=["a"], requirements=["features"])]
    yield "gendiff: requirements features a date-time", {U: ""}, {
        "requirements.toml": "features = 1979-05-27 07:32:00Z\n"}, {}, "@R", [read(config=["a"], requirements=["a"])]
    yield "gendiff: the repository's root lends trust whatever the markers", {
        U: 'project_root_markers = ["ROOT/"]\n' + trusted("p"), "p/.git/HEAD": "x", "p/.codex/config.toml": "a = 1\n",
        "p/a/.codex/config.toml": "a = 2\n"}, None, {}, "@R/p/a", [read(cwd="@R/p/a", config=["a"])]
    # 34c (seed 35, case 2974): only a .git directory with its HEAD makes the repository
    # whose root lends trust; a .git file (even one naming a git directory) marks no repository
    for name, git in [("a .git file", {"p/.git": "x"}), ("a gitdir file", {"p/.git": "gitdir: ../g\n", "g/HEAD": "x"}),
                      ("a .git directory", {"p/.git/HEAD": "x"})]:
        for m in ["[]", '["ROOT"]']:
            yield "gendiff: %s lends trust? markers %s" % (name, m), dict(git, **{
                U: "project_root_markers = %s\n" % m + trusted("p"), "p/b0/.codex/config.toml": "a = 1\n"}), \
                None, {}, "@R/p/b0", [read(cwd="@R/p/b0", config=["a"])]
    yield "gendiff: a marker with a slash names a file too", {
        U: 'project_root_markers = ["ROOT/"]\n' + trusted("p"), "p/ROOT": "", "p/.codex/config.toml": "a = 1\n",
        "p/a/.codex/config.toml": "a = 2\n"}, None, {}, "@R/p/a", [read(cwd="@R/p/a", config=["a"])]
    yield "gendiff: typed projects before typed requirements", {U: '[projects."@R/p"]\ntrust_level = 1\n'}, {
        "requirements.toml": "features = 122049\n"}, {}, "@R", [read(config=["a"])]
    yield "gendiff: managed sandbox_mode checked first", {U: ""}, {
        "managed_config.toml": "sandbox_mode = 'bogus'\napproval_policy = 'x'\n"}, {}, "@R", [
        read(config=["a"], requirements=["a"])]
    for i, bad in enumerate(["a = 1979-05\n", "a = 1979-05-2\n", "a = 1979-05x27\n", "a = 1979-\n",
                             "a = [1979-05]\n", "a = 1979-05-27 07\n", "a = 07:3\n", "a = 1979-5-27\n",
                             "a = 1979-05-27x\n", "a = [1979-05", "t = 979-05-27T00:32:00\n",
                             "a = 00:3:00.5\n",
                             "z-z =  = 1\n", "][[a.k1]]\n", "[#m]\n", "[}m.x]\n", "[t\t95]\n",
                             "key = [1_0.5e1,_0, []]\n", "m = 0xdead_{beef\n", "0 = 1.79a b157e308\n",
                             "k = { n = { s = true, appr\n", "a = { k = 1979-13-01{ b = 1 }, c = 1 }\n",
                             "k1 = }true\n", "m = -92233720368541775808\n[m]\n", "m = 99999999999999999999\nb = \n",
                             "m = 9223372036854775808\n", "profile = tru\n", "sandbox_\\mode34 = -inf\n",
                             "a = 1979-05-\r27T07:32:00\n", "a = { b = [1], c = \r-1 }\n",
                             "a = { b = 1, pr\n[x]\n", 'a = { b = "s", "a.\n[x]\n', "'0'.,k1 = 1\n", "x = { a = 1, b = '''\n", "a.s\u00e9n = 1\n"]):
        yield "gendiff: TOML 2 project %d %r" % (i, bad), {U: trusted("p"), "p/.git": "x",
                                                           "p/.codex/config.toml": bad}, None, {}, "@R/p", [
            read(cwd="@R/p", config=["a"])]
        yield "gendiff: TOML 2 user %d %r" % (i, bad), {U: bad}, None, {}, "@R", [read(config=["a"])]
    # issue 34 (34c): the reference checks the whole document's shape (keys, `=`, brackets,
    # commas, line ends, comments, nesting) before it reads any value: a shape error anywhere
    # wins over a bad value, a duplicate key or a bad escape before it
    for i, bad in enumerate(["a = 1979-13-01\nb = [1 2]\n", 'a = "\\q"\n[t\n', "a = 0x\nb = { c = 1 d = 2 }\n",
                             "a = 1\na = 2\nb = 1 # \x01\n", "a = " + "[" * 81 + "1" + "]" * 81 + "\n",
                             "a = " + "[" * 80 + "1" + "]" * 80 + "\n", "a = " + "{b=" * 81 + "1" + "}" * 81 + "\n",
                             "x = 1_\ny = 2\rz = 1\n", "[a]\nb = tru\n]\n", "a = ,-7\n",
                             'a = "\\u12"\nb = { c = 1, , }\n', "a = tru\nb = [1, = 2]\n", "a = 01\n[[t]\n",
                             "a = 1e\nb.c d = 1\n"]):
        yield "gendiff: TOML 3 shape first %d %r" % (i, bad[:40]), {U: bad}, None, {}, "@R", [read(config=["a"])]
    # issue 34 (34c): what the reference's second pass says of a sound document: a value is
    # the whole word (runs joined by dots and blanks) and its first characters say what it
    # must be; a string's closing quotes first, then its content; a key is the whole word;
    # numbers a type cannot hold after everything; columns in bytes at a multi-byte
    # character; carets in bytes, to the line's end; the whole line shown; serde's floats
    for i, bad in enumerate(['z-z = 0x1"""F\n', 'a = 1_0\x0100\nb = "\\q"\n', 'a = 1e400\nb = "\\q"\n',
                             "a = 1979-05-27T07:32:b00z\n", "a = 07:32:00.5Z\n", "a = 1979-05-27T07:32:00+7:00\n",
                             "a = +-1\n", "a = 0X1F\n", "a = 0d10\n", "a = True\n", "a = Nan\n", "a = 1_.5\n",
                             "a = 00\n", "a = x'''\n", 'x = "\\"\\"', 'a = "nl\\\nb = 1\n', "a = '''x\ry'''\n",
                             "a = '''a\\b''#'\r\n[k]\r\n", 'a = """x\\   y"""\n', 'a = "\\u12"\n', 'a"b = 1\n',
                             "[b.\n", '["b".', "a = { b }\n", "a = { b = }\n", "a = { b\n = 1 }\n",
                             "a = { b = # c\n 1 }\n", 'a = { "\u00e9" = 1, \u00e9 = 2 }\n', 'a = 1\n"\u00e9" = 2\n"\u00e9" = 3\n',
                             "a = 1\nb = [" + ", ".join(['"%s"' % ("x" * 40)] * 12) + ", 0x]\n",
                             "a = " + "{b=" * 81 + "1" + "}" * 81 + "\n", "projects = nan\n", "projects = -inf\n",
                             "projects = 1.7976931348623157e308\n", '[projects."k1"]\ntrust_level = { a = 1, b = 2 }\n',
                             '[projects."k1"]\ntrust_level = {}\n']):
        yield "gendiff: TOML 4 project %d %r" % (i, bad[:40]), {U: trusted("p"), "p/.git": "x",
                                                                "p/.codex/config.toml": bad}, None, {}, "@R/p", [
            read(cwd="@R/p", config=["a"])]
        yield "gendiff: TOML 4 user %d %r" % (i, bad[:40]), {U: bad}, None, {}, "@R", [read(config=["a"])]
    # 34c: a NUL in a word, a key, a comment, a string, a header (the fuzzer's: a NUL ended
    # no token, and the shape pass never moved on); the user's short form only: a line
    # shown whole in the long form still stops at its NUL in execd (34c notes)
    for i, bad in enumerate(["a =Q\x00\x00\x00 0d10\n", "a = 1 # x\x00y\n", "\x00 = 1\n", 'a = "x\x00"\n',
                             "a = 1\x00\n", "[a\x00]\n"]):
        yield "gendiff: TOML 5 NUL %d %r" % (i, bad), {U: bad}, None, {}, "@R", [read(config=["a"])]
    # /etc/codex
    yield "etc: requirements unreadable", {U: "a = 1\n"}, {"requirements.toml": "a = 1\n",
                                                         "chmod000": "requirements.toml"}, nobody, "@R", [
        read(config=["a"], requirements=["a"])]
    yield "etc: system, user, managed, requirements", {U: "a = 0\n"}, {
        "config.toml": "a = 's'\n", "managed_config.toml":
        "a = 'm'\nsandbox_mode = 'workspace-write'\napproval_policy = 'never'\n",
        "requirements.toml": "a = 'r'\nallowed_sandbox_modes = ['read-only']\n"}, {}, "@R", [
        read(config=["a", "sandbox_mode"], requirements=["a", "allowed_sandbox_modes",
                                                         "allowed_approval_policies", "sandbox_mode"])]
    R3 = ["a", "allowed_sandbox_modes", "allowed_approval_policies"]
    for name, etc in [
            ("managed only", {"managed_config.toml": "a = 'm'\nsandbox_mode = 'workspace-write'\n"}),
            ("managed read-only", {"managed_config.toml": "sandbox_mode = 'read-only'\n"}),
            ("managed danger, on-request", {"managed_config.toml": "sandbox_mode = 'danger-full-access'\napproval_policy = 'on-request'\n"}),
            ("managed bad sandbox_mode", {"managed_config.toml": "sandbox_mode = 'bogus'\n"}),
            ("managed nothing to convert", {"managed_config.toml": "b = 1\n"}),
            ("managed broken", {"managed_config.toml": "b = \n"}),
            ("system present, projected away", {"config.toml": "b = 1\n", "requirements.toml": "b = 1\n"}),
            ("system broken", {"config.toml": "a = \n"}),
            ("requirements broken", {"requirements.toml": "a = 1\nb = {\n"}),
            ("requirements a directory", {"requirements.toml/": ""}),
            ("system config a directory", {"config.toml/": ""})]:
        yield "etc: " + name, {U: "a = 1\n"}, etc, {}, "@R", [read(config=["a", "sandbox_mode"], requirements=R3)]


def main():
    return run_cases(cases(), "ENVCONFIG")


if __name__ == "__main__":
    sys.exit(main())
