"""What the configuration-injection tests (tests/sandbox/config*.py) share:
a file written with its folders, a managed sandbox object with writable
roots and / readable, and the project layers environmentConfig/read
returns for a cwd (their TOML, joined; an error as "error: ...")."""
import os


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def sandbox(roots, cwd=None):
    """roots: a path or a list of paths given write access; cwd: the first root
    unless named."""
    if isinstance(roots, str):
        roots = [roots]
    ents = [{"path": {"type": "path", "path": "file://" + r}, "access": "write"} for r in roots]
    ents.append({"path": {"type": "special", "value": {"kind": "root"}}, "access": "read"})
    return {"permissions": {"type": "managed", "network": "restricted",
                            "file_system": {"type": "restricted", "entries": ents}},
            "windowsSandboxLevel": "disabled", "cwd": "file://" + (cwd or roots[0])}


def layers(c, cwd, paths=(("sandbox_mode",), ("model",)), requirements=()):
    r = c.call("environmentConfig/read", {"cwd": "file://" + cwd,
                                          "configPaths": [list(p) for p in paths],
                                          "requirementsPaths": [list(p) for p in requirements]})
    if "error" in r:
        return "error: %r" % r["error"]
    return "".join(lay["toml"] for lay in r["result"]["config"]["layers"])
