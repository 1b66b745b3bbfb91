// A Streamable HTTP MCP server (official SDK transport on node:http) that insists on an
// Authorization header and an X-Tenant header, for the mcp crate's tests. It prints
// "listening <port>" on stdout once bound to 127.0.0.1 (port 0: the OS picks).
//   node http.mjs [default|delete-404|delete-405]
// Tools: whoami, add_tool, slow {ms} (ends early when cancelled), block {ms} (stops the whole
// server for ms). GET /stats answers {deletes, lastDelete} without authentication.
import http from "node:http";
import { randomUUID } from "node:crypto";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";

const mode = process.argv[2] ?? "default";
const AUTHORIZATION = "Bearer s3cret-token";
const TENANT = "acme";
const transports = new Map();
const stats = { deletes: 0, lastDelete: null };

function newServer() {
  const server = new McpServer({ name: "auth-fixture", version: "1.0.0" });
  server.registerTool("whoami", { description: "Report the credentials the request carried", inputSchema: {} }, async (_args, extra) => ({
    content: [{ type: "text", text: JSON.stringify({ authorization: extra.requestInfo?.headers?.authorization, tenant: extra.requestInfo?.headers?.["x-tenant"] }) }],
  }));
  // Registering a tool from inside a call makes the SDK send tools/list_changed, which is not an
  // answer to the call: it travels on the GET SSE stream.
  server.registerTool("add_tool", { description: "Register a new tool", inputSchema: { name: z.string() } }, async ({ name }) => {
    server.registerTool(name, { description: `Dynamically added ${name}`, inputSchema: {} }, async () => ({ content: [{ type: "text", text: name }] }));
    return { content: [{ type: "text", text: `added ${name}` }] };
  });
  server.registerTool("slow", { description: "Answer after ms milliseconds", inputSchema: { ms: z.number() } }, async ({ ms }, extra) => {
    await new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      extra.signal.addEventListener("abort", () => { clearTimeout(timer); resolve(); });
    });
    return { content: [{ type: "text", text: `slept ${ms}` }] };
  });
  server.registerTool("block", { description: "Block the whole server (its event loop) for ms milliseconds", inputSchema: { ms: z.number() } }, async ({ ms }) => {
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
    return { content: [{ type: "text", text: `blocked ${ms}` }] };
  });
  return server;
}

const httpServer = http.createServer(async (req, res) => {
  if (req.method === "GET" && req.url === "/stats") {
    res.writeHead(200, { "content-type": "application/json" });
    return res.end(JSON.stringify(stats));
  }
  if (req.method === "DELETE") {
    stats.deletes += 1;
    stats.lastDelete = { session: req.headers["mcp-session-id"], authorization: req.headers.authorization, tenant: req.headers["x-tenant"] };
    if (mode === "delete-404") { res.writeHead(404); return res.end(); }
    if (mode === "delete-405") { res.writeHead(405); return res.end(); }
  }
  if (req.headers.authorization !== AUTHORIZATION || req.headers["x-tenant"] !== TENANT) {
    res.writeHead(401, { "content-type": "application/json" });
    return res.end(JSON.stringify({ error: "unauthorized" }));
  }
  const sessionId = req.headers["mcp-session-id"];
  let transport = sessionId ? transports.get(sessionId) : undefined;
  if (!transport) {
    if (sessionId) { res.writeHead(404); return res.end(); }
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => transports.set(id, transport),
    });
    transport.onclose = () => transport.sessionId && transports.delete(transport.sessionId);
    await newServer().connect(transport);
  }
  await transport.handleRequest(req, res);
});

httpServer.listen(0, "127.0.0.1", () => console.log(`listening ${httpServer.address().port}`));
