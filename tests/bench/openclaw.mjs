// OpenClaw's own exec-server (the TypeScript one in @openclaw/codex, which
// serves a sandbox backend) started for tests/bench/ws.py.  It has no CLI:
// OpenClaw starts it when a sandboxed run registers an environment with the
// Codex app-server.  This does the same through the plugin's exported
// ensureCodexSandboxExecServerEnvironment, with a backend that runs each
// command here (sh -c, in the request's cwd) instead of in a container, and
// a stand-in app-server client that prints the URL environment/add gets.
//
// Usage: node tests/bench/openclaw.mjs OPENCLAW_DIR   (prints "url ws://...")
// The minified bundle's file and export names change between releases: the
// function is found by its name in the source.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const dist = path.join(process.argv[2], "node_modules", "@openclaw", "codex", "dist", ".setup");
const NAME = "ensureCodexSandboxExecServerEnvironment";
const file = readdirSync(dist).filter((f) => f.endsWith(".mjs"))
  .find((f) => readFileSync(path.join(dist, f), "utf8").includes(`async function ${NAME}(`));
if (!file) throw new Error(`no ${NAME} in ${dist}`);
const mod = await import(pathToFileURL(path.join(dist, file)).href);
const ensure = Object.values(mod).find((f) => typeof f === "function" && f.name === NAME);
if (!ensure) throw new Error(`${file} does not export ${NAME}`);

const quote = (s) => "'" + s.replace(/'/g, "'\\''") + "'";
const backend = {
  id: "local",
  buildExecSpec: async ({ command, workdir, env }) => ({
    argv: ["/bin/sh", "-c", `cd ${quote(workdir)} && ${command}`],
    env,
    finalizeToken: null,
  }),
  finalizeExec: async () => {},
  runShellCommand: async () => ({ code: 0, stdout: Buffer.alloc(0), stderr: Buffer.alloc(0) }),
};
const sandbox = {
  enabled: true, backend, backendId: "local", fsBridge: {}, runtimeId: "bench",
  containerWorkdir: process.cwd(), docker: { network: "bridge" }, sessionKey: "bench",
};
const client = {
  request: async (method, params) => {
    if (method !== "environment/add") throw new Error(`unexpected ${method}`);
    process.stdout.write(`url ${params.execServerUrl}\n`);
    return {};
  },
};
await ensure({ sandbox, client, timeoutMs: 30000 });
