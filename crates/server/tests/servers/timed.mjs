// A Streamable HTTP MCP server (official SDK transport on node:http) that logs when each
// JSON-RPC request and notification arrives, for the tests of call_tool's prefetched catalog
// and of cancellation. It prints "listening <port>" on stdout once bound to 127.0.0.1 (port 0:
// the OS picks).
//   node timed.mjs [fail-list]
// Tools: echo; hang, which answers only when its request is cancelled (then "aborted" is
// logged as a method); block {ms}, which stops the whole server (its event loop) for ms. With `fail-list`, every tools/list is answered with JSON-RPC error
// -32603. GET /stats answers {requests: [{method, at}]} (at: milliseconds since the Unix epoch,
// fractional) without authentication.
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
  server.registerTool("hang", { description: "Never answer until cancelled", inputSchema: {} }, async (_args, extra) => {
    await new Promise((resolve) => extra.signal.addEventListener("abort", resolve, { once: true }));
    requests.push({ method: "aborted", at: performance.timeOrigin + performance.now() });
    return { content: [{ type: "text", text: "aborted" }] };
  });
  server.registerTool("block", { description: "Block the whole server for ms milliseconds", inputSchema: { ms: z.number() } }, async ({ ms }) => {
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
    return { content: [{ type: "text", text: `blocked ${ms} ms` }] };
  });
  return server;
}

async function body(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const text = Buffer.concat(chunks).toString("utf8");
  return text ? JSON.parse(text) : undefined;
}

const route = sessions(newServer);
const failList = process.argv.includes("fail-list");

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
    if (failList && !Array.isArray(parsed) && parsed?.method === "tools/list") {
      const error = { code: -32603, message: "the tool catalog is broken" };
      res.writeHead(200, { "content-type": "application/json", "mcp-session-id": req.headers["mcp-session-id"] ?? "" });
      return res.end(JSON.stringify({ jsonrpc: "2.0", id: parsed.id, error }));
    }
  }
  await route(req, res, parsed);
});

httpServer.listen(0, "127.0.0.1", () => console.log(`listening ${httpServer.address().port}`));
