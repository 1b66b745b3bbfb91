// A small MCP server on stdio, built with the official TypeScript SDK, for the mcp crate's
// tests: list_changed (add_tool/remove_tool), slow, hanging and blocking calls, a crash, error results,
// image content, request _meta echo, a strict inputSchema, and counters of what it received.
// Option: --list-delay-ms=N (see the end).
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const counters = { toolsList: 0, cancelled: [], calls: 0 };
// Tap stdin next to the SDK's own reader to count what arrives.
let pending = "";
process.stdin.on("data", (chunk) => {
  pending += chunk.toString("utf8");
  let at;
  while ((at = pending.indexOf("\n")) >= 0) {
    const line = pending.slice(0, at);
    pending = pending.slice(at + 1);
    try {
      const message = JSON.parse(line);
      if (message.method === "tools/list") counters.toolsList += 1;
      if (message.method === "tools/call") counters.calls += 1;
      if (message.method === "notifications/cancelled") counters.cancelled.push(message.params);
    } catch {}
  }
});

const server = new McpServer({ name: "fixture", version: "1.0.0" }, { capabilities: { tools: { listChanged: true }, resources: {} } });
const text = (value) => ({ content: [{ type: "text", text: typeof value === "string" ? value : JSON.stringify(value) }] });
const added = new Map();

server.registerTool("echo", { description: "Echo the message back", inputSchema: { message: z.string() } }, async ({ message }) => text(message));
server.registerTool("echo_meta", { description: "Return the request _meta", inputSchema: {} }, async (_args, extra) => text(extra._meta ?? {}));
server.registerTool("stats", { description: "Counters of received messages", inputSchema: {} }, async () => text(counters));
server.registerTool(
  "get_inventory",
  {
    description: "Warehouse stock level for one SKU",
    inputSchema: { sku: z.string().regex(/^SKU\d+$/), quantity: z.number().int().min(1).optional() },
  },
  async ({ sku }) => text(`${sku}: 42 in stock`),
);
server.registerTool("add_tool", { description: "Register a new tool", inputSchema: { name: z.string() } }, async ({ name }) => {
  added.set(name, server.registerTool(name, { description: `Dynamically added ${name}`, inputSchema: {} }, async () => text(`${name} ran`)));
  return text(`added ${name}`);
});
server.registerTool("remove_tool", { description: "Remove a tool", inputSchema: { name: z.string() } }, async ({ name }) => {
  const tool = added.get(name) ?? server._registeredTools?.[name];
  if (tool) tool.remove();
  added.delete(name);
  return text(`removed ${name}`);
});
server.registerTool("slow", { description: "Answer after ms milliseconds", inputSchema: { ms: z.number() } }, async ({ ms }, extra) => {
  await new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    extra.signal.addEventListener("abort", () => { clearTimeout(timer); resolve(); });
  });
  return text(`slept ${ms}`);
});
server.registerTool("block", { description: "Block the whole server (its event loop) for ms milliseconds", inputSchema: { ms: z.number() } }, async ({ ms }) => {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
  return text(`blocked ${ms}`);
});
server.registerTool("crash", { description: "Exit the process", inputSchema: {} }, async () => process.exit(3));
server.registerTool("fail", { description: "Report a tool error", inputSchema: {} }, async () => ({
  content: [{ type: "text", text: "the warehouse is closed" }],
  isError: true,
}));
server.registerTool("image", { description: "Return a tiny image", inputSchema: {} }, async () => ({
  content: [
    { type: "text", text: "here is a pixel" },
    { type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" },
  ],
}));
server.registerResource("readme", "fixture://readme", { description: "The fixture's readme", mimeType: "text/plain" }, async (uri) => ({
  contents: [{ uri: uri.href, mimeType: "text/plain", text: "hello from the fixture" }],
}));

// --list-delay-ms=N: answer tools/list N ms after computing it (a fetch that is "in flight"
// while the catalog changes).
const delay = Number((process.argv.find((arg) => arg.startsWith("--list-delay-ms=")) ?? "=0").split("=")[1]);
if (delay > 0) {
  const handlers = server.server._requestHandlers;
  const list = handlers.get("tools/list");
  handlers.set("tools/list", async (request, extra) => {
    const answer = await list(request, extra);
    await new Promise((resolve) => setTimeout(resolve, delay));
    return answer;
  });
}

await server.connect(new StdioServerTransport());
