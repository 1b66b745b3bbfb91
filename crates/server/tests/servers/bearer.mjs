// A Streamable HTTP MCP server (official SDK transport on node:http) that accepts only bearer
// tokens starting with a given prefix, for the server's vault tests: an OAuth access token
// issued by the test's token endpoint passes, a stale one is answered 401. It prints
// "listening <port>" on stdout once bound to 127.0.0.1 (port $PORT, default 0: the OS picks).
//   node bearer.mjs PREFIX
// Tool: whoami (the Authorization header it was called with). GET /stats answers
// {unauthorized, deletes} and POST /revoke?token=T makes token T rejected from then on, both
// without authentication.
import http from "node:http";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { sessions } from "./sessions.mjs";

const prefix = `Bearer ${process.argv[2] ?? "valid-"}`;
const stats = { unauthorized: 0, deletes: 0 };
const revoked = new Set();

function newServer() {
  const server = new McpServer({ name: "bearer-fixture", version: "1.0.0" });
  server.registerTool("whoami", { description: "Report the Authorization header of the call", inputSchema: {} }, async (_args, extra) => ({
    content: [{ type: "text", text: JSON.stringify({ authorization: extra.requestInfo?.headers?.authorization }) }],
  }));
  return server;
}

const route = sessions(newServer);

const httpServer = http.createServer(async (req, res) => {
  if (req.method === "GET" && req.url === "/stats") {
    res.writeHead(200, { "content-type": "application/json" });
    return res.end(JSON.stringify(stats));
  }
  if (req.method === "POST" && req.url.startsWith("/revoke?")) {
    revoked.add(`Bearer ${new URL(req.url, "http://x").searchParams.get("token")}`);
    res.writeHead(204);
    return res.end();
  }
  if (req.method === "DELETE") stats.deletes += 1;
  const authorization = req.headers.authorization ?? "";
  if (!authorization.startsWith(prefix) || revoked.has(authorization)) {
    stats.unauthorized += 1;
    res.writeHead(401, { "content-type": "application/json" });
    return res.end(JSON.stringify({ error: "unauthorized" }));
  }
  await route(req, res);
});

httpServer.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () => console.log(`listening ${httpServer.address().port}`));
