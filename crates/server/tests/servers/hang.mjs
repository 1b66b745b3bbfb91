// A stdio MCP server (official TypeScript SDK) for the cancellation tests, run inside a sandbox.
//   node hang.mjs
// Tool: hang, which answers only when its request is cancelled. It appends "started" to
// `hang.log` in its working directory when a call begins and "aborted" when its cancellation
// arrives, so a test sees both.
import { appendFileSync } from "node:fs";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";

const server = new McpServer({ name: "hang-fixture", version: "1.0.0" });
server.registerTool("hang", { description: "Never answer until cancelled", inputSchema: {} }, async (_args, extra) => {
  appendFileSync("hang.log", "started\n");
  await new Promise((resolve) => extra.signal.addEventListener("abort", resolve, { once: true }));
  appendFileSync("hang.log", "aborted\n");
  return { content: [{ type: "text", text: "aborted" }] };
});
await server.connect(new StdioServerTransport());
