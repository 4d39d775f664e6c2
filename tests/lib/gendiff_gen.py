"""Random cases for tests/gendiff.py: TOML documents and config trees for
environmentConfig/read, skill and plugin caches for capabilities/discoverV2
and capabilityRoots/discoverV1.

A case is a dict:
  kind      "env", "v2" or "v1"
  files     the tree written under the case's root @R (as refdiff.write_tree
            takes it, but "chmod000" may name a list of paths)
  etc       what /etc/codex holds, or None (absent)
  env       None: the case can share servers with others (CODEX_HOME is the
            batch's symlink, pointed at @R/home/.codex); else the variables
            of servers of its own (value None: unset)
  nobody    run the servers as nobody (mode 000 means something)
  requests  [(method, params)], @R standing for the root
Everything comes from the rng given, so a seed and a case number make the
same case again.
"""
import json

ENV, V2, V1 = "environmentConfig/read", "capabilities/discoverV2", "capabilityRoots/discoverV1"
U = "home/.codex/config.toml"
CH = "home/.codex/"

WORDS = ["a", "b", "model", "t", "x", "key", "sandbox_mode", "projects", "mcp_servers", "k1",
         "profile", "notify", "approval_policy", "features", "z-z", "_u", "0", "on"]
ODD_KEYS = ["a b", "a.b", "", "\u00e9", "q\"q", "tab\tkey", "nl\nkey", "it's", "\\", "\u2028"]


class Toml:
    """A random TOML document, and the key paths it defines."""

    def __init__(self, rng, depth=0):
        self.rng, self.paths, self.depth = rng, [], depth

    def key(self):
        r = self.rng
        k = r.choice(ODD_KEYS) if r.random() < 0.1 else r.choice(WORDS)
        if r.random() < 0.2:
            k += str(r.randrange(100))
        return k

    def key_text(self, k):
        r = self.rng
        bare = k != "" and all(c.isascii() and (c.isalnum() or c in "-_") for c in k)
        if bare and r.random() < 0.8:
            return k
        if "'" not in k and "\n" not in k and "\t" not in k and r.random() < 0.3:
            return "'%s'" % k
        return json.dumps(k, ensure_ascii=r.random() < 0.5)

    def string(self):
        r = self.rng
        s = r.choice(["", "x", "a\"b", "a\\b", "it's", "tab\there", "nl\nx", "\u00e9\u2028",
                      "ctl\u0001", "del\u007f", "'''", "\"\"\"", "cr\r\n", "#", "  sp  ",
                      "x" * r.randrange(1, 200)])
        form = r.randrange(6)
        if form == 0 and "'" not in s and not any(ord(c) < 32 and c != "\t" for c in s):
            return "'%s'" % s
        if form == 1 and "'''" not in s and "\r" not in s and not any(
                ord(c) < 32 and c not in "\t\n" for c in s) and not s.endswith("'"):
            return "'''%s'''" % s
        if form == 2 and "\"\"\"" not in s and "\\" not in s and "\r" not in s and not any(
                ord(c) < 32 and c not in "\t\n" for c in s) and not s.endswith('"'):
            return '"""%s"""' % s
        if form == 3:
            return '"%s"' % "".join("\\u%04x" % ord(c) if ord(c) < 0x10000 else c for c in s)
        return json.dumps(s, ensure_ascii=r.random() < 0.5)

    def scalar(self):
        r = self.rng
        return r.choice([
            lambda: str(r.randrange(-10 ** 6, 10 ** 6)),
            lambda: r.choice(["0x1F", "0o17", "0b101", "1_000", "+5", "-0", "9223372036854775807",
                              "-9223372036854775808", "0xdead_beef"]),
            lambda: r.choice(["1.5", "-0.0", "6.626e-34", "1e10", "3.14159", "inf", "-inf", "nan",
                              "+nan", "1E5", "1e-7", "0.1", "123456789012345678.0", "5e-324",
                              "1.7976931348623157e308", "9007199254740993.0", "1_0.5e1_0"]),
            lambda: r.choice(["true", "false"]),
            lambda: r.choice(["1979-05-27T07:32:00Z", "1979-05-27T00:32:00.999999-07:00",
                              "1979-05-27T07:32:00", "1979-05-27", "07:32:00", "00:32:00.5",
                              "1979-05-27 07:32:00Z", "1979-05-27t07:32:00z",
                              "1979-05-27T07:32:00.123456789123Z", "2000-02-29"]),
            self.string, self.string,
        ])()

    def value(self, d=0):
        r = self.rng
        x = r.random()
        if d < 3 and x < 0.12:
            items = [self.value(d + 1) for _ in range(r.randrange(4))]
            sep = r.choice([", ", ",", ",\n  ", " , "])
            return "[" + sep.join(items) + (r.choice(["", ","]) if items else "") + "]"
        if d < 3 and x < 0.2:
            seen, kv = set(), []
            for _ in range(r.randrange(4)):
                k = self.key_text(self.key())
                if r.random() < 0.2:
                    k += "." + self.key_text(self.key())
                if k.split(".")[0] in seen:
                    continue
                seen.add(k.split(".")[0])
                kv.append("%s = %s" % (k, self.value(d + 1)))
            return "{" + (" " + ", ".join(kv) + " " if kv else "") + "}"
        return self.scalar()

    def body(self, prefix, lines, n):
        used = set()
        for _ in range(n):
            k = self.key()
            parts = [k]
            if self.rng.random() < 0.15:
                parts.append(self.key())
            if parts[0] in used:
                continue
            used.add(parts[0])
            self.paths.append(prefix + parts)
            text = ".".join(self.key_text(p) for p in parts)
            comment = self.rng.choice(["", "", "", "  # c"])
            lines.append("%s = %s%s" % (text, self.value(), comment))

    def doc(self):
        r, lines, tops = self.rng, [], set()
        self.body([], lines, r.randrange(5))
        for p in self.paths:
            tops.add(p[0])
        for _ in range(r.randrange(4)):
            name = [self.key() for _ in range(r.randrange(1, 3))]
            if name[0] in tops and r.random() < 0.9:
                continue
            tops.add(name[0])
            head = ".".join(self.key_text(p) for p in name)
            aot = r.random() < 0.15
            for _ in range(r.randrange(1, 3) if aot else 1):
                lines.append(("[[%s]]" if aot else "[%s]") % head)
                self.paths.append(name)
                self.body(name, lines, r.randrange(4))
        eol = "\r\n" if r.random() < 0.05 else "\n"
        return eol.join(lines) + (eol if lines else "")


def mutate(rng, text):
    """text with a random fault: the parse errors are compared too."""
    if not text:
        return rng.choice(["=\n", "a\n", "[\n", "a = \n"])
    i = rng.randrange(len(text) + 1)
    what = rng.randrange(5)
    if what == 0:
        return text[:i] + text[i + 1:]
    if what == 1:
        return text[:i] + rng.choice("=[]{}\".'#\n,\\ \t\x01\u00e9ab1.") + text[i:]
    if what == 2:
        return text[:i]
    if what == 3:
        lines = text.split("\n")
        j = rng.randrange(len(lines))
        return "\n".join(lines[:j + 1] + [lines[j]] + lines[j + 1:])
    return text[:i] + rng.choice(["a b", "a.", " = ", "[[x]]", "[x]", "x = 1 y = 2", "\"\"\"",
                                  "'''", "\r", "0x", "1979-13-01", "{", "]"]) + text[i:]


def toml_doc(rng, bad=0.12):
    t = Toml(rng)
    text = t.doc()
    if rng.random() < bad:
        text = mutate(rng, text)
    return text, t.paths


def pick_paths(rng, paths, n):
    out = []
    for _ in range(n):
        if paths and rng.random() < 0.8:
            p = list(rng.choice(paths))
            if len(p) > 1 and rng.random() < 0.3:
                p = p[:1]
            if rng.random() < 0.15:
                p.append(rng.choice(WORDS))
        else:
            p = [rng.choice(WORDS + ODD_KEYS) for _ in range(rng.randrange(1, 3))]
        out.append(p)
    return out


def trust_block(rng, dirs):
    s = ""
    for d in dirs:
        level = rng.choice(["trusted", "trusted", "trusted", "untrusted", "Trusted", "", None])
        s += '[projects."@R/%s"]\n' % d
        s += "trust_level = %s\n" % ("1" if level is None else json.dumps(level))
    return s


def env_case(rng, etc_ok):
    files, chmods = {}, []
    names = ["p"] + [rng.choice(["a", "b", "src", "x y", "\u00e9", ".d"]) + str(i)
                     for i in range(rng.randrange(4))]
    levels = ["/".join(names[:i + 1]) for i in range(len(names))]
    paths = []
    for lv in levels:
        files[lv + "/"] = ""
        x = rng.random()
        if x < 0.45:
            text, ps = toml_doc(rng)
            paths += ps
            files[lv + "/.codex/config.toml"] = text
        elif x < 0.5:
            files[lv + "/.codex"] = "x"
        elif x < 0.53:
            files[lv + "/.codex/config.toml/"] = ""
        elif x < 0.58:
            files[lv + "/.codex/"] = ""
    markers = None
    if rng.random() < 0.15:
        markers = rng.choice([[], ["ROOT"], [".git", "ROOT"], ["ROOT/"]])
    m = rng.choice(levels + [None])
    if m is not None:
        files.update(rng.choice([{m + "/.git": "x"}, {m + "/.git/HEAD": "x"}, {m + "/.git/": ""},
                                 {m + "/ROOT": ""}, {m + "/ROOT/": ""}]))
    link = rng.random() < 0.3
    if link:
        files["alink->p"] = ""
    trusted = rng.sample(levels, rng.randrange(len(levels) + 1))
    if link and trusted and rng.random() < 0.5:
        trusted[0] = "alink" + trusted[0][1:]
    if rng.random() < 0.1:
        trusted.append("")
    user, ps = toml_doc(rng, bad=0.05)
    paths += ps
    if "projects" in user:
        user = ""
    # the sections after every top-level key of the user's document
    user = user.replace("\r\n", "\n")
    user = ("project_root_markers = %s\n" % json.dumps(markers) if markers is not None else "") + \
        "\n".join(l for l in user.split("\n") if not l.startswith("project_root_markers")) + \
        "\n" + trust_block(rng, trusted)
    if rng.random() < 0.9:
        files[U] = user
    if rng.random() < 0.01:
        files[U] = user + "[big]\n" + "".join("k%d = %d\n" % (i, i) for i in range(rng.randrange(9000, 25000)))
        paths.append(["big", "k%d" % rng.randrange(9000)])
    cwd = rng.choice(levels)
    if link and rng.random() < 0.7:
        cwd = "alink" + cwd[1:]
    x = rng.random()
    if x < 0.08:
        cwd += "/nowhere/deeper"
    elif x < 0.12:
        files[levels[-1] + "/f"] = "x"
        cwd = levels[-1] + "/f"
    nobody = rng.random() < 0.2
    if nobody:
        for _ in range(rng.randrange(1, 3)):
            lv = rng.choice(levels)
            chmods.append(rng.choice([lv, lv + "/.codex", lv + "/.codex/config.toml", U]))
        chmods = [c for c in chmods if c in files or c + "/" in files or any(
            f.startswith(c + "/") for f in files)]
    if chmods:
        files["chmod000"] = chmods
    etc = None
    if etc_ok and rng.random() < 0.1:
        etc = {}
        if rng.random() < 0.5:
            etc["config.toml"] = toml_doc(rng)[0]
        if rng.random() < 0.5:
            etc["requirements.toml"] = toml_doc(rng)[0]
        if rng.random() < 0.4:
            etc["managed_config.toml"] = "sandbox_mode = %s\napproval_policy = %s\n" % (
                json.dumps(rng.choice(["read-only", "workspace-write", "danger-full-access", "bogus"])),
                json.dumps(rng.choice(["never", "on-request", "untrusted", "x"])))
    reqs = []
    for _ in range(rng.randrange(1, 3)):
        c = pick_paths(rng, paths + [["a"], ["projects"]], rng.randrange(0 if rng.random() < 0.05 else 1, 5))
        r = pick_paths(rng, paths + [["allowed_sandbox_modes"], ["allowed_approval_policies"]],
                       rng.randrange(3))
        reqs.append((ENV, {"cwd": "file://@R/" + cwd, "configPaths": c, "requirementsPaths": r}))
    env = None
    if rng.random() < 0.03:
        env = {"CODEX_HOME": rng.choice(["@R/nowhere", "rel", "@R/file", "@R/dangling", "", None,
                                         "@R/home/.codex", "@R/chl"])}
        files.update({"file": "x", "dangling->nowhere": "", "chl->home/.codex": ""})
    return {"kind": "env", "files": files, "etc": etc, "env": env, "nobody": nobody, "requests": reqs}


VERSIONS = ["1.0.0", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.10", "1.0.0+b1", "1.0.0+b2", "2.0.0",
            "1.10.0", "1.9.0", "1.9", "1.10", "10", "2", "local", "0.0.1-rc.1", "v1.0.0", "01.0.0",
            "1.0.0-01", "a b", "x~", "abc", "1.0.0-", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-1",
            "1.0.0-a", "1.0.0+01", "1.0.0+1", "0.0.0", "18446744073709551616.0.0", "1.0.0-x-y",
            "LOCAL", "_", "1..0", ".hidden", "1.0.0-rc.1+b"]


def text_value(rng):
    return rng.choice(["x", "", "a: b", "\"quoted\"", "'single'", "\u00e9" * rng.choice([1, 64, 65]),
                       "y" * rng.choice([63, 64, 65, 1024, 1025]), "123", "true", "null", "~",
                       "|\n  block\n  text", ">-\n  folded\n  more", "a # c", "[x]", "{a: b}"])


def skill_md(rng):
    if rng.random() < 0.05:
        return rng.choice(["", "no front matter\n", b"---\nname: x\ndescription: \xff\n---\n"])
    fm = ""
    if rng.random() < 0.9:
        fm += "name: %s\n" % text_value(rng)
    if rng.random() < 0.85:
        fm += "description: %s\n" % text_value(rng)
    if rng.random() < 0.15:
        fm += "metadata:\n  short-description: %s\n" % text_value(rng).replace("\n", "\n  ")
    end = rng.choice(["---\n", "---\n", "---\n", "---", "", "--- \n"])
    s = "---\n" + fm + end + "body\n"
    if rng.random() < 0.05:
        s = s.replace("\n", "\r\n")
    return s


YAMLS = ["interface:\n  display_name: X\n  short_description: s\n",
         "policy:\n  allow_implicit_invocation: false\n  products: [codex, atlas]\n",
         "dependencies:\n  tools:\n  - type: mcp\n    value: foo\n", "policy: []\n", "x: [\n",
         "dependencies:\n  tools: x\n", ""]


def skills_tree(rng, base, files, chmods, nobody):
    for i in range(rng.randrange(4)):
        d = base + rng.choice(["s%d" % i, ".h%d" % i, "deep/s%d/x" % i, "S%d" % i])
        x = rng.random()
        if x < 0.05:
            files[d + "/SKILL.md/"] = ""
            continue
        if x < 0.1:
            files["elsewhere%d/s/SKILL.md" % i] = skill_md(rng)
            files[d + "->elsewhere%d/s" % i] = ""
            continue
        files[d + "/" + rng.choice(["SKILL.md"] * 9 + ["skill.md"])] = skill_md(rng)
        if rng.random() < 0.15:
            files[d + "/agents/openai.yaml"] = rng.choice(YAMLS)
        if nobody and rng.random() < 0.3:
            chmods.append(rng.choice([d, d + "/SKILL.md"]))


def plugin_tree(rng, root, files, chmods, nobody):
    x = rng.random()
    kind = rng.choice([".codex-plugin", ".codex-plugin", ".claude-plugin", ".cursor-plugin"])
    if x < 0.8:
        files[root + "/" + kind + "/plugin.json"] = rng.choice([
            '{"name": "pl"}', '{"name": "other", "version": "1"}', "{}", "{nope", "[]",
            '{"name": 5}', '{"name": ""}'])
    elif x < 0.85:
        files[root + "/" + kind + "/plugin.json/"] = ""
    if rng.random() < 0.3:
        files[root + "/.mcp.json"] = rng.choice(['{"mcpServers": {}}', "bad"])
    if rng.random() < 0.3:
        files[root + "/.app.json"] = rng.choice(['{"apps": {}}', "bad"])
    if rng.random() < 0.6:
        skills_tree(rng, root + "/skills/", files, chmods, nobody)
    if nobody and rng.random() < 0.3:
        chmods.append(rng.choice([root, root + "/" + kind + "/plugin.json", root + "/.mcp.json"]))


def v2_case(rng, etc_ok):
    files, chmods = {CH: ""}, []
    nobody = rng.random() < 0.2
    skills_tree(rng, CH + "skills/", files, chmods, nobody)
    if rng.random() < 0.4:
        skills_tree(rng, "home/.agents/skills/", files, chmods, nobody)
    roots = []
    for _ in range(rng.randrange(3)):
        m, n = rng.choice(["m", "mk", "a b"]), rng.choice(["pl", "p2", "zz"])
        for v in rng.sample(VERSIONS, rng.randrange(1, 4)):
            root = CH + "plugins/cache/%s/%s/%s" % (m, n, v)
            files[root + "/"] = ""
            roots.append(root)
            if rng.random() < 0.8:
                plugin_tree(rng, root, files, chmods, nobody)
    etc = None
    if etc_ok and rng.random() < 0.1:
        etc = {}
        skills_tree(rng, "skills/", etc, [], False)
    env = {}
    if rng.random() < 0.05:
        env = {"CODEX_HOME": rng.choice(["@R/nowhere", "rel", "@R/file", "@R/dangling", "", None,
                                         "@R/chl"])}
        files.update({"file": "x", "dangling->nowhere": "", "chl->home/.codex": ""})
    chmods = [c for c in chmods if any(f.split("->")[0].rstrip("/") == c or f.startswith(c + "/")
                                       for f in files)]
    if chmods:
        files["chmod000"] = chmods
    reqs = [(V2, {"cwd": "file://@R"})]
    if roots and rng.random() < 0.5:
        reqs.append((V1, {"roots": [{"id": "r%d" % i, "path": "file://@R/" + r}
                                    for i, r in enumerate(rng.sample(roots, min(2, len(roots))))]}))
    return {"kind": "v2", "files": files, "etc": etc, "env": env, "nobody": nobody, "requests": reqs}


def v1_case(rng):
    files, chmods, roots = {}, [], []
    nobody = rng.random() < 0.25
    for i in range(rng.randrange(1, 4)):
        r = "r%d" % i
        x = rng.random()
        if x < 0.45:
            files[r + "/"] = ""
            skills_tree(rng, r + "/", files, chmods, nobody)
        elif x < 0.75:
            plugin_tree(rng, r, files, chmods, nobody)
        elif x < 0.8:
            files[r] = "x"
        elif x < 0.85:
            r = "nowhere%d" % i
        else:
            files["t%d/" % i] = ""
            skills_tree(rng, "t%d/" % i, files, chmods, nobody)
            files[r + "->t%d" % i] = ""
        roots.append({"id": "id%d" % i, "path": "file://@R/" + r})
    chmods = [c for c in chmods if any(f.split("->")[0].rstrip("/") == c or f.startswith(c + "/")
                                       for f in files)]
    if chmods:
        files["chmod000"] = chmods
    return {"kind": "v1", "files": files, "etc": None, "env": None, "nobody": nobody,
            "requests": [(V1, {"roots": roots})]}


def case(rng, etc_ok):
    x = rng.random()
    if x < 0.5:
        return env_case(rng, etc_ok)
    if x < 0.75:
        return v1_case(rng)
    return v2_case(rng, etc_ok)
