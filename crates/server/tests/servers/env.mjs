// A stdio MCP server (official TypeScript SDK) for the server's tests, run inside a sandbox: it
// reports the environment variables it was launched with and its pid, which shows what a stdio
// server receives through `env` and `env_vars` and which launch a shared broker kept.
//   node env.mjs
// Tool: env {names: string[]} → {"pid": …, "env": {name: value or null}}.
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
await server.connect(new StdioServerTransport());
