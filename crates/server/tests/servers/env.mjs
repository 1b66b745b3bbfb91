// A stdio MCP server (official TypeScript SDK) for the server's tests, run inside a sandbox: it
// reports the environment variables it was launched with and its pid, which shows what a stdio
// server receives through `env` and `env_vars` and which launch a shared broker kept.
//   node env.mjs
// Tool: env {names: string[]} → {"pid": …, "env": {name: value or null}}.
// Tool: fetch {url, secret_env} → the body of a GET of `url?key=<$secret_env>` with
// `Authorization: Bearer <$secret_env>`, sent through $HTTP_PROXY (absolute form) as an
// HTTP client in a sandbox would.
import http from "node:http";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const server = new McpServer({ name: "env-fixture", version: "1.0.0" });
server.registerTool(
  "env",
  { description: "Report environment variables of this server process", inputSchema: { names: z.array(z.string()) } },
  async ({ names }) => ({
    content: [{ type: "text", text: JSON.stringify({ pid: process.pid, env: Object.fromEntries(names.map((n) => [n, process.env[n] ?? null])) }) }],
  }),
);
server.registerTool(
  "fetch",
  { description: "GET a URL through the sandbox's HTTP proxy with a secret", inputSchema: { url: z.string(), secret_env: z.string() } },
  async ({ url, secret_env }) => {
    const secret = process.env[secret_env] ?? "";
    const proxy = new URL(process.env.HTTP_PROXY);
    const text = await new Promise((resolve) => {
      const req = http.request(
        { host: proxy.hostname, port: proxy.port, path: `${url}?key=${secret}`, headers: { Authorization: `Bearer ${secret}` } },
        (res) => {
          let body = "";
          res.on("data", (chunk) => (body += chunk));
          res.on("end", () => resolve(`${res.statusCode} ${body}`));
        },
      );
      req.on("error", (e) => resolve(`error ${e.message}`));
      req.end();
    });
    return { content: [{ type: "text", text }] };
  },
);
await server.connect(new StdioServerTransport());
