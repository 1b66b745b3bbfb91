// A Streamable HTTP MCP server (official SDK transport on node:http) that logs when each
// JSON-RPC request arrives, for the tests of call_tool's prefetched catalog. It prints
// "listening <port>" on stdout once bound to 127.0.0.1 (port 0: the OS picks).
//   node timed.mjs
// Tool: echo. GET /stats answers {requests: [{method, at}]} (at: milliseconds since the Unix
// epoch, fractional) without authentication.
import http from "node:http";
import { randomUUID } from "node:crypto";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";

const transports = new Map();
const requests = [];

function newServer() {
  const server = new McpServer({ name: "timed-fixture", version: "1.0.0" });
  server.registerTool("echo", { description: "Echo the message back", inputSchema: { message: z.string() } }, async ({ message }) => ({
    content: [{ type: "text", text: message }],
  }));
  return server;
}

async function body(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const text = Buffer.concat(chunks).toString("utf8");
  return text ? JSON.parse(text) : undefined;
}

const httpServer = http.createServer(async (req, res) => {
  if (req.method === "GET" && req.url === "/stats") {
    res.writeHead(200, { "content-type": "application/json" });
    return res.end(JSON.stringify({ requests }));
  }
  let parsed;
  if (req.method === "POST") {
    const at = performance.timeOrigin + performance.now();
    parsed = await body(req);
    for (const message of [parsed].flat()) {
      if (message?.method) requests.push({ method: message.method, at });
    }
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
  await transport.handleRequest(req, res, parsed);
});

httpServer.listen(0, "127.0.0.1", () => console.log(`listening ${httpServer.address().port}`));
