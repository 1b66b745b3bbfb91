// A hand-rolled, deliberately misbehaving MCP server on stdio (newline-delimited JSON-RPC):
//   hang            never answers anything
//   exit            exits at once
//   malformed       tools/list answers {"tools": "not-a-list"}
//   malformed-tool  tools/list answers a tool without inputSchema
//   error           tools/list and tools/call answer JSON-RPC errors
//   paged           tools/list in three pages (nextCursor), after a list_changed sent before
//                   the initialize answer, as server-everything does
//   loop-cursor     tools/list always answers the same nextCursor
const mode = process.argv[2] ?? "hang";
if (mode === "exit") process.exit(1);

const send = (message) => process.stdout.write(JSON.stringify(message) + "\n");
const tool = (name, description, properties = {}) => ({ name, description, inputSchema: { type: "object", properties } });
const pages = {
  "": { tools: [tool("alpha", "first tool"), tool("beta", "second tool")], nextCursor: "p2" },
  p2: { tools: [tool("gamma", "third tool", { sku: { type: "string" } }), tool("delta", "fourth tool")], nextCursor: "p3" },
  p3: { tools: [tool("epsilon", "fifth tool")] },
};

function answer(message) {
  const { id, method, params } = message;
  if (id === undefined) return;
  if (method === "initialize") {
    if (mode === "paged") send({ jsonrpc: "2.0", method: "notifications/tools/list_changed" });
    return send({
      jsonrpc: "2.0",
      id,
      result: { protocolVersion: "2025-11-25", capabilities: { tools: { listChanged: true } }, serverInfo: { name: `raw-${mode}`, version: "1" } },
    });
  }
  if (method === "ping") return send({ jsonrpc: "2.0", id, result: {} });
  if (method === "tools/list") {
    if (mode === "malformed") return send({ jsonrpc: "2.0", id, result: { tools: "not-a-list" } });
    if (mode === "malformed-tool") return send({ jsonrpc: "2.0", id, result: { tools: [{ name: "broken" }] } });
    if (mode === "error") return send({ jsonrpc: "2.0", id, error: { code: -32603, message: "database is down" } });
    if (mode === "loop-cursor") return send({ jsonrpc: "2.0", id, result: { tools: [tool("again", "again")], nextCursor: "same" } });
    return send({ jsonrpc: "2.0", id, result: pages[params?.cursor ?? ""] ?? { tools: [] } });
  }
  if (method === "tools/call") {
    if (mode === "error") return send({ jsonrpc: "2.0", id, error: { code: -32000, message: "tool exploded" } });
    return send({ jsonrpc: "2.0", id, result: { content: [{ type: "text", text: `${params.name} ok` }] } });
  }
  send({ jsonrpc: "2.0", id, error: { code: -32601, message: `no ${method}` } });
}

let pending = "";
process.stdin.on("data", (chunk) => {
  if (mode === "hang") return;
  pending += chunk.toString("utf8");
  let at;
  while ((at = pending.indexOf("\n")) >= 0) {
    const line = pending.slice(0, at);
    pending = pending.slice(at + 1);
    if (line.trim()) answer(JSON.parse(line));
  }
});
