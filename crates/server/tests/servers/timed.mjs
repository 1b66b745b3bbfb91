// A Streamable HTTP MCP server (official SDK transport on node:http) that logs when each
// JSON-RPC request arrives, for the tests of call_tool's prefetched catalog. It prints
// "listening <port>" on stdout once bound to 127.0.0.1 (port 0: the OS picks).
//   node timed.mjs
// Tool: echo. GET /stats answers {requests: [{method, at}]} (at: milliseconds since the Unix
// epoch, fractional) without authentication.
import http from "node:http";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { sessions } from "./sessions.mjs";
import { z } from "zod";

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

const route = sessions(newServer);

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
  await route(req, res, parsed);
});

httpServer.listen(0, "127.0.0.1", () => console.log(`listening ${httpServer.address().port}`));
