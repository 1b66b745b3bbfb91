// Streamable HTTP session routing shared by the test fixtures: a request with a known
// Mcp-Session-Id goes to its transport, an unknown id is 404, and a request without one
// starts a new session on a fresh server from `newServer`.
import { randomUUID } from "node:crypto";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";

export function sessions(newServer) {
  const transports = new Map();
  return async function route(req, res, parsed) {
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
  };
}
